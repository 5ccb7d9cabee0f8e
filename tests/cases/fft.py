"""Cases for the ``fft`` primitive (fungrad/lax/fft.py) and fungrad.numpy.fft.

Cases draw real and complex inputs; check_grads differentiates complex
outputs in full and perturbs complex inputs along complex directions (the
transposes are plain transposes, JAX's convention: fft's is fft itself, not
ifft).  Some cases end in a real-valued function of the spectrum (real or
imaginary part, power, a real inverse transform).
Inputs are "mat" (two axes, sizes 1..4): odd and even lengths, a leading
axis that vmap may put its batch axis before or after.  Values are compared
with numpy.fft.
"""
import numpy as np

import fungrad.numpy as fnp
import fungrad.numpy.fft as fnp_fft
from fungrad.lax.fft import fft as lax_fft
from tests.harness import Arg, Case

RC = ("float64", "complex128")


def _filter(x):
    """irfft(rfft(x) * h) with a complex filter h: RFFT and IRFFT through lax."""
    n = x.shape[-1]
    m = n // 2 + 1
    h = (1.0 + 0.5j) ** np.arange(m)
    return lax_fft(lax_fft(x, "RFFT", (n,)) * h, "IRFFT", (n,))


def _filter_ref(x):
    n = x.shape[-1]
    h = (1.0 + 0.5j) ** np.arange(n // 2 + 1)
    return np.fft.irfft(np.fft.rfft(x) * h, n)


CASES = [
    Case("fft_real_part", lambda x: fnp.real(fnp_fft.fft(x)),
         lambda x: np.real(np.fft.fft(x)), [Arg("mat", RC)], prims=("fft",)),
    Case("rfft_power", lambda x: fnp.abs(fnp_fft.rfft(x, axis=0)) ** 2,
         lambda x: np.abs(np.fft.rfft(x, axis=0)) ** 2, [Arg("mat")], prims=("fft",)),
    Case("ifftn_ortho_imag", lambda x: fnp.imag(fnp_fft.ifftn(x, norm="ortho")),
         lambda x: np.imag(np.fft.ifftn(x, norm="ortho")), [Arg("mat", RC)], prims=("fft",)),
    # a complex spectrum x + iy from two real arguments, and a complex one directly
    Case("irfft2_of_complex", lambda x, y: fnp_fft.irfft2(x + 1j * y, s=(3, 4)),
         lambda x, y: np.fft.irfft2(x + 1j * y, s=(3, 4)), [Arg("mat"), Arg("same")],
         prims=("fft",)),
    Case("irfft_of_complex_input", lambda z: fnp_fft.irfft(z, n=5, axis=0),
         lambda z: np.fft.irfft(z, n=5, axis=0), [Arg("mat", "complex128")], prims=("fft",)),
    Case("lax_rfft_filter_irfft", _filter, _filter_ref, [Arg("mat")], prims=("fft",)),
    Case("fft2_complex_out", lambda x: fnp_fft.fft2(x, s=(2, 5)),
         lambda x: np.fft.fft2(x, s=(2, 5)),
         [Arg("mat", dtype=("float64", "float32", "complex128", "int64"))],
         prims=("fft",), rtol=1e-5, atol=1e-5),
    Case("ifft_complex", lambda z: fnp_fft.ifft(z, axis=0), lambda z: np.fft.ifft(z, axis=0),
         [Arg("mat", ("complex128", "complex64"))], prims=("fft",), rtol=1e-5, atol=1e-6),
]
