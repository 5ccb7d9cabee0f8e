"""Keys: seeding, ``split``, ``fold_in``, raw bits, and the key helpers
every sampler uses."""
import math
from operator import index as _as_index

import numpy as np

import fungrad.lax as lax
import fungrad.numpy as fnp
from fungrad.lax import prng
from fungrad.core import Tracer, canonicalize_dtype, get_aval
from fungrad.custom_derivatives import custom_jvp
from fungrad._config import config

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

    ``seed`` is a Python int in the int64 range (JAX converts it to int64
    first: larger ones raise OverflowError) or an integer scalar array (which
    may be traced). 32-bit seeds give a zero high word, as in JAX; so do Python
    ints when ``jax_enable_x64`` is off (JAX keeps their low 32 bits then).
    """
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


def _partitionable():
    """JAX's ``jax_threefry_partitionable``: which stream layout to reproduce."""
    return bool(config.jax_threefry_partitionable)


def split(key, num=2):
    """``num`` new keys (shape ``(num, 2)``; ``num`` may be a shape tuple)."""
    key = _check_key(key, "split")
    return _split_raw(key, _shape_tuple(num, "split", "num"))


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
    key = _check_key(key, "fold_in")
    if isinstance(data, int) and not isinstance(data, bool):
        data = np.uint32(data % 2**32)      # JAX: jnp.asarray(data, 'uint32')
    data = lax.convert_element_type(fnp.asarray(data), np.uint32)
    if get_aval(data).shape != ():
        raise ValueError(f"fungrad.random.fold_in: `data` must be a scalar, "
                         f"got shape {get_aval(data).shape}.")
    k0, k1 = _key_words(key)
    return fnp.stack(prng.threefry2x32(k0, k1, np.zeros((), np.uint32), data))


def bits(key, shape=(), dtype=None):
    """JAX's ``random.bits``: uniformly random unsigned integers of ``dtype``
    (default JAX's default unsigned type: uint64, uint32 without x64), bit for
    bit JAX's ``random_bits`` of that width."""
    key = _check_key(key, "bits")
    shape = _shape_tuple(shape, "bits", "shape")
    dtype = np.dtype(np.uint64 if dtype is None else dtype)
    if dtype.kind != "u":
        raise TypeError(f"fungrad.random.bits: `dtype` must be an unsigned "
                        f"integer type such as uint32, got {dtype}.")
    return _random_bits(key, canonicalize_dtype(dtype), shape)


def _random_bits(keys, dtype, shape, transform="bits"):
    """JAX's ``_random_bits`` (or a transform of them: see ``lax.prng``) for raw keys."""
    return prng.random_sample(keys, shape, dtype, transform, _partitionable())


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


