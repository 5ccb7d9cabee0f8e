"""Window functions of ``jax.numpy``: ``bartlett``, ``blackman``, ``hamming``,
``hanning`` (float64 arrays of ``M`` points, as NumPy).
"""
from __future__ import annotations

import numpy as np

from fungrad.numpy._util import _builtin_max, _fnp, _static_int

__all__ = ["bartlett", "blackman", "hamming", "hanning"]


def _window_points(name, M):
    M = _static_int(M, f"{name}'s M")
    return M, np.arange(1 - M, M, 2, dtype=np.float64)


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points."""
    fnp = _fnp()
    M, n = _window_points("bartlett", M)
    if M <= 1:
        return fnp.ones((_builtin_max(M, 0),))
    return fnp.asarray(np.where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def _cosine_window(name, M, coefficients):
    fnp = _fnp()
    M, n = _window_points(name, M)
    if M <= 1:
        return fnp.ones((_builtin_max(M, 0),))
    out = sum(c * fnp.cos(k * np.pi * n / (M - 1)) for k, c in enumerate(coefficients))
    return out


def blackman(M):
    """The Blackman window of ``M`` points."""
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M):
    """The Hamming window of ``M`` points."""
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M):
    """The Hann window of ``M`` points."""
    return _cosine_window("hanning", M, (0.5, 0.5))
