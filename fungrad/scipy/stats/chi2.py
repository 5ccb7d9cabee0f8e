"""``fungrad.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees
of freedom, which is ``gamma`` with shape ``df/2`` and scale ``2 * scale``."""
from __future__ import annotations

from fungrad.scipy.stats import gamma as _gamma

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    return _gamma.logpdf(x, 0.5 * df, loc, 2 * scale)


def pdf(x, df, loc=0, scale=1):
    return _gamma.pdf(x, 0.5 * df, loc, 2 * scale)


def cdf(x, df, loc=0, scale=1):
    return _gamma.cdf(x, 0.5 * df, loc, 2 * scale)


def logcdf(x, df, loc=0, scale=1):
    return _gamma.logcdf(x, 0.5 * df, loc, 2 * scale)


def sf(x, df, loc=0, scale=1):
    return _gamma.sf(x, 0.5 * df, loc, 2 * scale)


def logsf(x, df, loc=0, scale=1):
    return _gamma.logsf(x, 0.5 * df, loc, 2 * scale)
