"""Automatic data-parallel partitioning of ``jit`` over sharded inputs.

When a jitted function is called with arguments sharded along one mesh axis
(``device_put(batch, NamedSharding(mesh, P('data')))``) and the rest
replicated, JAX's partitioner runs the program on every device's block and
inserts the cross-device reductions.  This module does the same for the
common case, as a rewrite of the jitted program into a ``shard_map`` body:

* every value is either *replicated* (each position holds the whole value,
  computed identically) or *split* along one dimension over the axis;
* elementwise operations, ``broadcast_in_dim``, ``reshape`` (keeping the
  split dimension whole), ``transpose``, ``squeeze``, ``convert_element_type``,
  cumulative ops, ``slice``/``pad``/``rev``/``concatenate`` away from the
  split dimension and reductions over other dimensions run on the local
  blocks, their shape parameters scaled to the block;
* a reduction (``reduce_sum``/``max``/``min``) or a ``dot_general``
  contraction over the split dimension runs locally and is followed by
  ``psum``/``pmax``/``pmin``: its result is replicated;
* a replicated operand meeting a split one (a full-size broadcast of the
  batch's scale, the other side of a contraction) is sliced to this
  position's block (``axis_index`` × block size), which is exact because
  every position holds the same value;
* equations whose inputs are all replicated run as they are.

Any other equation that reads a split value (a gather or scatter indexed
along the batch, a sort across it, control flow over split carries, ...)
runs on the whole value: its split inputs are ``all_gather``ed across the
positions and it runs replicated, as JAX's partitioner inserts all-gathers
where it cannot propagate a sharding; ``Plan.replicated`` names those
equations (jit logs them once).  A program with side effects (callbacks,
``debug.print``) is not partitioned at all: ``Unsupported``, and the caller
runs it gathered in one place, where its effects happen once.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from fungrad import lax
from fungrad.core import Jaxpr, Literal, Primitive, get_aval

__all__ = ["plan", "Plan"]

REPLICATED = None


class Unsupported(Exception):
    """An equation outside what is partitioned automatically."""


def _elementwise_primitives() -> frozenset:
    import fungrad.lax.elementwise as elementwise
    import fungrad.lax.special as special
    names = {v.name for m in (elementwise, special) for v in vars(m).values()
             if isinstance(v, Primitive)}
    # (iota has no operands; bitcast_convert_type may add or drop a dimension)
    return frozenset(names - {"iota", "bitcast_convert_type"})


_ELEMENTWISE: frozenset = frozenset()
_REDUCTIONS = {"reduce_sum": lax.psum, "reduce_max": lax.pmax, "reduce_min": lax.pmin}
_LOCAL_AWAY_FROM_SPLIT = {"reduce_prod", "reduce_and", "reduce_or", "argmax", "argmin",
                          "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}


class Context:
    """The mesh axis values are split over, its size, and each split value's
    block of a replicated value (for slicing replicated operands)."""

    def __init__(self, axis_name: str, axis_size: int):
        self.axis_name, self.axis_size = axis_name, axis_size

    def block(self, x, dim: int):
        """This position's block of the replicated ``x`` along ``dim``."""
        size = get_aval(x).shape[dim] // self.axis_size
        start = lax.mul(lax.axis_index(self.axis_name), np.int64(size))
        return lax.dynamic_slice_in_dim(x, start, size, axis=dim)


# --- rules: (input split dims, params) -> (output split dims, run) ---------------
# ``run(ctx, *local_inputs)`` computes the outputs on this position's blocks.

def _bind(eqn, params=None):
    params = eqn.params if params is None else params
    return lambda ctx, *xs: eqn.primitive.bind(*xs, **params)


def _aligned(dim, rank_in, rank_out):
    return None if dim is None else dim + rank_out - rank_in


def _elementwise_rule(eqn, dims, shapes):
    out_shape = eqn.outvars[0].aval.shape
    rank = len(out_shape)
    targets = {_aligned(d, len(s), rank) for d, s in zip(dims, shapes) if d is not None}
    if len(targets) != 1:
        raise Unsupported(f"{eqn.primitive.name}: operands split along different dimensions")
    target = targets.pop()
    slicing = []
    for d, s in zip(dims, shapes):
        local = target - (rank - len(s))
        slicing.append(d is None and local >= 0 and s[local] != 1)

    def run(ctx, *xs):
        xs = [ctx.block(x, target - (rank - get_aval(x).ndim)) if cut else x
              for x, cut in zip(xs, slicing)]
        return eqn.primitive.bind(*xs, **eqn.params)
    return [target] * len(eqn.outvars), run


def _scaled_shape(shape, dim, n):
    shape = list(shape)
    shape[dim] //= n
    return tuple(shape)


def _broadcast_in_dim_rule(eqn, dims, shapes):
    (d, *rest) = dims
    if any(r is not None for r in rest):
        raise Unsupported("broadcast_in_dim: a split dynamic shape")
    target = eqn.params["broadcast_dimensions"][d]
    if shapes[0][d] != eqn.params["shape"][target]:
        raise Unsupported("broadcast_in_dim: the split dimension is broadcast")

    def run(ctx, *xs):
        params = dict(eqn.params, shape=_scaled_shape(eqn.params["shape"], target,
                                                      ctx.axis_size))
        return eqn.primitive.bind(*xs, **params)
    return [target], run


def _reshape_rule(eqn, dims, shapes):
    d, in_shape = dims[0], shapes[0]
    out_shape = tuple(eqn.params["new_sizes"])
    if eqn.params.get("dimensions") not in (None, ()):
        raise Unsupported("reshape with dimensions")
    before = math.prod(in_shape[:d])
    target = next((k for k in range(len(out_shape)) if math.prod(out_shape[:k]) == before
                   and out_shape[k] == in_shape[d]), None)
    if target is None:
        raise Unsupported("reshape: merges or splits the split dimension")

    def run(ctx, x):
        return eqn.primitive.bind(x, **dict(eqn.params, new_sizes=_scaled_shape(
            out_shape, target, ctx.axis_size)))
    return [target], run


def _transpose_rule(eqn, dims, shapes):
    return [tuple(eqn.params["permutation"]).index(dims[0])], _bind(eqn)


def _squeeze_rule(eqn, dims, shapes):
    removed = tuple(a % len(shapes[0]) for a in eqn.params["dimensions"])
    return [dims[0] - sum(a < dims[0] for a in removed)], _bind(eqn)


def _convert_rule(eqn, dims, shapes):
    return [dims[0]], _bind(eqn)


def _reduction_rule(eqn, dims, shapes):
    d = dims[0]
    axes = eqn.params.get("axes")
    axes = (eqn.params["axis"],) if axes is None else tuple(axes)
    name = eqn.primitive.name
    if d not in axes:
        if name.startswith("cum"):
            return [d], _bind(eqn)
        return [d - sum(a < d for a in axes)], _bind(eqn)
    if name not in _REDUCTIONS:
        raise Unsupported(f"{name} over the split dimension")
    collective = _REDUCTIONS[name]

    def run(ctx, x):
        return collective(eqn.primitive.bind(x, **eqn.params), ctx.axis_name)
    return [REPLICATED], run


def _untouched_rule(eqn, dims, shapes):
    """slice/pad/rev/concatenate that leave the split dimension whole."""
    d = next(x for x in dims if x is not None)
    name, p = eqn.primitive.name, eqn.params
    if any(x not in (None, d) for x in dims) or \
            (name == "concatenate" and (p["dimension"] == d or None in dims)):
        raise Unsupported(f"{name}: along the split dimension")
    if name == "slice" and (p["start_indices"][d] != 0
                            or p["limit_indices"][d] != shapes[0][d]
                            or (p.get("strides") or (1,) * 99)[d] != 1):
        raise Unsupported("slice: of the split dimension")
    if name == "pad" and (dims[1] is not None or tuple(p["padding_config"][d]) != (0, 0, 0)):
        raise Unsupported("pad: of the split dimension")
    if name == "rev" and d in p["dimensions"]:
        raise Unsupported("rev: of the split dimension")

    def run(ctx, *xs):
        params = p
        if name == "slice":
            limits = list(p["limit_indices"])
            limits[d] //= ctx.axis_size
            params = dict(p, limit_indices=tuple(limits))
        return eqn.primitive.bind(*xs, **params)
    return [d], run


def _dot_general_rule(eqn, dims, shapes):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ld, rd = dims
    ls, rs = shapes
    side = [("l", ld, lc, lb), ("r", rd, rc, rb)]
    for which, d, contract, batch in side:
        if d is None:
            continue
        if d in contract or d in batch:
            other_dims = (rc, rb) if which == "l" else (lc, lb)
            k = (contract if d in contract else batch).index(d)
            partner = other_dims[0][k] if d in contract else other_dims[1][k]
            other = rd if which == "l" else ld
            if other not in (None, partner):
                raise Unsupported("dot_general: operands split along unpaired dimensions")
            cut_other = other is None
            return _paired_dot(eqn, which, partner, cut_other, d in contract, batch.index(d)
                               if d in batch else None)
    # split along a free dimension of one side only
    if ld is not None and rd is not None:
        raise Unsupported("dot_general: both operands split along free dimensions")
    lfree = [a for a in range(len(ls)) if a not in lc and a not in lb]
    rfree = [a for a in range(len(rs)) if a not in rc and a not in rb]
    target = (len(lb) + lfree.index(ld) if ld is not None
              else len(lb) + len(lfree) + rfree.index(rd))
    return [target], _bind(eqn)


def _paired_dot(eqn, split_side, partner, cut_other, contracted, batch_pos):
    def run(ctx, lhs, rhs):
        if cut_other:
            if split_side == "l":
                rhs = ctx.block(rhs, partner)
            else:
                lhs = ctx.block(lhs, partner)
        out = eqn.primitive.bind(lhs, rhs, **eqn.params)
        return lax.psum(out, ctx.axis_name) if contracted else out
    return [REPLICATED if contracted else batch_pos], run


_RULES: dict[str, Callable] = {
    "broadcast_in_dim": _broadcast_in_dim_rule, "reshape": _reshape_rule,
    "transpose": _transpose_rule, "squeeze": _squeeze_rule,
    "reduce_precision": _convert_rule, "dot_general": _dot_general_rule,
    **{n: _reduction_rule for n in (*_REDUCTIONS, *_LOCAL_AWAY_FROM_SPLIT)},
    **{n: _untouched_rule for n in ("slice", "pad", "rev", "concatenate")},
}


def _rule_for(eqn):
    global _ELEMENTWISE
    if not _ELEMENTWISE:
        _ELEMENTWISE = _elementwise_primitives()
    name = eqn.primitive.name
    if name in _RULES:
        return _RULES[name]
    if name in _ELEMENTWISE:
        return _elementwise_rule
    return None


# --- planning and running ---------------------------------------------------------

class Plan:
    """How to run a jaxpr on blocks: per equation, its run function (or a
    nested plan), which dimension of each output is split, and the names of
    the equations that run replicated on all-gathered inputs."""

    def __init__(self, jaxpr: Jaxpr, steps: list, out_dims: list, replicated: list):
        self.jaxpr, self.steps, self.out_dims = jaxpr, steps, out_dims
        self.replicated = replicated

    def run(self, ctx: Context, consts: Sequence, args: Sequence) -> list:
        env = dict(zip(self.jaxpr.constvars, consts))
        env.update(zip(self.jaxpr.invars, args))
        read = lambda a: a.val if type(a) is Literal else env[a]     # noqa: E731
        for eqn, step in zip(self.jaxpr.eqns, self.steps):
            ins = [read(a) for a in eqn.inputs]
            if isinstance(step, Plan):                  # a nested jit, inlined
                inner = eqn.params["jaxpr"]
                outs = step.run(ctx, inner.consts, ins)
            else:
                outs = step(ctx, *ins)
                outs = outs if eqn.primitive.multiple_results else [outs]
            env.update(zip(eqn.outvars, outs))
        return [read(v) for v in self.jaxpr.outvars]


def _effectful(jaxpr: Jaxpr) -> bool:
    """Whether ``jaxpr`` (or a jaxpr in its equations' parameters) has a side effect."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.effectful:
            return True
        for value in eqn.params.values():
            for sub in (value if isinstance(value, (tuple, list)) else (value,)):
                inner = getattr(sub, "jaxpr", sub)
                if isinstance(inner, Jaxpr) and _effectful(inner):
                    return True
    return False


def _on_the_whole_value(eqn, dims):
    """Run ``eqn`` replicated: all-gather its split inputs first."""
    def run(ctx, *xs):
        xs = [x if d is None else lax.all_gather(x, ctx.axis_name, axis=d, tiled=True)
              for x, d in zip(xs, dims)]
        return eqn.primitive.bind(*xs, **eqn.params)
    return [REPLICATED] * len(eqn.outvars), run


def _step(eqn, dims, replicated: list):
    """(output split dims, run) of one equation reading a split value."""
    if eqn.primitive.name == "shard_map":
        # (it says itself what runs where: jit of shard_map runs it as it is)
        raise Unsupported("a shard_map")
    rule = _rule_for(eqn)
    if rule is not None:
        try:
            return rule(eqn, dims, [tuple(a.aval.shape) for a in eqn.inputs])
        except Unsupported as why:
            replicated.append(str(why))
    else:
        replicated.append(eqn.primitive.name)
    return _on_the_whole_value(eqn, dims)


def plan(jaxpr: Jaxpr, in_dims: Sequence, check_effects: bool = True) -> Plan:
    """The plan of ``jaxpr`` for inputs split along ``in_dims`` (None:
    replicated); raises ``Unsupported`` for a program with side effects or a
    shard_map of split values."""
    if check_effects and _effectful(jaxpr):
        raise Unsupported("a side effect (callback or debug.print), which must happen once")
    env = dict.fromkeys(jaxpr.constvars, REPLICATED)
    env.update(zip(jaxpr.invars, in_dims))
    read = lambda a: REPLICATED if type(a) is Literal else env[a]     # noqa: E731
    steps, replicated = [], []
    for eqn in jaxpr.eqns:
        dims = [read(a) for a in eqn.inputs]
        if all(d is REPLICATED for d in dims):
            steps.append(lambda ctx, *xs, eqn=eqn: eqn.primitive.bind(*xs, **eqn.params))
            out_dims = [REPLICATED] * len(eqn.outvars)
        elif eqn.primitive.inline and "jaxpr" in eqn.params:
            inner = plan(eqn.params["jaxpr"].jaxpr, dims, check_effects=False)
            steps.append(inner)
            replicated += inner.replicated
            out_dims = inner.out_dims
        else:
            out_dims, run = _step(eqn, dims, replicated)
            steps.append(run)
        env.update(zip(eqn.outvars, out_dims))
    return Plan(jaxpr, steps, [read(v) for v in jaxpr.outvars], replicated)


# --- the jit entry point -------------------------------------------------------------

def _split_axis(leaves):
    """(mesh, axis name, per-leaf split dims) when the sharded leaves share one
    mesh and split along one mesh axis, each along at most one dimension;
    else None."""
    from fungrad.sharding import NamedSharding, ShardedArray
    mesh, names, dims = None, set(), []
    for x in leaves:
        if type(x) is not ShardedArray:
            dims.append(REPLICATED)
            continue
        sharding = x.sharding
        if not isinstance(sharding, NamedSharding) or (mesh is not None and sharding.mesh != mesh):
            return None
        mesh = sharding.mesh
        split = [(k, e) for k, e in enumerate(sharding.spec) if e is not None]
        if len(split) > 1 or any(not isinstance(e, str) for _, e in split):
            return None
        names.update(e for _, e in split)
        dims.append(split[0][0] if split else REPLICATED)
    if len(names) != 1 or mesh.shape[next(iter(names))] == 1:
        return None
    return mesh, names.pop(), dims


def _spec(dim, axis_name):
    from fungrad.sharding import PartitionSpec
    return PartitionSpec() if dim is None else PartitionSpec(*([None] * dim), axis_name)


def partitioned_runner(closed, n_hoisted: int, leaves, cache: dict):
    """A function of ``(*hoisted, *leaves)`` running the jitted program
    ``closed`` data-parallel as a ``shard_map`` over the mesh the sharded
    ``leaves`` share, or None (with the reason in ``cache``) when the program
    or the shardings are outside what is partitioned automatically."""
    found = _split_axis(leaves)
    if found is None:
        return None
    mesh, axis_name, dims = found
    in_dims = [REPLICATED] * n_hoisted + dims
    key = (id(mesh), axis_name, tuple(in_dims))
    if key in cache:
        return cache[key]
    try:
        the_plan = plan(closed.jaxpr, in_dims)
    except Unsupported as why:
        cache[key] = None
        cache["reason"] = str(why)
        return None
    from fungrad.jitting import jit
    from fungrad.shard_map import shard_map
    ctx = Context(axis_name, mesh.shape[axis_name])
    if the_plan.replicated:
        cache["replicated"] = sorted(set(the_plan.replicated))

    def body(*blocks):
        return tuple(the_plan.run(ctx, closed.consts, blocks))
    in_specs = tuple(_spec(d, axis_name) for d in in_dims)
    out_specs = tuple(_spec(d, axis_name) for d in the_plan.out_dims)
    # (check_vma off: replicated outputs are psums or computed from replicated
    # values only, by construction of the plan)
    runner = jit(shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                           check_vma=False))
    cache[key] = runner
    return runner
