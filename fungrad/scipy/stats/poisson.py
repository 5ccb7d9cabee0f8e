"""``fungrad.scipy.stats.poisson``: pmf mu^k e^(-mu) / k! at k - loc = 0, 1, 2, ...
(0 at negative or non-integer k)."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import gammaincc, is_integer_valued, promote

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
    k, mu, loc = promote(k, mu, loc)
    y = k - loc
    valid = (y >= 0) & is_integer_valued(y)
    safe_y = fnp.where(valid, y, 0.0)
    log_p = special.xlogy(safe_y, mu) - mu - special.gammaln(safe_y + 1)
    return fnp.where(valid, log_p, -np.inf)


def pmf(k, mu, loc=0):
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """P(K <= k) = Q(floor(k - loc) + 1, mu), the upper regularized incomplete gamma."""
    k, mu, loc = promote(k, mu, loc)
    y = fnp.floor(k - loc)
    safe_y = fnp.where(y >= 0, y, 0.0)
    return fnp.where(y >= 0, gammaincc(safe_y + 1, mu), 0.0)
