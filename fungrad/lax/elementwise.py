"""Elementwise primitives: one block per primitive with all of its rules.

Conventions (shared by every elementwise primitive):
* n-ary ops broadcast like NumPy (JAX's lax requires equal shapes; allowing
  broadcasting here saves a broadcast equation per op and keeps batching
  rules trivial).  Operands must share one dtype; Python scalars take the
  dtype of the other operand (weak typing).  Dtype promotion is
  ``fungrad.numpy``'s job, not lax's.
* Each op accepts a class of dtypes (float-only ops such as ``exp`` reject
  integers with a TypeError that says how to convert).
* JVP rules are written with lax functions, so they can be differentiated
  again to any order; transposes exist only for the ops that are linear in
  some argument.  A rule emits the minimal tangent program: the tangent times
  one coefficient computed from the primals (``mul(g, neg(sin(x)))``, not
  ``neg(mul(g, sin(x)))``), so that the linear part, which eager ``grad``
  runs and transposes, is one operation; tests/test_linear_programs.py counts.  Values at non-differentiable points are JAX's:
  ``abs'(0) = 1``, ``sign' = floor' = round' = 0``, ties of ``max``/``min``
  split the tangent 0.5/0.5, ``clamp`` passes the tangent to ``x`` only
  strictly inside ``(min, max)``.
* Impl and lowering come from one definition: a NumPy ufunc (``np.sin``:
  the impl, and the lowering ``np.sin(a)``, which jit may write as an
  operator or with ``out=``), a kernel function (the special functions erf,
  lgamma, ... have no NumPy counterpart: ``fungrad.lax.kernels.special``), or
  an expression node whose compiled form is the impl (``logistic``).  Only
  where eager evaluation needs more care than generated code (error states,
  NumPy's integer division) are the two written separately.

The catalog reads as a table: ``_unary(name, ufunc_or_kernel, kind)`` then one
line with the JVP rule.
"""
from __future__ import annotations

import builtins
import enum
import math

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, is_floating, is_inexact, is_integer, issubdtype as dtype_issubdtype, kind as dtype_kind
from fungrad.core import (Primitive, ShapedArray, Tracer, get_aval, scalar_dtype, strip_weak_type_rule,
                          weak_array)
from fungrad.interpreters import ad, batching
from fungrad.interpreters.codegen import expression_function
from fungrad.interpreters.lowering import Source, call, scalar_type_name
from fungrad.interpreters.ad import (defjvp, defjvp2, deflinear, defbilinear, defjvp_zero,
                                     unbroadcast, is_undefined_primal, Zero, instantiate_zeros)
from fungrad.lax import integer_numba
from fungrad.lax.kernels import (bits as bits_kernels, powers as power_kernels,
                                  special as special_kernels)
from fungrad.lax.utils import (def_lowering, call_lowering, as_operand, check_same_dtypes,
                               broadcast_shapes, numba_type)

__all__ = [
    # unary arithmetic and rounding
    "neg", "sign", "floor", "ceil", "round", "RoundingMethod", "abs", "square",
    "reciprocal", "integer_pow", "sqrt", "rsqrt", "cbrt", "is_finite",
    # exponentials, logarithms, trigonometry
    "exp", "exp2", "log", "log1p", "expm1", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    # special functions
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma",
    # complex parts
    "real", "imag", "conj", "complex",
    # binary arithmetic
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
    # comparisons, logic, bits
    "eq", "ne", "lt", "le", "gt", "ge", "bitwise_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
    "population_count", "clz", "mulhi", "reduce_precision",
    # selection
    "select_n", "select", "clamp",
    # types and constants
    "convert_element_type", "bitcast_convert_type", "iota", "broadcasted_iota",
    "zeros_like_array", "stop_gradient",
]

_PY_SCALARS = (bool, int, float, complex)


def _structural():
    from fungrad.lax import structural  # late: structural imports this module
    return structural


# ----------------------------------------------------------------------------
# Dtype classes and rule factories
# ----------------------------------------------------------------------------

class _Kind:
    """A class of dtypes an op accepts (NumPy dtype kind letters: b=bool,
    i=signed, u=unsigned, f=float, c=complex), with words for the error."""

    def __init__(self, kinds, words, fix):
        self.kinds, self.words, self.fix = kinds, words, fix

    def check(self, name, *avals):
        for a in avals:
            if dtype_kind(a.dtype) not in self.kinds:
                raise TypeError(f"lax.{name} requires {self.words} arguments, got "
                                f"{', '.join(v.dtype.name for v in avals)}. {self.fix}")


_TO_FLOAT = ("Convert first, e.g. x.astype(float) or lax.convert_element_type(x, "
             "np.float64); fungrad.numpy functions convert integers for you.")
FLOAT = _Kind("f", "real floating-point", _TO_FLOAT)
INEXACT = _Kind("fc", "floating-point or complex", _TO_FLOAT)
NUMBER = _Kind("iufc", "numeric (non-boolean)",
               "For booleans use bitwise_and/or/xor/not, or convert them to a number.")
SIGNED = _Kind("ifc", "signed integer, floating-point or complex",
               "Convert unsigned values first.")
ORDERED = _Kind("biuf", "real (ordered)",
                "Complex numbers have no order in lax (as in JAX): compare the real parts, "
                "or use fungrad.numpy's comparisons, which order them lexicographically "
                "as NumPy does.")
REAL_NUMBER = _Kind("iuf", "integer or real floating-point",
                   "Complex numbers have no remainder; take the real part first.")
ANY = _Kind("biufc", "any", "")
INT_OR_BOOL = _Kind("biu", "integer or boolean", "Compare or convert floats first.")
INT = _Kind("iu", "integer", "Convert with lax.convert_element_type first.")
COMPLEX = _Kind("c", "complex", "For real inputs there is nothing to take.")


def _checked(name, kind, impl, same_dtype):
    """``impl`` with the dtype checks of the shape rule.  Eager evaluation calls
    impls without the shape rule, and NumPy would silently accept (and promote)
    what lax rejects; a dtype-kind test per operand is cheap."""
    kinds = kind.kinds

    def checked(*args, **params):
        first = None
        for a in args:
            dtype = getattr(a, "dtype", None)     # None: a Python scalar (weak)
            if dtype is None:
                continue
            # dtype.kind first (no call): ml_dtypes' types are 'V' there, 'f'/'i' after
            if dtype.kind not in kinds and dtype_kind(dtype) not in kinds:
                kind.check(name, *[get_aval(v) for v in args])
            if same_dtype and first is not None and dtype != first:
                check_same_dtypes(name, *[get_aval(v) for v in args])
            first = dtype
        return impl(*args, **params)
    checked.__name__ = getattr(impl, "__name__", name)
    return checked


def _rule_checked(rule, impl):
    """``impl`` preceded by the full shape rule (for ops with checks beyond dtypes)."""
    def checked(*args, **params):
        rule(*[get_aval(a) for a in args], **params)
        return impl(*args, **params)
    checked.__name__ = getattr(impl, "__name__", "impl")
    return checked


def _real_dtype(dtype):
    return dtype_finfo(dtype).dtype if dtype_issubdtype(dtype, np.complexfloating) else dtype


def _unary_rule(name, kind, out_dtype=None):
    def rule(x, **params):
        kind.check(name, x)
        return ShapedArray(x.shape, x.dtype if out_dtype is None else out_dtype(x.dtype))
    return rule


def _nary_rule(name, kind, out_dtype=None):
    """NumPy broadcasting of the shapes, one common dtype (ignoring weak scalars)."""
    def rule(*avals, **params):
        kind.check(name, *avals)
        dtype = check_same_dtypes(name, *avals)
        shape = broadcast_shapes(name, *(a.shape for a in avals))
        return ShapedArray(shape, dtype if out_dtype is None else out_dtype(dtype))
    return rule


def _impl_and_lowering(impl, lowering, num_args):
    """One definition of both: ``impl`` a NumPy ufunc or kernel function (the
    lowering calls it), or ``impl=None`` and ``lowering`` an expression rule
    (the impl is its compiled form); or both given."""
    if lowering is None:
        lowering = call_lowering(impl)
    if impl is None:
        impl = expression_function(lowering, num_args)
    return impl, lowering


# the elementwise primitives that compute on ml_dtypes' types in float32 (int8),
# as XLA's CPU code does: fungrad.lax wraps them once every rule is registered
# (lax.utils.computes_small_dtypes_wide)
WIDE_FOR_SMALL_DTYPES: list = []


def _unary(name, impl, kind=NUMBER, out_dtype=None, lowering=None):
    """A unary elementwise primitive with impl, shape rule, batching and lowering."""
    impl, lowering = _impl_and_lowering(impl, lowering, 1)
    p = Primitive(name)
    p.def_impl(_checked(name, kind, impl, same_dtype=False))
    p.def_abstract_eval(_unary_rule(name, kind, out_dtype))
    batching.vectorized_batcher(p)
    def_lowering(p, lowering)
    WIDE_FOR_SMALL_DTYPES.append(p)
    return p


def _nary(name, impl, kind=NUMBER, out_dtype=None, lowering=None, num_args=2, wide=True):
    """An n-ary elementwise primitive (NumPy broadcasting between operands);
    ``wide``: computes on ml_dtypes' types in float32 (int8), as XLA's CPU code."""
    impl, lowering = _impl_and_lowering(impl, lowering, num_args)
    p = Primitive(name)
    p.def_impl(_checked(name, kind, impl, same_dtype=True))
    p.def_abstract_eval(_nary_rule(name, kind, out_dtype))
    batching.broadcasting_batcher(p)
    def_lowering(p, lowering)
    if wide:
        WIDE_FOR_SMALL_DTYPES.append(p)
    return p


def _bool_out(dtype):
    return np.dtype(np.bool_)


def _operand(x):
    return as_operand(x)


def _is_python_scalar(x):
    # exact types: NumPy scalars (np.float64 subclasses float) keep their dtype
    return type(x) in _PY_SCALARS


def _operands(*args):
    """Give Python-scalar operands the dtype of the first array operand (weak
    typing); arrays, tracers and NumPy scalars keep their dtypes."""
    out = list(args)
    like = None
    scalars = []
    for i, a in enumerate(args):
        if type(a) in _PY_SCALARS:
            scalars.append(i)
            continue
        if not isinstance(a, (np.ndarray, Tracer)):
            out[i] = a = as_operand(a)
        if like is None:
            like = a
    for i in scalars:
        out[i] = as_operand(args[i], like=like)
    return out


def _const(like, value):
    """A 0-d array of ``like``'s dtype (a constant in a rule).  As JAX's
    ``lax._const``, weakly typed when ``like`` is a weak scalar of its kind's
    default dtype (JAX makes a Python number of it), else strong: this is what
    makes the derivative of a function of a Python float weak or not."""
    aval = get_aval(like)
    if aval.weak_type and aval.shape == () and aval.dtype == _python_scalar_dtype(aval.dtype):
        return weak_array(value, aval.dtype)
    return np.asarray(value, dtype=aval.dtype)


def _python_scalar_dtype(dtype):
    """The dtype a Python number of ``dtype``'s kind takes (x64 decides)."""
    return scalar_dtype({"f": 0.0, "c": 0j, "i": 0, "u": 0, "b": False}[dtype.kind])


def _brcast(x, *others):
    """``x`` broadcast (NumPy rules) to the common shape of itself and ``others``."""
    shape = broadcast_shapes("broadcast", get_aval(x).shape,
                             *(get_aval(o).shape for o in others))
    return _broadcast_to(x, shape)


def _broadcast_to(x, shape):
    aval = get_aval(x)
    if aval.shape == tuple(shape):
        return x
    lead = len(shape) - aval.ndim
    return _structural().broadcast_in_dim(x, tuple(shape), tuple(range(lead, len(shape))))


def _zeros(x):
    return _structural().full_like(x, 0)


def _ones(x):
    return _structural().full_like(x, 1)


def _const_like(x, value):
    """``_const(x, value)`` broadcast to ``x``'s shape (an operand of an op
    that needs equal shapes)."""
    return _broadcast_to(_const(x, value), get_aval(x).shape)


def _strong_zeros(x):
    return _structural().full_like(x, 0, dtype=get_aval(x).dtype)


def _one(x):
    """A 0-d 1 like ``x``, of its weak type (JAX's ``lax._one``; ``_const(x, 1)``
    is weak only for a weak scalar ``x``: the rules use the one JAX's use)."""
    return _structural().full_like(x, 1, shape=())


def _strong(x):
    """``x`` strongly typed (JAX's ``convert_element_type`` to its own dtype,
    which some of its rules apply: the derivative is then strong)."""
    return convert_weak_type(x, get_aval(x).dtype, False)   # (selection's, imported below)


# ----------------------------------------------------------------------------
# neg, sign, floor, ceil, round, is_finite
# ----------------------------------------------------------------------------

neg_p = _unary("neg", np.negative)
deflinear(neg_p, lambda ct, x: [neg(ct)])
neg_p.involution = True

sign_p = _unary("sign", np.sign)
defjvp_zero(sign_p)

floor_p = _unary("floor", np.floor, FLOAT)
defjvp_zero(floor_p)

ceil_p = _unary("ceil", np.ceil, FLOAT)
defjvp_zero(ceil_p)


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` breaks ties (``jax.lax.RoundingMethod``)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _round_lowering(args, rounding_method):
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return call(np.rint, args[0])
    return Source(f"(lambda x, t: np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t))"
                  f"({args[0]}, np.trunc({args[0]}))")


# the impls are the lowerings compiled; eagerly inf - inf is not reported (the
# inf is kept by the where)
_ROUNDERS = {method: expression_function(_round_lowering, 1, rounding_method=method)
             for method in RoundingMethod}
_ROUNDERS[RoundingMethod.AWAY_FROM_ZERO] = np.errstate(invalid="ignore")(
    _ROUNDERS[RoundingMethod.AWAY_FROM_ZERO])


def _round_impl(x, rounding_method):
    return _ROUNDERS[rounding_method](x)


round_p = _unary("round", _round_impl, FLOAT, lowering=_round_lowering)
defjvp_zero(round_p)

is_finite_p = _unary("is_finite", np.isfinite, FLOAT, _bool_out)
defjvp_zero(is_finite_p)
for _p in (neg_p, sign_p, floor_p, ceil_p, round_p):
    _p.keeps_finite = True


def neg(x):
    return neg_p.bind(_operand(x))


def sign(x):
    return sign_p.bind(_operand(x))


def floor(x):
    return floor_p.bind(_operand(x))


def ceil(x):
    return ceil_p.bind(_operand(x))


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 (JAX's name)
    """Round to the nearest integer; ties away from zero (default) or to even."""
    method = RoundingMethod(int(rounding_method))
    return round_p.bind(_operand(x), rounding_method=int(method))


def is_finite(x):
    return is_finite_p.bind(_operand(x))


# ----------------------------------------------------------------------------
# abs, square, integer_pow, reciprocal, sqrt, rsqrt, cbrt
# ----------------------------------------------------------------------------

def _abs_jvp(g, ans, x):
    if dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        # d|x| = Re(conj(x) dx) / |x|  (0/0 at x = 0 replaced by 0, as JAX)
        ans = _strong(ans)          # (JAX converts it to x's dtype: strong)
        safe = select_n(eq(ans, _const(ans, 0)), ans, _ones(ans))
        return div(real(mul(conj(x), g)), safe)
    return select_n(ge(x, _const(x, 0)), neg(g), g)     # abs'(0) = 1, as JAX


abs_p = _unary("abs", np.abs, SIGNED, _real_dtype)
defjvp2(abs_p, _abs_jvp)

square_p = _unary("square", np.square)
defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))


def _integer_pow_rule(x, y):
    NUMBER.check("integer_pow", x)
    if not isinstance(y, (int, np.integer)) or isinstance(y, bool):
        raise TypeError(f"lax.integer_pow: the exponent y must be a Python int, got {y!r}; "
                        "for array exponents use lax.pow.")
    if y < 0 and not is_inexact(x.dtype):
        raise ValueError(f"lax.integer_pow: {x.dtype.name} to the negative power {y} is "
                         "not an integer; convert the base to float first.")
    return ShapedArray(x.shape, x.dtype)


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return _zeros(g)
    if y == 1:
        return g
    # the minimal tangent program: one mul by a coefficient computed from x
    # (x itself for y == 2, not integer_pow[y=1] x)
    return mul(g, mul(_const(x, y), x if y == 2 else integer_pow(x, y - 1)))


def _integer_pow_impl(x, y):
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return power_kernels.integer_pow(x, y=y)


integer_pow_p = Primitive("integer_pow")
integer_pow_p.def_impl(_rule_checked(_integer_pow_rule, _integer_pow_impl))
integer_pow_p.def_abstract_eval(_integer_pow_rule)
defjvp(integer_pow_p, _integer_pow_jvp)
batching.vectorized_batcher(integer_pow_p)
integer_pow_p.forwards_when = lambda params: params["y"] == 1
# by multiplications (JAX's order), not np.power: pow() per element is ~10x slower
def_lowering(integer_pow_p, lambda a, y: call(np.square, a[0]) if y == 2 else
             call(power_kernels.integer_pow, a[0], y=y))


def _integer_pow_numba(a, in_avals, out_avals, y):
    """``x ** y`` by repeated squaring in the NumPy kernel's order (pow() per
    element is ~10x slower), for floats; np.power beyond |y| = 64."""
    x, dtype = a[0], in_avals[0].dtype
    if not is_floating(dtype):
        return None
    # (builtins.abs: this module's abs is lax.abs, a tracer when a trace is active)
    if y == 0 or builtins.abs(y) > 64:
        return f"np.power({x}, {numba_type(dtype)}({int(y)}))"
    n, acc, square = builtins.abs(int(y)), None, x
    while True:
        if n & 1:
            acc = square if acc is None else f"({acc} * {square})"
        n >>= 1
        if not n:
            break
        square = f"({square} * {square})"
    if acc == x:                     # (y = 1: a new value, never the operand's array)
        acc = f"({x} * {numba_type(dtype)}(1))"
    return f"({numba_type(dtype)}(1) / {acc})" if y < 0 else acc


integer_pow_p.numba_lowering = _integer_pow_numba
integer_pow_p.numba_elementwise = True

sqrt_p = _unary("sqrt", np.sqrt, INEXACT)
defjvp2(sqrt_p, lambda g, ans, x: mul(g, div(_const(x, 0.5), ans)))

rsqrt_p = _unary("rsqrt", None, INEXACT, lowering=lambda a: Source(f"1 / np.sqrt({a[0]})"))
rsqrt_p.numba_lowering = lambda a, in_avals, out_avals: (
    f"{numba_type(in_avals[0].dtype)}(1) / np.sqrt({a[0]})" if is_floating(in_avals[0].dtype)
    else None)
rsqrt_p.numba_elementwise = True
defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(x, -0.5), div(ans, x))))

cbrt_p = _unary("cbrt", np.cbrt, FLOAT)
defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(_const(x, 1 / 3), integer_pow(ans, -2))))


def abs(x):  # noqa: A001 (JAX's name)
    return abs_p.bind(_operand(x))


def square(x):
    return square_p.bind(_operand(x))


def integer_pow(x, y):
    """``x ** y`` for a static Python int ``y`` (exact repeated multiplication)."""
    return integer_pow_p.bind(_operand(x), y=int(y) if not isinstance(y, bool) else y)


def reciprocal(x):
    """``1 / x`` (as in JAX, ``integer_pow(x, -1)``)."""
    return integer_pow(x, -1)


def sqrt(x):
    return sqrt_p.bind(_operand(x))


def rsqrt(x):
    return rsqrt_p.bind(_operand(x))


def cbrt(x):
    return cbrt_p.bind(_operand(x))


# ----------------------------------------------------------------------------
# exp, exp2, log, log1p, expm1, logistic
# ----------------------------------------------------------------------------

exp_p = _unary("exp", np.exp, INEXACT)
defjvp2(exp_p, lambda g, ans, x: mul(g, ans))

exp2_p = _unary("exp2", np.exp2, INEXACT)
defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, _const(x, math.log(2)))))

log_p = _unary("log", np.log, INEXACT)
defjvp(log_p, lambda g, x: div(g, x))

log1p_p = _unary("log1p", np.log1p, INEXACT)
defjvp(log1p_p, lambda g, x: div(g, add(x, _one(x))))

expm1_p = _unary("expm1", np.expm1, INEXACT)
defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _one(ans))))


def _logistic_impl(x):
    if np.iscomplexobj(x):      # 1 / (1 + exp(-z)), as JAX (poles at z = iπ(2k+1))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return 1 / (1 + np.exp(-x))
    # exp of -|x| only: never overflows, full relative accuracy in both tails
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _logistic_lowering(args, in_avals):
    if dtype_kind(in_avals[0].dtype) == "c":
        return Source(f"1 / (1 + np.exp(-{args[0]}))")
    # exp of -|x| only: never overflows, full relative accuracy in both tails
    return Source(f"(lambda x, e: np.where(x >= 0, 1 / (1 + e), e / (1 + e)))"
                  f"({args[0]}, np.exp(-np.abs({args[0]})))")


# (impl and lowering differ for complex inputs: their errstate has no expression form)
logistic_p = _unary("logistic", _logistic_impl, INEXACT,
                    lowering=lambda args: _logistic_lowering(args, [ShapedArray((), np.float64)]))
def_lowering(logistic_p, _logistic_lowering, typed=True)
logistic_p.numba_elementwise = True
# the same on a real scalar, in a loop nest (arrays: nests; complex: NumPy)
logistic_p.numba_lowering = lambda a, in_avals, out_avals: (
    "({t}(1) / ({t}(1) + np.exp(-abs({x}))) if {x} >= 0 else "
    "np.exp(-abs({x})) / ({t}(1) + np.exp(-abs({x}))))".format(
        x=a[0], t=numba_type(in_avals[0].dtype))
    if is_floating(in_avals[0].dtype) and in_avals[0].shape == () else None)
defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_one(ans), ans))))


def exp(x):
    return exp_p.bind(_operand(x))


def exp2(x):
    return exp2_p.bind(_operand(x))


def log(x):
    return log_p.bind(_operand(x))


def log1p(x):
    return log1p_p.bind(_operand(x))


def expm1(x):
    return expm1_p.bind(_operand(x))


def logistic(x):
    """The sigmoid ``1 / (1 + exp(-x))``."""
    return logistic_p.bind(_operand(x))


# ----------------------------------------------------------------------------
# Trigonometric and hyperbolic functions
# ----------------------------------------------------------------------------

def _one_minus_square(x):
    return sub(_const(x, 1), square(x))


sin_p = _unary("sin", np.sin, INEXACT)
defjvp(sin_p, lambda g, x: mul(g, cos(x)))

cos_p = _unary("cos", np.cos, INEXACT)
defjvp(cos_p, lambda g, x: mul(g, neg(sin(x))))

tan_p = _unary("tan", np.tan, INEXACT)
defjvp2(tan_p, lambda g, ans, x: mul(g, add(_const(x, 1), square(ans))))

asin_p = _unary("asin", np.arcsin, INEXACT)
defjvp(asin_p, lambda g, x: mul(g, rsqrt(_one_minus_square(x))))

acos_p = _unary("acos", np.arccos, INEXACT)
defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(_one_minus_square(x)))))

atan_p = _unary("atan", np.arctan, INEXACT)
defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))

sinh_p = _unary("sinh", np.sinh, INEXACT)
defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))

cosh_p = _unary("cosh", np.cosh, INEXACT)
defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))

tanh_p = _unary("tanh", np.tanh, INEXACT)
# (1 + ans)(1 - ans) rather than 1 - ans^2: accurate where tanh is near +-1.  The
# factor is formed before it meets the tangent, so linearize keeps one residual.
defjvp2(tanh_p, lambda g, ans, x: mul(g, mul(add(_one(ans), ans), sub(_one(ans), ans))))

asinh_p = _unary("asinh", np.arcsinh, INEXACT)
defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _one(x)))))

acosh_p = _unary("acosh", np.arccosh, INEXACT)
# 1/(sqrt(x-1) sqrt(x+1)), not rsqrt(x²-1): the two differ in sign on the
# complex half-plane Re x < 0 (acosh's principal branch is log(x + sqrt(x-1) sqrt(x+1)))
defjvp(acosh_p, lambda g, x: mul(g, mul(rsqrt(sub(x, _one(x))), rsqrt(add(x, _one(x))))))

atanh_p = _unary("atanh", np.arctanh, INEXACT)
defjvp(atanh_p, lambda g, x: div(g, mul(add(_one(x), x), sub(_one(x), x))))


def sin(x):
    return sin_p.bind(_operand(x))


def cos(x):
    return cos_p.bind(_operand(x))


def tan(x):
    return tan_p.bind(_operand(x))


def asin(x):
    return asin_p.bind(_operand(x))


def acos(x):
    return acos_p.bind(_operand(x))


def atan(x):
    return atan_p.bind(_operand(x))


def sinh(x):
    return sinh_p.bind(_operand(x))


def cosh(x):
    return cosh_p.bind(_operand(x))


def tanh(x):
    return tanh_p.bind(_operand(x))


def asinh(x):
    return asinh_p.bind(_operand(x))


def acosh(x):
    return acosh_p.bind(_operand(x))


def atanh(x):
    return atanh_p.bind(_operand(x))


# ----------------------------------------------------------------------------
# Special functions (pure-NumPy impls in kernels/special.py)
# ----------------------------------------------------------------------------

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

erf_p = _unary("erf", special_kernels.erf, FLOAT)
defjvp(erf_p, lambda g, x: mul(g, mul(_const(x, _TWO_OVER_SQRT_PI), exp(neg(square(x))))))

erfc_p = _unary("erfc", special_kernels.erfc, FLOAT)
defjvp(erfc_p, lambda g, x: mul(g, mul(_const(x, -_TWO_OVER_SQRT_PI), exp(neg(square(x))))))

erf_inv_p = _unary("erf_inv", special_kernels.erf_inv, FLOAT)
defjvp2(erf_inv_p, lambda g, ans, x: mul(g, mul(_const(x, math.sqrt(math.pi) / 2),
                                                 exp(square(ans)))))

lgamma_p = _unary("lgamma", special_kernels.lgamma, FLOAT)
defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))

digamma_p = _unary("digamma", special_kernels.digamma, FLOAT)
defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const_like(x, 1), x)))


def _polygamma_jvp_m(g, m, x):
    raise TypeError("lax.polygamma: the derivative with respect to the order m is not "
                    "defined (m is an integer); differentiate with respect to x only.")


polygamma_p = _nary("polygamma", special_kernels.polygamma, FLOAT)
defjvp(polygamma_p, _polygamma_jvp_m,
       lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))


def erf(x):
    return erf_p.bind(_operand(x))


def erfc(x):
    return erfc_p.bind(_operand(x))


def erf_inv(x):
    return erf_inv_p.bind(_operand(x))


def lgamma(x):
    """log |Gamma(x)|."""
    return lgamma_p.bind(_operand(x))


def digamma(x):
    """d/dx lgamma(x); nan at the poles 0, -1, -2, ..."""
    return digamma_p.bind(_operand(x))


def polygamma(m, x):
    """The m-th derivative of digamma; ``m`` is a non-negative integer value of
    ``x``'s float dtype (other values give nan)."""
    return polygamma_p.bind(*_operands(m, x))


# ----------------------------------------------------------------------------
# Complex parts: real, imag, conj, complex (all linear)
# ----------------------------------------------------------------------------

real_p = _unary("real", np.real, COMPLEX, _real_dtype)
imag_p = _unary("imag", np.imag, COMPLEX, _real_dtype)
conj_p = _unary("conj", np.conj, INEXACT)
real_p.keeps_finite = imag_p.keeps_finite = conj_p.keeps_finite = True


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


complex_p = _nary("complex", lambda x, y: x + 1j * y, FLOAT, _complex_dtype,
                  lowering=lambda a: Source(f"(np.asarray({a[0]}) + 1j * np.asarray({a[1]}))"))

# (JAX's zero here is a strong NumPy 0: the cotangent is strong)
deflinear(real_p, lambda ct, x: [complex(ct, _strong_zeros(ct))])
deflinear(imag_p, lambda ct, x: [complex(_strong_zeros(ct), neg(ct))])
deflinear(conj_p, lambda ct, x: [conj(ct) if dtype_issubdtype(x.aval.dtype, np.complexfloating)
                                 else ct])   # conj of a real array is the identity
deflinear(complex_p, lambda ct, x, y: [
    unbroadcast(real(ct), x.aval) if is_undefined_primal(x) else None,
    unbroadcast(neg(imag(ct)), y.aval) if is_undefined_primal(y) else None])


def real(x):
    return real_p.bind(_operand(x))


def imag(x):
    return imag_p.bind(_operand(x))


def conj(x):
    return conj_p.bind(_operand(x))


def complex(x, y):  # noqa: A001 (JAX's name)
    """``x + 1j * y`` from two real arrays of one float dtype."""
    return complex_p.bind(*_operands(x, y))


# ----------------------------------------------------------------------------
# add, sub, mul, div, rem
# ----------------------------------------------------------------------------

add_p = _nary("add", np.add, ANY)          # bool: logical or
sub_p = _nary("sub", np.subtract, NUMBER)
mul_p = _nary("mul", np.multiply, ANY)  # bool: logical and
add_p.commutative = mul_p.commutative = True
add_p.unit, sub_p.unit, mul_p.unit = 0, 0, 1
mul_p.distributes_over = (add_p, sub_p)       # (passes.factor_products)


def _add_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
            unbroadcast(ct, y.aval) if is_undefined_primal(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
            unbroadcast(neg(ct), y.aval) if is_undefined_primal(y) else None]


deflinear(add_p, _add_transpose)
deflinear(sub_p, _sub_transpose)
defbilinear(mul_p,
            lambda ct, x, y: unbroadcast(mul(ct, y), x.aval),
            lambda ct, x, y: unbroadcast(mul(x, ct), y.aval))


def _div_impl(x, y):
    if is_inexact(np.result_type(x, y)):
        return np.true_divide(x, y)
    # integers: lax.div rounds towards zero (C semantics), as in JAX
    with np.errstate(divide="ignore"):
        rounded_down = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        return np.floor_divide(x, y) + rounded_down.astype(np.result_type(x, y))


def _div_lowering(args, in_avals):
    x, y = args
    if is_inexact(in_avals[0].dtype):
        return call(np.true_divide, x, y)
    # integers: round towards zero (C / XLA semantics), not NumPy's floor
    return Source(f"(np.floor_divide({x}, {y}) + ((np.remainder({x}, {y}) != 0) & "
                  f"((np.asarray({x}) < 0) != (np.asarray({y}) < 0)))"
                  f".astype(np.result_type({x}, {y})))")


def _div_transpose(ct, x, y):
    if is_undefined_primal(y):
        raise TypeError("div is linear only in its numerator")
    return [unbroadcast(div(ct, y), x.aval), None]


div_p = _nary("div", _div_impl, NUMBER, lowering=_div_lowering)
def_lowering(div_p, _div_lowering, typed=True)
defjvp2(div_p,
        lambda g, ans, x, y: div(g, y),
        # -g x / y^2 as -g (x / y) / y: y^2 would overflow for |y| > 1e154
        lambda g, ans, x, y: mul(g, neg(div(ans, y))))
div_p.transpose = _div_transpose
div_p.linear = True
div_p.unit = 1
div_p.numba_lowering = integer_numba.div_numba   # (integers: C's rounding, NumPy's x/0)
div_p.numba_elementwise = True


def _rem_impl(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(x, y)


rem_p = _nary("rem", _rem_impl, REAL_NUMBER, lowering=call_lowering(np.fmod))
defjvp(rem_p,
       lambda g, x, y: _brcast(g, y),
       # d/dy fmod(x, y) = -trunc(x / y)
       lambda g, x, y: mul(g, neg(mul(sign(div(x, y)), floor(abs(div(x, y)))))))
rem_p.numba_lowering = integer_numba.rem_numba
rem_p.numba_elementwise = True


def add(x, y):
    return add_p.bind(*_operands(x, y))


def sub(x, y):
    return sub_p.bind(*_operands(x, y))


def mul(x, y):
    return mul_p.bind(*_operands(x, y))


def div(x, y):
    """``x / y``; integers round towards zero (unlike NumPy's ``//``)."""
    return div_p.bind(*_operands(x, y))


def rem(x, y):
    """Remainder with the sign of the dividend (C ``fmod``), as ``lax.rem``."""
    return rem_p.bind(*_operands(x, y))


# ----------------------------------------------------------------------------
# pow (float base; float or integer exponent)
# ----------------------------------------------------------------------------

def _pow_rule(x, y):
    INEXACT.check("pow", x)
    if is_integer(y.dtype):
        out_dtype = x.dtype
    elif y.dtype == x.dtype or y.weak_type:
        out_dtype = x.dtype
    else:
        raise TypeError(f"lax.pow requires the exponent to have the base's dtype "
                        f"({x.dtype.name}) or an integer dtype, got {y.dtype.name}. Convert "
                        "it, or use fungrad.numpy.power which promotes dtypes.")
    return ShapedArray(broadcast_shapes("pow", x.shape, y.shape), out_dtype)


def _pow_impl(x, y):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.power(x, y)
    return np.asarray(out).astype(np.asarray(x).dtype, copy=False)


def _pow_jvp_base(g, ans, x, y):
    x = _strong(x)        # (JAX converts both to the result dtype: strong)
    if is_integer(get_aval(y).dtype):
        y = convert_element_type(y, get_aval(x).dtype)
        # y x^(y-1), with 0 for y = 0 even at x = 0 (as JAX)
        jac = select_n(eq(y, _const(y, 0)),
                       mul(y, pow(x, sub(y, _const(y, 1)))), _zeros(_brcast(x, y)))
    else:
        y = _strong(y)
        jac = mul(y, pow(x, sub(y, _const(y, 1))))
    return mul(g, jac)


def _pow_jvp_exponent(g, ans, x, y):
    # log(x) x^y, with log(0) replaced by 0 so that x = 0 gives 0 (as JAX)
    safe_x = select_n(eq(x, _const(x, 0)), x, _ones(x))
    return _strong(mul(g, mul(log(safe_x), ans)))     # (JAX converts it: strong)


pow_p = Primitive("pow")
pow_p.def_impl(_rule_checked(_pow_rule, _pow_impl))
pow_p.def_abstract_eval(_pow_rule)
defjvp2(pow_p, _pow_jvp_base, _pow_jvp_exponent)
batching.broadcasting_batcher(pow_p)
def_lowering(pow_p, lambda a: Source(
    f"np.asarray(np.power({a[0]}, {a[1]})).astype(np.asarray({a[0]}).dtype)"))
pow_p.numba_lowering = lambda a, in_avals, out_avals: (
    f"np.power({a[0]}, {a[1]})" if is_floating(in_avals[0].dtype)
    and in_avals[1].dtype == in_avals[0].dtype else None)
pow_p.numba_elementwise = True


def pow(x, y):  # noqa: A001 (JAX's name)
    """``x ** y`` elementwise; ``x`` floating, ``y`` of x's dtype or an integer dtype."""
    x = _operand(x)
    if type(y) is builtins.float:
        y = as_operand(y, like=x)
    return pow_p.bind(x, _operand(y))


# ----------------------------------------------------------------------------
# max, min, atan2, nextafter
# ----------------------------------------------------------------------------

def _balanced_eq(x, z, y):
    """1 where x == z != y, 0.5 where x == y == z (a tie), 0 elsewhere."""
    dtype = get_aval(z).dtype
    half_or_one = select_n(eq(y, z), np.asarray(1, dtype), np.asarray(0.5, dtype))
    return select_n(eq(x, z), np.asarray(0, dtype), half_or_one)


def _tie_split(x, y, wins, wins_or_ties, dtype):
    """JAX's derivative of max (``wins`` = gt) or min (lt) in ``x`` for real
    floats: 1 where x wins, 0.5 at a tie, 0 where it loses or either is NaN,
    computed as (wins + wins_or_ties) / 2.  NumPy's ``where`` branches per
    element: on a ReLU's random mask the two selects of ``_balanced_eq`` took
    ~4 ms of a 28x28x16x32 step; the comparisons summed as int8 cost one float
    pass."""
    count = add(convert_element_type(wins(x, y), np.int8),
                convert_element_type(wins_or_ties(x, y), np.int8))
    return mul(convert_element_type(count, dtype), np.asarray(0.5, dtype))


def _extremum_jvp(wins, wins_or_ties):
    """The JVP rules of max/min in their two operands (``wins``: gt or lt;
    ``wins_or_ties``: ge or le, passed late-bound: defined below)."""
    def in_x(g, ans, x, y):
        aval = get_aval(ans)
        if not np.issubdtype(aval.dtype, np.floating):
            factor = _balanced_eq(x, ans, y)
        else:
            factor = _tie_split(x, y, wins, wins_or_ties, aval.dtype)
        # (JAX's factor is made of constants like ans (_ones, _twos): of its weak type)
        return mul(g, convert_weak_type(factor, aval.dtype, aval.weak_type))

    def in_y(g, ans, x, y):
        return in_x(g, ans, y, x)
    return in_x, in_y


max_p = _nary("max", np.maximum, ANY)
defjvp2(max_p, *_extremum_jvp(lambda a, b: gt(a, b), lambda a, b: ge(a, b)))

min_p = _nary("min", np.minimum, ANY)
max_p.commutative = min_p.commutative = True
max_p.keeps_finite = min_p.keeps_finite = True
defjvp2(min_p, *_extremum_jvp(lambda a, b: lt(a, b), lambda a, b: le(a, b)))

atan2_p = _nary("atan2", np.arctan2, FLOAT)
defjvp(atan2_p,
       lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
       lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))

# not in float32: the next bfloat16 is not the next float32 rounded (ml_dtypes has the loop)
nextafter_p = _nary("nextafter", np.nextafter, FLOAT, wide=False)
# nextafter(x, y) differs from x by one ulp: its derivative is 1 in x, 0 in y
defjvp(nextafter_p, lambda g, x, y: _brcast(g, y), None)


def max(x, y):  # noqa: A001 (JAX's name)
    """Elementwise maximum (NaN-propagating); ties share the derivative equally."""
    return max_p.bind(*_operands(x, y))


def min(x, y):  # noqa: A001 (JAX's name)
    return min_p.bind(*_operands(x, y))


def atan2(x, y):
    """The angle of the point (y, x): ``atan(x / y)`` with the quadrant of the signs."""
    return atan2_p.bind(*_operands(x, y))


def nextafter(x1, x2):
    return nextafter_p.bind(*_operands(x1, x2))


# comparisons, logic and bit operations: lax/comparisons.py (re-exported here)
from fungrad.lax.comparisons import *  # noqa: E402,F401,F403



# selection, conversions and constants: lax/selection.py (re-exported here)
from fungrad.lax.selection import *  # noqa: E402,F401,F403
