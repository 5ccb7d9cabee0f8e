"""Window functions of ``jax.numpy``: ``bartlett``, ``blackman``, ``hamming``,
``hanning`` and ``kaiser`` (float64 arrays of ``M`` points, as NumPy), and
``i0``, the modified Bessel function the Kaiser window is made of.
"""
from __future__ import annotations

import math

import numpy as np
from fungrad._dtype_classes import is_floating

from fungrad import lax
from fungrad.numpy._dtypes import promote
from fungrad.numpy._util import _builtin_max, _fnp, _static_int

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "i0"]


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


# I0(x) = sum_k (x²/4)^k / (k!)²: on |x| < 1 fourteen terms are exact to rounding
_I0_SERIES = tuple(1 / math.factorial(k) ** 2 for k in range(13, -1, -1))


def i0(x):
    """The modified Bessel function of the first kind of order 0 (``numpy.i0``),
    real inputs.  ``exp(|x|) i0e(|x|)``, and its power series in x² on |x| < 1,
    so that every derivative is exact at 0 too (``abs``'s and ``sign``'s
    conventions at 0 would spoil them, as JAX's custom rule avoids)."""
    fnp = _fnp()
    (x,) = promote("i0", x, to_float=True)
    if not is_floating(x.dtype):
        raise TypeError(f"i0: real floating-point input only (as JAX), got {x.dtype.name}")
    magnitude = lax.abs(x)
    near = magnitude < 1
    small = fnp.where(near, x, np.zeros((), x.dtype))     # the series only sees |x| < 1
    quarter_square = small * small * 0.25
    series = np.zeros((), x.dtype)
    for c in _I0_SERIES:
        series = series * quarter_square + c
    far = fnp.where(near, np.ones((), x.dtype), magnitude)
    return fnp.where(near, series, lax.mul(lax.exp(far), lax.bessel_i0e(far)))


def kaiser(M, beta):
    """The Kaiser window of ``M`` points and shape ``beta`` (``numpy.kaiser``);
    differentiable in ``beta``."""
    fnp = _fnp()
    M = _static_int(M, "kaiser's M")
    if M <= 1:
        return fnp.ones((_builtin_max(M, 0),))
    beta = fnp.asarray(beta, dtype=np.float64)
    alpha = (M - 1) / 2
    shape = np.sqrt(1 - ((np.arange(M) - alpha) / alpha) ** 2)   # a constant: no sqrt'(0)
    return i0(beta * shape) / i0(beta)
