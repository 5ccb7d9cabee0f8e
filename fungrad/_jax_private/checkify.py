"""``jax._src.checkify``: flax.nnx (``flax/nnx/transforms/transforms.py``,
``nnx.checkify``) imports the checkify module privately for ``checkify``,
``Error``, ``JaxException``, ``user_checks`` and the ``Out`` type variable of
its annotations.  They are fungrad's public ``fungrad.checkify``
(``jax.experimental.checkify``)."""
from typing import TypeVar

from fungrad.checkify import (Error, FailedCheckError, JaxException, all_checks,
                              automatic_checks, check, checkify, div_checks, float_checks,
                              index_checks, nan_checks, user_checks)

Out = TypeVar("Out")    # what the checkified function returns (JAX's annotation variable)

__all__ = ["Error", "FailedCheckError", "JaxException", "Out", "all_checks", "automatic_checks",
           "check", "checkify", "div_checks", "float_checks", "index_checks", "nan_checks",
           "user_checks"]
