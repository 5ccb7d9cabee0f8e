"""``fungrad.random``: stateless, counter-based pseudo-random numbers (``jax.random``).

A *key* is a ``uint32`` array of shape ``(2,)``: JAX's legacy ``PRNGKey``
representation. ``key(seed)`` returns that same representation (JAX's new-style
typed keys are not modelled). Keys are plain arrays, so they pass through
``jit``, ``vmap`` (a batch of keys is a ``(n, 2)`` array) and pytrees unchanged.

Every sampler is a pure function of its key: the same key gives the same
numbers, and a key must be ``split`` (or ``fold_in``-ed) to get fresh ones.
Bits come from the Threefry-2x32 block cipher (20 rounds, Salmon et al. 2011):
the primitives of ``fungrad.lax.prng`` run it on whole uint32 arrays, chunk by
chunk, and turn its words into bits, uniform or normal floats in the same pass
(``benchmarks/`` compares ``normal`` with NumPy's ``standard_normal``); they
have batching rules and NumPy lowerings, so every function here is jittable
and vmappable. ``PRNGKey``, ``split``, ``fold_in`` and ``bits`` follow JAX's
legacy (non-"partitionable") Threefry scheme and reproduce its bits; the float
samplers use their own bits-to-float conversion (53 random bits per float64),
so ``uniform`` and friends do not reproduce JAX's exact streams.
"""
import math
from operator import index as _as_index

import numpy as np

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import Tracer, canonicalize_dtype, get_aval
from fungrad.custom_derivatives import custom_jvp

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
    "threefry_2x32", "uniform", "normal", "bernoulli", "categorical", "randint",
    "permutation", "choice", "truncated_normal", "gumbel", "multivariate_normal",
    "exponential", "laplace", "logistic", "rademacher",
    "gamma", "loggamma", "beta", "dirichlet", "poisson", "binomial",
]

# ----------------------------------------------------------------------------
# Threefry-2x32
# ----------------------------------------------------------------------------

def threefry_2x32(key, count):
    """Threefry-2x32 of the uint32 array ``count`` under ``key``: same shape.

    As JAX: the flattened counts (padded with one zero to even length) are cut
    into two halves that form the word pairs; the outputs are concatenated.
    """
    key = _check_key(key, "threefry_2x32")
    count = lax.convert_element_type(count, np.uint32)
    shape = tuple(get_aval(count).shape)
    size = math.prod(shape)
    flat = fnp.ravel(count)
    if size % 2:
        flat = lax.concatenate([flat, np.zeros(1, np.uint32)], 0)
    half = flat.shape[0] // 2
    k0, k1 = _key_words(key)
    y0, y1 = prng.threefry2x32(k0, k1, flat[:half], flat[half:])
    out = lax.concatenate([y0, y1], 0)
    return fnp.reshape(out[:size], shape)


def _key_words(key):
    return (lax.index_in_dim(key, 0, keepdims=False),
            lax.index_in_dim(key, 1, keepdims=False))


# ----------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------

def _is_key(x):
    if not isinstance(x, (Tracer, np.ndarray)):
        return False
    aval = get_aval(x)
    return tuple(aval.shape) == (2,) and aval.dtype == np.uint32


def _check_key(key, caller, name="key"):
    """Keys are uint32 arrays of shape (2,); say how to make one otherwise."""
    if _is_key(key):
        return key
    if isinstance(key, (Tracer, np.ndarray)):
        aval = get_aval(key)
        got = f"an array of shape {tuple(aval.shape)} and dtype {aval.dtype}"
        if tuple(aval.shape)[-1:] == (2,) and aval.dtype == np.uint32:
            got += " (a batch of keys: map over it with fungrad.vmap)"
    else:
        got = f"{type(key).__name__} {key!r}"
    raise TypeError(
        f"fungrad.random.{caller}: argument `{name}` must be a PRNG key, a uint32 "
        f"array of shape (2,); got {got}. Make one with "
        f"`fungrad.random.PRNGKey(0)` and get fresh keys with "
        f"`fungrad.random.split(key)`.")


def PRNGKey(seed):
    """A key from an integer seed (JAX's legacy key): ``[seed >> 32, seed & 0xFFFFFFFF]``.

    ``seed`` is a Python int in the int64 range or an integer scalar array
    (which may be traced). 32-bit seeds give a zero high word, as in JAX.
    """
    if isinstance(seed, (bool, np.bool_)) or not _is_integer_scalar(seed):
        raise TypeError(
            f"fungrad.random.PRNGKey: `seed` must be an integer scalar, got "
            f"{type(seed).__name__} {seed!r}; e.g. fungrad.random.PRNGKey(0).")
    if isinstance(seed, int):
        if not -2**63 <= seed < 2**64:
            raise OverflowError(
                f"fungrad.random.PRNGKey: seed {seed} does not fit in 64 bits.")
        seed %= 2**64
        return fnp.asarray(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))
    seed = fnp.asarray(seed)
    if seed.dtype.itemsize <= 4:
        high = np.zeros((), np.uint32)
        low = lax.convert_element_type(seed, np.uint32)
    else:
        wide = lax.convert_element_type(seed, np.uint64)
        high = lax.convert_element_type(lax.shift_right_logical(wide, np.uint64(32)), np.uint32)
        low = lax.convert_element_type(lax.bitwise_and(wide, np.uint64(0xFFFFFFFF)), np.uint32)
    return fnp.stack([high, low])


def _is_integer_scalar(x):
    if isinstance(x, int):
        return True
    if isinstance(x, (Tracer, np.ndarray, np.generic)):
        aval = get_aval(x)
        return aval.shape == () and np.issubdtype(aval.dtype, np.integer)
    return False


def key(seed):
    """Same as ``PRNGKey``: fungrad has only the raw uint32 key representation."""
    return PRNGKey(seed)


def key_data(keys):
    """The raw uint32 words of a key (the key itself here)."""
    return keys


def wrap_key_data(key_bits):
    """A key from its raw uint32 words (checked, then returned as is)."""
    return _check_key(fnp.asarray(key_bits), "wrap_key_data", "key_bits")


def split(key, num=2):
    """``num`` new keys (shape ``(num, 2)``; ``num`` may be a shape tuple)."""
    key = _check_key(key, "split")
    shape = _shape_tuple(num, "split", "num")
    words = prng.random_sample(key, (2 * math.prod(shape),), np.uint32, "bits")
    return fnp.reshape(words, (*shape, 2))


def fold_in(key, data):
    """A new key that depends on ``key`` and the integer ``data`` (e.g. a step)."""
    key = _check_key(key, "fold_in")
    data = lax.convert_element_type(fnp.asarray(data), np.uint32)
    if get_aval(data).shape != ():
        raise ValueError(f"fungrad.random.fold_in: `data` must be a scalar, "
                         f"got shape {get_aval(data).shape}.")
    k0, k1 = _key_words(key)
    return fnp.stack(prng.threefry2x32(k0, k1, np.zeros((), np.uint32), data))


def bits(key, shape=(), dtype=np.uint32):
    """Uniformly random unsigned integers: uint8/16/32 use one word each, uint64 two.

    uint32 and uint64 match JAX's legacy ``random_bits`` bit for bit.
    """
    key = _check_key(key, "bits")
    shape = _shape_tuple(shape, "bits", "shape")
    dtype = np.dtype(dtype)
    if dtype.kind != "u":
        raise TypeError(f"fungrad.random.bits: `dtype` must be an unsigned "
                        f"integer type such as uint32, got {dtype}.")
    return prng.random_sample(key, shape, dtype, "bits")


def _shape_tuple(shape, caller, name):
    if shape is None:
        return ()
    try:
        if isinstance(shape, (tuple, list)):
            return tuple(_as_index(n) for n in shape)
        return (_as_index(shape),)
    except TypeError:
        raise TypeError(f"fungrad.random.{caller}: `{name}` must be an int or a "
                        f"tuple of ints (static, not traced), got {shape!r}.") from None


# ----------------------------------------------------------------------------
# continuous distributions
# ----------------------------------------------------------------------------

class _DtypeError(TypeError, ValueError):
    """A sampler's ``dtype`` of the wrong kind: JAX raises ValueError, fungrad
    raised TypeError first; both ``except`` clauses catch this."""


def _float_dtype(dtype, caller):
    dtype = canonicalize_dtype(dtype)    # float32 when jax_enable_x64 is off, as JAX
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)):
        raise _DtypeError(f"fungrad.random.{caller}: `dtype` must be float16, float32 "
                        f"or float64, got {dtype}.")
    return dtype


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform samples on ``[minval, maxval)`` (bounds broadcast to ``shape``)."""
    key = _check_key(key, "uniform")
    shape = _shape_tuple(shape, "uniform", "shape")
    dtype = _float_dtype(dtype, "uniform")
    if _is_default_bound(minval, 0.0) and _is_default_bound(maxval, 1.0):
        # what the formula below gives for [0, 1), exactly, without three more
        # passes over the samples
        return prng.random_sample(key, shape, dtype, "unit")
    minval = lax.convert_element_type(fnp.asarray(minval), dtype)
    maxval = lax.convert_element_type(fnp.asarray(maxval), dtype)
    _check_broadcastable("uniform", shape, minval, maxval)
    unit = prng.random_sample(key, shape, dtype, "unit")
    # Rounding in minval + width * unit can land on maxval or below minval; keep
    # the result inside the interval (as JAX does).
    samples = minval + (maxval - minval) * unit
    below_max = lax.nextafter(maxval, fnp.full_like(maxval, -np.inf))
    return fnp.minimum(fnp.maximum(samples, minval), fnp.maximum(below_max, minval))


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


def normal(key, shape=(), dtype=np.float64):
    """Standard normal samples, by the inverse CDF: sqrt(2) * erf_inv(U(-1, 1)).

    U is uniform on the open interval (-1, 1), so erf_inv stays finite.
    A complex ``dtype`` gives standard complex normals, as JAX: real and
    imaginary parts independent N(0, 1/2), from the two halves of a split key."""
    key = _check_key(key, "normal")
    shape = _shape_tuple(shape, "normal", "shape")
    if canonicalize_dtype(dtype).kind == "c":
        real_dtype = np.finfo(canonicalize_dtype(dtype)).dtype
        real_key, imag_key = split(key)
        parts = [prng.random_sample(k, shape, real_dtype, "normal") for k in (real_key, imag_key)]
        return lax.complex(*parts) * np.asarray(1 / math.sqrt(2), real_dtype)
    dtype = _float_dtype(dtype, "normal")
    return prng.random_sample(key, shape, dtype, "normal")


def truncated_normal(key, lower, upper, shape=None, dtype=np.float64):
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse CDF)."""
    key = _check_key(key, "truncated_normal")
    dtype = _float_dtype(dtype, "truncated_normal")
    lower = lax.convert_element_type(fnp.asarray(lower), dtype)
    upper = lax.convert_element_type(fnp.asarray(upper), dtype)
    shape = _param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.array(math.sqrt(2), dtype)
    cdf_lower, cdf_upper = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
    u = uniform(key, shape, dtype, minval=cdf_lower, maxval=cdf_upper)
    samples = sqrt2 * lax.erf_inv(u)
    # erf saturates in the far tails; clip so the bounds always hold (as JAX).
    lower = lax.stop_gradient(lower)
    upper = lax.stop_gradient(upper)
    return fnp.clip(samples, lax.nextafter(lower, fnp.full_like(lower, np.inf)),
                    lax.nextafter(upper, fnp.full_like(upper, -np.inf)))


def gumbel(key, shape=(), dtype=np.float64):
    """Standard Gumbel samples: -log(-log U), U on [tiny, 1)."""
    key = _check_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    u = uniform(key, shape, dtype, minval=np.finfo(dtype).tiny, maxval=1.0)
    return -fnp.log(-fnp.log(u))


def exponential(key, shape=(), dtype=np.float64):
    """Standard exponential samples: -log(1 - U)."""
    key = _check_key(key, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    return -fnp.log1p(-uniform(key, shape, dtype))


def laplace(key, shape=(), dtype=np.float64):
    """Standard Laplace samples: sign(U) * log(1 - |U|), U on (-1, 1)."""
    key = _check_key(key, "laplace")
    dtype = _float_dtype(dtype, "laplace")
    u = prng.random_sample(key, _shape_tuple(shape, "laplace", "shape"), dtype, "signed")
    return fnp.sign(u) * fnp.log1p(-fnp.abs(u))


def logistic(key, shape=(), dtype=np.float64):
    """Standard logistic samples: log(U / (1 - U)), U on (0, 1)."""
    key = _check_key(key, "logistic")
    dtype = _float_dtype(dtype, "logistic")
    u = uniform(key, shape, dtype, minval=np.finfo(dtype).tiny, maxval=1.0)
    return fnp.log(u) - fnp.log1p(-u)


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

def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p`` (shape defaults to p's)."""
    key = _check_key(key, "bernoulli")
    p = fnp.asarray(p)
    if not np.issubdtype(p.dtype, np.floating):
        p = lax.convert_element_type(p, np.float64)
    shape = _param_shape("bernoulli", shape, p)
    return uniform(key, shape, p.dtype) < p


def rademacher(key, shape=(), dtype=np.int64):
    """Random signs, -1 or +1 with equal probability."""
    key = _check_key(key, "rademacher")
    heads = bernoulli(key, 0.5, _shape_tuple(shape, "rademacher", "shape"))
    return lax.convert_element_type(2 * lax.convert_element_type(heads, np.int64) - 1,
                                    canonicalize_dtype(dtype))


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Integers uniform on ``[minval, maxval)``; ``maxval <= minval`` gives ``minval``.

    Each sample is a random 64-bit word reduced modulo the span (bias below
    span / 2**64, far below anything measurable).
    """
    key = _check_key(key, "randint")
    shape = _shape_tuple(shape, "randint", "shape")
    dtype = canonicalize_dtype(dtype)     # int32 when jax_enable_x64 is off
    if dtype.kind not in "iu":
        raise TypeError(f"fungrad.random.randint: `dtype` must be an integer type, "
                        f"got {dtype}.")
    minval, maxval = _integer_bounds(minval, maxval, dtype)
    _check_broadcastable("randint", shape, minval, maxval)
    # Unsigned 64-bit arithmetic wraps, so the span of any pair is exact.
    low = lax.convert_element_type(minval, np.uint64)
    span = lax.convert_element_type(maxval, np.uint64) - low
    span = fnp.where(maxval <= minval, np.uint64(1), span)
    offset = lax.rem(bits(key, shape, np.uint64), fnp.broadcast_to(span, shape))
    return lax.convert_element_type(lax.convert_element_type(low + offset, np.int64), dtype)


def _integer_bounds(minval, maxval, dtype):
    """Bounds as int64 arrays, clipped to the range of ``dtype`` (maxval exclusive)."""
    info = np.iinfo(dtype)
    bounds = []
    for name, value in (("minval", minval), ("maxval", maxval)):
        if isinstance(value, int):
            value = min(max(value, info.min, -2**63), info.max + 1, 2**63 - 1)
        value = fnp.asarray(value)
        if not np.issubdtype(value.dtype, np.integer):
            raise TypeError(f"fungrad.random.randint: `{name}` must be an integer, "
                            f"got dtype {value.dtype}.")
        bounds.append(lax.convert_element_type(value, np.int64))
    return bounds


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities softmax(logits) along ``axis`` (Gumbel-max).

    ``shape`` (default: ``logits.shape`` without ``axis``) must end with that
    batch shape; leading extra dimensions draw independent samples.
    """
    key = _check_key(key, "categorical")
    logits = fnp.asarray(logits)
    if not np.issubdtype(logits.dtype, np.floating):
        logits = lax.convert_element_type(logits, np.float64)
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
    trailing = shape[len(prefix):]
    noise_shape = (*prefix, *trailing[:axis], logits.shape[axis], *trailing[axis:])
    noise = gumbel(key, noise_shape, logits.dtype)
    logits = fnp.reshape(logits, (1,) * len(prefix) + logits.shape)
    return fnp.argmax(noise + logits, axis=len(prefix) + axis)


def _normalize_axis(axis, ndim, caller):
    axis = _as_index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"fungrad.random.{caller}: axis {axis} is out of bounds for "
                         f"an array of {ndim} dimensions.")
    return axis % ndim


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``.

    Implemented as an argsort of 53-bit random keys, so ties (which would bias
    a stable sort) are vanishingly rare. ``independent=True`` permutes every
    1-d slice along ``axis`` separately.
    """
    key = _check_key(key, "permutation")
    if _is_integer_scalar(x) and not isinstance(x, Tracer):
        return _random_order(key, _as_index(x))
    x = fnp.asarray(x)
    if x.ndim == 0:
        raise TypeError("fungrad.random.permutation: `x` must be an int or an array "
                        "with at least one dimension, got a 0-d array.")
    axis = _normalize_axis(axis, x.ndim, "permutation")
    if independent:
        order = fnp.argsort(uniform(key, x.shape), axis=axis)
        return fnp.take_along_axis(x, order, axis=axis)
    return fnp.take(x, _random_order(key, x.shape[axis]), axis=axis)


def _random_order(key, n):
    return fnp.argsort(uniform(key, (n,)))


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Random draws from ``arange(a)`` (int ``a``) or from ``a`` along ``axis``.

    With ``p``, entry i is drawn with probability ``p[i] / sum(p)``. Without
    replacement the draws are distinct: a permutation prefix, or with ``p`` the
    top entries of ``log p + Gumbel noise`` (sampling without replacement).
    """
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
    if n <= 0 and size > 0:
        raise ValueError("fungrad.random.choice: cannot draw from an empty population.")
    if not replace and size > n:
        raise ValueError(f"fungrad.random.choice: cannot take {size} distinct draws "
                         f"from a population of {n} without replacement; use "
                         f"replace=True or a smaller shape.")
    indices = fnp.reshape(_choice_indices(key, n, size, replace, p), shape)
    return indices if a is None else fnp.take(a, indices, axis=axis)


def _choice_indices(key, n, size, replace, p):
    """``size`` indices into ``range(n)``, as a flat array."""
    if p is None:
        if replace:
            return randint(key, (size,), 0, n)
        return _random_order(key, n)[:size]
    p = fnp.asarray(p)
    if not np.issubdtype(p.dtype, np.floating):
        p = lax.convert_element_type(p, np.float64)
    if p.shape != (n,):
        raise ValueError(f"fungrad.random.choice: `p` must have shape ({n},), one "
                         f"probability per entry, got shape {p.shape}.")
    if replace:
        # Inverse CDF: the first cumulative weight >= r, r on (0, total].
        cumulative = fnp.cumsum(p)
        r = cumulative[-1] * (1 - uniform(key, (size,), p.dtype))
        return fnp.searchsorted(cumulative, r)
    # log 0 = -inf ranks zero-probability entries last (without a log(0) warning)
    positive = p > 0
    log_p = fnp.where(positive, fnp.log(fnp.where(positive, p, 1.0)), -np.inf)
    scores = gumbel(key, (n,), p.dtype) + log_p
    return fnp.argsort(-scores)[:size]


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


# ----------------------------------------------------------------------------
# distributions built on the ones above (JAX's constructions, so that samples
# are differentiable in their parameters where JAX's are: t, chisquare and f
# through gamma's implicit reparameterisation, the others by their formulas)
# ----------------------------------------------------------------------------

def _float_params(caller, dtype, *params):
    dtype = _float_dtype(dtype, caller)
    return dtype, [_float_param(p, dtype) for p in params]


def cauchy(key, shape=(), dtype=np.float64):
    """Standard Cauchy samples: tan(pi (U - 1/2)), U on (0, 1)."""
    key = _check_key(key, "cauchy")
    dtype = _float_dtype(dtype, "cauchy")
    u = uniform(key, shape, dtype, minval=np.finfo(dtype).eps, maxval=1.0)
    return fnp.tan(np.pi * (u - 0.5))


def chisquare(key, df, shape=None, dtype=np.float64):
    """Chi-square(df) samples: 2 Gamma(df / 2) (``shape`` defaults to ``df.shape``)."""
    key = _check_key(key, "chisquare")
    dtype, (df,) = _float_params("chisquare", dtype, df)
    shape = _param_shape("chisquare", shape, df)
    return 2.0 * fnp.exp(_log_gamma_sample(key, df / 2.0, shape, dtype))


def f(key, dfnum, dfden, shape=None, dtype=np.float64):
    """F(dfnum, dfden) samples: (X1 / dfnum) / (X2 / dfden), X ~ chi-square."""
    key = _check_key(key, "f")
    dtype, (dfnum, dfden) = _float_params("f", dtype, dfnum, dfden)
    shape = _param_shape("f", shape, dfnum, dfden)
    den_key, num_key = split(key)
    numerator = chisquare(num_key, dfnum, shape, dtype) / dfnum
    return numerator / (chisquare(den_key, dfden, shape, dtype) / dfden)


def t(key, df, shape=None, dtype=np.float64):
    """Student's t(df) samples: Z sqrt((df/2) / G), Z normal, G ~ Gamma(df / 2)."""
    key = _check_key(key, "t")
    dtype, (df,) = _float_params("t", dtype, df)
    shape = _param_shape("t", shape, df)
    normal_key, gamma_key = split(key)
    z = normal(normal_key, shape, dtype)
    half_df = df / 2.0
    return z * fnp.sqrt(half_df / fnp.exp(_log_gamma_sample(gamma_key, half_df, shape, dtype)))


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
    g = fnp.exp(_log_gamma_sample(gamma_key, 1.0 / p, shape, dtype))
    return rademacher(sign_key, shape, dtype) * g ** (1.0 / p)


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
    return g / ((fnp.sum(fnp.abs(g) ** p, axis=-1) + e) ** (1.0 / p))[..., None]


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
    if dtype.kind not in "iu":
        raise _DtypeError(f"fungrad.random.geometric: `dtype` must be an integer type, "
                          f"got {dtype}.")
    p = fnp.asarray(p)
    p = lax.stop_gradient(p if np.issubdtype(p.dtype, np.floating)
                          else lax.convert_element_type(p, np.float64))
    shape = _param_shape("geometric", shape, p)
    u = uniform(key, shape, p.dtype, minval=np.finfo(p.dtype).tiny)
    return lax.convert_element_type(fnp.floor(fnp.log(u) / fnp.log1p(-p)) + 1, dtype)


def lognormal(key, sigma=1.0, shape=None, dtype=np.float64):
    """Log-normal samples exp(sigma Z), Z standard normal (``shape`` defaults
    to ``sigma.shape``)."""
    key = _check_key(key, "lognormal")
    dtype, (sigma,) = _float_params("lognormal", dtype, sigma)
    shape = _param_shape("lognormal", shape, sigma)
    return fnp.exp(normal(key, shape, dtype) * sigma)


def maxwell(key, shape=(), dtype=np.float64):
    """One-sided Maxwell samples: the length of a standard normal 3-vector."""
    key = _check_key(key, "maxwell")
    dtype = _float_dtype(dtype, "maxwell")
    shape = _shape_tuple(shape, "maxwell", "shape")
    return fnp.linalg.norm(normal(key, (*shape, 3), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=np.float64):
    """Double-sided Maxwell samples ``loc + scale * s * M`` (s a random sign, M
    Maxwell), of shape ``shape + broadcast(loc, scale).shape``."""
    key = _check_key(key, "double_sided_maxwell")
    dtype, (loc, scale) = _float_params("double_sided_maxwell", dtype, loc, scale)
    params = tuple(np.broadcast_shapes(tuple(get_aval(loc).shape), tuple(get_aval(scale).shape)))
    shape = _shape_tuple(shape, "double_sided_maxwell", "shape") + params
    maxwell_key, sign_key = split(key)
    return (rademacher(sign_key, shape, dtype) * maxwell(maxwell_key, shape, dtype) * scale
            + loc)


def pareto(key, b, shape=None, dtype=np.float64):
    """Pareto(b) samples on [1, inf): exp(E / b), E standard exponential."""
    key = _check_key(key, "pareto")
    dtype, (b,) = _float_params("pareto", dtype, b)
    shape = _param_shape("pareto", shape, b)
    return fnp.exp(exponential(key, shape, dtype) / b)


def rayleigh(key, scale, shape=None, dtype=np.float64):
    """Rayleigh(scale) samples: scale sqrt(-2 log U)."""
    key = _check_key(key, "rayleigh")
    dtype, (scale,) = _float_params("rayleigh", dtype, scale)
    shape = _param_shape("rayleigh", shape, scale)
    u = uniform(key, shape, dtype, minval=np.finfo(dtype).tiny)
    return scale * fnp.sqrt(-2.0 * fnp.log(u))


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
    y = normal(normal_key, shape, dtype) ** 2
    x = mean + mean * mean * y / 2 - mean / 2 * fnp.sqrt(4 * mean * y + (mean * y) ** 2)
    z = uniform(uniform_key, shape, dtype)
    return fnp.where(z <= mean / (mean + x), x, mean * mean / x)


def weibull_min(key, scale, concentration, shape=(), dtype=np.float64):
    """Weibull samples scale (-log(1 - U))**(1/concentration)."""
    key = _check_key(key, "weibull_min")
    dtype, (scale, concentration) = _float_params("weibull_min", dtype, scale, concentration)
    shape = _broadcast_with("weibull_min", shape, scale, concentration)
    u = uniform(key, shape, dtype)
    return scale * (-fnp.log1p(-u)) ** (1.0 / concentration)


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


def multinomial(key, n, p, *, shape=None, dtype=np.float64, unroll=1):
    """Multinomial(n, p) counts (as floats, like JAX), outcomes along the last
    axis: binomial draws for each outcome in turn, conditioned on the trials the
    previous outcomes left (a ``lax.scan`` over the outcomes).

    ``shape`` is the batch shape (default ``p.shape[:-1]``); the result has shape
    ``shape + (p.shape[-1],)``. ``unroll`` is accepted (scan's ``unroll``)."""
    key = _check_key(key, "multinomial")
    dtype = _float_dtype(dtype, "multinomial")
    p = lax.stop_gradient(_float_param(p, np.float64))
    n = lax.stop_gradient(_float_param(n, np.float64))
    if p.ndim < 1:
        raise ValueError("fungrad.random.multinomial: `p` must have at least one dimension "
                         "(the outcomes), got a scalar; pass e.g. [0.2, 0.8].")
    batch = tuple(np.broadcast_shapes(tuple(p.shape[:-1]), tuple(n.shape)))
    shape = batch if shape is None else _shape_tuple(shape, "multinomial", "shape")
    _check_broadcastable("multinomial", shape, fnp.zeros(batch))
    k = p.shape[-1]
    p_first = fnp.moveaxis(fnp.broadcast_to(p, (*shape, k)), -1, 0)
    p_left = fnp.cumsum(p_first[::-1], axis=0)[::-1]      # mass of this outcome and later ones

    def draw(trials_left, inputs):
        outcome_key, p_i, mass_left = inputs
        ratio = fnp.clip(fnp.where(mass_left > 0, p_i / fnp.where(mass_left > 0, mass_left, 1.0),
                                   0.0), 0.0, 1.0)
        count = binomial(outcome_key, trials_left, ratio, shape, np.float64)
        return trials_left - count, count

    _, counts = lax.scan(draw, fnp.broadcast_to(n, shape), (split(key, k), p_first, p_left),
                         unroll=unroll)
    return lax.convert_element_type(fnp.moveaxis(counts, 0, -1), dtype)


def clone(key):
    """A copy of ``key`` for reuse (JAX: an identity outside key-reuse checking)."""
    return _check_key(key, "clone")


class PRNGSpec:
    """What ``key_impl`` returns: the name of a PRNG implementation (hashable,
    equal to another spec of the same name; ``str`` gives the name)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"PRNGSpec({self.name!r})"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, PRNGSpec) and other.name == self.name

    def __hash__(self):
        return hash((PRNGSpec, self.name))


_THREEFRY = PRNGSpec("threefry2x32")


def _resolve_impl(impl_spec, caller):
    if impl_spec is None or impl_spec == _THREEFRY or impl_spec == "threefry2x32":
        return _THREEFRY
    raise ValueError(f"fungrad.random.{caller}: unknown PRNG implementation {impl_spec!r}; "
                     f"fungrad has only 'threefry2x32'.")


def key_impl(keys):
    """The PRNG implementation of ``keys`` (a key or a batch of keys): always
    ``PRNGSpec('threefry2x32')`` here."""
    aval = get_aval(fnp.asarray(keys)) if not isinstance(keys, Tracer) else get_aval(keys)
    if tuple(aval.shape)[-1:] != (2,) or aval.dtype != np.uint32:
        _check_key(keys, "key_impl", "keys")
    return _THREEFRY


def key_dtype(impl_spec=None):
    """The dtype of keys of ``impl_spec`` (default Threefry-2x32): fungrad's keys
    are raw ``uint32[2]`` arrays (JAX's legacy keys), so this is uint32, not a
    typed ``key<fry>``."""
    _resolve_impl(impl_spec, "key_dtype")
    return np.dtype(np.uint32)


__all__ += ["cauchy", "chisquare", "f", "t", "generalized_normal", "ball", "geometric",
            "lognormal", "maxwell", "double_sided_maxwell", "pareto", "rayleigh",
            "triangular", "wald", "weibull_min", "orthogonal", "multinomial", "clone",
            "key_impl", "key_dtype", "PRNGSpec"]
