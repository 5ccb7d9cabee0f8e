"""Cases for the rest of ``jax.lax.linalg``: ``schur``, ``hessenberg``,
``householder_product``, ``tridiagonal``, ``tridiagonal_solve``,
``cholesky_update``, ``symmetric_product`` and ``qdwh``.  The packed LAPACK
outputs are compared with SciPy's LAPACK wrappers (gehrd, sytrd/hetrd,
orgqr/ungqr)."""
import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from fungrad import lax
from tests.harness import Arg, Case

RC = ("float64", "complex128")
LA = lax.linalg


def _per_matrix(fn):
    """``fn`` of one matrix (or matrices), mapped over leading batch axes."""
    def mapped(*arrays):
        batch = arrays[0].shape[:-2]
        if not batch:
            return fn(*arrays)
        outs = [fn(*[a[i] for a in arrays]) for i in np.ndindex(*batch)]
        if isinstance(outs[0], tuple):
            return tuple(np.stack(parts).reshape(batch + parts[0].shape) for parts in zip(*outs))
        return np.stack(outs).reshape(batch + outs[0].shape)
    return mapped


def _lapack(name, dtype):
    prefix = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[np.dtype(dtype).name]
    return getattr(lapack, prefix + name)


@_per_matrix
def _gehrd(a):
    packed, taus, _ = _lapack("gehrd", a.dtype)(a)
    return packed, taus[:a.shape[-1] - 1]


def _sytrd(lower):
    @_per_matrix
    def ref(a):
        name = "hetrd" if np.iscomplexobj(a) else "sytrd"
        packed, d, e, taus, _ = _lapack(name, a.dtype)(a, lower=int(lower))
        return packed, d, e, taus
    return ref


@_per_matrix
def _orgqr(a, taus):
    name = "ungqr" if np.iscomplexobj(a) else "orgqr"
    return _lapack(name, a.dtype)(a, taus)[0]


def _schur_check(out, args):
    (a,), (t, z) = args, out
    t, z = np.asarray(t), np.asarray(z)
    z_h = np.conj(np.swapaxes(z, -1, -2))
    np.testing.assert_allclose(z @ t @ z_h, a, atol=1e-10)
    np.testing.assert_allclose(z_h @ z, np.broadcast_to(np.eye(a.shape[-1]), a.shape), atol=1e-10)
    below = np.tril(t, -1 if np.iscomplexobj(a) else -2)
    assert not np.any(below), "t is not (quasi) upper triangular"
    if not np.iscomplexobj(a) and a.shape[-1] > 2:
        sub = np.diagonal(t, -1, -2, -1)
        assert not np.any((sub[..., 1:] != 0) & (sub[..., :-1] != 0)), "blocks larger than 2x2"


def _tridiagonal_dense(dl, d, du):
    n = d.shape[-1]
    a = np.zeros(d.shape + (n,), np.result_type(dl, d, du))
    i = np.arange(n)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


def _upper_factor(rng, shape, dtype):
    """An upper Cholesky factor: upper triangular with a diagonal in [1, 2]."""
    r = np.triu(rng.uniform(-0.5, 0.5, shape))
    n = shape[-1]
    r[..., np.arange(n), np.arange(n)] = rng.uniform(1, 2, shape[:-1])
    return r.astype(dtype)


def _cholesky_update_ref(r, w):
    a = np.swapaxes(r, -1, -2) @ r + w[..., :, None] * w[..., None, :]
    return np.swapaxes(np.linalg.cholesky(a), -1, -2)


def _polar_ref(x):
    u, h = scipy.linalg.polar(x)
    return u, h


CASES = [
    Case("lax.schur", LA.schur, None, [Arg((4, 4), RC)], prims=("schur",), check=_schur_check,
         grad_order=0),
    Case("lax.schur_batched", LA.schur, None, [Arg((2, 3, 3), RC)], prims=("schur",),
         check=_schur_check, grad_order=0),
    Case("lax.schur_no_vectors", lambda a: LA.schur(a, compute_schur_vectors=False)[0],
         lambda a: LA.schur(a)[0], [Arg((5, 5))], prims=("schur",), grad_order=0),
    Case("lax.hessenberg", LA.hessenberg, _gehrd, [Arg((2, 4, 4), RC)], prims=("hessenberg",),
         grad_order=0),
    Case("lax.tridiagonal_lower", LA.tridiagonal, _sytrd(True), [Arg((2, 4, 4), RC)],
         prims=("tridiagonal",), grad_order=0),
    Case("lax.tridiagonal_upper", lambda a: LA.tridiagonal(a, lower=False), _sytrd(False),
         [Arg((4, 4), RC)], prims=("tridiagonal",), grad_order=0),
    Case("lax.householder_product", LA.householder_product, _orgqr,
         [Arg((2, 5, 3), RC), Arg((2, 2), "same", low=0.5, high=1.5)]),
    Case("lax.householder_product_square", LA.householder_product, _orgqr,
         [Arg((3, 3), RC), Arg((3,), "same", low=0.5, high=1.5)]),
    Case("lax.tridiagonal_solve",
         lambda dl, d, du, b: LA.tridiagonal_solve(dl, d, du, b),
         lambda dl, d, du, b: np.linalg.solve(_tridiagonal_dense(dl, d, du), b),
         [Arg((2, 4), RC, low=-1, high=1), Arg((2, 4), "same", low=2, high=3),
          Arg((2, 4), "same", low=-1, high=1), Arg((2, 4, 3), "same")],
         prims=("tridiagonal_solve",)),
    # small pivots, so the elimination exchanges rows; off-diagonals of opposite
    # signs and an even size keep the matrix well conditioned (nearly skew-symmetric)
    Case("lax.tridiagonal_solve_pivoting",
         lambda dl, d, du, b: LA.tridiagonal_solve(dl, d, du, b),
         lambda dl, d, du, b: np.linalg.solve(_tridiagonal_dense(dl, d, du), b),
         [Arg((4,), low=1, high=2), Arg((4,), low=-0.3, high=0.3),
          Arg((4,), low=-2, high=-1), Arg((4, 2))], prims=("tridiagonal_solve",)),
    Case("lax.cholesky_update", LA.cholesky_update, _cholesky_update_ref,
         [Arg((3, 3), make=_upper_factor), Arg((3,), low=-1, high=1)],
         prims=("cholesky_update",)),
    Case("lax.cholesky_update_batched", LA.cholesky_update, _cholesky_update_ref,
         [Arg((2, 4, 4), make=_upper_factor), Arg((2, 4), low=-1, high=1)],
         prims=("cholesky_update",)),
    Case("lax.symmetric_product", lambda a, c: LA.symmetric_product(a, c, alpha=2.0, beta=-0.5),
         lambda a, c: 2.0 * a @ np.swapaxes(a, -1, -2) - 0.5 * c,
         [Arg((2, 3, 4)), Arg((2, 3, 3))], prims=("dot_general",)),
    Case("lax.symmetric_product_symmetrized", lambda a, c: LA.symmetric_product(
        a, c, symmetrize_output=True),
        lambda a, c: np.tril(a @ a.T) + np.tril(a @ a.T, -1).T, [Arg((3, 2)), Arg((3, 3))]),
    Case("lax.ormqr_left_transposed", lambda a, taus, c: LA.ormqr(a, taus, c, transpose=True),
         lambda a, taus, c: np.conj(_orgqr(np.pad(a, ((0, 0), (0, 2))), taus)).T @ c,
         [Arg((5, 3), RC), Arg((3,), "same", low=0.5, high=1.5), Arg((5, 2), "same")]),
    Case("lax.ormqr_right", lambda a, taus, c: LA.ormqr(a, taus, c, left=False),
         lambda a, taus, c: c @ _orgqr(np.pad(a, ((0, 0), (0, 1))), taus),
         [Arg((4, 3)), Arg((2,), low=0.5, high=1.5), Arg((3, 4))]),
    Case("lax.qdwh", lambda x: LA.qdwh(x)[:2], _polar_ref, [Arg((4, 3), RC)],
         prims=("qr", "cholesky", "while"), grad_order=1),
]
