"""``fungrad.dtypes`` (as ``jax.dtypes``): dtype helpers that follow fungrad's
rules (JAX's promotion lattice, float64 defaults unless ``jax_enable_x64`` is off).

``prng_key`` and ``extended`` are the abstract scalar types JAX uses for typed
keys; fungrad's keys are JAX's legacy ``uint32[2]`` arrays, so
``issubdtype(key.dtype, prng_key)`` is False, as for legacy keys in JAX.
"""
from __future__ import annotations

import numpy as np

from fungrad import core
from fungrad.core import float0, get_aval
from fungrad.numpy._lattice import TypePromotionError
from fungrad.numpy._shape import result_type as _result_type

__all__ = ["canonicalize_dtype", "float0", "issubdtype", "result_type", "finfo", "iinfo",
           "prng_key", "extended", "TypePromotionError", "dtype"]

finfo = np.finfo
iinfo = np.iinfo


class extended(np.generic):
    """Abstract scalar type of JAX's extended dtypes (no fungrad array has one)."""


class prng_key(extended):
    """Abstract scalar type of JAX's typed PRNG keys (fungrad keys are uint32)."""


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype fungrad uses for ``dtype``: itself, or its 32-bit counterpart when
    ``jax_enable_x64`` is off (float64 -> float32, int64 -> int32, ...)."""
    return core.canonicalize_dtype(dtype)


def issubdtype(a, b) -> bool:
    """``np.issubdtype``, also for ``float0`` and the abstract ``extended``/``prng_key``."""
    is_float0 = lambda d: isinstance(d, np.dtype) and d == float0
    if is_float0(a) or is_float0(b):       # float0 is its own category (JAX's)
        return is_float0(a) and is_float0(b)
    return bool(np.issubdtype(a, b))


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype of an operation on ``args`` (arrays, tracers, dtypes, scalars),
    by JAX's promotion lattice (Python scalars are weak); with
    ``return_weak_type_flag`` also whether the result is weakly typed."""
    return _result_type(*args, return_weak_type_flag=return_weak_type_flag)


def dtype(x, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value or a dtype specifier (``jax.dtypes.dtype``)."""
    d = np.dtype(x) if isinstance(x, (np.dtype, type, str)) else get_aval(x).dtype
    return core.canonicalize_dtype(d) if canonicalize else d

