"""``fungrad.scipy.stats.uniform``: the uniform distribution on [loc, loc + scale]."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy.stats._util import promote

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return fnp.where(inside, -fnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    return fnp.where(y < 0, 0.0, fnp.where(y > 1, 1.0, y))


def sf(x, loc=0, scale=1):
    return 1 - cdf(x, loc, scale)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return fnp.where((q >= 0) & (q <= 1), loc + q * scale, np.nan)
