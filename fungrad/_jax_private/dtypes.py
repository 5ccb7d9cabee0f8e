"""``jax._src.dtypes``: imported by flax (``flax.linen.fp8_ops`` declares its
fp8 meta dtype as a subclass of ``ExtendedDType`` and of ``extended`` when
``flax.linen`` is imported) and by libraries that catch
``TypePromotionError``.

The public dtype helpers are ``fungrad.dtypes``'s; ``ExtendedDType`` is the
abstract base JAX gives user-defined dtypes (a ``type`` and ``_rules``).
fungrad's arrays are NumPy arrays, so an array of such a dtype cannot be
made: declaring one works, converting to it raises in ``convert_element_type``.
"""
from __future__ import annotations

import abc
from typing import Any

import numpy as np
from fungrad._dtype_classes import is_inexact

from fungrad.dtypes import (TypePromotionError, canonicalize_dtype, dtype, extended, finfo,
                            iinfo, issubdtype, prng_key, result_type)

__all__ = ["ExtendedDType", "DType", "supports_inf", "TypePromotionError", "canonicalize_dtype",
           "dtype", "extended", "finfo", "iinfo", "issubdtype", "prng_key", "result_type"]

DType = np.dtype


class ExtendedDType(abc.ABC):
    """Abstract base of extended dtypes: a scalar ``type`` (a subclass of
    ``extended``) and the ``_rules`` that say how values of it behave."""

    @property
    @abc.abstractmethod
    def type(self) -> type: ...

    _rules: Any = None


def supports_inf(dt) -> bool:
    """Can ``dt`` represent infinity?  (Floats do, except float8 variants without inf.)"""
    dt = np.dtype(dt)
    if not is_inexact(dt):
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isinf(np.array(np.inf).astype(dt)))
