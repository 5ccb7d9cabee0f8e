"""Pure-NumPy linear algebra: the decompositions whose computation is several
NumPy steps (triangular_solve, cholesky with its NaN fallback, lu,
lu_pivots_to_permutation, linear_solve, adjugate, cholesky_update).

jit's generated code calls these functions (see the lowerings in
``fungrad/lax/linalg.py``), and ``fungrad.export`` copies this module's source
into exported modules, so it must import nothing but NumPy.  The functions
behave as the primitives' impls in ``linalg.py``: failures follow JAX (NaN for
a non-positive-definite cholesky, inf/nan for a singular solve), not NumPy's
``LinAlgError``.
"""
from __future__ import annotations

import importlib

import numpy as np

__all__ = ["triangular_solve", "cholesky", "lu", "lu_pivots_to_permutation", "linear_solve",
           "adjugate", "cholesky_update", "svd", "pinv", "qr", "eigh"]

# Panel width of the blocked LU: columns factored by the unblocked loop at once.
_LU_BLOCK = 48


def _effective_triangle(a, lower, unit_diagonal):
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        idx = np.arange(a.shape[-1])
        tri[..., idx, idx] = 1
    return tri


def _substitution_solve(t, b, lower):
    """Solve t @ x = b for triangular t row by row; zero diagonals give inf/nan
    (the fallback for singular matrices, where np.linalg.solve raises)."""
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(t, b))
    m = t.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in (range(m) if lower else range(m - 1, -1, -1)):
            partial = np.matmul(t[..., i:i + 1, :], x)[..., 0, :]
            x[..., i, :] = (b[..., i, :] - partial) / t[..., i, i, None]
    return x


def _solve_or_substitute(t, b, lower):
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        return _substitution_solve(t, b, lower)


def triangular_solve(a, b, left_side=False, lower=False, transpose_a=False,
                            conjugate_a=False, unit_diagonal=False):
    a, b = np.asarray(a), np.asarray(b)
    t = _effective_triangle(a, lower, unit_diagonal)
    if conjugate_a:
        t = np.conj(t)
    if transpose_a:
        t = np.swapaxes(t, -1, -2)
    op_lower = lower != transpose_a
    if left_side:
        return _solve_or_substitute(t, b, op_lower)
    # x @ t = b  <=>  t.T @ x.T = b.T
    xt = _solve_or_substitute(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not op_lower)
    return np.swapaxes(xt, -1, -2)


def cholesky(a):
    """Lower Cholesky factor reading the lower triangle; for a matrix of the
    stack that is not positive definite NaNs in its lower triangle and zeros
    above (JAX's result), not an exception. float32 and complex64 by LAPACK's
    single-precision potrf when SciPy is installed (what XLA's CPU Cholesky
    calls: JAX's numbers bit for bit; NumPy's differ by ulps), as ``qr``."""
    a = np.asarray(a)
    lapack = _single_precision_lapack(a, "potrf")
    if lapack is not None:
        factored = _cholesky_single(a, *lapack)
        if factored is not None:
            return factored
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    n = a.shape[-1]
    flat = a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)), n, n))
    out = np.tril(np.full(flat.shape, np.nan, a.dtype))
    for i, mat in enumerate(flat):  # error path only: find the bad members
        try:
            out[i] = np.linalg.cholesky(mat)
        except np.linalg.LinAlgError:
            pass
    return out.reshape(a.shape)


def _cholesky_single(a, potrf):
    """LAPACK's lower Cholesky factor matrix by matrix, NaNs in the lower
    triangle of a matrix that is not positive definite (None if LAPACK
    reports an argument error)."""
    out = np.empty_like(a)
    for index in np.ndindex(*a.shape[:-2]):
        factor, info = potrf(a[index], lower=1, clean=1)
        if info < 0:
            return None
        out[index] = factor if info == 0 else np.tril(np.full(factor.shape, np.nan, a.dtype))
    return out


def lu(a):
    """Partial-pivoting LU of a stack of (m, n) matrices: (lu, pivots, permutation)
    with ``a[..., permutation, :] == L @ U`` (L unit lower, U upper, packed in lu).

    LAPACK's getrf through SciPy when it is installed and the stack holds at
    most ``_LAPACK_LU_MAX_BATCH`` (16) matrices (the routine jaxlib's CPU LU calls:
    JAX's numbers bit for bit, in every precision); else a blocked
    right-looking LU: a Python loop over the min(m, n) columns (never over the
    batch), the trailing updates done by BLAS matmuls (the same pivots, values
    within a few ulps of LAPACK's).
    """
    a = np.asarray(a)
    found = _lu_lapack(a)
    if found is not None:
        return found
    *batch, m, n = a.shape
    k = min(m, n)
    lu = a.reshape((int(np.prod(batch, dtype=np.int64)), m, n)).copy()
    perm = np.tile(np.arange(m, dtype=np.int32), (lu.shape[0], 1))
    pivots = np.zeros((lu.shape[0], k), np.int32)
    for j0 in range(0, k, _LU_BLOCK):
        j1 = min(j0 + _LU_BLOCK, k)
        _lu_panel(lu, perm, pivots, j0, j1)
        if j1 < n:
            l11 = np.tril(lu[:, j0:j1, j0:j1], -1) + np.eye(j1 - j0, dtype=lu.dtype)
            lu[:, j0:j1, j1:] = np.linalg.solve(l11, lu[:, j0:j1, j1:])
            lu[:, j1:, j1:] -= np.matmul(lu[:, j1:, j0:j1], lu[:, j0:j1, j1:])
    return [lu.reshape(a.shape), pivots.reshape(tuple(batch) + (k,)),
            perm.reshape(tuple(batch) + (m,))]


# LAPACK's LU and solve are calls per matrix, some microseconds each: for
# larger stacks of (small) matrices the batched NumPy forms are much faster.
# Measured (idle, this VM): LU of 16 3x3 matrices 55 us by getrf, 81 us
# blocked; solve of one 3x3 system 25 us by getrf + trsm, 5 us by NumPy's
# gesv, of 16 such 138 us against 7 us, of one 200x200 422 us against 627 us
_LAPACK_LU_MAX_BATCH = 16
_LAPACK_SOLVE_MAX_BATCH = 4
_GETRF = {np.dtype(np.float32): "sgetrf", np.dtype(np.float64): "dgetrf",
          np.dtype(np.complex64): "cgetrf", np.dtype(np.complex128): "zgetrf"}


def _lu_lapack(a):
    """[lu, pivots, permutation] by SciPy's getrf matrix by matrix, or None
    (another dtype, an empty matrix, a large stack, no SciPy, or an argument
    error).  Looked up at run time, never required (see ``_single_precision_lapack``)."""
    *batch, m, n = a.shape
    if a.dtype not in _GETRF or 0 in (m, n) or \
            int(np.prod(batch, dtype=np.int64)) > _LAPACK_LU_MAX_BATCH:
        return None
    getrf = _scipy_routine("lapack", _GETRF[a.dtype])
    if getrf is None:
        return None
    lu = np.empty_like(a)
    pivots = np.empty((*batch, min(m, n)), np.int32)
    for index in np.ndindex(*batch):
        lu[index], pivots[index], info = getrf(a[index])
        if info < 0:
            return None
    return [lu, pivots, lu_pivots_to_permutation(pivots, m)]


_TRSM = {np.dtype(np.float32): "strsm", np.dtype(np.float64): "dtrsm",
         np.dtype(np.complex64): "ctrsm", np.dtype(np.complex128): "ztrsm"}


def _scipy_routine(module, name):
    """SciPy's ``scipy.linalg.<module>.<name>`` (LAPACK or BLAS), or None
    without SciPy: looked up at run time, never required."""
    try:
        return getattr(importlib.import_module(f"scipy.linalg.{module}"), name)
    except ImportError:
        return None


def _linear_solve_lapack(a, b):
    """``linear_solve`` by SciPy's getrf and trsm matrix by matrix, or None
    (as ``_lu_lapack``, for stacks of at most ``_LAPACK_SOLVE_MAX_BATCH``; also
    for operands of two dtypes or batch shapes)."""
    *batch, n, _ = a.shape
    if (a.dtype not in _TRSM or b.dtype != a.dtype or tuple(b.shape[:-2]) != tuple(batch)
            or n == 0 or 0 in b.shape[-2:]
            or int(np.prod(batch, dtype=np.int64)) > _LAPACK_SOLVE_MAX_BATCH):
        return None
    trsm = _scipy_routine("blas", _TRSM[a.dtype])
    if trsm is None:
        return None
    factored = _lu_lapack(a)
    if factored is None:
        return None
    lu, _, permutation = factored
    x = np.empty(b.shape, a.dtype)
    for index in np.ndindex(*batch):
        lower = trsm(1.0, lu[index], b[index][permutation[index]], lower=1, diag=1)
        x[index] = trsm(1.0, lu[index], lower, lower=0)
    return x


def _lu_panel(lu, perm, pivots, j0, j1):
    """Unblocked LU of columns j0:j1 (in place), swapping whole rows."""
    members = np.arange(lu.shape[0])
    for j in range(j0, j1):
        p = j + np.argmax(_pivot_size(lu[:, j:, j]), axis=1)
        pivots[:, j] = p
        for arr in (lu, perm):
            row = arr[members, j].copy()
            arr[members, j] = arr[members, p]
            arr[members, p] = row
        pivot = lu[:, j, j]
        # a zero pivot means the column below is zero too: leave it (as LAPACK)
        safe = np.where(pivot == 0, 1, pivot)
        lu[:, j + 1:, j] /= safe[:, None]
        lu[:, j + 1:, j + 1:j1] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:j1]


def _pivot_size(x):
    """LAPACK's pivot measure: |x| for reals, |Re x| + |Im x| for complex
    (getrf's cabs1), so pivots match LAPACK's (scipy.linalg.lu) exactly."""
    if np.iscomplexobj(x):
        return np.abs(x.real) + np.abs(x.imag)
    return np.abs(x)


def lu_pivots_to_permutation(pivots, permutation_size):
    """The row permutation LAPACK's pivots (row j swapped with row pivots[j],
    in order) make, for a stack."""
    pivots = np.asarray(pivots)
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape((int(np.prod(batch, dtype=np.int64)), k))
    if flat.shape[0] <= _LAPACK_LU_MAX_BATCH:     # (a few: swaps on lists are faster)
        rows = [list(range(permutation_size)) for _ in range(flat.shape[0])]
        for row, swaps in zip(rows, flat.tolist()):
            for j, p in enumerate(swaps):
                row[j], row[p] = row[p], row[j]
        return np.array(rows, np.int32).reshape(batch + (permutation_size,))
    perm = np.tile(np.arange(permutation_size, dtype=np.int32), (flat.shape[0], 1))
    members = np.arange(flat.shape[0])
    for j in range(k):  # apply the swaps in order
        p = flat[:, j]
        row = perm[members, j].copy()
        perm[members, j] = perm[members, p]
        perm[members, p] = row
    return perm.reshape(batch + (permutation_size,))


def linear_solve(a, b):
    """``a x = b`` for a stack of square ``a`` and ``b`` (..., n, k).  With
    SciPy and a few matrices, as JAX composes it (and with the routines jaxlib
    calls): LAPACK's LU (getrf), the permutation, then two BLAS triangular
    solves (trsm), JAX's numbers bit for bit; else NumPy's solve (ulps away
    from 8x8 on).  Singular: inf/nan, as JAX."""
    a, b = np.asarray(a), np.asarray(b)
    found = _linear_solve_lapack(a, b)
    if found is not None:
        return found
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:  # singular: inf/nan as JAX, not an exception
        lu_, _, perm = lu(a)
        pb = np.take_along_axis(b, perm[..., :, None].astype(np.intp), axis=-2)
        y = _substitution_solve(_effective_triangle(lu_, True, True), pb, True)
        return _substitution_solve(np.triu(lu_), y, False)


def _nan_where_not_finite(decompose, a) -> list:
    """``decompose(a)`` (a list of arrays led by ``a``'s batch dimensions) with
    NaN results for the matrices of the stack that hold a NaN or an infinity,
    and for all of them if LAPACK does not converge on finite input: where
    NumPy raises ``LinAlgError``, JAX's results are NaN, and compiled code
    cannot raise on values.  The bad matrices are computed as zeros."""
    bad = ~np.isfinite(a).all(axis=(-2, -1))
    if bad.any():                   # (the rare path)
        a = np.where(bad[..., None, None], np.zeros((), a.dtype), a)
    try:
        out = decompose(a)
    except np.linalg.LinAlgError:
        out, bad = decompose(np.zeros_like(a)), np.ones(a.shape[:-2], bool)
    if bad.any():
        for x in out:
            x[bad] = np.nan
    return out


def svd(a, *, full_matrices, compute_uv):
    """``np.linalg.svd`` of a stack, as a list of its results (NaN for a matrix
    with a NaN or an infinity, as JAX's). float32/complex64 by LAPACK's
    single-precision gesdd when SciPy is installed (the routine jaxlib's CPU
    SVD calls: JAX's numbers bit for bit), as ``qr``."""
    a = np.asarray(a)
    lapack = _single_precision_lapack(a, "gesdd")

    def decompose(m):
        if lapack is not None:
            return _svd_single(m, full_matrices, compute_uv, *lapack)
        out = np.linalg.svd(m, full_matrices=full_matrices, compute_uv=compute_uv)
        return list(out) if compute_uv else [out]
    return _nan_where_not_finite(decompose, a)


def _svd_single(a, full_matrices, compute_uv, gesdd):
    """LAPACK's gesdd matrix by matrix (LinAlgError if it does not converge)."""
    *batch, m, n = a.shape
    k = min(m, n)
    s = np.empty((*batch, k), np.finfo(a.dtype).dtype)
    u = np.empty((*batch, m, m if full_matrices else k), a.dtype)
    vh = np.empty((*batch, n if full_matrices else k, n), a.dtype)
    for index in np.ndindex(*batch):
        u_i, s[index], vh_i, info = gesdd(a[index], compute_uv=int(compute_uv),
                                          full_matrices=int(full_matrices))
        if info != 0:
            raise np.linalg.LinAlgError("SVD did not converge")
        if compute_uv:
            u[index], vh[index] = u_i, vh_i
    return [u, s, vh] if compute_uv else [s]


def eigh(a, *, lower):
    """``[v, w]``: eigenvectors (columns) and ascending eigenvalues of the
    Hermitian matrices ``a`` from one triangle (``np.linalg.eigh``);
    float32/complex64 by LAPACK's single-precision syevd/heevd when SciPy is
    installed (what jaxlib's CPU eigh calls: JAX's numbers bit for bit)."""
    a = np.asarray(a)
    lapack = _single_precision_lapack(a, "syevd")
    if lapack is not None:
        found = _eigh_single(a, lower, *lapack)
        if found is not None:
            return found
    w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [v, w]


def _eigh_single(a, lower, syevd):
    """LAPACK's syevd/heevd matrix by matrix (None if it reports a failure:
    NumPy's eigh then decides)."""
    v = np.empty_like(a)
    w = np.empty(a.shape[:-1], np.finfo(a.dtype).dtype)
    for index in np.ndindex(*a.shape[:-2]):
        w[index], v[index], info = syevd(a[index], compute_v=1, lower=int(lower))
        if info != 0:
            return None
    return [v, w]


def pinv(a, *, rtol):
    """``np.linalg.pinv`` of a stack (NaN for a matrix with a NaN or an infinity)."""
    return _nan_where_not_finite(lambda m: [np.linalg.pinv(m, rcond=rtol)], np.asarray(a))[0]


def adjugate(a):
    """adj(A) = det(U) det(Vᴴ) V diag(prod_{j≠i} s_j) Uᴴ from A = U S Vᴴ: exact
    for singular matrices too (no division)."""
    a = np.asarray(a)
    n = a.shape[-1]
    if n == 0:
        return a.copy()
    u, s, vh = svd(a, full_matrices=True, compute_uv=True)
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh)
    scaled_v = np.conj(np.swapaxes(vh, -1, -2)) * (before * after)[..., None, :]
    u_h = np.conj(np.swapaxes(u, -1, -2))
    return (sign[..., None, None] * np.matmul(scaled_v, u_h)).astype(a.dtype)


def cholesky_update(r, w):
    """The upper Cholesky factor of ``rᵀ r + w wᵀ`` for an upper-triangular ``r``
    (only its upper triangle is read): one Givens rotation per row, O(n²)."""
    r = np.triu(np.asarray(r)).astype(np.result_type(r, w), copy=True)
    w = np.array(np.broadcast_to(w, r.shape[:-1]), dtype=r.dtype)
    for k in range(r.shape[-1]):
        x, y = r[..., k, k], w[..., k]
        radius = np.hypot(x, y)
        safe = np.where(radius == 0, 1, radius)
        c = np.where(radius == 0, 1, x / safe)[..., None]
        s = np.where(radius == 0, 0, y / safe)[..., None]
        row = r[..., k, :].copy()
        r[..., k, :] = c * row + s * w
        w = c * w - s * row
    return r


# ----------------------------------------------------------------------------
# qr
# ----------------------------------------------------------------------------

def qr(a, full_matrices):
    """``(q, r)`` of the matrices ``a`` (..., m, n): ``q`` with m or min(m, n)
    columns (``full_matrices``).  float32 and complex64 are factored by
    LAPACK's single-precision routines when SciPy is installed (s/cgeqrf and
    s/orgqr, c/ungqr: what XLA's CPU QR calls, so JAX's numbers bit for bit,
    ``random.orthogonal``'s too); NumPy's ``qr`` computes them in double
    precision and rounds (within an ulp of those).  Other dtypes: NumPy's."""
    a = np.asarray(a)
    lapack = _single_precision_lapack(a, "geqrf", "orgqr")
    if lapack is not None:
        factored = _qr_single(a, full_matrices, *lapack)
        if factored is not None:
            return factored
    return tuple(np.linalg.qr(a, mode="complete" if full_matrices else "reduced"))


def _single_precision_lapack(a, *routines):
    """SciPy's LAPACK ``routines`` (real names: "geqrf", "potrf", "gesdd", ...) for
    float32/complex64 matrices, as s... or c... (orgqr: cungqr), or None
    (another dtype, an empty matrix, or no SciPy).  jaxlib's CPU kernels call
    these same routines (SciPy's LAPACK).  Looked up at run time, never
    required: this module (and exported code, which embeds it) runs on NumPy
    alone."""
    if a.dtype not in (np.float32, np.complex64) or 0 in a.shape[-2:]:
        return None
    complex_names = {"orgqr": "ungqr", "syevd": "heevd"}
    found = tuple(_scipy_routine("lapack", "s" + name if a.dtype == np.float32
                                 else "c" + complex_names.get(name, name)) for name in routines)
    return None if None in found else found


def _qr_single(a, full_matrices, geqrf, orgqr):
    """LAPACK's QR matrix by matrix (None if LAPACK reports a failure)."""
    *batch, m, n = a.shape
    k = min(m, n)
    cols = m if full_matrices else k
    q = np.empty((*batch, m, cols), a.dtype)
    r = np.empty((*batch, cols, n), a.dtype)
    for index in np.ndindex(*batch):
        factored, tau, _, info = geqrf(a[index])
        if info != 0:
            return None
        r[index] = np.triu(factored[:cols])
        # Q's first k columns are the reflectors' product; a complete Q of a
        # tall matrix extends them with zero columns for orgqr to fill
        reflectors = factored[:, :k]
        if cols > k:
            reflectors = np.concatenate([reflectors, np.zeros((m, cols - k), a.dtype)], axis=1)
        q[index], _, info = orgqr(reflectors, tau)
        if info != 0:
            return None
    return q, r

