"""``fungrad.scipy.stats.binom``: C(n, k) p^k (1-p)^(n-k) at k - loc = 0..n."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import is_integer_valued, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote(k, n, p, loc)
    y = k - loc
    valid = (y >= 0) & (y <= n) & is_integer_valued(y)
    safe_y = fnp.where(valid, y, 0.0)
    log_comb = (special.gammaln(n + 1) - special.gammaln(safe_y + 1)
                - special.gammaln(n - safe_y + 1))
    log_p = log_comb + special.xlogy(safe_y, p) + special.xlog1py(n - safe_y, -p)
    return fnp.where(valid, log_p, -np.inf)


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
