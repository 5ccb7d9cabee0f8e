"""vmap: the batching interpreter.

A ``BatchTracer`` is a value plus the axis (``batch_dim``) along which it is
mapped, or ``not_mapped`` (None).  Each primitive's batching rule has the
signature ``rule(axis_size, vals, dims, **params) -> (out, out_dim)`` (lists
for multiple results) and runs on the parent trace, so ``vmap`` composes with
every other transformation.  Rules never loop over the batch in Python.

Helpers for the common shapes of rule live here: ``vectorized_batcher``
(unary elementwise), ``broadcasting_batcher`` (n-ary elementwise with NumPy
broadcasting) and ``reducer_batcher`` (axis-parameterised ops).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Sequence

from fungrad import core
from fungrad.core import (ClosedJaxpr, Tracer, Trace, ShapedArray, eval_jaxpr, get_aval,
                          bind_on, set_current_trace, new_trace_context)
from fungrad.interpreters import array_ops
from fungrad.interpreters.partial_eval import trace_closed
from fungrad.interpreters.rule_tables import RuleTable

__all__ = ["not_mapped", "BatchTrace", "BatchTracer", "vmap_flat", "vmap_keeping_dims",
           "batch_jaxpr", "batch_keeping_unbatched", "bdims_to_front", "moveaxis",
           "bdim_at_front", "vectorized_batcher", "broadcasting_batcher",
           "reducer_batcher", "shift_axes", "extend_axis_env", "manual_axis_size",
           "primitive_batchers", "axis_primitive_batchers"]

not_mapped = None


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self):
        aval = get_aval(self.val)
        if self.batch_dim is None:
            return aval
        shape = aval.shape[:self.batch_dim] + aval.shape[self.batch_dim + 1:]
        return ShapedArray(shape, aval.dtype, aval.weak_type)


class BatchTrace(Trace):
    __slots__ = ("axis_size", "axis_name")
    kind = "vmap"

    def __init__(self, parent, axis_size, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def lift(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for a in args:
            v, d = self.lift(a)
            vals.append(v)
            dims.append(d)
        if prim.collective is not None:
            name = params.get("axis_name")
            if name == self.axis_name:
                return self.process_collective(prim, prim.collective, vals, dims, params)
            if name not in bound_axis_names(self):
                raise NameError(f"unbound axis name: {name!r}. The names bound by enclosing "
                                f"vmaps are {bound_axis_names(self)}; pass axis_name={name!r} "
                                "to the vmap this collective should reduce over.")
        if all(d is None for d in dims):
            return bind_on(self.parent, prim, vals, params)
        if prim.batch is None:
            raise TypeError(f"Batching rule for primitive '{prim.name}' is not "
                            "implemented, so it cannot be used under vmap.")
        # (rules registered through JAX's axis_primitive_batchers also get the axis name)
        axis = (self.axis_size, self.axis_name) if getattr(prim.batch, "takes_axis_name", False) \
            else (self.axis_size,)
        with set_current_trace(self.parent):
            out, out_dim = prim.batch(*axis, vals, dims, **params)
        if prim.multiple_results:
            return [self.pure(o, d) for o, d in zip(out, out_dim)]
        return self.pure(out, out_dim)

    def pure(self, val, dim):
        return val if dim is None else BatchTracer(self, val, dim)

    def process_collective(self, prim, reduce_fn, vals, dims, params):
        """A collective over this trace's named axis reduces across the lanes."""
        params = {k: v for k, v in params.items() if k != "axis_name"}
        with set_current_trace(self.parent):
            if not vals:     # axis_index
                out, dim = reduce_fn(self.axis_size, self.axis_name)
            else:
                out, dim = reduce_fn(vals[0], dims[0], self.axis_size, **params)
        return self.pure(out, dim)


def enclosing_batch_traces(trace=None):
    """The active batch traces from ``trace`` (default: the current one) outwards."""
    trace = core.current_trace() if trace is None else trace
    while trace is not None:
        if isinstance(trace, BatchTrace) and trace.active:
            yield trace
        trace = trace.parent


def bound_axis_names(trace=None) -> list:
    names = [t.axis_name for t in enclosing_batch_traces(trace) if t.axis_name is not None]
    return names + [n for frame in reversed(_axis_env.frames) for n in frame if n not in names]


# Axis names bound without a batch trace: the mesh axes of a ``shard_map`` body
# while it is traced (its collectives are staged, and run later across shards).
class _AxisEnv(threading.local):
    def __init__(self):
        self.frames: list[dict] = []


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(sizes: dict):
    """Bind the axis names in ``sizes`` (name -> size) while tracing a body whose
    collectives run elsewhere (shard_map's mesh axes)."""
    _axis_env.frames.append(dict(sizes))
    try:
        yield
    finally:
        _axis_env.frames.pop()


def manual_axis_size(name):
    """The size of a name bound by ``extend_axis_env``, or None."""
    for frame in reversed(_axis_env.frames):
        if name in frame:
            return frame[name]
    return None


def vmap_flat(f: Callable, args: Sequence, in_dims: Sequence, axis_size: int,
              out_dims: Sequence, axis_name=None) -> list:
    """Map flat ``f`` over ``args`` along ``in_dims`` (None: not mapped).

    Each output gets its batch axis at ``out_dims[i]`` (negative: from the end);
    ``None`` there means the output must not depend on the mapped axis
    (ValueError if it does).
    """
    outs = list(zip(*vmap_keeping_dims(f, args, in_dims, axis_size, axis_name)))
    results = []
    for i, ((val, dim), out_dim) in enumerate(zip(outs, out_dims)):
        if out_dim is None:
            if dim is not None:
                raise ValueError(
                    f"vmap has out_axes=None for output {i}, but that output is "
                    "mapped over the batch axis (it depends on a mapped input). "
                    "Use an integer out_axes for it, or make it independent of the "
                    "mapped inputs.")
            results.append(val)
        else:
            val = bdim_at_front(val, dim, axis_size)
            results.append(moveaxis(val, 0, out_dim % get_aval(val).ndim))
    return results


def vmap_keeping_dims(f: Callable, args: Sequence, in_dims: Sequence, axis_size: int,
                      axis_name=None) -> tuple[list, list]:
    """Map flat ``f`` over ``args`` along ``in_dims``; returns ``(outs, out_dims)``
    with each output's batch axis where its computation put it (None: the
    output does not depend on the mapped inputs)."""
    trace = BatchTrace(core.current_trace(), axis_size, axis_name)
    with new_trace_context(trace):
        ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
        outs = [trace.lift(o) for o in f(*ins)]
    return [val for val, _ in outs], [dim for _, dim in outs]


def batch_jaxpr(closed: ClosedJaxpr, axis_size: int, in_dims) -> ClosedJaxpr:
    """``batch_jaxpr : ClosedJaxpr(a -> b), n, in_dims -> ClosedJaxpr([n]a -> [n]b)``

    Inputs with an int in ``in_dims`` carry a batch axis of size ``n`` there
    (None: not batched); every output gets its batch axis at 0.  Cached on
    ``closed``.
    """
    in_dims = tuple(in_dims)
    return closed.derived(("batch", axis_size, in_dims),
                          lambda: _batch_jaxpr(closed, axis_size, in_dims))


def batch_keeping_unbatched(closed: ClosedJaxpr, axis_size: int, in_dims, instantiate):
    """``batch_keeping_unbatched : ClosedJaxpr(a -> b), n, in_dims, instantiate
    -> (ClosedJaxpr([n]a -> [n]b'), batched)``

    As ``batch_jaxpr``, but an output that no batched input reaches stays
    unbatched unless ``instantiate`` asks for it (JAX's ``batch_jaxpr`` with
    ``instantiate``): ``batched`` says which outputs carry the batch axis (at
    0).  Loops and conditionals use it so that unbatched carries stay
    unbatched.  Cached on ``closed``."""
    in_dims, instantiate = tuple(in_dims), tuple(instantiate)
    return closed.derived(("batch_keeping", axis_size, in_dims, instantiate),
                          lambda: _batch_keeping(closed, axis_size, in_dims, instantiate))


def _batch_keeping(closed, axis_size, in_dims, instantiate):
    batched = []

    def fn(*args):
        vals, dims = vmap_keeping_dims(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                       args, in_dims, axis_size)
        batched[:] = [d is not None or inst for d, inst in zip(dims, instantiate)]
        return [bdim_at_front(v, d, axis_size) if b else v
                for v, d, b in zip(vals, dims, batched)]
    avals = [a if d is None else ShapedArray((axis_size,) + a.shape, a.dtype, a.weak_type)
             for a, d in zip(closed.in_avals, in_dims)]
    return trace_closed(fn, avals), tuple(batched)


def _batch_jaxpr(closed: ClosedJaxpr, axis_size, in_dims):
    n_out = len(closed.out_avals)

    def batched(*args):
        return vmap_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                         args, in_dims, axis_size, [0] * n_out)
    avals = [a if d is None else ShapedArray(a.shape[:d] + (axis_size,) + a.shape[d:], a.dtype,
                                             a.weak_type)
             for a, d in zip(closed.in_avals, in_dims)]
    return trace_closed(batched, avals)


def bdims_to_front(vals, dims):
    """Batched values with their batch axis moved to 0: ``(vals, in_dims)`` with
    ``in_dims`` 0 or None, as the rules of higher-order primitives want them."""
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    return vals, tuple(None if d is None else 0 for d in dims)


def moveaxis(x, src: int, dst: int):
    """Move axis ``src`` of ``x`` to position ``dst`` with one transpose."""
    if src == dst:
        return x
    ndim = len(get_aval(x).shape)
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return array_ops.transpose(x, tuple(perm))


def bdim_at_front(x, dim, axis_size: int):
    """``x`` with its batch axis first; unmapped values are broadcast."""
    if dim is None:
        aval = get_aval(x)
        return array_ops.broadcast_in_dim(x, (axis_size,) + aval.shape,
                                          tuple(range(1, aval.ndim + 1)))
    return moveaxis(x, dim, 0)


def shift_axes(axes: Sequence[int], dim: int) -> tuple:
    """Per-example axes -> axes of the batched value whose batch axis is ``dim``."""
    return tuple(a + 1 if a >= dim else a for a in axes)


def _jax_batcher(prim, rule):
    """JAX's batcher signature ``rule(args, dims, **params)`` as fungrad's, which
    also passes the axis size first."""
    def batch(axis_size, vals, dims, **params):
        return rule(vals, dims, **params)
    return batch


def _jax_axis_batcher(prim, rule):
    """JAX's ``axis_primitive_batchers`` signature ``rule(axis_size, axis_name,
    trace_type, args, dims, **params)`` (trace_type is None, as in JAX)."""
    def batch(axis_size, axis_name, vals, dims, **params):
        return rule(axis_size, axis_name, None, vals, dims, **params)
    batch.takes_axis_name = True
    return batch


# JAX's registries: ``batching.primitive_batchers[p] = rule`` (see rule_tables.py),
# and ``axis_primitive_batchers`` for rules that need the axis size and name
primitive_batchers = RuleTable("batch", adapt=_jax_batcher)
axis_primitive_batchers = RuleTable("batch", adapt=_jax_axis_batcher)


def vectorized_batcher(prim):
    """Unary elementwise: the batch axis stays where it is."""
    def rule(axis_size, vals, dims, **params):
        return prim.bind(*vals, **params), dims[0]
    prim.batch = rule
    return rule


def broadcasting_batcher(prim):
    """n-ary elementwise ops with NumPy broadcasting: put every batch axis first
    and pad the per-example shapes with 1s to a common rank, so NumPy's own
    broadcasting lines everything up (unmapped operands are left alone)."""
    def rule(axis_size, vals, dims, **params):
        ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims)]
        rank = max(ranks)
        if all(d is not None for d in dims) and len(set(dims)) == 1 and len(set(ranks)) == 1:
            return prim.bind(*vals, **params), dims[0]
        new_vals = []
        for v, d, r in zip(vals, dims, ranks):
            if d is not None:
                v = moveaxis(v, d, 0)
                shape = get_aval(v).shape
                if r < rank:
                    v = array_ops.reshape(v, (shape[0],) + (1,) * (rank - r) + shape[1:])
            new_vals.append(v)
        return prim.bind(*new_vals, **params), 0
    prim.batch = rule
    return rule


def reducer_batcher(prim, axes_param: str = "axes"):
    """Ops with a tuple of axes as a parameter: shift the axes past the batch axis.
    The batch axis is moved to the front first, so outputs keep it at 0."""
    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        x = moveaxis(x, d, 0)
        params = dict(params)
        params[axes_param] = tuple(a + 1 for a in params[axes_param])
        return prim.bind(x, **params), 0
    prim.batch = rule
    return rule
