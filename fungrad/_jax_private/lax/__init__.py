"""``jax._src.lax``: the package of JAX's private ``lax`` modules; ``lax``
below is what JAX's "Primitives in JAX" tutorial imports."""
