"""``fungrad.scipy.signal``: the ``jax.scipy.signal`` convolutions and ``detrend``.

Everything is composed from ``lax.conv_general_dilated``, ``fungrad.numpy``
and ``fungrad.numpy.fft``, so it is differentiable, vmappable and jittable.

Every mode is a slice of the full N-d convolution
``(a * v)[j] = sum_n a[n] v[j - n]`` (length ``M + N - 1`` per axis):

=======  =========================  ========================================
mode     length per axis            start in the full result
=======  =========================  ========================================
full     M + N - 1                  0
same     M (the size of ``in1``)    (N - 1) // 2
valid    max(M, N) - min(M, N) + 1  min(M, N) - 1 (one input must be at
                                    least as large as the other on every axis)
=======  =========================  ========================================

The direct method computes exactly that slice with one convolution whose
padding (negative: cropping) selects it; the FFT method computes the full
result with ``rfftn``/``fftn`` and slices it. Integer inputs become float64
(JAX promotes to its default float). ``correlate(a, v)`` is
``convolve(a, flip(conj(v)))`` as in SciPy; ``correlate2d`` keeps SciPy's own
centring for ``'same'`` (start ``N // 2``) and, for ``'valid'`` with a larger
``in2``, SciPy's conjugated result.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
from fungrad import lax
from fungrad.core import get_aval
import fungrad.numpy as fnp
from fungrad.numpy import fft as _fft
from fungrad.scipy.special import _promote_inexact

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend"]

_MODES = ("full", "same", "valid")
_METHODS = ("auto", "direct", "fft")


# --- argument checks ------------------------------------------------------------------

def _check_mode(name, mode):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")


def _inputs(name, in1, in2, ndim=None):
    """Both inputs in one inexact dtype, with matching rank and no empty axes."""
    in1, in2 = _promote_inexact(in1, in2)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if len(s1) != len(s2):
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, "
                         f"got shapes {s1} and {s2}; add axes of size 1 with "
                         "fungrad.numpy.expand_dims")
    if ndim is not None and len(s1) != ndim:
        raise ValueError(f"{name}: inputs must be {ndim}-dimensional, got shapes {s1} and "
                         f"{s2}; use convolve/correlate for other ranks")
    if 0 in s1 or 0 in s2:
        raise ValueError(f"{name}: zero-size arrays are not supported, got shapes {s1} "
                         f"and {s2}")
    return in1, in2


def _valid_swap(name, s1, s2):
    """True when ``in2`` is the larger input on every axis ('valid' mode)."""
    if all(m >= n for m, n in zip(s1, s2)):
        return False
    if all(m <= n for m, n in zip(s1, s2)):
        return True
    raise ValueError(f"{name}: for mode='valid' one input must be at least as large as "
                     f"the other on every axis, got shapes {s1} and {s2}; use "
                     "mode='full' or 'same'")


def _mode_window(name, mode, s1, s2):
    """(starts, lengths) of the slice of the full convolution that ``mode`` keeps."""
    if mode == "full":
        return [0] * len(s1), [m + n - 1 for m, n in zip(s1, s2)]
    if mode == "same":
        return [(n - 1) // 2 for n in s2], list(s1)
    _valid_swap(name, s1, s2)
    return ([min(m, n) - 1 for m, n in zip(s1, s2)],
            [max(m, n) - min(m, n) + 1 for m, n in zip(s1, s2)])


# --- the direct method: one convolution that computes only the wanted slice ----------

def _conv_window(in1, in2, starts, lengths):
    """``full_convolution(in1, in2)[start:start+length, ...]`` per axis."""
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if not s1:
        return in1 * in2
    padding = []
    for m, n, start, length in zip(s1, s2, starts, lengths):
        lo = n - 1 - start
        padding.append((lo, length - 1 + n - m - lo))
    kernel = lax.rev(in2, tuple(range(len(s2))))
    out = lax.conv_general_dilated(lax.reshape(in1, (1, 1) + s1),
                                   lax.reshape(kernel, (1, 1) + s2),
                                   (1,) * len(s1), tuple(padding))
    return lax.reshape(out, tuple(lengths))


def _slice(x, axes, starts, lengths):
    shape = get_aval(x).shape
    lo, hi = [0] * len(shape), list(shape)
    for a, s, n in zip(axes, starts, lengths):
        lo[a], hi[a] = s, s + n
    return lax.slice(x, lo, hi)


# --- public functions -----------------------------------------------------------------

def convolve(in1, in2, mode="full", method="auto", precision=None):
    """N-d convolution of ``in1`` and ``in2`` (``jax.scipy.signal.convolve``).

    ``method``: 'auto' and 'direct' use ``lax.conv_general_dilated``, 'fft'
    uses ``fftconvolve``."""
    _check_mode("convolve", mode)
    if method not in _METHODS:
        raise ValueError(f"convolve: method must be one of {_METHODS}, got {method!r}")
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    in1, in2 = _inputs("convolve", in1, in2)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    return _conv_window(in1, in2, *_mode_window("convolve", mode, s1, s2))


def _flip_conj(x):
    if dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        x = fnp.conj(x)
    return fnp.flip(x)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """N-d cross-correlation ``z[k] = sum_n in1[n + k] conj(in2[n])``, returned as
    SciPy does: ``convolve(in1, flip(conj(in2)), mode, method)``."""
    _check_mode("correlate", mode)
    in1, in2 = _inputs("correlate", in1, in2)
    return convolve(in1, _flip_conj(in2), mode, method, precision)


def fftconvolve(in1, in2, mode="full", axes=None):
    """N-d convolution by FFT (``jax.scipy.signal.fftconvolve``) over ``axes``
    (default all); the other axes must match or be 1 (they broadcast)."""
    _check_mode("fftconvolve", mode)
    in1, in2 = _inputs("fftconvolve", in1, in2)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    ndim = len(s1)
    axes = tuple(range(ndim)) if axes is None else tuple(np.atleast_1d(axes).tolist())
    if any(not -ndim <= a < ndim for a in axes):
        raise ValueError(f"fftconvolve: axes {axes} out of range for {ndim}-d inputs")
    axes = tuple(sorted({int(a) % ndim for a in axes}))
    for a in range(ndim):
        if a not in axes and s1[a] != s2[a] and 1 not in (s1[a], s2[a]):
            raise ValueError(f"fftconvolve: axis {a} is not convolved, so its sizes must "
                             f"match or be 1, got shapes {s1} and {s2}")
    if not axes:
        return in1 * in2
    sizes = tuple(s1[a] + s2[a] - 1 for a in axes)
    if dtype_issubdtype(get_aval(in1).dtype, np.complexfloating):
        spectrum = _fft.fftn(in1, sizes, axes) * _fft.fftn(in2, sizes, axes)
        full = _fft.ifftn(spectrum, sizes, axes)
    else:
        spectrum = _fft.rfftn(in1, sizes, axes) * _fft.rfftn(in2, sizes, axes)
        full = _fft.irfftn(spectrum, sizes, axes)
    starts, lengths = _mode_window("fftconvolve", mode, [s1[a] for a in axes],
                                   [s2[a] for a in axes])
    return _slice(full, axes, starts, lengths)


_BOUNDARY_PAD = {"wrap": "wrap", "circular": "wrap", "symm": "symmetric",
                 "symmetric": "symmetric"}


def _pad_boundary(name, in1, n_shape, boundary, fillvalue):
    """``in1`` extended by ``N - 1`` on both sides of each axis by the boundary rule."""
    width = [(n - 1, n - 1) for n in n_shape]
    if boundary == "fill":
        return fnp.pad(in1, width, mode="constant", constant_values=fillvalue)
    if boundary in _BOUNDARY_PAD:
        return fnp.pad(in1, width, mode=_BOUNDARY_PAD[boundary])
    raise ValueError(f"{name}: boundary must be 'fill', 'wrap' or 'symm', got {boundary!r}")


def _conv2d_window(name, in1, in2, mode, boundary, fillvalue, same_start):
    """Slice of the full 2-d convolution under a boundary rule (see convolve2d)."""
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if mode == "valid" or (boundary == "fill" and not _is_nonzero(fillvalue)):
        if mode == "same":
            return _conv_window(in1, in2, same_start, list(s1))
        return _conv_window(in1, in2, *_mode_window(name, mode, s1, s2))
    padded = _pad_boundary(name, in1, s2, boundary, fillvalue)
    full = _conv_window(padded, in2, [n - 1 for n in s2],
                        [m + n - 1 for m, n in zip(s1, s2)])
    if mode == "full":
        return full
    return _slice(full, (0, 1), same_start, s1)


def _is_nonzero(fillvalue):
    return not (isinstance(fillvalue, (int, float, complex, np.number)) and fillvalue == 0)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-d convolution (``jax.scipy.signal.convolve2d``). ``boundary``: 'fill'
    (pad with ``fillvalue``), 'wrap' (periodic) or 'symm' (mirrored)."""
    _check_mode("convolve2d", mode)
    in1, in2 = _inputs("convolve2d", in1, in2, ndim=2)
    _pad_boundary("convolve2d", in1, (1, 1), boundary, 0)   # validates boundary
    s2 = get_aval(in2).shape
    return _conv2d_window("convolve2d", in1, in2, mode, boundary, fillvalue,
                          [(n - 1) // 2 for n in s2])


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-d cross-correlation (``jax.scipy.signal.correlate2d``) with SciPy's
    conventions: 'same' keeps rows/columns ``N // 2 ...`` of the full result,
    and 'valid' with the larger ``in2`` returns the conjugate (as SciPy)."""
    _check_mode("correlate2d", mode)
    in1, in2 = _inputs("correlate2d", in1, in2, ndim=2)
    _pad_boundary("correlate2d", in1, (1, 1), boundary, 0)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    kernel = _flip_conj(in2)
    out = _conv2d_window("correlate2d", in1, kernel, mode, boundary, fillvalue,
                         [n // 2 for n in s2])
    if (mode == "valid" and _valid_swap("correlate2d", s1, s2)
            and dtype_issubdtype(get_aval(out).dtype, np.complexfloating)):
        out = fnp.conj(out)
    return out


def _detrend_linear_last(x, bp):
    """Remove a least-squares line from each segment ``[bp[i], bp[i+1])`` of the
    last axis."""
    pieces = []
    for lo, hi in zip(bp[:-1], bp[1:]):
        seg = x[..., lo:hi]
        n = hi - lo
        if n == 1:
            pieces.append(seg - seg)
            continue
        t = np.arange(n, dtype=np.float64) - (n - 1) / 2.0
        centred = seg - fnp.mean(seg, axis=-1, keepdims=True)
        slope = fnp.sum(centred * t, axis=-1, keepdims=True) / float(np.sum(t * t))
        pieces.append(centred - slope * t)
    return fnp.concatenate(pieces, axis=-1) if len(pieces) > 1 else pieces[0]


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """Remove the mean ('constant') or a least-squares line ('linear', piecewise
    between the breakpoints ``bp``) along ``axis`` (``jax.scipy.signal.detrend``)."""
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    (x,) = _promote_inexact(data)
    shape = get_aval(x).shape
    if not shape:
        raise ValueError("detrend: data must be at least 1-dimensional, got a scalar")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"detrend: axis {axis} out of range for data of shape {shape}")
    if type in ("constant", "c"):
        return x - fnp.mean(x, axis=axis, keepdims=True)
    n = shape[axis]
    points = np.asarray(bp, dtype=np.int64).reshape(-1)
    if np.any(points > n) or np.any(points < 0):
        raise ValueError(f"detrend: breakpoints bp={bp} must lie in [0, {n}] (the length "
                         "of data along axis)")
    points = np.unique(np.concatenate([[0], points, [n]])).tolist()
    x = fnp.moveaxis(x, axis, -1)
    return fnp.moveaxis(_detrend_linear_last(x, points), -1, axis)
