"""JAX's ``lax.Precision`` (not a primitive; ``lax.broadcast_shapes`` is in
structural.py).

``Precision`` is what JAX's products take as ``precision=`` (libraries such as
optax use ``lax.Precision.HIGHEST`` as a default argument, so it must exist
at import time). NumPy always computes at the operands' precision, so every
member means the same here; the names and spellings are JAX's.
"""
from __future__ import annotations

import enum

from fungrad.lax.utils import PRECISION_NAMES as _PRECISION_NAMES


__all__ = ["Precision"]


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
