"""``fungrad.scipy.stats.gamma``: density y^(a-1) e^(-y) / (Γ(a) scale), y >= 0.

``cdf``/``sf`` use the regularized incomplete gammas ``lax.igamma`` /
``lax.igammac`` (the upper tail computed directly, so it keeps its digits).
"""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import gammainc, gammaincc, on_support, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    y = (x - loc) / scale
    def inside(v):
        return special.xlogy(a - 1, v) - v - special.gammaln(a) - fnp.log(scale)
    return on_support(y >= 0, y, 1.0, inside, -np.inf)


def pdf(x, a, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    y = (x - loc) / scale
    return gammainc(a, fnp.maximum(y, 0.0))


def logcdf(x, a, loc=0, scale=1):
    return fnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    y = (x - loc) / scale
    return gammaincc(a, fnp.maximum(y, 0.0))


def logsf(x, a, loc=0, scale=1):
    return fnp.log(sf(x, a, loc, scale))
