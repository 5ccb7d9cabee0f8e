"""The ``fft`` primitive: discrete Fourier transforms over trailing axes
(``jax.lax.fft``).

One primitive with two params:

* ``fft_type``: ``"FFT"`` (complex -> complex), ``"IFFT"`` (its inverse, scaled
  by 1/N), ``"RFFT"`` (real -> the non-negative half of the spectrum, last
  axis n -> n//2 + 1) or ``"IRFFT"`` (that half spectrum -> real, scaled by 1/N);
* ``fft_lengths``: the transform lengths of the trailing ``len(fft_lengths)``
  axes (for IRFFT: the lengths of the *real output*).

All four are linear, so the JVP is the op applied to the tangent and reverse
mode needs only the transpose.  Transposes use the bilinear pairing
``<u, v> = Re sum(u * v)`` (no conjugation: JAX's convention for complex
linear maps, the one ``real``/``imag``/``convert_element_type`` use too).
With F the unnormalised DFT over the transformed axes (N points in all) and
P the selection of the first m = n//2 + 1 bins of the last axis:

* FFT = F is symmetric (F[j,k] = w^(jk)), so FFT^T = FFT;
* IFFT = conj(F)/N is symmetric too, so IFFT^T = IFFT;
* RFFT = P F on real x: <u, P F x> = Re((F P^T u) . x), so RFFT^T u =
  Re(F P^T u) = N * IRFFT(conj(u) * w): IRFFT counts the duplicated bins
  1..ceil(n/2)-1 twice (w = 1/2 there, 1 at DC and at the Nyquist bin) and
  conjugates the exponent (hence conj(u));
* IRFFT: N * IRFFT(v) = sum over bins of c_k Re(v_k * G_k) with
  G = conj(RFFT(x)) and c_k = 2 on duplicated bins, 1 at DC/Nyquist, so
  IRFFT^T y = conj(RFFT(y)) * c / N.
tests/test_fft.py checks <u, T v> = <T^T u, v> for every type, odd and even n.

Batching: the batch axis is one more leading axis.  Lowering: one
``np.fft.{fftn,ifftn,rfftn,irfftn}`` call.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, is_floating, issubdtype as dtype_issubdtype
from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import deflinear
from fungrad.interpreters.lowering import call
from fungrad.lax.elementwise import conj, convert_element_type, mul
from fungrad.lax.utils import as_operand, checked_bind, def_lowering

__all__ = ["fft", "FftType", "fft_p"]


class FftType(enum.IntEnum):
    """The kinds of transform ``fft`` computes (``jax.lax.FftType``)."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_NUMPY_FN = {"FFT": "fftn", "IFFT": "ifftn", "RFFT": "rfftn", "IRFFT": "irfftn"}


def _canonical_fft_type(fft_type) -> str:
    """``FftType`` members, their names (any case) or values -> the name."""
    if isinstance(fft_type, str) and fft_type.upper() in _NUMPY_FN:
        return fft_type.upper()
    if isinstance(fft_type, (int, np.integer)) and not isinstance(fft_type, bool):
        if 0 <= int(fft_type) <= 3:
            return FftType(int(fft_type)).name
    raise ValueError(f"lax.fft: unknown fft_type {fft_type!r}; use one of "
                     "FftType.FFT, FftType.IFFT, FftType.RFFT, FftType.IRFFT "
                     "(or the strings 'fft', 'ifft', 'rfft', 'irfft')")


def _real_dtype(dtype):
    return dtype_finfo(dtype).dtype


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


# --- shape rule --------------------------------------------------------------

def _check_lengths(x, fft_type, fft_lengths):
    k = len(fft_lengths)
    if k == 0 or k > x.ndim or any(int(n) < 1 for n in fft_lengths):
        raise ValueError(f"lax.fft: fft_lengths={fft_lengths} must be 1..{x.ndim} "
                         f"positive lengths, one per transformed trailing axis of the "
                         f"operand of shape {x.shape}")
    want = tuple(fft_lengths)
    if fft_type == "IRFFT":
        want = want[:-1] + (want[-1] // 2 + 1,)
    if x.shape[x.ndim - k:] != want:
        hint = (" (IRFFT takes the half spectrum: the last axis has "
                "fft_lengths[-1] // 2 + 1 entries)" if fft_type == "IRFFT" else "")
        raise ValueError(f"lax.fft: {fft_type} with fft_lengths={fft_lengths} needs the "
                         f"trailing axes of the operand to be {want}, got shape "
                         f"{x.shape}{hint}. Pad or crop the input first (as "
                         "fungrad.numpy.fft does with n=/s=).")


def _fft_shape(x, fft_type, fft_lengths):
    if fft_type not in _NUMPY_FN:
        _canonical_fft_type(fft_type)          # raises the error
    complex_in = dtype_issubdtype(x.dtype, np.complexfloating)
    if fft_type == "RFFT" and (complex_in or not is_floating(x.dtype) or x.dtype.itemsize < 4):
        raise TypeError(f"lax.fft: RFFT needs a real float32/float64 operand, got "
                        f"{x.dtype.name}; use FFT for complex input, or convert it")
    if fft_type != "RFFT" and not complex_in:
        raise TypeError(f"lax.fft: {fft_type} needs a complex operand, got "
                        f"{x.dtype.name}; convert it with lax.convert_element_type "
                        "(lax.fft does this for you)")
    _check_lengths(x, fft_type, fft_lengths)
    k = len(fft_lengths)
    if fft_type == "RFFT":
        return ShapedArray(x.shape[:-1] + (x.shape[-1] // 2 + 1,), _complex_dtype(x.dtype))
    if fft_type == "IRFFT":
        return ShapedArray(x.shape[:x.ndim - k] + tuple(fft_lengths), _real_dtype(x.dtype))
    return ShapedArray(x.shape, x.dtype)


def _fft_impl(x, fft_type, fft_lengths):
    axes = tuple(range(-len(fft_lengths), 0))
    fn = getattr(np.fft, _NUMPY_FN[fft_type])
    return np.asarray(fn(x, s=fft_lengths, axes=axes))


# --- transpose ---------------------------------------------------------------

def _bin_weights(n, duplicated, edge):
    """Per-bin weights of the half spectrum of a length-``n`` real signal:
    ``edge`` at DC (and at the Nyquist bin for even n), ``duplicated`` on the
    bins 1..ceil(n/2)-1 that stand for two bins of the full spectrum."""
    m = n // 2 + 1
    w = np.full(m, duplicated, dtype=np.float64)
    w[0] = edge
    if n % 2 == 0:
        w[-1] = edge
    return w


def _rfft_transpose(ct, fft_lengths):
    # RFFT^T u = Re(F P^T u) = N * IRFFT(conj(u) * w),  w = 1/2 on duplicated bins
    dtype = get_aval(ct).dtype
    w = (math.prod(fft_lengths) * _bin_weights(fft_lengths[-1], 0.5, 1.0)).astype(dtype)
    return fft_p.bind(mul(conj(ct), w), fft_type="IRFFT", fft_lengths=fft_lengths)


def _irfft_transpose(ct, fft_lengths):
    # IRFFT^T y = conj(RFFT(y)) * c / N,  c = 2 on duplicated bins
    spectrum = fft_p.bind(ct, fft_type="RFFT", fft_lengths=fft_lengths)
    dtype = get_aval(spectrum).dtype
    c = (_bin_weights(fft_lengths[-1], 2.0, 1.0) / math.prod(fft_lengths)).astype(dtype)
    return mul(conj(spectrum), c)


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if fft_type == "RFFT":
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == "IRFFT":
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]   # symmetric


# --- batching and lowering -----------------------------------------------------

def _fft_batch(axis_size, vals, dims, fft_type, fft_lengths):
    (x,), (d,) = vals, dims
    if d >= get_aval(x).ndim - len(fft_lengths):   # a transformed axis: move it out
        x, d = batching.moveaxis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


def _fft_lowering(args, fft_type, fft_lengths):
    axes = tuple(range(-len(fft_lengths), 0))
    return call(np.asarray, call(getattr(np.fft, _NUMPY_FN[fft_type]), args[0], s=fft_lengths,
                                 axes=axes))


fft_p = Primitive("fft")
fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_shape)
deflinear(fft_p, _fft_transpose)
fft_p.batch = _fft_batch
def_lowering(fft_p, _fft_lowering)


# --- the public function -------------------------------------------------------

def _operand_for(x, fft_type):
    """Convert like JAX: RFFT takes a real float, the others a complex array
    (integers and bools become float64 / complex128, float16 float32)."""
    dtype = get_aval(x).dtype
    if fft_type == "RFFT":
        if dtype_issubdtype(dtype, np.complexfloating):
            raise TypeError(f"lax.fft: RFFT takes real input, got {dtype.name}; "
                            "use FftType.FFT for complex input")
        target = dtype if is_floating(dtype) and dtype.itemsize >= 4 else (
            np.float32 if dtype == np.float16 else np.float64)
    elif dtype_issubdtype(dtype, np.complexfloating):
        target = dtype
    else:
        target = np.complex64 if dtype in (np.float16, np.float32) else (
            _complex_dtype(dtype) if is_floating(dtype) else np.complex128)
    return convert_element_type(x, target)


def fft(x, fft_type, fft_lengths):
    """Discrete Fourier transform over the trailing ``len(fft_lengths)`` axes
    of ``x`` (``jax.lax.fft``).

    ``fft_type`` is an ``FftType`` (or its name as a string): FFT, IFFT (scaled
    by 1/N), RFFT (real input, last axis n -> n//2 + 1) or IRFFT (the inverse
    of RFFT; ``fft_lengths`` are the lengths of the real output).  The trailing
    axes must already have those lengths (IRFFT: n//2 + 1 on the last).
    """
    fft_type = _canonical_fft_type(fft_type)
    try:
        fft_lengths = tuple(int(n) for n in np.atleast_1d(fft_lengths))
    except (TypeError, ValueError):
        raise TypeError(f"lax.fft: fft_lengths must be a sequence of ints, got "
                        f"{fft_lengths!r}") from None
    x = _operand_for(as_operand(x), fft_type)
    return checked_bind(fft_p, x, fft_type=fft_type, fft_lengths=fft_lengths)
