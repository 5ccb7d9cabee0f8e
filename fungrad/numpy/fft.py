"""``fungrad.numpy.fft``: the ``jax.numpy.fft`` / ``numpy.fft`` functions on
top of the one ``lax.fft`` primitive.

Each transform moves the transformed axes to the end (in the order given),
zero-pads or crops them to the requested lengths (``n`` / ``s``), calls
``lax.fft`` and moves the axes back.  ``norm`` is "backward" (default: the
inverse transforms scale by 1/N), "ortho" (both by 1/sqrt(N)) or "forward"
(the forward transforms scale by 1/N), applied as a final multiplication.
Dtypes follow NumPy 2: float32 -> complex64, float64/ints/bools -> complex128.
"""
from __future__ import annotations

import math

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
from fungrad.core import get_aval
from fungrad.lax.fft import fft as _lax_fft, _operand_for
from fungrad.lax.structural import pad, transpose
from fungrad.numpy._creation import asarray
from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._shape import roll
from fungrad.numpy._ufuncs import conjugate, multiply

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_INVERSE = {"FFT": False, "RFFT": False, "IFFT": True, "IRFFT": True}


# --- argument handling ----------------------------------------------------------

def _norm_factor(norm, n_total, inverse):
    """What to multiply the lax result by (lax's inverses already divide by N)."""
    if norm is None or norm == "backward":
        return 1.0
    if norm == "ortho":
        return math.sqrt(n_total) if inverse else 1.0 / math.sqrt(n_total)
    if norm == "forward":
        return float(n_total) if inverse else 1.0 / n_total
    raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" '
                     'or "forward".')


def _swap_direction(norm):
    """hfft/ihfft are irfft/rfft read the other way: swap the scaling side."""
    _norm_factor(norm, 1, False)   # validates
    return {None: "forward", "backward": "forward", "ortho": "ortho",
            "forward": "backward"}[norm]


def _cook_axes(name, shape, s, axes, invreal):
    """NumPy's rules for (s, axes): defaults, -1 entries, bounds."""
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(-len(s), 0))
    axes = tuple(int(a) for a in np.atleast_1d(axes))
    for a in axes:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"fft.{name}: axis {a} is out of bounds for an "
                                          f"array of dimension {ndim}")
    axes = tuple(a % ndim for a in axes)
    if s is None:
        s = [shape[a] for a in axes]
        if invreal and axes:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        s = tuple(int(n) for n in np.atleast_1d(s))
        if len(s) != len(axes):
            raise ValueError(f"fft.{name}: shape s={s} and axes={axes} have "
                             "different lengths")
        s = [shape[a] if n == -1 else n for n, a in zip(s, axes)]
    for n in s:
        if n < 1:
            raise ValueError(f"fft.{name}: Invalid number of FFT data points ({n}) "
                             "specified.")
    return tuple(s), axes


def _operand(name, a, real_input):
    x = asarray_operand(a)
    if real_input and dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        raise TypeError(f"fft.{name} takes real input, got {get_aval(x).dtype.name}; "
                        f"use fft.{name[1:]} for complex input")
    return x


# --- the core: move axes last, pad/crop, lax.fft, move back ------------------------

def _resize_trailing(x, sizes):
    """Zero-pad or crop the trailing ``len(sizes)`` axes of ``x`` to ``sizes``."""
    shape = get_aval(x).shape
    lead = len(shape) - len(sizes)
    config = tuple((0, 0, 0) for _ in range(lead)) + tuple(
        (0, n - m, 0) for n, m in zip(sizes, shape[lead:]))
    return pad(x, 0, config)


def _transform_distinct(x, fft_type, s, axes):
    """One lax.fft over distinct ``axes`` (``s``: the logical lengths)."""
    ndim = get_aval(x).ndim
    perm = tuple(i for i in range(ndim) if i not in axes) + axes
    x = transpose(x, perm)
    sizes = s[:-1] + (s[-1] // 2 + 1,) if fft_type == "IRFFT" else s
    x = _lax_fft(_resize_trailing(x, sizes), fft_type, s)
    return transpose(x, tuple(int(i) for i in np.argsort(perm)))


def _transform(x, fft_type, s, axes):
    if len(set(axes)) == len(axes):
        return _transform_distinct(x, fft_type, s, axes)
    # repeated axes (NumPy transforms them repeatedly): one axis at a time,
    # the real/half-spectrum step on the last axis (first for RFFT, last for IRFFT)
    if fft_type == "IRFFT":
        for n, a in zip(s[:-1], axes[:-1]):
            x = _transform_distinct(x, "IFFT", (n,), (a,))
        return _transform_distinct(x, "IRFFT", s[-1:], axes[-1:])
    if fft_type == "RFFT":
        x = _transform_distinct(x, "RFFT", s[-1:], axes[-1:])
        s, axes, fft_type = s[:-1], axes[:-1], "FFT"
    for n, a in reversed(tuple(zip(s, axes))):
        x = _transform_distinct(x, fft_type, (n,), (a,))
    return x


def _fftn(name, fft_type, a, s, axes, norm):
    x = _operand(name, a, fft_type == "RFFT")
    s, axes = _cook_axes(name, get_aval(x).shape, s, axes, fft_type == "IRFFT")
    factor = _norm_factor(norm, math.prod(s), _INVERSE[fft_type])
    if not axes:   # nothing to transform: only the dtype changes
        return asarray(_operand_for(x, fft_type))
    out = _transform(x, fft_type, s, axes)
    return out if factor == 1.0 else multiply(out, factor)


def _one_axis(n, axis):
    return (None if n is None else (n,)), (axis,)


# --- the public functions -----------------------------------------------------------

def fft(a, /, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform (``numpy.fft.fft``)."""
    return _fftn("fft", "FFT", a, *_one_axis(n, axis), norm)


def ifft(a, /, n=None, axis=-1, norm=None):
    """One-dimensional inverse DFT (``numpy.fft.ifft``)."""
    return _fftn("ifft", "IFFT", a, *_one_axis(n, axis), norm)


def rfft(a, /, n=None, axis=-1, norm=None):
    """DFT of real input: the n//2 + 1 non-negative frequencies."""
    return _fftn("rfft", "RFFT", a, *_one_axis(n, axis), norm)


def irfft(a, /, n=None, axis=-1, norm=None):
    """Inverse of ``rfft``: real output of length ``n`` (default 2*(m-1))."""
    return _fftn("irfft", "IRFFT", a, *_one_axis(n, axis), norm)


def fftn(a, /, s=None, axes=None, norm=None):
    return _fftn("fftn", "FFT", a, s, axes, norm)


def ifftn(a, /, s=None, axes=None, norm=None):
    return _fftn("ifftn", "IFFT", a, s, axes, norm)


def rfftn(a, /, s=None, axes=None, norm=None):
    return _fftn("rfftn", "RFFT", a, s, axes, norm)


def irfftn(a, /, s=None, axes=None, norm=None):
    return _fftn("irfftn", "IRFFT", a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return _fftn("fft2", "FFT", a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return _fftn("ifft2", "IFFT", a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return _fftn("rfft2", "RFFT", a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return _fftn("irfft2", "IRFFT", a, s, axes, norm)


def hfft(a, /, n=None, axis=-1, norm=None):
    """DFT of a Hermitian-symmetric signal given by its half: real output."""
    return irfft(conjugate(asarray_operand(a)), n, axis, _swap_direction(norm))


def ihfft(a, /, n=None, axis=-1, norm=None):
    """Inverse of ``hfft``: the half spectrum of real input."""
    return conjugate(rfft(a, n, axis, _swap_direction(norm)))


# --- frequencies and shifts ------------------------------------------------------------

def _frequencies(k, n, d, dtype):
    out = multiply(asarray(k), 1.0 / (n * d))
    return out if dtype is None else asarray(out, dtype=dtype)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of ``fft``: [0, 1, ..., -2, -1] / (n*d)."""
    n = int(n)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(k, n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of ``rfft``: [0, 1, ..., n//2] / (n*d)."""
    n = int(n)
    return _frequencies(np.arange(0, n // 2 + 1), n, d, dtype)


def _shift(x, axes, sign):
    x = asarray_operand(x)
    shape = get_aval(x).shape
    axes = tuple(range(len(shape))) if axes is None else tuple(np.atleast_1d(axes))
    if not axes:
        return asarray(x)
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), axes)


def fftshift(x, /, axes=None):
    """Move the zero-frequency term to the centre (``numpy.fft.fftshift``)."""
    return _shift(x, axes, 1)


def ifftshift(x, /, axes=None):
    """The inverse of ``fftshift``."""
    return _shift(x, axes, -1)
