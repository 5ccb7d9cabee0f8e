"""Cases for fungrad.numpy functions no other case file calls, so that every
NumPy function that dispatches to fungrad (fungrad/numpy/_dispatch.py) has a
NumPy-spelled twin in the generic suite (tests/numpy_twins.py); the check is
tests/test_numpy_dispatch.py::test_every_dispatched_function_is_covered.
"""
import numpy as np

import fungrad.numpy as fnp
from tests.harness import Arg, Case

MAT = Arg("mat")
VEC = Arg("vec")


def _ints(low, high, shape="any"):
    return Arg(shape, dtype="int64", low=low, high=high, diff=False)


def _distinct_eigenvalues(rng, shape, dtype):
    q, _ = np.linalg.qr(rng.normal(size=shape))
    return (q * np.arange(1.0, shape[-1] + 1)) @ q.T + 0.3 * rng.normal(size=shape)


def _leading_one(rng, shape, dtype):
    """Polynomial coefficients whose leading one keeps polydiv away from 0."""
    c = rng.uniform(-2, 2, size=shape)
    c[..., 0] = 1.0 + rng.uniform(0, 1)
    return c.astype(dtype)


CASES = [
    Case("fnp.amax_axis0", lambda x: fnp.amax(x, axis=0), lambda x: np.amax(x, axis=0),
         [Arg("mat", unique=True)]),
    Case("fnp.around_by_name", lambda x: fnp.around(x, 1), lambda x: np.around(x, 1), [MAT],
         grad_order=0),   # piecewise constant
    # aliases: ufuncs.py's cases reach fnp.round/rad2deg/deg2rad by another name
    Case("fnp.degrees_by_name", lambda x: fnp.degrees(x), np.degrees),
    Case("fnp.radians_by_name", lambda x: fnp.radians(x), np.radians),
    Case("fnp.apply_along_axis", lambda x: fnp.apply_along_axis(lambda v: fnp.sum(v ** 2), 1, x),
         lambda x: np.apply_along_axis(lambda v: np.sum(v ** 2), 1, x), [MAT]),
    Case("fnp.apply_over_axes", lambda x: fnp.apply_over_axes(fnp.sum, x, [0]),
         lambda x: np.apply_over_axes(np.sum, x, [0]), [MAT]),
    Case("fnp.compress", lambda x: fnp.compress([True, False, True], x, axis=0),
         lambda x: np.compress([True, False, True], x, axis=0), [Arg((3, 2))]),
    Case("fnp.digitize", lambda x: fnp.digitize(x, np.array([-1.0, 0.0, 1.0])),
         lambda x: np.digitize(x, np.array([-1.0, 0.0, 1.0])), [Arg(avoid=(-1.0, 0.0, 1.0))],
         grad_order=0),
    Case("fnp.isin", lambda x, y: fnp.isin(x, y), np.isin, [_ints(0, 4), _ints(0, 4, "vec")],
         grad_order=0),
    Case("fnp.iscomplex_isreal", lambda x: (fnp.iscomplex(x), fnp.isreal(x)),
         lambda x: (np.iscomplex(x), np.isreal(x)), [Arg(dtype=("float64", "complex128"))],
         grad_order=0),
    Case("fnp.ix_", lambda i, j: fnp.ix_(i, j), np.ix_, [_ints(0, 3, "vec"), _ints(0, 3, "vec")],
         grad_order=0),
    Case("fnp.ravel_multi_index", lambda i, j: fnp.ravel_multi_index((i, j), (4, 5), mode="clip"),
         lambda i, j: np.ravel_multi_index((i, j), (4, 5), mode="clip"),
         [_ints(-1, 4), _ints(0, 6, "same")], grad_order=0),
    Case("fnp.unravel_index", lambda i: fnp.unravel_index(i, (4, 5)),
         lambda i: np.unravel_index(i, (4, 5)), [_ints(0, 19)], grad_order=0),
    Case("fnp.matvec", fnp.matvec, np.matvec, [Arg((2, 3, 4)), Arg((4,))]),
    Case("fnp.vecmat", fnp.vecmat, np.vecmat, [Arg((3,)), Arg((2, 3, 4))]),
    Case("fnp.nanpercentile", lambda x: fnp.nanpercentile(x, 30.0, axis=0),
         lambda x: np.nanpercentile(x, 30.0, axis=0), [Arg("mat", unique=True)]),
    Case("fnp.poly", fnp.poly, np.poly, [VEC]),
    Case("fnp.polyadd_polysub", lambda a, b: (fnp.polyadd(a, b), fnp.polysub(a, b)),
         lambda a, b: (np.polyadd(a, b), np.polysub(a, b)), [VEC, Arg((3,))]),
    # fungrad's remainder keeps u's length, as JAX's (zeros in front); NumPy's
    # drops them, and np.polydiv on tracers does too (fungrad/numpy/_dispatch.py)
    Case("fnp.polydiv", lambda a, b: fnp.polydiv(a, b),
         lambda a, b: (np.polydiv(a, b)[0], np.concatenate([np.zeros(3), np.polydiv(a, b)[1]])),
         [Arg((5,)), Arg((3,), make=_leading_one)], rtol=1e-6, atol=1e-8),
    Case("fnp.rollaxis", lambda x: fnp.rollaxis(x, 2), lambda x: np.rollaxis(x, 2),
         [Arg((2, 3, 4))]),
    Case("fnp.trapezoid", lambda x: fnp.trapezoid(x, dx=0.5, axis=-1),
         lambda x: np.trapezoid(x, dx=0.5, axis=-1), [MAT]),
    Case("fnp.vander", lambda x: fnp.vander(x, 3), lambda x: np.vander(x, 3), [VEC]),
    Case("fnp.histogram_bin_edges", lambda x: fnp.histogram_bin_edges(x, bins=3),
         lambda x: np.histogram_bin_edges(x, bins=3), [Arg("vec", unique=True)]),
    Case("fnp.histogram2d", lambda x, y: fnp.histogram2d(x, y, bins=2),
         lambda x, y: np.histogram2d(x, y, bins=2), [Arg((5,), unique=True),
                                                     Arg((5,), unique=True)], grad_order=0),
    Case("fnp.histogramdd", lambda x: fnp.histogramdd(x, bins=2),
         lambda x: np.histogramdd(x, bins=2), [Arg((5, 2), unique=True)], grad_order=0),
    Case("fnp.allclose_atol", lambda x, y: fnp.asarray(fnp.allclose(x, y, atol=1.0)),
         lambda x, y: np.asarray(np.allclose(x, y, atol=1.0)), [Arg(), Arg("same")],
         grad_order=0),
    Case("linalg.eig_power_trace",
         lambda a: fnp.real(fnp.sum(fnp.linalg.eig(a).eigenvalues ** 2)),
         lambda a: np.real(np.sum(np.linalg.eig(a).eigenvalues ** 2)),
         [Arg((3, 3), make=_distinct_eigenvalues)], rtol=1e-6, atol=1e-8),
    # numpy.fft's transforms no other case calls
    Case("fft.ifft_imag", lambda x: fnp.imag(fnp.fft.ifft(x, axis=0)),
         lambda x: np.imag(np.fft.ifft(x, axis=0)), [MAT]),
    Case("fft.fftn_real", lambda x: fnp.real(fnp.fft.fftn(x, s=(3, 2))),
         lambda x: np.real(np.fft.fftn(x, s=(3, 2))), [MAT]),
    Case("fft.ifft2_abs2", lambda x: fnp.abs(fnp.fft.ifft2(x)) ** 2,
         lambda x: np.abs(np.fft.ifft2(x)) ** 2, [MAT]),
    Case("fft.rfft2_rfftn", lambda x: (fnp.real(fnp.fft.rfft2(x)), fnp.imag(fnp.fft.rfftn(x))),
         lambda x: (np.real(np.fft.rfft2(x)), np.imag(np.fft.rfftn(x))), [MAT]),
    Case("fft.irfft_irfftn", lambda x: (fnp.fft.irfft(x, n=4), fnp.fft.irfftn(x, s=(2, 4))),
         lambda x: (np.fft.irfft(x, n=4), np.fft.irfftn(x, s=(2, 4))), [MAT]),
    Case("fft.hfft_ihfft", lambda x: (fnp.fft.hfft(x, n=5), fnp.real(fnp.fft.ihfft(x))),
         lambda x: (np.fft.hfft(x, n=5), np.real(np.fft.ihfft(x))), [MAT]),
    Case("fft.fftshift_ifftshift", lambda x: (fnp.fft.fftshift(x), fnp.fft.ifftshift(x, axes=0)),
         lambda x: (np.fft.fftshift(x), np.fft.ifftshift(x, axes=0)), [MAT]),
]
