"""Keys: seeding, ``split``, ``fold_in``, raw bits, and the key helpers
every sampler uses."""
import math
from typing import Callable, NamedTuple
from operator import index as _as_index

import numpy as np
from fungrad._dtype_classes import is_integer, kind as dtype_kind

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.lax.kernels import prng as _prng_kernel
from fungrad.core import Tracer, canonicalize_dtype, get_aval
from fungrad._config import config
from fungrad.random._key_array import KeyArray, THREEFRY_KEY_DTYPE, IMPLEMENTATIONS

__all__ = ['threefry_2x32', 'PRNGKey', 'key', 'key_data', 'wrap_key_data', 'split', 'fold_in', 'bits', 'clone', 'PRNGSpec', 'key_impl', 'key_dtype']


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


# ----------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------

def _is_key(x):
    if not isinstance(x, (Tracer, np.ndarray)):
        return False
    aval = get_aval(x)
    return tuple(aval.shape) == (2,) and aval.dtype == np.uint32


def _check_key(key, caller, name="key"):
    """The raw words of a single key: a typed key of shape () (``random.key``)
    or a uint32 array of shape (2,) (``random.PRNGKey``); say how to make one
    otherwise."""
    if isinstance(key, KeyArray):
        if key.shape == ():
            return key._data
        got = f"a typed key array of shape {key.shape} (a batch of keys: map over it with fungrad.vmap)"
    elif _is_key(key):
        return key
    elif isinstance(key, (Tracer, np.ndarray)):
        aval = get_aval(key)
        got = f"an array of shape {tuple(aval.shape)} and dtype {aval.dtype}"
        if tuple(aval.shape)[-1:] == (2,) and aval.dtype == np.uint32:
            got += " (a batch of keys: map over it with fungrad.vmap)"
    else:
        got = f"{type(key).__name__} {key!r}"
    raise TypeError(
        f"fungrad.random.{caller}: argument `{name}` must be a single PRNG key: a typed "
        f"key (fungrad.random.key(0)) or a raw uint32 array of shape (2,) "
        f"(fungrad.random.PRNGKey(0)); got {got}. Get fresh keys with "
        f"`fungrad.random.split(key)`.")


def PRNGKey(seed, *, impl=None):
    """A key from an integer seed (JAX's legacy key): ``[seed >> 32, seed & 0xFFFFFFFF]``.

    ``seed`` is a Python int in the int64 range (JAX converts it to int64
    first: larger ones raise OverflowError) or an integer scalar array (which
    may be traced). 32-bit seeds give a zero high word, as in JAX; so do Python
    ints when ``jax_enable_x64`` is off (JAX keeps their low 32 bits then).
    """
    _resolve_impl(impl, "PRNGKey")
    if isinstance(seed, (bool, np.bool_)) or not _is_integer_scalar(seed):
        raise TypeError(
            f"fungrad.random.PRNGKey: `seed` must be an integer scalar, got "
            f"{type(seed).__name__} {seed!r}; e.g. fungrad.random.PRNGKey(0).")
    if isinstance(seed, int):
        if not -2**63 <= seed < 2**63:
            raise OverflowError(
                f"fungrad.random.PRNGKey: seed {seed} does not fit in int64 (JAX converts "
                f"Python seeds with numpy.int64); reduce it, e.g. seed % 2**63.")
        seed %= 2**64
        if not config.jax_enable_x64:
            seed &= 0xFFFFFFFF
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
        return aval.shape == () and is_integer(aval.dtype)
    return False


def key(seed, *, impl=None):
    """A typed key (dtype ``key<fry>``, shape ``()``) from an integer seed, as
    ``jax.random.key``; its words are ``PRNGKey(seed)``'s."""
    _resolve_impl(impl, "key")
    return KeyArray(PRNGKey(seed), THREEFRY_KEY_DTYPE)


def key_data(keys):
    """The raw uint32 words of typed keys (shape ``keys.shape + (2,)``); raw
    keys are returned as they are, as JAX does."""
    if isinstance(keys, KeyArray):
        return keys._data
    if isinstance(keys, (Tracer, np.ndarray)) and get_aval(keys).dtype == np.uint32 \
            and tuple(get_aval(keys).shape)[-1:] == (2,):
        return keys
    raise TypeError(f"fungrad.random.key_data: expected typed keys (fungrad.random.key) or "
                    f"raw uint32 keys of shape (..., 2), got {type(keys).__name__}.")


def wrap_key_data(key_bits, *, impl=None):
    """Typed keys from raw uint32 words of shape ``(..., 2)`` (``key_data``'s inverse)."""
    _resolve_impl(impl, "wrap_key_data")
    if isinstance(key_bits, KeyArray):
        raise TypeError("fungrad.random.wrap_key_data: got a typed key array (dtype "
                        f"{key_bits.dtype}); it takes raw uint32 words of shape (..., 2) "
                        "(fungrad.random.PRNGKey's form, or fungrad.random.key_data(keys)).")
    words = fnp.asarray(key_bits)
    if words.dtype != np.uint32 or tuple(words.shape)[-1:] != (2,):
        raise TypeError(f"fungrad.random.wrap_key_data: expected uint32 words of shape "
                        f"(..., 2), got {words.dtype} of shape {tuple(words.shape)}; "
                        f"convert with numpy.asarray(words, numpy.uint32).")
    return KeyArray(words, THREEFRY_KEY_DTYPE)


def _partitionable():
    """JAX's ``jax_threefry_partitionable``: which stream layout to reproduce."""
    return bool(config.jax_threefry_partitionable)


def split(key, num=2):
    """``num`` new keys (shape ``(num, 2)``; ``num`` may be a shape tuple)."""
    return _like(key, _split_raw(_check_key(key, "split"), _shape_tuple(num, "split", "num")))


def _split_raw(keys, shape):
    """JAX's split of raw keys ``(..., 2)`` into ``(..., *shape, 2)``. Partitionable:
    key ``i`` is the block of counts ``(i >> 32, i & 0xFFFFFFFF)``; original: the
    first ``2 n`` words of the key's stream, in pairs."""
    batch = tuple(get_aval(keys).shape[:-1])
    if not _partitionable():
        words = prng.random_sample(keys, (2 * math.prod(shape),), np.uint32, "bits", False)
        return fnp.reshape(words, (*batch, *shape, 2))
    k0, k1 = (fnp.reshape(w, batch + (1,) * len(shape)) for w in _key_words(keys))
    counts = np.arange(math.prod(shape), dtype=np.uint32).reshape(shape)
    y0, y1 = prng.threefry2x32(k0, k1, np.zeros(shape, np.uint32), counts)
    return fnp.stack([y0, y1], axis=-1)


def _key_words(keys):
    """The two uint32 words of raw keys ``(..., 2)``, each of the batch shape."""
    return (lax.index_in_dim(keys, 0, axis=-1 % get_aval(keys).ndim, keepdims=False),
            lax.index_in_dim(keys, 1, axis=-1 % get_aval(keys).ndim, keepdims=False))


def fold_in(key, data):
    """A new key that depends on ``key`` and the integer ``data`` (e.g. a step):
    Threefry of the pair ``(0, data)`` (the same in both of JAX's layouts)."""
    typed, key = key, _check_key(key, "fold_in")
    if isinstance(data, int) and not isinstance(data, bool):
        data = np.uint32(data % 2**32)      # JAX: jnp.asarray(data, 'uint32')
    data = lax.convert_element_type(fnp.asarray(data), np.uint32)
    if get_aval(data).shape != ():
        raise ValueError(f"fungrad.random.fold_in: `data` must be a scalar, "
                         f"got shape {get_aval(data).shape}.")
    k0, k1 = _key_words(key)
    return _like(typed, fnp.stack(prng.threefry2x32(k0, k1, np.zeros((), np.uint32), data)))


def bits(key, shape=(), dtype=None):
    """JAX's ``random.bits``: uniformly random unsigned integers of ``dtype``
    (default JAX's default unsigned type: uint64, uint32 without x64), bit for
    bit JAX's ``random_bits`` of that width."""
    key = _check_key(key, "bits")
    shape = _shape_tuple(shape, "bits", "shape")
    dtype = np.dtype(np.uint64 if dtype is None else dtype)
    if dtype_kind(dtype) != "u":
        raise TypeError(f"fungrad.random.bits: `dtype` must be an unsigned "
                        f"integer type such as uint32, got {dtype}.")
    return _random_bits(key, canonicalize_dtype(dtype), shape)


def _random_bits(keys, dtype, shape, transform="bits"):
    """JAX's ``_random_bits`` (or a transform of them: see ``lax.prng``) for raw keys."""
    return prng.random_sample(keys, shape, dtype, transform, _partitionable())


class _Transcendentals(NamedTuple):
    """The log, log1p, exp, tan, pow, erf, erf_inv and rsqrt a sampler passes
    its uniforms through."""
    log: Callable
    log1p: Callable
    exp: Callable
    tan: Callable
    pow: Callable
    erf: Callable
    erf_inv: Callable
    rsqrt: Callable


# XLA's CPU functions, emulated (JAX's numbers bit for bit), or lax's (faster)
_XLA_CPU = _Transcendentals(prng.random_log, prng.random_log1p, prng.random_exp, prng.random_tan,
                            prng.random_pow, prng.random_erf, prng.random_erf_inv,
                            prng.random_rsqrt)
_LAX = _Transcendentals(lax.log, lax.log1p, lax.exp, lax.tan, lax.pow, lax.erf, lax.erf_inv,
                        lax.rsqrt)


def _transcendentals(shape):
    """The functions for a draw of ``shape`` from one key: XLA's where
    fungrad/lax/kernels/prng.py's ``exact_draw`` says so, else lax's."""
    return _XLA_CPU if _prng_kernel.exact_draw(math.prod(shape)) else _LAX


def _row_sum(x, keepdims=False):
    """The sum over x's last axis as XLA's CPU code adds it (JAX 0.10.2): a
    row of up to 32 values from left to right (NumPy's sum pairs them from 8
    values on); a longer row (XLA's tree reduction rewrite) as its sums over
    windows of 32, each from left to right, the row padded with zeros to a
    multiple of 32 half before and half after (so the first window is short),
    and so on up. XLA hands large reductions (from about 2,048-4,096 values
    in all) to another library instead, whose order is not modelled: within a
    few ulps there."""
    *batch, n = get_aval(x).shape
    while n > 32:
        windows = -(-n // 32)
        low = (32 * windows - n) // 2
        padded = lax.pad(x, np.zeros((), get_aval(x).dtype),
                         [(0, 0, 0)] * len(batch) + [(low, 32 * windows - n - low, 0)])
        x = _sequential_sum(fnp.reshape(padded, (*batch, windows, 32)))
        n = windows
    if n == 0:
        return fnp.sum(x, axis=-1, keepdims=keepdims)
    total = _sequential_sum(x)
    return total[..., None] if keepdims else total


def _sequential_sum(x):
    """The sum over x's (non-empty) last axis from left to right."""
    return fnp.cumsum(x, axis=-1)[..., -1]


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



def clone(key):
    """A copy of ``key`` for reuse (JAX: an identity outside key-reuse checking)."""
    if isinstance(key, KeyArray):
        return key
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
                     f"the implementations are: {', '.join(map(repr, IMPLEMENTATIONS))}.")


def key_impl(keys):
    """The PRNG implementation of ``keys`` (typed or raw, one key or a batch):
    ``'threefry2x32'``, as JAX names it."""
    if not isinstance(keys, KeyArray):
        key_data(keys)          # raises for what is not a key
    return "threefry2x32"


def key_dtype(impl_spec=None):
    """The dtype of typed keys of ``impl_spec`` (default Threefry-2x32): ``key<fry>``."""
    _resolve_impl(impl_spec, "key_dtype")
    return THREEFRY_KEY_DTYPE


def _like(key, raw):
    """``raw`` words as the caller's kind of key: typed for typed keys, else raw."""
    return KeyArray(raw, key.dtype) if isinstance(key, KeyArray) else raw
