"""``fungrad.scipy.stats.geom``: (1-p)^(k-1) p at k - loc = 1, 2, ... (trials to
the first success, SciPy's convention)."""
from __future__ import annotations

import numpy as np

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import is_integer_valued, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    y = k - loc
    valid = (y >= 1) & is_integer_valued(y)
    safe_y = fnp.where(valid, y, 1.0)
    log_p = special.xlog1py(safe_y - 1, -p) + fnp.log(p)
    return fnp.where(valid, log_p, -np.inf)


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))
