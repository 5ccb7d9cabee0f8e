"""``jax._src.lib.mlir``: MLIR's Python API as far as lowering rules written
by hand use it (``ir`` types and values, the ``hlo`` dialect's operations),
interpreted on fungrad: see ``dialects/hlo.py``."""
from fungrad._jax_private.lib.mlir import ir  # noqa: F401
