"""``convolve`` and ``correlate`` of 1-d arrays with NumPy's semantics, built on
``lax.conv_general_dilated`` (one ``(1, 1, M)`` by ``(1, 1, N)`` convolution).

Both are slices of the full cross-correlation ``z[k] = sum_n a[n + k] * v[n]``,
``k = -(N-1) .. M-1``; a mode picks ``length`` entries starting at ``offset``
of z, and that slice is computed directly by the convolution's padding
(negative padding crops), never the whole of z:

=======  =========================  ===================================
mode     length                     offset (M = len(a), N = len(v))
=======  =========================  ===================================
full     M + N - 1                  0
same     max(M, N)                  (N - 1) // 2 if M >= N else M // 2
valid    max(M, N) - min(M, N) + 1  min(M, N) - 1
=======  =========================  ===================================

``correlate`` conjugates ``v`` (as NumPy).  ``convolve`` swaps its arguments
when ``v`` is longer (as NumPy; it only matters for 'same') and correlates
with the reversed ``v``.
"""
from __future__ import annotations

import numpy as np
from fungrad._dtype_classes import issubdtype as dtype_issubdtype

from fungrad import lax
from fungrad.core import get_aval
from fungrad.lax.convolution import conv_general_dilated
from fungrad.numpy._dtypes import promote
from fungrad.lax.utils import check_precision

__all__ = ["convolve", "correlate"]

_MODES = ("full", "same", "valid")


def _check(name, a, v, mode):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    a, v = promote(name, a, v)
    for arg, x in (("a", a), ("v", v)):
        shape = get_aval(x).shape
        if len(shape) != 1:
            raise ValueError(f"{name}() only supports 1-dimensional inputs, got {arg} of "
                             f"shape {shape}")
        if shape[0] == 0:
            raise ValueError(f"{name}: {arg} cannot be empty")
    return a, v


def _correlate_slice(a, v, length, offset):
    """``z[offset - (N-1) : ...]`` of length ``length`` (see the module doc)."""
    m, n = get_aval(a).shape[0], get_aval(v).shape[0]
    lo = n - 1 - offset
    hi = length + n - 1 - m - lo
    out = conv_general_dilated(lax.reshape(a, (1, 1, m)), lax.reshape(v, (1, 1, n)),
                               (1,), ((lo, hi),))
    return lax.reshape(out, (length,))


def _mode_slice(mode, m, n):
    """(length, offset) of the slice of z that ``mode`` keeps (table above)."""
    if mode == "full":
        return m + n - 1, 0
    if mode == "valid":
        return max(m, n) - min(m, n) + 1, min(m, n) - 1
    return max(m, n), ((n - 1) // 2 if m >= n else m // 2)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-d arrays (``numpy.correlate``):
    ``c[k] = sum_n a[n + k] * conj(v[n])``."""
    check_precision(precision, "fungrad.numpy.correlate")
    a, v = _check("correlate", a, v, mode)
    if dtype_issubdtype(get_aval(v).dtype, np.complexfloating):
        v = lax.conj(v)
    m, n = get_aval(a).shape[0], get_aval(v).shape[0]
    out = _correlate_slice(a, v, *_mode_slice(mode, m, n))
    return out if preferred_element_type is None else lax.convert_element_type(
        out, preferred_element_type)


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-d arrays (``numpy.convolve``):
    ``(a * v)[k] = sum_m a[m] * v[k - m]``."""
    check_precision(precision, "fungrad.numpy.convolve")
    a, v = _check("convolve", a, v, mode)
    if get_aval(v).shape[0] > get_aval(a).shape[0]:
        a, v = v, a
    m, n = get_aval(a).shape[0], get_aval(v).shape[0]
    out = _correlate_slice(a, lax.rev(v, (0,)), *_mode_slice(mode, m, n))
    return out if preferred_element_type is None else lax.convert_element_type(
        out, preferred_element_type)
