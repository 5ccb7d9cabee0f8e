"""``fungrad.scipy.stats.t``: Student's t distribution with ``df`` degrees of freedom."""
from __future__ import annotations

import fungrad.numpy as fnp
from fungrad.scipy import special
from fungrad.scipy.stats._util import LOG_PI, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    half = 0.5 * (df + 1)
    norm_const = (special.gammaln(half) - special.gammaln(0.5 * df)
                  - 0.5 * (fnp.log(df) + LOG_PI) - fnp.log(scale))
    return norm_const - half * fnp.log1p(y * y / df)


def pdf(x, df, loc=0, scale=1):
    return fnp.exp(logpdf(x, df, loc, scale))
