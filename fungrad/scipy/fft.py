"""``fungrad.scipy.fft``: discrete cosine transforms (``jax.scipy.fft``).

``dct``/``idct`` of types 2 and 3 (JAX supports only type 2; type 3 is its
transpose and costs nothing extra) and their n-d versions, with SciPy's
definitions, built on one complex FFT of length N (Makhoul's algorithm):

* DCT-II, unnormalised: ``y[k] = 2 sum_n x[n] cos(pi k (2n + 1) / 2N)``.
  Reorder ``v = [x0, x2, x4, ..., x5, x3, x1]`` (even entries, then odd ones
  reversed); then ``y[k] = 2 Re(exp(-i pi k / 2N) fft(v)[k])``.
* Its inverse: ``V[k] = exp(i pi k / 2N) (y[k] - i y[N-k]) / 2`` (``y[N] = 0``),
  ``v = Re(ifft(V))`` and undo the reordering.
* DCT-III (unnormalised) is ``2N`` times that inverse.

``norm``: None/"backward" (the inverse carries 1/2N), "ortho" (orthonormal:
``y[0]`` scaled by ``sqrt(1/4N)``, the rest by ``sqrt(1/2N)``; type 3 is then
its inverse) or "forward" (the forward transform carries 1/2N).  Complex input
is transformed as real and imaginary parts.  Integer input becomes float64.
"""
from __future__ import annotations

import math

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
from fungrad.core import get_aval
import fungrad.numpy as fnp
from fungrad.numpy import fft as _fft
from fungrad.scipy.special import _promote_inexact

__all__ = ["dct", "idct", "dctn", "idctn"]

_NORMS = (None, "backward", "ortho", "forward")


# --- the two kernels along the last axis ------------------------------------------------

def _even_odd_order(n):
    """Indices ``[0, 2, 4, ..., 5, 3, 1]`` of length ``n``."""
    odd = np.arange(1, n, 2)[::-1]
    return np.concatenate([np.arange(0, n, 2), odd]).astype(np.int64)


def _complex(x):
    return np.result_type(get_aval(x).dtype, np.complex64)


def _dct2_raw(x):
    """Unnormalised DCT-II of the last axis of real ``x``."""
    n = get_aval(x).shape[-1]
    v = fnp.take(x, _even_odd_order(n), axis=-1)
    twiddle = np.exp(-1j * np.pi * np.arange(n) / (2 * n)).astype(_complex(x))
    return 2.0 * fnp.real(_fft.fft(v) * twiddle)


def _dct2_inverse_raw(y):
    """Inverse of ``_dct2_raw`` along the last axis of real ``y``."""
    n = get_aval(y).shape[-1]
    shifted = fnp.concatenate([fnp.zeros_like(y[..., :1]), fnp.flip(y[..., 1:], axis=-1)],
                              axis=-1)
    twiddle = (np.exp(1j * np.pi * np.arange(n) / (2 * n)) / 2.0).astype(_complex(y))
    v = fnp.real(_fft.ifft((y - 1j * shifted) * twiddle))
    return fnp.take(v, np.argsort(_even_odd_order(n)), axis=-1)


def _ortho_scale(n, x):
    s = np.full(n, math.sqrt(1.0 / (2 * n)))
    s[0] = math.sqrt(1.0 / (4 * n))
    return s.astype(get_aval(x).dtype)


def _kernel(x, kind, norm):
    """One transform along the last axis: ``kind`` is (type, inverse)."""
    n = get_aval(x).shape[-1]
    dct_type, inverse = kind
    forward_dct2 = (dct_type == 2) != inverse   # dct type 2 / idct type 3
    if forward_dct2:
        y = _dct2_raw(x)
        if norm == "ortho":
            return y * _ortho_scale(n, x)
        scaled = (norm == "forward") if dct_type == 2 else (norm in (None, "backward"))
        return y / (2.0 * n) if scaled else y
    if norm == "ortho":
        return _dct2_inverse_raw(x / _ortho_scale(n, x))
    unscaled = (norm in (None, "backward")) if dct_type == 2 else (norm == "forward")
    return _dct2_inverse_raw(x) if unscaled else _dct2_inverse_raw(x) * (2.0 * n)


# --- argument handling -------------------------------------------------------------------

def _check(name, dct_type, norm):
    if dct_type not in (2, 3):
        raise NotImplementedError(f"{name}: only DCT types 2 and 3 are supported, got "
                                  f"type={dct_type!r}")
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm must be one of {_NORMS}, got {norm!r}")


def _along(x, axis, n, fn):
    """Apply ``fn`` (last-axis transform) along ``axis`` after cropping/zero-padding
    it to ``n``; complex input as real and imaginary parts."""
    shape = get_aval(x).shape
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of bounds for an array of shape {shape}")
    x = fnp.moveaxis(x, axis, -1)
    m = shape[axis]
    if n is not None:
        n = int(n)
        if n < 1:
            raise ValueError(f"invalid number of data points ({n}); n must be >= 1")
        x = x[..., :n] if n <= m else fnp.pad(
            x, [(0, 0)] * (len(shape) - 1) + [(0, n - m)])
    elif m == 0:
        raise ValueError(f"invalid number of data points (0) along axis {axis} of shape "
                         f"{shape}")
    if dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        out = fn(fnp.real(x)) + 1j * fn(fnp.imag(x))
    else:
        out = fn(x)
    return fnp.moveaxis(out, -1, axis)


def _one(name, x, dct_type, n, axis, norm, inverse):
    _check(name, dct_type, norm)
    (x,) = _promote_inexact(x)
    return _along(x, axis, n, lambda v: _kernel(v, (dct_type, inverse), norm))


def _many(name, x, dct_type, s, axes, norm, inverse):
    _check(name, dct_type, norm)
    (x,) = _promote_inexact(x)
    ndim = get_aval(x).ndim
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(np.atleast_1d(axes).tolist())
    s = (None,) * len(axes) if s is None else tuple(np.atleast_1d(s).tolist())
    if len(s) != len(axes):
        raise ValueError(f"{name}: s={s} and axes={axes} must have the same length")
    for a, n in zip(axes, s):
        x = _along(x, a, n, lambda v: _kernel(v, (dct_type, inverse), norm))
    return x


# --- public functions ---------------------------------------------------------------------

def dct(x, type=2, n=None, axis=-1, norm=None):
    """Discrete cosine transform along ``axis`` (``jax.scipy.fft.dct``)."""
    return _one("dct", x, type, n, axis, norm, inverse=False)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """Inverse of ``dct`` of the same ``type`` and ``norm`` (``jax.scipy.fft.idct``)."""
    return _one("idct", x, type, n, axis, norm, inverse=True)


def dctn(x, type=2, s=None, axes=None, norm=None):
    """``dct`` over several ``axes`` (default all) with lengths ``s``."""
    return _many("dctn", x, type, s, axes, norm, inverse=False)


def idctn(x, type=2, s=None, axes=None, norm=None):
    """``idct`` over several ``axes`` (default all) with lengths ``s``."""
    return _many("idctn", x, type, s, axes, norm, inverse=True)
