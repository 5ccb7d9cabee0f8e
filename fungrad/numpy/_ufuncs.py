"""Elementwise math with NumPy's names and broadcasting and jax.numpy's dtypes.

Every function here gives the dtype jax.numpy gives: the operands are
converted to their common dtype by JAX's promotion lattice (``_lattice.py``:
Python scalars are weak, ``float32 + int64`` is float32), made inexact where
the function needs it as JAX does (``sin(int8)`` and ``int32 / int32`` are
float32, ``int64 / int64`` float64), then the lax primitives run on them
(``_ufunc_dtypes.py`` decides the dtypes).  Combinations NumPy rejects
(``subtract`` of booleans, ``bitwise_and`` of floats) raise its TypeError.

NumPy's ``out=`` and ``where=`` keywords are rejected with an explanation:
fungrad arrays are immutable.

Derivatives at non-differentiable points are JAX's: ``maximum``/``minimum``/
``clip`` ties split the gradient 0.5/0.5, ``abs'(0) = 1``, ``sign`` and the
rounding functions have zero derivative.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, iinfo as dtype_iinfo, is_floating, is_inexact, is_integer, issubdtype as dtype_issubdtype, kind as dtype_kind
from fungrad import core, lax
from fungrad.core import get_aval
from fungrad.lax import elementwise as _ew
from fungrad.numpy._dtypes import (is_weak, dtype_of, asarray_operand,
                                    result_type, weak_result_type, check_promotion, x32_default,
                                    inexact_dtype, numeric_dtype)
from fungrad.numpy import _ufunc_dtypes
from fungrad.numpy._ufunc_dtypes import (
    weak_if_all_weak, _args, _cast, _const, _dtype, _eager, _full_broadcast, _full_like, _is_complex, _is_float,
    _loop_dtypes, _named, _to_bool, _ufunc)

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "mod", "fmod", "divmod", "power", "pow", "float_power", "negative", "positive",
    "abs", "absolute", "fabs", "sign", "square", "reciprocal", "sqrt", "cbrt",
    # rounding
    "floor", "ceil", "trunc", "rint", "fix", "round", "around", "modf",
    # exponentials and logarithms
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    # trigonometry
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "atan2", "asinh", "acosh",
    "atanh", "hypot", "deg2rad", "rad2deg", "degrees", "radians", "sinc",
    # extrema and selection
    "maximum", "minimum", "fmax", "fmin", "clip", "where",
    # comparisons and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "bitwise_invert",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift",
    # floating-point classification and manipulation
    "isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit", "copysign",
    "heaviside", "nextafter", "ldexp", "frexp", "nan_to_num",
    # integers
    "gcd", "lcm",
    # complex parts
    "real", "imag", "conj", "conjugate", "angle",
    # closeness
    "isclose", "allclose", "array_equal", "array_equiv",
]


# ----------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------

@_ufunc
def add(x, y, /):
    out = _eager(np.add, (x, y))
    if out is not None:
        return out
    return lax.add(*_args(np.add, x, y))        # booleans: logical or, as NumPy


@_ufunc
def subtract(x, y, /):
    out = _eager(np.subtract, (x, y))
    if out is not None:
        return out
    return lax.sub(*_args(np.subtract, x, y))


@_ufunc
def multiply(x, y, /):
    out = _eager(np.multiply, (x, y))
    if out is not None:
        return out
    return lax.mul(*_args(np.multiply, x, y))   # booleans: logical and


@_ufunc
def true_divide(x, y, /):
    out = _eager(np.true_divide, (x, y))
    if out is not None:
        return out
    return lax.div(*_args(np.true_divide, x, y))


divide = true_divide


def _float_floor_divide(x, y):
    """NumPy's float ``//``: from fmod, so that x == (x // y) * y + x % y closely,
    its zeros signed as the array API standard says; derivative 0 everywhere (a
    step function; stopped, so that the x / 0 branch cannot make it NaN)."""
    dtype = _dtype(x)
    mod = lax.rem(x, y)
    div = lax.div(lax.sub(x, mod), y)
    wrong_side = lax.bitwise_and(lax.ne(mod, _const(0, dtype)),
                                 lax.ne(lax.lt(y, _const(0, dtype)), lax.lt(mod, _const(0, dtype))))
    div = lax.select(wrong_side, lax.sub(div, _const(1, dtype)), div)
    # snap the quotient, which is within rounding of an integer, to it
    snapped = lax.floor(div)
    snapped = lax.select(lax.gt(lax.sub(div, snapped), _const(0.5, dtype)),
                         lax.add(snapped, _const(1, dtype)), snapped)
    snapped = _signed_zero(snapped, lax.div(x, y))   # a zero quotient: the sign of x / y
    return lax.stop_gradient(lax.select(lax.eq(y, _const(0, dtype)), lax.div(x, y), snapped))


def _signed_zero(x, sign_of):
    """``x``, its zeros given the sign of ``sign_of`` (as NumPy's floor_divide and
    remainder of floats, and the array API standard), with ``x``'s derivative:
    ``signed - (stop_gradient(x) - x)`` is the signed zero itself (x - x is
    +0.0, and -0.0 - +0.0 stays -0.0) and moves with ``x``."""
    zero = _const(0, _dtype(x))
    signed = lax.select(_signbit(sign_of), lax.neg(zero), zero)
    carried = lax.sub(signed, lax.sub(lax.stop_gradient(x), x))
    return lax.select(lax.eq(x, zero), carried, x)


def _int_floor_divide(x, y):
    """Integer ``//`` rounds down; lax.div rounds towards zero."""
    quotient = lax.div(x, y)
    if not dtype_issubdtype(_dtype(x), np.signedinteger):
        return quotient
    zero = _const(0, _dtype(x))
    rounded_up = lax.bitwise_and(lax.ne(lax.lt(x, zero), lax.lt(y, zero)),
                                 lax.ne(lax.rem(x, y), zero))
    return lax.select(rounded_up, lax.sub(quotient, _const(1, _dtype(x))), quotient)


def _floor_divide(x, y):
    if is_inexact(_dtype(x)):
        return _float_floor_divide(x, y)
    return _int_floor_divide(x, y)


def _remainder(x, y):
    """Python's ``%``: the sign of the divisor (lax.rem has the dividend's)."""
    trunc_mod = lax.rem(x, y)
    dtype = _dtype(trunc_mod)
    if dtype_issubdtype(dtype, np.unsignedinteger):
        return trunc_mod
    zero = _const(0, dtype)
    wrong_side = lax.bitwise_and(lax.ne(trunc_mod, zero),
                                 lax.ne(lax.lt(trunc_mod, zero), lax.lt(y, zero)))
    mod = lax.select(wrong_side, lax.add(trunc_mod, y), trunc_mod)
    return _signed_zero(mod, y) if _is_float(dtype) else mod   # a zero: the divisor's sign


@_ufunc
def floor_divide(x, y, /):
    operands = _args(np.floor_divide, x, y)
    return weak_if_all_weak(_floor_divide(*operands), operands)


@_ufunc
def remainder(x, y, /):
    operands = _args(np.remainder, x, y)
    return weak_if_all_weak(_remainder(*operands), operands)


mod = remainder


@_ufunc
def fmod(x, y, /):
    return lax.rem(*_args(np.fmod, x, y))


@_ufunc
def divmod(x, y, /):  # noqa: A001 (NumPy's name)
    x, y = _args(np.divmod, x, y)
    return _floor_divide(x, y), _remainder(x, y)


def _integer_power(x, y, bits):
    """``x ** y`` for integer arrays by binary exponentiation over ``bits`` bits of y
    (wrapping on overflow, as NumPy); 0 ** y is 0 for y != 0 whatever bits y
    has beyond those (JAX's start)."""
    dtype = _dtype(x)
    zero_base = lax.bitwise_and(lax.eq(x, _const(0, dtype)),
                                lax.ne(y, _const(0, _dtype(y))))
    acc = lax.select(zero_base, _full_broadcast((x, y), 0, dtype),
                     _full_broadcast((x, y), 1, dtype))
    for _ in range(bits):
        bit_set = lax.ne(lax.bitwise_and(y, _const(1, _dtype(y))), _const(0, _dtype(y)))
        acc = lax.select(bit_set, lax.mul(acc, x), acc)
        x = lax.mul(x, x)
        y = lax.shift_right_logical(y, _const(1, _dtype(y)))
    return acc


# JAX's for a traced exponent: a seventh bit would overflow any base but 0
# and +-1, which the low bits decide (their parity, and _integer_power's start)
_TRACED_EXPONENT_BITS = 6


def _exponent_bits(y, dtype):
    """How many bits of the exponent to visit: those of the largest for concrete
    values (NumPy's results), JAX's six for traced ones (JAX's results; a
    loop 64 steps long made numpyro's NUTS program ~380 equations longer)."""
    if isinstance(y, (int, np.ndarray, np.generic)) and not isinstance(y, bool):
        y = np.asarray(y)
        if y.size and np.any(y < 0):
            raise ValueError("Integers to negative integer powers are not allowed "
                             "(as in NumPy); use a float base, e.g. fnp.power(x * 1.0, y).")
        return int(y.max()).bit_length() if y.size else 0
    return _TRACED_EXPONENT_BITS


@_ufunc
def power(x, y, /):
    """``x ** y``; a Python-int exponent uses exact repeated multiplication
    (``lax.integer_pow``), as ``jax.numpy.power``."""
    if type(y) is int:     # JAX: x alone decides (bool -> int32), the exponent is static
        return lax.integer_pow(_cast(x, numeric_dtype(result_type(x))), y)
    dtypes = _loop_dtypes(np.power, (x, y))
    out = np.dtype(dtypes[2])
    weak = weak_result_type(x, y)[1]
    x, y = _cast(x, dtypes[0], weak), _cast(y, dtypes[1], weak)
    if is_inexact(out):
        return lax.pow(x, y)
    return _integer_power(x, y, _exponent_bits(y, out))


pow = power  # noqa: A001 (NumPy 2's alias)


@_ufunc
def float_power(x, y, /):
    """``x ** y`` in the operands' inexact dtype (int8: float32, as JAX)."""
    return lax.pow(*_args(np.power, *_inexact_operands(x, y)))


def _inexact_operands(*args):
    dtype, weak = weak_result_type(*args)
    dtype = inexact_dtype(dtype, args)
    return [_cast(a, dtype, weak) for a in args]


@_ufunc
def negative(x, /):
    out = _eager(np.negative, (x,))
    if out is not None:
        return out
    return lax.neg(*_args(np.negative, x))


@_ufunc
def positive(x, /):
    return _args(np.positive, x)[0]


@_ufunc
def absolute(x, /):
    (x,) = _args(np.absolute, x)
    if _dtype(x) == np.bool_ or dtype_issubdtype(_dtype(x), np.unsignedinteger):
        return x
    return lax.abs(x)


abs = absolute  # noqa: A001 (NumPy's alias)


@_ufunc
def fabs(x, /):
    return lax.abs(*_args(np.fabs, x))


@_ufunc
def sign(x, /):
    return lax.sign(*_args(np.sign, x))


@_ufunc
def square(x, /):
    return lax.square(*_args(np.square, x))


@_ufunc
def reciprocal(x, /):
    """1 / x, in x's inexact dtype (int32: float32, as JAX's; NumPy's integer
    reciprocal truncates)."""
    (x,) = _args(np.reciprocal, *_inexact_operands(x))
    return lax.reciprocal(x)


# ----------------------------------------------------------------------------
# Rounding
# ----------------------------------------------------------------------------

def _rounding(ufunc, float_op):
    """floor/ceil/trunc: integers and booleans pass through (NumPy 2 keeps their dtype)."""
    @_named(ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}``.")
    def fn(x, /):
        (x,) = _args(ufunc, x)
        return float_op(x) if is_inexact(_dtype(x)) else x
    return fn


def _trunc(x):
    return lax.select(lax.lt(x, _const(0, _dtype(x))), lax.ceil(x), lax.floor(x))


floor = _rounding(np.floor, lax.floor)
ceil = _rounding(np.ceil, lax.ceil)
trunc = _rounding(np.trunc, _trunc)


@_ufunc
def rint(x, /):
    """Round to the nearest integer, ties to even; integers and bools become the
    default float (JAX's: float64, not NumPy's float16 for int8)."""
    if not is_inexact(dtype_of(x)):
        x = _cast(x, x32_default(core.default_float_dtype(), (x,)))
    return lax.round(*_args(np.rint, x), rounding_method=lax.RoundingMethod.TO_NEAREST_EVEN)


@_ufunc
def fix(x, /):
    """Round towards zero (``numpy.fix``; integers keep their dtype)."""
    x = asarray_operand(x)
    return _trunc(x) if is_inexact(_dtype(x)) else x


def _round_integers(x, decimals):
    """Integers to a multiple of 10**-decimals, ties to even (as NumPy)."""
    if decimals >= 0:
        return x
    dtype = _dtype(x)
    factor = _const(10 ** -decimals, dtype)
    quotient = _int_floor_divide(x, factor)
    twice_rest = lax.mul(_const(2, dtype), lax.sub(x, lax.mul(quotient, factor)))
    odd = lax.ne(_remainder(quotient, _const(2, dtype)), _const(0, dtype))
    up = lax.bitwise_or(lax.gt(twice_rest, factor),
                        lax.bitwise_and(lax.eq(twice_rest, factor), odd))
    return lax.mul(lax.select(up, lax.add(quotient, _const(1, dtype)), quotient), factor)


@_ufunc
def round(a, /, decimals=0):  # noqa: A001 (NumPy's name)
    """Round to ``decimals`` decimal places, ties to even (``numpy.round``)."""
    a = asarray_operand(a)
    decimals = int(decimals)
    dtype = _dtype(a)
    if dtype == np.bool_:
        a, dtype = lax.convert_element_type(a, np.float16), np.dtype(np.float16)
    if not is_inexact(dtype):
        return _round_integers(a, decimals)
    if _is_complex(dtype):   # the real and imaginary parts, as NumPy
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    even = lax.RoundingMethod.TO_NEAREST_EVEN
    if decimals == 0:
        return lax.round(a, even)
    if decimals > 0:
        factor = _const(10.0 ** decimals, dtype)
        return lax.div(lax.round(lax.mul(a, factor), even), factor)
    factor = _const(10.0 ** -decimals, dtype)
    return lax.mul(lax.round(lax.div(a, factor), even), factor)


around = round


@_ufunc
def modf(x, /):
    """(fractional part, integral part), both with the sign of x."""
    (x,) = _args(np.modf, x)
    whole = _trunc(x)
    frac = copysign(lax.sub(x, whole), x)             # -0.0 for negative integers
    # +-inf has fractional part +-0 (inf - inf would be nan)
    infinite = lax.eq(lax.abs(x), _const(np.inf, _dtype(x)))
    return lax.select(infinite, copysign(_full_like(x, 0, _dtype(x)), x), frac), whole


# ----------------------------------------------------------------------------
# Exponentials and logarithms
# ----------------------------------------------------------------------------

def _transcendental(ufunc, lax_fn, name=None):
    """A one-argument float function: integer inputs are promoted as NumPy does."""
    @_named(name or ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}``.")
    def fn(x, /):
        out = _eager(ufunc, (x,))
        return lax_fn(*_args(ufunc, x)) if out is None else out
    return fn


exp = _transcendental(np.exp, lax.exp)
exp2 = _transcendental(np.exp2, lax.exp2)
expm1 = _transcendental(np.expm1, lax.expm1)
log = _transcendental(np.log, lax.log)
log1p = _transcendental(np.log1p, lax.log1p)


@_ufunc
def log2(x, /):
    (x,) = _args(np.log2, x)
    return lax.div(lax.log(x), _const(math.log(2), _dtype(x)))


@_ufunc
def log10(x, /):
    (x,) = _args(np.log10, x)
    return lax.div(lax.log(x), _const(math.log(10), _dtype(x)))


def _logaddexp(x, y, exp_fn, log1p_of_exp):
    """max + log1p(exp(-|x - y|)), written with selects so that every branch is
    smooth: at x == y both inputs get half of the gradient, at every order."""
    x_larger = lax.gt(x, y)
    larger = lax.select(x_larger, x, y)
    gap = lax.select(x_larger, lax.sub(y, x), lax.sub(x, y))      # <= 0
    out = lax.add(larger, log1p_of_exp(gap))
    # inf - inf (both infinite with one sign) gives nan: the answer is x + y
    return lax.select(lax.ne(gap, gap), lax.add(x, y), out)


@_ufunc
def logaddexp(x, y, /):
    """log(exp(x) + exp(y)) without overflow."""
    x, y = _args(np.logaddexp, x, y)
    return _logaddexp(x, y, lax.exp, lambda d: lax.log1p(lax.exp(d)))


@_ufunc
def logaddexp2(x, y, /):
    """log2(2**x + 2**y) without overflow."""
    x, y = _args(np.logaddexp2, x, y)
    inv_ln2 = _const(1 / math.log(2), _dtype(x))
    return _logaddexp(x, y, lax.exp2, lambda d: lax.mul(lax.log1p(lax.exp2(d)), inv_ln2))


# ----------------------------------------------------------------------------
# Trigonometry
# ----------------------------------------------------------------------------

sin = _transcendental(np.sin, lax.sin)
cos = _transcendental(np.cos, lax.cos)
tan = _transcendental(np.tan, lax.tan)
arcsin = _transcendental(np.arcsin, lax.asin)
arccos = _transcendental(np.arccos, lax.acos)
arctan = _transcendental(np.arctan, lax.atan)
sinh = _transcendental(np.sinh, lax.sinh)
cosh = _transcendental(np.cosh, lax.cosh)
tanh = _transcendental(np.tanh, lax.tanh)
arcsinh = _transcendental(np.arcsinh, lax.asinh)
arccosh = _transcendental(np.arccosh, lax.acosh)
arctanh = _transcendental(np.arctanh, lax.atanh)
sqrt = _transcendental(np.sqrt, lax.sqrt)
cbrt = _transcendental(np.cbrt, lax.cbrt)
# NumPy 2 names (array API)
asin = _transcendental(np.arcsin, lax.asin, "asin")
acos = _transcendental(np.arccos, lax.acos, "acos")
atan = _transcendental(np.arctan, lax.atan, "atan")
asinh = _transcendental(np.arcsinh, lax.asinh, "asinh")
acosh = _transcendental(np.arccosh, lax.acosh, "acosh")
atanh = _transcendental(np.arctanh, lax.atanh, "atanh")


@_ufunc
def arctan2(x1, x2, /):
    return lax.atan2(*_args(np.arctan2, x1, x2))


atan2 = arctan2


@_ufunc
def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) without overflow: big * sqrt(1 + (small/big)**2)."""
    x1, x2 = _args(np.hypot, x1, x2)
    dtype = _dtype(x1)
    a, b = lax.abs(x1), lax.abs(x2)
    # (max/min, as JAX's: at a tie, 0,0 included, each gets half the slope)
    big, small = lax.max(a, b), lax.min(a, b)
    zero = lax.eq(big, _const(0, dtype))
    # constants as JAX's (lax._ones, a Python 1 and lax._const): weak where
    # ``big`` is, so a weak scalar's value and derivatives stay weak
    safe_big = lax.select(zero, _ew._ones(big), big)
    ratio = lax.div(small, safe_big)
    out = lax.mul(big, lax.sqrt(lax.add(core.weak_array(1, dtype), lax.square(ratio))))
    infinite = lax.bitwise_or(lax.eq(a, _const(np.inf, dtype)), lax.eq(b, _const(np.inf, dtype)))
    out = lax.select(zero, big, out)
    return lax.select(infinite, _ew._const_like(out, np.inf), out)


def _ratio_in(dtype, numerator, denominator):
    """numerator / denominator computed in ``dtype`` (as NumPy's loops do: their
    float32 constant is 180.0f / pi_f, not the rounded double; float16 loops
    compute in float32)."""
    work = np.float32 if dtype == np.float16 else dtype
    ratio = np.divide(np.asarray(numerator, work), np.asarray(denominator, work))
    return ratio.astype(dtype)


@_ufunc
def deg2rad(x, /):
    (x,) = _args(np.deg2rad, x)
    return lax.mul(x, _ratio_in(_dtype(x), np.pi, 180))


@_ufunc
def rad2deg(x, /):
    (x,) = _args(np.rad2deg, x)
    return lax.mul(x, _ratio_in(_dtype(x), 180, np.pi))


radians = deg2rad
degrees = rad2deg


def _sinc_taylor(z):
    """sinc near 0 by its Taylor series in (pi z)^2: smooth, exact at every order.
    Its constants are ``lax._const``'s (weak for a weak scalar ``z``, as JAX's
    Python-scalar formulas are)."""
    u = lax.square(lax.mul(z, _ew._const(z, math.pi)))
    coeffs = [(-1) ** k / math.factorial(2 * k + 1) for k in range(7)]   # of u^k
    total = lax.add(lax.mul(u, _ew._const(z, coeffs[6])), _ew._const(z, coeffs[5]))
    for c in reversed(coeffs[:5]):      # Horner
        total = lax.add(lax.mul(total, u), _ew._const(z, c))
    return total


@_ufunc
def sinc(x, /):
    """sin(pi x) / (pi x), 1 at 0; all derivatives are right at 0 too."""
    x = asarray_operand(x)
    dtype = inexact_dtype(result_type(x), (x,))
    x = _cast(x, dtype)
    real_dtype = dtype_finfo(dtype).dtype          # |x| of a complex x is real
    near_zero = lax.lt(lax.abs(x), _const(1e-3 if real_dtype == np.float64 else 1e-2, real_dtype))
    safe = lax.select(near_zero, _ew._const_like(x, 1), x)
    pi_x = lax.mul(safe, _ew._const(x, math.pi))
    return lax.select(near_zero, _sinc_taylor(x), lax.div(lax.sin(pi_x), pi_x))


# ----------------------------------------------------------------------------
# Extrema and selection
# ----------------------------------------------------------------------------

@_ufunc
def maximum(x, y, /):
    """Elementwise maximum, NaN-propagating; ties share the gradient equally."""
    return lax.max(*_args(np.maximum, x, y))


@_ufunc
def minimum(x, y, /):
    return lax.min(*_args(np.minimum, x, y))


def _nan_ignoring(wins, x, y):
    """JAX's fmax/fmin: ``x`` where it wins (``wins``: gt or lt) or ``y`` is
    NaN, else ``y`` (a select: a tie's derivative goes to ``y``)."""
    take_x = wins(x, y)
    if is_inexact(_dtype(x)):
        take_x = lax.bitwise_or(take_x, lax.ne(y, y))
    return lax.select(take_x, x, y)


@_ufunc
def fmax(x, y, /):
    """Elementwise maximum ignoring NaN (NaN only where both are NaN)."""
    return _nan_ignoring(lax.gt, *_args(np.fmax, x, y))


@_ufunc
def fmin(x, y, /):
    """Elementwise minimum ignoring NaN (NaN only where both are NaN)."""
    return _nan_ignoring(lax.lt, *_args(np.fmin, x, y))


_NO_VALUE = object()


@_ufunc
def clip(a, /, min=None, max=None):  # noqa: A002
    """``a`` limited to ``[min, max]`` (either may be None); the array API's and
    NumPy 2's signature, with the bounds positional or as ``min=``/``max=`` (or
    NumPy 1's ``a_min=``/``a_max=``).  Computed as ``minimum(max, maximum(min, a))``,
    so a value equal to a bound shares its gradient with the bound, as
    ``jax.numpy.clip``."""
    bounds = [b for b in (min, max) if b is not None]
    dtype, weak = weak_result_type(a, *bounds)
    out = _cast(a, dtype, weak)
    if min is not None:
        out = lax.max(_cast(min, dtype, weak), out)
    if max is not None:
        out = lax.min(_cast(max, dtype, weak), out)
    return out


def _clip_legacy_keywords(fn):
    """Accept NumPy 1's ``a_min=``/``a_max=`` keywords as well."""
    @functools.wraps(fn)
    def wrapper(a, /, *args, a_min=_NO_VALUE, a_max=_NO_VALUE, **kwargs):
        for k, (name, value) in enumerate((("min", a_min), ("max", a_max))):
            given = (name in kwargs) + (len(args) > k) + (value is not _NO_VALUE)
            if given > 1:
                raise TypeError(f"fungrad.numpy.clip: got the {name} bound more than once "
                                f"(positionally, as {name}= or as a_{name}=; both count); "
                                "pass it once.")
            if value is not _NO_VALUE:
                kwargs[name] = value
        return fn(a, *args, **kwargs)
    return wrapper


clip = _clip_legacy_keywords(clip)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y`` (NumPy broadcasting and promotion).
    With only ``condition``: the indices of its nonzero entries (``nonzero``)."""
    if x is None and y is None:
        from fungrad.numpy._indexing import nonzero   # late: another module's function
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError("fungrad.numpy.where takes either one argument (condition) or "
                        "three (condition, x, y); got two.")
    if size is not None or fill_value is not None:
        raise TypeError("fungrad.numpy.where: size= and fill_value= apply only to the "
                        "one-argument form.")
    if _ufunc_dtypes._promotion_checks:
        check_promotion("where", (condition, x, y), dtypes=False)
        check_promotion("where", (x, y), ranks=False)
    dtype, weak = weak_result_type(x, y)
    return lax.select(_to_bool(condition), _cast(x, dtype, weak), _cast(y, dtype, weak))


# ----------------------------------------------------------------------------
# Comparisons and logic
# ----------------------------------------------------------------------------

def _binary(ufunc, lax_fn):
    @_named(ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}``.")
    def fn(x, y, /):
        return lax_fn(*_args(ufunc, x, y))
    return fn


def _out_of_range_int(x, other):
    """+-inf if ``x`` is a Python int outside the range of ``other``'s integer dtype."""
    if not isinstance(x, int) or isinstance(x, bool) or is_weak(other):
        return None
    dtype = dtype_of(other)
    if not is_integer(dtype):
        return None
    info = dtype_iinfo(dtype)
    return np.inf if x > info.max else -np.inf if x < info.min else None


def _comparison(ufunc, lax_fn):
    @_named(ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}`` (boolean result).")
    def fn(x, y, /):
        out = _eager(ufunc, (x, y))
        if out is not None:
            return out
        # NumPy 2 compares integers with Python ints beyond their range exactly:
        # the answer is the same for every element, as if the int were +-inf
        x_inf, y_inf = _out_of_range_int(x, y), _out_of_range_int(y, x)
        if x_inf is not None or y_inf is not None:
            array = asarray_operand(y if x_inf is not None else x)
            answer = (ufunc(x_inf, 0.0) if x_inf is not None else ufunc(0.0, y_inf))
            return _full_like(array, bool(answer), np.bool_)
        x, y = _args(ufunc, x, y)
        if _is_complex(_dtype(x)) and lax_fn not in (lax.eq, lax.ne):
            return _lexicographic(lax_fn, x, y)
        return lax_fn(x, y)
    return fn


def _lexicographic(lax_fn, x, y):
    """NumPy's order of complex numbers: by real part, ties by imaginary part
    (lax's comparisons, as JAX's, take real numbers only)."""
    strict = lax.lt if lax_fn in (lax.lt, lax.le) else lax.gt
    re_x, re_y = lax.real(x), lax.real(y)
    ties = lax.bitwise_and(lax.eq(re_x, re_y), lax_fn(lax.imag(x), lax.imag(y)))
    return lax.bitwise_or(strict(re_x, re_y), ties)


equal = _comparison(np.equal, lax.eq)
not_equal = _comparison(np.not_equal, lax.ne)
less = _comparison(np.less, lax.lt)
less_equal = _comparison(np.less_equal, lax.le)
greater = _comparison(np.greater, lax.gt)
greater_equal = _comparison(np.greater_equal, lax.ge)
bitwise_and = _binary(np.bitwise_and, lax.bitwise_and)
bitwise_or = _binary(np.bitwise_or, lax.bitwise_or)
bitwise_xor = _binary(np.bitwise_xor, lax.bitwise_xor)
left_shift = _binary(np.left_shift, lax.shift_left)
bitwise_left_shift = left_shift


@_ufunc
def right_shift(x, y, /):
    """``x >> y``: sign-filling for signed integers, zero-filling for unsigned."""
    x, y = _args(np.right_shift, x, y)
    if dtype_issubdtype(_dtype(x), np.unsignedinteger):
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


bitwise_right_shift = right_shift


@_ufunc
def invert(x, /):
    return lax.bitwise_not(*_args(np.invert, x))


bitwise_not = bitwise_invert = invert


def _logical(ufunc, lax_fn):
    @_named(ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}`` of the truth values.")
    def fn(x, y, /):
        _loop_dtypes(ufunc, (x, y))            # NumPy's checks on the input types
        return lax_fn(_to_bool(x), _to_bool(y))
    return fn


logical_and = _logical(np.logical_and, lax.bitwise_and)
logical_or = _logical(np.logical_or, lax.bitwise_or)
logical_xor = _logical(np.logical_xor, lax.bitwise_xor)


@_ufunc
def logical_not(x, /):
    _loop_dtypes(np.logical_not, (x,))
    return lax.bitwise_not(_to_bool(x))


# ----------------------------------------------------------------------------
# Floating-point classification and manipulation
# ----------------------------------------------------------------------------

def _classify(ufunc, float_test):
    """isfinite & co.: integers and booleans are always finite, never inf/nan."""
    @_named(ufunc.__name__, f"Elementwise ``numpy.{ufunc.__name__}``.")
    def fn(x, /):
        x = asarray_operand(x)
        _loop_dtypes(ufunc, (x,))
        dtype = _dtype(x)
        if _is_complex(dtype):
            return _complex_test(ufunc, x)
        if ufunc is np.isnan:            # JAX's is x != x for every dtype, so it
            return lax.ne(x, x)           # keeps an integer's weak type
        if not is_inexact(dtype):
            return _full_like(x, ufunc is np.isfinite, np.bool_)
        return float_test(x)
    return fn


def _complex_test(ufunc, z):
    re, im = lax.real(z), lax.imag(z)
    if ufunc is np.isfinite:
        return lax.bitwise_and(lax.is_finite(re), lax.is_finite(im))
    tests = {np.isinf: lambda v: lax.eq(lax.abs(v), _const(np.inf, _dtype(v))),
             np.isnan: lambda v: lax.ne(v, v)}
    return lax.bitwise_or(tests[ufunc](re), tests[ufunc](im))


isfinite = _classify(np.isfinite, lax.is_finite)
isinf = _classify(np.isinf, lambda x: lax.eq(lax.abs(x), _const(np.inf, _dtype(x))))
isnan = _classify(np.isnan, lambda x: lax.ne(x, x))


def isposinf(x, /):
    x = asarray_operand(x)
    if not is_inexact(_dtype(x)):
        return _full_like(x, False, np.bool_)
    return lax.eq(x, _const(np.inf, _dtype(x)))


def isneginf(x, /):
    x = asarray_operand(x)
    if not is_inexact(_dtype(x)):
        return _full_like(x, False, np.bool_)
    return lax.eq(x, _const(-np.inf, _dtype(x)))


_SAME_WIDTH_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _signbit(x):
    """The sign bit of a float (true for -0.0 and for NaNs with it set)."""
    dtype = _dtype(x)
    bits = lax.bitcast_convert_type(x, _SAME_WIDTH_INT[dtype.itemsize])
    return lax.lt(bits, _const(0, _dtype(bits)))


@_ufunc
def signbit(x, /):
    return _signbit(*_args(np.signbit, x))


@_ufunc
def copysign(x1, x2, /):
    """|x1| with the sign (bit) of x2."""
    x1, x2 = _args(np.copysign, x1, x2)
    magnitude = lax.abs(x1)
    return lax.select(_signbit(x2), lax.neg(magnitude), magnitude)


@_ufunc
def heaviside(x1, x2, /):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays NaN)."""
    x1, x2 = _args(np.heaviside, x1, x2)
    dtype = _dtype(x1)
    zero = _const(0, dtype)
    step = lax.select(lax.lt(x1, zero), _full_broadcast((x1, x2), 0, dtype),
                      lax.select(lax.gt(x1, zero), _full_broadcast((x1, x2), 1, dtype), x2))
    return lax.select(lax.ne(x1, x1), _full_broadcast((x1, x2), np.nan, dtype), step)


@_ufunc
def nextafter(x1, x2, /):
    return lax.nextafter(*_args(np.nextafter, x1, x2))


def _times_power_of_two(x, exponent):
    """x * 2**exponent (float exponent of integral value) in two halves, so that
    neither factor overflows when the product does not."""
    dtype = _dtype(x)
    half = lax.floor(lax.mul(exponent, _const(0.5, dtype)))
    return lax.mul(lax.mul(x, lax.exp2(half)), lax.exp2(lax.sub(exponent, half)))


@_ufunc
def ldexp(x1, x2, /):
    """x1 * 2**x2 (x2 an integer); x1 becomes inexact alone, as in JAX
    (``ldexp(int8, 3)`` is float32)."""
    if dtype_kind(dtype_of(x2)) not in "biu":
        raise TypeError(f"fungrad.numpy.ldexp: x2 must have an integer dtype, got "
                        f"{dtype_of(x2)}; round it first (fnp.round(x2).astype(int)).")
    x1 = _cast(x1, inexact_dtype(result_type(x1), (x1,)))
    return _times_power_of_two(x1, lax.convert_element_type(x2, _dtype(x1)))


@_ufunc
def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1;
    the mantissa's derivative is 2**-exponent."""
    (x,) = _args(np.frexp, x)
    dtype = _dtype(x)
    magnitude = lax.abs(x)
    regular = lax.bitwise_and(lax.is_finite(x), lax.ne(magnitude, _const(0, dtype)))
    safe = lax.stop_gradient(lax.select(regular, magnitude, _full_like(x, 1, dtype)))
    exponent = lax.add(lax.floor(lax.div(lax.log(safe), _const(math.log(2), dtype))),
                       _const(1, dtype))
    for _ in range(2):   # log2 may be off by one next to powers of two: fix it
        scaled = _times_power_of_two(safe, lax.neg(exponent))
        exponent = lax.select(lax.ge(scaled, _const(1, dtype)), lax.add(exponent, _const(1, dtype)),
                              lax.select(lax.lt(scaled, _const(0.5, dtype)),
                                         lax.sub(exponent, _const(1, dtype)), exponent))
    exponent = lax.select(regular, exponent, _full_like(x, 0, dtype))
    mantissa = _times_power_of_two(x, lax.neg(exponent))
    return mantissa, lax.convert_element_type(exponent, np.int32)


@_ufunc
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the largest float),
    -inf -> ``neginf`` (default: the most negative float)."""
    x = asarray_operand(x)
    dtype = _dtype(x)
    if _is_complex(dtype):
        parts = [nan_to_num(p, nan=nan, posinf=posinf, neginf=neginf)
                 for p in (lax.real(x), lax.imag(x))]
        return lax.complex(*parts)
    if not is_inexact(dtype):
        return x
    info = dtype_finfo(dtype)
    fills = [(lax.ne(x, x), nan), (lax.eq(x, _const(np.inf, dtype)), info.max if posinf is None else posinf),
             (lax.eq(x, _const(-np.inf, dtype)), info.min if neginf is None else neginf)]
    for mask, value in fills:
        x = lax.select(mask, _full_like(x, value, dtype), x)
    return x


# ----------------------------------------------------------------------------
# Integers: gcd, lcm (no derivatives)
# ----------------------------------------------------------------------------

@_ufunc
def gcd(x1, x2, /):
    """Greatest common divisor of |x1| and |x2| (0 for gcd(0, 0))."""
    return _ew.gcd(*_args(np.gcd, x1, x2))


@_ufunc
def lcm(x1, x2, /):
    """Least common multiple of |x1| and |x2| (0 if either is 0)."""
    x1, x2 = _args(np.lcm, x1, x2)
    dtype = _dtype(x1)
    divisor = _ew.gcd(x1, x2)
    zero = lax.eq(divisor, _const(0, dtype))
    safe = lax.select(zero, _full_like(divisor, 1, dtype), divisor)
    multiple = lax.mul(lax.div(x1, safe), x2)
    if dtype_issubdtype(dtype, np.signedinteger):
        multiple = lax.abs(multiple)
    return lax.select(zero, _full_like(multiple, 0, dtype), multiple)


# ----------------------------------------------------------------------------
# Complex parts
# ----------------------------------------------------------------------------

def real(val, /):
    """The real part (the array itself for real input, as NumPy)."""
    val = asarray_operand(val)
    return lax.real(val) if _is_complex(_dtype(val)) else val


def imag(val, /):
    """The imaginary part (zeros of the same dtype for real input, as NumPy)."""
    val = asarray_operand(val)
    if _is_complex(_dtype(val)):
        return lax.imag(val)
    return _full_like(val, 0, _dtype(val))


@_ufunc
def conjugate(x, /):
    (x,) = _args(np.conjugate, x)
    return lax.conj(x) if _is_complex(_dtype(x)) else x


conj = conjugate


def angle(z, deg=False):
    """The argument of complex z (atan2(imag, real)); in degrees with ``deg``."""
    z = asarray_operand(z)
    dtype = _dtype(z)
    if _is_complex(dtype):
        out = lax.atan2(lax.imag(z), lax.real(z))
    else:      # JAX: bools and integers give the default float (NumPy: arctan2(0, z))
        z = _cast(z, dtype if is_floating(dtype) else
                  x32_default(core.default_float_dtype(), (z,)))
        out = lax.atan2(_full_like(z, 0, _dtype(z)), z)
    return lax.mul(out, _const(180 / math.pi, _dtype(out))) if deg else out


# ----------------------------------------------------------------------------
# Closeness and equality of whole arrays
# ----------------------------------------------------------------------------

def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise, with NumPy's rules for inf and NaN."""
    b_dtype = result_type(b, 1.0)
    b = _cast(b, b_dtype)
    within = less_equal(absolute(subtract(a, b)), add(atol, multiply(rtol, absolute(b))))
    result = logical_or(logical_and(within, isfinite(b)), equal(a, b))
    if equal_nan:
        result = logical_or(result, logical_and(isnan(a), isnan(b)))
    return result


def _all(x):
    x = asarray_operand(x)
    return lax.reduce_and(x, tuple(range(get_aval(x).ndim)))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close (a 0-d boolean array, traceable)."""
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Same shape and equal elements (a 0-d boolean array)."""
    a1, a2 = asarray_operand(a1), asarray_operand(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return np.asarray(False)
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return _all(same)


def array_equiv(a1, a2):
    """Equal elements after broadcasting (False if the shapes do not broadcast)."""
    a1, a2 = asarray_operand(a1), asarray_operand(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return np.asarray(False)
    return _all(equal(a1, a2))
