"""``jax.version`` under the hook: the JAX release whose API and numbers
fungrad follows (libraries branch on ``jax.version.__version_info__``, as flax's
``nn.scan`` does).  fungrad's own version is ``fungrad.__version__``."""
from fungrad.jax_compat._hook import JAX_VERSION

__version__ = JAX_VERSION
__version_info__ = tuple(int(part) for part in JAX_VERSION.split("."))
_version = JAX_VERSION

__all__ = ["__version__", "__version_info__"]
