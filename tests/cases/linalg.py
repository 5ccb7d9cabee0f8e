"""Cases for the decompositions of fungrad.lax.linalg and for
fungrad.numpy.linalg (see tests/harness.py).

Structured inputs come from ``make=`` functions: positive-definite matrices,
well-conditioned ones, symmetric matrices with well-separated eigenvalues and
matrices with well-separated singular values (the derivatives of eigen- and
singular vectors divide by the gaps), and permuted column-diagonally-dominant
matrices for ``lu`` (its pivots then stay put under finite-difference steps).

Decompositions whose factors have a sign ambiguity are compared through
properties (``check``) and differentiated through sign-invariant functions of
their outputs (weighted squares, reconstructions, projectors).

Most cases draw real or complex matrices (``RC``): the makers then build the
complex analogue (unitary factors, Hermitian matrices, ``xᴴ`` for ``xᵀ``), and
the functions of eigen- and singular vectors are phase-invariant (|x|², the
products u·vᴴ), since complex vectors are unique only up to a phase each.
"""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from fungrad.lax import linalg as lax_linalg
from tests.harness import Arg, Case


RC = ("float64", "complex128")          # real or complex draws
RC32 = ("float64", "complex128", "complex64")


# --- input makers: make(rng, shape, dtype) -----------------------------------------------

def _is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


def _uniform(rng, shape, dtype, low=-1.0, high=1.0):
    """Uniform entries; complex dtypes get an independent imaginary part."""
    x = rng.uniform(low, high, shape)
    return x + 1j * rng.uniform(low, high, shape) if _is_complex(dtype) else x


def _normal(rng, shape, dtype):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if _is_complex(dtype) else x


def _h(x):
    """Conjugate transpose of the last two axes."""
    return np.conj(np.swapaxes(x, -1, -2))


def _orthogonal(rng, batch, n, dtype=np.float64):
    """Orthogonal (unitary for complex dtype) matrices."""
    q, r = np.linalg.qr(_normal(rng, batch + (n, n), dtype))
    d = np.diagonal(r, axis1=-2, axis2=-1)
    return q * (d / np.abs(d))[..., None, :]


def well_conditioned(rng, shape, dtype):
    """Diagonally dominant: every triangle is far from singular."""
    n = shape[-1]
    return (_uniform(rng, shape, dtype) + (n + 1) * np.eye(n)).astype(dtype)


def spd(rng, shape, dtype):
    """Symmetric (complex: Hermitian) positive definite."""
    x = _uniform(rng, shape, dtype)
    return (x @ _h(x) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def spread_symmetric(rng, shape, dtype):
    """Q diag(λ) Qᴴ with eigenvalues about 1 apart (Q unitary for complex)."""
    n, batch = shape[-1], tuple(shape[:-2])
    q = _orthogonal(rng, batch, n, dtype)
    lam = np.arange(n) - n / 2 + rng.uniform(-0.2, 0.2, batch + (n,))
    return ((q * lam[..., None, :]) @ _h(q)).astype(dtype)


def spread_singular(rng, shape, dtype):
    """U diag(s) Vᴴ with singular values about 1 apart and at least ~1."""
    *batch, m, n = shape
    batch, k = tuple(batch), min(m, n)
    u = _orthogonal(rng, batch, m, dtype)[..., :k]
    v = _orthogonal(rng, batch, n, dtype)[..., :k]
    s = k + 1.0 - np.arange(k) + rng.uniform(-0.2, 0.2, batch + (k,))
    return ((u * s[..., None, :]) @ _h(v)).astype(dtype)


def lu_friendly(rng, shape, dtype):
    """Rows of a column-diagonally-dominant matrix in random order: partial
    pivoting picks each pivot by a wide margin."""
    *batch, m, n = shape
    signs = rng.choice([-1, 1], shape[:-1] + (1,))
    d = _uniform(rng, shape, dtype) + (m + 1) * np.eye(m, n) * signs
    perm = rng.permuted(np.broadcast_to(np.arange(m), tuple(batch) + (m,)), axis=-1)
    return np.take_along_axis(d, perm[..., :, None], axis=-2).astype(dtype)


def low_rank(rng, shape, dtype):
    *batch, m, n = shape
    r = max(min(m, n) - 1, 0)
    return (_normal(rng, tuple(batch) + (m, r), dtype) @
            _normal(rng, tuple(batch) + (r, n), dtype)).astype(dtype)


def spd_in_lower_triangle(rng, shape, dtype):
    """A positive-definite lower triangle with noise above it (and, complex, an
    imaginary part on the diagonal), which cholesky must not read."""
    a = spd(rng, shape, dtype) + np.triu(_uniform(rng, shape, dtype, -5, 5), 1)
    if _is_complex(dtype):
        a = a + 1j * np.diag(rng.uniform(-1, 1, shape[-1]))
    return a.astype(dtype)


def pivots(size):
    def make(rng, shape, dtype):
        k = shape[-1]
        cols = [rng.integers(j, size, shape[:-1]) for j in range(k)]
        return np.stack(cols, -1).astype(dtype) if k else np.zeros(shape, dtype)
    return make


def permutations(rng, shape, dtype):
    return rng.permuted(np.broadcast_to(np.arange(shape[-1]), shape), axis=-1).astype(dtype)


def tensor_system(rng, shape, dtype):
    """(2, 3, 6)-shaped tensors whose (6, 6) matricisation is well-conditioned."""
    n = int(np.prod(shape[:2]))
    return well_conditioned(rng, (n, n), dtype).reshape(shape)


# --- references and checks ------------------------------------------------------------

def _tri(a, lower, unit):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return t


def _tri_solve_ref(left, lower, trans, unit, conj=False):
    def ref(a, b):
        t = _tri(a, lower, unit)
        t = np.swapaxes(t, -1, -2) if trans else t
        t = np.conj(t) if conj else t
        if left:
            return np.linalg.solve(t, b)
        return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return ref


def _sym(a):
    """(a + aᴴ) / 2: what eigh decomposes (symmetrize_input)."""
    return (a + _h(a)) / 2


def _check_lu(out, args):
    (a,), (lu_, piv, perm) = args, out
    m, n = a.shape[-2:]
    k = min(m, n)
    low = np.tril(lu_, -1)[..., :, :k] + np.eye(m, k)
    up = np.triu(lu_)[..., :k, :]
    np.testing.assert_allclose(low @ up, np.take_along_axis(a, perm[..., :, None], -2),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(perm, lax_linalg._lu_pivots_to_permutation_numpy(piv, m))


def _check_qr(out, args):
    (a,), (q, r) = args, out
    tol = 1e-10 if q.dtype.itemsize >= 16 or q.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(q @ r, a, atol=tol)
    np.testing.assert_allclose(_h(q) @ q, np.eye(q.shape[-1]) + 0 * q[..., :1, :], atol=tol)
    np.testing.assert_array_equal(np.tril(r, -1), 0 * r)


def _check_eigh(out, args):
    (a,), (v, w) = args, out
    assert w.dtype == np.finfo(a.dtype).dtype           # real eigenvalues
    np.testing.assert_allclose((v * w[..., None, :]) @ _h(v), _sym(a), atol=1e-10)
    assert np.all(np.diff(w, axis=-1) >= 0)


def _check_svd(out, args):
    (a,), (u, s, vh) = args, out
    k = s.shape[-1]
    assert s.dtype == np.finfo(a.dtype).dtype           # real singular values
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-10)
    assert np.all(s >= 0) and np.all(np.diff(s, axis=-1) <= 0)


def _weights(shape, seed):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def _weighted_squares(*xs):
    """Sum of w |x|² over the outputs: invariant under sign flips (complex:
    phase changes) of vectors."""
    total = 0.0
    for i, x in enumerate(xs):
        total = total + fnp.sum(_weights(x.shape, i) * fnp.real(x * fnp.conj(x)))
    return total


def _lu_ref_permutation(pivs, size):
    return lax_linalg._lu_pivots_to_permutation_numpy(pivs, size)


# --- lax.linalg cases -------------------------------------------------------------------

TRI_VARIANTS = {
    # name: (a shape, b shape, left_side, lower, transpose_a, unit_diagonal)
    "left_lower": ((3, 3), (3, 2), True, True, False, False),
    "left_upper_trans": ((2, 3, 3), (2, 3, 4), True, False, True, False),
    "right_lower_unit": ((3, 3), (2, 3), False, True, False, True),
    "right_upper": ((2, 3, 3), (2, 1, 3), False, False, False, False),
    "right_lower_trans": ((4, 4), (2, 4), False, True, True, False),
    "left_upper_unit_trans": ((3, 3), (3, 1), True, False, True, True),
    "empty_rhs": ((3, 3), (3, 0), True, True, False, False),
}

TRIANGULAR_CASES = [
    Case(f"lax.triangular_solve_{name}",
         (lambda kw: lambda a, b: lax.linalg.triangular_solve(a, b, **kw))(
             dict(left_side=left, lower=lower, transpose_a=trans, unit_diagonal=unit)),
         _tri_solve_ref(left, lower, trans, unit),
         [Arg(sa, RC, make=well_conditioned), Arg(sb, "same")], prims=("triangular_solve",))
    for name, (sa, sb, left, lower, trans, unit) in TRI_VARIANTS.items()
] + [
    Case(f"lax.triangular_solve_conjugate{'_trans' if trans else ''}",
         (lambda trans: lambda a, b: lax.linalg.triangular_solve(
             a, b, left_side=True, lower=True, transpose_a=trans, conjugate_a=True))(trans),
         _tri_solve_ref(True, True, trans, False, conj=True),
         [Arg((3, 3), RC32, make=well_conditioned), Arg((3, 2), "same")],
         prims=("triangular_solve",), rtol=2e-5, atol=1e-6)
    for trans in (False, True)
]

DECOMPOSITION_CASES = [
    Case("lax.cholesky", lax.linalg.cholesky, np.linalg.cholesky,
         [Arg("sqmat", RC, make=spd)], prims=("cholesky",)),
    Case("lax.cholesky_batched", lax.linalg.cholesky, np.linalg.cholesky,
         [Arg((2, 3, 3), RC32, make=spd)], prims=("cholesky",), rtol=1e-5, atol=1e-6),
    Case("lax.cholesky_empty", lax.linalg.cholesky, np.linalg.cholesky,
         [Arg((0, 0), make=spd)], prims=("cholesky",)),
    Case("lax.cholesky_lower_triangle_only",
         lambda a: lax.linalg.cholesky(a, symmetrize_input=False),
         np.linalg.cholesky, [Arg((3, 3), RC, make=spd_in_lower_triangle)],
         prims=("cholesky",)),
    Case("lax.lu", lambda a: lax.linalg.lu(a), None, [Arg((2, 4, 4), RC, make=lu_friendly)],
         prims=("lu",), grad_order=0, check=_check_lu),
    Case("lax.lu_rect", lambda a: lax.linalg.lu(a), None, [Arg((3, 5), RC)], prims=("lu",),
         grad_order=0, check=_check_lu),
    Case("lax.lu_factor_square", lambda a: lax.linalg.lu(a)[0], None,
         [Arg("sqmat", RC, make=lu_friendly)], prims=("lu", "permutation_matrix",
                                                       "triangular_solve")),
    Case("lax.lu_factor_tall", lambda a: lax.linalg.lu(a)[0], None,
         [Arg((2, 4, 3), RC, make=lu_friendly)], prims=("lu",)),
    Case("lax.lu_factor_wide", lambda a: lax.linalg.lu(a)[0], None,
         [Arg((3, 5), RC, make=lu_friendly)], prims=("lu",)),
    Case("lax.lu_empty", lambda a: lax.linalg.lu(a), None, [Arg((0, 3, 3))], prims=("lu",),
         grad_order=0, check=_check_lu),
    Case("lax.lu_pivots_to_permutation",
         lambda p: lax.linalg.lu_pivots_to_permutation(p, 4),
         lambda p: _lu_ref_permutation(p, 4),
         [Arg((2, 3), dtype="int32", make=pivots(4))], prims=("lu_pivots_to_permutation",),
         grad_order=0),
    Case("lax.permutation_matrix", lambda p: lax_linalg.permutation_matrix(p),
         lambda p: np.eye(p.shape[-1])[p], [Arg((2, 4), dtype="int32", make=permutations)],
         prims=("permutation_matrix",), grad_order=0),
    Case("lax.qr_values", lambda a: lax.linalg.qr(a, full_matrices=False), None,
         [Arg((2, 4, 3), RC32)], prims=("qr",), grad_order=0, check=_check_qr),
    Case("lax.qr_full_values", lambda a: lax.linalg.qr(a), None,
         [Arg((3, 5), RC)], prims=("qr",), grad_order=0, check=_check_qr),
    Case("lax.qr_weighted", lambda a: _weighted_squares(*lax.linalg.qr(a, full_matrices=False)),
         None, [Arg((4, 3), RC, make=spread_singular)], prims=("qr", "triangular_solve")),
    Case("lax.qr_batched_product",
         lambda a: (lambda q, r: q * fnp.diagonal(r, 0, -2, -1)[..., None, :])(
             *lax.linalg.qr(a, full_matrices=False)),
         None, [Arg((2, 3, 3), RC, make=spread_singular)], prims=("qr",)),
    Case("lax.eigh_values", lambda a: lax.linalg.eigh(a), None, [Arg((2, 3, 3), RC)],
         prims=("eigh",), grad_order=0, check=_check_eigh),
    Case("lax.eigh_eigenvalues", lambda a: lax.linalg.eigh(a)[1],
         lambda a: np.linalg.eigvalsh(_sym(a)), [Arg("sqmat", RC, make=spread_symmetric)],
         prims=("eigh",)),
    Case("lax.eigh_function_of_matrix",
         lambda a: (lambda v, w: (v * fnp.sin(w)[..., None, :])
                    @ fnp.conj(fnp.matrix_transpose(v)))(*lax.linalg.eigh(a)),
         lambda a: (lambda w, v: (v * np.sin(w)[..., None, :]) @ _h(v))(*np.linalg.eigh(_sym(a))),
         [Arg((2, 3, 3), RC, make=spread_symmetric)], prims=("eigh",), rtol=1e-6, atol=1e-9),
    Case("lax.eigh_upper_projectors",
         lambda a: _weighted_squares(lax.linalg.eigh(a, lower=False, symmetrize_input=False)[0]),
         None, [Arg((3, 3), RC, make=spread_symmetric)], prims=("eigh",)),
    Case("lax.svd_values", lambda a: lax.linalg.svd(a, full_matrices=False), None,
         [Arg((2, 4, 3), RC)], prims=("svd",), grad_order=0, check=_check_svd),
    Case("lax.svd_full_values", lambda a: lax.linalg.svd(a), None, [Arg((3, 5), RC)],
         prims=("svd",), grad_order=0, check=_check_svd),
    Case("lax.svd_singular_values", lambda a: lax.linalg.svd(a, compute_uv=False),
         lambda a: np.linalg.svd(a, compute_uv=False),
         [Arg((2, 4, 3), RC, make=spread_singular)], prims=("svd",)),
    Case("lax.svd_weighted_tall",
         lambda a: _weighted_squares(*lax.linalg.svd(a, full_matrices=False)), None,
         [Arg((4, 3), RC, make=spread_singular)], prims=("svd",)),
    Case("lax.svd_weighted_wide",
         lambda a: _weighted_squares(*lax.linalg.svd(a, full_matrices=False)), None,
         [Arg((2, 3, 4), RC, make=spread_singular)], prims=("svd",)),
    Case("lax.svd_square_full",
         lambda a: (lambda u, s, vh: (u * s[..., None, :] ** 2) @ vh)(*lax.linalg.svd(a)),
         lambda a: (lambda u, s, vh: (u * s[..., None, :] ** 2) @ vh)(*np.linalg.svd(a)),
         [Arg((3, 3), RC, make=spread_singular)], prims=("svd",), rtol=1e-6, atol=1e-9,
         grad_order=1),
]

HELPER_CASES = [
    Case("lax.linalg.det", lax_linalg.det, np.linalg.det,
         [Arg("sqmat", RC, make=well_conditioned)], prims=("det", "adjugate")),
    Case("lax.linalg.det_empty", lax_linalg.det, np.linalg.det, [Arg((2, 0, 0), RC)],
         prims=("det",)),
    Case("lax.linalg.adjugate", lax_linalg.adjugate,
         lambda a: np.linalg.det(a)[..., None, None] * np.linalg.inv(a),
         [Arg((2, 3, 3), RC, make=well_conditioned)], prims=("adjugate",), rtol=1e-6, atol=1e-9),
    Case("lax.linalg.adjugate_1x1", lax_linalg.adjugate, lambda a: np.ones_like(a),
         [Arg((2, 1, 1), RC, make=well_conditioned)], prims=("adjugate",)),
    Case("lax.linalg.slogdet", lax_linalg.slogdet, lambda a: tuple(np.linalg.slogdet(a)),
         [Arg((2, 3, 3), RC32, make=well_conditioned)], prims=("slogdet", "linear_solve"),
         rtol=1e-5, atol=1e-6),
    Case("lax.linalg.linear_solve", lax_linalg.linear_solve, np.linalg.solve,
         [Arg((2, 3, 3), RC, make=well_conditioned), Arg((2, 3, 2), "same")],
         prims=("linear_solve",)),
    Case("lax.linalg.pinv", lambda a: lax_linalg.pinv(a, 1e-15), np.linalg.pinv,
         [Arg((2, 4, 3), RC, make=spread_singular)], prims=("pinv",)),
]

# --- fungrad.numpy.linalg cases ---------------------------------------------------------

LA = fnp.linalg

NUMPY_LINALG_CASES = [
    Case("linalg.solve_vector", LA.solve, np.linalg.solve,
         [Arg((3, 3), RC, make=well_conditioned), Arg((3,), "same")], prims=("linear_solve",)),
    Case("linalg.solve_matrix", LA.solve, np.linalg.solve,
         [Arg((2, 3, 3), RC, make=well_conditioned), Arg((2, 3, 2), "same")],
         prims=("linear_solve",)),
    Case("linalg.solve_shared_matrix", LA.solve, np.linalg.solve,
         [Arg((3, 3), RC, make=well_conditioned), Arg((2, 3, 2), "same")],
         prims=("linear_solve",)),
    Case("linalg.solve_broadcast", LA.solve, np.linalg.solve,
         [Arg((1, 3, 3), RC, make=well_conditioned), Arg((2, 3, 1), RC)], prims=("linear_solve",)),
    Case("linalg.solve_int", LA.solve, np.linalg.solve,
         [Arg((2, 2), dtype="int32", make=lambda r, s, d: np.array([[3, 1], [1, 2]], d)),
          Arg((2,))], prims=("linear_solve",)),
    Case("linalg.inv", LA.inv, np.linalg.inv, [Arg("sqmat", RC, make=well_conditioned)],
         prims=("linear_solve",)),
    Case("linalg.inv_batched", LA.inv, np.linalg.inv,
         [Arg((2, 3, 3), RC, make=well_conditioned)],
         prims=("linear_solve",)),
    Case("linalg.det", LA.det, np.linalg.det, [Arg((2, 3, 3), RC, make=well_conditioned)],
         prims=("det", "adjugate")),
    Case("linalg.slogdet", LA.slogdet, np.linalg.slogdet,
         [Arg("sqmat", RC, make=well_conditioned)],
         prims=("slogdet",)),
    Case("linalg.cholesky_upper", lambda a: LA.cholesky(a, upper=True),
         lambda a: np.linalg.cholesky(a, upper=True), [Arg((2, 3, 3), RC, make=spd)],
         prims=("cholesky",)),
    Case("linalg.qr_r", lambda a: LA.qr(a, mode="r"), None, [Arg((4, 3), RC)], prims=("qr",),
         grad_order=0, check=lambda out, args: np.testing.assert_allclose(
             np.abs(out), np.abs(np.linalg.qr(args[0], mode="r")), atol=1e-10)),
    Case("linalg.qr_complete", lambda a: LA.qr(a, mode="complete"), None, [Arg((4, 3), RC)],
         prims=("qr",), grad_order=0, check=_check_qr),
    Case("linalg.qr_reduced_grad", lambda a: _weighted_squares(*LA.qr(a)), None,
         [Arg((2, 3, 3), RC, make=spread_singular)], prims=("qr",)),
    Case("linalg.eigvalsh", LA.eigvalsh, np.linalg.eigvalsh,
         [Arg((2, 3, 3), RC, make=spread_symmetric)], prims=("eigh",)),
    Case("linalg.eigh", LA.eigh, None, [Arg((3, 3), RC, make=spread_symmetric)], prims=("eigh",),
         grad_order=0, check=lambda out, args: _check_eigh(out[::-1], args)),
    Case("linalg.eigh_projector_grad",
         lambda a: (lambda w, v: _weighted_squares(v) + fnp.sum(w ** 3))(*LA.eigh(a)), None,
         [Arg((2, 4, 4), RC, make=spread_symmetric)], prims=("eigh",)),
    Case("linalg.svdvals", LA.svdvals, np.linalg.svdvals, [Arg((3, 4), RC, make=spread_singular)],
         prims=("svd",)),
    Case("linalg.svd", lambda a: LA.svd(a, full_matrices=False), None,
         [Arg((2, 4, 3), RC, make=spread_singular)], prims=("svd",), grad_order=0,
         check=_check_svd),
    Case("linalg.svd_reconstruct_grad",
         lambda a: (lambda u, s, vh: (u * fnp.exp(s)[..., None, :]) @ vh)(
             *LA.svd(a, full_matrices=False)),
         lambda a: (lambda u, s, vh: (u * np.exp(s)[..., None, :]) @ vh)(
             *np.linalg.svd(a, full_matrices=False)),
         [Arg((4, 3), RC, make=spread_singular)], prims=("svd",), rtol=1e-6, atol=1e-8,
         grad_order=1),
    Case("linalg.pinv", LA.pinv, np.linalg.pinv, [Arg((3, 4), RC, make=spread_singular)],
         prims=("pinv",)),
    Case("linalg.pinv_low_rank_values", LA.pinv, np.linalg.pinv,
         [Arg((4, 3), RC, make=low_rank)],
         prims=("pinv",), grad_order=0, rtol=1e-6, atol=1e-8),
    Case("linalg.lstsq", lambda a, b: LA.lstsq(a, b),
         lambda a, b: np.linalg.lstsq(a, b, rcond=None),
         [Arg((5, 3), RC, make=spread_singular), Arg((5, 2), "same")], prims=("pinv", "svd"),
         grad_order=0, rtol=1e-6, atol=1e-9),
    Case("linalg.lstsq_solution", lambda a, b: LA.lstsq(a, b)[0],
         lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
         [Arg((5, 3), RC, make=spread_singular), Arg((5,), "same")], prims=("pinv",), rtol=1e-6,
         atol=1e-9, grad_order=1),
    Case("linalg.matrix_rank", LA.matrix_rank, np.linalg.matrix_rank,
         [Arg((2, 4, 3), RC, make=low_rank)], prims=("svd",), grad_order=0),
    Case("linalg.matrix_power_3", lambda a: LA.matrix_power(a, 3),
         lambda a: np.linalg.matrix_power(a, 3), [Arg((2, 3, 3), RC, low=-1, high=1)],
         prims=("dot_general",)),
    Case("linalg.matrix_power_neg", lambda a: LA.matrix_power(a, -2),
         lambda a: np.linalg.matrix_power(a, -2), [Arg((3, 3), RC, make=well_conditioned)],
         prims=("linear_solve", "dot_general"), rtol=1e-6, atol=1e-9),
    Case("linalg.matrix_power_0", lambda a: LA.matrix_power(a, 0),
         lambda a: np.linalg.matrix_power(a, 0), [Arg((2, 2, 2))]),
    Case("linalg.multi_dot", lambda a, b, c, d: LA.multi_dot([a, b, c, d]),
         lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
         [Arg((3,), RC), Arg((3, 4)), Arg((4, 2), RC), Arg((2,))], prims=("dot_general",)),
    Case("linalg.multi_dot_matrices", lambda a, b, c: LA.multi_dot([a, b, c]),
         lambda a, b, c: np.linalg.multi_dot([a, b, c]),
         [Arg((2, 5)), Arg((5, 1)), Arg((1, 4))], prims=("dot_general",)),
    Case("linalg.cond", LA.cond, np.linalg.cond, [Arg((2, 3, 3), RC, make=spread_singular)],
         prims=("svd",), rtol=1e-6),
    Case("linalg.cond_fro", lambda a: LA.cond(a, "fro"), lambda a: np.linalg.cond(a, "fro"),
         [Arg((3, 3), RC, make=well_conditioned)], prims=("linear_solve",), rtol=1e-6),
    Case("linalg.tensorsolve", LA.tensorsolve, np.linalg.tensorsolve,
         [Arg((2, 3, 6), RC, make=tensor_system), Arg((2, 3), "same")], prims=("linear_solve",),
         rtol=1e-6, atol=1e-9),
    Case("linalg.tensorinv", lambda a: LA.tensorinv(a, 2), lambda a: np.linalg.tensorinv(a, 2),
         [Arg((2, 3, 6), RC, make=tensor_system)], prims=("linear_solve",), rtol=1e-6, atol=1e-9),
    Case("linalg.trace", LA.trace, np.linalg.trace, [Arg((2, 3, 4), RC)]),
    Case("linalg.diagonal", LA.diagonal, np.linalg.diagonal, [Arg((2, 3, 4), RC)]),
    Case("linalg.outer", LA.outer, np.linalg.outer, [Arg((3,), RC), Arg((2,), RC)]),
    Case("linalg.cross", LA.cross, np.linalg.cross, [Arg((2, 3), RC), Arg((2, 3), RC)]),
    Case("linalg.vecdot", LA.vecdot, np.linalg.vecdot, [Arg((2, 3), RC), Arg((3,), RC)]),
    Case("linalg.matmul", LA.matmul, np.linalg.matmul, [Arg((2, 3), RC), Arg((3, 2), RC)]),
    Case("linalg.tensordot", LA.tensordot, np.linalg.tensordot,
         [Arg((2, 3, 4), RC), Arg((3, 4, 2))]),
    Case("linalg.matrix_transpose", LA.matrix_transpose, np.linalg.matrix_transpose,
         [Arg((2, 3, 4), RC)]),
]

_NONZERO = dict(avoid=(0.0,), margin=0.2)

NORM_CASES = [
    Case("linalg.norm_flat", LA.norm, np.linalg.norm, [Arg("nonempty", dtype=RC, **_NONZERO)]),
    Case("linalg.norm_flat_keepdims", lambda x: LA.norm(x, keepdims=True),
         lambda x: np.linalg.norm(x, keepdims=True), [Arg((2, 3), dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_inf", lambda x: LA.norm(x, np.inf),
         lambda x: np.linalg.norm(x, np.inf), [Arg("vec", unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_neg_inf", lambda x: LA.norm(x, -np.inf),
         lambda x: np.linalg.norm(x, -np.inf), [Arg("vec", unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_0", lambda x: LA.norm(x, 0), lambda x: np.linalg.norm(x, 0),
         [Arg("vec", dtype=RC, **_NONZERO)], grad_order=0),
    Case("linalg.vector_norm_1", lambda x: LA.norm(x, 1), lambda x: np.linalg.norm(x, 1),
         [Arg("vec", dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_3_axis", lambda x: LA.norm(x, 3, axis=0),
         lambda x: np.linalg.norm(x, 3, axis=0), [Arg((3, 2), dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_half", lambda x: LA.norm(x, 0.5, axis=-1, keepdims=True),
         lambda x: np.linalg.norm(x, 0.5, axis=-1, keepdims=True),
         [Arg((2, 3), dtype=RC, **_NONZERO)],
         rtol=1e-6),
    Case("linalg.matrix_norm_fro", lambda x: LA.norm(x, "fro", axis=(0, 2)),
         lambda x: np.linalg.norm(x, "fro", axis=(0, 2)), [Arg((2, 3, 4), dtype=RC, **_NONZERO)]),
    Case("linalg.matrix_norm_nuc", lambda x: LA.norm(x, "nuc"),
         lambda x: np.linalg.norm(x, "nuc"), [Arg((3, 4), RC, make=spread_singular)],
         prims=("svd",)),
    Case("linalg.matrix_norm_2", lambda x: LA.norm(x, 2, axis=(-2, -1)),
         lambda x: np.linalg.norm(x, 2, axis=(-2, -1)), [Arg((2, 3, 3), RC, make=spread_singular)],
         prims=("svd",)),
    Case("linalg.matrix_norm_neg2", lambda x: LA.norm(x, -2), lambda x: np.linalg.norm(x, -2),
         [Arg((4, 3), RC, make=spread_singular)], prims=("svd",)),
    Case("linalg.matrix_norm_1", lambda x: LA.norm(x, 1), lambda x: np.linalg.norm(x, 1),
         [Arg((3, 4), unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.matrix_norm_neg1", lambda x: LA.norm(x, -1), lambda x: np.linalg.norm(x, -1),
         [Arg((3, 4), unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.matrix_norm_inf_axes", lambda x: LA.norm(x, np.inf, axis=(2, 0)),
         lambda x: np.linalg.norm(x, np.inf, axis=(2, 0)),
         [Arg((3, 2, 4), unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.matrix_norm_neg_inf_keepdims",
         lambda x: LA.norm(x, -np.inf, axis=(0, 1), keepdims=True),
         lambda x: np.linalg.norm(x, -np.inf, axis=(0, 1), keepdims=True),
         [Arg((3, 4), unique=True, dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_api", lambda x: LA.vector_norm(x, axis=(0, 1), ord=1),
         lambda x: np.linalg.vector_norm(x, axis=(0, 1), ord=1),
         [Arg((2, 3, 2), dtype=RC, **_NONZERO)]),
    Case("linalg.vector_norm_api_flat", LA.vector_norm, np.linalg.vector_norm,
         [Arg((2, 3), dtype=RC, **_NONZERO)]),
    Case("linalg.matrix_norm_api", LA.matrix_norm, np.linalg.matrix_norm,
         [Arg((2, 3, 2), dtype=RC, **_NONZERO)]),
]

CASES = TRIANGULAR_CASES + DECOMPOSITION_CASES + HELPER_CASES + NUMPY_LINALG_CASES + NORM_CASES
