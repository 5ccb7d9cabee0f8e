"""Single-precision QR is JAX's bit for bit: ``jnp.linalg.qr`` of float32 and
complex64 matrices (tall, wide, square, batched; reduced and complete),
eagerly and under jit, against tests/data/jax_qr_single.json, which
tools/record_jax_qr.py recorded once with real JAX 0.10.2.

fungrad factors them with LAPACK's single-precision routines through SciPy
(what XLA's CPU QR calls); SciPy is a test dependency, imported here
unconditionally: without it fungrad's float32 QR is NumPy's (double
precision, rounded), within an ulp of JAX's, and this test must fail rather
than skip.
"""
import json
import os

import numpy as np
import pytest
import scipy  # noqa: F401  (required: see the module docstring)

import fungrad
import fungrad.numpy as fnp
from tests.test_random_jax_reference import CASES as RANDOM_CASES, config_as, run_case  # noqa: F401

_DATA = os.path.join(os.path.dirname(__file__), "data", "jax_qr_single.json")
with open(_DATA) as _f:
    REFERENCE = json.load(_f)


def _array(parts, shape, dtype):
    real, *imag = [np.array(p, np.uint32).view(np.float32) for p in parts]
    value = real + 1j * imag[0] if imag else real
    return np.asarray(value, dtype).reshape(shape)


def _case_id(case):
    return f"{case['dtype']}-{'x'.join(map(str, case['shape']))}-{case['mode']}"


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
@pytest.mark.parametrize("under_jit", [False, True])
def test_single_precision_qr_is_jaxs(case, under_jit):
    a = _array(case["a"], case["shape"], case["dtype"])

    def qr(x):
        return fnp.linalg.qr(x, mode=case["mode"])
    q, r = (fungrad.jit(qr) if under_jit else qr)(a)
    for got, key in ((q, "q"), (r, "r")):
        want = _array(case[key], case[f"{key}_shape"], case["dtype"])
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), (key, got, want)


def test_orthogonal_float32_is_jaxs(config_as):  # noqa: F811
    """random.orthogonal in float32 (its QR) matches JAX's recorded draws exactly."""
    cases = [c for c in RANDOM_CASES if c["fn"] == "orthogonal" and not c["x64"]]
    assert cases
    for case in cases:
        config_as(case["x64"], case["partitionable"])
        got = np.asarray(run_case(case))
        want = np.asarray(case["out"]["values"], got.dtype).reshape(got.shape)
        assert got.tobytes() == want.tobytes(), (case, got, want)


def test_exported_code_keeps_single_precision_qr(tmp_path):
    """fungrad.export embeds the kernel (NumPy alone required; SciPy used when
    the exported module finds it): the same bits as JAX's."""
    import importlib.util
    from fungrad.export import export
    case = next(c for c in REFERENCE["cases"] if c["dtype"] == "float32"
                and c["shape"] == [5, 3] and c["mode"] == "reduced")
    a = _array(case["a"], case["shape"], case["dtype"])
    path = tmp_path / "qr_module.py"
    export(lambda x: tuple(fnp.linalg.qr(x, mode="reduced")), a, path=str(path), name="qr")
    spec = importlib.util.spec_from_file_location("qr_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    q, r = module.qr(a)
    assert np.asarray(q).tobytes() == _array(case["q"], case["q_shape"], "float32").tobytes()
    assert np.asarray(r).tobytes() == _array(case["r"], case["r_shape"], "float32").tobytes()
