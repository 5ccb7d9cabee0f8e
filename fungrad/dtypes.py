"""``fungrad.dtypes`` (as ``jax.dtypes``): dtype helpers that follow fungrad's
rules (JAX's promotion lattice, float64 defaults unless ``jax_enable_x64`` is off).

``prng_key`` and ``extended`` are the abstract scalar types JAX uses for typed
keys: ``issubdtype(random.key(0).dtype, prng_key)`` is True (the key dtype is
a ``KeyTy``, ``key<fry>``), and False for the raw ``uint32[2]`` keys of
``random.PRNGKey``, as in JAX.
"""
from __future__ import annotations

import numpy as np

from fungrad import _dtype_classes, core
from fungrad.core import float0, get_aval
from fungrad.numpy._lattice import TypePromotionError
from fungrad.numpy._dtypes import issubdtype as _issubdtype
from fungrad.numpy._shape import result_type as _result_type

__all__ = ["canonicalize_dtype", "float0", "issubdtype", "result_type", "finfo", "iinfo",
           "prng_key", "extended", "KeyTy", "TypePromotionError", "dtype"]

finfo = _dtype_classes.finfo    # ml_dtypes' finfo/iinfo: NumPy's, and bfloat16's, int4's ...
iinfo = _dtype_classes.iinfo


class extended(np.generic):
    """Abstract scalar type of JAX's extended dtypes (no fungrad array has one)."""


class prng_key(extended):
    """Abstract scalar type of typed PRNG keys (``random.key``'s dtype is a subtype)."""


class KeyTy:
    """The dtype of the typed keys of one PRNG implementation, ``key<tag>``
    (JAX's ``KeyTy``): not a NumPy dtype (see ``fungrad.random._key_array``)."""
    type = prng_key
    kind = "V"

    def __init__(self, impl_name, tag):
        self.impl_name, self.tag = impl_name, tag
        self.name = f"key<{tag}>"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyTy) and other.impl_name == self.impl_name

    def __hash__(self):
        return hash((KeyTy, self.impl_name))


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype fungrad uses for ``dtype``: itself, or its 32-bit counterpart when
    ``jax_enable_x64`` is off (float64 -> float32, int64 -> int32, ...)."""
    return core.canonicalize_dtype(dtype)


def issubdtype(a, b) -> bool:
    """``np.issubdtype``, also for ``float0``, ml_dtypes' types and the abstract
    ``extended``/``prng_key``."""
    return _issubdtype(a, b)


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype of an operation on ``args`` (arrays, tracers, dtypes, scalars),
    by JAX's promotion lattice (Python scalars are weak); with
    ``return_weak_type_flag`` also whether the result is weakly typed."""
    return _result_type(*args, return_weak_type_flag=return_weak_type_flag)


def dtype(x, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value or a dtype specifier (``jax.dtypes.dtype``)."""
    if isinstance(x, KeyTy) or isinstance(getattr(x, "dtype", None), KeyTy):
        return x if isinstance(x, KeyTy) else x.dtype          # typed keys
    d = np.dtype(x) if isinstance(x, (np.dtype, type, str)) else get_aval(x).dtype
    return core.canonicalize_dtype(d) if canonicalize else d

