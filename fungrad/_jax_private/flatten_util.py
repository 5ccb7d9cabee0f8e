"""``jax._src.flatten_util``: imported by blackjax (its SMC tuning modules,
``blackjax.smc.tuning.from_particles`` and ``blackjax.smc.pretuning``, take
``ravel_pytree`` from the private module).  It is fungrad's public
``fungrad.flatten_util.ravel_pytree`` (``jax.flatten_util.ravel_pytree``)
under JAX's private name."""
from fungrad.flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
