"""Collectives over a named vmap axis: psum, pmean, pmax, pmin, all_gather, axis_index.

Inside ``vmap(f, axis_name="i")`` these reduce across the mapped axis, as in
JAX.  They are dispatched by axis name (``Primitive.collective``): the batch
trace whose ``axis_name`` matches applies the ``collective`` rule; traces of
other names treat the op as elementwise over their own batch axis.
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import deflinear, defjvp_zero
from fungrad.interpreters.lowering import Source
from fungrad.lax.utils import def_lowering, as_operand, unary_shape_rule

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]


def _unbound(axis_name):
    names = batching.bound_axis_names()
    return NameError(f"unbound axis name: {axis_name!r}. The names bound by enclosing "
                     f"vmaps are {names or 'none'}; pass axis_name={axis_name!r} to the "
                     "vmap this collective should reduce over.")


def _collective(name, reduce_fn, out_rule=unary_shape_rule):
    """A collective: ``reduce_fn(val, bdim, axis_size)`` reduces the mapped axis."""
    p = Primitive(name)

    def impl(*args, axis_name, **params):
        raise _unbound(axis_name)
    p.def_impl(impl)
    p.def_abstract_eval(out_rule)
    p.collective = reduce_fn

    def elementwise_batch(axis_size, vals, dims, **params):
        # a collective over another (outer) axis acts lane by lane on this one
        return p.bind(*vals, **params), dims[0]
    p.batch = elementwise_batch
    def_lowering(p, lambda args, axis_name, **_: Source(f"_unbound_axis({axis_name!r})"))
    return p


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
pmin_p = _collective("pmin", _pmin_reduce)


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


all_gather_p = _collective("all_gather", _all_gather_reduce, _all_gather_shape)


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
def_lowering(axis_index_p, lambda args, axis_name: Source(f"_unbound_axis({axis_name!r})"))


def psum(x, axis_name):
    """Sum of ``x`` over the lanes of the named vmap axis (pytrees allowed)."""
    from fungrad.tree_util import tree_map
    return tree_map(lambda v: psum_p.bind(as_operand(v), axis_name=axis_name), x)


def pmean(x, axis_name):
    from fungrad.tree_util import tree_map
    from fungrad import lax
    n = axis_size(axis_name)
    return tree_map(lambda v: lax.div(psum_p.bind(as_operand(v), axis_name=axis_name),
                                      np.asarray(n, get_aval(v).dtype)), x)


def pmax(x, axis_name):
    from fungrad.tree_util import tree_map
    return tree_map(lambda v: pmax_p.bind(as_operand(v), axis_name=axis_name), x)


def pmin(x, axis_name):
    from fungrad.tree_util import tree_map
    return tree_map(lambda v: pmin_p.bind(as_operand(v), axis_name=axis_name), x)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every lane's ``x`` stacked along ``axis`` (concatenated if ``tiled``)."""
    from fungrad.tree_util import tree_map
    size = axis_size(axis_name)

    def gather(v):
        v = as_operand(v)
        ndim = get_aval(v).ndim
        ax = axis % (ndim + (0 if tiled else 1)) if ndim or not tiled else 0
        return all_gather_p.bind(v, axis_name=axis_name, axis=ax, tiled=tiled, axis_size=size)
    return tree_map(gather, x)


def axis_index(axis_name):
    """This lane's index along the named vmap axis."""
    return axis_index_p.bind(axis_name=axis_name)


def axis_size(axis_name) -> int:
    for trace in batching.enclosing_batch_traces():
        if trace.axis_name == axis_name:
            return trace.axis_size
    raise _unbound(axis_name)
