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


# ----------------------------------------------------------------------------
# dtype classes: issubdtype, finfo, iinfo as JAX files them
# ----------------------------------------------------------------------------

FLOAT_NAMES = [n for n in SMALL if n.startswith(("bfloat", "float"))]
SIGNED_NAMES, UNSIGNED_NAMES = ["int2", "int4"], ["uint2", "uint4"]


@pytest.mark.parametrize("name", SMALL)
def test_issubdtype_files_small_types_as_jax(name):
    t = getattr(fnp, name)
    floating, signed = name in FLOAT_NAMES, name in SIGNED_NAMES
    for check in (fnp.issubdtype, dtypes.issubdtype):
        assert check(t, t) and check(t, fnp.number) and check(t, fnp.generic)
        assert check(t, fnp.floating) == check(t, fnp.inexact) == floating
        assert check(t, fnp.integer) == (not floating)
        assert check(t, fnp.signedinteger) == signed
        assert check(t, fnp.unsignedinteger) == (name in UNSIGNED_NAMES)
        assert not check(t, fnp.complexfloating) and not check(fnp.floating, t)


def test_finfo_and_iinfo_of_small_types():
    info = fnp.finfo(fnp.bfloat16)
    assert (info.bits, info.nmant, float(info.eps)) == (16, 7, 2.0**-7)
    assert float(info.max) == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert float(dtypes.finfo(fnp.float8_e4m3fn).max) == 448.0
    assert fnp.finfo(fnp.float8_e5m2).bits == 8 and fnp.finfo(fnp.ones(2, BF16)).bits == 16
    assert (int(fnp.iinfo(fnp.int4).min), int(fnp.iinfo(fnp.int4).max)) == (-8, 7)
    assert (int(dtypes.iinfo(fnp.uint2).min), int(dtypes.iinfo(fnp.uint2).max)) == (0, 3)


def test_creation_and_astype_keep_small_types():
    for make in (lambda: fnp.zeros((2, 3), fnp.bfloat16), lambda: fnp.ones(4, "bfloat16"),
                 lambda: fnp.full(3, 1.5, fnp.bfloat16), lambda: fnp.arange(4, dtype=fnp.bfloat16),
                 lambda: fnp.asarray([1.0, 2.0]).astype(fnp.bfloat16),
                 lambda: fungrad.jit(lambda: fnp.linspace(0, 1, 5, dtype=fnp.bfloat16))()):
        assert make().dtype == BF16
    assert fnp.zeros(3, fnp.int4).dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(fnp.arange(4, dtype=fnp.bfloat16).astype(np.float32),
                                  [0, 1, 2, 3])


# ----------------------------------------------------------------------------
# values: NumPy in float32, rounded back to the small type
# ----------------------------------------------------------------------------

ULP = 2.0**-8     # bfloat16's rounding error (8-bit significand)


def _small_floats(dtype=BF16, low=-4.0, high=4.0, max_size=24):
    return st.lists(st.floats(low, high, width=32), min_size=1, max_size=max_size).map(
        lambda v: np.asarray(v, np.float32).astype(dtype))


def _in_f32(fn, *xs):
    """The reference: ``fn`` on the values in float32, rounded to the small type."""
    return np.asarray(fn(*[x.astype(np.float32) for x in xs])).astype(xs[0].dtype)


def _f32(x):
    return np.asarray(x).astype(np.float32)


ARITHMETIC = {"add": (np.add, fnp.add), "subtract": (np.subtract, fnp.subtract),
              "multiply": (np.multiply, fnp.multiply), "divide": (np.divide, fnp.divide),
              "maximum": (np.maximum, fnp.maximum)}


@pytest.mark.parametrize("name", ARITHMETIC)
@given(xs=_small_floats(), seed=st.integers(0, 2**16))
def test_arithmetic_is_float32_rounded_once(name, xs, seed):
    ys = np.random.default_rng(seed).uniform(0.5, 3, xs.shape).astype(BF16)
    ref_fn, fn = ARITHMETIC[name]
    want = _in_f32(ref_fn, xs, ys)
    for got in (fn(xs, ys), fungrad.jit(fn)(xs, ys)):
        assert got.dtype == BF16
        np.testing.assert_array_equal(_f32(got), _f32(want))     # exact: +-*/ are correctly rounded


TRANSCENDENTAL = {"exp": (np.exp, fnp.exp), "tanh": (np.tanh, fnp.tanh), "sin": (np.sin, fnp.sin),
                  "log1p": (lambda x: np.log1p(np.abs(x)), lambda x: fnp.log1p(fnp.abs(x))),
                  "rsqrt": (lambda x: 1 / np.sqrt(np.abs(x)), lambda x: fungrad.lax.rsqrt(fnp.abs(x))),
                  # (the reference's 1 / sqrt(0) is inf, as rsqrt(0): NumPy warns)
                  "logistic": (lambda x: 1 / (1 + np.exp(-x)), fungrad.nn.sigmoid)}


@pytest.mark.parametrize("name", TRANSCENDENTAL)
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@given(xs=_small_floats())
def test_transcendental_functions_are_float32_rounded(name, xs):
    ref_fn, fn = TRANSCENDENTAL[name]
    want = _f32(_in_f32(ref_fn, xs))
    for got in (fn(xs), fungrad.jit(fn)(xs)):
        assert got.dtype == BF16
        np.testing.assert_allclose(_f32(got), want, rtol=ULP, atol=1e-30)


@given(xs=_small_floats(max_size=64))
def test_reductions_accumulate_in_float32_then_round(xs):
    x32 = xs.astype(np.float64)
    scale = np.abs(x32).sum() + 1
    for got, want in ((fnp.sum(xs), x32.sum()), (fungrad.jit(fnp.sum)(xs), x32.sum()),
                      (fnp.mean(xs), x32.mean()), (fnp.max(xs), x32.max())):
        assert got.dtype == BF16
        # float32 accumulation error is far below one bfloat16 rounding of the result
        assert abs(float(got) - want) <= ULP * abs(want) + 1e-6 * scale
    np.testing.assert_allclose(_f32(fnp.var(xs)), x32.var(), rtol=2 * ULP,
                               atol=1e-6 * float((x32 ** 2).sum() + 1))


@given(seed=st.integers(0, 2**16), k=st.integers(1, 40))
def test_matmul_and_dot_general_accumulate_in_float32(seed, k):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(5, k)).astype(BF16)
    b = rng.normal(size=(k, 3)).astype(BF16)
    want = _f32(_in_f32(np.matmul, a, b))
    for got in (fungrad.jit(fnp.matmul)(a, b), fnp.dot(a, b), fnp.einsum("ij,jk->ik", a, b),
                fungrad.lax.dot_general(a, b, (((1,), (0,)), ((), ())))):
        assert got.dtype == BF16
        np.testing.assert_allclose(_f32(got), want, rtol=ULP, atol=1e-6 * k)
    pref = fungrad.lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                   preferred_element_type=np.float32)
    assert pref.dtype == np.float32
    np.testing.assert_allclose(pref, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5,
                               atol=1e-5)


def test_convolution_and_windows_compute_in_float32():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 1, 9, 9)).astype(BF16)
    w = rng.normal(size=(1, 1, 3, 3)).astype(BF16)
    want = fungrad.lax.conv(x.astype(np.float32), w.astype(np.float32), (1, 1), "SAME")
    got = fungrad.jit(lambda x, w: fungrad.lax.conv(x, w, (1, 1), "SAME"))(x, w)
    assert got.dtype == BF16
    np.testing.assert_allclose(_f32(got), _f32(np.asarray(want).astype(BF16)), rtol=ULP,
                               atol=1e-5)
    pooled = fungrad.lax.reduce_window(x, -np.inf, fungrad.lax.max, (1, 1, 3, 3), (1, 1, 1, 1),
                                       "VALID")
    assert pooled.dtype == BF16
    np.testing.assert_array_equal(_f32(pooled), fungrad.lax.reduce_window(
        _f32(x), -np.inf, fungrad.lax.max, (1, 1, 3, 3), (1, 1, 1, 1), "VALID"))


def test_cumsum_is_float32_prefix_sums_rounded():
    """JAX lowers cumsum to XLA's reduce_window, whose bfloat16 rounding order is
    the backend's; fungrad's is NumPy's float32 cumsum rounded once."""
    x = np.random.default_rng(1).normal(size=50).astype(BF16)
    got = fungrad.jit(fnp.cumsum)(x)
    assert got.dtype == BF16
    np.testing.assert_array_equal(_f32(got), _f32(np.cumsum(_f32(x)).astype(BF16)))


# ----------------------------------------------------------------------------
# transforms over bfloat16 and float16
# ----------------------------------------------------------------------------

LOW_PRECISION = {"bfloat16": (BF16, 2.0**-8), "float16": (np.dtype(np.float16), 2.0**-11)}


def _loss(w, x):
    return fnp.sum(fnp.tanh(x @ w) ** 2) + fnp.sum(fnp.sin(w))


def _float32_gradient(w, x, eps=1e-3):
    """Central differences of the loss in float32 at the same (rounded) point."""
    w32, x32 = w.astype(np.float32), x.astype(np.float32)
    grad = np.zeros(w.shape, np.float64)
    for i in np.ndindex(w.shape):
        step = np.zeros(w.shape, np.float32)
        step[i] = eps
        grad[i] = (float(_loss(w32 + step, x32)) - float(_loss(w32 - step, x32))) / (2 * eps)
    return grad


@pytest.mark.parametrize("name", LOW_PRECISION)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_grad_of_low_precision_loss_matches_float32_finite_differences(name, seed):
    dtype, ulp = LOW_PRECISION[name]
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(4, 3)).astype(dtype)
    x = rng.normal(size=(6, 4)).astype(dtype)
    g = fungrad.grad(_loss)(w, x)
    assert g.dtype == dtype                      # the tangent type of bfloat16 is bfloat16
    want = _float32_gradient(w, x)
    # each rounded intermediate costs about one ulp of the values it feeds
    tol = 40 * ulp * (np.abs(want).max() + 1)
    np.testing.assert_allclose(_f32(g), want, atol=tol)
    # jit's program may contract in another order (a transposed matmul): the
    # float32 sums then differ in their last bits, which can move a rounding
    np.testing.assert_allclose(_f32(fungrad.jit(fungrad.grad(_loss))(w, x)), _f32(g),
                               atol=4 * ulp * (np.abs(want).max() + 1))


@pytest.mark.parametrize("name", LOW_PRECISION)
def test_jvp_vjp_and_vmap_keep_the_low_precision_dtype(name):
    dtype, ulp = LOW_PRECISION[name]
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 4)).astype(dtype)
    t = rng.normal(size=(5, 4)).astype(dtype)
    out, tangent = fungrad.jvp(lambda x: fnp.exp(x) * x, (x,), (t,))
    assert out.dtype == tangent.dtype == dtype
    x32, t32 = x.astype(np.float32), t.astype(np.float32)
    np.testing.assert_allclose(_f32(tangent), (np.exp(x32) * (x32 + 1)) * t32,
                               rtol=8 * ulp, atol=8 * ulp)
    _, pullback = fungrad.vjp(lambda x: fnp.sum(x * x, axis=1), x)
    (ct,) = pullback(np.ones(5, dtype))
    assert ct.dtype == dtype
    np.testing.assert_array_equal(_f32(ct), _f32(2 * x32).astype(dtype).astype(np.float32))
    w = rng.normal(size=(4,)).astype(dtype)
    per_row = fungrad.vmap(lambda r: fnp.dot(r, w))(x)
    loop = np.stack([_f32(fnp.dot(r, w)) for r in x])
    assert per_row.dtype == dtype
    np.testing.assert_array_equal(_f32(per_row), loop)
    hess = fungrad.hessian(lambda v: fnp.sum(fnp.sin(v)))(w)
    assert hess.dtype == dtype
    np.testing.assert_allclose(np.diag(_f32(hess)), -np.sin(_f32(w)), rtol=4 * ulp, atol=ulp)


def test_mixed_precision_training_step_stays_in_bfloat16():
    """bfloat16 parameters, float32 loss: the cast's transpose brings the
    gradient back to bfloat16 (JAX's convert_element_type rule)."""
    w = np.linspace(-1, 1, 6).astype(BF16)
    loss = lambda w: fnp.sum(w.astype(np.float32) ** 2)
    g = fungrad.grad(loss)(w)
    assert g.dtype == BF16
    np.testing.assert_array_equal(_f32(g), 2 * _f32(w))


def test_integer_inputs_of_small_types_have_float0_tangents():
    x = np.arange(-3, 4).astype(ml_dtypes.int4)
    g = fungrad.grad(lambda x, y: fnp.sum(y * 2.0), argnums=(0, 1), allow_int=True)(
        x, np.ones(3, BF16))
    assert g[0].dtype == dtypes.float0 and g[1].dtype == BF16


# ----------------------------------------------------------------------------
# float8 and int4: conversions and wrap-around as ml_dtypes and JAX define them
# ----------------------------------------------------------------------------

FLOAT8_NAMES = [n for n in SMALL if n.startswith("float8")]


@pytest.mark.parametrize("name", FLOAT8_NAMES)
def test_float8_values_round_trip_through_float32(name):
    dtype = _dtype(name)
    every = np.arange(256, dtype=np.uint8).view(dtype)           # every bit pattern
    wide = fungrad.lax.convert_element_type(every, np.float32)
    back = fungrad.jit(lambda v: fungrad.lax.convert_element_type(v, dtype))(wide)
    finite = np.isfinite(_f32(every))
    np.testing.assert_array_equal(np.asarray(back).view(np.uint8)[finite],
                                  np.arange(256, dtype=np.uint8)[finite])
    assert np.isnan(_f32(back)[np.isnan(_f32(every))]).all()


@pytest.mark.parametrize("name", FLOAT8_NAMES)
def test_float8_saturation_and_nan_as_ml_dtypes(name):
    dtype = _dtype(name)
    big = np.asarray([1e6, -1e6, np.inf, np.nan, 3.3], np.float32)
    got = fnp.asarray(big).astype(dtype)
    want = big.astype(dtype)                  # ml_dtypes' conversion: the definition
    np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))
    if name == "float8_e4m3fn":      # no infinities: out of range is NaN, 448 the largest
        assert np.isnan(_f32(got)[[0, 1, 2, 3]]).all() and float(fnp.finfo(dtype).max) == 448
    if name == "float8_e5m2":        # IEEE-like: out of range overflows to infinity
        assert _f32(got)[0] == np.inf and _f32(got)[1] == -np.inf


# x = [7, -8, 3, -1] (int4), u = [15, 0, 9, 1] (uint4): JAX 0.10.2's results
INT4_JAX = {"add": ([-2, 0, 6, -2], lambda x, u: x + x), "mul": ([5, -8, -7, -3], lambda x, u: x * 3),
            "neg": ([-7, -8, -3, 1], lambda x, u: -x), "and": ([5, 0, 1, 5], lambda x, u: x & 5),
            "shl": ([-2, 0, 6, -2], lambda x, u: x << 1), "shr": ([3, -4, 1, -1], lambda x, u: x >> 1),
            "floordiv": ([3, -4, 1, -1], lambda x, u: x // 2), "rem": ([1, 1, 0, 2], lambda x, u: x % 3),
            "u4add": ([14, 0, 2, 2], lambda x, u: u + u), "u4sub": ([12, 13, 6, 14], lambda x, u: u - 3),
            "u4mul": ([1, 0, 1, 1], lambda x, u: u * u), "square": ([1, 0, -7, 1], lambda x, u: x * x),
            "dot": (-5, lambda x, u: x @ x), "invert": ([-8, 7, -4, 0], lambda x, u: ~x),
            "sign": ([1, -1, 1, -1], lambda x, u: fnp.sign(x)), "max": (7, lambda x, u: fnp.max(x)),
            "cumsum": ([7, -1, 2, 1], lambda x, u: fnp.cumsum(x)),
            # on the bits: a logical shift and clz read int4's own 4-bit pattern
            "srl": ([3, 4, 1, 7], lambda x, u: fungrad.lax.shift_right_logical(
                x, fnp.ones(4, x.dtype))),
            "clz": ([1, 0, 2, 0], lambda x, u: fungrad.lax.clz(x)),
            "popcount": ([3, 5, 2, -8], lambda x, u: fungrad.lax.population_count(x)),
            "u4srl": ([7, 0, 4, 0], lambda x, u: fungrad.lax.shift_right_logical(
                u, fnp.ones(4, u.dtype))),
            "u4clz": ([0, 4, 0, 3], lambda x, u: fungrad.lax.clz(u)),
            "u4popcount": ([4, 0, 2, 1], lambda x, u: fungrad.lax.population_count(u))}


@pytest.mark.parametrize("name", INT4_JAX)
def test_int4_arithmetic_wraps_around_as_jax(name):
    want, fn = INT4_JAX[name]
    x = np.asarray([7, -8, 3, -1], ml_dtypes.int4)
    u = np.asarray([15, 0, 9, 1], ml_dtypes.uint4)
    for got in (fungrad.jit(fn)(x, u), fn(fnp.asarray(x), fnp.asarray(u)) if name in (
            "max", "cumsum", "sign") else fungrad.jit(fn)(x, u)):
        assert got.dtype == (x.dtype if not name.startswith("u4") else u.dtype)
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)


def test_int2_wraps_and_weak_scalars_keep_the_small_integer_type():
    y = fungrad.jit(lambda v: v + 1)(np.asarray([1, -2], ml_dtypes.int2))
    assert y.dtype == np.dtype(ml_dtypes.int2)
    np.testing.assert_array_equal(np.asarray(y).astype(int), [-2, -1])      # JAX: [-2, -1]


# ----------------------------------------------------------------------------
# random bits: JAX's, for bfloat16 and float8 (recorded from JAX 0.10.2)
# ----------------------------------------------------------------------------

RANDOM_JAX = {   # (partitionable, sampler, dtype) -> JAX's bits of PRNGKey(0), shape (7,)
    (True, "normal", "bfloat16"): [16070, 15931, 49024, 48979, 16144, 48933, 48397],
    (True, "uniform", "bfloat16"): [16166, 16146, 15904, 15952, 16182, 16004, 16120],
    (True, "uniform(-2,3)", "bfloat16"): [16288, 16216, 49052, 49020, 16328, 48950, 16088],
    (True, "normal", "float8_e4m3fn"): [44, 26, 183, 183, 44, 177, 167],
    (True, "uniform(-2,3)", "float8_e5m2"): [56, 56, 192, 192, 56, 186, 186],
    (False, "normal", "bfloat16"): [15890, 49037, 48811, 48972, 49052, 49076, 16262],
    (False, "uniform", "bfloat16"): [16142, 15880, 16060, 15960, 15840, 15776, 16218],
    (False, "uniform(-2,3)", "bfloat16"): [16200, 49067, 48680, 49010, 49082, 49102, 16400],
    (False, "normal", "float8_e4m3fn"): [26, 183, 177, 183, 191, 191, 52],
    (False, "uniform(-2,3)", "float8_e5m2"): [56, 192, 186, 192, 192, 192, 64],
}
SAMPLERS = {"normal": lambda k, d: fungrad.random.normal(k, (7,), d),
            "uniform": lambda k, d: fungrad.random.uniform(k, (7,), d),
            "uniform(-2,3)": lambda k, d: fungrad.random.uniform(k, (7,), d, -2.0, 3.0)}


@pytest.mark.parametrize("case", list(RANDOM_JAX), ids=str)
def test_random_samples_of_small_floats_are_jaxs_bits(case):
    partitionable, sampler, name = case
    dtype = _dtype(name)
    with fungrad.threefry_partitionable(partitionable):
        got = SAMPLERS[sampler](fungrad.random.PRNGKey(0), dtype)
    assert got.dtype == dtype
    bits = np.asarray(got).view(np.uint16 if dtype.itemsize == 2 else np.uint8)
    np.testing.assert_array_equal(bits, RANDOM_JAX[case])


# ----------------------------------------------------------------------------
# what JAX refuses
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [fnp.linalg.inv, fnp.linalg.cholesky, fnp.linalg.svd,
                                fnp.linalg.qr, lambda a: fnp.linalg.eigh(a),
                                lambda a: fnp.linalg.solve(a, a[0])],
                         ids=["inv", "cholesky", "svd", "qr", "eigh", "solve"])
def test_linalg_decompositions_refuse_bfloat16_with_the_fix(fn):
    """JAX 0.10.2 raises NotImplementedError ('Unsupported dtype bfloat16') for these."""
    a = (np.eye(3) * 2 + 0.1).astype(BF16)
    with pytest.raises(TypeError, match="bfloat16.*convert"):
        fn(a)


def test_export_refuses_small_dtypes_naming_the_reason():
    """An exported module imports NumPy only, which has no bfloat16."""
    from fungrad.export import export
    with pytest.raises(TypeError, match="ml_dtypes"):
        export(lambda x: fnp.tanh(x) * 2, np.ones(3, BF16))


def test_numba_backend_leaves_small_dtypes_to_numpy():
    x = np.linspace(-1, 1, 5).astype(BF16)
    got = fungrad.jit(lambda x: fnp.sum(fnp.tanh(x)), backend="numba")(x)
    assert got.dtype == BF16
    assert float(got) == float(fungrad.jit(lambda x: fnp.sum(fnp.tanh(x)))(x))


@pytest.mark.parametrize("fn", [lambda x: fnp.sum(fnp.sin(x) * x), lambda x: fnp.tanh(x) * 3,
                                lambda x: fnp.matmul(x, x)], ids=["sin", "tanh", "matmul"])
def test_check_grads_has_bfloat16_defaults(fn):
    """fungrad.test_util's tolerances for bfloat16: JAX's (1e-1), finite steps of 0.1."""
    from fungrad.test_util import check_grads
    check_grads(fn, (np.linspace(-1, 1, 5).astype(BF16),), order=2)


# x = [1, 2, 3, -1], indices [0, 5, 2] (5 out of bounds): JAX 0.10.2's results
GATHER_SCATTER_JAX = {
    "gather_fill": ({"bfloat16": [1, np.nan, 3], "int4": [1, -8, 3]},
                    lambda x, i: x.at[i].get(mode="fill")),
    "scatter_add": ({"bfloat16": [2, 2, 4, -1], "int4": [2, 2, 4, -1]},
                    lambda x, i: x.at[i].add(fnp.asarray([1, 1, 1], x.dtype), mode="drop")),
    "scatter_max": ({"bfloat16": [5, 2, 3, -1], "int4": [5, 2, 3, -1]},
                    lambda x, i: x.at[i].max(fnp.asarray([5, 5, -5], x.dtype), mode="drop")),
    "scatter_min": ({"bfloat16": [1, 2, -5, -1], "int4": [1, 2, -5, -1]},
                    lambda x, i: x.at[i].min(fnp.asarray([5, 5, -5], x.dtype), mode="drop")),
}


@pytest.mark.parametrize("name", GATHER_SCATTER_JAX)
@pytest.mark.parametrize("dtype_name", ["bfloat16", "int4"])
def test_gather_fill_and_scatter_identities_of_small_types_as_jax(name, dtype_name):
    wants, fn = GATHER_SCATTER_JAX[name]
    x = fnp.asarray(np.asarray([1, 2, 3, -1]).astype(_dtype(dtype_name)))
    idx = fnp.asarray([0, 5, 2])
    for got in (fn(x, idx), fungrad.jit(fn)(x, idx)):
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(_f32(got), wants[dtype_name])


def test_isdtype_takes_jaxs_scalar_types_and_files_small_types_as_jax():
    assert fnp.isdtype(fnp.bfloat16, "real floating") and fnp.isdtype(fnp.float16, "numeric")
    assert fnp.isdtype(fnp.float8_e4m3fn, "numeric") and fnp.isdtype(fnp.uint4, "unsigned integer")
    assert fnp.isdtype(fnp.int4, ("bool", "integral")) and not fnp.isdtype(fnp.int4, "real floating")
    assert fnp.isdtype(fnp.float32, fnp.float32)
