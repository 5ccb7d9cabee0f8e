"""Bits and ulps: ``packbits``/``unpackbits`` (booleans <-> uint8 bytes),
``bitwise_count`` (set bits of |x|, as NumPy) and ``spacing`` (the distance to
the next float away from zero).  NumPy's semantics; none is differentiable
(``spacing``'s derivative is zero, as JAX's)."""
from __future__ import annotations

import operator

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import lax
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.numpy._util import _fnp

__all__ = ["packbits", "unpackbits", "bitwise_count", "spacing"]

_BITORDERS = ("big", "little")


def _bit_weights(bitorder):
    if bitorder not in _BITORDERS:
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = np.left_shift(np.uint8(1), np.arange(8, dtype=np.uint8))
    return weights[::-1].copy() if bitorder == "big" else weights


def _axis_to_end(fnp, a, axis):
    """``a`` flattened (axis None) or with ``axis`` moved last, and the axis used."""
    if axis is None:
        return fnp.ravel(a), 0
    axis = operator.index(axis)
    if not -a.ndim <= axis < a.ndim:
        raise np.exceptions.AxisError(axis, a.ndim)
    axis %= a.ndim
    return fnp.moveaxis(a, axis, -1), axis


def packbits(a, /, axis=None, bitorder="big"):
    """Nonzero elements of ``a`` (integers or booleans) as bits of uint8 bytes,
    eight per byte along ``axis`` (the flattened array if None), zero-padded
    (``numpy.packbits``)."""
    fnp = _fnp()
    a = fnp.asarray(asarray_operand(a))
    if dtype_kind(a.dtype) not in "biu":
        raise TypeError(f"packbits: expected an integer or boolean array, got {a.dtype.name}")
    weights = _bit_weights(bitorder)
    moved, axis = _axis_to_end(fnp, (a != 0).astype(np.uint8), axis)
    pad = -moved.shape[-1] % 8
    if pad:
        moved = fnp.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(0, pad)])
    groups = fnp.reshape(moved, moved.shape[:-1] + (moved.shape[-1] // 8, 8))
    packed = fnp.sum(groups * weights, axis=-1, dtype=np.uint8)
    return fnp.moveaxis(packed, -1, axis)


def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """The bits of uint8 ``a`` as 0/1 uint8 values, eight per byte along ``axis``
    (the flattened array if None); ``count`` keeps that many (negative: drops
    from the end; more than there are: zero-padded) (``numpy.unpackbits``)."""
    fnp = _fnp()
    a = fnp.asarray(asarray_operand(a))
    if a.dtype != np.uint8:
        raise TypeError(f"unpackbits: expected an array of uint8, got {a.dtype.name}")
    weights = _bit_weights(bitorder)
    moved, axis = _axis_to_end(fnp, a, axis)
    bits = ((moved[..., None] & weights) != 0).astype(np.uint8)
    bits = fnp.reshape(bits, bits.shape[:-2] + (bits.shape[-2] * 8,))
    if count is not None:
        count = operator.index(count)
        n = bits.shape[-1]
        keep = count if count >= 0 else max(n + count, 0)
        if keep > n:
            bits = fnp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, keep - n)])
        else:
            bits = bits[..., :keep]
    return fnp.moveaxis(bits, -1, axis)


def bitwise_count(x, /):
    """The number of set bits of ``|x|`` (uint8; ``numpy.bitwise_count``)."""
    fnp = _fnp()
    x = fnp.asarray(asarray_operand(x))
    if dtype_kind(x.dtype) not in "biu":
        raise TypeError(f"bitwise_count: expected an integer or boolean array, got "
                        f"{x.dtype.name}")
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    magnitude = fnp.abs(x) if dtype_kind(x.dtype) == "i" else x
    return lax.population_count(magnitude).astype(np.uint8)


def spacing(x, /):
    """The distance from ``x`` to the next representable number away from zero
    (``numpy.spacing``; the smallest subnormal for 0 and -0, NaN for inf and NaN)."""
    fnp = _fnp()
    (x,) = promote("spacing", x, to_float=True)
    if dtype_kind(x.dtype) == "c":
        raise TypeError("spacing: complex numbers have no spacing (as in NumPy)")
    x = lax.stop_gradient(x)
    infinite = fnp.isinf(x)
    finite_x = fnp.where(infinite, np.zeros((), x.dtype), x)     # no inf - inf below
    away = fnp.where(finite_x < 0, np.asarray(-np.inf, x.dtype), np.asarray(np.inf, x.dtype))
    return fnp.where(infinite, np.asarray(np.nan, x.dtype),
                     lax.nextafter(finite_x, away) - finite_x)
