"""``jax._src.state``: flax.nnx (``flax/nnx/variablelib.py``) imports
``jax._src.state.types.AbstractRef`` to recognise mutable array refs
(``is_array_ref``).  The refs are fungrad's public ``fungrad.ref``
(``jax.ref``); this package only gives them JAX's private path.
"""
from fungrad.ref import AbstractRef

__all__ = ["AbstractRef"]
