"""Sorting primitives (``sort``, ``top_k``), the gather/scatter-add pair their
derivatives use (``take_along_axis``, ``put_along_axis_add``) and
``searchsorted``; each with all of its rules.

Sorting is a permutation, so derivatives flow through the same permutation:
the JVP of ``sort`` sorts an index array (an iota) along with the operands and
gathers the tangents with it.  The gather is linear; its transpose is the
scatter-add below, whose transpose is the gather again.

Order: ascending, stable, NaNs last (NumPy's and JAX's order); ``top_k`` is
descending, NaNs first, ties in index order.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import is_floating, is_integer
from fungrad.core import (Primitive, ShapedArray, get_aval, operand_weak_type,
                          strip_weak_type_rule)
from fungrad.interpreters import batching
from fungrad.interpreters.ad import Zero, defjvp_zero, tangent_aval, is_undefined_primal
from fungrad.interpreters.lowering import Source, call, dtype_source
from fungrad.lax.kernels import scatter as _scatter_kernels
from fungrad.lax.utils import as_operand, check_choice, checked_bind, def_lowering

__all__ = ["sort", "sort_key_val", "top_k", "approx_max_k", "approx_min_k", "take_along_axis", "put_along_axis_add",
           "searchsorted", "sort_p", "top_k_p", "take_along_axis_p", "put_along_axis_add_p",
           "searchsorted_p"]


def _lax():
    from fungrad import lax  # late: the package imports this module
    return lax


def _check_dimension(name: str, dimension, ndim: int) -> None:
    if not isinstance(dimension, (int, np.integer)) or not 0 <= dimension < ndim:
        raise ValueError(f"{name}: dimension {dimension!r} is out of bounds for operands of "
                         f"rank {ndim}" + ("; sorting needs at least 1-d operands" if ndim == 0
                                           else ""))


def _canonical_dimension(name: str, dimension, ndim: int) -> int:
    dimension = int(dimension)
    if ndim == 0 or not -ndim <= dimension < ndim:
        _check_dimension(name, dimension, ndim)
    return dimension % ndim


def _iota_like(shape, dimension):
    """int64 array of ``shape`` counting 0, 1, ... along ``dimension``."""
    return _lax().broadcasted_iota(np.int64, shape, dimension)


# --- take_along_axis (gather along one axis; linear in the operand) ----------------

def _take_shape(x, indices, axis):
    _check_dimension("take_along_axis", axis, x.ndim)
    if not is_integer(indices.dtype):
        raise TypeError(f"take_along_axis: indices must be integers, got {indices.dtype.name}")
    if indices.ndim != x.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, indices.shape))
                                     if i != axis):
        raise TypeError(f"take_along_axis: indices of shape {indices.shape} must have the "
                        f"operand's shape {x.shape} except along axis {axis}")
    return ShapedArray(indices.shape, x.dtype)


def _take_jvp(primals, tangents, axis):
    (x, indices), (t, _) = primals, tangents
    ans = take_along_axis_p.bind(x, indices, axis=axis)
    if type(t) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, take_along_axis_p.bind(t, indices, axis=axis)


def _take_transpose(ct, x, indices, axis):
    if is_undefined_primal(indices):
        raise TypeError("take_along_axis is not linear in its indices")
    return [put_along_axis_add(ct, indices, axis, x.aval.shape), None]


def _along_axis_batch(prim):
    """Both operands get the batch axis in front (unmapped ones are broadcast)."""
    def rule(axis_size, vals, dims, axis, **params):
        vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
        if "operand_shape" in params:
            params = dict(operand_shape=(axis_size,) + params["operand_shape"])
        return prim.bind(*vals, axis=axis + 1, **params), 0
    prim.batch = rule


take_along_axis_p = Primitive("take_along_axis", linear=True)
take_along_axis_p.keeps_finite = True
# (JAX's take_along_axis is a gather: of its operand's weak type, whatever the
# indices'; put_along_axis_add its transpose, a scatter-add into strong zeros)
take_along_axis_p.weak_type_rule = operand_weak_type
take_along_axis_p.def_impl(lambda x, indices, axis: np.take_along_axis(x, indices, axis=axis))
take_along_axis_p.def_abstract_eval(_take_shape)
take_along_axis_p.jvp = _take_jvp
take_along_axis_p.transpose = _take_transpose
_along_axis_batch(take_along_axis_p)
def_lowering(take_along_axis_p, lambda a, axis: call(np.take_along_axis, a[0], a[1], axis=axis))


def take_along_axis(arr, indices, axis: int):
    """``np.take_along_axis`` for indices shaped like ``arr`` except along ``axis``."""
    arr, indices = as_operand(arr), as_operand(indices)
    axis = _canonical_dimension("take_along_axis", axis, get_aval(arr).ndim)
    return checked_bind(take_along_axis_p, arr, indices, axis=axis)


# --- put_along_axis_add (scatter-add along one axis; linear in the updates) -------

def _put_add_shape(updates, indices, axis, operand_shape):
    _check_dimension("put_along_axis_add", axis, len(operand_shape))
    if updates.shape != indices.shape:
        raise TypeError(f"put_along_axis_add: updates of shape {updates.shape} must have "
                        f"the shape of the indices {indices.shape}")
    _take_shape(ShapedArray(operand_shape, updates.dtype), indices, axis)
    return ShapedArray(operand_shape, updates.dtype)


def _full_index(indices, axis):
    """Index tuple addressing ``out[..., indices[...], ...]`` along ``axis``."""
    grids = list(np.ix_(*[np.arange(n) for n in indices.shape]))
    grids[axis] = indices
    return tuple(grids)


def _put_add_impl(updates, indices, axis, operand_shape):
    out = np.zeros(operand_shape, dtype=updates.dtype)
    return _scatter_kernels.add_at(out, _full_index(indices, axis), updates)  # repeats add up


def _put_add_jvp(primals, tangents, axis, operand_shape):
    (u, indices), (t, _) = primals, tangents
    ans = put_along_axis_add_p.bind(u, indices, axis=axis, operand_shape=operand_shape)
    if type(t) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, put_along_axis_add_p.bind(t, indices, axis=axis, operand_shape=operand_shape)


def _put_add_lowering(args, axis, operand_shape):
    u, i = args
    index = (f"tuple({i} if _k == {axis} else _g for _k, _g in "
             f"enumerate(np.ix_(*[np.arange(_n) for _n in {i}.shape])))")
    return call(_scatter_kernels.add_at, Source(f"np.zeros({operand_shape!r}, dtype={u}.dtype)"),
                Source(index), u)


put_along_axis_add_p = Primitive("put_along_axis_add", linear=True)
put_along_axis_add_p.def_impl(_put_add_impl)
put_along_axis_add_p.weak_type_rule = strip_weak_type_rule
put_along_axis_add_p.def_abstract_eval(_put_add_shape)
put_along_axis_add_p.jvp = _put_add_jvp
put_along_axis_add_p.transpose = lambda ct, u, indices, axis, operand_shape: [
    take_along_axis_p.bind(ct, indices, axis=axis), None]
_along_axis_batch(put_along_axis_add_p)
def_lowering(put_along_axis_add_p, _put_add_lowering)


def put_along_axis_add(updates, indices, axis: int, operand_shape):
    """Zeros of ``operand_shape`` with ``updates`` added at ``indices`` along ``axis``
    (repeated indices accumulate): the transpose of ``take_along_axis``."""
    updates, indices = as_operand(updates), as_operand(indices)
    operand_shape = tuple(int(n) for n in operand_shape)
    axis = _canonical_dimension("put_along_axis_add", axis, len(operand_shape))
    return checked_bind(put_along_axis_add_p, updates, indices, axis=axis, operand_shape=operand_shape)


# --- sort --------------------------------------------------------------------------
# Sorts several same-shaped operands together by the first num_keys of them
# (lexicographically); multiple results, one per operand.

def _sort_permutation(keys, dimension):
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable")
    return np.lexsort(keys[::-1], axis=dimension)   # lexsort: last key is primary


def _sort_impl(*operands, dimension, is_stable, num_keys):
    perm = _sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


def _sort_shape(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise TypeError(f"sort: all operands must have the same shape, got "
                        f"{[o.shape for o in operands]}")
    _check_dimension("sort", dimension, len(shape))
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(operands)})")
    return [ShapedArray(o.shape, o.dtype) for o in operands]


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    iota = _iota_like(shape, dimension)
    *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                              num_keys=num_keys)
    t_outs = [Zero(tangent_aval(get_aval(o))) if type(t) is Zero
              else take_along_axis_p.bind(t, perm, axis=dimension)
              for o, t in zip(outs, tangents)]
    return outs, t_outs


def _sort_batch(axis_size, vals, dims, dimension, **params):
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    return sort_p.bind(*vals, dimension=dimension + 1, **params), [0] * len(vals)


def _sort_lowering(args, dimension, is_stable, num_keys):
    keys = args[:num_keys]
    perm = (f"np.argsort({keys[0]}, axis={dimension}, kind='stable')" if num_keys == 1 else
            f"np.lexsort(({', '.join(reversed(keys))},), axis={dimension})")
    takes = "".join(f"np.take_along_axis({a}, _p, axis={dimension}), " for a in args)
    return Source(f"(lambda _p: ({takes}))({perm})")


sort_p = Primitive("sort", multiple_results=True)
# (JAX's: each output has its operand's type, weak or not: sort's JVP sorts a
# weak operand with a strong iota and keeps the values weak)
sort_p.weak_type_rule = lambda avals, params: [a.weak_type for a in avals]
sort_p.keeps_finite = True
sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_shape)
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch
def_lowering(sort_p, _sort_lowering)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along ``dimension`` (``jax.lax.sort``).  ``operand`` is an array or a
    sequence of same-shaped arrays sorted together by the first ``num_keys``
    (lexicographically); the result has the same structure.  Always stable."""
    single = not isinstance(operand, (tuple, list))
    operands = [as_operand(operand)] if single else [as_operand(o) for o in operand]
    if not operands:
        raise TypeError("lax.sort needs at least one operand")
    dimension = _canonical_dimension("sort", dimension, get_aval(operands[0]).ndim)
    if single and num_keys != 1:
        raise ValueError(f"lax.sort: num_keys={num_keys} but only one operand was given")
    outs = checked_bind(sort_p, *operands, dimension=dimension, is_stable=bool(is_stable),
                       num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
    k, v = sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


# --- top_k ---------------------------------------------------------------------------
# The k largest entries along the last axis, largest first; equal values in
# index order; NaN counts as the largest.  Indices are int32 as in JAX.

def _top_k_permutation(x):
    # a stable ascending sort of the reversed row, reversed back, is descending
    # with ties in index order
    n = x.shape[-1]
    flipped = np.argsort(np.flip(x, -1), axis=-1, kind="stable")
    return np.flip(n - 1 - flipped, -1)


def _top_k_impl(x, k):
    perm = _top_k_permutation(x)[..., :k]
    return [np.take_along_axis(x, perm, axis=-1), perm.astype(np.int32)]


def _top_k_shape(x, k):
    if x.ndim == 0:
        raise TypeError("top_k: the operand must have at least one dimension, got a 0-d array")
    if not isinstance(k, (int, np.integer)) or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k!r} must be an int in [0, {x.shape[-1]}] (the size of "
                         f"the last axis of the operand of shape {x.shape})")
    shape = x.shape[:-1] + (k,)
    return [ShapedArray(shape, x.dtype), ShapedArray(shape, np.int32)]


def _top_k_jvp(primals, tangents, k):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    t_values = take_along_axis_p.bind(t, indices, axis=get_aval(x).ndim - 1)
    return [values, indices], [t_values, Zero(tangent_aval(get_aval(indices)))]


def _top_k_batch(axis_size, vals, dims, k):
    (x,), (d,) = vals, dims   # per-example rank >= 1, so the last axis stays last
    return top_k_p.bind(batching.moveaxis(x, d, 0), k=k), [0, 0]


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.keeps_finite = True
top_k_p.def_impl(_top_k_impl)
top_k_p.def_abstract_eval(_top_k_shape)
top_k_p.jvp = _top_k_jvp
# (JAX's: both outputs are the operand's type updated, the indices weak too)
top_k_p.weak_type_rule = lambda avals, params: [avals[0].weak_type] * 2
top_k_p.batch = _top_k_batch
def_lowering(top_k_p, lambda a, k: Source(
    f"(lambda _p: (np.take_along_axis({a[0]}, _p, axis=-1), _p.astype(np.int32)))"
    f"(np.flip({a[0]}.shape[-1] - 1 - np.argsort(np.flip({a[0]}, -1), axis=-1, "
    f"kind='stable'), -1)[..., :{k}])"))


def top_k(operand, k: int, *, axis: int = -1):
    """``(values, indices)`` of the ``k`` largest entries along ``axis`` (ties: the
    lower index first), as ``jax.lax.top_k``."""
    from fungrad.lax.structural import transpose
    operand = as_operand(operand)
    ndim = get_aval(operand).ndim
    if ndim == 0 or not -ndim <= axis < ndim:
        raise ValueError(f"top_k: axis {axis} is out of range for an operand of rank {ndim}")
    axis %= ndim
    if axis == ndim - 1:
        return tuple(checked_bind(top_k_p, operand, k=int(k)))
    perm = tuple(i for i in range(ndim) if i != axis) + (axis,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    values, indices = checked_bind(top_k_p, transpose(operand, perm), k=int(k))
    return transpose(values, inverse), transpose(indices, inverse)


def _approx_k(who, operand, k, reduction_dimension, largest):
    operand = as_operand(operand)
    aval = get_aval(operand)
    if not is_floating(aval.dtype):
        raise TypeError(f"{who}: operand must be a floating-point array, got "
                        f"{aval.dtype.name}")
    if aval.ndim == 0:
        raise TypeError(f"{who}: operand must have at least one dimension")
    k = int(k)
    size = aval.shape[reduction_dimension % aval.ndim] if -aval.ndim <= reduction_dimension \
        < aval.ndim else None
    if size is None or not 0 < k <= size:
        raise ValueError(f"{who}: need 0 < k <= the size of reduction_dimension "
                         f"{reduction_dimension} of an operand of shape {aval.shape}, got k={k}")
    if largest:
        return top_k(operand, k, axis=reduction_dimension)
    values, indices = top_k(_lax().neg(operand), k, axis=reduction_dimension)
    return _lax().neg(values), indices


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """``(values, indices)`` of the ``k`` largest entries along
    ``reduction_dimension`` (``jax.lax.approx_max_k``).  Exact here: NumPy has no
    approximate top-k, so this is ``top_k`` (sorted, recall 1), whatever
    ``recall_target``, ``reduction_input_size_override`` and
    ``aggregate_to_topk`` say (with ``aggregate_to_topk=False`` JAX may return
    more than ``k``; here always ``k``)."""
    return _approx_k("approx_max_k", operand, k, reduction_dimension, True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """``(values, indices)`` of the ``k`` smallest entries along
    ``reduction_dimension`` (``jax.lax.approx_min_k``), exact (see
    ``approx_max_k``)."""
    return _approx_k("approx_min_k", operand, k, reduction_dimension, False)


# --- searchsorted ------------------------------------------------------------------
# Insertion positions of ``query`` into a sorted 1-d array; integer valued, so
# its derivative is zero.

def _searchsorted_shape(sorted_arr, query, side):
    if sorted_arr.ndim != 1:
        raise ValueError(f"searchsorted: the sorted array must be 1-d, got shape "
                         f"{sorted_arr.shape}")
    check_choice(side, ("left", "right"), "searchsorted", "side")
    if sorted_arr.dtype != query.dtype:
        raise TypeError(f"searchsorted: the sorted array ({sorted_arr.dtype.name}) and the "
                        f"queries ({query.dtype.name}) must have one dtype; convert one of "
                        "them (fungrad.numpy.searchsorted promotes them as NumPy does)")
    return ShapedArray(query.shape, np.int64)


def _searchsorted_batch(axis_size, vals, dims, side):
    (a, q), (da, dq) = vals, dims
    if da is None:
        return searchsorted_p.bind(a, q, side=side), dq
    # a batch of sorted arrays: count the entries before each query instead
    lax = _lax()
    a = batching.moveaxis(a, da, 0)
    q = batching.bdim_at_front(q, dq, axis_size)
    q_rank = get_aval(q).ndim - 1
    a_b = lax.broadcast_in_dim(a, (axis_size,) + get_aval(q).shape[1:] + (get_aval(a).shape[1],),
                               (0, q_rank + 1))
    q_b = lax.expand_dims(q, (q_rank + 1,))
    before = lax.lt(a_b, q_b) if side == "left" else lax.le(a_b, q_b)
    count = lax.reduce_sum(lax.convert_element_type(before, np.int64), (q_rank + 1,))
    return count, 0


searchsorted_p = Primitive("searchsorted", differentiable=False)
searchsorted_p.def_impl(lambda a, q, side: np.asarray(np.searchsorted(a, q, side=side),
                                                      dtype=np.int64))
searchsorted_p.def_abstract_eval(_searchsorted_shape)
defjvp_zero(searchsorted_p)
searchsorted_p.batch = _searchsorted_batch
def_lowering(searchsorted_p, lambda a, side: call(
    np.asarray, call(np.searchsorted, a[0], a[1], side=side), dtype=dtype_source(np.int64)))


def searchsorted(sorted_arr, query, side: str = "left"):
    """Indices where ``query`` would be inserted into the sorted 1-d ``sorted_arr``
    to keep it sorted (``np.searchsorted``); int64."""
    return checked_bind(searchsorted_p, as_operand(sorted_arr), as_operand(query), side=side)
