"""``jax._src.state.types``: flax.nnx imports ``AbstractRef`` from here (the
type of a mutable array ref, ``jax.typeof(ref)``) to tell refs from arrays.
It is ``fungrad.ref.AbstractRef``."""
from fungrad.ref import AbstractRef

__all__ = ["AbstractRef"]
