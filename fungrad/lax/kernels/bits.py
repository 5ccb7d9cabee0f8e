"""Bit-level kernels (NumPy only): ``population_count``, ``clz`` and
``reduce_precision``, each on the bit pattern of its operand.

Integers are read as their two's-complement bit pattern (``-1`` of int32 has
32 set bits and no leading zeros), as XLA does; NumPy's ``bitwise_count``
counts the bits of the absolute value instead, so the kernels view signed
integers as the unsigned type of the same width first.
"""
from __future__ import annotations

import numpy as np


def _unsigned_view(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def population_count(x):
    """The number of set bits of each element, in ``x``'s dtype."""
    x = np.asarray(x)
    return np.bitwise_count(_unsigned_view(x)).astype(x.dtype)


def clz(x):
    """The number of leading zero bits of each element, in ``x``'s dtype (the bit
    width for 0): a binary search over halves of the word, vectorised."""
    x = np.asarray(x)
    y = _unsigned_view(x)
    bits = 8 * x.dtype.itemsize
    count = np.zeros(x.shape, np.int64)
    step = bits // 2
    while step >= 1:
        top_clear = (y >> (bits - step)) == 0      # the top `step` bits are all zero
        count += top_clear * step
        y = np.where(top_clear, y << step, y)
        step //= 2
    count += (y >> (bits - 1)) == 0                 # y == 0: every bit was clear
    return count.astype(x.dtype)


def reduce_precision(x, *, exponent_bits, mantissa_bits):
    """``x`` rounded to a float format with ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits, kept in ``x``'s dtype (XLA's
    ReducePrecision): the mantissa rounds to nearest, ties to even; exponents
    beyond the format's range overflow to infinity and below it flush to (signed)
    zero; NaN stays NaN while the format keeps a mantissa bit."""
    x = np.asarray(x)
    info = np.finfo(x.dtype)
    nmant, nexp, width = info.nmant, info.nexp, 8 * x.dtype.itemsize
    udt = np.dtype(f"u{x.dtype.itemsize}")
    one = udt.type(1)
    bits = x.view(udt).copy()
    if mantissa_bits < nmant:
        drop = udt.type(nmant - mantissa_bits)
        last_kept = one << drop
        bias = (last_kept >> one) - one + ((bits & last_kept) >> drop)
        bits = (bits + bias) & ~(last_kept - one)
    if exponent_bits < nexp:
        sign = bits & (one << udt.type(width - 1))
        exp_mask = ((one << udt.type(nexp)) - one) << udt.type(nmant)
        exp_bias = (1 << (nexp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > udt.type((exp_bias + reduced_bias) << nmant)
        underflow = exponent <= udt.type((exp_bias - reduced_bias) << nmant)
        bits = np.where(overflow, sign | exp_mask, np.where(underflow, sign, bits))
    out = np.asarray(bits, udt).view(x.dtype)
    if mantissa_bits > 0:
        out = np.where(np.isnan(x), x, out)
    return out.reshape(x.shape)
