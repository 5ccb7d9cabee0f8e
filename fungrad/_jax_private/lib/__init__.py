"""``jax._src.lib``: the ``mlir`` package below (``jax._src.lib.mlir.ir`` and
``jax._src.lib.mlir.dialects.hlo``), which JAX's "Primitives in JAX" tutorial
and libraries that write their own lowering rules import."""
