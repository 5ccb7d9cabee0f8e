"""Collectives over a named axis: psum, pmean, pmax, pmin, all_gather, psum_scatter,
ppermute, all_to_all, axis_index, axis_size.

Inside ``vmap(f, axis_name="i")`` these act across the mapped axis, as in
JAX.  They are dispatched by axis name (``Primitive.collective``): the batch
trace whose ``axis_name`` matches applies the ``collective`` rule
``rule(val, bdim, axis_size, **params) -> (out, out_bdim)``; traces of other
names treat the op lane by lane over their own batch axis.  The same
primitives are the collectives of ``shard_map`` bodies, whose mesh axes are
bound by ``batching.extend_axis_env`` while the body is traced; there the
named vmap is the single-machine reference of the distributed execution.

An ``axis_name`` may be a tuple of names (a collective over several mesh
axes at once); the API functions split it into one primitive per name.
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import deflinear, defjvp_zero
from fungrad.interpreters.lowering import Const, Source
from fungrad.lax.utils import def_lowering, as_operand, unary_shape_rule

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "all_to_all", "axis_index", "axis_size", "pshuffle", "pswapaxes", "pbroadcast",
           "pvary", "pcast"]


def _unbound(axis_name):
    names = batching.bound_axis_names()
    return NameError(f"unbound axis name: {axis_name!r}. The names bound by enclosing "
                     f"vmaps (and shard_map meshes) are {names or 'none'}; pass "
                     f"axis_name={axis_name!r} to the vmap this collective should reduce "
                     "over, or name a mesh axis of the enclosing shard_map.")


def _collective(name, reduce_fn, out_rule=unary_shape_rule, axis_params=()):
    """A collective: ``reduce_fn(val, bdim, axis_size)`` reduces the mapped axis.
    ``axis_params`` name the params that are positional axes of the operand."""
    p = Primitive(name)

    def impl(*args, axis_name, **params):
        raise _unbound(axis_name)
    p.def_impl(impl)
    p.def_abstract_eval(out_rule)
    p.collective = reduce_fn

    if axis_params:
        p.batch = _lanewise_shifted(p, axis_params)
    else:
        def elementwise_batch(axis_size, vals, dims, **params):
            # a collective over another (outer) axis acts lane by lane on this one
            return p.bind(*vals, **params), dims[0]
        p.batch = elementwise_batch
    def_lowering(p, _unbound_lowering)
    p.opaque_params = ("axis_name",)
    return p


def _unbound_lowering(args, axis_name, **_):
    # Only a jaxpr built by hand (or compiled before the vmap that binds the
    # name batches it) reaches here: the API functions check the name when
    # traced.  The name is the user's object: bound by name, never written.
    return Source("_unbound_axis({})", Const(axis_name))


def _lanewise_shifted(p, axis_params):
    """Batch rule of a collective over another axis whose params are positional
    axes (all_gather's ``axis``, ...): lane by lane, with the batch axis first
    and those params shifted past it."""
    def rule(lanes, vals, dims, **params):    # (params may hold an ``axis_size``)
        x = batching.moveaxis(vals[0], dims[0], 0)
        params = {k: (v + 1 if k in axis_params else v) for k, v in params.items()}
        return p.bind(x, **params), 0
    return rule


def _psum_reduce(x, d, size, **params):
    from fungrad import lax
    if d is None:
        return lax.mul(x, np.asarray(size, get_aval(x).dtype)), None
    return lax.reduce_sum(x, (d,)), None


def _pmax_reduce(x, d, size, **params):
    from fungrad import lax
    return (x, None) if d is None else (lax.reduce_max(x, (d,)), None)


def _pmin_reduce(x, d, size, **params):
    from fungrad import lax
    return (x, None) if d is None else (lax.reduce_min(x, (d,)), None)


psum_p = _collective("psum", _psum_reduce)
deflinear(psum_p, lambda ct, x, axis_name: [psum_p.bind(ct, axis_name=axis_name)])
pmax_p = _collective("pmax", _pmax_reduce)
pmax_p.keeps_finite = True
pmin_p = _collective("pmin", _pmin_reduce)
pmin_p.keeps_finite = True


def _extremum_jvp(prim):
    # d pmax: the tangent of the lane(s) holding the max, split equally on ties
    def jvp(primals, tangents, axis_name):
        from fungrad import lax
        from fungrad.interpreters.ad import instantiate_zeros
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis_name=axis_name)
        hit = lax.convert_element_type(lax.eq(x, ans), get_aval(x).dtype)
        count = psum_p.bind(hit, axis_name=axis_name)
        t_out = psum_p.bind(lax.mul(instantiate_zeros(t), lax.div(hit, count)), axis_name=axis_name)
        return ans, t_out
    prim.jvp = jvp


_extremum_jvp(pmax_p)
_extremum_jvp(pmin_p)


def _all_gather_reduce(x, d, size, axis, tiled, axis_size):
    from fungrad import lax
    x = batching.bdim_at_front(x, d, size)
    x = batching.moveaxis(x, 0, axis)
    if tiled:
        shape = get_aval(x).shape
        x = lax.reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
    return x, None


def _all_gather_shape(x, axis_name, axis, tiled, axis_size):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype)


all_gather_p = _collective("all_gather", _all_gather_reduce, _all_gather_shape, ("axis",))
all_gather_p.keeps_finite = True


def _all_gather_transpose(ct, x, axis_name, axis, tiled, axis_size):
    # the transpose of gathering every lane's value is summing the cotangent
    # slices across lanes and keeping this lane's own slice
    from fungrad import lax
    total = psum_p.bind(ct, axis_name=axis_name)
    idx = axis_index(axis_name)
    size = x.aval.shape[axis] if tiled else 1
    start = [0] * len(get_aval(total).shape)
    start[axis] = lax.mul(idx, size) if tiled else idx
    sizes = list(get_aval(total).shape)
    sizes[axis] = size
    piece = lax.dynamic_slice(total, start, sizes)
    return [piece if tiled else lax.squeeze(piece, (axis,))]


deflinear(all_gather_p, _all_gather_transpose)


def _axis_index_reduce(size, dtype):
    from fungrad import lax
    return lax.iota(np.dtype(dtype), size), 0


axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(lambda axis_name: (_ for _ in ()).throw(_unbound(axis_name)))
axis_index_p.def_abstract_eval(lambda axis_name: ShapedArray((), np.int64))
axis_index_p.collective = lambda size, axis_name: _axis_index_reduce(size, np.int64)
axis_index_p.batch = lambda axis_size, vals, dims, axis_name: (axis_index_p.bind(axis_name=axis_name), None)
defjvp_zero(axis_index_p)
def_lowering(axis_index_p, _unbound_lowering)
axis_index_p.opaque_params = ("axis_name",)


# ----------------------------------------------------------------------------
# psum_scatter: the sum across lanes, lane i keeping chunk i of one axis
# ----------------------------------------------------------------------------

def _psum_scatter_reduce(x, d, size, scatter_dimension, tiled, axis_size):
    from fungrad import lax
    total, _ = _psum_reduce(x, d, size)
    if tiled:   # split the scattered axis into (lanes, chunk)
        shape = get_aval(total).shape
        sd = scatter_dimension
        total = lax.reshape(total, shape[:sd] + (size, shape[sd] // size) + shape[sd + 1:])
    return total, scatter_dimension


def _psum_scatter_shape(x, axis_name, scatter_dimension, tiled, axis_size):
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype)


psum_scatter_p = _collective("psum_scatter", _psum_scatter_reduce, _psum_scatter_shape,
                             ("scatter_dimension",))
deflinear(psum_scatter_p, lambda ct, x, axis_name, scatter_dimension, tiled, axis_size: [
    all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
                      axis_size=axis_size)])


# ----------------------------------------------------------------------------
# ppermute: lane ``dst`` receives lane ``src``'s value for each (src, dst) pair
# ----------------------------------------------------------------------------

def _ppermute_reduce(x, d, size, perm):
    from fungrad import lax
    x = batching.bdim_at_front(x, d, size)
    source_of = {dst: src for src, dst in perm}
    shape = get_aval(x).shape
    zeros = None
    pieces = []
    for dst in range(size):
        if dst in source_of:
            pieces.append(lax.slice_in_dim(x, source_of[dst], source_of[dst] + 1, axis=0))
        else:   # lanes no pair sends to receive zeros, as in JAX
            zeros = lax.full((1,) + shape[1:], 0, get_aval(x).dtype) if zeros is None else zeros
            pieces.append(zeros)
    return (pieces[0] if size == 1 else lax.concatenate(pieces, 0)), 0


ppermute_p = _collective("ppermute", _ppermute_reduce)
ppermute_p.keeps_finite = True
deflinear(ppermute_p, lambda ct, x, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((dst, src) for src, dst in perm))])


# ----------------------------------------------------------------------------
# all_to_all (tiled): lane i's result concatenates chunk i of every lane's value
# ----------------------------------------------------------------------------

def _all_to_all_reduce(x, d, size, split_axis, concat_axis, axis_size):
    from fungrad import lax
    x = batching.bdim_at_front(x, d, size)          # (source lane j, ...)
    shape = get_aval(x).shape
    s = split_axis + 1
    x = lax.reshape(x, shape[:s] + (size, shape[s] // size) + shape[s + 1:])
    x = batching.moveaxis(x, s, 0)                  # (destination lane i, j, ...)
    c = concat_axis + 2                             # the concat axis, per lane, after (i, j)
    x = batching.moveaxis(x, 1, c - 1)              # j just before the concat axis
    shape = get_aval(x).shape
    x = lax.reshape(x, shape[:c - 1] + (shape[c - 1] * shape[c],) + shape[c + 1:])
    return x, 0


def _all_to_all_shape(x, axis_name, split_axis, concat_axis, axis_size):
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return ShapedArray(tuple(shape), x.dtype)


all_to_all_p = _collective("all_to_all", _all_to_all_reduce, _all_to_all_shape,
                           ("split_axis", "concat_axis"))
all_to_all_p.keeps_finite = True
deflinear(all_to_all_p, lambda ct, x, axis_name, split_axis, concat_axis, axis_size: [
    all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis,
                      axis_size=axis_size)])


# ----------------------------------------------------------------------------
# The API (pytrees; an axis_name may be a tuple of names)
# ----------------------------------------------------------------------------

def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _single_name(axis_name, who: str):
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"lax.{who} over several axes at once ({axis_name!r}) is not "
                                  f"supported; apply it over one axis name at a time")
    return names[0]


def _over_names(prim, x, axis_name):
    from fungrad.tree_util import tree_map

    names = _names(axis_name)
    for name in names:          # unbound: NameError now, as JAX, naming the axis
        _one_axis_size(name)

    def one(v):
        v = as_operand(v)
        for name in reversed(names):
            v = prim.bind(v, axis_name=name)
        return v
    return tree_map(one, x)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over the lanes of the named axis (pytrees allowed)."""
    _no_groups(axis_index_groups, "psum")
    return _over_names(psum_p, x, axis_name)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the lanes of the named axis."""
    _no_groups(axis_index_groups, "pmean")
    from fungrad.tree_util import tree_map
    from fungrad import lax
    n = axis_size(axis_name)
    return tree_map(lambda v: lax.div(v, np.asarray(n, get_aval(v).dtype)), psum(x, axis_name))


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` over the lanes of the named axis."""
    _no_groups(axis_index_groups, "pmax")
    return _over_names(pmax_p, x, axis_name)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` over the lanes of the named axis."""
    _no_groups(axis_index_groups, "pmin")
    return _over_names(pmin_p, x, axis_name)


def all_gather(x, axis_name, *, axis=0, tiled=False, axis_index_groups=None):
    """Every lane's ``x`` stacked along ``axis`` (concatenated if ``tiled``); over a
    tuple of names the lanes are ordered with the first name major, as in JAX."""
    from fungrad.tree_util import tree_map
    _no_groups(axis_index_groups, "all_gather")
    names = _names(axis_name)

    def gather(v):
        v = as_operand(v)
        ndim = get_aval(v).ndim
        ax = axis % (ndim + (0 if tiled else 1)) if ndim or not tiled else 0
        for name in reversed(names):       # minor name first: its lanes vary fastest
            v = _gather_one(v, name, ax, tiled, names)
        return v
    return tree_map(gather, x)


def _gather_one(v, name, ax, tiled, names):
    # the innermost (last) name stacks a new axis unless tiled; outer names then
    # tile along it, so the combined lane index is major-to-minor in ``names``
    inner = name == names[-1]
    return all_gather_p.bind(v, axis_name=name, axis=ax, tiled=tiled or not inner,
                             axis_size=axis_size(name))


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """``psum`` whose result is split along ``scatter_dimension``: lane i keeps the
    i-th chunk (the axis is removed unless ``tiled``, as in JAX)."""
    from fungrad.tree_util import tree_map
    _no_groups(axis_index_groups, "psum_scatter")
    name = _single_name(axis_name, "psum_scatter")
    n = axis_size(name)

    def one(v):
        v = as_operand(v)
        shape = get_aval(v).shape
        sd = _check_axis(scatter_dimension, len(shape), "psum_scatter", "scatter_dimension")
        if tiled and shape[sd] % n:
            raise ValueError(f"psum_scatter(tiled=True): dimension {sd} of size {shape[sd]} is "
                             f"not divisible by the size {n} of axis {name!r}")
        if not tiled and shape[sd] != n:
            raise ValueError(f"psum_scatter: dimension {sd} (scatter_dimension) has size "
                             f"{shape[sd]} but axis {name!r} has size {n}; they must be equal "
                             "(or pass tiled=True to split it into chunks)")
        return psum_scatter_p.bind(v, axis_name=name, scatter_dimension=sd, tiled=bool(tiled),
                                   axis_size=n)
    return tree_map(one, x)


def ppermute(x, axis_name, perm):
    """Send each lane's ``x`` along the (source, destination) pairs of ``perm``;
    lanes that receive nothing get zeros."""
    from fungrad.tree_util import tree_map
    name = _single_name(axis_name, "ppermute")
    n = axis_size(name)
    perm = tuple((int(s), int(d)) for s, d in perm)
    for src, dst in perm:
        if not (0 <= src < n and 0 <= dst < n):
            raise ValueError(f"ppermute: pair ({src}, {dst}) of perm is out of range for axis "
                             f"{name!r} of size {n}")
    if len({s for s, _ in perm}) < len(perm) or len({d for _, d in perm}) < len(perm):
        raise ValueError(f"ppermute: perm {perm} must not repeat a source or a destination")
    return tree_map(lambda v: ppermute_p.bind(as_operand(v), axis_name=name, perm=perm), x)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``split_axis`` into one chunk per lane, send chunk j to lane j, and
    concatenate what arrives along ``concat_axis`` (JAX's semantics: without
    ``tiled`` the split axis must have the axis size and is replaced by a new
    axis at ``concat_axis``)."""
    from fungrad.tree_util import tree_map
    from fungrad import lax
    _no_groups(axis_index_groups, "all_to_all")
    name = _single_name(axis_name, "all_to_all")
    n = axis_size(name)

    def one(v):
        v = as_operand(v)
        ndim = get_aval(v).ndim
        split = _check_axis(split_axis, ndim, "all_to_all", "split_axis")
        size = get_aval(v).shape[split]
        if tiled:
            concat = _check_axis(concat_axis, ndim, "all_to_all", "concat_axis")
            if size % n:
                raise ValueError(f"all_to_all(tiled=True): split_axis {split} of size {size} is "
                                 f"not divisible by the size {n} of axis {name!r}")
            return all_to_all_p.bind(v, axis_name=name, split_axis=split, concat_axis=concat,
                                     axis_size=n)
        concat = _check_axis(concat_axis, ndim, "all_to_all", "concat_axis")
        if size != n:
            raise ValueError(f"all_to_all: split_axis {split} has size {size} but axis {name!r} "
                             f"has size {n}; they must be equal (or pass tiled=True)")
        # as a tiled exchange: a size-1 axis at concat_axis (in the output's
        # coordinates) receives the lanes, and the split axis (chunks of 1) goes
        if split < concat:
            concat += 1
        elif split > concat:
            split += 1
        if split != concat:
            v = lax.expand_dims(v, (concat,))
        out = all_to_all_p.bind(v, axis_name=name, split_axis=split, concat_axis=concat,
                                axis_size=n)
        return out if split == concat else lax.squeeze(out, (split,))
    return tree_map(one, x)


def _check_axis(axis, ndim, who, what):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{who}: {what}={axis} is out of bounds for an operand of rank {ndim}")
    return axis % ndim


def _no_groups(groups, who):
    if groups is not None:
        raise NotImplementedError(f"lax.{who}: axis_index_groups is not supported")


def pshuffle(x, axis_name, perm):
    """``ppermute`` with the permutation given by sources: lane i receives lane
    ``perm[i]``'s value (``jax.lax.pshuffle``)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: perm {perm} is not a permutation of 0..{len(perm) - 1}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with the positional ``axis`` of ``x``, whose size must
    be the axis size (``jax.lax.pswapaxes``: ``all_to_all`` with split and
    concatenation along ``axis``)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pbroadcast(x, axis_name, source):
    """Every lane gets lane ``source``'s value (``jax.lax.pbroadcast``): a ``psum``
    of the value masked to that lane."""
    from fungrad.tree_util import tree_map
    from fungrad import lax
    name = _single_name(axis_name, "pbroadcast")
    source = int(source)
    if not 0 <= source < axis_size(name):
        raise ValueError(f"pbroadcast: source {source} is out of range for axis {name!r} of "
                         f"size {axis_size(name)}")
    mine = lax.eq(axis_index(name), np.asarray(source, np.int64))

    def one(v):
        v = as_operand(v)
        return psum(lax.select(lax.broadcast_in_dim(mine, get_aval(v).shape, ()), v,
                               lax.full_like(v, 0)), name)
    return tree_map(one, x)


# ----------------------------------------------------------------------------
# pvary / pcast(to="varying"): the same value, typed as varying over an axis
# ----------------------------------------------------------------------------
# Inside a shard_map body an invariant value (the same at every position of an
# axis) and a varying one differ only in type: ``check_vma`` refuses to return
# a varying value as replicated.  pvary changes the type, not the value, so it
# is not a collective (nothing crosses positions).  Its transpose passes the
# cotangent through: in fungrad's convention (the one of pmap, see
# docs/jax_coverage.md "Differs") the cotangents of a replicated shard_map
# input are summed over the positions when they leave the body, where JAX's
# check_vma types sum them at the pvary (its transpose is a psum) instead.

pvary_p = Primitive("pvary")
pvary_p.def_impl(lambda x, axis_name: x)
pvary_p.def_abstract_eval(unary_shape_rule)
pvary_p.makes_varying = True          # (shard_map.varying_axes reads this)
pvary_p.batch = lambda axis_size, vals, dims, axis_name: (pvary_p.bind(vals[0], axis_name=axis_name),
                                                          dims[0])
deflinear(pvary_p, lambda ct, x, axis_name: [ct])
def_lowering(pvary_p, lambda args, axis_name: Source(args[0]))
pvary_p.opaque_params = ("axis_name",)


def pvary(x, axis_name):
    """``x`` (a pytree), typed as varying over the named axes: the value is
    unchanged (``jax.lax.pvary``)."""
    return _over_names(pvary_p, x, axis_name)


_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x, axis_name, *, to: str):
    """``jax.lax.pcast``: change how ``x`` is typed over the named axes.
    ``to="varying"`` is ``pvary``; fungrad has no reduced/unreduced types, so
    those casts raise ``NotImplementedError``."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast: axis_name must be a str or a tuple of them, got {axis_name!r}")
    if to not in _PCAST_TO:
        raise ValueError(f"pcast: to must be one of {list(_PCAST_TO)}, got {to!r}")
    if not axis_name:
        return x
    if to != "varying":
        raise NotImplementedError(f"pcast(..., to={to!r}): fungrad has no reduced/unreduced "
                                  "types (JAX's explicit-sharding reductions); use psum, or "
                                  "pcast(..., to='varying')")
    return pvary(x, axis_name)


def axis_index(axis_name):
    """This lane's index along the named axis (over a tuple of names: the index
    in the product, first name major)."""
    from fungrad import lax
    idx = None
    for name in _names(axis_name):
        _one_axis_size(name)      # unbound: NameError now, naming the axis
        i = axis_index_p.bind(axis_name=name)
        idx = i if idx is None else lax.add(lax.mul(idx, np.int64(axis_size(name))), i)
    return idx


def axis_size(axis_name) -> int:
    """The number of lanes of the named axis (the product over a tuple of names)."""
    size = 1
    for name in _names(axis_name):
        size *= _one_axis_size(name)
    return size


def _one_axis_size(name) -> int:
    for trace in batching.enclosing_batch_traces():
        if trace.axis_name == name:
            return trace.axis_size
    size = batching.manual_axis_size(name)
    if size is None:
        raise _unbound(name)
    return size
