"""``jax.dlpack``: exchanging arrays with other libraries through DLPack.

``from_dlpack`` is ``fungrad.numpy.from_dlpack`` (a read-only fungrad Array
sharing the producer's memory where it can); fungrad Arrays export
themselves through ``__dlpack__``.  DLPack has no bfloat16 code NumPy can
read, so the supported dtypes are NumPy's DLPack dtypes.
"""
from __future__ import annotations

import numpy as np

from fungrad.numpy._array_api import from_dlpack

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can cross DLPack (``jax.dlpack.is_supported_dtype``)."""
    if dtype is None:
        # (np.dtype(None) is float64: a silent answer to a mistake)
        raise TypeError(f"Expected a string or dtype-like object; got dtype={dtype}")
    return np.dtype(dtype) in _SUPPORTED
