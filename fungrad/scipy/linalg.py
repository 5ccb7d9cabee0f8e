"""``fungrad.scipy.linalg``: the ``jax.scipy.linalg`` functions, composed from
``fungrad.lax.linalg`` / ``fungrad.numpy`` (so all are differentiable,
vmappable and jittable; no primitives of their own).

Functions: ``solve_triangular``, ``cho_factor``, ``cho_solve``, ``cholesky``,
``lu_factor``, ``lu_solve``, ``lu``, ``qr``, ``svd``, ``eigh``, ``inv``,
``det``, ``solve``, ``block_diag``, ``expm``, ``expm_frechet``, ``polar``,
``toeplitz``, ``circulant``, ``hilbert``.

As in JAX, the decompositions do not raise ``LinAlgError``: a singular
matrix gives inf/nan, a non-positive-definite one NaNs from ``cholesky``.
Complex matrices work everywhere (Hermitian where SciPy says symmetric:
``cholesky``, ``cho_solve``, ``eigh``, ``solve(assume_a='pos')``; ``trans=2``
/ ``'C'`` is the conjugate transpose).
The SciPy-only arguments ``overwrite_*``, ``check_finite``, ``lwork``,
``debug``, ``turbo`` and ``lapack_driver`` are accepted and ignored.
"""
from __future__ import annotations

import functools


import numpy as np

from fungrad._dtype_classes import is_inexact
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.lax import linalg as lax_linalg

from fungrad.lax.eig import sqrtm  # noqa: E402,F401  (via the non-symmetric eig)

__all__ = ["sqrtm", "solve_triangular", "cho_factor", "cho_solve", "cholesky", "lu_factor",
           "lu_solve", "lu", "qr", "svd", "eigh", "inv", "det", "solve", "block_diag",
           "expm", "expm_frechet", "polar", "toeplitz", "circulant", "hilbert", "schur",
           "hessenberg"]


# ----------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------

def _as_float(*args):
    """The arguments in their common inexact dtype (integers become float64)."""
    dtype = fnp.result_type(*args)
    if not is_inexact(dtype):
        dtype = np.dtype(np.float64)
    return [fnp.asarray(a, dtype=dtype) for a in args]


def _mH(x):
    """Conjugate transpose of the last two axes."""
    return lax_linalg._H(x)


def _square(name, a):
    (a,) = _as_float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected a square matrix (..., M, M), got "
                         f"an array of shape {a.shape}")
    return a


def _trans_flags(name, trans):
    """``(transpose, conjugate)`` for SciPy's ``trans``: 0/'N' a, 1/'T' aᵀ, 2/'C' aᴴ."""
    table = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in table:
        raise ValueError(f"scipy.linalg.{name}: trans must be 0/'N', 1/'T' or 2/'C', got "
                         f"{trans!r}")
    return table[trans]


def _rhs_as_matrix(name, a, b):
    """``b`` as (..., M, K) with the batch dims of ``a`` broadcast in, plus a
    function undoing the reshape for a vector right-hand side."""
    (b,) = _as_float(b)
    m = a.shape[-1]
    vector = b.ndim == 1
    if b.ndim == 0 or (b.shape[0] if vector else b.shape[-2]) != m:
        raise ValueError(f"scipy.linalg.{name}: a {a.shape} needs b of shape ({m},) or "
                         f"(..., {m}, K); got b of shape {b.shape}")
    if vector:
        b = b[:, None]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = fnp.broadcast_to(a, batch + a.shape[-2:])
    b = fnp.broadcast_to(b, batch + b.shape[-2:])
    return a, b, (lambda x: x[..., 0]) if vector else (lambda x: x)


# ----------------------------------------------------------------------------
# Triangular and Cholesky solves
# ----------------------------------------------------------------------------

def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """Solve ``a x = b`` (trans=0), ``aᵀ x = b`` (1) or ``aᴴ x = b`` (2) for
    triangular ``a``; only the ``lower`` (or upper) triangle of ``a`` is read."""
    transpose, conjugate = _trans_flags("solve_triangular", trans)
    a = _square("solve_triangular", a)
    a, b = _as_float(a, b)
    a, b, finish = _rhs_as_matrix("solve_triangular", a, b)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=bool(lower),
                                    transpose_a=transpose, conjugate_a=conjugate,
                                    unit_diagonal=bool(unit_diagonal))
    return finish(x)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factor of a Hermitian positive-definite matrix: upper ``U``
    (``a = Uᴴ U``) by default, lower ``L`` (``a = L Lᴴ``) if ``lower``."""
    a = _square("cholesky", a)
    factor = lax_linalg.cholesky(a)
    return factor if lower else _mH(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for ``cho_solve``; ``c`` is the triangular factor with
    zeros in the other triangle (SciPy leaves garbage there)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` given ``cho_factor(a)``."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("scipy.linalg.cho_solve: first argument must be the pair (c, lower) "
                        "returned by cho_factor") from None
    c = _square("cho_solve", c)
    c, b = _as_float(c, b)
    c, b, finish = _rhs_as_matrix("cho_solve", c, b)
    # lower: L (Lᴴ x) = b;  upper: Uᴴ (U x) = b
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=bool(lower),
                                    transpose_a=not lower, conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=bool(lower),
                                    transpose_a=bool(lower), conjugate_a=bool(lower))
    return finish(x)


# ----------------------------------------------------------------------------
# LU
# ----------------------------------------------------------------------------

def lu_factor(a, overwrite_a=False, check_finite=True):
    """``(lu, piv)``: L (unit, strictly below the diagonal) and U packed in
    ``lu``; ``piv[i]`` is the row swapped with row i (int32, 0-based)."""
    a = _square("lu_factor", a)
    packed, pivots, _ = lax_linalg.lu(a)
    return packed, pivots


def _unpack_lu(packed):
    m, n = packed.shape[-2:]
    k = min(m, n)
    l_factor = fnp.tril(packed[..., :, :k], -1) + fnp.eye(m, k, dtype=packed.dtype)
    u_factor = fnp.triu(packed[..., :k, :])
    return l_factor, u_factor


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` (trans=0), ``aᵀ x = b`` (1) or ``aᴴ x = b`` (2) given
    ``lu_factor(a)``."""
    try:
        packed, pivots = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("scipy.linalg.lu_solve: first argument must be the pair (lu, piv) "
                        "returned by lu_factor") from None
    transposed, conjugate = _trans_flags("lu_solve", trans)
    packed = _square("lu_solve", packed)
    packed, b = _as_float(packed, b)
    packed, b, finish = _rhs_as_matrix("lu_solve", packed, b)
    m = packed.shape[-1]
    perm = lax_linalg.lu_pivots_to_permutation(fnp.broadcast_to(
        pivots, packed.shape[:-2] + pivots.shape[-1:]), m)
    p = lax_linalg.permutation_matrix(perm, packed.dtype)    # p @ a == L @ U
    if not transposed:        # L U x = p b
        y = lax_linalg.triangular_solve(packed, fnp.matmul(p, b), left_side=True, lower=True,
                                        unit_diagonal=True)
        x = lax_linalg.triangular_solve(packed, y, left_side=True, lower=False)
    else:                     # Uᵀ Lᵀ (p x) = b  (or Uᴴ Lᴴ: p is real)
        y = lax_linalg.triangular_solve(packed, b, left_side=True, lower=False,
                                        transpose_a=True, conjugate_a=conjugate)
        y = lax_linalg.triangular_solve(packed, y, left_side=True, lower=True,
                                        transpose_a=True, conjugate_a=conjugate,
                                        unit_diagonal=True)
        x = fnp.matmul(fnp.matrix_transpose(p), y)
    return finish(x)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (or ``(p @ l, u)`` if ``permute_l``);
    ``a`` may be rectangular (M, N): l is (M, K), u (K, N), K = min(M, N)."""
    (a,) = _as_float(a)
    if a.ndim < 2:
        raise ValueError(f"scipy.linalg.lu: expected a matrix (..., M, N), got shape {a.shape}")
    packed, _, perm = lax_linalg.lu(a)
    l_factor, u_factor = _unpack_lu(packed)
    p = fnp.matrix_transpose(lax_linalg.permutation_matrix(perm, a.dtype))
    if permute_l:
        return fnp.matmul(p, l_factor), u_factor
    return p, l_factor, u_factor


# ----------------------------------------------------------------------------
# Other decompositions
# ----------------------------------------------------------------------------

def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition: ``(q, r)`` for mode 'full' or 'economic', ``(r,)`` for 'r'."""
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr: pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"scipy.linalg.qr: mode must be 'full', 'economic' or 'r', got "
                         f"{mode!r}")
    (a,) = _as_float(a)
    if a.ndim < 2:
        raise ValueError(f"scipy.linalg.qr: expected a matrix (..., M, N), got shape {a.shape}")
    q, r = lax_linalg.qr(a, full_matrices=(mode in ("full", "r")))
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """``(U, s, Vh)`` (or ``s``), singular values descending."""
    (a,) = _as_float(a)
    if a.ndim < 2:
        raise ValueError(f"scipy.linalg.svd: expected a matrix (..., M, N), got shape {a.shape}")
    return fnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """Eigenvalues ``w`` (ascending, real) and eigenvectors ``v`` of Hermitian ``a``.
    With ``b`` (positive definite), the generalized problem of ``type`` 1
    (``a v = w b v``), 2 (``a b v = w v``) or 3 (``b a v = w v``), by a
    Cholesky reduction ``b = L Lᴴ`` (JAX supports ``b=None`` only).
    ``eigvals=(lo, hi)`` keeps eigenvalues lo..hi inclusive (SciPy's old
    argument).  Reads the ``lower`` (or upper) triangle."""
    if type not in (1, 2, 3):
        raise ValueError(f"scipy.linalg.eigh: type must be 1, 2 or 3, got {type!r}")
    a = _square("eigh", a)
    if b is None:
        v, w = lax_linalg.eigh(a, lower=bool(lower), symmetrize_input=False)
    else:
        v, w = _generalized_eigh(a, _square("eigh", b), lower, type)
    if eigvals is not None:
        lo, hi = eigvals
        v, w = v[..., lo:hi + 1], w[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def _generalized_eigh(a, b, lower, problem_type):
    a, b = _as_float(a, b)
    a = _symmetric_from(a, lower)
    chol = lax_linalg.cholesky(_symmetric_from(b, lower), symmetrize_input=False)
    solve = functools.partial(lax_linalg.triangular_solve, chol, lower=True)
    if problem_type == 1:       # C = L⁻¹ a L⁻ᴴ, v = L⁻ᴴ y
        c = solve(solve(a, left_side=True), left_side=False, transpose_a=True,
                  conjugate_a=True)
    else:                       # C = Lᴴ a L
        c = _mH(chol) @ a @ chol
    y, w = lax_linalg.eigh(c)
    if problem_type == 3:       # v = L y
        return chol @ y, w
    return solve(y, left_side=True, transpose_a=True, conjugate_a=True), w


def _symmetric_from(a, lower):
    """The Hermitian (real: symmetric) matrix whose ``lower`` (or upper) triangle
    is ``a``'s, the real part of the diagonal (what LAPACK reads)."""
    return lax_linalg._symmetric_from_triangle(a, lower)


def polar(a, side="right", method="svd"):
    """Polar decomposition ``a = u p`` (side 'right') or ``a = p u`` ('left'),
    u with orthonormal columns, p Hermitian positive semi-definite, via the SVD."""
    if side not in ("right", "left"):
        raise ValueError(f"scipy.linalg.polar: side must be 'right' or 'left', got {side!r}")
    if method != "svd":
        raise NotImplementedError(f"scipy.linalg.polar: only method='svd' is supported, got "
                                  f"{method!r}")
    (a,) = _as_float(a)
    u_svd, s, vh = fnp.linalg.svd(a, full_matrices=False)
    unitary = fnp.matmul(u_svd, vh)
    if side == "right":
        p = fnp.matmul(_mH(vh) * s[..., None, :], vh)
    else:
        p = fnp.matmul(u_svd * s[..., None, :], _mH(u_svd))
    return unitary, p


# ----------------------------------------------------------------------------
# inv, det, solve
# ----------------------------------------------------------------------------

def inv(a, overwrite_a=False, check_finite=True):
    return fnp.linalg.inv(_square("inv", a))


def det(a, overwrite_a=False, check_finite=True):
    return fnp.linalg.det(_square("det", a))


_ASSUME_A = ("gen", "general", "sym", "symmetric", "her", "hermitian", "pos",
             "positive definite")


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=None,
          check_finite=True, assume_a="gen", transposed=False):
    """Solve ``a x = b`` for square ``a``; ``b`` is (M,) or (..., M, K).

    ``assume_a``: 'gen' (LU), 'sym'/'her' (LU as well: same solution), 'pos'
    (Cholesky, reading the ``lower`` or upper triangle)."""
    if assume_a not in _ASSUME_A:
        raise ValueError(f"scipy.linalg.solve: assume_a must be one of 'gen', 'sym', 'her' or "
                         f"'pos', got {assume_a!r}")
    a = _square("solve", a)
    a, b = _as_float(a, b)
    if transposed:
        a = fnp.matrix_transpose(a)
    if assume_a in ("pos", "positive definite"):
        factor = lax_linalg.cholesky(_symmetric_from(a, lower), symmetrize_input=False)
        return cho_solve((factor, True), b)
    a, b, finish = _rhs_as_matrix("solve", a, b)
    return finish(lax_linalg.linear_solve(a, b))


# ----------------------------------------------------------------------------
# Structured matrices
# ----------------------------------------------------------------------------

def block_diag(*arrs):
    """A block-diagonal matrix of the arguments (each 0-, 1- or 2-D; a 1-D
    array is one row), zeros elsewhere."""
    if not arrs:
        return fnp.zeros((1, 0))
    mats = []
    for i, x in enumerate(_as_float(*arrs) if arrs else ()):
        if x.ndim > 2:
            raise ValueError(f"scipy.linalg.block_diag: argument {i} has {x.ndim} dimensions; "
                             "each must be at most 2-D")
        mats.append(fnp.reshape(x, (1, 1)) if x.ndim == 0 else
                    fnp.reshape(x, (1, -1)) if x.ndim == 1 else x)
    dtype = fnp.result_type(*arrs)
    dtype = dtype if is_inexact(dtype) else np.float64
    total = sum(m.shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:
        rows.append(fnp.pad(m, ((0, 0), (start, total - start - m.shape[1]))))
        start += m.shape[1]
    return fnp.concatenate(rows, axis=0).astype(dtype)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r``
    (``r[0]`` ignored; default ``r = conj(c)``, a Hermitian matrix, as SciPy and
    JAX).  ``c``, ``r`` are flattened."""
    c = fnp.ravel(fnp.asarray(c))
    r = fnp.conj(c) if r is None else fnp.ravel(fnp.asarray(r))
    c, r = fnp.asarray(c), fnp.asarray(r)
    dtype = fnp.result_type(c, r)
    m, n = c.shape[0], r.shape[0]
    # entry (i, j) is vals[m - 1 - i + j] with vals = [c reversed, r[1:]]
    vals = fnp.concatenate([c[::-1].astype(dtype), r[1:].astype(dtype)])
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return fnp.take(vals, idx)


def circulant(c):
    """The circulant matrix with first column ``c``: entry (i, j) is c[(i - j) % n]."""
    c = fnp.ravel(fnp.asarray(c))
    n = c.shape[0]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return fnp.take(c, idx)


def hilbert(n):
    """The n x n Hilbert matrix, entries 1 / (i + j + 1)."""
    i = np.arange(n, dtype=np.float64)
    return fnp.asarray(1.0 / (i[:, None] + i[None, :] + 1))


# ----------------------------------------------------------------------------
# Matrix exponential
# ----------------------------------------------------------------------------

# Coefficients b_0..b_13 of the degree-13 Padé approximant of exp (Higham 2005,
# "The scaling and squaring method for the matrix exponential revisited").
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
# Largest 1-norm for which the degree-13 approximant is accurate to double
# (float32: single) precision without scaling.
_THETA13 = {np.dtype(np.float64): 5.371920351148152, np.dtype(np.float32): 3.925724783138660}


def _pade13(a):
    """Numerator/denominator pieces ``(u, v)`` of the degree-13 Padé
    approximant: exp(a) ≈ (v - u)⁻¹ (v + u), u odd and v even in a."""
    b = [c / _PADE13[0] for c in _PADE13]   # b_0 = 1: expm(0) is exactly I
    eye = fnp.broadcast_to(fnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    a2 = fnp.matmul(a, a)
    a4 = fnp.matmul(a2, a2)
    a6 = fnp.matmul(a4, a2)
    u_inner = fnp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
    u = fnp.matmul(a, u_inner + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v_inner = fnp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
    v = v_inner + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return u, v


def _squarings(a, max_squarings):
    """Per matrix, the number s of squarings that brings ||a / 2^s||_1 under
    theta_13, clipped to ``max_squarings`` (a constant for autodiff)."""
    norm = fnp.max(fnp.sum(fnp.abs(lax.stop_gradient(a)), axis=-2), axis=-1)
    theta = _THETA13.get(lax_linalg._real_dtype(a.dtype), _THETA13[np.dtype(np.float64)])
    safe = fnp.where(norm > theta, norm, theta)
    s = fnp.where(norm > theta, fnp.ceil(fnp.log2(safe / theta)), 0.0)
    return lax.stop_gradient(fnp.minimum(s, float(max_squarings)))


def expm(A, *, upper_triangular=False, max_squarings=16):
    """Matrix exponential of square matrices (..., n, n) by scaling and squaring
    with the degree-13 Padé approximant.  Differentiable (any order) through its
    own operations.  ``upper_triangular`` is accepted for JAX compatibility and
    needs no special handling.  Norms needing more than ``max_squarings``
    squarings give an inaccurate result (JAX: nan)."""
    a = _square("expm", A)
    if a.shape[-1] == 0:
        return a
    s = _squarings(a, max_squarings)
    scaled = a / fnp.exp2(s)[..., None, None]
    u, v = _pade13(scaled)
    r = lax_linalg.linear_solve(v - u, v + u)

    def square_some(i, r):
        return fnp.where((i < s)[..., None, None], fnp.matmul(r, r), r)

    return lax.fori_loop(0, int(max_squarings), square_some, r)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Fréchet derivative of ``expm`` at ``A`` in direction ``E`` (the JVP of
    ``expm``); returns ``(expm(A), L)`` or, if not ``compute_expm``, ``L``."""
    from fungrad.api import jvp
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"scipy.linalg.expm_frechet: method must be None, 'SPS' or "
                         f"'blockEnlarge', got {method!r}")
    a, e = _as_float(_square("expm_frechet", A), E)
    if a.shape != e.shape:
        raise ValueError(f"scipy.linalg.expm_frechet: A {a.shape} and E {e.shape} must have "
                         "the same shape")
    exp_a, frechet = jvp(expm, (a,), (e,))
    return (exp_a, frechet) if compute_expm else frechet


def schur(a, output="real"):
    """Schur decomposition ``a = z t zᴴ``: ``(t, z)``; ``output='real'`` gives the
    real Schur form of a real matrix (2x2 blocks for complex pairs),
    ``'complex'`` an upper triangular ``t`` (the matrix made complex first)."""
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    a = fnp.asarray(a)
    if output == "complex" and not fnp.iscomplexobj(a):
        a = a.astype(fnp.result_type(a.dtype, fnp.complex64))
    t, z = lax_linalg.schur(a)
    return t, z


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """Upper Hessenberg form ``h`` of ``a`` (``a = q h qᴴ``), and ``q`` with
    ``calc_q=True``; ``overwrite_a``/``check_finite`` are accepted and unused."""
    a = fnp.asarray(a)
    packed, taus = lax_linalg.hessenberg(a)
    h = fnp.triu(packed, -1)
    if not calc_q:
        return h
    n = a.shape[-1]
    batch = a.shape[:-2]
    # the reflectors act on rows 1..n-1: Q is 1 ⊕ (their product)
    q = fnp.eye(n, dtype=packed.dtype)
    q = fnp.broadcast_to(q, batch + (n, n))
    if n > 1:
        inner = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
        q = q.at[..., 1:, 1:].set(inner)
    return h, q
