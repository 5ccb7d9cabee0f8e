"""``fungrad.scipy.stats.laplace``: density exp(-|y|) / (2 scale)."""
from __future__ import annotations

import math

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy.stats._util import promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return -math.log(2.0) - fnp.log(scale) - fnp.abs(y)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def _lower_tail(y):
    """P(Y <= y) for the standard Laplace, accurate in both tails."""
    neg = fnp.minimum(y, 0.0)
    pos = fnp.maximum(y, 0.0)
    return fnp.where(y < 0, 0.5 * fnp.exp(neg), 1 - 0.5 * fnp.exp(-pos))


def cdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _lower_tail(y)


def sf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _lower_tail(-y)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    lower = fnp.log(2 * fnp.where(q <= 0.5, q, 0.5))
    upper = -fnp.log(2 - 2 * fnp.where(q > 0.5, q, 0.5))
    y = fnp.where(q <= 0.5, lower, upper)
    return fnp.where((q >= 0) & (q <= 1), loc + scale * y, np.nan)
