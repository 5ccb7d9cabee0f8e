"""``reduce_sum`` over the leading axes of an array with a narrow remainder
(NumPy only).

NumPy sums ``x`` of shape ``(25088, 16)`` over axis 0 row by row, each step
a 16-element add: 0.6 ms for a convolution's bias gradient, where a sum of
the same data viewed as ``(784, 512)`` rows takes 0.09 ms.  So a contiguous
operand is viewed as rows of about ``_WIDE`` elements (``fold`` original
rows side by side), summed over those, and the ``fold`` partial sums are
added at the end.  Only the order of the additions differs from ``np.sum``.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sum_leading", "folds"]

# a summed row of about this many elements runs at memory speed
_WIDE = 512


def folds(shape, count) -> bool:
    """True when summing ``shape`` over its first ``count`` axes gains from
    folding: a remainder narrower than ``_WIDE``, at least two folded rows."""
    width = math.prod(shape[count:])
    return 0 < count < len(shape) and 0 < width < _WIDE // 2 and \
        math.prod(shape[:count]) >= 2 * (_WIDE // width)


def sum_leading(x, *, count):
    """``np.sum(x, axis=tuple(range(count)), dtype=x.dtype)``, folding narrow
    rows into wide ones when ``x`` is C-contiguous (module docstring)."""
    x = np.asarray(x)
    axes = tuple(range(count))
    if not (x.flags.c_contiguous and folds(x.shape, count)):
        return np.sum(x, axis=axes, dtype=x.dtype)
    width = math.prod(x.shape[count:])
    rows = math.prod(x.shape[:count])
    fold = _WIDE // width
    flat = x.reshape(rows, width)
    whole = rows // fold * fold
    partial = flat[:whole].reshape(whole // fold, fold * width).sum(axis=0, dtype=x.dtype)
    total = partial.reshape(fold, width).sum(axis=0, dtype=x.dtype)
    if whole < rows:
        total += flat[whole:].sum(axis=0, dtype=x.dtype)
    return total.reshape(x.shape[count:])
