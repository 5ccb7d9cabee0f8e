"""Cases for the non-symmetric eigendecomposition (fungrad/lax/eig.py); see
tests/harness.py.

LAPACK's eigenvalue order is not stable under perturbation in general, and
eigenvectors carry a phase, so derivatives are checked through order- and
gauge-invariant functions: power sums of eigenvalues (sum w^k = trace(A^k))
and spectral functions sum_i g(w_i) v_i u_i^H / (u_i^H v_i) = g(A), which
exercise the eigenvector JVPs too.  Outputs checked by finite differences are
real (real and imaginary parts stacked).  Inputs come from ``spread_general``:
S B S^-1 with S well-conditioned and B block diagonal (a 2x2 rotation-scaling
block for a complex-conjugate pair, then distinct reals), eigenvalues about 1
apart.
"""
import numpy as np
import scipy.linalg

import fungrad.numpy as fnp
from fungrad.lax.eig import eig, eig_numpy, eigvals, sqrtm
from tests.harness import Arg, Case


def spread_general(positive=False):
    """make(rng, shape, dtype): non-normal matrices with well-separated
    eigenvalues (a complex pair first when n >= 2); ``positive``: all real
    parts >= 1 (sqrtm)."""
    def make(rng, shape, dtype):
        *batch, n, _ = shape
        batch = tuple(batch)
        base = 1.5 if positive else -n / 2
        b = np.zeros(shape)
        idx = np.arange(n)
        b[..., idx, idx] = base + idx + rng.uniform(-0.2, 0.2, batch + (n,))
        if n >= 2:
            b[..., 0, 0] = b[..., 1, 1] = base + n + 0.5
            b[..., 0, 1] = 1 + rng.uniform(0, 0.3, batch)
            b[..., 1, 0] = -b[..., 0, 1]
        s = np.eye(n) + 0.3 * rng.uniform(-1, 1, shape)
        if np.issubdtype(dtype, np.complexfloating):
            s = s + 0.3j * rng.uniform(-1, 1, shape)
            b = b + 0.5j * np.eye(n) * rng.uniform(-1, 1, batch + (n, 1))
        return (s @ b @ np.linalg.inv(s)).astype(dtype)
    return make


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def check_eig(out, args):
    """A vr = vr diag(w), vl^H A = diag(w) vl^H, unit-norm vectors."""
    (a,), (w, vl, vr) = args, out
    tol = 1e-9 * max(1.0, float(np.max(np.abs(a), initial=0)))
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=tol)
    np.testing.assert_allclose(_mH(vl) @ a, w[..., :, None] * _mH(vl), atol=tol)
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1 + 0 * w.real, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(w.reshape(-1)),
                               np.sort_complex(np.linalg.eigvals(a).reshape(-1)), atol=tol)


def _re_im(x):
    return fnp.stack([fnp.real(x), fnp.imag(x)])


def _np_re_im(x):
    return np.stack([np.real(x), np.imag(x)])


def power_sums(a):
    """[sum w, sum w^2, sum w^3] (= traces of powers), from eigenvalues only."""
    (w,) = eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return _re_im(fnp.stack([fnp.sum(w ** k, axis=-1) for k in (1, 2, 3)]))


def power_sums_ref(a):
    p = [np.trace(np.linalg.matrix_power(a, k), axis1=-2, axis2=-1) for k in (1, 2, 3)]
    return _np_re_im(np.stack(p)).astype(np.result_type(a.real.dtype, np.float32))


def spectral_square(a):
    """sum_i w_i^2 v_i u_i^H / (u_i^H v_i) = A @ A: every output of eig and its
    derivative, invariant under the vectors' gauge and the eigenvalue order."""
    w, vl, vr = eig(a)
    vl_h = fnp.conj(fnp.swapaxes(vl, -1, -2))
    d = fnp.diagonal(vl_h @ vr, axis1=-2, axis2=-1)
    return _re_im((vr * (w ** 2 / d)[..., None, :]) @ vl_h)


CASES = [
    Case("lax.eig_values", eig, None, [Arg((2, 3, 3), make=spread_general())],
         prims=("eig",), grad_order=0, check=check_eig),
    Case("lax.eig_values_generic", eig, None, [Arg("sqmat", low=-2, high=2)],
         prims=("eig",), grad_order=0, check=check_eig, rtol=1e-6, atol=1e-9),
    Case("lax.eig_power_sums", power_sums, power_sums_ref,
         [Arg((2, 3, 3), ("float64", "complex128"), make=spread_general())], prims=("eig",),
         rtol=1e-6, atol=1e-9),
    Case("lax.eig_spectral_square", spectral_square,
         lambda a: _np_re_im(a @ a), [Arg((2, 3, 3), make=spread_general())],
         prims=("eig",), rtol=1e-6, atol=1e-9),
    Case("lax.eig_spectral_square_complex", spectral_square,
         lambda a: _np_re_im(a @ a), [Arg((3, 3), "complex128", make=spread_general())],
         prims=("eig",), rtol=1e-6, atol=1e-9),
    Case("linalg.eig", eig_numpy, None, [Arg((2, 4, 4), make=spread_general())],
         prims=("eig",), grad_order=0,
         check=lambda out, args: np.testing.assert_allclose(
             args[0] @ out[1], out[1] * out[0][..., None, :], atol=1e-9)),
    Case("linalg.eigvals", eigvals, lambda a: np.linalg.eigvals(a).astype(complex),
         [Arg((2, 3, 3), make=spread_general())], prims=("eig",), grad_order=0),
    Case("scipy.sqrtm", sqrtm, scipy.linalg.sqrtm,
         [Arg((3, 3), ("float64", "complex128"), make=spread_general(positive=True))],
         prims=("eig",), rtol=1e-6, atol=1e-9),
]
