"""``fungrad.scipy.stats.beta``: density y^(a-1) (1-y)^(b-1) / (B(a, b) scale), 0 <= y <= 1."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import on_support, promote

__all__ = ["logpdf", "pdf"]


def _betaln(a, b):
    return special.gammaln(a) + special.gammaln(b) - special.gammaln(a + b)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    y = (x - loc) / scale
    def inside(v):
        return (special.xlogy(a - 1, v) + special.xlog1py(b - 1, -v) - _betaln(a, b)
                - fnp.log(scale))
    return on_support((y >= 0) & (y <= 1), y, 0.5, inside, -np.inf)


def pdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, b, loc, scale))
