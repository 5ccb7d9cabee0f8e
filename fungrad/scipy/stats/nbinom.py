"""``fungrad.scipy.stats.nbinom``: Γ(n+k) / (Γ(n) k!) p^n (1-p)^k at k - loc = 0, 1, ...
(failures before the n-th success, SciPy's convention; n may be real)."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import is_integer_valued, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote(k, n, p, loc)
    y = k - loc
    valid = (y >= 0) & is_integer_valued(y)
    safe_y = fnp.where(valid, y, 0.0)
    log_comb = special.gammaln(n + safe_y) - special.gammaln(safe_y + 1) - special.gammaln(n)
    log_p = log_comb + special.xlogy(n, p) + special.xlog1py(safe_y, -p)
    return fnp.where(valid, log_p, -np.inf)


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
