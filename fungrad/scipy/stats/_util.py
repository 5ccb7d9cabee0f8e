"""Shared helpers of ``fungrad.scipy.stats``: argument promotion, loc/scale
standardisation, support masking that keeps gradients finite, and the
regularized incomplete gamma function used by the gamma/chi2/poisson CDFs."""
from __future__ import annotations

import math

import numpy as np

import fungrad.numpy as fnp
from fungrad import lax

LOG_2PI = math.log(2 * math.pi)
LOG_PI = math.log(math.pi)


def promote(*args):
    """Arrays of one common floating dtype (integers and bools become float64),
    keeping NumPy 2's weak treatment of Python scalars."""
    dtype = fnp.result_type(*args)
    if not np.issubdtype(dtype, np.inexact):
        dtype = np.dtype(np.float64)
    return [fnp.asarray(a, dtype=dtype) for a in args]


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
    """Regularized lower incomplete gamma P(a, x) for a > 0, x >= 0 (x = inf
    gives 1; x < 0 or a <= 0 give nan).  Reuses the series / continued fraction
    written in fungrad for ``fungrad.random.gamma``'s reparameterisation
    gradient, so it is differentiable in both ``a`` and ``x``."""
    from fungrad.random import _regularized_gamma_p
    a, x = promote(a, x)
    a, x = fnp.broadcast_arrays(a, x)
    valid = (a > 0) & (x >= 0)
    interior = valid & (x > 0) & fnp.isfinite(x) & fnp.isfinite(a)
    p = _regularized_gamma_p(fnp.where(interior, a, 1.0), fnp.where(interior, x, 1.0))
    edge = fnp.where(x == 0, 0.0, fnp.where(fnp.isinf(x), 1.0, np.nan)).astype(p.dtype)
    return fnp.where(interior, p, fnp.where(valid, edge, np.nan))


def gammaincc(a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    return 1 - gammainc(a, x)
