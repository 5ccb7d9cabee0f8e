"""``pmap`` on one process: JAX's per-device map, with the lanes computed here.

    fungrad.pmap(f, axis_name="i")(xs)    # xs.shape[0] <= jax.local_device_count()

``pmap`` gives the numbers of a ``jit`` of a named ``vmap`` (collectives such as
``lax.psum(x, "i")`` reduce over the mapped axis), which is what it computes:
fungrad's devices are CPU processes, and the lanes of one ``pmap`` run in this
one.  As in JAX, the mapped axis may not be longer than the number of devices
(``jax.local_device_count()``, or ``len(devices)`` when given): a longer one
raises ``ValueError`` (use ``vmap``, or ``shard_map`` over a mesh).  Keyword
arguments are mapped over axis 0, as in JAX; ``static_broadcasted_argnums``
are passed to every lane as they are.  ``backend``, ``donate_argnums`` and
``global_arg_shapes`` are accepted and have no effect on one CPU.
"""
from __future__ import annotations

import functools
import itertools
from typing import Callable

from fungrad.api import vmap
from fungrad.core import get_aval
from fungrad.distributed.cluster import local_device_count
from fungrad.jitting import jit
from fungrad.tree_util import tree_flatten

__all__ = ["pmap"]

_fresh_names = (f"_pmap{i}" for i in itertools.count())


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums=(), devices=None, backend=None, axis_size=None,
         donate_argnums=(), global_arg_shapes=None):
    """Map ``fun`` over axis ``in_axes`` of its arguments, one lane per device."""
    if not callable(fun):
        raise TypeError(f"pmap requires a callable as its first argument, got "
                        f"{type(fun).__name__}")
    static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
              else tuple(static_broadcasted_argnums))
    name = axis_name if axis_name is not None else next(_fresh_names)
    available = len(devices) if devices is not None else None

    def lanes(*args, **kwargs):
        dyn = [i for i in range(len(args)) if i not in static]
        axes = in_axes if not isinstance(in_axes, (tuple, list)) else tuple(in_axes)
        dyn_axes = tuple(axes[i] for i in dyn) if isinstance(axes, tuple) else axes

        def per_lane(*dyn_args, **kw):
            full = list(args)
            for i, a in zip(dyn, dyn_args):
                full[i] = a
            return fun(*full, **kw)
        return vmap(per_lane, in_axes=dyn_axes, out_axes=out_axes, axis_name=name,
                    axis_size=axis_size)(*[args[i] for i in dyn], **kwargs)

    compiled = jit(lanes, static_argnums=static)

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        size = axis_size if axis_size is not None else _mapped_size(args, kwargs, in_axes,
                                                                    static)
        count = available if available is not None else local_device_count()
        if size is not None and size > count:
            raise ValueError(
                f"compiling computation that requires {size} logical devices, but only "
                f"{count} devices are available (num_replicas={size}): pmap maps one lane "
                f"per device; use vmap for more lanes than devices")
        return compiled(*args, **kwargs)
    return pmapped


def _mapped_size(args, kwargs, in_axes, static):
    """The length of the mapped axis: that of the first mapped array leaf."""
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    for i, (arg, axis) in enumerate(zip(args, axes)):
        if i in static or axis is None or not isinstance(axis, int):
            continue
        for leaf in tree_flatten(arg)[0]:
            shape = get_aval(leaf).shape
            return shape[axis] if shape else None
    for leaf in tree_flatten(kwargs)[0]:
        shape = get_aval(leaf).shape
        return shape[0] if shape else None
    return None
