"""Float to integer conversion as XLA does it (NumPy only).

NumPy's ``astype`` leaves NaN, infinities and values outside the integer
type's range undefined (on x86 they all become the most negative integer, or
wrap around for small types); XLA's ``convert_element_type`` truncates toward
zero and saturates: NaN is 0, a value above the range is the largest integer
(``inf`` too), below it the smallest (``-1.0`` is 0 for unsigned types).
``jax.numpy``'s ``astype`` and every conversion of ``lax`` follow XLA, so
fungrad's do too.
"""
from __future__ import annotations

import numpy as np

__all__ = ["float_to_int"]


def float_to_int(x, *, new_dtype):
    """``x`` (real floats) as the integer ``new_dtype``: truncated toward zero,
    saturated at the type's range, NaN as 0."""
    x = np.asarray(x)
    dtype = np.dtype(new_dtype)
    info = np.iinfo(dtype)
    signed = info.min < 0
    # the range's ends as exact powers of two (the largest integer itself may
    # round up to one in x's type, which is already out of range)
    limit = np.asarray(2.0 ** (info.bits - 1 if signed else info.bits), x.dtype)
    above = x >= limit
    below = x < -limit if signed else x < 0      # (unsigned: truncation or saturation: 0)
    outside = above | below | np.isnan(x)
    with np.errstate(invalid="ignore", over="ignore"):
        if not outside.any():
            return x.astype(dtype)
        out = np.where(outside, np.zeros((), x.dtype), x).astype(dtype)
    out[above] = info.max
    out[below] = info.min
    return out
