"""``jnp.float32``, ``jnp.int32``, ``jnp.bool_``, ...: JAX's scalar types.

In JAX these are not NumPy's scalar classes but stand-ins for them: calling
one makes a 0-d array of that dtype (``jnp.float32(1.5)`` is an ``Array``),
``.dtype`` is the NumPy dtype (libraries write ``jnp.bool_.dtype``), and
they compare, hash and ``isinstance``-check as the NumPy scalar type, so
``np.dtype(jnp.float32)``, ``x.astype(jnp.int32)``, ``dtype == jnp.float32``
and dict lookups keyed by NumPy types all work as with NumPy's.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ScalarMeta", "scalar_type"]


class ScalarMeta(type):
    """The metaclass of JAX's scalar types (JAX's ``_ScalarMeta``)."""
    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> bool:
        return not cls == other

    def __call__(cls, x):
        from fungrad.numpy import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls.dtype.type)


def scalar_type(np_type: type) -> ScalarMeta:
    """The JAX scalar type standing for NumPy's ``np_type``."""
    name = np_type.__name__
    return ScalarMeta(name, (object,), {
        "dtype": np.dtype(np_type), "__module__": "fungrad.numpy",
        "__doc__": f"A {name} array of shape (): ``{name}(x)`` is ``asarray(x, dtype={name})``."})
