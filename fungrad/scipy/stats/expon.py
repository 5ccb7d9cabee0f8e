"""``fungrad.scipy.stats.expon``: the exponential distribution, density
exp(-y) / scale for y = (x - loc) / scale >= 0."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy.stats._util import on_support, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return fnp.where(y >= 0, -y - fnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return on_support(y >= 0, y, 1.0, lambda v: -fnp.expm1(-v), 0.0)


def logcdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return on_support(y > 0, y, 1.0, lambda v: fnp.log(-fnp.expm1(-v)), -np.inf)


def sf(x, loc=0, scale=1):
    return fnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return fnp.where(y >= 0, -y, 0.0)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return fnp.where((q >= 0) & (q <= 1), loc - scale * fnp.log1p(-q), np.nan)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return fnp.where((q >= 0) & (q <= 1), loc - scale * fnp.log(q), np.nan)
