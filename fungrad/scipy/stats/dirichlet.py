"""``fungrad.scipy.stats.dirichlet``: ``logpdf(x, alpha)`` / ``pdf``.

As in SciPy and JAX the components run along the *first* axis: ``alpha`` is
(K,) and ``x`` is (K, ...) or (K - 1, ...) (then the last component is
``1 - sum(x)``).  Points off the simplex (a negative component, or components
not summing to 1 within 1e-6 per component) get -inf / 0.
"""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]

_SIMPLEX_TOL = 1e-6


def _full_simplex(x, alpha):
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"dirichlet.logpdf: x must have {k} (or {k - 1}) entries along its "
                         f"first axis to match alpha {alpha.shape}; got x of shape {x.shape}")
    if x.shape[0] == k - 1:
        x = fnp.concatenate([x, 1 - fnp.sum(x, axis=0, keepdims=True)], axis=0)
    return x


def logpdf(x, alpha):
    x, alpha = promote(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional (K,), got shape "
                         f"{alpha.shape}")
    x = _full_simplex(x, alpha)
    k = alpha.shape[0]
    alpha_b = fnp.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
    on_simplex = (fnp.all(x >= 0, axis=0)
                  & (fnp.abs(fnp.sum(x, axis=0) - 1) <= _SIMPLEX_TOL * k))
    safe_x = fnp.where(on_simplex, x, 1.0 / k)
    log_norm = fnp.sum(special.gammaln(alpha)) - special.gammaln(fnp.sum(alpha))
    log_p = fnp.sum(special.xlogy(alpha_b - 1, safe_x), axis=0) - log_norm
    return fnp.where(on_simplex, log_p, -np.inf)


def pdf(x, alpha):
    return fnp.exp(logpdf(x, alpha))
