"""``fungrad.scipy.special``: the ``jax.scipy.special`` functions, built on
``fungrad.numpy`` and ``fungrad.lax`` (so all of them are differentiable to any
order, vmappable and jittable).

Functions: ``logsumexp``, ``softmax``, ``log_softmax``, ``expit``, ``logit``,
``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``digamma``, ``xlogy``,
``xlog1py``, ``entr``, ``ndtr``, ``log_ndtr``; and (from ``_special_extra``,
on the ``lax`` primitives igamma/igammac/betainc/bessel/zeta) ``gammainc``,
``gammaincc``, ``betainc``, ``betaln``, ``beta``, ``gamma``, ``gammasgn``,
``multigammaln``, ``polygamma``, ``zeta``, ``i0``, ``i0e``, ``i1``, ``i1e``,
``ndtri``, ``rel_entr``, ``kl_div``, ``poch``, ``factorial``; and (from
``_special_more``, on the primitives of ``fungrad.lax.special_functions``)
``loggamma``, ``erfcx``, ``bessel_jn``, ``comb``, ``hyp1f1``, ``hyp2f1``,
``exp1``, ``expi``, ``expn``, ``sici``, ``fresnel``, ``dawsn``, ``spence``,
``owens_t``, ``wofz``, ``sph_harm_y``, ``bernoulli``, ``boxcox``, ``boxcox1p``.

``logit``, ``xlogy``, ``xlog1py`` and ``entr`` (through ``x log x``) have
JAX's custom JVPs: the values NaN-propagating and 0 at x == 0 as SciPy's, the
derivatives JAX's formulas everywhere (``xlogy``'s ``log(y)`` in ``x`` at
``x == 0`` too, ``entr'(0) = inf``).
"""
from __future__ import annotations

import math

import numpy as np

from fungrad._dtype_classes import is_inexact
from fungrad import lax
from fungrad.custom_derivatives import custom_jvp
import fungrad.numpy as fnp
from fungrad.scipy._special_extra import _real_only

__all__ = ["logsumexp", "softmax", "log_softmax", "expit", "logit", "erf", "erfc",
           "erfinv", "gammaln", "digamma", "xlogy", "xlog1py", "entr", "ndtr",
           "log_ndtr"]


def _promote_inexact(*args):
    """Arrays of one common floating dtype (integers and bools become the
    default float), weakly typed as JAX's ``promote_args_inexact`` makes them
    (a weak operand stays weak when all are: its derivatives are weak too)."""
    from fungrad.numpy._dtypes import promote
    return [fnp.asarray(a) for a in promote("promote_args_inexact", *args, to_float=True)]


# ----------------------------------------------------------------------------
# Log-sum-exp and softmax
# ----------------------------------------------------------------------------

def _stopped_max(a, axis, where):
    """max of ``a`` over ``axis`` (kept dims) as a constant for autodiff; a
    non-finite max (all entries -inf, or an inf) becomes 0 so that ``a - max``
    never computes ``inf - inf``."""
    a_max = fnp.max(a, axis=axis, keepdims=True, where=where, initial=-np.inf)
    a_max = fnp.where(fnp.isfinite(a_max), a_max, 0)
    return lax.stop_gradient(a_max)


def _softmax_max(a, axis, where):
    """The max that softmax and log_softmax subtract, held constant for
    autodiff; unlike logsumexp's, a non-finite max stays as it is, so that an
    ``inf`` entry makes every entry NaN (inf / inf), as in JAX."""
    return lax.stop_gradient(fnp.max(a, axis=axis, keepdims=True, where=where,
                                     initial=-np.inf))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) over ``axis`` without overflow.

    The max over ``axis`` is subtracted before ``exp`` (and held constant for
    autodiff, so gradients at entries equal to ``-inf`` are 0 and finite).
    With ``b`` the sum may be negative: ``return_sign=True`` returns
    ``(log|sum|, sign)``; otherwise a negative sum gives nan, as in JAX.
    """
    if b is None:
        (a,) = _promote_inexact(a)
    else:
        a, b = _promote_inexact(a, b)
        a, b = fnp.broadcast_arrays(a, b)
    a_max = _stopped_max(a, axis, where)
    # (lax.sub, as JAX's: a weak a minus the strong max is strong without a
    # promotion, so a weak a's gradient is strong, as in JAX)
    scaled = fnp.exp(lax.sub(a, fnp.broadcast_to(a_max, fnp.shape(a))))
    if b is not None:
        scaled = scaled * b
    total = fnp.sum(scaled, axis=axis, keepdims=keepdims, where=where)
    sign = fnp.sign(total)
    a_max = a_max if keepdims else fnp.squeeze(a_max, axis=axis)
    out = fnp.log(fnp.abs(total)) + a_max
    if return_sign:
        return out, sign
    if b is not None:
        out = fnp.where(sign < 0, np.nan, out)
    return out


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along ``axis``, stable for large |x|; entries outside
    ``where`` are -inf."""
    (x,) = _promote_inexact(x)
    shifted = x - _softmax_max(x, axis, where)
    if where is not None:
        shifted = fnp.where(where, shifted, -np.inf)
    shifted_lse = fnp.log(fnp.sum(fnp.exp(shifted), axis=axis, keepdims=True, where=where))
    out = shifted - shifted_lse
    return out if where is None else fnp.where(where, out, -np.inf)


def softmax(x, axis=None, where=None):
    """exp(x) / sum(exp(x)) along ``axis`` (``None``: all axes, as
    ``jax.scipy.special.softmax``); entries outside ``where`` are 0."""
    (x,) = _promote_inexact(x)
    shifted = x - _softmax_max(x, axis, where)
    if where is not None:
        shifted = fnp.where(where, shifted, -np.inf)
    unnormalized = fnp.exp(shifted)
    out = unnormalized / fnp.sum(unnormalized, axis=axis, keepdims=True, where=where)
    return out if where is None else fnp.where(where, out, 0)


# ----------------------------------------------------------------------------
# Logistic, error and gamma functions
# ----------------------------------------------------------------------------

def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _promote_inexact(x)
    return lax.logistic(x)


def logit(x):
    """log(x / (1 - x)), the inverse of ``expit``; derivative 1 / (x (1 - x))
    (inf at 0 and 1, as JAX's)."""
    (x,) = _promote_inexact(x)
    return _logit(x)


@custom_jvp
def _logit(x):
    return fnp.log(x / (1 - x))


_logit.defjvps(lambda g, ans, x: g / (x * (1 - x)))


@_real_only
def erf(x):
    (x,) = _promote_inexact(x)
    return lax.erf(x)


@_real_only
def erfc(x):
    (x,) = _promote_inexact(x)
    return lax.erfc(x)


@_real_only
def erfinv(x):
    (x,) = _promote_inexact(x)
    return lax.erf_inv(x)


@_real_only
def gammaln(x):
    """log|Γ(x)|."""
    (x,) = _promote_inexact(x)
    return lax.lgamma(x)


@_real_only
def digamma(x):
    (x,) = _promote_inexact(x)
    return lax.digamma(x)


_SQRT_HALF = math.sqrt(0.5)


@_real_only
def ndtr(x):
    """The standard normal CDF Φ(x) = erfc(-x/√2) / 2."""
    (x,) = _promote_inexact(x)
    return 0.5 * lax.erfc(-x * _SQRT_HALF)


# Below this, erfc's result underflows towards 0 and its log loses accuracy,
# so log Φ(x) is taken from the asymptotic series instead.
_LOG_NDTR_SERIES_BELOW = -20.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _log_ndtr_asymptotic(x):
    """log Φ(x) for x << 0: -x²/2 - log(-x) - log√(2π) + log(Σ_k (-1)^k (2k-1)!!/x^{2k}).
    Eight terms give double precision for x <= -20."""
    inv_x2 = 1 / (x * x)
    series, term = 1.0, 1.0
    for k in range(1, 9):
        term = term * (-(2 * k - 1)) * inv_x2
        series = series + term
    return -0.5 * x * x - fnp.log(-x) - _HALF_LOG_2PI + fnp.log(series)


@_real_only
def log_ndtr(x):
    """log Φ(x), accurate in both tails (x from -1e150 to +inf)."""
    (x,) = _promote_inexact(x)
    in_left_tail = x < _LOG_NDTR_SERIES_BELOW
    # each branch gets inputs on which it is finite, so that gradients of the
    # discarded branch are finite too (0 · finite, never 0 · inf)
    tail_x = fnp.where(in_left_tail, x, _LOG_NDTR_SERIES_BELOW - 1)
    body_x = fnp.where(in_left_tail, 0.0, x)
    # for x > 0: log(1 - Φ(-x)) keeps the tiny deficit that log(Φ(x)) rounds to 0
    positive = body_x > 0
    upper = fnp.log1p(-0.5 * lax.erfc(fnp.abs(body_x) * _SQRT_HALF))
    # (a select, not minimum: minimum's tie rule would halve the slope at 0)
    lower = fnp.log(0.5 * lax.erfc(-fnp.where(positive, 0.0, body_x) * _SQRT_HALF))
    body = fnp.where(positive, upper, lower)
    return fnp.where(in_left_tail, _log_ndtr_asymptotic(tail_x), body)


# ----------------------------------------------------------------------------
# x·log(y) and entropy, with 0·log(0) = 0
# ----------------------------------------------------------------------------

def _times_log_function(log_fn, denominator):
    """``x · log_fn(y)`` with JAX's custom JVP: 0 where x == 0 unless y is NaN
    (SciPy's and JAX's rule; the discarded branch computes on 1, so no invalid
    operation warns), derivatives ``log_fn(y)`` in x (at x == 0 too) and
    ``x / denominator(y)`` in y."""
    @custom_jvp
    def times_log(x, y):
        keep = (x != 0) | fnp.isnan(y)
        return fnp.where(keep, x * log_fn(fnp.where(keep, y, 1)), fnp.zeros_like(x))

    @times_log.defjvp
    def times_log_jvp(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return times_log(x, y), x_dot * log_fn(y) + y_dot * x / denominator(y)
    return times_log


_xlogy = _times_log_function(fnp.log, lambda y: y)
_xlog1py = _times_log_function(fnp.log1p, lambda y: 1 + y)


def xlogy(x, y):
    """x · log(y), 0 where x == 0 (unless y is NaN); derivatives log(y) in x
    (at x == 0 too) and x / y in y, as JAX's."""
    x, y = _promote_inexact(x, y)
    return _xlogy(*fnp.broadcast_arrays(x, y))


def xlog1py(x, y):
    """x · log1p(y), 0 where x == 0 (unless y is NaN); JAX's derivatives."""
    x, y = _promote_inexact(x, y)
    return _xlog1py(*fnp.broadcast_arrays(x, y))


@custom_jvp
def _xlogx(x):
    return _xlogy(x, x)


_xlogx.defjvps(lambda g, ans, x: g * (fnp.log(x) + 1))


@_real_only
def entr(x):
    """Elementwise entropy: -x·log(x) for x >= 0 (0 at 0), -inf for x < 0, NaN
    for NaN; derivative -(log x + 1) (inf at 0), 0 below 0, as JAX's."""
    (x,) = _promote_inexact(x)
    negative = x < 0
    return fnp.where(negative, fnp.full_like(x, -np.inf), -_xlogx(fnp.where(negative, 1.0, x)))


from fungrad.scipy._special_extra import *  # noqa: E402,F401,F403
from fungrad.scipy import _special_extra  # noqa: E402

__all__ += _special_extra.__all__

from fungrad.scipy._special_more import *  # noqa: E402,F401,F403
from fungrad.scipy import _special_more  # noqa: E402

__all__ += _special_more.__all__
