"""``fungrad.scipy.stats.norm``: the normal distribution (``jax.scipy.stats.norm``)."""
from __future__ import annotations

import math

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import LOG_2PI, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

_SQRT2 = math.sqrt(2.0)


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return -0.5 * y * y - fnp.log(scale) - 0.5 * LOG_2PI


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.ndtr(y)


def logcdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.log_ndtr(y)


def sf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.ndtr(-y)


def logsf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.log_ndtr(-y)


def _ndtri(q):
    """Inverse of the standard normal CDF: sqrt(2) * erfinv(2q - 1); nan outside
    [0, 1].  (Through erfinv, so relative accuracy degrades for q below ~1e-8.)"""
    return _SQRT2 * special.erfinv(2 * q - 1)


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of ``cdf``)."""
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * _ndtri(q)


def isf(q, loc=0, scale=1):
    """The inverse survival function: ``ppf(1 - q)``."""
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * _ndtri(q)
