"""Linear algebra on matrices holding NaN or infinities, and on matrices where
a factorization fails: JAX returns NaN results (LAPACK's, or a NaN fill)
where NumPy raises LinAlgError, and compiled code cannot raise on values, so
fungrad returns JAX's results eagerly and under jit (checked on JAX 0.10.2:
the same calls run there without raising, with the NaN patterns below).
Also jax.scipy.linalg's schur and hessenberg against SciPy."""
import numpy as np
import pytest
import scipy.linalg

import fungrad
import fungrad.numpy as fnp
import fungrad.scipy.linalg as fsl

NAN_MATRIX = np.array([[np.nan, 0.0], [0.0, 1.0]])
INF_MATRIX = np.array([[np.inf, 1.0], [1.0, 1.0]])

DECOMPOSITIONS = {
    "svd": lambda a: fnp.linalg.svd(a),
    "svdvals": lambda a: fnp.linalg.svd(a, compute_uv=False),
    "pinv": fnp.linalg.pinv,
    "lstsq": lambda a: fnp.linalg.lstsq(a, np.ones(2))[0],
    "matrix_rank": fnp.linalg.matrix_rank,
    "norm2": lambda a: fnp.linalg.norm(a, 2),
    "cond": fnp.linalg.cond,
    "polar": lambda a: fsl.polar(a)[0],
}


@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
@pytest.mark.parametrize("matrix", [NAN_MATRIX, INF_MATRIX], ids=["nan", "inf"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_nonfinite_matrix_gives_nan_not_an_exception(name, matrix, jit):
    f = fungrad.jit(DECOMPOSITIONS[name]) if jit else DECOMPOSITIONS[name]
    leaves = fungrad.tree_util.tree_leaves(f(matrix))
    floats = [np.asarray(x) for x in leaves if np.asarray(x).dtype.kind == "f"]
    assert leaves and all(np.isnan(x).any() for x in floats)   # (matrix_rank: an int)


def test_only_the_bad_matrices_of_a_stack_are_nan():
    stack = np.stack([NAN_MATRIX, np.diag([3.0, 2.0])])
    s = np.asarray(fnp.linalg.svd(stack, compute_uv=False))
    assert np.isnan(s[0]).all()
    np.testing.assert_allclose(s[1], [3.0, 2.0], rtol=1e-15)
    p = np.asarray(fnp.linalg.pinv(stack))
    assert np.isnan(p[0]).all()
    np.testing.assert_allclose(p[1], np.diag([1 / 3, 1 / 2]), rtol=1e-15)


def test_a_failed_cholesky_is_nan_below_the_diagonal_and_zero_above():
    for f in (fnp.linalg.cholesky, fungrad.jit(fnp.linalg.cholesky)):
        out = np.asarray(f(np.array([[1.0, 2.0], [2.0, 1.0]])))      # not positive definite
        assert np.isnan(np.tril(out)[np.tril_indices(2)]).all() and out[0, 1] == 0


@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (1, 1)])
def test_hessenberg_is_scipys(shape):
    a = np.random.default_rng(0).normal(size=shape)
    h, q = fsl.hessenberg(a, calc_q=True)
    h, q = np.asarray(h), np.asarray(q)
    np.testing.assert_allclose(q @ h @ np.swapaxes(q, -1, -2), a, atol=1e-13)
    assert (np.tril(h, -2) == 0).all()
    if len(shape) == 2:
        hs, qs = scipy.linalg.hessenberg(a, calc_q=True)
        np.testing.assert_allclose(h, hs, atol=1e-13)
        np.testing.assert_allclose(q, qs, atol=1e-13)
    np.testing.assert_array_equal(fsl.hessenberg(a), h)


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_reconstructs_the_matrix(output):
    a = np.random.default_rng(1).normal(size=(5, 5))
    t, z = (np.asarray(v) for v in fsl.schur(a, output=output))
    np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=1e-13)
    below = np.tril(t, -2) if output == "real" else np.tril(t, -1)
    assert (below == 0).all() and (t.dtype.kind == "c") == (output == "complex")
    ts, _ = scipy.linalg.schur(a, output=output)
    ordered = lambda m: sorted(np.linalg.eigvals(m),           # noqa: E731
                               key=lambda c: (round(c.real, 9), round(c.imag, 9)))
    np.testing.assert_allclose(ordered(t), ordered(ts), atol=1e-12)


def test_schur_names_a_bad_output():
    with pytest.raises(ValueError, match="'real' or 'complex'"):
        fsl.schur(np.eye(2), output="other")
