"""``jax._src.lax.lax``: JAX's private module behind ``jax.lax``'s elementwise,
structural and dot operations.

Who needs it: JAX's "Primitives in JAX" tutorial (``from jax._src.lax import
lax``, then ``lax.add(lax.mul(x, y), z)``, ``lax.full_like``). It is
fungrad's ``lax`` under JAX's private name: every public ``jax.lax``
function, the same objects.
"""
import fungrad.lax as _lax
from fungrad.lax import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_lax, name)      # (fungrad.lax's lazily loaded names too)
