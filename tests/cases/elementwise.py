"""Cases for the elementwise lax primitives (fungrad/lax/elementwise.py).

Every primitive registered there appears in some case's ``prims``.  Inputs
keep away from kinks and singular points (``avoid``/``low``/``high`` or
``make``) so that finite differences are meaningful; JAX's values *at* those
points are checked in tests/test_elementwise.py.  The special functions
(erf, lgamma, ...) are compared with references built independently from the
``math`` module or from their series.
"""
import dataclasses
import math

import numpy as np

from fungrad import lax
from fungrad.lax import elementwise
from tests.harness import Arg, Case

F32_64 = ("float64", "float32")
# the ops JAX defines for complex numbers draw complex inputs too: values
# against NumPy, derivatives along complex directions (JAX's convention)
FC = F32_64 + ("complex128", "complex64")
RC = ("float64", "complex128")
INTS = ("int64", "int32", "int8", "uint8")
INTEGERS = tuple(range(-3, 4))
HALF_INTEGERS = tuple(k + 0.5 for k in range(-4, 4))


# ----------------------------------------------------------------------------
# Independent references for the special functions
# ----------------------------------------------------------------------------

def _vectorized(fn):
    def ref(x):
        x = np.asarray(x)
        out = np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64))
        return out.astype(x.dtype)
    return ref


def _digamma_ref(x: float) -> float:
    """Recurrence up to x >= 30, then the asymptotic series (math module only)."""
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0:   # reflection
        return _digamma_ref(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 30:
        shift -= 1 / x
        x += 1
    x2 = 1 / (x * x)
    series = x2 * (1 / 12 - x2 * (1 / 120 - x2 * (1 / 252 - x2 * (1 / 240 - x2 / 132))))
    return shift + math.log(x) - 0.5 / x - series


def _polygamma_ref(n, x):
    """(-1)^(n+1) n! sum_k (x+k)^-(n+1): 2000 terms plus the Euler-Maclaurin tail."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    s = n + 1
    k = np.arange(2000).reshape((-1,) + (1,) * x.ndim)
    head = np.sum((x + k) ** -s, axis=0)
    a = x + 2000
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s / 12 * a ** (-s - 1)
    factorial = np.vectorize(lambda m: float(math.factorial(int(m))), otypes=[np.float64])(n)
    return np.where(n % 2 == 1, 1.0, -1.0) * factorial * (head + tail)


def _erf_inv_check(out, args):
    """erf(erf_inv(p)) == p (math.erf is the reference)."""
    (p,) = args
    back = np.vectorize(math.erf, otypes=[np.float64])(np.asarray(out, np.float64))
    tol = 1e-13 if p.dtype == np.float64 else 1e-6
    np.testing.assert_allclose(back, p, rtol=tol, atol=tol)
    assert np.asarray(out).dtype == p.dtype


# ----------------------------------------------------------------------------
# Input makers
# ----------------------------------------------------------------------------

def _magnitude(low, high):
    """Values with |x| in [low, high] and a random sign (ints: nonzero)."""
    def make(rng, shape, dtype):
        dtype = np.dtype(dtype)
        sign = np.where(rng.random(shape) < 0.5, -1, 1)
        if np.issubdtype(dtype, np.integer):
            mag = rng.integers(max(1, int(low)), int(high) + 1, size=shape)
            if np.issubdtype(dtype, np.unsignedinteger):
                sign = 1
            return (sign * mag).astype(dtype)
        return (sign * rng.uniform(low, high, size=shape)).astype(dtype)
    return make


def _non_integer_negative(rng, shape, dtype):
    """Negative values away from the poles of lgamma/digamma."""
    return (-rng.integers(0, 4, size=shape) - rng.uniform(0.2, 0.8, size=shape)).astype(dtype)


def _with_specials(rng, shape, dtype):
    x = rng.uniform(-3, 3, size=shape)
    pick = rng.random(shape)
    x = np.where(pick < 0.15, np.inf, np.where(pick < 0.3, -np.inf, np.where(pick < 0.4, np.nan, x)))
    return x.astype(dtype)


def _orders(rng, shape, dtype):
    return rng.integers(1, 4, size=shape).astype(dtype)


def _shift_amounts(rng, shape, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    return rng.integers(0, bits + 2, size=shape).astype(dtype)   # incl. >= bit width


def _unary(name, fn, ref, prims, **arg_kw):
    case_kw = {k: arg_kw.pop(k) for k in list(arg_kw) if k in
               ("grad_order", "rtol", "atol", "grad_rtol", "grad_atol", "modes", "vmap", "eps")}
    return Case(f"lax.{name}", fn, ref, [Arg(**arg_kw)], prims=prims, **case_kw)


def _binary(name, fn, ref, prims, x=None, y=None, **case_kw):
    """One case per dtype of ``x``: lax binary ops take operands of one dtype."""
    x, y = x or Arg(), y or Arg("bcast")
    if not isinstance(x.dtype, tuple):
        return [Case(f"lax.{name}", fn, ref, [x, y], prims=prims, **case_kw)]
    return [Case(f"lax.{name}_{dt}", fn, ref, [dataclasses.replace(x, dtype=dt),
                                                dataclasses.replace(y, dtype=dt)],
                 prims=prims, **case_kw) for dt in x.dtype]


# ----------------------------------------------------------------------------
# Unary arithmetic, rounding, powers
# ----------------------------------------------------------------------------

UNARY = [
    _unary("neg", lax.neg, np.negative, ("neg",), dtype=FC),
    _unary("neg_int", lax.neg, np.negative, ("neg",), dtype=INTS[:3]),
    _unary("sign", lax.sign, np.sign, ("sign",), dtype=F32_64, avoid=(0.0,)),
    _unary("sign_int", lax.sign, np.sign, ("sign",), dtype=INTS),
    # z/|z|, with JAX's zero derivative (not the true one for complex z)
    _unary("sign_complex", lax.sign, np.sign, ("sign",), dtype=("complex128", "complex64"),
           grad_order=0),
    _unary("floor", lax.floor, np.floor, ("floor",), dtype=F32_64, avoid=INTEGERS),
    _unary("ceil", lax.ceil, np.ceil, ("ceil",), dtype=F32_64, avoid=INTEGERS),
    _unary("round_away", lax.round, lambda x: np.trunc(x + np.copysign(0.5, x)).astype(x.dtype),
           ("round",), dtype=F32_64, avoid=HALF_INTEGERS),
    _unary("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint,
           ("round",), dtype=F32_64, avoid=HALF_INTEGERS),
    _unary("is_finite", lax.is_finite, np.isfinite, ("is_finite",), dtype=F32_64,
           make=_with_specials, grad_order=0),
    _unary("abs", lax.abs, np.abs, ("abs",), dtype=FC, avoid=(0.0,)),
    _unary("abs_int", lax.abs, np.abs, ("abs",), dtype=INTS[:3]),
    _unary("square", lax.square, np.square, ("square",), dtype=FC),
    _unary("square_int", lax.square, np.square, ("square",), dtype=INTS),
    _unary("reciprocal", lax.reciprocal, np.reciprocal, ("integer_pow",), dtype=RC,
           avoid=(0.0,), margin=0.3),
    _unary("sqrt", lax.sqrt, np.sqrt, ("sqrt",), dtype=FC, low=0.3),
    _unary("rsqrt", lax.rsqrt, lambda x: (1 / np.sqrt(x)).astype(x.dtype), ("rsqrt",),
           dtype=FC, low=0.3, rtol=1e-6),
    _unary("cbrt", lax.cbrt, np.cbrt, ("cbrt",), dtype=F32_64, avoid=(0.0,), margin=0.3),
]

INTEGER_POW = [
    Case(f"lax.integer_pow_{y}", lambda x, y=y: lax.integer_pow(x, y),
         lambda x, y=y: np.power(x, y).astype(x.dtype),
         [Arg(dtype=RC, avoid=(0.0,), margin=0.3)], prims=("integer_pow",))
    for y in (0, 1, 2, 3, 5, -1, -3)
] + [
    Case("lax.integer_pow_int", lambda x: lax.integer_pow(x, 3), lambda x: x ** 3,
         [Arg(dtype=INTS[:3])], prims=("integer_pow",)),
]


# ----------------------------------------------------------------------------
# Exponentials, logarithms, trigonometry
# ----------------------------------------------------------------------------

def _logistic_ref(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _complex_logistic_ref(z):
    return 1 / (1 + np.exp(-z))


# complex draws keep off the branch cuts (log: the negative real axis; atan,
# asinh: the imaginary axis beyond ±i) and the poles (tanh: ±iπ/2)
TRANSCENDENTAL = [
    _unary("exp", lax.exp, np.exp, ("exp",), dtype=FC),
    _unary("exp2", lax.exp2, np.exp2, ("exp2",), dtype=FC, rtol=1e-6),
    _unary("log", lax.log, np.log, ("log",), dtype=FC, low=0.2),
    _unary("log1p", lax.log1p, np.log1p, ("log1p",), dtype=FC, low=-0.8),
    _unary("expm1", lax.expm1, np.expm1, ("expm1",), dtype=FC, rtol=1e-6),
    _unary("logistic", lax.logistic, _logistic_ref, ("logistic",), dtype=F32_64, low=-20,
           high=20, rtol=1e-6),
    _unary("logistic_complex", lax.logistic, _complex_logistic_ref, ("logistic",),
           dtype=("complex128", "complex64"), low=-4, high=4, imag=(-1.5, 1.5), rtol=1e-6),
    _unary("sin", lax.sin, np.sin, ("sin",), dtype=FC),
    _unary("cos", lax.cos, np.cos, ("cos",), dtype=FC),
    _unary("tan", lax.tan, np.tan, ("tan",), dtype=FC, low=-1.3, high=1.3),
    _unary("asin", lax.asin, np.arcsin, ("asin",), dtype=FC, low=-0.8, high=0.8),
    _unary("acos", lax.acos, np.arccos, ("acos",), dtype=FC, low=-0.8, high=0.8),
    _unary("atan", lax.atan, np.arctan, ("atan",), dtype=FC, imag=(-0.8, 0.8)),
    _unary("sinh", lax.sinh, np.sinh, ("sinh",), dtype=FC),
    _unary("cosh", lax.cosh, np.cosh, ("cosh",), dtype=FC),
    _unary("tanh", lax.tanh, np.tanh, ("tanh",), dtype=FC, imag=(-1.2, 1.2)),
    _unary("asinh", lax.asinh, np.arcsinh, ("asinh",), dtype=FC, imag=(-0.8, 0.8)),
    _unary("acosh", lax.acosh, np.arccosh, ("acosh",), dtype=FC, low=1.3, high=4),
    _unary("acosh_left_half_plane", lax.acosh, np.arccosh, ("acosh",), dtype="complex128",
           low=-4, high=-0.5),
    _unary("atanh", lax.atanh, np.arctanh, ("atanh",), dtype=FC, low=-0.8, high=0.8),
]


# ----------------------------------------------------------------------------
# Special functions
# ----------------------------------------------------------------------------

SPECIAL = [
    _unary("erf", lax.erf, _vectorized(math.erf), ("erf",), dtype=F32_64, low=-4, high=4,
           rtol=1e-13, atol=1e-15),
    _unary("erfc", lax.erfc, _vectorized(math.erfc), ("erfc",), dtype=F32_64, low=-3, high=8,
           rtol=1e-13, atol=1e-300),
    Case("lax.erf_inv", lax.erf_inv, None, [Arg(dtype=F32_64, low=-0.8, high=0.8)],
         prims=("erf_inv",), check=_erf_inv_check),
    _unary("lgamma", lax.lgamma, _vectorized(math.lgamma), ("lgamma",), dtype=F32_64,
           low=0.2, high=12, rtol=1e-13, atol=1e-14),
    Case("lax.lgamma_negative", lax.lgamma, _vectorized(math.lgamma),
         [Arg(make=_non_integer_negative)], prims=("lgamma",), rtol=1e-12, atol=1e-13),
    _unary("digamma", lax.digamma, _vectorized(_digamma_ref), ("digamma",), dtype=F32_64,
           low=0.2, high=12, rtol=1e-12, atol=1e-13),
    Case("lax.digamma_negative", lax.digamma, _vectorized(_digamma_ref),
         [Arg(make=_non_integer_negative)], prims=("digamma",), rtol=1e-11, atol=1e-12),
] + [
    Case(f"lax.polygamma_{m}", lambda x, m=m: lax.polygamma(float(m), x),
         lambda x, m=m: _polygamma_ref(m, x), [Arg(low=0.3, high=6)], prims=("polygamma",),
         rtol=1e-12, atol=1e-13)
    for m in (1, 2, 3)
] + [
    Case("lax.polygamma_orders", lax.polygamma, _polygamma_ref,
         [Arg(make=_orders, diff=False), Arg("same", low=0.3, high=6)], prims=("polygamma",),
         rtol=1e-12, atol=1e-13),
    Case("lax.polygamma_negative", lambda x: lax.polygamma(1.0, x), None,
         [Arg(make=_non_integer_negative)], prims=("polygamma",),
         # reflection: psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x)
         check=lambda out, args: np.testing.assert_allclose(
             out + _polygamma_ref(1, 1 - args[0]), np.pi ** 2 / np.sin(np.pi * args[0]) ** 2,
             rtol=1e-11)),
]


# ----------------------------------------------------------------------------
# Complex parts (values and vmap; complex derivatives use JAX's convention,
# checked in tests/test_elementwise.py)
# ----------------------------------------------------------------------------

COMPLEX = [
    Case("lax.real", lax.real, np.real, [Arg(dtype=("complex128", "complex64"))],
         prims=("real",)),
    Case("lax.imag", lax.imag, np.imag, [Arg(dtype="complex128")], prims=("imag",)),
    Case("lax.conj", lax.conj, np.conj, [Arg(dtype=("complex128", "float64"))], prims=("conj",)),
    Case("lax.complex", lax.complex, lambda x, y: x + 1j * y,
         [Arg(dtype=F32_64), Arg("bcast", dtype="same")], prims=("complex",)),
]


# ----------------------------------------------------------------------------
# Binary arithmetic
# ----------------------------------------------------------------------------

def _trunc_div_ref(x, y):
    q = np.trunc(x / y)
    return q.astype(np.result_type(x, y))


def _bounded(low, high):
    return lambda rng, shape, dtype: rng.uniform(low, high, size=shape).astype(dtype)


BINARY = sum([
    _binary("add", lax.add, np.add, ("add",), Arg(dtype=F32_64 + ("complex128",)),
            Arg("bcast")),
    _binary("add_int", lax.add, np.add, ("add",), Arg(dtype=INTS), Arg("bcast", dtype=INTS)),
    [Case("lax.add_scalar", lambda x: lax.add(x, 2.5), lambda x: x + np.asarray(2.5, x.dtype),
          [Arg(dtype=F32_64)], prims=("add",))],
    _binary("sub", lax.sub, np.subtract, ("sub",), Arg(dtype=RC), Arg("bcast")),
    _binary("mul", lax.mul, np.multiply, ("mul",), Arg(dtype=F32_64 + ("complex128",)),
            Arg("bcast")),
    _binary("mul_int", lax.mul, np.multiply, ("mul",), Arg(dtype=INTS[:2]),
            Arg("bcast", dtype=INTS[:2])),
    _binary("div", lax.div, np.true_divide, ("div",), Arg(dtype=RC),
            Arg("bcast", avoid=(0.0,), margin=0.5)),
    _binary("div_int", lax.div, _trunc_div_ref, ("div",), Arg(dtype="int64", low=-20, high=20),
            Arg("bcast", dtype="int64", make=_magnitude(1, 6))),
    _binary("rem", lax.rem, np.fmod, ("rem",), Arg(make=_magnitude(2.1, 2.9)),
            Arg("bcast", make=_magnitude(1.0, 1.04))),
    _binary("rem_int", lax.rem, np.fmod, ("rem",), Arg(dtype="int64", low=-20, high=20),
            Arg("bcast", dtype="int64", make=_magnitude(1, 6))),
    _binary("pow", lax.pow, np.power, ("pow",), Arg(dtype=RC, low=0.3, high=3),
            Arg("bcast", low=-2, high=2)),
    _binary("pow_f32", lax.pow, np.power, ("pow",), Arg(dtype="float32", low=0.3, high=3),
            Arg("bcast", dtype="float32", low=-2, high=2), rtol=1e-6),
    _binary("pow_int_exponent", lax.pow, lambda x, y: np.power(x, y).astype(x.dtype), ("pow",),
            Arg(avoid=(0.0,), margin=0.3), Arg("bcast", dtype="int64", low=-3, high=4)),
    [Case("lax.pow_complex_int_exponent", lax.pow, lambda x, y: np.power(x, y).astype(x.dtype),
          [Arg(dtype="complex128", avoid=(0.0,), margin=0.3),
           Arg("bcast", dtype="int64", low=-3, high=4)], prims=("pow",))],
    # max/min: x < y everywhere and the other way round (ties: test_elementwise.py)
    _binary("max_x_larger", lax.max, np.maximum, ("max",), Arg(low=0.2, high=3),
            Arg("bcast", low=-3, high=-0.2)),
    _binary("max_y_larger", lax.max, np.maximum, ("max",), Arg(low=-3, high=-0.2),
            Arg("bcast", low=0.2, high=3)),
    _binary("min", lax.min, np.minimum, ("min",), Arg(low=0.2, high=3),
            Arg("bcast", low=-3, high=-0.2)),
    _binary("max_int", lax.max, np.maximum, ("max",), Arg(dtype=INTS), Arg("bcast", dtype=INTS)),
    _binary("atan2", lax.atan2, np.arctan2, ("atan2",), Arg(dtype=F32_64, avoid=(0.0,)),
            Arg("bcast", dtype=F32_64)),
    _binary("nextafter", lax.nextafter, np.nextafter, ("nextafter",)),
    _binary("gcd", elementwise.gcd, np.gcd, ("gcd",), Arg(dtype=INTS[:2], low=-30, high=30),
            Arg("bcast", dtype=INTS[:2], low=-30, high=30), grad_order=0),
], [])


# ----------------------------------------------------------------------------
# Comparisons, logic, bits
# ----------------------------------------------------------------------------

ALL_DTYPES = ("float64", "float32", "int64", "uint8", "bool")

LOGIC = sum([
    _binary(name, getattr(lax, name), getattr(np, np_name), (name,),
            Arg(dtype=ALL_DTYPES, low=-2, high=2), Arg("bcast", dtype=ALL_DTYPES, low=-2, high=2),
            grad_order=0)
    for name, np_name in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                          ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")]
], []) + [
    _unary("bitwise_not", lax.bitwise_not, np.invert, ("not",), dtype=INTS + ("bool",),
           grad_order=0),
] + sum([
    _binary(name, getattr(lax, name), getattr(np, name), (prim,),
            Arg(dtype=INTS + ("bool",), low=-50, high=50),
            Arg("bcast", dtype=INTS + ("bool",), low=-50, high=50), grad_order=0)
    for name, prim in [("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor")]
], []) + sum([
    _binary("shift_left", lax.shift_left, np.left_shift, ("shift_left",),
            Arg(dtype=INTS, low=-50, high=50), Arg("bcast", dtype=INTS, make=_shift_amounts),
            grad_order=0),
    _binary("shift_right_arithmetic", lax.shift_right_arithmetic, np.right_shift,
            ("shift_right_arithmetic",), Arg(dtype=("int64", "int8"), low=-100, high=100),
            Arg("bcast", dtype=("int64", "int8"), make=_shift_amounts), grad_order=0),
    _binary("shift_right_logical", lax.shift_right_logical,
            lambda x, y: np.right_shift(x.view(f"u{x.itemsize}"), y.astype(f"u{x.itemsize}"))
            .astype(f"u{x.itemsize}").view(x.dtype),
            ("shift_right_logical",), Arg(dtype=("int64", "int8", "uint8"), low=0, high=100),
            Arg("bcast", dtype=("int64", "int8", "uint8"), make=_shift_amounts), grad_order=0),
    _binary("shift_right_logical_negative", lax.shift_right_logical,
            lambda x, y: np.right_shift(x.view(np.uint32), y.astype(np.uint32)).view(np.int32),
            ("shift_right_logical",), Arg(dtype="int32", low=-1000, high=-1),
            Arg("same", dtype="int32", low=0, high=31), grad_order=0),
], [])


# ----------------------------------------------------------------------------
# Selection
# ----------------------------------------------------------------------------

def _choose_ref(which, *cases):
    shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    return np.choose(np.broadcast_to(which, shape), [np.broadcast_to(c, shape) for c in cases])


SELECT = [
    Case("lax.select_n_bool", lax.select_n, lambda p, f, t: np.where(p, t, f),
         [Arg(dtype="bool", diff=False), Arg("bcast"), Arg("bcast")], prims=("select_n",)),
    Case("lax.select_n_int3", lax.select_n, _choose_ref,
         [Arg(dtype="int32", low=0, high=2, diff=False), Arg("same"), Arg("bcast"), Arg("bcast")],
         prims=("select_n",)),
    Case("lax.select_n_single", lax.select_n, lambda w, c: np.broadcast_to(
        c, np.broadcast_shapes(w.shape, c.shape)).copy(),
        [Arg(dtype="bool", diff=False), Arg("bcast")], prims=("select_n",)),
    Case("lax.select", lax.select, np.where, [Arg(dtype="bool", diff=False), Arg("same"),
                                              Arg("same", dtype="float64")],
         prims=("select_n",)),
    Case("lax.clamp_scalar_bounds", lambda x: lax.clamp(-1.0, x, 1.0),
         lambda x: np.clip(x, -1.0, 1.0), [Arg(dtype=F32_64, avoid=(-1.0, 1.0))],
         prims=("clamp",)),
    Case("lax.clamp_inside", lax.clamp, lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
         [Arg("bcast", low=-3, high=-1), Arg("any", low=-0.8, high=0.8), Arg("bcast", low=1, high=3)],
         prims=("clamp",)),
    Case("lax.clamp_below", lax.clamp, lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
         [Arg("bcast", low=-1, high=0), Arg("any", low=-3, high=-1.2), Arg("bcast", low=1, high=3)],
         prims=("clamp",)),
    Case("lax.clamp_above", lax.clamp, lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
         [Arg("bcast", low=-3, high=-1), Arg("any", low=1.2, high=3), Arg("bcast", low=0, high=1)],
         prims=("clamp",)),
    Case("lax.clamp_int", lax.clamp, lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
         [Arg("bcast", dtype="int64", low=-5, high=0), Arg("any", dtype="int64", low=-9, high=9),
          Arg("bcast", dtype="int64", low=0, high=5)], prims=("clamp",)),
]


# ----------------------------------------------------------------------------
# Types and constants
# ----------------------------------------------------------------------------

TYPES = [
    Case("lax.convert_f64_to_f32", lambda x: lax.convert_element_type(x, np.float32),
         lambda x: x.astype(np.float32), [Arg()], prims=("convert_element_type",),
         eps=1e-2, grad_rtol=1e-3, grad_atol=1e-3),
    Case("lax.convert_f32_to_f64", lambda x: lax.convert_element_type(x, np.float64),
         lambda x: x.astype(np.float64), [Arg(dtype="float32")], prims=("convert_element_type",)),
    Case("lax.convert_to_int", lambda x: lax.convert_element_type(x, np.int32),
         lambda x: x.astype(np.int32), [Arg(dtype=F32_64 + ("bool",))],
         prims=("convert_element_type",), grad_order=0),
    Case("lax.convert_int_to_float", lambda x: lax.convert_element_type(x, np.float64),
         lambda x: x.astype(np.float64), [Arg(dtype=INTS + ("bool",))],
         prims=("convert_element_type",)),
    Case("lax.bitcast_f64_i64", lambda x: lax.bitcast_convert_type(x, np.int64),
         lambda x: x.view(np.int64), [Arg()], prims=("bitcast_convert_type",), grad_order=0),
    Case("lax.bitcast_f64_i32", lambda x: lax.bitcast_convert_type(x, np.int32),
         lambda x: np.ascontiguousarray(x).view(np.int32).reshape(x.shape + (2,)), [Arg()],
         prims=("bitcast_convert_type",), grad_order=0),
    Case("lax.bitcast_i32_pair_f32", lambda x: lax.bitcast_convert_type(x, np.float32),
         lambda x: x.view(np.float32), [Arg((3, 2), dtype="int32", low=0, high=2**20)],
         prims=("bitcast_convert_type",), grad_order=0),
    Case("lax.bitcast_u8x8_f64", lambda x: lax.bitcast_convert_type(x, np.float64),
         lambda x: np.ascontiguousarray(x).view(np.float64).reshape(x.shape[:-1]),
         [Arg((2, 8), dtype="uint8", low=0, high=63)], prims=("bitcast_convert_type",),
         grad_order=0),
    Case("lax.iota", lambda x: lax.mul(x, lax.iota(np.float64, x.shape[0])),
         lambda x: x * np.arange(x.shape[0]), [Arg("vec")], prims=("iota",)),
    Case("lax.iota_int", lambda x: lax.add(x, lax.iota(np.int32, x.shape[0])),
         lambda x: x + np.arange(x.shape[0], dtype=np.int32), [Arg("vec", dtype="int32")],
         prims=("iota",)),
    Case("lax.broadcasted_iota", lambda x: lax.add(x, lax.broadcasted_iota(np.float64, x.shape, 1)),
         lambda x: x + np.arange(x.shape[1])[None, :], [Arg("mat")], prims=("iota",)),
    Case("lax.zeros_like_array", lambda x: lax.add(x, lax.zeros_like_array(x)), lambda x: x + 0,
         [Arg(dtype=F32_64)], prims=("add",)),
    Case("lax.stop_gradient", lax.stop_gradient, lambda x: x, [Arg(dtype=F32_64)],
         prims=("stop_gradient",), grad_order=0),
]


# bfloat16 (ml_dtypes): the reference is NumPy on the bfloat16 arrays (ml_dtypes'
# loops compute in float32 and round, as fungrad's wide computation); a few ops
# suffice: tests/test_small_dtypes.py checks the small types themselves
BF16 = dict(rtol=2.0**-7, atol=2.0**-7, grad_rtol=1e-1, grad_atol=1e-1, eps=1e-1)
BFLOAT16 = [
    _unary("tanh_bf16", lax.tanh, np.tanh, ("tanh",), dtype="bfloat16", **BF16),
    _unary("exp_bf16", lax.exp, np.exp, ("exp",), dtype="bfloat16", low=-2, high=2, **BF16),
    *_binary("mul_bf16", lax.mul, np.multiply, ("mul",), Arg(dtype="bfloat16"),
             Arg("bcast", dtype="bfloat16"), **BF16),
]


CASES = (UNARY + INTEGER_POW + TRANSCENDENTAL + SPECIAL + COMPLEX + BINARY + LOGIC + SELECT
         + TYPES + BFLOAT16)
