"""``fungrad.extend.source_info_util`` (``jax.extend.source_info_util``):
which frames count as the user's code.

Errors and the source information of staged equations (``jax_debug_nans``)
name the innermost frame outside fungrad.  A library built on fungrad
registers its own directory so that they name its user's line instead of
the library's (flax does at import: ``register_exclusion(flax's dir)``).
"""
from fungrad.core import register_exclusion

__all__ = ["register_exclusion"]
