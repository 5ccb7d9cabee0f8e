"""Indexing primitives: gather in NumPy's terms (the scatters: lax/scatters.py), dynamic slices.

**Our gather/scatter are not XLA's.**  JAX's ``lax.gather``/``lax.scatter``
take ``GatherDimensionNumbers``/``ScatterDimensionNumbers`` (XLA's general
window gather).  fungrad targets NumPy, so its gather *is* NumPy indexing:

    lax.gather(x, (slice(None), i, None, 2))       ==  x[:, i, None, 2]
    lax.scatter_add(x, (i, j), u)                  ==  np.add.at(x.copy(), (i, j), u)

The index is a NumPy index tuple of Python ints, slices (static bounds),
``None``, ``Ellipsis`` and integer arrays (or traced integer arrays); the
result follows NumPy's advanced-indexing rules exactly, including where the
advanced-index dimensions land when slices separate them.  The primitives
record the index statically as an *indexer* (a hashable tuple with one entry
per index item) and take the integer arrays as operands:

    ("int", i)                  a static integer, 0 <= i < size
    ("slice", start, stop, step) a slice with normalised bounds (stop None:
                                 "past the front" for a negative step)
    ("array", k)                the k-th integer-array operand
    ("none",)                   ``np.newaxis``

Out-of-bounds indices, as JAX: negative array indices wrap once (``-1`` is the
last element); then gather *clamps* into range (``mode="clip"``, the default)
or returns ``fill_value`` (``mode="fill"``, NaN for floats by default), and
scatters *drop* out-of-bounds updates (``mode="drop"``, the default) or clamp
them (``mode="clip"``).  Static integer entries out of bounds raise IndexError
at trace time (JAX would clamp them silently; a static out-of-bounds index is
always a bug).

Scatter updates must have exactly the shape of ``x[index]``; the public
functions broadcast them first (NumPy assignment semantics).  Repeated
indices accumulate in scatter_add/mul/min/max (``np.ufunc.at`` semantics); in
``scatter`` (set) one of the duplicates wins and only that update receives a
cotangent.

Derivatives: gather is linear in the operand (transpose: scatter_add into
zeros); scatter_add is linear in operand and updates (transpose: the
cotangent and a gather of it); scatter (set) is linear in both, its update
cotangent masked to the winning updates; scatter_mul is linear in the
operand and differentiable in the updates, repeated indices included (each
update's tangent is scaled by the product of the others at its position);
scatter_min/max split the tangent equally among tied winners, like
``max``/``min``.  Batching adds the batch axis as one more index (a slice, or
an ``arange`` array when indices are batched), never a Python loop.
"""
from __future__ import annotations

import operator

import numpy as np

from fungrad._dtype_classes import iinfo as dtype_iinfo, is_inexact, is_integer, issubdtype as dtype_issubdtype
from fungrad.core import (Primitive, ShapedArray, Tracer, get_aval, operand_weak_type,
                          scalar_dtype, standard_weak_type)
from fungrad.interpreters import batching
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal, tangent_aval
from fungrad.interpreters.lowering import Source
from fungrad.lax.utils import canonical_axes, checked_bind, def_lowering, as_operand
from fungrad.lax import indexing_numba, structural
from fungrad.lax.xla_scatter import ScatterDimensionNumbers, GatherScatterMode, mode_name

__all__ = [
    "gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
    "scatter_max", "scatter_apply", "index_take", "dynamic_slice", "dynamic_update_slice", "dynamic_index_in_dim",
    "dynamic_slice_in_dim", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
    "index_in_dim", "slice_in_dim", "ScatterDimensionNumbers", "GatherScatterMode",
    "gather_p", "scatter_p", "scatter_add_p", "scatter_mul_p", "scatter_min_p",
    "scatter_max_p", "dynamic_slice_p", "dynamic_update_slice_p",
]

_SLICE_ALL = ("slice", 0, None, 1)   # stop None with step 1 never occurs otherwise


# ----------------------------------------------------------------------------
# Indexers: the static description of a NumPy index tuple
# ----------------------------------------------------------------------------

def _is_int_array_value(x) -> bool:
    return is_integer(get_aval(x).dtype)


def build_indexer(shape, index, who="indexing"):
    """``(indexer, arrays)`` for the NumPy index ``index`` of an array of ``shape``.

    ``index`` may contain ints, slices, None, one Ellipsis and integer arrays
    or tracers (boolean masks must be converted with ``nonzero`` first).
    """
    items = index if isinstance(index, tuple) else (index,)
    n_ellipsis = sum(1 for it in items if it is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError(f"{who}: an index can only have a single ellipsis ('...'), got {index!r}")
    consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consuming > len(shape):
        raise IndexError(f"{who}: too many indices for an array of shape {shape}: "
                         f"{consuming} were indexed")
    indexer, arrays, dim = [], [], 0
    for it in items:
        if it is Ellipsis:
            for _ in range(len(shape) - consuming):
                indexer.append(_SLICE_ALL)
                dim += 1
        elif it is None:
            indexer.append(("none",))
        elif isinstance(it, slice):
            indexer.append(_normalize_slice(it, shape[dim], who))
            dim += 1
        elif _is_static_int(it):
            indexer.append(("int", _normalize_int(int(it), shape[dim], dim, who)))
            dim += 1
        else:
            if not _is_int_array_value(it):
                raise IndexError(f"{who}: index arrays must be integers, got "
                                 f"{get_aval(it).dtype.name} (turn a boolean mask into "
                                 "integer arrays with fungrad.numpy.nonzero first)")
            indexer.append(("array", len(arrays)))
            arrays.append(it if isinstance(it, (Tracer, np.ndarray)) else np.asarray(it))
            dim += 1
    indexer.extend([_SLICE_ALL] * (len(shape) - dim))
    return tuple(indexer), arrays


def _is_static_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _normalize_int(i, size, dim, who):
    if not -size <= i < size:
        raise IndexError(f"{who}: index {i} is out of bounds for axis {dim} with size {size}")
    return i % size


def _normalize_slice(s, size, who):
    for part in (s.start, s.stop, s.step):
        if part is not None and not _is_static_int(part):
            raise IndexError(
                f"{who}: slice bounds must be static integers or None, got {s!r}. "
                "For a traced start use lax.dynamic_slice (a traced size is "
                "impossible: shapes must be static).")
    if s.step == 0:
        raise ValueError(f"{who}: slice step cannot be zero")
    start, stop, step = s.indices(size)
    return ("slice", start, None if stop < 0 else stop, step)


def _slice_length(entry, size=None):
    _, start, stop, step = entry
    if entry == _SLICE_ALL:
        return size
    return len(range(start, -1 if stop is None else stop, step))


def _as_py_slice(entry):
    _, start, stop, step = entry
    return slice(None) if entry == _SLICE_ALL else slice(start, stop, step)


def _array_dims(indexer):
    """Operand dimension indexed by each array operand, in operand order."""
    dims, dim = {}, 0
    for e in indexer:
        if e[0] == "array":
            dims[e[1]] = dim
        if e[0] != "none":
            dim += 1
    return [dims[k] for k in range(len(dims))]


def output_layout(indexer, index_shapes, operand_shape):
    """The origin of each output dimension and the output shape of ``x[indexer]``.

    An origin is ``("adv", j)`` (j-th dim of the broadcast advanced indices) or
    ``("basic", p)`` (the slice or None at position p of the indexer).  NumPy's
    rule: advanced indices (arrays, and ints when arrays are present) that are
    next to each other put their dims where they stand; separated ones (by a
    slice or None) put them first.
    """
    has_arrays = any(e[0] == "array" for e in indexer)
    adv_pos = [p for p, e in enumerate(indexer)
               if e[0] == "array" or (has_arrays and e[0] == "int")]
    adv_shape = tuple(np.broadcast_shapes(*index_shapes)) if has_arrays else ()
    adv = [(("adv", j), n) for j, n in enumerate(adv_shape)]
    basic, dim = [], 0
    for p, e in enumerate(indexer):
        if e[0] == "slice":
            basic.append((p, (("basic", p), _slice_length(e, operand_shape[dim]))))
        elif e[0] == "none":
            basic.append((p, (("basic", p), 1)))
        if e[0] != "none":
            dim += 1
    if not adv_pos:
        dims = [d for _, d in basic]
    elif adv_pos[-1] - adv_pos[0] + 1 == len(adv_pos):     # adjacent: in place
        dims = ([d for p, d in basic if p < adv_pos[0]] + adv
                + [d for p, d in basic if p > adv_pos[0]])
    else:                                                   # separated: in front
        dims = adv + [d for _, d in basic]
    return [o for o, _ in dims], tuple(n for _, n in dims)


def _check_indexer(who, operand, indexer, index_avals):
    n_consuming = sum(1 for e in indexer if e[0] != "none")
    if n_consuming != operand.ndim:
        raise TypeError(f"{who}: the indexer {indexer} indexes {n_consuming} dimensions "
                        f"but the operand has shape {operand.shape}")
    for a in index_avals:
        if not is_integer(a.dtype):
            raise TypeError(f"{who}: index arrays must be integers, got {a.dtype.name}")
    dim = 0
    for e in indexer:
        if e[0] == "int" and not 0 <= e[1] < operand.shape[dim]:
            raise IndexError(f"{who}: index {e[1]} out of bounds for axis {dim} of "
                             f"shape {operand.shape}")
        dim += e[0] != "none"
    try:
        return output_layout(indexer, [a.shape for a in index_avals], operand.shape)
    except ValueError:
        raise IndexError(f"{who}: shape mismatch: index arrays of shapes "
                         f"{[a.shape for a in index_avals]} could not be broadcast "
                         "together") from None


# ----------------------------------------------------------------------------
# Index arithmetic shared by the NumPy implementations
# ----------------------------------------------------------------------------

def _wrapped(indices, shape, indexer):
    """Index arrays with negative entries wrapped once (``-1`` -> ``size-1``)."""
    out = []
    for i, d in zip(indices, _array_dims(indexer)):
        i = np.asarray(i)
        out.append(np.where(i < 0, i + shape[d], i))
    return out


def _in_bounds(wrapped, shape, indexer):
    """Per index array: which entries are inside their dimension."""
    return [(w >= 0) & (w < shape[d]) for w, d in zip(wrapped, _array_dims(indexer))]


def _numpy_index(indexer, arrays):
    return tuple(arrays[e[1]] if e[0] == "array" else e[1] if e[0] == "int"
                 else None if e[0] == "none" else _as_py_slice(e) for e in indexer)


def _adv_mask_in_output(masks, indexer, index_shapes, operand_shape):
    """The broadcast validity of the advanced indices, shaped to broadcast
    against the output (advanced dims always form one block there)."""
    layout, _ = output_layout(indexer, index_shapes, operand_shape)
    valid = np.ones((), bool)
    for m in masks:
        valid = valid & m
    adv_shape = tuple(np.broadcast_shapes(*index_shapes))
    valid = np.broadcast_to(valid, adv_shape)
    shape = [adv_shape[o[1]] if o[0] == "adv" else 1 for o in layout]
    return valid.reshape(shape)


def default_fill_value(dtype):
    """JAX's fill for out-of-bounds gathers: NaN, the minimum int, or True."""
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return np.nan
    if dtype_issubdtype(dtype, np.signedinteger):
        return int(dtype_iinfo(dtype).min)
    if dtype_issubdtype(dtype, np.unsignedinteger):
        return int(dtype_iinfo(dtype).max)
    return True


def flat_positions(shape, indexer, indices, mode):
    """Flat (C-order) operand positions of every element of ``x[indexer]``,
    and for ``mode="drop"`` a mask of the in-bounds ones (else None).

    Each operand dimension's coordinate is read off by indexing a zero-copy
    broadcast ``arange`` view, so nothing operand-sized is allocated."""
    wrapped = _wrapped(indices, shape, indexer)
    drop = mode == "drop"
    arr_dims = _array_dims(indexer)
    ext = list(shape)
    fixed = []
    for w, d in zip(wrapped, arr_dims):
        if drop:      # out-of-bounds entries point at an extra slot past the end
            ext[d] = shape[d] + 1
            fixed.append(np.where((w < 0) | (w >= shape[d]), shape[d], w))
        else:
            fixed.append(np.clip(w, 0, shape[d] - 1))
    index = _numpy_index(indexer, fixed)
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    positions, valid = np.zeros((), np.int64), None
    for d, n in enumerate(ext):
        axis = np.arange(n).reshape([n if k == d else 1 for k in range(len(ext))])
        coord = np.broadcast_to(axis, ext)[index]
        if drop and d in arr_dims:
            ok = coord < shape[d]
            valid = ok if valid is None else valid & ok
            coord = np.minimum(coord, shape[d] - 1)
        positions = positions + coord * strides[d]
    return positions, valid


def _zeros(aval):
    return structural.full(aval.shape, 0, aval.dtype)


# ----------------------------------------------------------------------------
# gather: x[index]
# ----------------------------------------------------------------------------

def _gather_shape(operand, *indices, indexer, mode, fill_value):
    if mode not in ("clip", "fill"):
        raise ValueError(f"gather: mode must be 'clip' or 'fill', got {mode!r}")
    _, shape = _check_indexer("gather", operand, indexer, indices)
    return ShapedArray(shape, operand.dtype)


def _gather_impl(operand, *indices, indexer, mode, fill_value):
    operand = np.asarray(operand)
    shape = operand.shape
    dims = _array_dims(indexer)
    wrapped = _wrapped(indices, shape, indexer)
    fill = fill_value
    if mode == "fill" and fill is None:
        fill = default_fill_value(operand.dtype)
    if any(shape[d] == 0 for d in dims):                   # nothing to gather from
        _, out_shape = output_layout(indexer, [w.shape for w in wrapped], shape)
        return np.full(out_shape, fill if mode == "fill" else 0, operand.dtype)
    clipped = [np.minimum(np.maximum(w, 0), shape[d] - 1) for w, d in zip(wrapped, dims)]
    out = operand[_numpy_index(indexer, clipped)]
    if mode == "fill" and wrapped:
        valid = _adv_mask_in_output(_in_bounds(wrapped, shape, indexer), indexer,
                                    [w.shape for w in wrapped], shape)
        out = np.where(valid, out, np.asarray(fill).astype(operand.dtype))
    return out


def _gather_jvp(primals, tangents, indexer, mode, fill_value):
    operand, *indices = primals
    out = gather_p.bind(operand, *indices, indexer=indexer, mode=mode, fill_value=fill_value)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    # filled positions do not depend on the operand: their tangent is 0
    return out, gather_p.bind(t, *indices, indexer=indexer, mode=mode, fill_value=0)


def _gather_transpose(ct, operand, *indices, indexer, mode, fill_value):
    assert is_undefined_primal(operand) and not any(map(is_undefined_primal, indices))
    zeros = structural.full(operand.aval.shape, 0, operand.aval.dtype)
    ct_operand = scatter_add_p.bind(zeros, *indices, instantiate_zeros(ct), indexer=indexer,
                                    mode="drop" if mode == "fill" else "clip",
                                    unique_indices=False)
    return [ct_operand] + [None] * len(indices)


def _gather_batch(axis_size, vals, dims, indexer, mode, fill_value):
    operand, *indices = vals
    odim, *idims = dims
    new = _batched_index(axis_size, operand, odim, indices, idims, indexer)
    out = gather_p.bind(new.operand, *new.indices, indexer=new.indexer, mode=mode,
                        fill_value=fill_value)
    return _to_front(out, new), 0


gather_p = Primitive("gather")
gather_p.weak_type_rule = operand_weak_type
gather_p.keeps_finite = True
gather_p.def_impl(_gather_impl)
gather_p.def_abstract_eval(_gather_shape)
gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose
gather_p.linear = True
gather_p.batch = _gather_batch


def gather(operand, index, *, mode=None, fill_value=None):
    """``operand[index]`` with NumPy's semantics (see the module docstring;
    this is *not* JAX's XLA-style ``lax.gather``).

    mode: ``"clip"`` (default; also ``"promise_in_bounds"``) clamps
    out-of-bounds array indices; ``"fill"`` (or ``"drop"``) returns
    ``fill_value`` there (NaN for floats, the minimum for ints, by default).
    """
    operand = as_operand(operand)
    indexer, arrays = build_indexer(get_aval(operand).shape, index, "lax.gather")
    mode = _gather_mode(mode)
    if fill_value is not None:
        fill_value = np.asarray(fill_value).astype(get_aval(operand).dtype).item()
    return checked_bind(gather_p, operand, *arrays, indexer=indexer, mode=mode,
                                   fill_value=fill_value)


def _gather_mode(mode):
    mode = mode_name(mode, "gather")
    if mode in (None, "clip", "promise_in_bounds"):
        return "clip"
    if mode in ("fill", "drop"):
        return "fill"
    raise ValueError(f"gather: unknown mode {mode!r}; use 'clip', 'fill', 'drop' or "
                     "'promise_in_bounds'")


# ----------------------------------------------------------------------------
# Batching: the batch axis becomes one more index
# ----------------------------------------------------------------------------

class _BatchedIndex:
    """A batched operand and indices with an indexer that also indexes the
    batch axis; ``to_new``/``from_new`` permute between the layout
    ``(batch, per-example output dims...)`` and the layout the new indexer gives."""
    __slots__ = ("operand", "indices", "indexer", "from_new", "to_new")


def _shift_label(label, adv_shift):
    kind, k = label
    return (kind, k + 1) if kind == "basic" else (kind, k + adv_shift)


def _batched_index(axis_size, operand, odim, indices, idims, indexer):
    """Rewrite ``x[indexer]`` per example as one index of the batched operand.

    Unbatched indices: the operand's batch axis is indexed by a leading full
    slice.  Batched indices: every index array gets the batch axis in front,
    and a batched operand is indexed by an ``arange(axis_size)`` array, so
    example b reads only its own slice of the operand."""
    per_op_shape = get_aval(operand).shape
    if odim is not None:
        per_op_shape = per_op_shape[:odim] + per_op_shape[odim + 1:]
        operand = batching.moveaxis(operand, odim, 0)
    per_shapes = [_unbatched_shape(i, d) for i, d in zip(indices, idims)]
    per_layout, _ = output_layout(indexer, per_shapes, per_op_shape)
    new = _BatchedIndex()
    if all(d is None for d in idims):
        assert odim is not None
        new.indexer, new.indices = (_SLICE_ALL,) + indexer, list(indices)
        batch_label, adv_shift = ("basic", 0), 0
    else:
        rank = max(len(s) for s in per_shapes)
        new.indices = [i if d is None else _batch_first(i, d, rank) for i, d in zip(indices, idims)]
        batch_label, adv_shift = ("adv", 0), 1
        if odim is None:
            new.indexer = indexer
        else:
            batch_index = np.arange(axis_size).reshape((axis_size,) + (1,) * rank)
            new.indexer = (("array", len(indices)),) + indexer
            new.indices.append(batch_index)
    if odim is None:
        # the basic labels of an unchanged indexer keep their positions
        per_layout_new = [(k, p) if k == "basic" else (k, p + adv_shift) for k, p in per_layout]
    else:
        per_layout_new = [_shift_label(l, adv_shift) for l in per_layout]
    new.operand = operand
    new_layout, _ = output_layout(new.indexer, [get_aval(i).shape for i in new.indices],
                                  get_aval(operand).shape)
    target = [batch_label] + per_layout_new
    new.from_new = tuple(new_layout.index(t) for t in target)
    new.to_new = tuple(target.index(t) for t in new_layout)
    return new


def _unbatched_shape(x, d):
    shape = get_aval(x).shape
    return shape if d is None else shape[:d] + shape[d + 1:]


def _batch_first(x, d, rank):
    """A batched index array as ``(B, 1, ..., 1, *shape)`` of rank ``rank + 1``."""
    x = batching.moveaxis(x, d, 0)
    shape = get_aval(x).shape
    return structural.reshape(x, shape[:1] + (1,) * (rank + 1 - len(shape)) + shape[1:])


def _to_front(out, new):
    return structural.transpose(out, new.from_new)


# ----------------------------------------------------------------------------
# index_take: gathers along axes
# ----------------------------------------------------------------------------

def index_take(src, idxs, axes):
    """``src`` at the index vectors ``idxs`` along ``axes`` (``jax.lax.index_take``):
    the result's first axis runs over the index entries, then come ``src``'s
    other axes in order.  Indices wrap modulo the axis size, as JAX's."""
    from fungrad import lax
    src = as_operand(src)
    shape = get_aval(src).shape
    axes = tuple(operator.index(a) for a in axes)
    if len(idxs) != len(axes) or len(set(a % max(len(shape), 1) for a in axes)) != len(axes):
        raise ValueError(f"index_take: one index vector per axis, and distinct axes; got "
                         f"{len(idxs)} index vectors for axes {axes}")
    axes = tuple(canonical_axes("index_take", a, len(shape))[0] for a in axes)
    rest = tuple(d for d in range(len(shape)) if d not in axes)
    moved = structural.transpose(src, axes + rest)
    wrapped = []
    for idx, axis in zip(idxs, axes):
        idx = as_operand(idx)
        if not is_integer(get_aval(idx).dtype):
            raise TypeError(f"index_take: indices must be integers, got "
                            f"{get_aval(idx).dtype.name}")
        size = np.asarray(shape[axis], get_aval(idx).dtype)
        wrapped.append(lax.rem(lax.add(lax.rem(idx, size), size), size))
    return gather(moved, tuple(wrapped))



# ----------------------------------------------------------------------------
# dynamic_slice / dynamic_update_slice: traced start indices, static sizes
# ----------------------------------------------------------------------------
# As JAX: a negative start counts from the end (when allowed), then the start
# is clamped so that the whole window fits inside the operand.

def _clamped_starts(starts, shape, sizes, allow_negative):
    out = []
    for s, n, k, neg in zip(starts, shape, sizes, allow_negative):
        s = int(s)
        s = s + n if neg and s < 0 else s
        out.append(min(max(s, 0), n - k))
    return out


def _traced_clamped_starts(starts, shape, sizes, allow_negative):
    """The same clamping for traced (e.g. batched) starts, as one gather each:
    gather itself wraps a negative index once and clamps into [0, n), so
    reading the table ``min(arange(n), n - k)`` at ``s`` gives the start."""
    out = []
    for s, n, k in zip(starts, shape, sizes):
        dt = get_aval(s).dtype
        if not isinstance(s, Tracer):       # known values: clamp right away
            out.append(np.asarray(_clamped_starts_array(np.asarray(s), n, k)).astype(dt))
            continue
        table = np.minimum(np.arange(n), n - k).astype(dt)
        out.append(gather_p.bind(table, s, indexer=(("array", 0),), mode="clip",
                                 fill_value=None))
    return out


def _clamped_starts_array(s, n, k):
    s = np.where(s < 0, s + n, s)
    return np.clip(s, 0, n - k)


def _check_starts(who, operand, starts, sizes):
    if len(starts) != operand.ndim or len(sizes) != operand.ndim:
        raise TypeError(f"{who}: an operand of shape {operand.shape} needs {operand.ndim} "
                        f"start indices and sizes, got {len(starts)} and {len(sizes)}")
    for s in starts:
        if s.ndim != 0 or not is_integer(s.dtype):
            raise TypeError(f"{who}: start indices must be integer scalars, got "
                            f"{s.str_short()}")
    for n, k in zip(operand.shape, sizes):
        if not 0 <= k <= n:
            raise TypeError(f"{who}: slice sizes {tuple(sizes)} must be within the operand "
                            f"shape {operand.shape}")


def _window_indices(starts, sizes, batched, axis_size):
    """Index arrays ``start_d + arange(size_d)`` laid out for one all-array
    gather/scatter; batched starts have shape (B,) and lead the result."""
    from fungrad import lax
    nd, arrays = len(sizes), []
    for d, (s, k) in enumerate(zip(starts, sizes)):
        ramp = np.arange(k).reshape([k if j == d else 1 for j in range(nd)])
        if batched[d]:
            s = structural.reshape(s, (axis_size,) + (1,) * nd)
            ramp = ramp.astype(get_aval(s).dtype)[None]
        else:
            ramp = ramp.astype(get_aval(s).dtype)
        arrays.append(lax.add(s, ramp))
    return arrays


def _ds_starts_batched(axis_size, operand, odim, starts, sdims, sizes, allow_negative):
    """(operand with batch first, index arrays, indexer) for a batched window."""
    shape = _unbatched_shape(operand, odim)
    starts = [s if d is None else batching.moveaxis(s, d, 0) for s, d in zip(starts, sdims)]
    starts = _traced_clamped_starts(starts, shape, sizes, allow_negative)
    arrays = _window_indices(starts, sizes, [d is not None for d in sdims], axis_size)
    if odim is not None:
        operand = batching.moveaxis(operand, odim, 0)
        arrays = [np.arange(axis_size).reshape((axis_size,) + (1,) * len(sizes))] + arrays
    indexer = tuple(("array", k) for k in range(len(arrays)))
    return operand, arrays, indexer


# --- dynamic_slice ---------------------------------------------------------------

def _dynamic_slice_shape(operand, *starts, slice_sizes, allow_negative):
    _check_starts("lax.dynamic_slice", operand, starts, slice_sizes)
    return ShapedArray(slice_sizes, operand.dtype)


def _dynamic_slice_impl(operand, *starts, slice_sizes, allow_negative):
    starts = _clamped_starts(starts, np.shape(operand), slice_sizes, allow_negative)
    return np.asarray(operand)[tuple(slice(s, s + k) for s, k in zip(starts, slice_sizes))]


def _dynamic_slice_jvp(primals, tangents, **params):
    out = dynamic_slice_p.bind(*primals, **params)
    if type(tangents[0]) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, dynamic_slice_p.bind(tangents[0], *primals[1:], **params)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes, allow_negative):
    zeros = _zeros(operand.aval)
    return [dynamic_update_slice_p.bind(zeros, instantiate_zeros(ct), *starts,
                                        allow_negative=allow_negative)] + [None] * len(starts)


def _dynamic_slice_batch(axis_size, vals, dims, slice_sizes, allow_negative):
    operand, *starts = vals
    odim, *sdims = dims
    if all(d is None for d in sdims):
        operand = batching.moveaxis(operand, odim, 0)
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int64)
        return dynamic_slice_p.bind(operand, zero, *starts,
                                    slice_sizes=(axis_size,) + slice_sizes,
                                    allow_negative=(False,) + allow_negative), 0
    operand, arrays, indexer = _ds_starts_batched(axis_size, operand, odim, starts, sdims,
                                                  slice_sizes, allow_negative)
    return gather_p.bind(operand, *arrays, indexer=indexer, mode="clip", fill_value=None), 0


def _clamp_src(start, x, d, k, neg):
    wrapped = f"(int({start}) + {x}.shape[{d}] if int({start}) < 0 else int({start}))" if neg \
        else f"int({start})"
    return f"min(max({wrapped}, 0), {x}.shape[{d}] - {k})"


def _dynamic_slice_lowering(args, slice_sizes, allow_negative):
    x, starts = args[0], args[1:]
    if not slice_sizes:
        return Source(f"{x}[()]")
    parts = [f"(lambda _s: slice(_s, _s + {k}))({_clamp_src(s, x, d, k, neg)})"
             for d, (s, k, neg) in enumerate(zip(starts, slice_sizes, allow_negative))]
    return Source(f"{x}[{', '.join(parts)},]")


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.weak_type_rule = operand_weak_type
dynamic_slice_p.keeps_finite = True
dynamic_slice_p.def_impl(_dynamic_slice_impl)
dynamic_slice_p.def_abstract_eval(_dynamic_slice_shape)
dynamic_slice_p.jvp = _dynamic_slice_jvp
dynamic_slice_p.transpose = _dynamic_slice_transpose
dynamic_slice_p.linear = True
dynamic_slice_p.batch = _dynamic_slice_batch
def_lowering(dynamic_slice_p, _dynamic_slice_lowering)


def _start_list(who, start_indices, ndim):
    """Start indices as a list of integer scalars (a 1-d array is split)."""
    if isinstance(start_indices, (Tracer, np.ndarray)):
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise TypeError(f"{who}: start_indices must be a sequence of scalars or a "
                            f"1-d array, got shape {aval.shape}")
        start_indices = [structural.reshape(structural.slice(start_indices, (i,), (i + 1,)), ())
                         for i in range(aval.shape[0])]
    # (a Python int becomes a strong integer, as JAX's convert_element_type makes
    # it: dynamic_update_slice's result is weak only when its starts are too)
    starts = [np.asarray(s, scalar_dtype(s)) if type(s) is int else as_operand(s)
              for s in start_indices]
    if len(starts) != ndim:
        raise TypeError(f"{who}: an operand of rank {ndim} needs {ndim} start indices, "
                        f"got {len(starts)}")
    return starts


def _negative_flags(allow_negative_indices, ndim):
    if isinstance(allow_negative_indices, (bool, np.bool_)):
        return (bool(allow_negative_indices),) * ndim
    return tuple(bool(b) for b in allow_negative_indices)


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """``operand[s0:s0+k0, s1:s1+k1, ...]`` with traced starts and static sizes
    (``jax.lax.dynamic_slice``); starts are clamped so the window fits."""
    operand = as_operand(operand)
    ndim = get_aval(operand).ndim
    starts = _start_list("lax.dynamic_slice", start_indices, ndim)
    return checked_bind(
        dynamic_slice_p, operand, *starts, slice_sizes=tuple(int(k) for k in slice_sizes),
        allow_negative=_negative_flags(allow_negative_indices, ndim))


# --- dynamic_update_slice -----------------------------------------------------------

def _dus_shape(operand, update, *starts, allow_negative):
    _check_starts("lax.dynamic_update_slice", operand, starts, update.shape
                  if update.ndim == operand.ndim else (-1,))
    if update.dtype != operand.dtype and not update.weak_type:
        raise TypeError(f"lax.dynamic_update_slice: update dtype {update.dtype.name} differs "
                        f"from the operand dtype {operand.dtype.name}")
    return ShapedArray(operand.shape, operand.dtype)


def _dus_impl(operand, update, *starts, allow_negative):
    out = np.array(operand, copy=True)
    update = np.asarray(update)
    starts = _clamped_starts(starts, out.shape, update.shape, allow_negative)
    out[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
    return out


def _dus_jvp(primals, tangents, allow_negative):
    out = dynamic_update_slice_p.bind(*primals, allow_negative=allow_negative)
    t_op, t_upd = tangents[:2]
    if type(t_op) is Zero and type(t_upd) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, dynamic_update_slice_p.bind(instantiate_zeros(t_op), instantiate_zeros(t_upd),
                                            *primals[2:], allow_negative=allow_negative)


def _dus_transpose(ct, operand, update, *starts, allow_negative):
    sizes = update.aval.shape if is_undefined_primal(update) else get_aval(update).shape
    ct_op = ct_upd = None
    if is_undefined_primal(operand):
        zeros = structural.full(sizes, 0, get_aval(ct).dtype)
        ct_op = dynamic_update_slice_p.bind(ct, zeros, *starts, allow_negative=allow_negative)
    if is_undefined_primal(update):
        ct_upd = dynamic_slice_p.bind(ct, *starts, slice_sizes=sizes,
                                      allow_negative=allow_negative)
    return [ct_op, ct_upd] + [None] * len(starts)


def _dus_batch(axis_size, vals, dims, allow_negative):
    operand, update, *starts = vals
    odim, udim, *sdims = dims
    if all(d is None for d in sdims):
        operand = batching.bdim_at_front(operand, odim, axis_size)
        update = batching.bdim_at_front(update, udim, axis_size)
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int64)
        return dynamic_update_slice_p.bind(operand, update, zero, *starts,
                                           allow_negative=(False,) + allow_negative), 0
    sizes = _unbatched_shape(update, udim)
    operand = batching.bdim_at_front(operand, odim, axis_size)
    operand, arrays, indexer = _ds_starts_batched(axis_size, operand, 0, starts, sdims,
                                                  sizes, allow_negative)
    update = batching.bdim_at_front(update, udim, axis_size)
    return scatter_p.bind(operand, *arrays, update, indexer=indexer, mode="clip",
                          unique_indices=True), 0


def _dus_lowering(args, allow_negative):
    x, u, starts = args[0], args[1], args[2:]
    if not starts:
        return Source(f"np.array({u}, copy=True)")
    parts = [f"(lambda _s: slice(_s, _s + {u}.shape[{d}]))({_clamp_src(s, x, d, f'{u}.shape[{d}]', neg)})"
             for d, (s, neg) in enumerate(zip(starts, allow_negative))]
    return Source(f"(lambda _o: (_o.__setitem__(({', '.join(parts)},), {u}), _o)[1])"
                  f"(np.array({x}, copy=True))")


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.weak_type_rule = standard_weak_type   # (JAX's: starts included)
dynamic_update_slice_p.keeps_finite = True
dynamic_update_slice_p.def_impl(_dus_impl)
dynamic_update_slice_p.def_abstract_eval(_dus_shape)
dynamic_update_slice_p.jvp = _dus_jvp
dynamic_update_slice_p.transpose = _dus_transpose
dynamic_update_slice_p.linear = True
dynamic_update_slice_p.batch = _dus_batch
def_lowering(dynamic_update_slice_p, _dus_lowering)
dynamic_slice_p.numba_block = indexing_numba.dynamic_slice_numba
dynamic_update_slice_p.numba_block = indexing_numba.dynamic_update_slice_numba



def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with the window at ``start_indices`` replaced by ``update``
    (``jax.lax.dynamic_update_slice``); starts are clamped so it fits."""
    operand = as_operand(operand)
    update = as_operand(update, like=operand)
    ndim = get_aval(operand).ndim
    if get_aval(update).ndim != ndim:
        raise TypeError(f"lax.dynamic_update_slice: update of shape {get_aval(update).shape} "
                        f"must have the rank of the operand {get_aval(operand).shape}")
    starts = _start_list("lax.dynamic_update_slice", start_indices, ndim)
    return checked_bind(
        dynamic_update_slice_p, operand, update, *starts,
        allow_negative=_negative_flags(allow_negative_indices, ndim))


# --- convenience wrappers (JAX's names) ---------------------------------------------

def _axis(who, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{who}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    """``operand[..., start:start+slice_size, ...]`` along ``axis``, traced start."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    axis = _axis("lax.dynamic_slice_in_dim", axis, len(shape))
    dt = get_aval(as_operand(start_index)).dtype
    starts = [start_index if d == axis else np.zeros((), dt) for d in range(len(shape))]
    sizes = [slice_size if d == axis else n for d, n in enumerate(shape)]
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """``operand[..., index, ...]`` along ``axis`` with a traced index."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else structural.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    operand = as_operand(operand)
    ndim = get_aval(operand).ndim
    axis = _axis("lax.dynamic_update_slice_in_dim", axis, ndim)
    dt = get_aval(as_operand(start_index)).dtype
    starts = [start_index if d == axis else np.zeros((), dt) for d in range(ndim)]
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    operand = as_operand(operand)
    update = as_operand(update, like=operand)
    ndim = get_aval(operand).ndim
    axis = _axis("lax.dynamic_update_index_in_dim", axis, ndim)
    if get_aval(update).ndim == ndim - 1:
        update = structural.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """``operand[..., start:limit:stride, ...]`` along ``axis`` (static bounds;
    None and negative bounds as in Python)."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    axis = _axis("lax.slice_in_dim", axis, len(shape))
    start, limit, _ = slice(start_index, limit_index).indices(shape[axis])
    limit = max(limit, start)
    starts = [start if d == axis else 0 for d in range(len(shape))]
    limits = [limit if d == axis else n for d, n in enumerate(shape)]
    strides = [stride if d == axis else 1 for d in range(len(shape))]
    return structural.slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """``operand[..., index, ...]`` along ``axis`` (static index, may be negative)."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    axis = _axis("lax.index_in_dim", axis, len(shape))
    index = _normalize_int(int(index), shape[axis], axis, "lax.index_in_dim")
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else structural.squeeze(out, (axis,))


# ----------------------------------------------------------------------------
# Lowerings of gather and scatter (NumPy source for jit)
# ----------------------------------------------------------------------------

def _index_src(x, arrays, indexer, fixed):
    """Source of the NumPy index tuple; ``fixed(a, d)`` gives an array's source."""
    dims, parts, dim = _array_dims(indexer), [], 0
    for e in indexer:
        if e[0] == "array":
            parts.append(fixed(arrays[e[1]], dims[e[1]]))
        elif e[0] == "int":
            parts.append(str(e[1]))
        elif e[0] == "none":
            parts.append("None")
        elif e == _SLICE_ALL:
            parts.append(":")
        else:
            _, start, stop, step = e
            parts.append(f"{start}:{'' if stop is None else stop}:{step}")
        dim += e[0] != "none"
    return f"np.s_[{', '.join(parts)},]" if parts else "()"


def _wrap_src(a, x, d):
    return f"np.where({a} < 0, {a} + {x}.shape[{d}], {a})"


def _adv_block_position(indexer):
    """(basic dims before, basic dims after) the advanced block of the output."""
    layout, _ = output_layout(indexer, [(1,)] * len(_array_dims(indexer)),
                              [1] * sum(e[0] != "none" for e in indexer))
    first = next(i for i, o in enumerate(layout) if o[0] == "adv")
    return first, sum(o[0] == "basic" for o in layout[first:])


def _clip_src(x):
    return lambda a, d: f"np.clip({_wrap_src(a, x, d)}, 0, {x}.shape[{d}] - 1)"


def _valid_src(x, arrays, indexer):
    """Source of the in-bounds mask of the index arrays, shaped to broadcast
    against ``x[index]`` (the advanced dims form one block there)."""
    ok = " & ".join(f"(({_wrap_src(a, x, d)} >= 0) & ({_wrap_src(a, x, d)} < {x}.shape[{d}]))"
                    for a, d in zip(arrays, _array_dims(indexer)))
    before, after = _adv_block_position(indexer)
    shapes = ", ".join(f"np.shape({a})" for a in arrays)
    return (f"(lambda _v: _v.reshape((1,) * {before} + _v.shape + (1,) * {after}))"
            f"(np.broadcast_to({ok}, np.broadcast_shapes({shapes})))")


def _gather_lowering(args, indexer, mode, fill_value):
    x, arrays = args[0], args[1:]
    gathered = f"{x}[{_index_src(x, arrays, indexer, _clip_src(x))}]"
    if mode == "clip" or not arrays:
        return Source(gathered)
    fill = _literal_src(fill_value) if fill_value is not None else (
        f"(np.nan if {x}.dtype.kind in 'fc' else np.iinfo({x}.dtype).min if "
        f"{x}.dtype.kind == 'i' else np.iinfo({x}.dtype).max if {x}.dtype.kind == 'u' "
        "else True)")
    return Source(f"np.where({_valid_src(x, arrays, indexer)}, {gathered}, "
                  f"np.asarray({fill}).astype({x}.dtype))")


def _literal_src(value):
    """Source of a Python scalar; ``nan``/``inf`` are not names in generated code."""
    if isinstance(value, float) and not np.isfinite(value):
        return f"float('{value}')"
    return repr(value)


def_lowering(gather_p, _gather_lowering)
gather_p.numba_block = indexing_numba.gather_numba



# The scatters (lax/scatters.py) were defined here: their names stay importable
# from this module, and gather's transpose and dynamic_update_slice's batching
# bind them (after this import, at call time).
from fungrad.lax.scatters import (  # noqa: E402,F401
    scatter, scatter_add, scatter_sub, scatter_mul, scatter_min, scatter_max, scatter_apply,
    scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p)
