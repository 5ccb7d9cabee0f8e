"""``fungrad.scipy.stats.multivariate_normal`` (``jax.scipy.stats.multivariate_normal``):
``logpdf(x, mean, cov)`` / ``pdf`` through a Cholesky factor of ``cov``.

``x`` is (..., n); ``mean`` (n,) or broadcastable (..., n); ``cov`` (n, n) or a
stack (..., n, n).  A scalar ``mean`` means the univariate normal with
variance ``cov``.  A ``cov`` that is not positive definite gives nan (as JAX).
"""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.lax import linalg as lax_linalg
from fungrad.scipy.stats._util import LOG_2PI, promote

__all__ = ["logpdf", "pdf"]


def _check_shapes(x, mean, cov):
    n = mean.shape[-1]
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: mean has shape {mean.shape}, so cov "
                         f"must be ({n}, {n}) or a stack (..., {n}, {n}); got cov of shape "
                         f"{cov.shape}")
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"multivariate_normal.logpdf: x must have {n} entries in its last "
                         f"axis to match mean {mean.shape}; got x of shape {x.shape}")


def _whiten(chol, diff):
    """``L⁻¹ diff`` along the last axis of ``diff`` (..., n), for L (..., n, n)."""
    n = chol.shape[-1]
    if chol.ndim == 2:
        flat = fnp.reshape(diff, (-1, n))
        # z @ Lᵀ = diff  <=>  L zᵀ = diffᵀ
        z = lax_linalg.triangular_solve(chol, flat, left_side=False, lower=True,
                                        transpose_a=True)
        return fnp.reshape(z, diff.shape)
    batch = tuple(np.broadcast_shapes(diff.shape[:-1], chol.shape[:-2]))
    rows = fnp.broadcast_to(diff, batch + (n,))[..., None, :]
    chol = fnp.broadcast_to(chol, batch + (n, n))
    z = lax_linalg.triangular_solve(chol, rows, left_side=False, lower=True, transpose_a=True)
    return z[..., 0, :]


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular=True is not "
                                  "supported; pass a positive-definite cov")
    x, mean, cov = promote(x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * fnp.square(x - mean) / cov - 0.5 * (LOG_2PI + fnp.log(cov))
    _check_shapes(x, mean, cov)
    n = mean.shape[-1]
    chol = lax_linalg.cholesky(cov)
    z = _whiten(chol, x - mean)
    log_det = 2 * fnp.sum(fnp.log(fnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * fnp.sum(z * z, axis=-1) - 0.5 * (n * LOG_2PI + log_det)


def pdf(x, mean, cov):
    return fnp.exp(logpdf(x, mean, cov))
