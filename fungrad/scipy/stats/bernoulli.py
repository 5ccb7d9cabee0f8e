"""``fungrad.scipy.stats.bernoulli``: P(k=1) = p, P(k=0) = 1 - p (at k - loc)."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    y = k - loc
    valid = (y == 0) | (y == 1)
    safe_y = fnp.where(valid, y, 0.0)
    log_p = special.xlogy(safe_y, p) + special.xlog1py(1 - safe_y, -p)
    return fnp.where(valid, log_p, -np.inf)


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    y = k - loc
    out = fnp.where(y < 0, 0.0, fnp.where(y < 1, 1 - p, 1.0))
    return fnp.where((p >= 0) & (p <= 1), out, np.nan)


def ppf(q, p, loc=0):
    q, p, loc = promote(q, p, loc)
    out = fnp.where(q > 1 - p, 1.0, 0.0) + loc
    return fnp.where((q >= 0) & (q <= 1) & (p >= 0) & (p <= 1), out, np.nan)
