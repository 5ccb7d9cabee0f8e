"""Comparisons, logic and bit operations: ``eq``, ``lt``, ..., the bitwise
operators and shifts, ``population_count``, ``clz``, ``mulhi``, ``gcd`` and
``reduce_precision``.  Piecewise constant, so their derivative is zero (or,
for ``reduce_precision``, the identity).  Split from ``elementwise.py``,
whose rule factories they use; ``elementwise`` re-exports every name here.
"""
from __future__ import annotations

import builtins

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, is_floating
from fungrad.core import Tracer, get_aval
from fungrad.interpreters.ad import defjvp_zero, deflinear
from fungrad.interpreters.lowering import Source
from fungrad.lax.elementwise import (ANY, FLOAT, INT, INT_OR_BOOL, ORDERED, _bool_out, _nary,
                                     _operand, _operands, _unary)
from fungrad.lax import integer_numba
from fungrad.lax.kernels import bits as bits_kernels

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "bitwise_not", "bitwise_and", "bitwise_or",
           "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
           "population_count", "clz", "mulhi", "gcd", "reduce_precision",
           "eq_p", "ne_p", "lt_p", "le_p", "gt_p", "ge_p", "not_p", "and_p", "or_p", "xor_p",
           "shift_left_p", "shift_right_arithmetic_p", "shift_right_logical_p",
           "population_count_p", "clz_p", "mulhi_p", "gcd_p", "reduce_precision_p"]


def _comparison(name, np_name, kind=ANY):
    p = _nary(name, getattr(np, np_name), kind, _bool_out)
    defjvp_zero(p)
    return p


eq_p = _comparison("eq", "equal")
ne_p = _comparison("ne", "not_equal")
lt_p = _comparison("lt", "less", ORDERED)
le_p = _comparison("le", "less_equal", ORDERED)
gt_p = _comparison("gt", "greater", ORDERED)
ge_p = _comparison("ge", "greater_equal", ORDERED)

not_p = _unary("not", np.invert, INT_OR_BOOL)
and_p = _nary("and", np.bitwise_and, INT_OR_BOOL)
or_p = _nary("or", np.bitwise_or, INT_OR_BOOL)
xor_p = _nary("xor", np.bitwise_xor, INT_OR_BOOL)
for _p in (eq_p, ne_p, and_p, or_p, xor_p):
    _p.commutative = True


def _unsigned_view_dtype(dtype):
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _shift_right_logical_impl(x, y):
    # shift the bit pattern as unsigned: zeros come in from the left
    x, y = np.asarray(x), np.asarray(y)
    unsigned = _unsigned_view_dtype(x.dtype)
    return np.right_shift(x.view(unsigned), y.astype(unsigned)).astype(unsigned).view(x.dtype)


shift_left_p = _nary("shift_left", np.left_shift, INT)
shift_right_arithmetic_p = _nary("shift_right_arithmetic", np.right_shift, INT)
shift_right_logical_p = _nary("shift_right_logical", _shift_right_logical_impl, INT,
                              lowering=lambda a: Source(
    f"(lambda x, y, u: np.right_shift(x.view(u), y.astype(u)).astype(u).view(x.dtype))"
    f"(np.asarray({a[0]}), np.asarray({a[1]}), "
    f"np.dtype('u%d' % np.asarray({a[0]}).dtype.itemsize))"))
for _p in (not_p, and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p,
           shift_right_logical_p):
    defjvp_zero(_p)
for _p, _rule in ((shift_left_p, integer_numba.shift_left_numba),
                 (shift_right_arithmetic_p, integer_numba.shift_right_arithmetic_numba),
                 (shift_right_logical_p, integer_numba.shift_right_logical_numba)):
    _p.numba_lowering, _p.numba_elementwise = _rule, True    # (NumPy's out-of-range shifts)


# population_count, clz: of the two's-complement bit pattern, in the operand's dtype
population_count_p = _unary("population_count", bits_kernels.population_count, INT)
clz_p = _unary("clz", bits_kernels.clz, INT)
defjvp_zero(population_count_p)
population_count_p.numba_block = integer_numba.population_count_numba
defjvp_zero(clz_p)
# mulhi: the high half of the double-width integer product
mulhi_p = _nary("mulhi", bits_kernels.mulhi, INT)
defjvp_zero(mulhi_p)

# reduce_precision: rounding to a narrower float format, kept in the operand's
# dtype.  As JAX, it is treated as linear (the tangent and the cotangent are
# rounded the same way), so a straight-through derivative of any order.
reduce_precision_p = _unary("reduce_precision", bits_kernels.reduce_precision, FLOAT)
deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])


# gcd is not in JAX's lax (jax.numpy.gcd loops with while_loop); one primitive
# is simpler and faster here.  Not exported: fungrad.numpy.gcd/lcm use it.
gcd_p = _nary("gcd", np.gcd, INT)
defjvp_zero(gcd_p)


def gcd(x, y):
    """Greatest common divisor of |x| and |y| (integers)."""
    return gcd_p.bind(*_operands(x, y))


def eq(x, y):
    return eq_p.bind(*_operands(x, y))


def ne(x, y):
    return ne_p.bind(*_operands(x, y))


def lt(x, y):
    return lt_p.bind(*_operands(x, y))


def le(x, y):
    return le_p.bind(*_operands(x, y))


def gt(x, y):
    return gt_p.bind(*_operands(x, y))


def ge(x, y):
    return ge_p.bind(*_operands(x, y))


def bitwise_not(x):
    """Logical not of booleans, bitwise not (``~x``) of integers."""
    return not_p.bind(_operand(x))


def bitwise_and(x, y):
    return and_p.bind(*_operands(x, y))


def bitwise_or(x, y):
    return or_p.bind(*_operands(x, y))


def bitwise_xor(x, y):
    return xor_p.bind(*_operands(x, y))


def shift_left(x, y):
    """``x << y``; shifts of the bit width or more give 0 (as XLA)."""
    return shift_left_p.bind(*_operands(x, y))


def shift_right_arithmetic(x, y):
    """``x >> y`` filling with the sign bit."""
    return shift_right_arithmetic_p.bind(*_operands(x, y))


def shift_right_logical(x, y):
    """``x >> y`` filling with zeros (the bit pattern read as unsigned)."""
    return shift_right_logical_p.bind(*_operands(x, y))


def population_count(x):
    """The number of set bits of each element (integers, two's complement)."""
    return population_count_p.bind(_operand(x))


def clz(x):
    """The number of leading zero bits of each element (integers; the bit width
    for 0)."""
    return clz_p.bind(_operand(x))


def mulhi(x, y, /):
    """The high half of the double-width product ``x * y`` of integers (two's
    complement), in their dtype (``jax.lax.mulhi``)."""
    return mulhi_p.bind(*_operands(x, y))


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """``operand`` rounded to a float format of ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits (round to nearest even; overflow to inf,
    underflow to zero, no subnormals), in ``operand``'s dtype (XLA's
    ReducePrecision).  ``reduce_precision(x, 8, 23)`` of float64 is float32
    rounding, ``(5, 10)`` float16's, ``(8, 7)`` bfloat16's."""
    operand = _operand(operand)
    info = dtype_finfo(get_aval(operand).dtype) if is_floating(get_aval(operand).dtype) else None
    bits = []
    for what, value, most in (("exponent_bits", exponent_bits, info and info.nexp),
                              ("mantissa_bits", mantissa_bits, info and info.nmant)):
        if isinstance(value, Tracer) or not isinstance(value, (int, np.integer)) or value < (
                1 if what == "exponent_bits" else 0):
            raise TypeError(f"reduce_precision: {what} must be a static "
                            f"{'positive' if what == 'exponent_bits' else 'non-negative'} "
                            f"integer, got {value!r}")
        bits.append(builtins.min(int(value), most) if most else int(value))
    return reduce_precision_p.bind(operand, exponent_bits=bits[0], mantissa_bits=bits[1])
