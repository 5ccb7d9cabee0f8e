"""``pmap``: JAX's per-device map, in one process or one lane per Dask worker.

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

With ``fungrad.distributed`` initialised, the devices are the Dask workers and
each lane runs on its own worker: ``pmap`` is then a ``shard_map`` over a
one-axis mesh of the first ``n`` workers (the mapped axis split one lane per
worker, the rest replicated), so the collectives cross workers, and the
results are sharded arrays on them, as JAX's are on its devices.
"""
from __future__ import annotations

import functools
import itertools
from typing import Callable

from fungrad.api import vmap
from fungrad.core import get_aval
from fungrad.distributed.cluster import devices as cluster_devices
from fungrad.distributed.cluster import is_initialized, local_device_count
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
        if is_initialized() and size is not None:
            return _on_workers(fun, name, args, kwargs, in_axes, out_axes, static, size,
                               devices)
        return compiled(*args, **kwargs)
    return pmapped


def _on_workers(fun, name, args, kwargs, in_axes, out_axes, static, size, devices):
    """One lane per worker: ``shard_map`` over a mesh of ``size`` workers, each
    lane's block (length 1 along the mapped axis) squeezed for ``fun``."""
    import numpy as np
    from fungrad import numpy as fnp
    from fungrad.sharding import Mesh, P
    from fungrad.shard_map import shard_map
    from fungrad.tree_util import tree_map
    workers = list(devices) if devices is not None else cluster_devices()
    mesh = Mesh(np.array(workers[:size], dtype=object), (name,))
    dyn = [i for i in range(len(args)) if i not in static]
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    moved = [tree_map(lambda x, a=axes[i]: x if a is None else fnp.moveaxis(x, a, 0), args[i])
             for i in dyn]
    in_specs = tuple(P() if axes[i] is None else P(name) for i in dyn) + (P(name),)

    def lane(*blocks):
        *dyn_blocks, kw = blocks
        full = list(args)
        for i, b in zip(dyn, dyn_blocks):
            full[i] = b if axes[i] is None else tree_map(lambda x: x[0], b)
        out = fun(*full, **tree_map(lambda x: x[0], kw))
        return tree_map(lambda x: fnp.expand_dims(x, 0), out)
    out = shard_map(lane, mesh=mesh, in_specs=in_specs, out_specs=P(name))(*moved, kwargs)
    if out_axes == 0:
        return out
    return tree_map(lambda x, a: fnp.moveaxis(x, 0, a), out, out_axes)


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
