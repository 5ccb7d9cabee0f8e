"""``jax._src.tree_util``: flax.nnx (``flax/nnx/graphlib.py``) imports the pytree
node registry ``_registry`` to ask whether a type is a registered pytree node
(``type(x) in _registry``).  It is fungrad.tree_util's own registry (the same
dict: later registrations show), mapping each node type to its flatten and
unflatten rules, with the built-in containers in it as in JAX."""
from fungrad.tree_util import _registry

__all__ = ["_registry"]
