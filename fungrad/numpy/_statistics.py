"""Covariance and correlation of ``jax.numpy``: ``cov`` (with frequency and
analytic weights) and ``corrcoef``.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad.core import Tracer
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.numpy._util import _fnp, _shape, _dtype

__all__ = ["cov", "corrcoef"]


def _observations(name, m, rowvar):
    """``m`` as a 2-d (variables, observations) float array."""
    fnp = _fnp()
    m = asarray_operand(m)
    if len(_shape(m)) > 2:
        raise ValueError(f"{name}: m must have at most 2 dimensions, got shape {_shape(m)}")
    m = m.astype(np.result_type(_dtype(m), np.float64))
    m = fnp.atleast_2d(m)
    if not rowvar and _shape(m)[0] != 1:
        m = m.T
    return m


def _frequency_weights(name, weights, n, kind):
    if weights is None:
        return None
    weights = asarray_operand(weights)
    if len(_shape(weights)) != 1 or _shape(weights)[0] != n:
        raise ValueError(f"{name}: {kind} must be 1-d with one weight per observation ({n}),"
                         f" got shape {_shape(weights)}")
    if not isinstance(weights, Tracer):
        values = np.asarray(weights)
        if kind == "fweights" and np.any(values != np.around(values)):
            raise TypeError(f"{name}: fweights must be integers")
        if np.any(values < 0):
            raise ValueError(f"{name}: {kind} cannot be negative")
    return weights.astype(np.float64) if dtype_kind(_dtype(weights)) in "biu" else weights


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """Covariance matrix of the variables in ``m`` (rows, or columns with
    ``rowvar=False``), with frequency and analytic weights as ``numpy.cov``."""
    fnp = _fnp()
    X = _observations("cov", m, rowvar)
    if y is not None:
        Y = _observations("cov", y, rowvar)
        X, Y = promote("cov", X, Y)
        X = fnp.concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = _shape(X)[1]
    fw = _frequency_weights("cov", fweights, n, "fweights")
    aw = _frequency_weights("cov", aweights, n, "aweights")
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        mean, w_sum = fnp.mean(X, axis=1), n
        fact = n - ddof
    else:
        mean, w_sum = fnp.average(X, axis=1, weights=w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * fnp.sum(w * aw) / w_sum
    fact = fnp.maximum(fact, 0.0)
    centred = X - mean[:, None]
    weighted = centred if w is None else centred * w
    c = (centred @ fnp.conj(weighted).T) / fact
    return fnp.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients (``cov`` normalised, clipped to [-1, 1])."""
    fnp = _fnp()
    c = cov(x, y, rowvar)
    if len(_shape(c)) == 0:
        return c / c
    stddev = fnp.sqrt(fnp.real(fnp.diagonal(c)))
    c = c / stddev[:, None] / stddev[None, :]
    if dtype_kind(_dtype(c)) == "c":
        return fnp.clip(fnp.real(c), -1, 1) + 1j * fnp.clip(fnp.imag(c), -1, 1)
    return fnp.clip(c, -1, 1)
