"""JAX's ``lax.Precision`` and ``lax.dtype`` (not primitives;
``lax.broadcast_shapes`` is in structural.py).

``Precision`` is what JAX's products take as ``precision=`` (libraries such as
optax use ``lax.Precision.HIGHEST`` as a default argument, so it must exist
at import time). NumPy always computes at the operands' precision, so every
member means the same here; the names and spellings are JAX's.
"""
from __future__ import annotations

import enum

import numpy as np

from fungrad import core
from fungrad.lax.utils import PRECISION_NAMES as _PRECISION_NAMES


__all__ = ["Precision", "dtype"]

# the dtypes of Python scalars (JAX's python_scalar_dtypes)
_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}


def dtype(x, *, canonicalize: bool = False) -> np.dtype:
    """``jax.lax.dtype``: the dtype of an array, tracer, NumPy scalar, Python
    scalar (bool, int64, float64, complex128) or dtype-like (``np.float32``,
    ``"int8"``); with ``canonicalize=True``, as fungrad would store it (32-bit
    while ``jax_enable_x64`` is off)."""
    if type(x) in _SCALAR_DTYPES:
        out = _SCALAR_DTYPES[type(x)]
    elif isinstance(x, core.Tracer) or hasattr(x, "dtype"):
        out = np.dtype(core.get_aval(x).dtype if isinstance(x, core.Tracer) else x.dtype)
    else:
        try:
            out = np.dtype(x)
        except TypeError:
            raise TypeError(f"lax.dtype: cannot determine the dtype of {x!r} (of type "
                            f"{type(x).__name__}); pass an array, a scalar or a dtype") from None
    return core.canonicalize_dtype(out) if canonicalize else out


class Precision(enum.Enum):
    """``jax.lax.Precision``: DEFAULT, HIGH, HIGHEST (also by the names JAX
    accepts as strings: 'default'/'bfloat16', 'high'/'tensorfloat32',
    'highest'/'float32'). Accepted and ignored by fungrad's products."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            member = _PRECISION_NAMES.get(value.lower())
            if member is not None:
                return cls[member]
        raise ValueError(f"lax.Precision: {value!r} is not a precision; use one of "
                         f"{', '.join(repr(n) for n in _PRECISION_NAMES)} or "
                         "lax.Precision.DEFAULT / HIGH / HIGHEST")

    def __str__(self):
        return self.name
