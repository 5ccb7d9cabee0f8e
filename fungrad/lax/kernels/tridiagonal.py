"""Pure-NumPy tridiagonal kernels: the reduction of a symmetric/Hermitian
matrix to tridiagonal form in LAPACK's packed layout (``sytrd``/``hetrd``)
and the solution of tridiagonal systems by Gaussian elimination with partial
pivoting (``gtsv``), vectorised over batches and right-hand sides.

Layouts are JAX's: ``tridiagonal_solve``'s ``dl[i] = A[i, i-1]`` (``dl[0]``
unused), ``d[i] = A[i, i]``, ``du[i] = A[i, i+1]`` (``du[-1]`` unused); a
singular system gives NaNs, as JAX reports a LAPACK failure.
"""
from __future__ import annotations

import numpy as np

from fungrad.lax.kernels.schur import householder

__all__ = ["tridiagonal", "tridiagonal_solve"]


def _hermitian_from(a, lower):
    """The Hermitian matrix LAPACK sees: one triangle, the real part of the diagonal."""
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    return tri + np.conj(tri.T) + np.diag(np.real(np.diag(a))).astype(a.dtype)


def _reduce_step(full, v, tau):
    """``full <- H^H full H`` for ``H = I - tau v v^H`` on a Hermitian block
    (LAPACK's symv + rank-2 update, in place)."""
    w = tau * (full @ v)
    w += -0.5 * tau * (np.conj(w) @ v) * v
    full -= np.outer(v, np.conj(w)) + np.outer(w, np.conj(v))


def _tridiagonal_one(a, lower):
    n = a.shape[0]
    full = _hermitian_from(a, lower)
    packed = a.copy()
    real = np.finfo(a.dtype).dtype
    e, taus = np.zeros(max(n - 1, 0), real), np.zeros(max(n - 1, 0), a.dtype)
    steps = range(n - 1) if lower else range(n - 2, -1, -1)
    for i in steps:
        if lower:     # annihilate column i below the subdiagonal
            tail, tau, beta = householder(full[i + 1, i], full[i + 2:, i])
            v = np.concatenate([np.ones(1, a.dtype), tail])
            block = full[i + 1:, i + 1:]
            packed[i + 2:, i], packed[i + 1, i] = tail, beta
        else:         # annihilate column i + 1 above the superdiagonal
            tail, tau, beta = householder(full[i, i + 1], full[:i, i + 1])
            v = np.concatenate([tail, np.ones(1, a.dtype)])
            block = full[:i + 1, :i + 1]
            packed[:i, i + 1], packed[i, i + 1] = tail, beta
        if tau != 0:
            _reduce_step(block, v, tau)
        e[i], taus[i] = np.real(beta), tau
    d = np.real(np.diag(full)).astype(real)
    packed[np.arange(n), np.arange(n)] = d
    return packed, d, e, taus


def tridiagonal(a, *, lower):
    """``(packed, d, e, taus)``: ``Q^H A Q = T`` with T tridiagonal (diagonal ``d``,
    off-diagonal ``e``, both real), the reflectors of Q packed below (``lower``)
    or above the off-diagonal, as LAPACK ``sytrd``/``hetrd``."""
    a = np.asarray(a)
    n = a.shape[-1]
    batch, real = a.shape[:-2], np.finfo(a.dtype).dtype
    outs = [np.empty(a.shape, a.dtype), np.empty(batch + (n,), real),
            np.empty(batch + (max(n - 1, 0),), real),
            np.empty(batch + (max(n - 1, 0),), a.dtype)]
    for index in np.ndindex(*batch):
        for out, value in zip(outs, _tridiagonal_one(a[index], lower)):
            out[index] = value
    return tuple(outs)


def tridiagonal_solve(dl, d, du, b):
    """``x`` with ``A x = b`` for the tridiagonal A of (dl, d, du); ``b`` is (..., n, k)."""
    dl, d, du, b = (np.asarray(v) for v in (dl, d, du, b))
    dtype = np.result_type(dl, d, du, b)
    n = d.shape[-1]
    batch = np.broadcast_shapes(d.shape[:-1], dl.shape[:-1], du.shape[:-1], b.shape[:-2])
    sub = np.broadcast_to(dl, batch + (n,))[..., 1:].astype(dtype)   # A[i+1, i]
    diag = np.broadcast_to(d, batch + (n,)).astype(dtype)
    sup = np.broadcast_to(du, batch + (n,)).astype(dtype)            # A[i, i+1]
    sup2 = np.zeros(batch + (n,), dtype)                             # fill-in A[i, i+2]
    x = np.broadcast_to(b, batch + b.shape[-2:]).astype(dtype)
    if n == 0:
        return x
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n - 1):
            swap = np.abs(diag[..., i]) < np.abs(sub[..., i])
            _eliminate(diag, sup, sup2, sub, x, i, n, swap)
        singular = np.any(diag == 0, axis=-1)
        x[..., n - 1, :] /= diag[..., n - 1, None]
        if n > 1:
            x[..., n - 2, :] = (x[..., n - 2, :] - sup[..., n - 2, None] * x[..., n - 1, :]) \
                / diag[..., n - 2, None]
        for i in range(n - 3, -1, -1):
            x[..., i, :] = (x[..., i, :] - sup[..., i, None] * x[..., i + 1, :]
                            - sup2[..., i, None] * x[..., i + 2, :]) / diag[..., i, None]
    x[singular] = np.nan
    return x


def _eliminate(diag, sup, sup2, sub, x, i, n, swap):
    """Eliminate A[i+1, i], exchanging rows i and i+1 where ``swap`` (partial
    pivoting); both choices computed, selected per system."""
    s = swap[..., None]
    pivot = np.where(swap, sub[..., i], diag[..., i])
    other = np.where(swap, diag[..., i], sub[..., i])
    fact = other / pivot
    next_diag = diag[..., i + 1].copy()
    # A[i+1, i+2] (du's last entry is not part of the matrix)
    next_sup = sup[..., i + 1].copy() if i + 1 < n - 1 else np.zeros_like(next_diag)
    row_i, row_next = x[..., i, :].copy(), x[..., i + 1, :].copy()
    # no exchange: row i+1 -= fact * row i
    keep_diag = next_diag - fact * sup[..., i]
    # exchange: row i becomes row i+1, and the old row i, less fact times it, row i+1
    swap_diag = sup[..., i] - fact * next_diag
    diag[..., i] = pivot
    diag[..., i + 1] = np.where(swap, swap_diag, keep_diag)
    if i + 1 < n - 1:
        sup2[..., i] = np.where(swap, next_sup, 0)
        sup[..., i + 1] = np.where(swap, -fact * next_sup, next_sup)
    sup[..., i] = np.where(swap, next_diag, sup[..., i])
    x[..., i, :] = np.where(s, row_next, row_i)
    x[..., i + 1, :] = np.where(s, row_i - fact[..., None] * row_next,
                                row_next - fact[..., None] * row_i)
