"""Single-precision eigh and SVD are JAX's bit for bit: ``jnp.linalg.eigh`` and
``jnp.linalg.svd`` of float32 and complex64 matrices (several shapes,
batched; full, reduced, values alone), eagerly and under jit, against
tests/data/jax_eigh_svd_single.json, which tools/record_jax_eigh_svd.py
recorded once with real JAX 0.10.2.

fungrad computes them with LAPACK's single-precision syevd/heevd and gesdd
through SciPy (the routines jaxlib's CPU kernels call); SciPy is a test
dependency, imported here unconditionally: without it these are NumPy's
(double precision, rounded), ulps away, and this test must fail rather than
skip.  One exception, compared by value: JAX's complex64 eigenvectors can
hold +0.0 where LAPACK's (and fungrad's) imaginary part is -0.0.
"""
import json
import os

import numpy as np
import pytest
import scipy  # noqa: F401  (required: see the module docstring)

import fungrad
import fungrad.numpy as fnp
from tests.test_qr_single import _array

with open(os.path.join(os.path.dirname(__file__), "data", "jax_eigh_svd_single.json")) as _f:
    REFERENCE = json.load(_f)


def _decompose(case):
    if case["fn"] == "eigh":
        return lambda a: fnp.linalg.eigh(a)[::-1]
    if case["fn"] == "svd":
        return lambda a: fnp.linalg.svd(a, full_matrices=case["full_matrices"])
    return lambda a: (fnp.linalg.svd(a, compute_uv=False),)


def _case_id(case):
    return (f"{case['fn']}-{case['dtype']}-{'x'.join(map(str, case['shape']))}"
            f"{'-full' if case.get('full_matrices') else ''}")


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
@pytest.mark.parametrize("under_jit", [False, True])
def test_single_precision_eigh_and_svd_are_jaxs(case, under_jit):
    a = _array(case["a"], case["shape"], case["dtype"])
    f = _decompose(case)
    outs = (fungrad.jit(f) if under_jit else f)(a)
    for k, (got, bits, shape) in enumerate(zip(outs, case["outs"], case["shapes"])):
        got = np.asarray(got)
        want = _array(bits, shape, got.dtype)
        assert got.shape == want.shape, (k, got.shape, want.shape)
        if case["fn"] == "eigh" and got.dtype.kind == "c":
            np.testing.assert_array_equal(got, want)       # (signed zeros: module doc)
        else:
            assert got.tobytes() == want.tobytes(), (k, got, want)
