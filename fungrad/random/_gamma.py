"""The gamma family (gamma, loggamma, beta, dirichlet), poisson and binomial."""
import math
from operator import index as _as_index

import numpy as np

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import Tracer, canonicalize_dtype, get_aval
from fungrad.custom_derivatives import custom_jvp

__all__ = ['loggamma', 'gamma', 'beta', 'dirichlet', 'poisson', 'binomial']
from fungrad.random._keys import *  # noqa: F403
from fungrad.random._keys import _check_key, _shape_tuple
from fungrad.random._samplers import *  # noqa: F403
from fungrad.random._samplers import _float_dtype, _param_shape, _check_broadcastable, _DtypeError

# ----------------------------------------------------------------------------
# gamma family: gamma, loggamma, beta, dirichlet
# ----------------------------------------------------------------------------
# All rejection samplers below share one pattern: a ``lax.while_loop`` over the
# whole array. Each round derives a fresh key with ``fold_in(key, round)``,
# proposes a value for every entry, and keeps the proposal only for entries
# that accept it for the first time; the loop stops when every entry has
# accepted. Under ``vmap`` the loop runs while any lane is live, and lanes that
# finished keep their values, so a batch of keys gives what a Python loop gives.

def _rejection_loop(key, shape, dtype, propose, value_dtype):
    """Run ``propose(round_key) -> (value, accept)`` until every entry accepted.

    Returns the first accepted value of every entry (an array of ``shape``).
    """
    def body(carry):
        round_index, values, done = carry
        proposal, accept = propose(fold_in(key, round_index))
        values = fnp.where(accept & fnp.logical_not(done), proposal, values)
        return round_index + np.uint32(1), values, done | accept

    init = (np.uint32(0), fnp.zeros(shape, value_dtype), fnp.zeros(shape, np.bool_))
    _, values, _ = lax.while_loop(lambda c: fnp.logical_not(fnp.all(c[2])), body, init)
    return values


def _two_uniforms(round_key, shape, dtype):
    first, second = split(round_key)
    return uniform(first, shape, dtype), uniform(second, shape, dtype)


def _marsaglia_tsang_log(key, alpha, shape, dtype):
    """log of Gamma(alpha, 1) samples for alpha >= 1 (Marsaglia & Tsang 2000).

    Proposal ``d * (1 + c z)**3`` with z normal, d = alpha - 1/3, c = 1/sqrt(9d);
    accepted when ``log u < z**2/2 + d - d v + d log v``: exact, and the
    acceptance rate is above 95% for every alpha >= 1.
    """
    d = alpha - 1.0 / 3.0
    c = 1.0 / fnp.sqrt(9.0 * d)

    def propose(round_key):
        normal_key, uniform_key = split(round_key)
        z = normal(normal_key, shape, dtype)
        log_u = fnp.log(uniform(uniform_key, shape, dtype, minval=np.finfo(dtype).tiny))
        v = (1.0 + c * z) ** 3
        positive = v > 0
        safe_v = fnp.where(positive, v, 1.0)   # log of a rejected v <= 0 is never used
        log_v = fnp.log(safe_v)
        accept = positive & (log_u < 0.5 * z * z + d - d * safe_v + d * log_v)
        return fnp.log(d) + log_v, accept

    return _rejection_loop(key, shape, dtype, propose, dtype)


def _float_param(value, dtype):
    return lax.convert_element_type(fnp.asarray(value), dtype)


def _log_gamma_sample(key, a, shape, dtype):
    """log of Gamma(a, 1) samples; nan where a <= 0 or a is nan, inf where a = inf.

    For a < 1 the sampler draws Gamma(a + 1) and multiplies by U**(1/a)
    (Marsaglia & Tsang's boost), in log space so that tiny a does not
    underflow to 0. The derivative in ``a`` is attached by ``_implicit_gamma_grad``.
    """
    a = fnp.broadcast_to(a, shape)
    valid = (a > 0) & fnp.isfinite(a)
    safe_a = lax.stop_gradient(fnp.where(valid, a, 1.0))   # rejection is not differentiated
    boosted = safe_a < 1
    gamma_key, boost_key = split(key)
    log_x = _marsaglia_tsang_log(gamma_key, fnp.where(boosted, safe_a + 1.0, safe_a), shape, dtype)
    log_u = fnp.log(uniform(boost_key, shape, dtype, minval=np.finfo(dtype).tiny))
    log_x = fnp.where(boosted, log_x + log_u / safe_a, log_x)
    log_x = _implicit_gamma_grad(fnp.where(valid, a, 1.0), log_x)
    return fnp.where(valid, log_x, fnp.where(a == np.inf, np.inf, np.nan).astype(dtype))


def _dlog_sample_dalpha(alpha, log_x):
    """d log(x) / d alpha at a Gamma(alpha) sample x, by implicit differentiation
    of P(alpha, x) = u: dx/dalpha = -(dP/dalpha) / pdf(x) (``lax.random_gamma_grad``,
    accurate to ~1e-14), divided by x."""
    x = fnp.exp(log_x)
    return lax.random_gamma_grad(alpha, x) / x


@custom_jvp
def _implicit_gamma_grad(alpha, log_x):
    """Identity on the log-sample ``log_x``; its JVP in ``alpha`` is the implicit
    reparameterisation gradient (Figurnov et al. 2018), as JAX's gamma has."""
    return log_x


@_implicit_gamma_grad.defjvp
def _implicit_gamma_grad_jvp(primals, tangents):
    alpha, log_x = primals
    d_alpha, d_log_x = tangents
    return log_x, d_log_x + d_alpha * _dlog_sample_dalpha(alpha, log_x)


def _gamma_setup(key, a, shape, dtype, caller):
    key = _check_key(key, caller)
    dtype = _float_dtype(dtype, caller)
    a = _float_param(a, dtype)
    return key, a, _param_shape(caller, shape, a), dtype


def loggamma(key, a, shape=None, dtype=np.float64):
    """log of Gamma(a, 1) samples, accurate for tiny ``a`` where ``gamma`` underflows.

    ``shape`` defaults to ``a.shape``; ``a <= 0`` (or nan) gives nan.
    Differentiable in ``a`` (implicit reparameterisation, as JAX).
    """
    key, a, shape, dtype = _gamma_setup(key, a, shape, dtype, "loggamma")
    return _log_gamma_sample(key, a, shape, dtype)


def gamma(key, a, shape=None, dtype=np.float64):
    """Gamma(a, 1) samples (Marsaglia–Tsang rejection; boosted for a < 1).

    ``shape`` defaults to ``a.shape``; ``a <= 0`` (or nan) gives nan.
    Differentiable in ``a`` (implicit reparameterisation, as JAX).
    """
    key, a, shape, dtype = _gamma_setup(key, a, shape, dtype, "gamma")
    return fnp.exp(_log_gamma_sample(key, a, shape, dtype))


def beta(key, a, b, shape=None, dtype=np.float64):
    """Beta(a, b) samples as X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b) (in log space).

    ``shape`` defaults to the broadcast shape of ``a`` and ``b``; a or b <= 0 gives nan.
    """
    key = _check_key(key, "beta")
    dtype = _float_dtype(dtype, "beta")
    a, b = _float_param(a, dtype), _float_param(b, dtype)
    shape = _param_shape("beta", shape, a, b)
    a_key, b_key = split(key)
    log_x = _log_gamma_sample(a_key, a, shape, dtype)
    log_y = _log_gamma_sample(b_key, b, shape, dtype)
    return fnp.exp(log_x - fnp.logaddexp(log_x, log_y))


def dirichlet(key, alpha, shape=None, dtype=np.float64):
    """Dirichlet(alpha) samples: normalised Gamma(alpha_i) draws (in log space).

    ``alpha`` has shape ``(..., k)``; ``shape`` is the batch shape (default
    ``alpha.shape[:-1]``) and the result has shape ``shape + (k,)``.
    """
    key = _check_key(key, "dirichlet")
    dtype = _float_dtype(dtype, "dirichlet")
    alpha = _float_param(alpha, dtype)
    if alpha.ndim < 1:
        raise ValueError("fungrad.random.dirichlet: `alpha` must have at least one "
                         "dimension (the categories), got a scalar; pass e.g. [1.0, 2.0].")
    batch = tuple(alpha.shape[:-1])
    shape = batch if shape is None else _shape_tuple(shape, "dirichlet", "shape")
    _check_broadcastable("dirichlet", shape, fnp.zeros(batch))
    log_g = _log_gamma_sample(key, alpha, (*shape, alpha.shape[-1]), dtype)
    # Normalising in log space keeps tiny-alpha draws from becoming 0 / 0.
    shifted = log_g - lax.stop_gradient(fnp.max(log_g, axis=-1, keepdims=True))
    weights = fnp.exp(shifted)
    return weights / fnp.sum(weights, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------
# poisson and binomial (exact; counts are computed as floats, then converted)
# ----------------------------------------------------------------------------

def _knuth_poisson(key, lam, shape, dtype):
    """Poisson(lam) by Knuth's product of uniforms: the count of factors before
    the running product drops below exp(-lam) (in log space). Rounds ~ lam, so
    this is used for lam < 10 only."""
    def body(carry):
        round_index, count, log_product, done = carry
        u = uniform(fold_in(key, round_index), shape, dtype)
        log_product = log_product + fnp.log(u)
        done_now = done | (log_product < -lam)
        return round_index + np.uint32(1), fnp.where(done_now, count, count + 1), log_product, done_now

    init = (np.uint32(0), fnp.zeros(shape, dtype), fnp.zeros(shape, dtype), fnp.zeros(shape, np.bool_))
    _, count, _, _ = lax.while_loop(lambda c: fnp.logical_not(fnp.all(c[3])), body, init)
    return count


def _ptrs_poisson(key, lam, shape, dtype):
    """Poisson(lam) for lam >= 10 by Hörmann's transformed rejection with squeeze
    (PTRS, Hörmann 1993, as NumPy uses): exact, ~1.1 proposals per sample."""
    log_lam = fnp.log(lam)
    b = 0.931 + 2.53 * fnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def propose(round_key):
        u, v = _two_uniforms(round_key, shape, dtype)
        u = u - 0.5
        us = 0.5 - fnp.abs(u)
        k = fnp.floor((2 * a / us + b) * u + lam + 0.43)
        squeeze = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((us < 0.013) & (v > us))
        safe_k = fnp.where(k < 0, 0.0, k)
        log_ratio = fnp.log(v * inv_alpha / (a / (us * us) + b))
        exact = log_ratio <= -lam + safe_k * log_lam - lax.lgamma(safe_k + 1)
        return k, squeeze | (fnp.logical_not(reject) & exact)

    return _rejection_loop(key, shape, dtype, propose, dtype)


# Below this mean the counting methods (Knuth, waiting times) are used; above,
# transformed rejection (their round counts grow with the mean, its do not).
_SMALL_MEAN = 10.0


def poisson(key, lam, shape=None, dtype=np.int64):
    """Poisson(lam) counts: Knuth's method for lam < 10, PTRS rejection above.

    ``shape`` defaults to ``lam.shape``. Invalid ``lam`` (negative, nan or
    inf) gives -1 (an integer result cannot hold nan).
    """
    key = _check_key(key, "poisson")
    dtype = canonicalize_dtype(dtype)     # int32 when jax_enable_x64 is off
    if dtype.kind not in "iu":
        raise TypeError(f"fungrad.random.poisson: `dtype` must be an integer type, got "
                        f"{dtype}; e.g. dtype=numpy.int64.")
    lam = lax.stop_gradient(_float_param(lam, np.float64))
    shape = _param_shape("poisson", shape, lam)
    lam = fnp.broadcast_to(lam, shape)
    valid = (lam >= 0) & fnp.isfinite(lam)
    small = lam < _SMALL_MEAN
    knuth_key, ptrs_key = split(key)
    # Entries handled by the other method get a parameter that finishes at once.
    counts = fnp.where(small,
                       _knuth_poisson(knuth_key, fnp.where(small & valid, lam, 0.0), shape, np.float64),
                       _ptrs_poisson(ptrs_key, fnp.where(small | ~valid, 1e3, lam), shape, np.float64))
    counts = fnp.where(valid, counts, -1.0)
    return lax.convert_element_type(counts, dtype)


def _waiting_time_binomial(key, n, p, shape, dtype):
    """Binomial(n, p) by inversion through geometric waiting times: count the
    successes whose Geometric(p) trial gaps still fit into n trials.
    Rounds ~ n p, so this is used for n p < 10 only (p > 0)."""
    log_q = fnp.log1p(-p)

    def body(carry):
        round_index, count, trials, done = carry
        u = 1.0 - uniform(fold_in(key, round_index), shape, dtype)   # on (0, 1]
        trials = trials + fnp.floor(fnp.log(u) / log_q) + 1
        done_now = done | (trials > n)
        return round_index + np.uint32(1), fnp.where(done_now, count, count + 1), trials, done_now

    init = (np.uint32(0), fnp.zeros(shape, dtype), fnp.zeros(shape, dtype), fnp.zeros(shape, np.bool_))
    _, count, _, _ = lax.while_loop(lambda c: fnp.logical_not(fnp.all(c[3])), body, init)
    return count


def _btrs_binomial(key, n, p, shape, dtype):
    """Binomial(n, p) for n p >= 10 and p <= 1/2 by Hörmann's BTRS (transformed
    rejection with squeeze, 1993); the final test compares with the exact
    log-pmf ratio to the mode, so the samples are exact."""
    spq = fnp.sqrt(n * p * (1 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = fnp.log(p) - fnp.log1p(-p)
    mode = fnp.floor((n + 1) * p)
    log_mode_terms = lax.lgamma(mode + 1) + lax.lgamma(n - mode + 1)

    def propose(round_key):
        u, v = _two_uniforms(round_key, shape, dtype)
        u = u - 0.5
        us = 0.5 - fnp.abs(u)
        k = fnp.floor((2 * a / us + b) * u + c)
        in_range = (k >= 0) & (k <= n)
        safe_k = fnp.clip(k, 0, n)
        squeeze = (us >= 0.07) & (v <= v_r)
        log_v = fnp.log(v * alpha / (a / (us * us) + b))
        exact = log_v <= (log_mode_terms - lax.lgamma(safe_k + 1) - lax.lgamma(n - safe_k + 1)
                          + (safe_k - mode) * log_odds)
        return k, in_range & (squeeze | exact)

    return _rejection_loop(key, shape, dtype, propose, dtype)


def binomial(key, n, p, shape=None, dtype=np.float64):
    """Binomial(n, p) counts (as floats, like JAX): waiting-time inversion when
    n min(p, 1-p) < 10, BTRS rejection otherwise; p > 1/2 samples n - Bin(n, 1-p).

    ``shape`` defaults to the broadcast shape of ``n`` and ``p``. Invalid
    parameters (n negative or not a whole number, p outside [0, 1], nan) give nan.
    """
    key = _check_key(key, "binomial")
    dtype = _float_dtype(dtype, "binomial")
    n = lax.stop_gradient(_float_param(n, np.float64))
    p = lax.stop_gradient(_float_param(p, np.float64))
    shape = _param_shape("binomial", shape, n, p)
    n, p = fnp.broadcast_to(n, shape), fnp.broadcast_to(p, shape)
    valid = (n >= 0) & fnp.isfinite(n) & (fnp.floor(n) == n) & (p >= 0) & (p <= 1)
    flipped = p > 0.5
    q = fnp.where(flipped, 1 - p, p)                       # q <= 1/2
    trivial = (q == 0) | ~valid                            # always 0 successes (or nan below)
    small = n * q < _SMALL_MEAN
    small_key, btrs_key = split(key)
    # Entries handled elsewhere get parameters that finish in the first round.
    counts = fnp.where(
        small,
        _waiting_time_binomial(small_key, fnp.where(small & ~trivial, n, 0.0),
                               fnp.where(small & ~trivial, q, 0.5), shape, np.float64),
        _btrs_binomial(btrs_key, fnp.where(small | trivial, 100.0, n),
                       fnp.where(small | trivial, 0.5, q), shape, np.float64))
    counts = fnp.where(trivial, 0.0, counts)
    counts = fnp.where(flipped, n - counts, counts)
    return lax.convert_element_type(fnp.where(valid, counts, np.nan), dtype)


