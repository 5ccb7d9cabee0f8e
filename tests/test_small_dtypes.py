"""bfloat16, the float8/float6/float4 types and int2/int4/uint2/uint4 (ml_dtypes'
types, which ``fungrad.numpy`` exports as JAX does): promotion, values,
transforms.

Promotion is checked cell by cell against tests/data/jax_small_dtype_promotion.json,
recorded once with real JAX 0.10.2 by tools/gen_small_dtype_table.py (see its
docstring): every ordered pair with at least one small type, x64 on and off.
Values are checked against NumPy computing in float32 and rounding back to the
small type (what XLA's CPU backend does, and what ``fungrad`` does where NumPy
has no loop of its own); derivatives against float32 finite differences with
tolerances for bfloat16's 8-bit significand.  The few random bits compared
were recorded from JAX 0.10.2 (``jax.random.*(PRNGKey(0), (7,), dtype)``,
viewed as unsigned integers).
"""
import json
import pathlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import dtypes

TABLE = json.loads((pathlib.Path(__file__).parent / "data" /
                    "jax_small_dtype_promotion.json").read_text())
SMALL = TABLE["small_types"]
NAMES = SMALL + TABLE["other_types"]
WEAK = {"i*": 1, "f*": 1.0, "c*": 1j}
MODES = {"x64": True, "x32": False}
REFUSED, UNSUPPORTED = "TypePromotionError", "unsupported"
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(params=list(MODES))
def mode(request):
    with fungrad.enable_x64(MODES[request.param]):
        yield request.param


def _dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if name in SMALL else np.dtype(name)


def _scalar_arg(name):
    return WEAK[name] if name in WEAK else _dtype(name)


def _array_arg(name):
    if name in WEAK:
        return WEAK[name]
    return fnp.ones((2,), dtypes.canonicalize_dtype(_dtype(name)))


def _outcome(fn):
    """What ``fn()`` gives, in the table's terms: its value, or REFUSED."""
    try:
        return fn()
    except dtypes.TypePromotionError:
        return REFUSED


def _row_mismatches(mode, a, check):
    bad = []
    for b in NAMES:
        want = TABLE[mode].get(f"{a},{b}")
        if want is None:                 # neither is small: tests/test_promotion.py's cell
            continue
        got = check(a, b, want)
        if got is not None:
            bad.append(f"{a},{b}: {got}")
    return bad


# ----------------------------------------------------------------------------
# promotion: JAX's table, every cell
# ----------------------------------------------------------------------------

def test_fungrad_numpy_exports_jaxs_small_types():
    for name in SMALL:
        assert np.dtype(getattr(fnp, name)) == _dtype(name)
        assert getattr(fnp, name) == getattr(ml_dtypes, name)
    assert fnp.bfloat16(1.5).dtype == BF16 and float(fnp.bfloat16(1.5)) == 1.5


@pytest.mark.parametrize("a", NAMES)
def test_promote_types_and_result_type_match_jax(mode, a):
    def check(a, b, want):
        got = _outcome(lambda: fnp.result_type(_scalar_arg(a), _scalar_arg(b),
                                               return_weak_type_flag=True))
        got = got if got == REFUSED else [str(got[0]), got[1]]
        if got != want["result_type"]:
            return f"result_type {got}, JAX {want['result_type']}"
        if "promote_types" in want:
            got = _outcome(lambda: str(fnp.promote_types(_dtype(a), _dtype(b))))
            if got != want["promote_types"]:
                return f"promote_types {got}, JAX {want['promote_types']}"
        return None
    assert _row_mismatches(mode, a, check) == []


@pytest.mark.parametrize("a", NAMES)
def test_addition_eager_and_jit_gives_jax_dtype(mode, a):
    add_jit = fungrad.jit(lambda u, v: u + v)

    def check(a, b, want):
        if want["add"] == UNSUPPORTED:     # float6: XLA has no arrays of it to compare with
            return None
        x, y = _array_arg(a), _array_arg(b)
        if a in WEAK and b in WEAK:
            x = fnp.asarray(x)
        eager = _outcome(lambda: [str((x + y).dtype)])
        if eager != (want["add"] if want["add"] == REFUSED else want["add"][:1]):
            return f"eager x + y: {eager}, JAX {want['add']}"
        jitted = _outcome(lambda: [str(add_jit(_array_arg(a), _array_arg(b)).dtype)])
        if jitted != (want["add_jit"] if want["add_jit"] == REFUSED else want["add_jit"][:1]):
            return f"jit x + y: {jitted}, JAX {want['add_jit']}"
        return None
    assert _row_mismatches(mode, a, check) == []


@pytest.mark.parametrize("a", SMALL)
def test_strict_promotion_refuses_what_jax_refuses(mode, a):
    def check(a, b, want):
        if want["strict_refuses"] == UNSUPPORTED or (a in WEAK and b in WEAK):
            return None
        x, y = _array_arg(a), _array_arg(b)
        with fungrad.numpy_dtype_promotion("strict"):
            refused = _outcome(lambda: fnp.add(x, y)) is REFUSED
        if refused != want["strict_refuses"]:
            return f"strict refuses: {refused}, JAX {want['strict_refuses']}"
        return None
    assert _row_mismatches(mode, a, check) == []


def test_no_promotion_path_names_the_small_type_class_as_jax():
    with pytest.raises(dtypes.TypePromotionError, match="8-bit floats do not support"):
        fnp.ones(2, fnp.float8_e4m3fn) + fnp.ones(2, fnp.bfloat16)
    with pytest.raises(dtypes.TypePromotionError, match="4-bit integers do not support.*int32"):
        fnp.ones(2, fnp.int4) + fnp.ones(2, np.int8)
    with pytest.raises(TypeError):           # a TypeError too (and a ValueError, as JAX's)
        fnp.promote_types(fnp.float8_e5m2, fnp.float8_e4m3fn)
