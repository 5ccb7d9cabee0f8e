"""fungrad.experimental.sparse.BCOO (jax.experimental.sparse.BCOO): every
operation equals the same operation on the dense array, for random sparsity
patterns; it is a pytree that jit, vmap and grad see through."""
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
from fungrad.experimental import sparse
from fungrad.experimental.sparse import BCOO

sparse_matrices = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=5),
                             elements=st.sampled_from([0.0, 0.0, 1.5, -2.0, 3.25]))


@given(sparse_matrices, st.integers(1, 3))
def test_bcoo_operations_equal_dense_ones(a, m):
    M = BCOO.fromdense(a)
    assert M.nse == np.count_nonzero(a) and M.shape == a.shape
    np.testing.assert_array_equal(M.todense(), a)
    np.testing.assert_array_equal(M.T.todense(), a.T)
    rhs = np.arange(a.shape[1] * m, dtype=float).reshape(a.shape[1], m)
    np.testing.assert_allclose(M @ rhs, a @ rhs, rtol=1e-14)
    np.testing.assert_allclose(M @ rhs[:, 0], a @ rhs[:, 0], rtol=1e-14)
    lhs = np.linspace(-1, 1, 2 * a.shape[0]).reshape(2, a.shape[0])
    np.testing.assert_allclose(lhs @ M, lhs @ a, rtol=1e-14, atol=1e-15)
    for axis in (None, 0, 1, (0, 1)):
        np.testing.assert_allclose(M.sum(axis), a.sum(axis), rtol=1e-14)
    np.testing.assert_array_equal((-2 * M).todense(), -2 * a)
    from_scipy = BCOO.from_scipy_sparse(scipy.sparse.csr_matrix(a))
    np.testing.assert_array_equal(sparse.todense(from_scipy), a)


def test_bcoo_repeated_indices_add_up_and_bad_input():
    M = BCOO((np.array([1.0, 2.0]), np.array([[0, 1], [0, 1]])), shape=(2, 2))
    np.testing.assert_array_equal(M.todense(), [[0.0, 3.0], [0.0, 0.0]])
    np.testing.assert_array_equal(M @ np.ones(2), [3.0, 0.0])
    with pytest.raises(ValueError, match=r"indices must have shape \(nse, 2\)"):
        BCOO((np.ones(2), np.zeros((2, 3), int)), shape=(2, 2))
    with pytest.raises(ValueError, match="do not contract"):
        M @ np.ones(3)
    with pytest.raises(NotImplementedError, match="n_batch"):
        BCOO.fromdense(np.eye(2), n_batch=1)
    with pytest.raises(fungrad.errors.ConcretizationTypeError, match="nse="):
        fungrad.jit(lambda a: BCOO.fromdense(a).todense())(np.eye(2))


def test_bcoo_under_jit_vmap_and_grad():
    a = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]])
    M = BCOO.fromdense(a)
    np.testing.assert_allclose(fungrad.jit(lambda m, v: m @ v)(M, np.ones(3)), a @ np.ones(3))
    np.testing.assert_allclose(fungrad.vmap(lambda v: M @ v)(np.eye(3)), (a @ np.eye(3)).T)
    np.testing.assert_array_equal(fungrad.jit(lambda x: BCOO.fromdense(x, nse=3).todense())(a), a)
    v = np.array([1.0, -2.0, 0.5])
    # d/d data of sum(M v) = v[col of each entry]; d/d v = column sums of M
    g_data = fungrad.grad(lambda d: (BCOO((d, M.indices), shape=M.shape) @ v).sum())(M.data)
    np.testing.assert_allclose(g_data, v[np.asarray(M.indices)[:, 1]])
    np.testing.assert_allclose(fungrad.grad(lambda w: (M @ w).sum())(v), a.sum(0))
