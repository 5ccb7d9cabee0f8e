"""``fungrad.scipy.stats.cauchy``: density 1 / (π scale (1 + y²))."""
from __future__ import annotations

import math

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy.stats._util import LOG_PI, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return -LOG_PI - fnp.log(scale) - fnp.log1p(y * y)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def _lower_tail(y):
    """P(Y <= y) = 1/2 + arctan(y)/π; for y < 0 as arctan(-1/y)/π, which keeps
    the relative accuracy of the far tail."""
    neg = y < 0
    safe = fnp.where(neg, y, -1.0)
    return fnp.where(neg, fnp.arctan(-1 / safe) / math.pi, 0.5 + fnp.arctan(y) / math.pi)


def cdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _lower_tail(y)


def logcdf(x, loc=0, scale=1):
    return fnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _lower_tail(-y)


def logsf(x, loc=0, scale=1):
    return fnp.log(sf(x, loc, scale))


def _standard_ppf(q):
    """tan(π (q - 1/2)), exactly ±inf at q = 0, 1 and nan outside [0, 1]."""
    inner = (q > 0) & (q < 1)
    y = fnp.tan(math.pi * (fnp.where(inner, q, 0.5) - 0.5))
    y = fnp.where(inner, y, fnp.where(q == 0, -np.inf, np.inf))
    return fnp.where((q >= 0) & (q <= 1), y, np.nan)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * _standard_ppf(q)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * _standard_ppf(q)
