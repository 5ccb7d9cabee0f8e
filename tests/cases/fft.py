"""Cases for the ``fft`` primitive (fungrad/lax/fft.py) and fungrad.numpy.fft.

check_grads compares real outputs with finite differences, so the
differentiated cases end in a real-valued function of the spectrum (real or
imaginary part, power, a real inverse transform); the complex-valued
transforms are checked for values, staging, jit and vmap with grad_order=0.
Inputs are "mat" (two axes, sizes 1..4): odd and even lengths, a leading
axis that vmap may put its batch axis before or after.  Values are compared
with numpy.fft.
"""
import numpy as np

import fungrad.numpy as fnp
import fungrad.numpy.fft as fnp_fft
from fungrad.lax.fft import fft as lax_fft
from tests.harness import Arg, Case


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
         lambda x: np.real(np.fft.fft(x)), [Arg("mat")], prims=("fft",)),
    Case("rfft_power", lambda x: fnp.abs(fnp_fft.rfft(x, axis=0)) ** 2,
         lambda x: np.abs(np.fft.rfft(x, axis=0)) ** 2, [Arg("mat")], prims=("fft",)),
    Case("ifftn_ortho_imag", lambda x: fnp.imag(fnp_fft.ifftn(x, norm="ortho")),
         lambda x: np.imag(np.fft.ifftn(x, norm="ortho")), [Arg("mat")], prims=("fft",)),
    # a complex spectrum x + iy from two real arguments (check_grads only
    # perturbs real directions of complex inputs)
    Case("irfft2_of_complex", lambda x, y: fnp_fft.irfft2(x + 1j * y, s=(3, 4)),
         lambda x, y: np.fft.irfft2(x + 1j * y, s=(3, 4)), [Arg("mat"), Arg("same")],
         prims=("fft",)),
    Case("lax_rfft_filter_irfft", _filter, _filter_ref, [Arg("mat")], prims=("fft",)),
    Case("fft2_complex_out", lambda x: fnp_fft.fft2(x, s=(2, 5)),
         lambda x: np.fft.fft2(x, s=(2, 5)),
         [Arg("mat", dtype=("float64", "float32", "complex128", "int64"))],
         prims=("fft",), grad_order=0, rtol=1e-5, atol=1e-5),
]
