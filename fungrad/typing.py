"""``fungrad.typing`` (as ``jax.typing``): annotations for array arguments.

    def f(x: fungrad.typing.ArrayLike, dtype: fungrad.typing.DTypeLike = None): ...
"""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from fungrad.core import Array, Tracer

__all__ = ["ArrayLike", "DTypeLike"]


class _SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


#: what fungrad functions accept as an array: fungrad Arrays and tracers, NumPy
#: arrays and scalars, Python numbers
ArrayLike = Union[Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex]

#: what fungrad functions accept as a dtype
DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
