"""The basic samplers: continuous (uniform, normal, ...) and discrete
(bernoulli, randint, categorical, permutation, choice)."""
import math
from operator import index as _as_index

import numpy as np
from fungrad._dtype_classes import finfo as dtype_finfo, iinfo as dtype_iinfo, is_floating, is_inexact, is_integer, kind as dtype_kind

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import Tracer, canonicalize_dtype, get_aval

__all__ = ['uniform', 'normal', 'truncated_normal', 'gumbel', 'exponential', 'laplace', 'logistic', 'multivariate_normal', 'bernoulli', 'rademacher', 'randint', 'categorical', 'permutation', 'choice']
from fungrad.random._keys import *  # noqa: F403
from fungrad.random._keys import (_check_key, _shape_tuple, _is_integer_scalar, _random_bits,
                                  _transcendentals)

# ----------------------------------------------------------------------------
# continuous distributions
# ----------------------------------------------------------------------------

class _DtypeError(TypeError, ValueError):
    """A sampler's ``dtype`` of the wrong kind: JAX raises ValueError, fungrad
    raised TypeError first; both ``except`` clauses catch this."""


def _float_dtype(dtype, caller):
    # None is JAX's `float`; float32 when jax_enable_x64 is off, as JAX
    dtype = canonicalize_dtype(np.float64 if dtype is None else dtype)
    if not is_floating(dtype):       # bfloat16 and the float8 types too, as in JAX
        raise _DtypeError(f"fungrad.random.{caller}: `dtype` must be a float dtype (float16, "
                          f"bfloat16, float32, float64, ...), got {dtype}.")
    return dtype


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform samples on ``[minval, maxval)`` (bounds broadcast to ``shape``), JAX's:
    ``max(minval, unit * (maxval - minval) + minval)``, ``unit`` the top mantissa
    bits of JAX's random bits as a float on [0, 1)."""
    key = _check_key(key, "uniform")
    shape = _shape_tuple(shape, "uniform", "shape")
    dtype = _float_dtype(dtype, "uniform")
    unit = _random_bits(key, dtype, shape, "unit")
    if _is_default_bound(minval, 0.0) and _is_default_bound(maxval, 1.0):
        return unit            # max(0, unit * 1 + 0) is unit itself
    minval = lax.convert_element_type(fnp.asarray(minval), dtype)
    maxval = lax.convert_element_type(fnp.asarray(maxval), dtype)
    _check_broadcastable("uniform", shape, minval, maxval)
    low = fnp.broadcast_to(minval, shape)
    # one rounding: XLA fuses JAX's multiply-add (see lax.prng.random_fma)
    return lax.max(low, prng.random_fma(unit, fnp.broadcast_to(maxval - minval, shape), low))


def _is_default_bound(value, default):
    return type(value) in (int, float) and value == default


def _check_broadcastable(caller, shape, *params):
    for param in params:
        param_shape = tuple(get_aval(param).shape)
        try:
            result = np.broadcast_shapes(shape, param_shape)
        except ValueError:
            result = None
        if result != shape:
            raise ValueError(
                f"fungrad.random.{caller}: a parameter of shape {param_shape} does "
                f"not broadcast to the requested shape {shape}; pass shape="
                f"{np.broadcast_shapes(shape, param_shape) if result else param_shape}"
                f" or parameters that fit it.")


def _param_shape(caller, shape, *params):
    """``shape`` if given, else the broadcast shape of the parameters (as JAX)."""
    if shape is None:
        return np.broadcast_shapes(*(tuple(get_aval(p).shape) for p in params))
    shape = _shape_tuple(shape, caller, "shape")
    _check_broadcastable(caller, shape, *params)
    return shape


def normal(key, shape=(), dtype=None):
    """Standard normal samples, JAX's: sqrt(2) erf_inv(U), U = uniform(-1 + ulp, 1).

    A complex ``dtype`` gives standard complex normals, as JAX: real and
    imaginary parts independent N(0, 1/2), from the two halves of a split key."""
    key = _check_key(key, "normal")
    shape = _shape_tuple(shape, "normal", "shape")
    if dtype_kind(canonicalize_dtype(np.float64 if dtype is None else dtype)) == "c":
        real_dtype = dtype_finfo(canonicalize_dtype(dtype)).dtype
        # JAX divides by sqrt(2) as a complex number, which XLA turns into a
        # multiplication by its reciprocal (rounded once more)
        inverse_sqrt2 = np.asarray(1, real_dtype) / np.asarray(math.sqrt(2), real_dtype)
        parts = [_random_bits(k, real_dtype, shape, "normal") * inverse_sqrt2
                 for k in split(key)]
        return lax.complex(*parts)
    dtype = _float_dtype(dtype, "normal")
    return _random_bits(key, dtype, shape, "normal")


def truncated_normal(key, lower, upper, shape=None, dtype=np.float64):
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse CDF)."""
    key = _check_key(key, "truncated_normal")
    dtype = _float_dtype(dtype, "truncated_normal")
    lower = lax.convert_element_type(fnp.asarray(lower), dtype)
    upper = lax.convert_element_type(fnp.asarray(upper), dtype)
    shape = _param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.array(math.sqrt(2), dtype)
    # JAX divides by sqrt(2); XLA rewrites a division by a constant into a
    # multiplication by its reciprocal, rounded to the dtype once more (an
    # ulp off the quotient for -1.5 in float32): do the same for JAX's bits
    inverse_sqrt2 = np.asarray(1, dtype) / sqrt2
    fns = _transcendentals(shape)
    cdf_lower, cdf_upper = fns.erf(lower * inverse_sqrt2), fns.erf(upper * inverse_sqrt2)
    u = uniform(key, shape, dtype, minval=cdf_lower, maxval=cdf_upper)
    samples = sqrt2 * fns.erf_inv(u)
    # erf saturates in the far tails; clip so the bounds always hold (as JAX).
    lower = lax.stop_gradient(lower)
    upper = lax.stop_gradient(upper)
    return fnp.clip(samples, lax.nextafter(lower, fnp.full_like(lower, np.inf)),
                    lax.nextafter(upper, fnp.full_like(upper, -np.inf)))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel samples, JAX's: -log(-log U), U on [tiny, 1); ``mode='high'``
    adds low bits where U < 1/2 (two uniforms per sample), as JAX."""
    key = _check_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    shape = _shape_tuple(shape, "gumbel", "shape")
    mode = "low" if mode is None else mode
    if mode not in ("low", "high", "highest"):
        raise ValueError(f"fungrad.random.gumbel: `mode` must be None, 'low', 'high' or "
                         f"'highest', got {mode!r}.")
    info, log = dtype_finfo(dtype), _transcendentals(shape).log
    if mode == "low":
        return -log(-log(uniform(key, shape, dtype, minval=info.tiny, maxval=1.0)))
    both = uniform(key, (2, *shape), dtype)
    high, low = both[0], both[1]
    x = fnp.where(high >= 0.5, high, high + np.asarray(2.0 ** -info.nmant, dtype) * low
                  + np.asarray(info.tiny, dtype))
    return -log(-_transcendentals(shape).log1p(-x))


def exponential(key, shape=(), dtype=None):
    """Standard exponential samples: -log(1 - U)."""
    key = _check_key(key, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    shape = _shape_tuple(shape, "exponential", "shape")
    return -_transcendentals(shape).log1p(-uniform(key, shape, dtype))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples: sign(U) * log(1 - |U|), U on (-1, 1)."""
    key = _check_key(key, "laplace")
    dtype = _float_dtype(dtype, "laplace")
    shape = _shape_tuple(shape, "laplace", "shape")
    u = uniform(key, shape, dtype, minval=-1.0 + dtype_finfo(dtype).epsneg, maxval=1.0)
    return fnp.sign(u) * _transcendentals(shape).log1p(-fnp.abs(u))


def logistic(key, shape=(), dtype=np.float64):
    """Standard logistic samples: log(U / (1 - U)), U on (0, 1)."""
    key = _check_key(key, "logistic")
    dtype = _float_dtype(dtype, "logistic")
    shape = _shape_tuple(shape, "logistic", "shape")
    u = uniform(key, shape, dtype, minval=dtype_finfo(dtype).tiny, maxval=1.0)
    fns = _transcendentals(shape)
    return fns.log(u) - fns.log1p(-u)


def multivariate_normal(key, mean, cov, shape=None, dtype=np.float64, method="cholesky"):
    """Samples of N(mean, cov): ``mean + factor @ z`` with ``factor @ factor.T = cov``.

    ``mean`` is ``(..., n)`` and ``cov`` ``(..., n, n)``; ``shape`` is the batch
    shape (default: the broadcast of their batch shapes); the result has shape
    ``shape + (n,)``. ``method`` is 'cholesky' (cov must be positive definite),
    'eigh' or 'svd' (both accept positive semi-definite cov).
    """
    key = _check_key(key, "multivariate_normal")
    dtype = _float_dtype(dtype, "multivariate_normal")
    mean = lax.convert_element_type(fnp.asarray(mean), dtype)
    cov = lax.convert_element_type(fnp.asarray(cov), dtype)
    mean_shape, cov_shape = tuple(get_aval(mean).shape), tuple(get_aval(cov).shape)
    if (len(mean_shape) < 1 or len(cov_shape) < 2 or cov_shape[-1] != cov_shape[-2]
            or cov_shape[-1] != mean_shape[-1]):
        raise ValueError(
            f"fungrad.random.multivariate_normal: `mean` must have shape (..., n) and "
            f"`cov` shape (..., n, n); got mean {mean_shape} and cov {cov_shape}.")
    batch = np.broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    shape = batch if shape is None else _shape_tuple(shape, "multivariate_normal", "shape")
    if np.broadcast_shapes(shape, batch) != shape:
        raise ValueError(f"fungrad.random.multivariate_normal: batch shape {batch} of "
                         f"mean and cov does not broadcast to shape={shape}.")
    factor = _covariance_factor(cov, method)
    z = normal(key, (*shape, mean_shape[-1]), dtype)
    return mean + fnp.einsum("...ij,...j->...i", factor, z)


def _covariance_factor(cov, method):
    if method == "cholesky":
        return fnp.linalg.cholesky(cov)
    if method == "eigh":
        eigenvalues, eigenvectors = fnp.linalg.eigh(cov)
        return eigenvectors * fnp.sqrt(fnp.maximum(eigenvalues, 0.0))[..., None, :]
    if method == "svd":
        left, singular_values, _ = fnp.linalg.svd(cov)
        return left * fnp.sqrt(singular_values)[..., None, :]
    raise ValueError(f"fungrad.random.multivariate_normal: `method` must be "
                     f"'cholesky', 'eigh' or 'svd', got {method!r}.")


# ----------------------------------------------------------------------------
# discrete distributions
# ----------------------------------------------------------------------------

def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
    """Booleans that are True with probability ``p`` (shape defaults to p's): JAX's
    ``uniform(key, shape, p.dtype) < p``; ``mode='high'`` compares with two
    uniforms for probabilities below the float's resolution, as JAX.
    ``out_sharding`` is accepted for JAX compatibility (one device; flax.nnx's
    ``Dropout`` passes it)."""
    key = _check_key(key, "bernoulli")
    if mode not in ("low", "high"):
        raise ValueError(f"fungrad.random.bernoulli: `mode` must be 'low' or 'high', got {mode!r}.")
    p = fnp.asarray(p)
    if not is_floating(p.dtype):
        p = lax.convert_element_type(p, canonicalize_dtype(np.float64))
    shape = _param_shape("bernoulli", shape, p)
    if mode == "low":
        return uniform(key, shape, p.dtype) < p
    both = uniform(key, (2, *shape), p.dtype)
    return both[1] * np.asarray(2.0 ** -dtype_finfo(p.dtype).nmant, p.dtype) < p - both[0]


def rademacher(key, shape=(), dtype=np.int64):
    """Random signs, -1 or +1 with equal probability."""
    key = _check_key(key, "rademacher")
    heads = bernoulli(key, 0.5, _shape_tuple(shape, "rademacher", "shape"))
    return lax.convert_element_type(2 * lax.convert_element_type(heads, np.int64) - 1,
                                    canonicalize_dtype(dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform on ``[minval, maxval)``; ``maxval <= minval`` gives ``minval``.

    JAX's algorithm: two words of random bits per sample, reduced modulo the
    span as one double-width number (bias below span / 2**bits); dtypes
    narrower than 32 bits sample in int32 with clipped bounds, as JAX.
    """
    key = _check_key(key, "randint")
    shape = _shape_tuple(shape, "randint", "shape")
    dtype = canonicalize_dtype(np.int64 if dtype is None else dtype)  # int32 without x64
    if not is_integer(dtype):
        raise TypeError(f"fungrad.random.randint: `dtype` must be an integer type, "
                        f"got {dtype}.")
    minval, maxval = (_integer_bound(name, v) for name, v in (("minval", minval),
                                                              ("maxval", maxval)))
    _check_broadcastable("randint", shape, minval, maxval)
    info = dtype_iinfo(dtype)
    if info.bits < 32:
        minval = fnp.clip(lax.convert_element_type(minval, np.int32), int(info.min), int(info.max))
        maxval = fnp.clip(lax.convert_element_type(maxval, np.int32), int(info.min),
                          int(info.max) + 1)
        return lax.convert_element_type(_randint(key, shape, minval, maxval, np.dtype(np.int32)),
                                        dtype)
    return _randint(key, shape, minval, maxval, dtype)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn with probabilities softmax(logits) along ``axis`` (Gumbel-max,
    JAX's). ``shape`` (default: ``logits.shape`` without ``axis``) must end with
    that batch shape; leading extra dimensions draw independent samples
    (distinct ones with ``replace=False``: Gumbel top-k)."""
    key = _check_key(key, "categorical")
    logits = fnp.asarray(logits)
    if not is_floating(logits.dtype):
        logits = lax.convert_element_type(logits, canonicalize_dtype(np.float64))
    ndim = logits.ndim
    if ndim == 0:
        raise ValueError("fungrad.random.categorical: `logits` must have at least "
                         "one dimension (the categories).")
    axis = _normalize_axis(axis, ndim, "categorical")
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch_shape if shape is None else _shape_tuple(shape, "categorical", "shape")
    if np.broadcast_shapes(shape, batch_shape) != shape:
        raise ValueError(f"fungrad.random.categorical: the batch shape {batch_shape} "
                         f"of logits does not broadcast to shape={shape}.")
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace:
        return _categorical_distinct(key, logits, axis, shape, prefix, mode)
    trailing = shape[len(prefix):]
    noise_shape = (*prefix, *trailing[:axis], logits.shape[axis], *trailing[axis:])
    noise = gumbel(key, noise_shape, logits.dtype, mode)
    logits = fnp.reshape(logits, (1,) * len(prefix) + logits.shape)
    return fnp.argmax(noise + logits, axis=len(prefix) + axis)


def _normalize_axis(axis, ndim, caller):
    axis = _as_index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"fungrad.random.{caller}: axis {axis} is out of bounds for "
                         f"an array of {ndim} dimensions.")
    return axis % ndim


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``:
    JAX's shuffle, rounds of a stable sort by 32 random bits per entry
    (enough rounds that ties are as unlikely as 1 in n**3)."""
    key = _check_key(key, "permutation")
    if _is_integer_scalar(x) and not isinstance(x, Tracer):
        return _shuffle(key, fnp.arange(_as_index(x)), 0)
    x = fnp.asarray(x)
    if x.ndim == 0:
        raise TypeError("fungrad.random.permutation: `x` must be an int or an array "
                        "with at least one dimension, got a 0-d array.")
    axis = _normalize_axis(axis, x.ndim, "permutation")
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    return fnp.take(x, _shuffle(key, fnp.arange(x.shape[axis]), 0), axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random draws from ``arange(a)`` (int ``a``) or from ``a`` along ``axis``, JAX's:
    ``randint`` with replacement, a permutation's prefix without; with ``p``
    the inverse CDF (replacement) or Gumbel top-k (none)."""
    key = _check_key(key, "choice")
    shape = _shape_tuple(shape, "choice", "shape")
    if _is_integer_scalar(a) and not isinstance(a, Tracer):
        n, a = _as_index(a), None
    else:
        a = fnp.asarray(a)
        if a.ndim == 0:
            raise ValueError("fungrad.random.choice: `a` must be an int or an array "
                             "with at least one dimension.")
        axis = _normalize_axis(axis, a.ndim, "choice")
        n = a.shape[axis]
    size = math.prod(shape)
    if size == 0:
        return fnp.zeros(shape if a is None else a.shape[:axis] + shape + a.shape[axis + 1:],
                         canonicalize_dtype(np.int64) if a is None else a.dtype)
    if n <= 0:
        raise ValueError("fungrad.random.choice: cannot draw from an empty population.")
    if not replace and size > n:
        raise ValueError(f"fungrad.random.choice: cannot take {size} distinct draws "
                         f"from a population of {n} without replacement; use "
                         f"replace=True or a smaller shape.")
    indices = _choice_indices(key, n, shape, replace, p, mode)
    if a is not None:
        indices = fnp.take(a, indices, axis=axis)
        return fnp.reshape(indices, a.shape[:axis] + shape + a.shape[axis + 1:])
    return fnp.reshape(indices, shape)


def _choice_indices(key, n, shape, replace, p, mode):
    """Indices into ``range(n)``: of ``shape``, or flat for ``replace=False``."""
    size, index_dtype = math.prod(shape), canonicalize_dtype(np.int64)
    if p is None:
        if replace:
            return randint(key, shape, 0, n)
        return _shuffle(key, fnp.arange(n), 0)[:size]
    p = fnp.asarray(p)
    if not is_inexact(p.dtype):
        p = lax.convert_element_type(p, canonicalize_dtype(np.float64))
    if p.shape != (n,):
        raise ValueError(f"fungrad.random.choice: `p` must have shape ({n},), one "
                         f"probability per entry, got shape {p.shape}.")
    if replace:
        cumulative = fnp.cumsum(p)
        r = cumulative[-1] * (1 - uniform(key, shape, p.dtype))
        return lax.convert_element_type(fnp.searchsorted(cumulative, r), index_dtype)
    scores = gumbel(key, (n,), p.dtype, mode) + _transcendentals((n,)).log(p)
    return lax.convert_element_type(lax.top_k(scores, size)[1], index_dtype)


def _integer_bound(name, value):
    value = fnp.asarray(value)
    if is_integer(value.dtype):
        return value
    if is_floating(value.dtype) or value.dtype == np.bool_:
        return lax.convert_element_type(value, canonicalize_dtype(np.int64))   # JAX's astype(int)
    raise TypeError(f"fungrad.random.randint: `{name}` must be an integer, got dtype "
                    f"{value.dtype}.")


def _clip_to(value, dtype):
    """JAX's _convert_and_clip_integer: ``value`` clipped to ``dtype``'s range, converted."""
    lo = max(dtype_iinfo(dtype).min, dtype_iinfo(value.dtype).min)
    hi = min(dtype_iinfo(dtype).max, dtype_iinfo(value.dtype).max)
    clipped = lax.clamp(np.asarray(lo, value.dtype), value, np.asarray(hi, value.dtype))
    return lax.convert_element_type(clipped, dtype)


def _randint(key, shape, minval, maxval, dtype):
    """JAX's _randint for a dtype of 32 or 64 bits."""
    unsigned = np.dtype(f"u{dtype.itemsize}")
    top = _clip_to(fnp.asarray(np.array(dtype_iinfo(dtype).max, dtype)), maxval.dtype)
    maxval_out_of_range = fnp.broadcast_to(maxval > top, shape)
    minval = fnp.broadcast_to(_clip_to(minval, dtype), shape)
    maxval = fnp.broadcast_to(_clip_to(maxval, dtype), shape)
    higher_key, lower_key = split(key)
    higher = _random_bits(higher_key, unsigned, shape)
    lower = _random_bits(lower_key, unsigned, shape)
    one = np.ones(shape, unsigned)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)     # wraps, as XLA
    span = lax.select(maxval <= minval, one, span)
    span = lax.select(maxval_out_of_range & (maxval > minval), lax.add(span, one), span)
    # (a 2**bits + b) mod span by (a mod span) (2**bits mod span) + b mod span
    half = np.full(shape, 2 ** (8 * dtype.itemsize // 2), unsigned)
    multiplier = lax.rem(half, span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def _categorical_distinct(key, logits, axis, shape, prefix, mode):
    draws = math.prod(prefix)
    if draws > logits.shape[axis]:
        raise ValueError(f"fungrad.random.categorical: {draws} samples without replacement "
                         f"cannot exceed the {logits.shape[axis]} categories.")
    noisy = logits + gumbel(key, logits.shape, logits.dtype, mode)
    _, indices = lax.top_k(fnp.moveaxis(noisy, axis, -1), draws)
    return fnp.reshape(fnp.moveaxis(indices, -1, 0), shape)


def _shuffle(key, x, axis):
    rounds = int(np.ceil(3 * np.log(max(1, math.prod(x.shape))) / np.log(2**32 - 1)))
    for _ in range(rounds):
        key, subkey = split(key)
        sort_keys = _random_bits(subkey, np.dtype(np.uint32), tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, dimension=axis)
    return x
