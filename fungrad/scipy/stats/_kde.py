"""``gaussian_kde`` (``jax.scipy.stats.gaussian_kde``): a kernel density
estimate with Gaussian kernels, as SciPy's, on fungrad (differentiable,
jittable, a pytree).

    kde = gaussian_kde(dataset)          # dataset: (d, n), or (n,) for d = 1
    kde(points), kde.logpdf(points)      # points: (d, m)
    kde.resample(key, (k,))              # (d, k) draws

The density is sum_i w_i N(x; x_i, factor^2 Sigma), Sigma the weighted
covariance of the data and ``factor`` from ``bw_method`` ("scott": neff^(-1/(d+4)),
"silverman": (neff (d+2)/4)^(-1/(d+4)), a number, or a function of the kde).
``integrate_box`` and ``set_bandwidth`` are not provided (as in JAX).
"""
from __future__ import annotations

import math

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
import fungrad.numpy as jnp
from fungrad import random
from fungrad.scipy import special
from fungrad.tree_util import register_pytree_node_class

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian KDE of ``dataset`` (d, n) with optional ``weights`` (n,)."""

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(dataset)
        if dtype_issubdtype(dataset.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        d, n = dataset.shape
        if weights is None:
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            weights = jnp.atleast_1d(weights).astype(dataset.dtype)
            if weights.ndim != 1:
                raise ValueError("gaussian_kde: `weights` input should be one-dimensional.")
            if weights.shape[0] != n:
                raise ValueError(f"gaussian_kde: `weights` input should be of length n = {n}, "
                                 f"got {weights.shape[0]}")
            weights = weights / jnp.sum(weights)
        self.dataset, self.weights = dataset, weights
        self.neff = 1.0 / jnp.sum(weights ** 2)
        factor = self._factor(bw_method, d)
        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        self.covariance = data_cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(data_cov) / factor ** 2

    def _factor(self, bw_method, d):
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            return self.neff ** (-1.0 / (d + 4))
        if isinstance(bw_method, str) and bw_method == "silverman":
            return (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        if callable(bw_method):
            return bw_method(self)
        if jnp.ndim(bw_method) == 0 and not isinstance(bw_method, str):
            return bw_method
        raise ValueError("gaussian_kde: `bw_method` should be 'scott', 'silverman', a scalar, "
                         f"or a callable, got {bw_method!r}")

    # -- pytree ---------------------------------------------------------------
    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        out = object.__new__(cls)
        out.neff, out.dataset, out.weights, out.covariance, out.inv_cov = children
        return out

    d = property(lambda self: self.dataset.shape[0])
    n = property(lambda self: self.dataset.shape[1])

    # -- densities ------------------------------------------------------------
    def _points(self, points):
        points = jnp.atleast_2d(jnp.asarray(points))
        if dtype_issubdtype(points.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex points")
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"gaussian_kde: points have dimension {d}, but the data have "
                             f"dimension {self.d}")
        return points

    def _log_kernels(self, points):
        """(m, n): log N(point_j; x_i, covariance) for every point and datum."""
        whitening = jnp.linalg.cholesky(self.inv_cov)            # inv_cov = L L^T
        data = self.dataset.T @ whitening
        xs = self._points(points).T @ whitening
        log_norm = jnp.sum(jnp.log(jnp.diag(whitening))) - 0.5 * self.d * math.log(2 * math.pi)
        sq = jnp.sum(jnp.square(xs[:, None, :] - data[None, :, :]), axis=-1)
        return log_norm - 0.5 * sq

    def evaluate(self, points):
        return jnp.sum(self.weights * jnp.exp(self._log_kernels(points)), axis=1)

    __call__ = pdf = evaluate

    def logpdf(self, points):
        return special.logsumexp(jnp.log(self.weights) + self._log_kernels(points), axis=1)

    # -- integrals ------------------------------------------------------------
    def integrate_gaussian(self, mean, cov):
        """The integral of the density times N(mean, cov)."""
        mean, cov = jnp.atleast_1d(jnp.squeeze(mean)), jnp.atleast_2d(cov)
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape "
                             f"({self.d},) and cov ({self.d}, {self.d})")
        total = self.covariance + cov
        chol = jnp.linalg.cholesky(total)
        diff = self.dataset - mean[:, None]
        z = jnp.linalg.solve(chol, diff)                    # L^-1 (x_i - mean)
        log_det = 2 * jnp.sum(jnp.log(jnp.diag(chol)))
        log_vals = -0.5 * jnp.sum(z * z, axis=0) - 0.5 * (log_det + self.d * math.log(2 * math.pi))
        return jnp.sum(self.weights * jnp.exp(log_vals))

    def integrate_box_1d(self, low, high):
        """The probability mass in [low, high] (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d() only handles 1D pdfs")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        low = jnp.squeeze((low - self.dataset) / sigma)
        high = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other: "gaussian_kde"):
        """The integral of the product of two KDEs' densities."""
        if other.d != self.d:
            raise ValueError("gaussian_kde.integrate_kde: the KDEs must have the same dimension")
        total = self.covariance + other.covariance
        chol = jnp.linalg.cholesky(total)
        diff = self.dataset[:, :, None] - other.dataset[:, None, :]       # (d, n, m)
        z = jnp.linalg.solve(chol, diff.reshape(self.d, -1)).reshape(diff.shape)
        log_det = 2 * jnp.sum(jnp.log(jnp.diag(chol)))
        vals = jnp.exp(-0.5 * jnp.sum(z * z, axis=0)
                       - 0.5 * (log_det + self.d * math.log(2 * math.pi)))
        return jnp.sum(self.weights[:, None] * other.weights[None, :] * vals)

    def resample(self, key, shape=()):
        """Draws of shape (d, *shape): a datum chosen by weight plus kernel noise."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype)
        return self.dataset[:, ind] + jnp.moveaxis(eps, -1, 0)
