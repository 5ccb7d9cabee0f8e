"""Shared helpers of ``fungrad.scipy.stats``: argument promotion, loc/scale
standardisation, support masking that keeps gradients finite, and the
regularized incomplete gamma (lax.igamma/igammac) used by the gamma/chi2/poisson CDFs."""
from __future__ import annotations

import math

import fungrad.numpy as fnp

# arrays of one common floating dtype, as scipy.special's functions promote
from fungrad.scipy.special import _promote_inexact as promote  # noqa: F401

LOG_2PI = math.log(2 * math.pi)
LOG_PI = math.log(math.pi)


def standardize(x, loc, scale):
    """``(y, scale)`` with ``y = (x - loc) / scale``, all promoted to one float dtype."""
    x, loc, scale = promote(x, loc, scale)
    return (x - loc) / scale, scale


def on_support(inside, y, safe, fn, outside):
    """``fn(y)`` where ``inside``, ``outside`` elsewhere.  ``fn`` only ever sees
    ``y`` on the support (``safe`` elsewhere), so that the discarded lanes cannot
    produce inf/nan derivatives (0 * inf) that leak through ``where``."""
    y_in = fnp.where(inside, y, safe)
    return fnp.where(inside, fn(y_in), outside)


def is_integer_valued(k):
    return k == fnp.round(k)


def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x) (``lax.igamma``: x = inf gives 1;
    x < 0 or a <= 0 give nan)."""
    from fungrad import lax
    a, x = promote(a, x)
    return lax.igamma(*fnp.broadcast_arrays(a, x))


def gammaincc(a, x):
    """Regularized upper incomplete gamma Q(a, x), computed directly (``lax.igammac``)
    so that small upper tails keep their digits."""
    from fungrad import lax
    a, x = promote(a, x)
    return lax.igammac(*fnp.broadcast_arrays(a, x))
