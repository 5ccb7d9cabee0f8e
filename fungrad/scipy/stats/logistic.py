"""``fungrad.scipy.stats.logistic``: density σ(y) σ(-y) / scale, σ the logistic sigmoid."""
from __future__ import annotations

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _log_sigmoid(y):
    return -fnp.logaddexp(0.0, -y)


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return _log_sigmoid(y) + _log_sigmoid(-y) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.expit(y)


def logcdf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _log_sigmoid(y)


def sf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return special.expit(-y)


def logsf(x, loc=0, scale=1):
    y, _ = standardize(x, loc, scale)
    return _log_sigmoid(-y)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * special.logit(q)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * special.logit(q)
