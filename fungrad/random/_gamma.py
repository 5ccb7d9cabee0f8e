"""The gamma family (gamma, loggamma, beta, dirichlet), poisson and binomial."""
import math

import numpy as np
from fungrad._dtype_classes import finfo as dtype_finfo, is_inexact, is_integer

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import canonicalize_dtype, get_aval
from fungrad.custom_derivatives import custom_jvp

__all__ = ['loggamma', 'gamma', 'beta', 'dirichlet', 'poisson', 'binomial']
from fungrad.random._keys import *  # noqa: F403
from fungrad.random._keys import (_check_key, _shape_tuple, _split_raw, _random_bits,
                                  _transcendentals, _XLA_CPU, _row_sum)
from fungrad.random._samplers import *  # noqa: F403
from fungrad.random._samplers import _float_dtype, _param_shape, _check_broadcastable

# ----------------------------------------------------------------------------
# gamma family: gamma, loggamma, beta, dirichlet
# ----------------------------------------------------------------------------
# Every sampler in this module is JAX's algorithm with JAX's key splitting, so
# it draws JAX's numbers: a ``lax.while_loop`` over the whole array whose
# rounds split the key as JAX's do, run while any entry is live (JAX's own
# loops over the array, or its per-entry loops with finished entries held still).

def _float_param(value, dtype):
    return lax.convert_element_type(fnp.asarray(value), dtype)


def _gamma_setup(key, a, shape, dtype, caller):
    key = _check_key(key, caller)
    dtype = _float_dtype(dtype, caller)
    a = _float_param(a, dtype)
    return key, a, _param_shape(caller, shape, a), dtype


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) samples by JAX's algorithm and stream (Marsaglia-Tsang, one
    key per sample; boosted for a < 1). ``shape`` defaults to ``a.shape``;
    invalid ``a`` gives what JAX's loop gives (nan for a < -1 or nan, 0 for 0).
    Differentiable in ``a`` (implicit reparameterisation, as JAX)."""
    key, a, shape, dtype = _gamma_setup(key, a, shape, dtype, "gamma")
    return _gamma_sample(key, a, shape, dtype, log_space=False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, accurate for tiny ``a`` where ``gamma``
    underflows (JAX's algorithm and stream; ``shape`` defaults to ``a.shape``).
    Differentiable in ``a`` (implicit reparameterisation, as JAX)."""
    key, a, shape, dtype = _gamma_setup(key, a, shape, dtype, "loggamma")
    return _gamma_sample(key, a, shape, dtype, log_space=True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples as JAX draws them: X / (X + Y) from the logs of
    Gamma(a) and Gamma(b) samples (of the two halves of a split key), scaled
    by the larger. ``shape`` defaults to the broadcast shape of ``a`` and ``b``."""
    key = _check_key(key, "beta")
    dtype = _float_dtype(dtype, "beta")
    a, b = _float_param(a, dtype), _float_param(b, dtype)
    shape = _param_shape("beta", shape, a, b)
    a_key, b_key = split(key)
    log_x = _gamma_sample(a_key, a, shape, dtype, log_space=True)
    log_y = _gamma_sample(b_key, b, shape, dtype, log_space=True)
    log_max = lax.max(log_x, log_y)
    exp = _transcendentals(shape).exp
    x, y = exp(log_x - log_max), exp(log_y - log_max)
    return x / (x + y)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples: JAX's softmax of loggamma(alpha) draws.

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
    k = alpha.shape[-1]
    # With a batch shape (vmap's too), XLA computes the logs of the draws in a
    # loop of their own (they feed the max and the exp), without one it fuses them
    log_g = _gamma_sample(key, alpha, (*shape, k), dtype, log_space=True,
                          short_loop_log=(len(shape) > 0 and k > 1, k > 1))
    # Normalising in log space keeps tiny-alpha draws from becoming 0 / 0.
    shifted = log_g - lax.stop_gradient(fnp.max(log_g, axis=-1, keepdims=True))
    weights = _transcendentals(get_aval(shifted).shape).exp(shifted)
    # XLA turns the division by the broadcast sum into a product with its reciprocal
    total = _row_sum(weights, keepdims=True)
    return weights * (np.ones((), dtype) / total)


def _gamma_sample(key, a, shape, dtype, log_space, short_loop_log=(False, False)):
    """JAX's random_gamma: Gamma(a, 1) samples (their logs with ``log_space``) of
    ``shape``, one key of ``split(key, size)`` per sample, each drawn by JAX's
    scalar Marsaglia-Tsang loop (``_marsaglia_tsang``), with JAX's implicit
    reparameterisation derivative in ``a``. ``short_loop_log``: whether XLA
    computes the final log of the draws in a loop of its own, unbatched and
    under vmap (see ``_short_loop_log``)."""
    a = fnp.broadcast_to(a, shape)
    size = math.prod(shape)
    keys = _split_raw(key, (size,))
    alphas = fnp.reshape(lax.stop_gradient(a), (size,))
    samples = fnp.reshape(_marsaglia_tsang(keys, alphas, dtype, log_space, short_loop_log),
                          shape)
    return (_implicit_log_gamma_grad if log_space else _implicit_gamma_grad)(a, samples)


def _marsaglia_tsang(keys, alpha, dtype, log_space, short_loop_log=(False, False)):
    """JAX's ``_gamma_one`` for every (key, alpha) pair at once: per entry, rounds
    of ``key, x_key, u_key = split(key, 3)``, normals ``x`` (each from
    ``x_key, sub = split(x_key)``) until ``v = 1 + c x > 0``, then a uniform,
    until Marsaglia and Tsang's test accepts ``d v**3``; alpha < 1 is boosted
    with ``u**(1/alpha)`` of the first split's second key. Entries loop
    independently (a finished entry keeps its state), so each gets exactly
    what JAX's loop gives it alone."""
    one, zero = np.asarray(1, dtype), np.asarray(0, dtype)
    boost = alpha >= one
    alpha_boosted = fnp.where(boost, alpha, alpha + one)
    d = alpha_boosted - np.asarray(1 / 3, dtype)
    fns = _transcendentals(get_aval(alpha).shape)
    # XLA rewrites JAX's (1/3) / sqrt(d) as (1/3) rsqrt(d), rsqrt being the
    # CPU's estimate refined by Newton steps (xla_cpu_math.rsqrt)
    c = np.asarray(1 / 3, dtype) * fns.rsqrt(d)
    first = _split_raw(keys, (2,))
    key, boost_key = first[:, 0], first[:, 1]

    def rejected(X, V, U):
        squeeze = U >= one - np.asarray(0.0331, dtype) * (X * X)
        # XLA computes these two logs in loops of their own
        return squeeze & (_short_loop_log(fns, U) >= X * np.asarray(0.5, dtype)
                          + d * ((one - V) + _short_loop_log(fns, V)))

    def propose(state):
        key, X, V, U, live = state
        split3 = _split_raw(key, (3,))
        x, v = _positive_v(split3[:, 1], c, dtype, live)
        U_new = _random_bits(split3[:, 2], dtype, (), "unit")
        key = fnp.where(live[:, None], split3[:, 0], key)
        X, V, U = (fnp.where(live, new, old)
                   for new, old in ((x * x, X), (v * v * v, V), (U_new, U)))
        return key, X, V, U, live & rejected(X, V, U)

    shape = get_aval(alpha).shape
    init = (key, fnp.zeros(shape, dtype), fnp.ones(shape, dtype), fnp.full(shape, 2, dtype),
            fnp.ones(shape, np.bool_))
    _, _, V, _, _ = lax.while_loop(lambda s: fnp.any(s[4]), propose, init)
    if log_space:
        log_u = -(-fns.log1p(-_random_bits(boost_key, dtype, (), "unit")))
        log_boost = fnp.where(boost | (log_u == zero), zero, log_u * (one / alpha))
        log_v = _short_loop_log(fns, V, *short_loop_log)
        return (fns.log(d) + log_v) + log_boost
    u = one - _random_bits(boost_key, dtype, (), "unit")
    return (d * V) * fnp.where(boost, one, fns.pow(u, one / alpha))


def _short_loop_log(fns, x, alone=True, alone_if_batched=True):
    """``fns.log(x)`` as XLA's CPU code computes a float32 log in a loop (fusion)
    of its own (``alone``; ``alone_if_batched`` under vmap): for fewer than 16
    elements in all (under vmap: all keys' draws, as JAX's batched loop) the
    last few by the C library's ``logf`` (kernels/xla_cpu_math.py's
    ``loop_log``). Which logs are loops of their own is XLA's fusion's
    decision, read from JAX's optimised HLO."""
    if fns is _XLA_CPU and get_aval(x).dtype == np.float32:
        return prng.random_loop_log(x, alone, alone_if_batched)
    return fns.log(x)


def _positive_v(x_key, c, dtype, live):
    """JAX's inner loop: normals x from ``x_key, sub = split(x_key)`` until
    ``v = 1 + x c > 0`` (one rounding: XLA fuses it), for the ``live`` entries."""
    one = np.asarray(1, dtype)

    def draw(state):
        x_key, x, v, todo = state
        pair = _split_raw(x_key, (2,))
        x_new = _random_bits(pair[:, 1], dtype, (), "normal")
        v_new = prng.random_fma(x_new, c, fnp.broadcast_to(one, get_aval(c).shape))
        x_key = fnp.where(todo[:, None], pair[:, 0], x_key)
        x, v = fnp.where(todo, x_new, x), fnp.where(todo, v_new, v)
        return x_key, x, v, todo & (v <= 0)

    shape = get_aval(c).shape
    init = (x_key, fnp.zeros(shape, dtype), fnp.full(shape, -1, dtype), live)
    _, x, v, _ = lax.while_loop(lambda s: fnp.any(s[3]), draw, init)
    return x, v


@custom_jvp
def _implicit_gamma_grad(alpha, x):
    """Identity on the sample ``x``; its JVP in ``alpha`` is JAX's implicit
    reparameterisation gradient, ``random_gamma_grad(alpha, x)``."""
    return x


@_implicit_gamma_grad.defjvp
def _implicit_gamma_grad_jvp(primals, tangents):
    alpha, x = primals
    d_alpha, d_x = tangents
    return x, d_x + d_alpha * lax.random_gamma_grad(alpha, x)


@custom_jvp
def _implicit_log_gamma_grad(alpha, log_x):
    """Identity on the log-sample; JVP in ``alpha`` as JAX's loggamma's."""
    return log_x


@_implicit_log_gamma_grad.defjvp
def _implicit_log_gamma_grad_jvp(primals, tangents):
    alpha, log_x = primals
    d_alpha, d_log_x = tangents
    x = fnp.exp(log_x)
    x = fnp.where(x == 0, dtype_finfo(get_aval(x).dtype).tiny, x)
    return log_x, d_log_x + d_alpha * lax.random_gamma_grad(alpha, x) / x


# ----------------------------------------------------------------------------
# poisson and binomial (JAX's: counts are computed as floats, then converted)
# ----------------------------------------------------------------------------

def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) counts by JAX's algorithms and stream, in float32 as JAX:
    Knuth's product of uniforms for lam < 10, transformed rejection above, both
    from the same key. ``shape`` defaults to ``lam.shape``; lam = 0 gives 0,
    a negative or nan lam -1, as JAX's loops do."""
    key = _check_key(key, "poisson")
    dtype = canonicalize_dtype(np.int64 if dtype is None else dtype)   # int32 without x64
    if not is_integer(dtype):
        raise TypeError(f"fungrad.random.poisson: `dtype` must be an integer type, got "
                        f"{dtype}; e.g. dtype=numpy.int64.")
    lam = lax.stop_gradient(fnp.asarray(lam))
    shape = _param_shape("poisson", shape, lam)
    lam = lax.convert_element_type(fnp.broadcast_to(lam, shape), np.float32)
    use_knuth = fnp.isnan(lam) | (lam < 10)
    knuth = _knuth_poisson(key, fnp.where(use_knuth, lam, 0.0), shape, dtype)
    rejection = _rejection_poisson(key, fnp.where(use_knuth, 100000.0, lam), shape, dtype)
    result = fnp.where(use_knuth, knuth, rejection)
    return fnp.where(lam == 0, fnp.zeros_like(result), result)


def _knuth_poisson(key, lam, shape, dtype):
    """JAX's Knuth sampler (used for lam < 10): one float32 uniform per entry
    and round, from ``key, subkey = split(key)``, while any entry's running
    log-product is above -lam; the count is the rounds it stayed above, less 1."""
    log = _transcendentals(shape).log

    def body(carry):
        key, count, log_product = carry
        pair = _split_raw(key, (2,))
        count = fnp.where(log_product > -lam, count + 1, count)
        u = _random_bits(pair[1], np.dtype(np.float32), shape, "unit")
        return pair[0], count, log_product + log(u)

    init = (key, fnp.zeros(shape, dtype), fnp.zeros(shape, np.float32))
    _, count, _ = lax.while_loop(lambda c: fnp.any(c[2] > -lam), body, init)
    return count - 1


def _rejection_poisson(key, lam, shape, dtype):
    """JAX's transformed rejection (Hörmann's PTRS, used for lam >= 10) in float32:
    rounds of ``key, k0, k1 = split(key, 3)`` and a uniform from each, while any
    entry has never accepted; an entry takes the value of every round that
    accepts (as JAX's select does)."""
    log_lam = fnp.log(lam)
    b = 0.931 + 2.53 * fnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        key, k_out, accepted = carry
        keys = _split_raw(key, (3,))
        u = _random_bits(keys[1], np.dtype(np.float32), shape, "unit") - 0.5
        v = _random_bits(keys[2], np.dtype(np.float32), shape, "unit")
        u_shifted = 0.5 - fnp.abs(u)
        k = fnp.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = fnp.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return keys[0], fnp.where(accept, k, k_out), accepted | accept

    init = (key, fnp.full(shape, -1, np.float32), fnp.zeros(shape, np.bool_))
    _, k, _ = lax.while_loop(lambda c: fnp.any(~c[2]), body, init)
    return lax.convert_element_type(k, dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts (as floats, like JAX) by JAX's algorithms and stream:
    inversion when n min(p, 1-p) <= 10, BTRS otherwise (both from the same
    key); p > 1/2 samples n - Bin(n, 1-p). ``shape`` defaults to the broadcast
    shape of ``n`` and ``p``; n is floored; n < 0, nan or p outside [0, 1] give
    nan, n = inf gives inf, as JAX."""
    key = _check_key(key, "binomial")
    dtype = _float_dtype(dtype, "binomial")
    p = lax.stop_gradient(fnp.asarray(p))
    if not is_inexact(p.dtype):
        p = lax.convert_element_type(p, canonicalize_dtype(np.float64))
    n = lax.stop_gradient(lax.convert_element_type(fnp.asarray(n), p.dtype))
    shape = _param_shape("binomial", shape, n, p)
    count, prob = fnp.broadcast_to(n, shape), fnp.broadcast_to(p, shape)
    p_lt_half = prob < 0.5
    q = fnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = fnp.isnan(count) | (count < 0.0)
    count_inf = fnp.isinf(count)
    q_is_nan, q_l_0 = fnp.isnan(q), q < 0.0
    q = fnp.where(q_is_nan | q_l_0, 0.01, q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = fnp.floor(count)
    samples = fnp.where(
        use_inversion,
        _binomial_inversion(key, fnp.where(use_inversion, count, 0.0), q, shape),
        _btrs(key, fnp.where(use_inversion, 10000.0, count), fnp.where(use_inversion, 0.5, q),
              shape))
    samples = lax.convert_element_type(samples, dtype)
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = fnp.where(invalid, np.asarray(np.nan, dtype), samples)
    samples = fnp.where(count_inf & ~invalid, np.asarray(np.inf, dtype), samples)
    keep = p_lt_half | count_nan_or_neg | q_is_nan | count_inf
    return fnp.where(keep, samples, lax.convert_element_type(count, dtype) - samples)


def _binomial_inversion(key, count, prob, shape):
    """JAX's inversion by geometric waiting times (count * p <= 10): rounds of
    ``subkey, key = split(key)`` while any entry's trials still fit in count."""
    fns = _transcendentals(shape)
    log1minusprob = fns.log1p(-prob)

    def body(carry):
        key, num_geom, geom_sum = carry
        pair = _split_raw(key, (2,))
        num_geom = fnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = _random_bits(pair[0], get_aval(prob).dtype, shape, "unit")
        geom = fnp.ceil(fns.log(u) / log1minusprob)
        return pair[1], num_geom, geom_sum + geom

    zeros = fnp.zeros(shape, get_aval(prob).dtype)
    with np.errstate(divide="ignore", invalid="ignore"):   # p = 0 or 1: log(u) / 0
        _, k, _ = lax.while_loop(lambda c: fnp.any(c[2] <= count), body, (key, zeros, zeros))
    return k - 1


def _btrs(key, count, prob, shape):
    """JAX's BTRS (Hörmann's transformed rejection with squeeze) for count * p > 10;
    an entry takes the value of every round that accepts, as JAX's select does."""
    dtype = get_aval(prob).dtype
    stddev = fnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = fnp.floor((count + 1) * prob)

    def body(carry):
        key, k_out, accepted = carry
        keys = _split_raw(key, (3,))
        u = _random_bits(keys[1], dtype, shape, "unit") - 0.5
        v = _random_bits(keys[2], dtype, shape, "unit")
        us = 0.5 - fnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = fnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = fnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * fnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * fnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * fnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return keys[0], fnp.where(accept, k, k_out), accepted | accept

    init = (key, fnp.full(shape, -1, dtype), fnp.zeros(shape, np.bool_))
    with np.errstate(all="ignore"):      # entries far outside [0, count] are rejected
        _, k, _ = lax.while_loop(lambda cr: fnp.any(~cr[2]), body, init)
    return k


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.010411265261972, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
    """JAX's tail of Stirling's series for log k!: a table below 10, else the
    series' first terms (evaluated, as JAX does, at k clamped to 9)."""
    dtype = get_aval(k).dtype
    table = fnp.asarray(np.array(_STIRLING_TAIL, dtype))
    clamped = lax.clamp(np.asarray(0, dtype), k, np.asarray(9, dtype))
    kp1sq = (clamped + 1) * (clamped + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (clamped + 1)
    tail = fnp.take(table, lax.convert_element_type(fnp.floor(clamped), np.int32))
    return fnp.where(k <= 9, tail, approx)
