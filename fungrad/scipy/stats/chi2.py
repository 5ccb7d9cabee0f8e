"""``fungrad.scipy.stats.chi2``: the chi-squared distribution, Gamma(df/2, scale=2)."""
from __future__ import annotations

import math

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import gammainc, gammaincc, on_support, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    k = 0.5 * df
    def inside(v):
        return (special.xlogy(k - 1, v) - 0.5 * v - k * math.log(2.0) - special.gammaln(k)
                - fnp.log(scale))
    return on_support(y >= 0, y, 1.0, inside, -np.inf)


def pdf(x, df, loc=0, scale=1):
    return fnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    return gammainc(0.5 * df, 0.5 * fnp.maximum(y, 0.0))


def logcdf(x, df, loc=0, scale=1):
    return fnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    return gammaincc(0.5 * df, 0.5 * fnp.maximum(y, 0.0))


def logsf(x, df, loc=0, scale=1):
    return fnp.log(sf(x, df, loc, scale))
