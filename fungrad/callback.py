"""``pure_callback`` (as ``jax.pure_callback``): NumPy/Python code as a function
inside transformations.

    def host_solve(a, b):                 # any NumPy/SciPy code
        return np.linalg.solve(a, b)

    def f(a, b):
        shape = fungrad.ShapeDtypeStruct(b.shape, b.dtype)
        return fungrad.pure_callback(host_solve, shape, a, b, vmap_method="sequential")

    fungrad.jit(f)(a, b)                  # the generated code calls host_solve
    fungrad.vmap(f)(as_, bs)              # once per batch element ("sequential")

The callback must be pure: fungrad may call it several times, or not at all
when its result is unused.  It has no derivative; wrap it in ``custom_jvp`` or
``custom_vjp`` to differentiate.  Under ``vmap`` its ``vmap_method`` says how
(``"sequential"``, ``"sequential_unrolled"``, ``"expand_dims"``,
``"broadcast_all"``, ``"legacy_vectorized"``; None raises, as in JAX).
"""
from __future__ import annotations

from typing import Callable

from fungrad.lax.callbacks import (VMAP_METHODS, as_callback_operand, flatten_callback_args,
                                   io_callback_p, lane_avals, pure_callback_p)
from fungrad.tree_util import tree_unflatten

__all__ = ["pure_callback", "io_callback"]


def pure_callback(callback: Callable, result_shape_dtypes, *args, sharding=None,
                  vmap_method: str | None = None, **kwargs):
    """Call ``callback(*args, **kwargs)`` on concrete arrays and return its result,
    a pytree shaped like ``result_shape_dtypes`` (objects with ``shape`` and
    ``dtype``, e.g. ``ShapeDtypeStruct``).  ``sharding`` is accepted (one CPU)."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {list(VMAP_METHODS)}, "
                         f"got {vmap_method!r}")
    flat, dynamic = flatten_callback_args(callback, args, kwargs, "fungrad.pure_callback")
    avals, out_tree = lane_avals(result_shape_dtypes)
    outs = pure_callback_p.bind(*[as_callback_operand(x) for x in dynamic], callback=flat,
                                result_avals=avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(callback: Callable, result_shape_dtypes, *args, sharding=None,
                ordered: bool = False, **kwargs):
    """``jax.experimental.io_callback``: call ``callback(*args, **kwargs)``, a
    function with side effects (printing, I/O, host state), on concrete arrays
    and return its result, a pytree shaped like ``result_shape_dtypes`` (None
    for no result).  Unlike ``pure_callback`` it is never dropped when its
    result is unused, never merged with an identical call, and runs in program
    order under ``jit``, ``scan``, ``while_loop`` and ``cond``.  Under ``vmap``
    an unordered callback runs once per lane; ``ordered=True`` refuses vmap, as
    in JAX.  No derivative (``custom_jvp`` around it).  ``sharding`` is
    accepted (one CPU)."""
    if type(ordered) is not bool:
        raise TypeError(f"io_callback: ordered must be True or False, got {ordered!r}")
    flat, dynamic = flatten_callback_args(callback, args, kwargs, "io_callback")
    avals, out_tree = lane_avals(result_shape_dtypes)
    outs = io_callback_p.bind(*[as_callback_operand(x) for x in dynamic], callback=flat,
                              result_avals=avals, ordered=ordered)
    return tree_unflatten(out_tree, outs)
