"""The few array operations the interpreters themselves need, provided by lax.

Adding tangents, making zeros, summing out broadcast axes (ad.py) and moving
or broadcasting batch axes (batching.py) are lax primitives, and the
optimisation passes rewrite a few structural primitives (transpose,
dot_general, broadcast_in_dim, pad, concatenate: passes.py), but the interpreters sit below lax
and never import it.  ``fungrad/lax/__init__.py`` registers the operations
and primitives here when lax is imported (as JAX's lax registers its
zeros-like rule with ad_util), so the dependency points down.
"""
from __future__ import annotations

__all__ = ["register", "add", "full", "reduce_sum", "reshape", "transpose", "broadcast_in_dim",
           "transpose_p", "dot_general_p", "broadcast_in_dim_p", "pad_p", "concatenate_p"]


def _missing(*args, **kwargs):
    raise RuntimeError("fungrad.lax has not registered its array operations "
                       "(import fungrad before using the interpreters)")


add = full = reduce_sum = reshape = transpose = broadcast_in_dim = _missing
# until lax registers them
transpose_p = dot_general_p = broadcast_in_dim_p = pad_p = concatenate_p = None


def register(**ops):
    """Called once by fungrad.lax with the operations named in ``__all__``."""
    unknown = set(ops) - set(__all__)
    if unknown:
        raise TypeError(f"array_ops.register: unknown operations {sorted(unknown)}")
    globals().update(ops)
