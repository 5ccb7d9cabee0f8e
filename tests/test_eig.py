"""Tests of the non-symmetric eigendecomposition (fungrad/lax/eig.py): values
against NumPy/SciPy, eigen-identities, derivatives (eigenvalues through
order-invariant functions; eigenvectors directly against finite differences of
the LAPACK-normalised outputs, whose gauge the JVP reproduces), jit, vmap,
complex input and bad input."""
import numpy as np
import pytest
import scipy.linalg

import fungrad
import fungrad.numpy as fnp
from fungrad.lax.eig import eig, eig_numpy, eigvals, sqrtm, EigResult
from fungrad.test_util import check_grads
from tests.cases.eig import spread_general, check_eig


def _mat(seed, shape=(4, 4), dtype=np.float64, positive=False):
    return spread_general(positive)(np.random.default_rng(seed), shape, np.dtype(dtype))


@pytest.mark.parametrize("dtype, cdtype", [(np.float64, np.complex128), (np.float32, np.complex64),
                                           (np.complex128, np.complex128)])
def test_values_match_numpy(dtype, cdtype):
    a = _mat(0, (2, 4, 4), dtype)
    w, vl, vr = eig(a)
    w_np, vr_np = np.linalg.eig(a)
    assert w.dtype == vl.dtype == vr.dtype == np.dtype(cdtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(w, w_np, rtol=tol, atol=tol)
    np.testing.assert_allclose(vr, vr_np, rtol=tol, atol=tol)
    if dtype != np.float32:
        check_eig((w, vl, vr), [a])


def test_output_selection():
    a = _mat(1)
    assert len(eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)) == 1
    w, vr = eig(a, compute_left_eigenvectors=False)
    w2, vl = eig(a, compute_right_eigenvectors=False)
    np.testing.assert_allclose(w, w2)
    np.testing.assert_allclose(vr, eig(a)[2])
    np.testing.assert_allclose(vl, eig(a)[1])


def test_left_vectors_are_lapack_normalised():
    # unit norm, largest component real, not rescaled so that vl^H vr = I
    a = _mat(2, (5, 5))
    w, vl, vr = eig(a)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=0), 1, atol=1e-12)
    k = np.argmax(np.abs(vl), axis=0)
    np.testing.assert_allclose(vl[k, np.arange(5)].imag, 0, atol=1e-12)
    assert not np.allclose(np.abs(np.diag(vl.conj().T @ vr)), 1)


def test_numpy_level_functions():
    a = _mat(3, (2, 3, 3))
    res = eig_numpy(a)
    assert isinstance(res, EigResult)
    np.testing.assert_allclose(res.eigenvalues, np.linalg.eig(a).eigenvalues)
    np.testing.assert_allclose(eigvals(a), np.linalg.eigvals(a))
    assert eigvals(np.diag([1, 2])).dtype == np.complex128        # ints promote
    np.testing.assert_allclose(eigvals(np.diag([1, 2])), [1, 2])


def test_nonfinite_input_gives_nan_not_error():
    a = np.stack([_mat(4, (3, 3)), np.full((3, 3), np.nan)])
    w, vl, vr = eig(a)
    assert np.all(np.isnan(w[1])) and np.all(np.isnan(vr[1])) and np.all(np.isnan(vl[1]))
    np.testing.assert_allclose(w[0], np.linalg.eigvals(a[0]))


def test_empty_and_1x1():
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2)]:
        outs = eig(np.zeros(shape))
        assert [o.shape for o in outs] == [shape[:-1], shape, shape]
    w, vl, vr = eig(np.array([[2.5]]))
    np.testing.assert_allclose(w, [2.5]) and np.testing.assert_allclose(vr, [[1]])


# --- derivatives ---------------------------------------------------------------------

def _power_sum(k, **kw):
    return lambda a: fnp.real(fnp.sum(eig(a, **kw)[0] ** k))


@pytest.mark.parametrize("kw", [{}, dict(compute_left_eigenvectors=False,
                                         compute_right_eigenvectors=False)])
def test_eigenvalue_gradient_is_trace_derivative(kw):
    # sum w^3 = tr(A^3), so d/dA = 3 (A^2)^T
    a = _mat(5)
    g = fungrad.grad(_power_sum(3, **kw))(a)
    np.testing.assert_allclose(g, 3 * (a @ a).T, rtol=1e-9, atol=1e-9)
    check_grads(_power_sum(2, **kw), (a,), order=2)


def test_eigenvalue_derivative_of_complex_input():
    a = _mat(6, (3, 3), np.complex128)
    f = lambda a: fnp.stack([fnp.real(fnp.sum(eig(a)[0] ** 2)), fnp.imag(fnp.sum(eig(a)[0] ** 2))])
    t = np.random.default_rng(0).standard_normal((3, 3)) + 0j
    _, jv = fungrad.jvp(f, (a,), (t,))
    want = 2 * np.trace(a @ t)
    np.testing.assert_allclose(jv, [want.real, want.imag], rtol=1e-9, atol=1e-9)


def _re_im_vectors(which):
    def f(a):
        v = eig(a)[which]
        return fnp.stack([fnp.real(v), fnp.imag(v)])
    return f


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("which", [1, 2])
def test_eigenvector_jvp_matches_lapack_gauge(dtype, which):
    # the JVP keeps LAPACK's normalisation (unit norm, largest component real),
    # so it equals finite differences of the raw outputs
    a = _mat(7, (4, 4), dtype)
    t = np.random.default_rng(1).standard_normal((4, 4)).astype(dtype)
    eps = 1e-6
    _, tangents = fungrad.jvp(lambda x: eig(x), (a,), (t,))
    plus, minus = eig(a + eps * t), eig(a - eps * t)
    np.testing.assert_allclose(plus[0], minus[0], atol=1e-4)         # same eigenvalue order
    fd = (plus[which] - minus[which]) / (2 * eps)
    np.testing.assert_allclose(tangents[which], fd, rtol=1e-6, atol=1e-7)


def test_eigenvector_derivatives_fwd_and_rev():
    check_grads(_re_im_vectors(2), (_mat(8, (3, 3)),), order=2)
    check_grads(_re_im_vectors(1), (_mat(9, (3, 3)),), order=1)


# --- transformations -----------------------------------------------------------------

def test_jit_and_vmap():
    a = _mat(10, (3, 4, 4))
    eager = eig(a)
    for got in (fungrad.jit(eig)(a), fungrad.vmap(eig)(a),
                fungrad.vmap(eig, in_axes=1, out_axes=0)(np.swapaxes(a, 0, 1))):
        for g, e in zip(got, eager):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    g = fungrad.jit(fungrad.vmap(fungrad.grad(_power_sum(3))))(a)
    np.testing.assert_allclose(g, 3 * np.swapaxes(a @ a, -1, -2), rtol=1e-9, atol=1e-9)


def test_jit_source_calls_numpy_helper():
    text = fungrad.jit(eig).lower(_mat(11)).source()
    assert "_eig.eig(" in text


# --- sqrtm ---------------------------------------------------------------------------

def test_sqrtm_matches_scipy():
    a = _mat(12, (3, 3), positive=True)
    x = sqrtm(a)
    assert x.dtype == np.float64
    np.testing.assert_allclose(x, scipy.linalg.sqrtm(a), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(x @ x, a, atol=1e-10)
    check_grads(sqrtm, (a,), order=1)


def test_sqrtm_negative_eigenvalue_and_complex_input():
    a = np.diag([-4.0, 9.0])
    x = sqrtm(a)
    assert np.iscomplexobj(x)
    np.testing.assert_allclose(x, scipy.linalg.sqrtm(a), atol=1e-12)
    c = _mat(13, (3, 3), np.complex128, positive=True)
    np.testing.assert_allclose(sqrtm(c) @ sqrtm(c), c, atol=1e-10)


# --- bad input -----------------------------------------------------------------------

def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        eig(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="square"):
        eig(np.zeros(3))
    with pytest.raises(TypeError, match="int64"):
        eig(np.eye(2, dtype=np.int64))
    with pytest.raises(ValueError, match="linalg.eig"):
        eig_numpy(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="square"):
        fungrad.jit(eig)(np.zeros((2, 3)))
