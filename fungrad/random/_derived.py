"""Distributions built on the basic samplers and the gamma family."""
import numpy as np
from fungrad._dtype_classes import finfo as dtype_finfo, is_floating, is_integer

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import Tracer, canonicalize_dtype, get_aval

__all__ = ['cauchy', 'chisquare', 'f', 't', 'generalized_normal', 'ball', 'geometric', 'lognormal', 'maxwell', 'double_sided_maxwell', 'pareto', 'rayleigh', 'triangular', 'wald', 'weibull_min', 'orthogonal', 'multinomial']
from fungrad.random._keys import *  # noqa: F403
from fungrad.random._keys import (_check_key, _shape_tuple, _is_integer_scalar, _transcendentals,
                                  _row_sum)
from fungrad.random._samplers import *  # noqa: F403
from fungrad.random._samplers import _float_dtype, _param_shape, _DtypeError
from fungrad.random._gamma import *  # noqa: F403
from fungrad.random._gamma import _float_param, _gamma_sample

# ----------------------------------------------------------------------------
# distributions built on the ones above (JAX's constructions, so that samples
# are differentiable in their parameters where JAX's are: t, chisquare and f
# through gamma's implicit reparameterisation, the others by their formulas)
# ----------------------------------------------------------------------------

def _float_params(caller, dtype, *params):
    dtype = _float_dtype(dtype, caller)
    return dtype, [_float_param(p, dtype) for p in params]


def _divide_as_xla(x, divisor):
    """``x / divisor`` as JAX's samplers compute it: XLA turns a division by a
    constant (a concrete ``divisor``: not traced) into a multiplication by its
    reciprocal, rounded once more."""
    if isinstance(divisor, Tracer):
        return x / divisor
    dtype = get_aval(divisor).dtype
    return x * (np.ones((), dtype) / np.asarray(divisor, dtype))


def cauchy(key, shape=(), dtype=np.float64):
    """Standard Cauchy samples: tan(pi (U - 1/2)), U on (0, 1)."""
    key = _check_key(key, "cauchy")
    dtype = _float_dtype(dtype, "cauchy")
    shape = _shape_tuple(shape, "cauchy", "shape")
    u = uniform(key, shape, dtype, minval=dtype_finfo(dtype).eps, maxval=1.0)
    return _transcendentals(shape).tan(np.pi * (u - 0.5))


def chisquare(key, df, shape=None, dtype=np.float64):
    """Chi-square(df) samples: 2 Gamma(df / 2) (``shape`` defaults to ``df.shape``)."""
    key = _check_key(key, "chisquare")
    dtype, (df,) = _float_params("chisquare", dtype, df)
    shape = _param_shape("chisquare", shape, df)
    log_g = _gamma_sample(key, df / 2.0, shape, dtype, log_space=True)
    return _transcendentals(shape).exp(log_g) * 2.0


def f(key, dfnum, dfden, shape=None, dtype=np.float64):
    """F(dfnum, dfden) samples: (X1 / dfnum) / (X2 / dfden), X ~ chi-square."""
    key = _check_key(key, "f")
    dtype, (dfnum, dfden) = _float_params("f", dtype, dfnum, dfden)
    shape = _param_shape("f", shape, dfnum, dfden)
    den_key, num_key = split(key)
    exp = _transcendentals(shape).exp
    g_num = exp(_gamma_sample(num_key, dfnum / 2.0, shape, dtype, log_space=True))
    g_den = exp(_gamma_sample(den_key, dfden / 2.0, shape, dtype, log_space=True))
    # JAX's (2 g_num / dfnum) / (2 g_den / dfden), as XLA's simplifier rewrites
    # it: (a / b) / (c / d) is (a d) / (b c), the constant 2 joining the degrees
    return (g_num * (dfden * 2.0)) / (g_den * (dfnum * 2.0))


def t(key, df, shape=None, dtype=np.float64):
    """Student's t(df) samples: Z sqrt((df/2) / G), Z normal, G ~ Gamma(df / 2)."""
    key = _check_key(key, "t")
    dtype, (df,) = _float_params("t", dtype, df)
    shape = _param_shape("t", shape, df)
    normal_key, gamma_key = split(key)
    z = normal(normal_key, shape, dtype)
    half_df = df / 2.0
    return z * fnp.sqrt(half_df / _gamma_sample(gamma_key, half_df, shape, dtype, log_space=False))


def _broadcast_with(caller, shape, *params):
    """``shape`` broadcast with the parameters' shapes (JAX's samplers whose
    ``shape`` defaults to ``()`` and whose parameters may be arrays)."""
    shapes = [_shape_tuple(shape, caller, "shape")] + [tuple(get_aval(p).shape) for p in params]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"fungrad.random.{caller}: shape={shapes[0]} and the parameter "
                         f"shapes {shapes[1:]} do not broadcast together.") from None


def generalized_normal(key, p, shape=(), dtype=np.float64):
    """Samples with density proportional to exp(-|x|**p): a random sign times
    Gamma(1/p)**(1/p)."""
    key = _check_key(key, "generalized_normal")
    dtype, (p,) = _float_params("generalized_normal", dtype, p)
    shape = _broadcast_with("generalized_normal", shape, p)
    gamma_key, sign_key = split(key)
    g = _gamma_sample(gamma_key, 1.0 / p, shape, dtype, log_space=False)
    return rademacher(sign_key, shape, dtype) * _transcendentals(shape).pow(g, 1.0 / p)


def ball(key, d, p=2, shape=(), dtype=np.float64):
    """Uniform samples from the unit L^p ball in ``d`` dimensions, shape
    ``(*shape, d)``: g / (sum |g|^p + E)^(1/p), g generalized-normal, E exponential
    (Barthe, Guédon, Mendelson & Naor 2005)."""
    key = _check_key(key, "ball")
    d = _static_count("ball", "d", d)
    shape = _shape_tuple(shape, "ball", "shape")
    dtype = _float_dtype(dtype, "ball")
    g_key, e_key = split(key)
    g = generalized_normal(g_key, p, (*shape, d), dtype)
    e = exponential(e_key, shape, dtype)
    # JAX's g / (sum |g|**p + e)**(1/p), as XLA computes it: p (a traced
    # argument there) as a float exponent of pow, and the division turned into
    # a product with the power of -(1/p)
    p = _float_param(p, dtype)
    pow_ = _transcendentals((*shape, d)).pow
    total = _row_sum(pow_(fnp.abs(g), fnp.broadcast_to(p, (*shape, d)))) + e
    return g * pow_(total, fnp.broadcast_to(-(1.0 / p), shape))[..., None]


def _static_count(caller, name, value):
    if isinstance(value, Tracer) or not _is_integer_scalar(value) or int(value) < 0:
        raise TypeError(f"fungrad.random.{caller}: `{name}` must be a non-negative "
                        f"Python int (static, not traced), got {value!r}.")
    return int(value)


def geometric(key, p, shape=None, dtype=np.int64):
    """Geometric(p) counts on {1, 2, ...}: the trial of the first success,
    floor(log U / log(1 - p)) + 1."""
    key = _check_key(key, "geometric")
    dtype = canonicalize_dtype(dtype)
    if not is_integer(dtype):
        raise _DtypeError(f"fungrad.random.geometric: `dtype` must be an integer type, "
                          f"got {dtype}.")
    p = fnp.asarray(p)
    p = lax.stop_gradient(p if is_floating(p.dtype)
                          else lax.convert_element_type(p, np.float64))
    shape = _param_shape("geometric", shape, p)
    u = uniform(key, shape, p.dtype, minval=dtype_finfo(p.dtype).tiny)
    fns = _transcendentals(shape)
    return lax.convert_element_type(fnp.floor(fns.log(u) / fns.log1p(-p)) + 1, dtype)


def lognormal(key, sigma=1.0, shape=None, dtype=np.float64):
    """Log-normal samples exp(sigma Z), Z standard normal (``shape`` defaults
    to ``sigma.shape``)."""
    key = _check_key(key, "lognormal")
    dtype, (sigma,) = _float_params("lognormal", dtype, sigma)
    shape = _param_shape("lognormal", shape, sigma)
    return _transcendentals(shape).exp(normal(key, shape, dtype) * sigma)


def maxwell(key, shape=(), dtype=np.float64):
    """One-sided Maxwell samples: the length of a standard normal 3-vector."""
    key = _check_key(key, "maxwell")
    dtype = _float_dtype(dtype, "maxwell")
    shape = _shape_tuple(shape, "maxwell", "shape")
    return _maxwell(key, shape, dtype, inside_double_sided=False)


def _maxwell(key, shape, dtype, inside_double_sided):
    """JAX's norm of a normal 3-vector as XLA's CPU code sums the squares: each
    square a fused multiply-add onto the running sum, except that in float32
    double_sided_maxwell's fusion LLVM fuses the first square onto the second
    (``z0 z0 + fl(z1 z1)``, found in the dumped assembly)."""
    z = normal(key, (*shape, 3), dtype)
    squares = [z[..., i] for i in range(3)]
    if inside_double_sided and np.dtype(dtype) == np.float32:
        total = prng.random_fma(squares[0], squares[0], squares[1] * squares[1])
    else:
        total = prng.random_fma(squares[1], squares[1],
                                prng.random_fma(squares[0], squares[0], fnp.zeros(shape, dtype)))
    return fnp.sqrt(prng.random_fma(squares[2], squares[2], total))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=np.float64):
    """Double-sided Maxwell samples ``loc + scale * s * M`` (s a random sign, M
    Maxwell), of shape ``shape + broadcast(loc, scale).shape``."""
    key = _check_key(key, "double_sided_maxwell")
    dtype, (loc, scale) = _float_params("double_sided_maxwell", dtype, loc, scale)
    params = tuple(np.broadcast_shapes(tuple(get_aval(loc).shape), tuple(get_aval(scale).shape)))
    shape = _shape_tuple(shape, "double_sided_maxwell", "shape") + params
    maxwell_key, sign_key = split(key)
    signed = rademacher(sign_key, shape, dtype) * _maxwell(maxwell_key, shape, dtype, True)
    # "* scale + loc": one fused multiply-add in XLA's CPU code
    return prng.random_fma(signed, fnp.broadcast_to(scale, shape), fnp.broadcast_to(loc, shape))


def pareto(key, b, shape=None, dtype=np.float64):
    """Pareto(b) samples on [1, inf): exp(E / b), E standard exponential."""
    key = _check_key(key, "pareto")
    dtype, (b,) = _float_params("pareto", dtype, b)
    shape = _param_shape("pareto", shape, b)
    return _transcendentals(shape).exp(_divide_as_xla(exponential(key, shape, dtype), b))


def rayleigh(key, scale, shape=None, dtype=np.float64):
    """Rayleigh(scale) samples: scale sqrt(-2 log U)."""
    key = _check_key(key, "rayleigh")
    dtype, (scale,) = _float_params("rayleigh", dtype, scale)
    shape = _param_shape("rayleigh", shape, scale)
    u = uniform(key, shape, dtype, minval=dtype_finfo(dtype).tiny)
    return scale * fnp.sqrt(-2.0 * _transcendentals(shape).log(u))


def triangular(key, left, mode, right, shape=None, dtype=np.float64):
    """Triangular(left, mode, right) samples by the inverse CDF."""
    key = _check_key(key, "triangular")
    dtype, (left, mode, right) = _float_params("triangular", dtype, left, mode, right)
    shape = _param_shape("triangular", shape, left, mode, right)
    u = uniform(key, shape, dtype)
    width = right - left
    rising = left + fnp.sqrt(u * width * (mode - left))
    falling = right - fnp.sqrt((1.0 - u) * width * (right - mode))
    return fnp.where(u < (mode - left) / width, rising, falling)


def wald(key, mean, shape=None, dtype=np.float64):
    """Wald (inverse Gaussian, scale 1) samples of mean ``mean`` by Michael,
    Schucany & Haas (1976): a root of the chi-square(1) transform, chosen with a
    uniform."""
    key = _check_key(key, "wald")
    dtype, (mean,) = _float_params("wald", dtype, mean)
    shape = _param_shape("wald", shape, mean)
    normal_key, uniform_key = split(key)
    mean = fnp.broadcast_to(mean, shape)
    v = normal(normal_key, shape, dtype)
    z = uniform(uniform_key, shape, dtype)
    y = v * v
    mean_sq = mean * mean
    # JAX's sqrt(4 mean y + mean_sq y**2) and mean + mean_sq y / 2 - mean / 2 sqrt_term,
    # each with the fused multiply-add XLA's CPU code makes of it
    sqrt_term = fnp.sqrt(prng.random_fma(4 * mean, y, mean_sq * (y * y)))
    x = prng.random_fma(-(mean * 0.5), sqrt_term, mean + mean_sq * y * 0.5)
    return fnp.where(z <= mean / (mean + x), x, mean_sq / x)


def weibull_min(key, scale, concentration, shape=(), dtype=np.float64):
    """Weibull samples scale (-log(1 - U))**(1/concentration)."""
    key = _check_key(key, "weibull_min")
    dtype, (scale, concentration) = _float_params("weibull_min", dtype, scale, concentration)
    shape = _broadcast_with("weibull_min", shape, scale, concentration)
    u = uniform(key, shape, dtype)
    fns = _transcendentals(shape)
    return scale * fns.pow(-fns.log1p(-u), 1.0 / concentration)


def orthogonal(key, n, shape=(), dtype=np.float64, m=None):
    """Haar-random matrices with orthonormal columns (or rows), shape
    ``(*shape, n, m)`` (``m`` defaults to ``n``: the orthogonal group O(n)):
    the Q of a Gaussian matrix with the signs of R's diagonal divided out
    (Mezzadri 2007)."""
    key = _check_key(key, "orthogonal")
    n = _static_count("orthogonal", "n", n)
    m = n if m is None else _static_count("orthogonal", "m", m)
    shape = _shape_tuple(shape, "orthogonal", "shape")
    dtype = _float_dtype(dtype, "orthogonal")
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = fnp.linalg.qr(z)
    signs = fnp.sign(fnp.diagonal(r, 0, -2, -1))
    q = q * fnp.where(signs == 0, 1.0, signs)[..., None, :]
    return q if n >= m else fnp.swapaxes(q, -1, -2)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts (as floats, like JAX), outcomes along the last
    axis, by JAX's construction: a ``lax.scan`` over the outcomes, each a
    binomial of the trials the previous ones left, with the keys of
    ``split(key, outcomes)``. ``shape`` is the result's shape, as JAX's (default
    ``p.shape``; it must broadcast with p.shape, n broadcasts to shape[:-1])."""
    key = _check_key(key, "multinomial")
    dtype = _float_dtype(dtype, "multinomial")
    p, n = fnp.asarray(p), fnp.asarray(n)
    inexact = fnp.result_type(p, n, canonicalize_dtype(np.float64))
    p = lax.stop_gradient(lax.convert_element_type(p, inexact))
    n = lax.stop_gradient(lax.convert_element_type(n, inexact))
    if p.ndim < 1:
        raise ValueError("fungrad.random.multinomial: `p` must have at least one dimension "
                         "(the outcomes), got a scalar; pass e.g. [0.2, 0.8].")
    shape = tuple(p.shape) if shape is None else _shape_tuple(shape, "multinomial", "shape")
    try:
        n = fnp.broadcast_to(n, shape[:-1])
        p = fnp.broadcast_to(p, shape)
    except ValueError:
        raise ValueError(f"fungrad.random.multinomial: p of shape {tuple(p.shape)} and n of "
                         f"shape {tuple(n.shape)} do not broadcast to shape={shape} (the "
                         f"result's shape, outcomes last).") from None

    def draw(remainder, ratio_key):
        ratio, outcome_key = ratio_key
        count = binomial(outcome_key, remainder, fnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    p = fnp.moveaxis(p, -1, 0)
    remaining = fnp.flip(fnp.cumsum(fnp.flip(p, 0), axis=0), 0)
    ratios = p / fnp.where(remaining == 0, 1, remaining)
    with np.errstate(divide="ignore", invalid="ignore"):   # (binomial's p = 0 or 1)
        _, counts = lax.scan(draw, n, (ratios, split(key, ratios.shape[0])), unroll=unroll)
    return lax.convert_element_type(fnp.moveaxis(counts, 0, -1), dtype)


