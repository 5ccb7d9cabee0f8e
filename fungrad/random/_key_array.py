"""Typed PRNG keys: ``random.key(0)`` is a scalar of the key dtype ``key<fry>``.

NumPy cannot hold a dtype of our own, so a key array is a ``KeyArray``: a thin
wrapper around its raw words (uint32, shape ``key_shape + (2,)``), with the
key dtype ``fungrad.dtypes.KeyTy`` and the shape of the keys (the words' shape
without its last axis). It is a pytree node whose one child is the words, so
``jit``, ``vmap``, ``scan``/``fori_loop`` carries, ``cond``, ``grad``'s
closures and every other transform see uint32 arrays (their avals are the
words'), and rewrap them on the way out: a ``vmap`` over a ``(n,)`` key array
maps over its keys, and the body sees keys of shape ``()``. Indexing,
``reshape``, ``fungrad.numpy.stack`` and ``concatenate`` act on the key axes;
arithmetic and NumPy conversion raise TypeError naming ``key_data`` (typed ->
raw uint32) and ``wrap_key_data`` (raw -> typed), as JAX's key arrays refuse
them. (Axes given to transforms count in the words: ``vmap(in_axes=-1)``
over key arrays means the words' axis, so name key axes from the front.)
"""
import operator

import numpy as np

import fungrad.numpy as fnp
from fungrad import core
from fungrad.core import get_aval
from fungrad.dtypes import KeyTy
from fungrad.tree_util import register_pytree_node

__all__ = ["KeyArray", "THREEFRY_KEY_DTYPE", "IMPLEMENTATIONS"]

#: the PRNG implementations fungrad has: name -> (key dtype tag, words per key)
IMPLEMENTATIONS = {"threefry2x32": ("fry", 2)}
THREEFRY_KEY_DTYPE = KeyTy("threefry2x32", "fry")


def _conversion_hint(what):
    return (f"{what}; a typed key array (dtype key<fry>, from fungrad.random.key) holds "
            f"raw uint32 words (fungrad.random.PRNGKey's form): take them with "
            f"fungrad.random.key_data(keys), and make typed keys from words with "
            f"fungrad.random.wrap_key_data(words).")


class KeyArray:
    """An array of typed PRNG keys (see the module docstring)."""
    __slots__ = ("_data", "dtype")
    __array_priority__ = 1000           # NumPy's operators defer to ours (which refuse)
    __fungrad_extended_array__ = True   # fungrad.numpy.stack/concatenate call _stack/_concatenate

    def __init__(self, data, dtype=THREEFRY_KEY_DTYPE):
        self._data = data               # unchecked: pytree unflattening passes placeholders
        self.dtype = dtype

    @property
    def shape(self):
        return tuple(get_aval(self._data).shape[:-1])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar key array (shape ()); split it first")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if sum(i is not None and i is not Ellipsis for i in index) > self.ndim:
            raise IndexError(f"too many indices for a key array of shape {self.shape}: "
                             f"{len(index)} given (the key's words are not an axis)")
        if any(i is Ellipsis for i in index):   # the words' axis stays whole, and last
            index = index + (slice(None),)
        return KeyArray(self._data[index], self.dtype)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        words = get_aval(self._data).shape[-1]
        return KeyArray(fnp.reshape(self._data, (*shape, words)), self.dtype)

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):
        axes = (*reversed(range(self.ndim)), self.ndim)
        return KeyArray(fnp.transpose(self._data, axes), self.dtype)

    def squeeze(self, axis=None):
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        return KeyArray(fnp.squeeze(self._data, axis), self.dtype)

    def block_until_ready(self):
        return self

    def copy(self):
        return self

    def __repr__(self):
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._data!r}"

    def __array__(self, dtype=None, copy=None):
        raise TypeError(_conversion_hint(
            "a typed key array cannot become a NumPy array or a numeric operand"))

    def __eq__(self, other):
        """Keys are equal when all their words are (elementwise over the keys, as JAX)."""
        if not isinstance(other, KeyArray):
            return NotImplemented       # then identity: a key equals no number
        return fnp.all(fnp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return fnp.logical_not(self == other)

    __hash__ = None                     # as JAX arrays: unhashable

    # fungrad.numpy.stack / concatenate call these for key arrays
    @staticmethod
    def _stack(arrays, axis):
        keys = _all_keys(arrays, "stack")
        axis = operator.index(axis) % (keys[0].ndim + 1)
        return KeyArray(fnp.stack([k._data for k in keys], axis), keys[0].dtype)

    @staticmethod
    def _concatenate(arrays, axis):
        keys = _all_keys(arrays, "concatenate")
        if keys[0].ndim == 0:
            raise ValueError("concatenate: zero-dimensional key arrays cannot be "
                             "concatenated; use stack")
        axis = operator.index(axis) % keys[0].ndim
        return KeyArray(fnp.concatenate([k._data for k in keys], axis), keys[0].dtype)


def _all_keys(arrays, caller):
    arrays = list(arrays)
    if not all(isinstance(a, KeyArray) for a in arrays):
        raise TypeError(_conversion_hint(
            f"fungrad.numpy.{caller}: cannot join typed key arrays with other arrays "
            f"(got {[type(a).__name__ for a in arrays]})"))
    if len({a.dtype for a in arrays}) != 1:
        raise TypeError(f"fungrad.numpy.{caller}: key arrays of different PRNG "
                        f"implementations: {sorted({str(a.dtype) for a in arrays})}")
    return arrays


def _refuse(name):
    def refused(self, *args, **kwargs):
        raise TypeError(_conversion_hint(
            f"{name} is not defined for typed PRNG key arrays (dtype {self.dtype}): keys "
            f"are not numbers, only split/fold_in/the samplers use them"))
    refused.__name__ = name
    return refused


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
              "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "neg", "pos",
              "abs", "invert", "and", "rand", "or", "ror", "xor", "rxor", "lshift", "rlshift",
              "rshift", "rrshift", "lt", "le", "gt", "ge", "int", "float", "complex", "index"):
    setattr(KeyArray, f"__{_name}__", _refuse(f"__{_name}__"))
for _name in ("astype", "sum", "mean", "max", "min", "view"):
    setattr(KeyArray, _name, _refuse(_name))


register_pytree_node(KeyArray, lambda k: ((k._data,), k.dtype),
                     lambda dtype, children: KeyArray(children[0], dtype))
# typeof(keys) is JAX's: the keys' shape and the key dtype (``key<fry>[3]``)
core.pytype_aval_mappings[KeyArray] = lambda keys: core._shaped(keys.shape, keys.dtype)
