"""Bit-level kernels (NumPy only): ``population_count``, ``clz``, ``mulhi`` and
``reduce_precision``, each on the bit pattern of its operands.

Integers are read as their two's-complement bit pattern (``-1`` of int32 has
32 set bits and no leading zeros), as XLA does; NumPy's ``bitwise_count``
counts the bits of the absolute value instead, so the kernels view signed
integers as the unsigned type of the same width first.
"""
from __future__ import annotations

import numpy as np

__all__ = ["population_count", "clz", "mulhi", "reduce_precision"]


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


def mulhi(x, y):
    """The high half of the double-width product of integers ``x`` and ``y``
    (two's complement for signed ones), in their dtype."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    dtype, width = x.dtype, 8 * x.dtype.itemsize
    signed = dtype.kind == "i"
    with np.errstate(over="ignore"):
        if width <= 32:
            wide = np.int64 if signed else np.uint64
            return ((x.astype(wide) * y.astype(wide)) >> width).astype(dtype)
        ux, uy = x.view(np.uint64), y.view(np.uint64)
        low, half = np.uint64(0xFFFFFFFF), np.uint64(32)
        x0, x1, y0, y1 = ux & low, ux >> half, uy & low, uy >> half
        carry = x1 * y0 + ((x0 * y0) >> half)
        middle = x0 * y1 + (carry & low)
        high = x1 * y1 + (carry >> half) + (middle >> half)
        if signed:      # the signed product differs by -y * 2^64 per negative x, and back
            high = high - np.where(x < 0, uy, np.uint64(0)) - np.where(y < 0, ux, np.uint64(0))
        return high.view(dtype)
