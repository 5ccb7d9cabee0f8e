"""fungrad.numpy's dtype promotion against JAX's table, cell by cell.

tests/data/jax_promotion_table.json was recorded once with real JAX 0.10.2 by
tools/gen_promotion_table.py (see its docstring): for x64 on and off and every
pair of bool, u8-u64, i8-i64, f16/f32/f64, c64/c128 and the weak types i*, f*,
c* (Python int/float/complex), JAX's ``promote_types``, ``result_type`` (with
its weak flag), the dtype of ``x + y`` eagerly and under ``jit``, and whether
``jax_numpy_dtype_promotion='strict'`` refuses the addition.  Each test below
walks one row of the table and reports every cell that differs.
"""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import dtypes

TABLE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_promotion_table.json")
                   .read_text())
TYPES = TABLE["types"]
WEAK = {"i*": 1, "f*": 1.0, "c*": 1j}
MODES = {"x64": True, "x32": False}


@pytest.fixture(params=list(MODES))
def mode(request):
    with fungrad.enable_x64(MODES[request.param]):
        yield request.param


def _scalar_arg(name):
    return WEAK[name] if name in WEAK else np.dtype(name)


def _array_arg(name):
    """An operand of that type, made as JAX makes it (x64 off: 32-bit)."""
    if name in WEAK:
        return WEAK[name]
    return fnp.ones((2,), fungrad.dtypes.canonicalize_dtype(np.dtype(name)))


def _row_mismatches(mode, a, check):
    bad = []
    for b in TYPES:
        want = TABLE[mode][f"{a},{b}"]
        got = check(a, b, want)
        if got is not None:
            bad.append(f"{a},{b}: {got}")
    return bad


@pytest.mark.parametrize("a", TYPES)
def test_promote_types_and_result_type_match_jax(mode, a):
    def check(a, b, want):
        got = fnp.result_type(_scalar_arg(a), _scalar_arg(b), return_weak_type_flag=True)
        if [str(got[0]), got[1]] != want["result_type"]:
            return f"result_type {got}, JAX {want['result_type']}"
        if dtypes.result_type(_scalar_arg(a), _scalar_arg(b)) != got[0]:
            return "fungrad.dtypes.result_type differs from fungrad.numpy's"
        if "promote_types" in want and str(fnp.promote_types(a, b)) != want["promote_types"]:
            return f"promote_types {fnp.promote_types(a, b)}, JAX {want['promote_types']}"
        return None
    assert _row_mismatches(mode, a, check) == []


@pytest.mark.parametrize("a", TYPES)
def test_addition_eager_and_jit_gives_jax_dtype(mode, a):
    add_jit = fungrad.jit(lambda u, v: u + v)

    def check(a, b, want):
        x, y = _array_arg(a), _array_arg(b)
        if a in WEAK and b in WEAK:
            x = fnp.asarray(x)        # (JAX's weak array; here a strong one of that dtype)
        eager = x + y
        if str(eager.dtype) != want["add"][0]:
            return f"eager x + y is {eager.dtype}, JAX {want['add'][0]}"
        if str(fnp.add(x, y).dtype) != want["add"][0]:
            return f"fnp.add is {fnp.add(x, y).dtype}, JAX {want['add'][0]}"
        x, y = _array_arg(a), _array_arg(b)     # jit: Python scalars are weak arguments
        jitted = add_jit(x, y)
        if str(jitted.dtype) != want["add_jit"][0]:
            return f"jit x + y is {jitted.dtype}, JAX {want['add_jit'][0]}"
        return None
    assert _row_mismatches(mode, a, check) == []


@pytest.mark.parametrize("a", TYPES)
def test_strict_promotion_refuses_what_jax_refuses(mode, a):
    def check(a, b, want):
        x, y = _array_arg(a), _array_arg(b)
        if a in WEAK and b in WEAK:
            return None       # two Python scalars: no array operation to refuse
        with fungrad.numpy_dtype_promotion("strict"):
            try:
                fnp.add(x, y)
                refused = False
            except dtypes.TypePromotionError as err:
                refused = True
                if a not in WEAK and a not in str(err) or b not in WEAK and b not in str(err):
                    if mode == "x64":
                        return f"message names neither dtype: {err}"
        if refused != want["strict_refuses"]:
            return f"strict refuses: {refused}, JAX {want['strict_refuses']}"
        return None
    assert _row_mismatches(mode, a, check) == []


def test_type_promotion_error_is_a_type_error_and_a_value_error_as_in_jax():
    with fungrad.numpy_dtype_promotion("strict"):
        with pytest.raises(TypeError, match="int32.*float32|float32.*int32"):
            fnp.add(fnp.ones(2, np.int32), fnp.ones(2, np.float32))
        with pytest.raises(ValueError):
            fnp.ones(2, np.int32) * fnp.ones(2, np.float32)


def test_the_convolution_notebook_kernel_stays_float32():
    # JAX's "Generalized convolutions" notebook: kernel += int_array keeps float32
    kernel = fnp.zeros((3, 2), fnp.float32)
    kernel += fnp.array([[1, 2], [3, 4], [5, 6]])
    assert kernel.dtype == np.float32
    assert (fnp.zeros(3, fnp.float32) + fnp.array([1, 2, 3])).dtype == np.float32


@given(st.sampled_from(["float16", "float32", "float64"]),
       st.sampled_from(["bool", "uint8", "int8", "int32", "int64", "uint64"]))
def test_every_integer_type_sits_below_every_float_type(f, i):
    x, y = fnp.ones(2, f), fnp.ones(2, i)
    assert (x * y).dtype == np.dtype(f) == (y - x).dtype == fnp.where(True, x, y).dtype
    assert fnp.concatenate([x, y]).dtype == np.dtype(f) == fnp.stack([y, x]).dtype


@pytest.mark.parametrize("x64", [True, False])
def test_reduction_and_inexact_dtypes_are_jax_s(x64):
    with fungrad.enable_x64(x64):
        i = fnp.array([1, 2, 3], fnp.int32)
        int_, float_ = (np.int64, np.float64) if x64 else (np.int32, np.float32)
        assert fnp.sum(i).dtype == int_ and fnp.sum(fnp.array([True, False])).dtype == int_
        assert fnp.sum(fnp.ones(2, np.uint8)).dtype == (np.uint64 if x64 else np.uint32)
        # JAX's inexact counterparts: integers up to 32 bits -> float32
        assert fnp.mean(i).dtype == np.float32 == fnp.sin(fnp.ones(2, np.int8)).dtype
        assert (i / i).dtype == np.float32 == fnp.sqrt(fnp.ones(2, np.uint16)).dtype
        assert fnp.mean(fnp.ones(2, fnp.int64 if x64 else fnp.int32)).dtype == float_
        assert fnp.cumsum(fnp.ones(2, np.int8)).dtype == np.int8
        assert fnp.cumsum(fnp.array([True])).dtype == int_
        assert fnp.linspace(0, 1, 3).dtype == float_
        assert fnp.mean(fnp.ones(2, np.float16)).dtype == np.float16
        assert fnp.ones(2, np.int8).astype(np.float32).dtype == np.float32
        assert (fnp.ones(2, np.float16) + 2.5).dtype == np.float16
        assert (fnp.ones(2, np.uint8) + 3).dtype == np.uint8


def test_numpy_functions_on_tracers_keep_numpys_rules():
    f32, i64, i8 = np.ones(2, np.float32), np.ones(2, np.int64), np.ones(2, np.int8)
    jit = fungrad.jit
    assert jit(lambda x, y: np.add(x, y))(f32, i64).dtype == np.float64      # NumPy's
    assert jit(lambda x, y: fnp.add(x, y))(f32, i64).dtype == np.float32     # JAX's
    assert jit(lambda x, y: x + y)(f32, i64).dtype == np.float32             # operators: JAX's
    assert jit(np.sin)(i8).dtype == np.float16 and jit(fnp.sin)(i8).dtype == np.float32
    assert jit(lambda x: np.mean(x))(i8).dtype == np.float64
    assert jit(lambda x, y: np.concatenate([x, y]))(f32, i64).dtype == np.float64
    assert fungrad.vmap(lambda x, y: np.multiply(x, y))(f32, i64).dtype == np.float64
    # and NumPy's ufuncs on eager Arrays are NumPy's own
    assert np.add(fnp.asarray(f32), fnp.asarray(i64)).dtype == np.float64


def test_array_operators_check_rank_promotion_and_promote_as_jax():
    a, b = fnp.ones((2, 3), np.float32), fnp.ones(3, np.float32)
    with fungrad.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank_promotion"):
            a + b
    assert (a + b).dtype == np.float32 and (a * 2).dtype == np.float32
    u = fnp.ones(2, np.uint8)
    assert (u + u).dtype == np.uint8 and (u + 1).dtype == np.uint8 and (u * 1.5).dtype == np.float64
