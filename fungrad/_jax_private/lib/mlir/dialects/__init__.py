"""``jax._src.lib.mlir.dialects``: the StableHLO dialect (``hlo``), interpreted."""
from fungrad._jax_private.lib.mlir.dialects import hlo  # noqa: F401
