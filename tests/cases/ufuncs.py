"""Cases for fungrad.numpy's elementwise functions (fungrad/numpy/_ufuncs.py).

Each function is compared with its NumPy namesake on several dtypes
(float64, float32, int64, bool where NumPy accepts them); binary functions
draw each operand's dtype independently, so mixed-dtype promotion is covered
too, with NumPy's values in JAX's dtypes (``jax_promoted``: ``int64 +
float32`` is float32, ``sin(int8)`` float32).  The generic runner differentiates only floating-point operands, so
integer and boolean draws check values and dtypes only.  Inputs keep away
from kinks; JAX's values at kinks are in tests/test_elementwise.py.
"""
import numpy as np

import fungrad.numpy as fnp
from tests.harness import Arg, Case, jax_promoted

DT4 = ("float64", "float32", "int64", "bool")
DT4C = DT4 + ("complex128",)      # where NumPy (and JAX) take complex numbers too
NUMERIC = ("float64", "float32", "int64")
FLOATS = ("float64", "float32")
INTS = ("int64", "int32", "uint8", "bool")
INTEGER_POINTS = tuple(float(k) for k in range(-3, 4))
HALF_POINTS = tuple(k + 0.5 for k in range(-4, 4))


# ----------------------------------------------------------------------------
# Input makers (each handles every dtype it may be drawn with)
# ----------------------------------------------------------------------------

def _magnitude(low, high):
    """|x| in [low, high] with a random sign (integers: nonzero; bools: True)."""
    def make(rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            return np.ones(shape, dtype=bool)
        unsigned = np.issubdtype(dtype, np.unsignedinteger)
        sign = 1 if unsigned else np.where(rng.random(shape) < 0.5, -1, 1)
        if np.issubdtype(dtype, np.integer):
            return (sign * rng.integers(max(1, int(low)), int(high) + 1, size=shape)).astype(dtype)
        return (sign * rng.uniform(low, high, size=shape)).astype(dtype)
    return make


def _with_specials(rng, shape, dtype):
    """Finite values mixed with inf, -inf, nan and -0.0 (floats only)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    x = rng.uniform(-3, 3, size=shape)
    pick = rng.random(shape)
    for value, upto in ((np.inf, 0.12), (-np.inf, 0.24), (np.nan, 0.36), (-0.0, 0.44), (0.0, 0.5)):
        x = np.where((pick < upto) & (pick >= upto - 0.12), value, x)
    return x.astype(dtype)


def _between_powers_of_two(rng, shape, dtype):
    """Values whose frexp exponent does not change within +-1e-4 (kinks at 2^k)."""
    if not np.issubdtype(np.dtype(dtype), np.floating):
        return rng.integers(-20, 21, size=shape).astype(dtype)
    mag = 2.0 ** (rng.integers(-3, 3, size=shape) + rng.uniform(0.1, 0.9, size=shape))
    return (np.where(rng.random(shape) < 0.5, -mag, mag)).astype(dtype)


def _nonnegative_small(rng, shape, dtype):
    return rng.integers(0, 5, size=shape).astype(dtype)


def _shift_amounts(rng, shape, dtype):
    return rng.integers(0, 8, size=shape).astype(dtype)


def _u(name, arg, ref=None, fun=None, label=None, **kw):
    """A one-argument case comparing fnp.<name> with np.<name> (in JAX's dtypes)."""
    return Case(f"fnp.{label or name}", fun or getattr(fnp, name),
                ref or jax_promoted(getattr(np, name)), [arg], **kw)


def _b(name, x, y, ref=None, fun=None, label=None, **kw):
    """A case comparing fnp.<name> with np.<name> (``y`` None: one argument, the
    other closed over in ``fun``/``ref``)."""
    return Case(f"fnp.{label or name}", fun or getattr(fnp, name),
                ref or jax_promoted(getattr(np, name)), [x] if y is None else [x, y], **kw)


# ----------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------

ARITHMETIC = [
    _b("add", Arg(dtype=DT4C), Arg("bcast", dtype=DT4C), prims=("add",)),
    _b("subtract", Arg(dtype=NUMERIC + ("complex128",)), Arg("bcast", dtype=NUMERIC),
       prims=("sub",)),
    _b("multiply", Arg(dtype=DT4C), Arg("bcast", dtype=DT4C), prims=("mul",)),
    _b("multiply", Arg(dtype=FLOATS), None, label="multiply_weak_float",
       fun=lambda x: fnp.multiply(x, 2.5), ref=lambda x: np.multiply(x, 2.5)),
    _b("multiply", Arg(dtype=("int64", "bool")), None, label="multiply_int_by_float",
       fun=lambda x: fnp.multiply(x, 2.5), ref=lambda x: np.multiply(x, 2.5)),
    _b("divide", Arg(dtype=DT4C), Arg("bcast", dtype=NUMERIC, make=_magnitude(0.5, 3)),
       prims=("div",)),
    _b("divide", Arg(dtype=NUMERIC), Arg("bcast", dtype="complex128", low=0.5, high=3),
       label="divide_by_complex"),
    _b("true_divide", Arg(dtype=("int64", "bool")), Arg("bcast", dtype="int64", make=_magnitude(1, 4))),
    _b("floor_divide", Arg(dtype=NUMERIC + ("bool",), low=-9, high=9),
       Arg("bcast", dtype=NUMERIC, make=_magnitude(1, 4)), grad_order=0),
    _b("floor_divide", Arg(make=_magnitude(2.2, 2.8)), Arg("bcast", make=_magnitude(1.0, 1.02)),
       label="floor_divide_grad"),
    _b("remainder", Arg(dtype=NUMERIC + ("bool",), low=-9, high=9),
       Arg("bcast", dtype=NUMERIC, make=_magnitude(1, 4)), grad_order=0),
    _b("remainder", Arg(make=_magnitude(2.2, 2.8)), Arg("bcast", make=_magnitude(1.0, 1.02)),
       label="remainder_grad"),
    _b("mod", Arg(dtype=FLOATS, make=_magnitude(2.2, 2.8)),
       Arg("bcast", dtype=FLOATS, make=_magnitude(1.0, 1.02)), grad_order=1),
    _b("fmod", Arg(dtype=FLOATS, make=_magnitude(2.2, 2.8)),
       Arg("bcast", dtype=FLOATS, make=_magnitude(1.0, 1.02)), prims=("rem",)),
    _b("fmod", Arg(dtype=NUMERIC + ("bool",), low=-9, high=9),
       Arg("bcast", dtype=NUMERIC, make=_magnitude(1, 4)), label="fmod_values", grad_order=0),
    _b("divmod", Arg(dtype=NUMERIC, low=-9, high=9),
       Arg("bcast", dtype=NUMERIC, make=_magnitude(1, 4)), grad_order=0),
    _b("power", Arg(dtype=FLOATS + ("complex128",), low=0.3, high=3),
       Arg("bcast", dtype=DT4C, low=-2, high=2), prims=("pow",)),
    _b("power", Arg(dtype=("int64", "int32", "bool"), low=-3, high=3),
       Arg("bcast", dtype=("int64", "int32", "bool"), make=_nonnegative_small),
       label="power_int", grad_order=0),
    _b("power", Arg(dtype=DT4C, avoid=(0.0,), margin=0.3), None, label="power_py_int",
       fun=lambda x: fnp.power(x, 3), prims=("integer_pow",),    # JAX: bool ** 3 is int32
       ref=lambda x: np.power(x.astype(np.int32) if x.dtype == np.bool_ else x, 3)),
    # x ** -2 is 1 / (x * x), as JAX computes integer_pow: two roundings, up to
    # about 1 ulp of float32 (1.2e-7) from the correctly rounded np.power
    _b("power", Arg(dtype=FLOATS, avoid=(0.0,), margin=0.3), None, label="power_py_negative",
       fun=lambda x: fnp.power(x, -2), ref=lambda x: np.power(x, -2), rtol=2.5e-7),
    _b("pow", Arg(dtype=FLOATS, low=0.3, high=3), Arg("bcast", dtype=FLOATS, low=-2, high=2)),
    _b("float_power", Arg(dtype=NUMERIC, low=1, high=3), Arg("bcast", dtype=DT4, low=-2, high=2)),
    _u("negative", Arg(dtype=NUMERIC + ("complex128",)), prims=("neg",)),
    _u("positive", Arg(dtype=NUMERIC + ("complex128",))),
    _u("absolute", Arg(dtype=DT4C + ("uint8",), avoid=(0.0,)), prims=("abs",)),
    _u("abs", Arg(dtype=DT4C, avoid=(0.0,))),
    _u("fabs", Arg(dtype=DT4, avoid=(0.0,))),
    _u("sign", Arg(dtype=NUMERIC, avoid=(0.0,)), prims=("sign",)),
    _u("square", Arg(dtype=DT4C), prims=("square",)),
    # (integers become inexact first, as in JAX: NumPy's integer reciprocal truncates)
    _u("reciprocal", Arg(dtype=NUMERIC, make=_magnitude(0.3, 3)),
       ref=jax_promoted(lambda x: 1.0 / x)),
    _u("reciprocal", Arg(dtype="complex128", avoid=(0.0,), margin=0.3),
       label="reciprocal_complex"),
    _u("sqrt", Arg(dtype=DT4C, low=0.2)),
    _u("cbrt", Arg(dtype=DT4, avoid=(0.0,), margin=0.3)),
]


# ----------------------------------------------------------------------------
# Rounding
# ----------------------------------------------------------------------------

ROUNDING = [
    _u("floor", Arg(dtype=DT4, avoid=INTEGER_POINTS), prims=("floor",)),
    _u("ceil", Arg(dtype=DT4, avoid=INTEGER_POINTS), prims=("ceil",)),
    _u("trunc", Arg(dtype=DT4, avoid=INTEGER_POINTS)),
    _u("fix", Arg(dtype=DT4, avoid=INTEGER_POINTS)),
    # JAX: rint of bools and integers is the default float (float64)
    _u("rint", Arg(dtype=DT4, avoid=HALF_POINTS), prims=("round",),
       ref=lambda x: np.rint(x.astype(np.float64) if x.dtype.kind in "biu" else x)),
    _u("round", Arg(dtype=DT4, avoid=HALF_POINTS), ref=np.round),   # (JAX refuses bool)
    _u("around", Arg(dtype=NUMERIC, avoid=HALF_POINTS), ref=np.round),
    _u("round", Arg(dtype=NUMERIC, low=-99, high=99), label="round_decimals_2",
       fun=lambda x: fnp.round(x, 2), ref=lambda x: np.round(x, 2), grad_order=0),
    Case("fnp.round_decimals_minus_1", lambda x: fnp.round(x, -1), lambda x: np.round(x, -1),
         [Arg(dtype=("float64", "int64", "int32"), low=-99, high=99)], grad_order=0),
    _u("modf", Arg(dtype=NUMERIC, avoid=INTEGER_POINTS)),
]


# ----------------------------------------------------------------------------
# Exponentials, logarithms, trigonometry
# ----------------------------------------------------------------------------

def _float_unary(name, rtol=1e-7, complex_=True, **arg_kw):
    """``fnp.<name>`` on floats, ints, bools and (``complex_``) complex numbers;
    complex draws keep |Im| < 0.8 off the cuts and poles near the imaginary axis."""
    dtypes = DT4C if complex_ else DT4
    arg_kw.setdefault("imag", (-0.8, 0.8))
    return _u(name, Arg(dtype=dtypes, **arg_kw), rtol=rtol)


TRANSCENDENTAL = [
    _float_unary("exp"), _float_unary("exp2", rtol=1e-6), _float_unary("expm1", rtol=1e-6),
    _float_unary("log", low=0.2),     # log(x) / log(2): a few ulp from NumPy's log2 (1e-7 is 1 ulp of float32)
    _float_unary("log2", low=0.2, rtol=1e-6), _float_unary("log10", low=0.2, rtol=1e-6),
    _float_unary("log1p", low=-0.5),
    # composites of several float32 ops: within a few ulp of NumPy's single loop
    _b("logaddexp", Arg(dtype=DT4), Arg("bcast", dtype=DT4), rtol=1e-6),
    _b("logaddexp2", Arg(dtype=DT4), Arg("bcast", dtype=DT4), rtol=1e-6),
    _b("logaddexp", Arg(dtype=FLOATS, make=_with_specials),
       Arg("bcast", dtype=FLOATS, make=_with_specials), label="logaddexp_specials", grad_order=0,
       rtol=1e-6),
    _float_unary("sin"), _float_unary("cos"), _float_unary("tan", low=-1.3, high=1.3),
    _float_unary("arcsin", low=-0.75, high=0.75), _float_unary("arccos", low=-0.75, high=0.75),
    _float_unary("arctan"), _float_unary("sinh"), _float_unary("cosh"), _float_unary("tanh"),
    _float_unary("arcsinh"), _float_unary("arccosh", low=1.2, high=4),
    _float_unary("arctanh", low=-0.75, high=0.75),
    _float_unary("asin", low=-0.75, high=0.75), _float_unary("acos", low=-0.75, high=0.75),
    _float_unary("atan"), _float_unary("asinh"), _float_unary("acosh", low=1.2, high=4),
    _float_unary("atanh", low=-0.75, high=0.75),
    _b("arctan2", Arg(dtype=DT4, avoid=(0.0,)), Arg("bcast", dtype=DT4)),
    _b("atan2", Arg(dtype=FLOATS, avoid=(0.0,)), Arg("bcast", dtype=FLOATS)),
    _b("hypot", Arg(dtype=DT4, avoid=(0.0,)), Arg("bcast", dtype=DT4, avoid=(0.0,)), rtol=1e-6),
    _b("hypot", Arg(dtype=FLOATS, make=_with_specials),
       Arg("bcast", dtype=FLOATS, make=_with_specials), label="hypot_specials", grad_order=0,
       rtol=1e-6),
    _float_unary("deg2rad", complex_=False), _float_unary("rad2deg", complex_=False),
    _float_unary("degrees", complex_=False), _float_unary("radians", complex_=False),
    _float_unary("sinc"),
    _u("sinc", Arg(dtype=("float64", "complex128"), low=-0.01, high=0.01), label="sinc_near_zero"),
]


# ----------------------------------------------------------------------------
# Extrema and selection
# ----------------------------------------------------------------------------

@jax_promoted
def _clip_ref(x, lo, hi):
    return np.clip(x, lo, hi)


EXTREMA = [
    _b("maximum", Arg(dtype=DT4C, low=0.2, high=3), Arg("bcast", dtype=DT4C, low=-3, high=-0.2),
       prims=("max",)),
    _b("maximum", Arg(dtype=FLOATS, low=-3, high=-0.2), Arg("bcast", dtype=FLOATS, low=0.2, high=3),
       label="maximum_y_larger"),
    _b("minimum", Arg(dtype=DT4C, low=0.2, high=3), Arg("bcast", dtype=DT4C, low=-3, high=-0.2),
       prims=("min",)),
    _b("fmax", Arg(dtype=DT4, low=0.2, high=3), Arg("bcast", dtype=DT4, low=-3, high=-0.2)),
    _b("fmin", Arg(dtype=DT4, low=0.2, high=3), Arg("bcast", dtype=DT4, low=-3, high=-0.2)),
    _b("fmax", Arg(dtype=FLOATS, make=_with_specials), Arg("bcast", dtype=FLOATS, make=_with_specials),
       label="fmax_nan", grad_order=0),
    _b("fmin", Arg(dtype=FLOATS, make=_with_specials), Arg("bcast", dtype=FLOATS, make=_with_specials),
       label="fmin_nan", grad_order=0),
    Case("fnp.clip", fnp.clip, _clip_ref,
         [Arg(dtype=DT4, low=-0.8, high=0.8), Arg("bcast", dtype=NUMERIC, low=-3, high=-1),
          Arg("bcast", dtype=NUMERIC, low=1, high=3)]),
    Case("fnp.clip_active_bounds", fnp.clip, _clip_ref,
         [Arg(make=_magnitude(1.5, 3)), Arg("bcast", low=-1.2, high=-1),
          Arg("bcast", low=1, high=1.2)]),
    Case("fnp.clip_scalars", lambda x: fnp.clip(x, -1, 1.5), lambda x: np.clip(x, -1, 1.5),
         [Arg(dtype=DT4, avoid=(-1.0, 1.5))]),
    Case("fnp.clip_keywords", lambda x: fnp.clip(x, min=-1.0), lambda x: np.clip(x, min=-1.0),
         [Arg(dtype=FLOATS, avoid=(-1.0,))]),
    Case("fnp.clip_max_only", lambda x: fnp.clip(x, None, 0.5), lambda x: np.clip(x, None, 0.5),
         [Arg(dtype=NUMERIC, avoid=(0.5,))]),
    Case("fnp.where", fnp.where, np.where,
         [Arg(dtype=DT4, low=-1, high=1, diff=False), Arg("bcast", dtype=DT4C),
          Arg("bcast", dtype=DT4C)], prims=("select_n",)),
    Case("fnp.where_scalar", lambda c, x: fnp.where(c, x, 0.5),
         lambda c, x: np.where(c, x, 0.5), [Arg(dtype="bool", diff=False),
                                            Arg("bcast", dtype=DT4)]),
]


# ----------------------------------------------------------------------------
# Comparisons, logic, bits
# ----------------------------------------------------------------------------

COMPARISON_NAMES = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]

LOGIC = [
    # complex numbers compare lexicographically (NumPy's order); small integer
    # values make ties in the real part common
    _b(name, Arg(dtype=DT4C, low=-2, high=2), Arg("bcast", dtype=DT4C, low=-2, high=2),
       grad_order=0)
    for name in COMPARISON_NAMES
] + [
    _b(name, Arg(dtype=("uint8", "int32")), None, label=f"{name}_out_of_range",
       fun=lambda x, f=getattr(fnp, name): f(x, 1000), ref=lambda x, f=getattr(np, name): f(x, 1000),
       grad_order=0)
    for name in COMPARISON_NAMES
] + [
    _b(name, Arg(dtype=DT4, low=-1, high=1), Arg("bcast", dtype=DT4, low=-1, high=1),
       grad_order=0)
    for name in ["logical_and", "logical_or", "logical_xor"]
] + [
    _u("logical_not", Arg(dtype=DT4, low=-1, high=1), grad_order=0),
] + [
    _b(name, Arg(dtype=INTS, low=-50, high=50), Arg("bcast", dtype=INTS, low=-50, high=50),
       grad_order=0)
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]
] + [
    _u(name, Arg(dtype=INTS, low=-50, high=50), grad_order=0)
    for name in ["bitwise_not", "invert", "bitwise_invert"]
] + [
    _b(name, Arg(dtype=("int64", "int8", "uint8"), low=0, high=50),
       Arg("bcast", dtype=("int64", "int8", "uint8"), make=_shift_amounts), grad_order=0)
    for name in ["left_shift", "bitwise_left_shift"]
] + [
    _b(name, Arg(dtype=("int64", "int8", "uint8"), low=-50, high=50),
       Arg("bcast", dtype=("int64", "int8", "uint8"), make=_shift_amounts), grad_order=0)
    for name in ["right_shift", "bitwise_right_shift"]
]


# ----------------------------------------------------------------------------
# Floating-point classification and manipulation
# ----------------------------------------------------------------------------

CLASSIFY = [
    _u(name, Arg(dtype=DT4, make=_with_specials), grad_order=0)
    for name in ["isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit"]
] + [
    _u("isfinite", Arg(dtype="complex128"), label="isfinite_complex", grad_order=0),
    _b("copysign", Arg(dtype=DT4, avoid=(0.0,)), Arg("bcast", dtype=DT4)),
    _b("copysign", Arg(dtype=FLOATS, make=_with_specials),
       Arg("bcast", dtype=FLOATS, make=_with_specials), label="copysign_specials", grad_order=0),
    _b("heaviside", Arg(dtype=NUMERIC, avoid=(0.0,)), Arg("bcast", dtype=DT4)),
    _b("heaviside", Arg(dtype=FLOATS, make=_with_specials), Arg("bcast", dtype=FLOATS),
       label="heaviside_specials", grad_order=0),
    _b("nextafter", Arg(dtype=DT4), Arg("bcast", dtype=DT4)),
    _b("ldexp", Arg(dtype=FLOATS), Arg("bcast", dtype=("int64", "int32"), low=-5, high=5),
       ref=np.ldexp),      # (mixed kinds: the float operand keeps its dtype, as in JAX)
    _u("frexp", Arg(dtype=NUMERIC, make=_between_powers_of_two)),
    _u("frexp", Arg(dtype=FLOATS, make=_with_specials), label="frexp_specials", grad_order=0),
    _u("frexp", Arg((6,), make=lambda rng, shape, dtype: np.array(
        [5e-324, 1e-310, 2.0 ** -1022, 1.7e308, 0.5, -1.0])), label="frexp_extremes",
        grad_order=0),
    _u("nan_to_num", Arg(dtype=DT4, make=_with_specials), grad_order=1),
    Case("fnp.nan_to_num_fills", lambda x: fnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
         lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
         [Arg(dtype=FLOATS, make=_with_specials)], grad_order=1),
]


# ----------------------------------------------------------------------------
# Integers, complex parts, closeness
# ----------------------------------------------------------------------------

def _isclose_pair_ref(fn):
    return lambda x, noise: fn(x, x + noise * 1e-5)


def _isclose_pair_fun(fn):
    return lambda x, noise: fn(x, fnp.add(x, fnp.multiply(noise, 1e-5)))


OTHER = [
    _b("gcd", Arg(dtype=("int64", "int32", "uint8"), low=0, high=40),
       Arg("bcast", dtype=("int64", "int32", "uint8"), low=0, high=40), prims=("gcd",),
       grad_order=0),
    _b("gcd", Arg(dtype="int64", low=-40, high=40), Arg("bcast", dtype="int64", low=-40, high=40),
       label="gcd_negative", grad_order=0),
    _b("lcm", Arg(dtype=("int64", "int32"), low=-20, high=20),
       Arg("bcast", dtype=("int64", "int32"), low=-20, high=20), grad_order=0),
    _u("real", Arg(dtype=DT4 + ("complex128",))),
    _u("imag", Arg(dtype=DT4 + ("complex128",))),
    _u("conj", Arg(dtype=DT4 + ("complex128",))),
    _u("conjugate", Arg(dtype=DT4)),
    # JAX: angle of bools and integers is the default float (float64)
    _u("angle", Arg(dtype=DT4 + ("complex128",), avoid=(0.0,)),
       ref=lambda x: np.angle(x.astype(np.float64) if x.dtype.kind in "biu" else x)),
    _u("angle", Arg(dtype=("int64", "complex128"), avoid=(0.0,)), label="angle_deg",
       fun=lambda z: fnp.angle(z, deg=True), ref=lambda z: np.angle(z, deg=True), grad_order=0),
    Case("fnp.isclose", _isclose_pair_fun(fnp.isclose), _isclose_pair_ref(np.isclose),
         [Arg(dtype=NUMERIC), Arg("bcast", low=-3, high=3)], grad_order=0),
    Case("fnp.isclose_specials", fnp.isclose, np.isclose,
         [Arg(dtype=FLOATS, make=_with_specials), Arg("bcast", dtype=FLOATS, make=_with_specials)],
         grad_order=0),
    Case("fnp.isclose_equal_nan", lambda a, b: fnp.isclose(a, b, equal_nan=True),
         lambda a, b: np.isclose(a, b, equal_nan=True),
         [Arg(make=_with_specials), Arg("bcast", make=_with_specials)], grad_order=0),
    Case("fnp.allclose", _isclose_pair_fun(fnp.allclose), _isclose_pair_ref(np.allclose),
         [Arg(dtype=NUMERIC), Arg("bcast", low=-0.5, high=0.5)], grad_order=0),
    Case("fnp.array_equal", fnp.array_equal, np.array_equal,
         [Arg(dtype=DT4, low=-1, high=1), Arg("same", dtype=DT4, low=-1, high=1)],
         grad_order=0, vmap=False),
    Case("fnp.array_equal_nan", lambda a, b: fnp.array_equal(a, b, equal_nan=True),
         lambda a, b: np.array_equal(a, b, equal_nan=True),
         [Arg(make=_with_specials), Arg("same", make=_with_specials)], grad_order=0),
    Case("fnp.array_equiv", fnp.array_equiv, np.array_equiv,
         [Arg(dtype=DT4, low=0, high=1), Arg("bcast", dtype=DT4, low=0, high=1)],
         grad_order=0, vmap=False),
]


CASES = ARITHMETIC + ROUNDING + TRANSCENDENTAL + EXTREMA + LOGIC + CLASSIFY + OTHER
