"""``jax.lax.linalg``: the matrix decompositions and solves.

Every primitive has all of its rules right after it.  Conventions:

* Matrices are the last two axes; any leading axes are batch axes, handled
  natively by the NumPy impls (``np.matmul`` and ``np.linalg`` broadcast over
  them), so batching rules only move the vmapped axis to the front (or fold it
  into a free dimension, which is cheaper, where the op allows it).
* JVP rules are written with lax functions (``dot_general``,
  ``triangular_solve``, ``linear_solve``, masks multiplied in as constants),
  so every decomposition can be differentiated again by re-tracing.
* The decompositions take float32/float64/complex64/complex128 matrices.
  With complex input they follow JAX: ``cholesky``/``eigh`` read one triangle
  of a Hermitian matrix (the real part of its diagonal, as LAPACK), ``eigh``'s
  eigenvalues and ``svd``'s singular values are real, ``slogdet``'s sign is
  complex of modulus 1.  JVP rules are JAX's, in complex arithmetic (``_H``
  is the conjugate transpose); transposes are plain transposes (JAX's
  convention: ``vjp`` pulls back with ``Jᵀ``, not ``Jᴴ``).  Eigen- and
  singular vectors of complex matrices are unique only up to a phase per
  vector; their JVPs pick JAX's gauge (``Im(v_iᴴ dv_i) = 0``; for svd the
  phase change goes to ``u``), so only phase-invariant functions of them
  (projectors, ``|v|``, reconstructions) have derivatives that match finite
  differences.
* Derivative formulas that divide by eigenvalue / singular value gaps
  (``eigh``, ``svd``) assume distinct values, as JAX's do: with repeated
  values the derivative of the vectors is undefined and comes out inf/nan.
* Failures follow JAX, not NumPy: a non-positive-definite ``cholesky`` gives
  NaNs and a singular ``triangular_solve``/``linear_solve`` gives inf/nan
  instead of raising ``LinAlgError`` (under ``vmap`` one bad matrix must not
  abort the whole batch).

Lowering: most decompositions lower to one ``np.linalg`` call.  The ones whose
impl is several NumPy steps (lu, triangular_solve, cholesky's NaN fallback,
linear_solve, adjugate, lu_pivots_to_permutation) lower to a call of the
function of the same name in ``fungrad.lax.kernels.linalg``, a NumPy-only
module that ``fungrad.export`` copies into exported code.

The products (``dot_general``) are in ``dot.py``, the matrix helpers the rules
share in ``_matrix.py``; the non-symmetric eigendecomposition is ``eig.py``,
the Hessenberg, Schur and tridiagonal reductions and the tridiagonal solve
``condensed.py``; this module exports them all, as ``jax.lax.linalg`` does.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

# the multi-step NumPy computations live in a NumPy-only module, so that the
# impls, the jit lowerings and fungrad.export share one copy
from fungrad._dtype_classes import finfo as dtype_finfo, is_floating, is_integer
from fungrad.lax.kernels.linalg import (  # noqa: E402
    triangular_solve as _triangular_solve_numpy, cholesky as _cholesky_numpy, lu as _lu_numpy,
    lu_pivots_to_permutation as _lu_pivots_to_permutation_numpy,
    linear_solve as _linear_solve_numpy, adjugate as _adjugate_numpy,
    cholesky_update as _cholesky_update_numpy, svd as _svd_numpy, pinv as _pinv_numpy,
    qr as _qr_kernel, eigh as _eigh_kernel)

from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.lowering import Source, call, scalar_type_name
from fungrad.interpreters.ad import Zero, defjvp, defjvp2, defjvp_zero, tangent_aval
from fungrad.lax.elementwise import (add, sub, mul, div, neg, conj, real, eq, select_n,
                                     convert_element_type)
from fungrad.lax.reductions import reduce_sum
from fungrad.lax.structural import reshape
from fungrad.lax.utils import as_operand, checked_bind, def_kernel, def_lowering
from fungrad.lax._matrix import (  # noqa: F401  (_H, _real_dtype: also used by numpy/scipy)
    _shape, _mT, _mm, _mask, _tril, _triu, _eye, _diag_part, _as_row, _as_col, _is_complex,
    _real_dtype, _H, _real_part_as, _symmetric_from_triangle, _check_square_float,
    _batch_at_front, _symmetrize)
from fungrad.lax.eig import eig
from fungrad.lax.condensed import hessenberg, schur, tridiagonal, tridiagonal_solve

__all__ = ["cholesky", "cholesky_update", "triangular_solve", "lu", "lu_pivots_to_permutation",
           "qr", "eigh", "svd", "eig", "schur", "hessenberg", "householder_product",
           "tridiagonal", "tridiagonal_solve", "symmetric_product", "qdwh", "ormqr",
           "SvdAlgorithm"]

_bind = checked_bind     # bad input gets the shape rule's clear error eagerly too


# ============================================================================
# triangular_solve
# ============================================================================
# left_side: solve op(a) @ x = b; else x @ op(a) = b, where op(a) is a, a.T
# (transpose_a) or conj(a) (conjugate_a; real matrices: no-op).  Only the
# `lower`/upper triangle of a is read; unit_diagonal: its diagonal is taken as 1.

def _triangular_solve_shape(a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    _check_square_float("triangular_solve (argument a)", a)
    if b.dtype != a.dtype:
        raise TypeError(f"triangular_solve requires a and b of the same dtype, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise ValueError(f"triangular_solve: b must have the same batch dims as a; got "
                         f"a {a.shape} and b {b.shape} (b is (..., m, n) for "
                         "left_side=True, (..., n, m) otherwise)")
    axis = -2 if left_side else -1
    if b.shape[axis] != a.shape[-1]:
        raise ValueError(f"triangular_solve: a {a.shape} and b {b.shape} are "
                         f"incompatible for left_side={left_side} (b's axis {axis} "
                         f"must have size {a.shape[-1]})")
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a,
                            conjugate_a, unit_diagonal):
    # d x = -op(a)^{-1} op(da) x (left side) or -x op(da) op(a)^{-1} (right side),
    # with da restricted to the triangle the impl reads.
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    k = 1 if unit_diagonal else 0
    g_a = neg(_tril(g_a, -k) if lower else _triu(g_a, k))
    g_a = _mT(g_a) if transpose_a else g_a
    g_a = conj(g_a) if conjugate_a and _is_complex(g_a) else g_a
    m, n = _shape(b)[-2:]
    solve = lambda rhs: triangular_solve_p.bind(a, rhs, **params)
    if left_side:  # order the two products whichever way is cheaper
        return solve(_mm(g_a, ans)) if m > n else _mm(solve(g_a), ans)
    return solve(_mm(ans, g_a)) if m < n else _mm(ans, solve(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
    return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # linear in b only: the transpose solves with op(a) transposed
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


def _triangular_solve_batch(axis_size, vals, dims, **params):
    (a, b), (ad, bd) = vals, dims
    if ad is None:
        # a shared by the batch: fold the batch into b's independent columns
        # (left side) or rows (right side) and solve once.
        shape = _shape(b)
        nb = len(shape) - 3
        if params["left_side"]:
            b = batching.moveaxis(b, bd, nb + 2)              # (..., m, n, B)
            s = _shape(b)
            x = triangular_solve_p.bind(a, reshape(b, s[:nb] + (s[-3], s[-2] * axis_size)),
                                        **params)
            return reshape(x, s), nb + 2
        b = batching.moveaxis(b, bd, nb)                      # (..., B, n, m)
        s = _shape(b)
        x = triangular_solve_p.bind(a, reshape(b, s[:nb] + (axis_size * s[-2], s[-1])), **params)
        return reshape(x, s), nb
    a = batching.moveaxis(a, ad, 0)
    b = batching.bdim_at_front(b, bd, axis_size)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p = Primitive("triangular_solve")
def_kernel(triangular_solve_p, _triangular_solve_numpy)
triangular_solve_p.def_abstract_eval(_triangular_solve_shape)
defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)
triangular_solve_p.transpose = _triangular_solve_transpose
triangular_solve_p.linear = True   # in b (a is never an undefined primal)
triangular_solve_p.batch = _triangular_solve_batch


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
    """Solve ``op(a) @ x = b`` (left_side) or ``x @ op(a) = b`` for triangular
    ``a`` (``jax.lax.linalg.triangular_solve``).  ``a``: (..., m, m); ``b``:
    (..., m, n) if left_side else (..., n, m), with the same batch dims."""
    a, b = as_operand(a), as_operand(b)
    return _bind(triangular_solve_p, a, b, left_side=bool(left_side), lower=bool(lower),
                 transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                 unit_diagonal=bool(unit_diagonal))


# ============================================================================
# cholesky
# ============================================================================

def _cholesky_shape(a):
    _check_square_float("cholesky", a)
    return ShapedArray(a.shape, a.dtype)


def _cholesky_jvp(g, L, a):
    # dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ: lower triangle with the diagonal halved; dA is the
    # Hermitian matrix the impl reads (its lower triangle mirrored).
    g = _symmetric_from_triangle(g, lower=True)
    tmp = triangular_solve(L, g, left_side=True, lower=True)
    tmp = triangular_solve(L, tmp, left_side=False, lower=True, transpose_a=True,
                           conjugate_a=True)
    phi = _mask(tmp, lambda m, n: np.tril(np.ones((m, n)), -1) + 0.5 * np.eye(m, n))
    return _mm(L, phi)


cholesky_p = Primitive("cholesky")
def_kernel(cholesky_p, _cholesky_numpy)
cholesky_p.def_abstract_eval(_cholesky_shape)
defjvp2(cholesky_p, _cholesky_jvp)
_batch_at_front(cholesky_p)


def cholesky(x, *, symmetrize_input=True):
    """Lower Cholesky factor of Hermitian positive-definite ``x`` (..., n, n)
    (``jax.lax.linalg.cholesky``); NaNs where ``x`` is not positive definite.
    ``symmetrize_input``: factor (x + xᴴ)/2 (JAX's default); otherwise only the
    lower triangle of ``x`` is read."""
    x = as_operand(x)
    if symmetrize_input:
        _check_square_float("cholesky", get_aval(x))
        x = _symmetrize(x)
    return _bind(cholesky_p, x)


# --- cholesky_update: the factor of a rank-one update ---------------------------------
# R' = upper Cholesky factor of RᵀR + w wᵀ (R upper; only its upper triangle
# is read).  JAX has no derivative for it; this JVP is Cholesky's, written for
# the upper factor: with dA = dRᵀR + RᵀdR + dw wᵀ + w dwᵀ and M = R'⁻ᵀ dA R'⁻¹,
# dR' = Φ(M) R', Φ the upper triangle with the diagonal halved.

def _cholesky_update_shape(r, w):
    _check_square_float("cholesky_update (argument r_matrix)", r)
    if not is_floating(r.dtype) or w.dtype != r.dtype:
        raise TypeError(f"cholesky_update takes real float32/float64 r_matrix and w_vector of "
                        f"one dtype (as JAX), got {r.dtype.name} and {w.dtype.name}")
    if w.shape != r.shape[:-1]:
        raise ValueError(f"cholesky_update: w_vector must have shape {r.shape[:-1]} for "
                         f"r_matrix {r.shape}, got {w.shape}")
    return ShapedArray(r.shape, r.dtype)


def _cholesky_update_jvp(primals, tangents):
    (r, w), (dr, dw) = primals, tangents
    out = cholesky_update_p.bind(r, w)
    if type(dr) is Zero and type(dw) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    r_upper = _triu(r)
    w_col = _as_col(w)
    da = None
    if type(dr) is not Zero:
        dr = _triu(dr)
        da = add(_mm(_mT(dr), r_upper), _mm(_mT(r_upper), dr))
    if type(dw) is not Zero:
        dw_col = _as_col(dw)
        outer = add(_mm(dw_col, _mT(w_col)), _mm(w_col, _mT(dw_col)))
        da = outer if da is None else add(da, outer)
    m = triangular_solve(out, da, left_side=True, lower=False, transpose_a=True)
    m = triangular_solve(out, m, left_side=False, lower=False)
    phi = _mask(m, lambda a, b: np.triu(np.ones((a, b)), 1) + 0.5 * np.eye(a, b))
    return out, _mm(phi, out)


cholesky_update_p = Primitive("cholesky_update")
def_kernel(cholesky_update_p, _cholesky_update_numpy)
cholesky_update_p.def_abstract_eval(_cholesky_update_shape)
cholesky_update_p.jvp = _cholesky_update_jvp
cholesky_update_p.batch = lambda axis_size, vals, dims: (cholesky_update_p.bind(
    *[batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]), 0)


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``Rᵀ R + w wᵀ`` from the upper factor ``R`` of
    ``Rᵀ R`` (``jax.lax.linalg.cholesky_update``), in O(n²); real matrices, any
    batch shape.  Differentiable (JAX's is not)."""
    return _bind(cholesky_update_p, as_operand(r_matrix), as_operand(w_vector))


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """``alpha a aᵀ + beta c`` for ``a`` (..., m, n) and symmetric ``c`` (..., m, m)
    (``jax.lax.linalg.symmetric_product``).  Computed in full here (JAX
    guarantees the lower triangle only); ``symmetrize_output`` mirrors the lower
    triangle into the upper one, as JAX.  Differentiable (one dot_general)."""
    a, c = as_operand(a_matrix), as_operand(c_matrix)
    aa, ca = get_aval(a), get_aval(c)
    _check_square_float("symmetric_product (argument c_matrix)", ca)
    if aa.ndim != ca.ndim or aa.shape[:-1] != ca.shape[:-1] or aa.dtype != ca.dtype:
        raise ValueError(f"symmetric_product: a_matrix (..., m, n) and c_matrix (..., m, m) "
                         f"of one dtype, got {aa.str_short()} and {ca.str_short()}")
    dtype = aa.dtype
    out = add(mul(np.asarray(alpha, dtype), _mm(a, _mT(a))), mul(np.asarray(beta, dtype), c))
    if symmetrize_output:
        out = add(_tril(out), _mT(_tril(out, -1)))
    return out


# ============================================================================
# lu, lu_pivots_to_permutation, permutation_matrix
# ============================================================================

_LU_BLOCK = 48


def _lu_shape(a):
    _check_square_float("lu", a, square=False)
    *batch, m, n = a.shape
    batch = tuple(batch)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (min(m, n),), np.int32),
            ShapedArray(batch + (m,), np.int32)]


def _lu_jvp(primals, tangents):
    # From L U = P A:  L⁻¹ (P dA) U⁻¹ = L⁻¹dL + dU U⁻¹, strictly lower + upper
    # parts, so dL = L tril(X, -1) and dU = triu(X) U with X = L⁻¹ P dA U⁻¹.
    (a,), (a_dot,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    int_zeros = [Zero(tangent_aval(get_aval(pivots))), Zero(tangent_aval(get_aval(perm)))]
    if type(a_dot) is Zero:
        return [lu_, pivots, perm], [Zero(tangent_aval(get_aval(lu_)))] + int_zeros
    m, n = _shape(a)[-2:]
    k, dtype = min(m, n), get_aval(a).dtype
    # L: (m, m) unit lower, U: (n, n) upper (rows/cols beyond k padded with I)
    L = add(_mm(_tril(lu_, -1), np.eye(n, m, dtype=dtype)), _eye(m, dtype))
    u_pad = np.diag(np.arange(n) >= k).astype(dtype)
    U = add(_mm(np.eye(n, m, dtype=dtype), _triu(lu_)), u_pad)
    x = _mm(permutation_matrix(perm, dtype), a_dot)
    la = triangular_solve(L, x, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(U, la, left_side=False, lower=False)
    lu_dot = add(_mm(L, _tril(lau, -1)), _mm(_triu(lau), U))
    return [lu_, pivots, perm], [lu_dot] + int_zeros


lu_p = Primitive("lu", multiple_results=True)
def_kernel(lu_p, _lu_numpy)
lu_p.def_abstract_eval(_lu_shape)
lu_p.jvp = _lu_jvp
_batch_at_front(lu_p)


def lu(x):
    """LU decomposition with partial pivoting (``jax.lax.linalg.lu``).

    Returns ``(lu, pivots, permutation)``: ``lu`` packs the unit-lower L (below
    the diagonal) and U; ``pivots`` (int32, (..., min(m, n))) are the row swaps;
    ``permutation`` (int32, (..., m)) satisfies ``x[..., permutation, :] == L @ U``.
    """
    return tuple(_bind(lu_p, as_operand(x)))


def _lu_pivots_to_permutation_shape(pivots, *, permutation_size):
    if not is_integer(pivots.dtype) or pivots.ndim < 1:
        raise TypeError(f"lu_pivots_to_permutation expects an integer array of pivots "
                        f"(..., k), got {pivots.str_short()}")
    if pivots.shape[-1] > permutation_size:
        raise ValueError(f"lu_pivots_to_permutation: {pivots.shape[-1]} pivots do not fit "
                         f"a permutation of size {permutation_size}")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation", differentiable=False)
def_kernel(lu_pivots_to_permutation_p, _lu_pivots_to_permutation_numpy)
lu_pivots_to_permutation_p.def_abstract_eval(_lu_pivots_to_permutation_shape)
defjvp_zero(lu_pivots_to_permutation_p)
_batch_at_front(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation (int32, (..., permutation_size)) that the row swaps
    ``pivots`` (as returned by ``lu``) perform."""
    return _bind(lu_pivots_to_permutation_p, as_operand(pivots),
                 permutation_size=int(permutation_size))


# permutation_matrix: the 0/1 matrix P with P[i, perm[i]] = 1, so that P @ x ==
# x[perm].  The lu JVP uses it to permute tangent rows with a dot_general (a
# linear, transposable op) instead of a gather.

def _permutation_matrix_numpy(permutation, dtype):
    permutation = np.asarray(permutation)
    n = permutation.shape[-1]
    return (permutation[..., :, None] == np.arange(n)).astype(dtype)


def _permutation_matrix_shape(permutation, *, dtype):
    if not is_integer(permutation.dtype) or permutation.ndim < 1:
        raise TypeError(f"permutation_matrix expects an integer array (..., n), got "
                        f"{permutation.str_short()}")
    n = permutation.shape[-1]
    return ShapedArray(permutation.shape + (n,), dtype)


permutation_matrix_p = Primitive("permutation_matrix", differentiable=False)
permutation_matrix_p.keeps_finite = True
permutation_matrix_p.def_impl(_permutation_matrix_numpy)
permutation_matrix_p.def_abstract_eval(_permutation_matrix_shape)
defjvp_zero(permutation_matrix_p)
_batch_at_front(permutation_matrix_p)
def_lowering(permutation_matrix_p, lambda a, dtype: Source(
    f"(np.asarray({a[0]})[..., :, None] == np.arange(np.shape({a[0]})[-1]))"
    f".astype({scalar_type_name(dtype)})"))


def permutation_matrix(permutation, dtype=np.float64):
    """0/1 matrices P (..., n, n) with ``P @ x == x[..., permutation, :]``."""
    return _bind(permutation_matrix_p, as_operand(permutation), dtype=np.dtype(dtype))


# ============================================================================
# qr
# ============================================================================

def _qr_numpy(a, full_matrices):
    return list(_qr_kernel(a, full_matrices))


def _qr_shape(a, *, full_matrices):
    _check_square_float("qr", a, square=False)
    *batch, m, n = a.shape
    batch = tuple(batch)
    k = m if full_matrices else min(m, n)
    return [ShapedArray(batch + (m, k), a.dtype), ShapedArray(batch + (k, n), a.dtype)]


def _qr_jvp(primals, tangents, *, full_matrices):
    # Reduced QR with m >= n (JAX's formula): with C = Qᴴ dA R⁻¹,
    # dQ = Q (Ω - C) + dA R⁻¹ and dR = (C - Ω) R, Ω = tril(C,-1) - tril(C,-1)ᴴ
    # (+ i Im(diag C) for complex: LAPACK's R has a real diagonal).
    (a,), (dx,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = _shape(a)[-2:]
    if m < n or (full_matrices and m > n):
        raise NotImplementedError(
            f"The derivative of qr is implemented for reduced decompositions of "
            f"matrices with m >= n (got a {m}x{n} matrix, full_matrices="
            f"{full_matrices}). Use full_matrices=False / mode='reduced' on a tall "
            "or square matrix.")
    dx_rinv = triangular_solve(r, dx)  # dA R⁻¹ (right side, upper)
    c = _mm(_H(q), dx_rinv)
    c_lower = _tril(c, -1)
    omega = sub(c_lower, _H(c_lower))
    if _is_complex(c):
        c_diag = _mask(c, lambda m, n: np.eye(m, n))
        omega = add(omega, sub(c_diag, _real_part_as(c_diag, c)))
    dq = add(_mm(q, sub(omega, c)), dx_rinv)
    dr = _mm(sub(c, omega), r)
    return [q, r], [dq, dr]


qr_p = Primitive("qr", multiple_results=True)
qr_p.def_impl(_qr_numpy)
qr_p.def_abstract_eval(_qr_shape)
qr_p.jvp = _qr_jvp
_batch_at_front(qr_p)
def_lowering(qr_p, lambda a, full_matrices: Source(
    "tuple({})", call(_qr_kernel, a[0], full_matrices)))


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """QR decomposition ``x = q @ r`` (``jax.lax.linalg.qr``); returns ``(q, r)``.
    The derivative is defined for the reduced case with m >= n."""
    if pivoting:
        raise NotImplementedError("qr with pivoting=True is not supported")
    return tuple(_bind(qr_p, as_operand(x), full_matrices=bool(full_matrices)))


# ============================================================================
# eigh
# ============================================================================

def _eigh_shape(a, *, lower):
    _check_square_float("eigh", a)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-1], _real_dtype(a.dtype))]


def _eigh_jvp(primals, tangents, *, lower):
    # With M = Vᴴ dA V (dA: the Hermitian matrix the impl reads):
    # dw = Re diag(M), dV = V (F ∘ M), F_ij = 1/(w_j - w_i) off the diagonal, 0 on
    # it (so Im(v_iᴴ dv_i) = 0: JAX's phase gauge for complex eigenvectors).
    # Assumes distinct eigenvalues (repeated ones give inf/nan, as in JAX).
    (a,), (a_dot,) = primals, tangents
    v, w = eigh_p.bind(a, lower=lower)
    a_dot = _symmetric_from_triangle(a_dot, lower)
    n, dtype = _shape(a)[-1], get_aval(a).dtype
    vh_adot_v = _mm(_H(v), _mm(a_dot, v))
    eye = _eye(n, dtype)
    w_full = convert_element_type(w, dtype)
    f = sub(div(np.asarray(1, dtype), add(sub(_as_row(w_full), _as_col(w_full)), eye)), eye)
    dv = _mm(v, mul(f, vh_adot_v))
    dw = _diag_part(vh_adot_v)
    return [v, w], [dv, real(dw) if _is_complex(dw) else dw]


eigh_p = Primitive("eigh", multiple_results=True)
def_kernel(eigh_p, _eigh_kernel)
eigh_p.def_abstract_eval(_eigh_shape)
eigh_p.jvp = _eigh_jvp
_batch_at_front(eigh_p)


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None):
    """Eigendecomposition of Hermitian ``x`` (``jax.lax.linalg.eigh``): returns
    ``(v, w)`` with eigenvectors as the columns of ``v`` and ascending real
    eigenvalues ``w``.  ``symmetrize_input``: decompose (x + xᴴ)/2 (JAX's
    default); otherwise only the ``lower`` (or upper) triangle is read.
    Derivatives assume distinct eigenvalues.
    ``subset_by_index=(start, end)`` keeps eigenvalues start..end-1 (all are
    computed, then sliced)."""
    x = as_operand(x)
    if symmetrize_input:
        _check_square_float("eigh", get_aval(x))
        x = _symmetrize(x)
    v, w = _bind(eigh_p, x, lower=bool(lower))
    if subset_by_index is None:
        return v, w
    # eigenvalues lo..hi-1 in ascending order (all are computed, then sliced)
    lo, hi = _index_range("eigh", subset_by_index, get_aval(w).shape[-1])
    return _take_last(v, lo, hi), _take_last(w, lo, hi)


def _index_range(who, subset_by_index, n):
    """``subset_by_index`` as JAX takes it: a half-open ``(start, end)`` pair."""
    try:
        lo, hi = (operator.index(i) for i in subset_by_index)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: subset_by_index must be a pair of ints (start, end), got "
                        f"{subset_by_index!r}") from None
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{who}: subset_by_index {subset_by_index!r} must satisfy "
                         f"0 <= start <= end <= {n}")
    return lo, hi


def _take_last(x, lo, hi, axis=-1):
    from fungrad.lax.structural import slice as slice_
    shape = get_aval(x).shape
    axis %= len(shape)
    start = [0] * len(shape)
    limit = list(shape)
    start[axis], limit[axis] = lo, hi
    return slice_(x, tuple(start), tuple(limit))


# ============================================================================
# svd
# ============================================================================

def _svd_shape(a, *, full_matrices, compute_uv):
    _check_square_float("svd", a, square=False)
    *batch, m, n = a.shape
    batch, k = tuple(batch), min(m, n)
    s = ShapedArray(batch + (k,), _real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [ShapedArray(batch + (m, ku), a.dtype), s, ShapedArray(batch + (kv, n), a.dtype)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    # With dS = Uᴴ dA V (reduced factors): ds = Re diag(dS);
    # dU = U (F ∘ (dS S + S dSᴴ) + i Im(diag dS) S⁻¹) (+ the part of dA V outside
    # span(U) when m > n), dV = V (F ∘ (S dS + dSᴴ S)) (+ likewise when n > m),
    # F_ij = 1/(s_j² - s_i²).  The imaginary diagonal term (complex only) is JAX's
    # gauge: the phase change of each pair (u_i, v_i) goes to u_i.
    # Assumes distinct, nonzero singular values.
    (a,), (da,) = primals, tangents
    outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
    m, n = _shape(a)[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"The derivative of svd with full_matrices=True is implemented for square "
            f"matrices only (got {m}x{n}); use full_matrices=False.")
    u, s, vh = (outs if compute_uv else
                svd_p.bind(a, full_matrices=False, compute_uv=True))
    v = _H(vh)
    ds_mat = _mm(_H(u), _mm(da, v))
    ds = _diag_part(ds_mat)
    ds = real(ds) if _is_complex(ds) else ds
    if not compute_uv:
        return outs, [ds]
    k, dtype = min(m, n), get_aval(a).dtype
    s_full = convert_element_type(s, dtype)
    s_row, s_col, eye = _as_row(s_full), _as_col(s_full), _eye(k, dtype)
    s_diffs = mul(add(s_row, s_col), sub(s_row, s_col))
    f = sub(div(np.asarray(1, dtype), add(s_diffs, eye)), eye)
    dss, sds = mul(s_row, ds_mat), mul(s_col, ds_mat)
    du_inner = mul(f, add(dss, _H(dss)))
    if _is_complex(ds_mat):
        du_inner = add(du_inner, _svd_phase_term(ds_mat, s_full))
    du = _mm(u, du_inner)
    dv = _mm(v, mul(f, add(sds, _H(sds))))
    if m > n:
        dav = _mm(da, v)
        du = add(du, div(sub(dav, _mm(u, _mm(_H(u), dav))), s_row))
    if n > m:
        dau = _mm(_H(da), u)
        dv = add(dv, div(sub(dau, _mm(v, _mm(vh, dau))), s_row))
    return outs, [du, ds, _H(dv)]


def _svd_phase_term(ds_mat, s):
    """diag(i Im(dS_ii) / s_i) for complex dS (0 where s_i = 0, as JAX)."""
    dtype = get_aval(ds_mat).dtype
    diag = _mask(ds_mat, lambda m, n: np.eye(m, n))
    imag_diag = sub(diag, _real_part_as(diag, diag))
    is_zero = eq(s, np.asarray(0, dtype))
    inv_s = select_n(is_zero, div(np.asarray(1, dtype), select_n(is_zero, s, np.ones((), dtype))),
                     np.zeros((), dtype))
    return mul(imag_diag, _as_row(inv_s))


svd_p = Primitive("svd", multiple_results=True)
def_kernel(svd_p, _svd_numpy)
svd_p.def_abstract_eval(_svd_shape)
svd_p.jvp = _svd_jvp
_batch_at_front(svd_p)


class SvdAlgorithm(enum.Enum):
    """``svd``'s ``algorithm`` (``jax.lax.linalg.SvdAlgorithm``): accepted for JAX
    compatibility; NumPy's LAPACK divide and conquer is used for every value."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition (``jax.lax.linalg.svd``): ``(u, s, vh)`` with
    ``x = u @ diag(s) @ vh`` and descending ``s``, or just ``s``.  Derivatives
    of u and vh need full_matrices=False (or square x) and distinct singular values.
    ``subset_by_index=(start, end)`` keeps singular values start..end-1 (all are
    computed, then sliced)."""
    if subset_by_index is not None and full_matrices:
        raise ValueError("svd: subset_by_index needs full_matrices=False, as in JAX")
    outs = _bind(svd_p, as_operand(x), full_matrices=bool(full_matrices),
                 compute_uv=bool(compute_uv))
    if subset_by_index is not None:
        # singular values lo..hi-1 in descending order, with their vectors
        s = outs[1] if compute_uv else outs[0]
        lo, hi = _index_range("svd", subset_by_index, get_aval(s).shape[-1])
        outs = ([_take_last(outs[0], lo, hi), _take_last(s, lo, hi),
                 _take_last(outs[2], lo, hi, axis=-2)] if compute_uv else [_take_last(s, lo, hi)])
    return tuple(outs) if compute_uv else outs[0]


# ============================================================================
# Helper primitives for fungrad.numpy.linalg (not JAX lax names)
# ============================================================================

# --- linear_solve: x = a⁻¹ b, b of shape (..., n, k) -------------------------------
# A dedicated primitive (one LAPACK gesv call) rather than lu + two triangular
# solves: its JVP  dx = a⁻¹ (db - da x)  uses linear_solve itself, so it is
# differentiable to any order, and it is linear in b with transpose
# ct_b = a⁻ᵀ ct.

def _linear_solve_shape(a, b):
    _check_square_float("solve", a)
    if b.dtype != a.dtype or b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1]:
        raise ValueError(f"linear_solve: b must be (..., n, k) with a's dtype and batch "
                         f"dims for a of shape {a.shape}; got b {b.str_short()}")
    return ShapedArray(b.shape, b.dtype)


def _linear_solve_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    x = linear_solve_p.bind(a, b)
    if type(da) is Zero and type(db) is Zero:
        return x, Zero(tangent_aval(get_aval(x)))
    rhs = db if type(da) is Zero else (
        neg(_mm(da, x)) if type(db) is Zero else sub(db, _mm(da, x)))
    return x, linear_solve_p.bind(a, rhs)


def _linear_solve_batch(axis_size, vals, dims):
    (a, b), (ad, bd) = vals, dims
    if ad is None:  # a shared: the batch becomes extra right-hand-side columns
        b = batching.moveaxis(b, bd, len(_shape(b)) - 1)
        s = _shape(b)
        x = linear_solve_p.bind(a, reshape(b, s[:-2] + (s[-2] * axis_size,)))
        return reshape(x, s), len(s) - 1
    a = batching.moveaxis(a, ad, 0)
    return linear_solve_p.bind(a, batching.bdim_at_front(b, bd, axis_size)), 0


linear_solve_p = Primitive("linear_solve")
def_kernel(linear_solve_p, _linear_solve_numpy)
linear_solve_p.def_abstract_eval(_linear_solve_shape)
linear_solve_p.jvp = _linear_solve_jvp
linear_solve_p.transpose = lambda ct, a, b: [None, linear_solve_p.bind(_mT(a), ct)]
linear_solve_p.linear = True   # in b
linear_solve_p.batch = _linear_solve_batch


def linear_solve(a, b):
    """``a⁻¹ b`` for a (..., n, n) and b (..., n, k) with the same batch dims."""
    return _bind(linear_solve_p, as_operand(a), as_operand(b))


# --- det and adjugate ------------------------------------------------------------------
# d det(A) = tr(adj(A) dA).  The adjugate is finite for every matrix (it is a
# polynomial in A), so the gradient of det is finite at singular matrices too,
# where det(A) A⁻¹ would be 0 * inf.  The adjugate's own derivative,
# d adj = (tr(adj dA) adj - adj dA adj) / det, holds for nonsingular A.

def _square_shape_rule(name, out):
    """Shape rule of a primitive of one stack of square float matrices."""
    def rule(a):
        _check_square_float(name, a)
        return out(a)
    return rule


det_p = Primitive("det")
det_p.def_impl(lambda a: np.linalg.det(np.asarray(a)))
det_p.def_abstract_eval(_square_shape_rule("det", lambda a: ShapedArray(a.shape[:-2], a.dtype)))
defjvp(det_p, lambda g, a: reduce_sum(mul(g, _mT(adjugate(a))), (-2, -1)))
_batch_at_front(det_p)
def_lowering(det_p, lambda a: call(np.linalg.det, a[0]))


def det(a):
    return _bind(det_p, as_operand(a))


def _adjugate_jvp(g, adj, a):
    trace_term = reduce_sum(mul(g, _mT(adj)), (-2, -1))
    num = sub(mul(adj, _as_col(_as_col(trace_term))), _mm(adj, _mm(g, adj)))
    return div(num, _as_col(_as_col(det(a))))


adjugate_p = Primitive("adjugate")
def_kernel(adjugate_p, _adjugate_numpy)
adjugate_p.def_abstract_eval(_square_shape_rule("adjugate", lambda a: ShapedArray(a.shape, a.dtype)))
defjvp2(adjugate_p, _adjugate_jvp)
_batch_at_front(adjugate_p)


def adjugate(a):
    """The adjugate (classical adjoint) adj(A) = det(A) A⁻¹, finite for every A."""
    return _bind(adjugate_p, as_operand(a))


# --- slogdet: [sign, log|det|] ---------------------------------------------------------------

def _slogdet_jvp(primals, tangents):
    # d log det A = tr(A⁻¹ dA) = d log|det A| + i d arg(det A): for complex A the
    # real part moves log|det|, the imaginary part rotates sign (JAX's rule).
    (a,), (g,) = primals, tangents
    sign, logdet = slogdet_p.bind(a)
    n, dtype = _shape(a)[-1], get_aval(a).dtype
    a_inv = linear_solve(a, np.broadcast_to(_eye(n, dtype), _shape(a)))
    d_logdet = reduce_sum(mul(g, _mT(a_inv)), (-2, -1))  # tr(A⁻¹ dA)
    if not _is_complex(a):
        return [sign, logdet], [Zero(tangent_aval(get_aval(sign))), d_logdet]
    d_sign = mul(sub(d_logdet, _real_part_as(d_logdet, d_logdet)), sign)
    return [sign, logdet], [d_sign, real(d_logdet)]


slogdet_p = Primitive("slogdet", multiple_results=True)
slogdet_p.def_impl(lambda a: list(np.linalg.slogdet(np.asarray(a))))
slogdet_p.def_abstract_eval(_square_shape_rule(
    "slogdet", lambda a: [ShapedArray(a.shape[:-2], a.dtype),
                          ShapedArray(a.shape[:-2], _real_dtype(a.dtype))]))
slogdet_p.jvp = _slogdet_jvp
_batch_at_front(slogdet_p)
def_lowering(slogdet_p, lambda a: Source("tuple({})", call(np.linalg.slogdet, a[0])))


def slogdet(a):
    """``(sign, log|det|)`` of square matrices (..., n, n); for complex ones
    ``sign`` is complex of modulus 1 and ``log|det|`` real, as NumPy and JAX."""
    return tuple(_bind(slogdet_p, as_operand(a)))


# --- pinv ---------------------------------------------------------------------------------
# Its JVP (Golub & Pereyra, constant rank) uses pinv itself:
# dP = -P dA P + P Pᴴ dAᴴ (I - A P) + (I - P A) dAᴴ Pᴴ P.

def _pinv_shape(a, *, rtol):
    _check_square_float("pinv", a, square=False)
    return ShapedArray(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)


def _pinv_jvp(g, p, a, *, rtol):
    m, n = _shape(a)[-2:]
    dtype = get_aval(a).dtype
    gh = _H(g)
    first = neg(_mm(p, _mm(g, p)))
    second = _mm(_mm(p, _H(p)), _mm(gh, sub(_eye(m, dtype), _mm(a, p))))
    third = _mm(sub(_eye(n, dtype), _mm(p, a)), _mm(gh, _mm(_H(p), p)))
    return add(add(first, second), third)


pinv_p = Primitive("pinv")
def_kernel(pinv_p, _pinv_numpy)
pinv_p.def_abstract_eval(_pinv_shape)
defjvp2(pinv_p, _pinv_jvp)
_batch_at_front(pinv_p)


def pinv(a, rtol):
    """Moore-Penrose pseudo-inverse; singular values below ``rtol * max(s)`` are
    treated as zero.  The derivative assumes the rank is locally constant."""
    return _bind(pinv_p, as_operand(a), rtol=float(rtol))



# ============================================================================
# householder_product: Q from LAPACK's packed reflectors
# ============================================================================
# Q = H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_iᴴ, v_i = e_i + the column i of
# `a` below the diagonal.  In the compact WY form Q = I - V T Vᴴ with
# T⁻¹ = diag(1/tau) + striu(Vᴴ V), i.e. T = M⁻¹ diag(tau) for the unit upper
# triangular M = I + diag(tau) striu(Vᴴ V), so one triangular solve and two
# products give Q, differentiable (JAX's is not) and batched, also where a
# tau is 0 (that reflector is the identity).

def _compact_wy(a, taus, who):
    """``(v, t)`` with ``H_0 ... H_{k-1} = I - v t vᴴ`` for the reflectors packed
    below the diagonal of ``a`` (..., m, n) and ``taus`` (..., k)."""
    a, taus = as_operand(a), as_operand(taus)
    aa, ta = get_aval(a), get_aval(taus)
    _check_square_float(f"{who} (argument a)", aa, square=False)
    *batch, m, n = aa.shape
    k = ta.shape[-1] if ta.ndim else -1
    if ta.ndim != aa.ndim - 1 or tuple(ta.shape[:-1]) != tuple(batch) or not 0 <= k <= min(m, n):
        raise ValueError(f"{who}: a must be (..., m, n) and taus (..., k) with k <= min(m, n) "
                         f"and the same batch shape; got {aa.shape} and {ta.shape}")
    if ta.dtype != aa.dtype:
        raise TypeError(f"{who}: a and taus must share one dtype, got {aa.dtype.name} and "
                        f"{ta.dtype.name}")
    first_k = a if k == n else _slice_last(a, k)
    v = add(_tril(first_k, -1), _eye_like(m, k, aa.dtype))              # (..., m, k)
    tau_col = _as_col(taus)
    m_mat = add(_eye(k, aa.dtype), mul(tau_col, _triu(_mm(_H(v), v), 1)))
    diag_tau = mul(tau_col, _eye(k, aa.dtype))
    t = triangular_solve(m_mat, diag_tau, left_side=True, lower=False, unit_diagonal=True)
    return v, t


def householder_product(a, taus):
    """The first ``n`` columns of ``Q = H_0 ... H_{k-1}`` from the reflectors below
    the diagonal of ``a`` (..., m, n) and their factors ``taus`` (..., k)
    (``jax.lax.linalg.householder_product``, LAPACK ``orgqr``/``ungqr``)."""
    m, n = _shape(a)[-2:]
    if m < n:
        raise ValueError(f"householder_product: a must have m >= n rows, got shape "
                         f"{_shape(a)}")
    v, t = _compact_wy(a, taus, "householder_product")
    dtype = get_aval(v).dtype
    q_full = sub(_eye(m, dtype), _mm(v, _mm(t, _H(v))))
    return q_full if m == n else _slice_last(q_full, n)


def ormqr(a, taus, c, *, left=True, transpose=False):
    """``Q c``, ``Qᴴ c`` (``transpose``), ``c Q`` or ``c Qᴴ`` (``left=False``) for the
    Q of the reflectors in ``a`` and ``taus`` (``jax.lax.linalg.ormqr``), without
    forming Q: ``Q = I - V T Vᴴ`` in the compact WY form."""
    v, t = _compact_wy(a, taus, "ormqr")
    c = as_operand(c)
    if get_aval(c).dtype != get_aval(v).dtype:
        raise TypeError(f"ormqr: c must have the dtype of a ({get_aval(v).dtype.name}), got "
                        f"{get_aval(c).dtype.name}")
    m = _shape(v)[-2]
    if _shape(c)[-2 if left else -1] != m:
        raise ValueError(f"ormqr: c {_shape(c)} does not fit Q of size {m} "
                         f"(left={left})")
    t = _H(t) if transpose else t
    if left:      # Q c = c - V (T (Vᴴ c))
        return sub(c, _mm(v, _mm(t, _mm(_H(v), c))))
    return sub(c, _mm(_mm(_mm(c, v), t), _H(v)))   # c Q = c - ((c V) T) Vᴴ


def _slice_last(x, count):
    """The first ``count`` columns of a stack of matrices."""
    from fungrad.lax.structural import slice as slice_
    shape = _shape(x)
    return slice_(x, (0,) * len(shape), shape[:-1] + (count,))


def _eye_like(m, n, dtype):
    return np.eye(m, n, dtype=dtype)


# ============================================================================
# qdwh: the polar decomposition by the QR-based dynamically weighted Halley
# iteration (Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31, 2010)
# ============================================================================
# The weights of each step follow from a lower bound l of the smallest
# singular value (updated in Python: they do not depend on the data), so the
# weighted steps are unrolled; a while_loop then runs plain Halley steps until
# the iterate stops moving.  Made of qr, cholesky, triangular solves and a
# while_loop: differentiable, vmappable and jittable.

_QR_CUTOFF = 100     # weights c above this: the QR form of the step is the stable one


def _qdwh_schedule(eps, max_iterations):
    """[(a, e, c, use_qr)] of the weighted steps: u <- e u + (a - e) u (c uᴴu + I)⁻¹."""
    l, tol_l, steps = eps, 5.0 * eps, []
    while l + tol_l < 1 and len(steps) < max_iterations:
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        steps.append((a, b / c, c, c > _QR_CUTOFF))
    return steps


def _qdwh_qr_step(u, a, e, c):
    from fungrad import lax
    m, n = _shape(u)
    dtype = get_aval(u).dtype
    stacked = lax.concatenate([mul(np.asarray(np.sqrt(c), dtype), u), _eye(n, dtype)], 0)
    q, _ = qr(stacked, full_matrices=False)
    q1 = lax.slice(q, (0, 0), (m, n))
    q2 = lax.slice(q, (m, 0), (m + n, n))
    return add(mul(np.asarray(e, dtype), u),
               mul(np.asarray((a - e) / np.sqrt(c), dtype), _mm(q1, _H(q2))))


def _qdwh_cholesky_step(u, a, e, c):
    n = _shape(u)[-1]
    dtype = get_aval(u).dtype
    gram = add(mul(np.asarray(c, dtype), _mm(_H(u), u)), _eye(n, dtype))
    chol = cholesky(gram, symmetrize_input=False)
    w = triangular_solve(chol, u, left_side=False, lower=True, transpose_a=True,
                         conjugate_a=True)                        # u L⁻ᴴ
    w = triangular_solve(chol, w, left_side=False, lower=True)    # u (L Lᴴ)⁻¹
    return add(mul(np.asarray(e, dtype), u), mul(np.asarray(a - e, dtype), w))


def _frobenius(x):
    from fungrad import lax
    return lax.sqrt(reduce_sum(real(mul(conj(x), x)) if _is_complex(x) else mul(x, x), (0, 1)))


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """Polar decomposition ``x = u h`` of a full-rank (m, n) matrix, m >= n, by the
    QDWH iteration (``jax.lax.linalg.qdwh``): ``(u, h, num_iters, is_converged)``
    with ``u`` having orthonormal columns and ``h`` Hermitian positive
    semi-definite.  ``max_iterations`` defaults to 10; ``is_hermitian`` is
    accepted and unused (as in JAX); ``dynamic_shape`` is not supported."""
    from fungrad import lax
    if dynamic_shape is not None:
        raise NotImplementedError("qdwh: dynamic_shape is not supported; slice x to its true "
                                  "shape instead")
    x = as_operand(x)
    aval = get_aval(x)
    _check_square_float("qdwh", aval, square=False)
    if aval.ndim != 2 or aval.shape[0] < aval.shape[1]:
        raise ValueError(f"qdwh: x must be one (m, n) matrix with m >= n, got shape {aval.shape}")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    eps = float(dtype_finfo(aval.dtype).eps) if eps is None else float(eps)
    rdt = _real_dtype(aval.dtype)
    magnitudes = lax.abs(x)
    one_norm = lax.reduce_max(reduce_sum(magnitudes, (0,)), (0,))
    inf_norm = lax.reduce_max(reduce_sum(magnitudes, (1,)), (0,))
    scale = lax.select(eq(one_norm, np.asarray(0, rdt)), np.asarray(1, rdt),
                       lax.rsqrt(mul(one_norm, inf_norm)))
    u = mul(x, convert_element_type(scale, aval.dtype))
    tol_norm = np.asarray((5.0 * eps) ** (1 / 3), rdt)
    moving = np.asarray(True)
    for a, e, c, use_qr in _qdwh_schedule(eps, max_iterations):
        previous = u
        u = (_qdwh_qr_step if use_qr else _qdwh_cholesky_step)(u, a, e, c)
        if not use_qr:
            moving = lax.gt(_frobenius(sub(u, previous)), tol_norm)
    steps = len(_qdwh_schedule(eps, max_iterations))

    def halley(state):
        k, u, _ = state
        new = _qdwh_cholesky_step(u, 3.0, 1.0 / 3.0, 3.0)
        return k + 1, new, lax.gt(_frobenius(sub(new, u)), tol_norm)
    num_iters, u, moving = lax.while_loop(
        lambda state: lax.bitwise_and(state[2], lax.lt(state[0], max_iterations)),
        halley, (np.asarray(steps, np.int32), u, moving))
    # one Newton-Schulz step refines the orthogonality
    u = sub(mul(np.asarray(1.5, aval.dtype), u),
            mul(np.asarray(0.5, aval.dtype), _mm(u, _mm(_H(u), u))))
    h = _mm(_H(u), x)
    h = mul(add(h, _H(h)), np.asarray(0.5, aval.dtype))
    return u, h, num_iters, lax.bitwise_not(moving)
