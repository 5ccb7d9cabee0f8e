"""Structural primitives: they move, copy or reshape data without arithmetic.
All are linear, so each has a transpose rule next to its JVP."""
from __future__ import annotations

import math

import numpy as np

from fungrad.core import Primitive, ShapedArray, get_aval, weak_array
from fungrad.interpreters import batching
from fungrad.interpreters.ad import deflinear, is_undefined_primal
from fungrad.interpreters.lowering import Source, call, dtype_source, value_source
from fungrad.lax.kernels import broadcast as broadcast_kernels
from fungrad.lax.utils import (checked_bind, def_lowering, as_operand, canonical_axes,
                               check_same_dtypes, numba_type)

__all__ = [
    "broadcast_in_dim", "broadcast", "full", "full_like", "reshape", "transpose",
    "squeeze", "expand_dims", "rev", "slice", "pad", "concatenate", "collapse",
    "broadcast_to_rank", "split", "empty", "broadcast_shapes", "stack", "unstack", "tile",
    "broadcast_like", "stage",
    "broadcast_in_dim_p", "reshape_p", "transpose_p", "squeeze_p", "rev_p",
    "slice_p", "pad_p", "concatenate_p",
]

_slice = slice   # this module defines lax.slice; keep Python's builtin at hand


# --- broadcast_in_dim ----------------------------------------------------------
# operand dim i goes to output dim broadcast_dimensions[i]; other dims are new.

def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    expanded = np.reshape(x, _expanded_shape(np.shape(x), shape, broadcast_dimensions))
    return np.broadcast_to(expanded, shape)


def _expanded_shape(in_shape, shape, dims):
    out = [1] * len(shape)
    for i, d in enumerate(dims):
        out[d] = in_shape[i]
    return tuple(out)


def _broadcast_in_dim_shape(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} "
                        f"broadcast_dimensions, got {broadcast_dimensions}")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot be "
                            f"broadcast to {shape} with broadcast_dimensions="
                            f"{broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must be increasing, "
                        f"got {broadcast_dimensions}")
    return ShapedArray(shape, x.dtype)


def _broadcast_in_dim_transpose(ct, x, shape, broadcast_dimensions):
    from fungrad.lax.reductions import reduce_sum
    new_dims = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    ones = tuple(broadcast_dimensions[i] for i, n in enumerate(x.aval.shape)
                 if n == 1 and shape[broadcast_dimensions[i]] != 1)
    summed = reduce_sum(ct, tuple(sorted(new_dims + ones)))
    return [reshape(summed, x.aval.shape) if ones else summed]


def _broadcast_in_dim_batch(axis_size, vals, dims, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return broadcast_in_dim(x, (axis_size,) + tuple(shape),
                            (0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.keeps_finite = True
broadcast_in_dim_p.def_impl(_broadcast_in_dim_impl)
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_shape)
deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.batch = _broadcast_in_dim_batch
broadcast_in_dim_p.forwards_when = lambda params: True      # to its own shape


def _broadcast_in_dim_lower(args, in_avals, shape, broadcast_dimensions):
    (x,), (aval,) = args, in_avals
    expanded = _expanded_shape(aval.shape, shape, broadcast_dimensions)
    if math.prod(shape) <= broadcast_kernels.SMALL:     # (filled: the kernel's docstring)
        if not aval.shape:
            return call(np.full, tuple(shape), x, dtype_source(aval.dtype))
        return call(broadcast_kernels.broadcast_small, x, shape=tuple(shape),
                    expanded=expanded, dtype=dtype_source(aval.dtype))
    if expanded != tuple(aval.shape):
        x = call(np.reshape, x, expanded)
    return call(np.broadcast_to, x, tuple(shape))


def_lowering(broadcast_in_dim_p, _broadcast_in_dim_lower, typed=True)


def _broadcast_in_dim_numba(args, in_avals, out_avals, shape, broadcast_dimensions):
    (x,), (aval,) = args, in_avals
    if out_avals[0].shape == ():          # (a scalar, in a fused loop)
        return x
    if aval.shape == ():
        return f"np.full({value_source(tuple(shape))}, {x}, {numba_type(aval.dtype)})"
    expanded = _expanded_shape(aval.shape, shape, broadcast_dimensions)
    return (f"np.broadcast_to({_numba_reshape(x, aval, expanded)}, "
            f"{value_source(tuple(shape))})")


def _numba_reshape(x, aval, shape) -> str:
    """Source numba compiles for ``x`` (of ``aval``) reshaped to ``shape``
    (shape () values are scalars in compiled code)."""
    if aval.shape == ():
        return f"np.full({value_source(tuple(shape))}, {x}, {numba_type(aval.dtype)})"
    if shape == ():
        return f"{x}.ravel()[0]"
    index = _unit_axes_index(aval.shape, tuple(shape))
    if index is not None:
        # adding or dropping size-1 axes is a view by indexing: no copy of a
        # strided operand (the q, k, v slices of a fused projection, their
        # cotangents going into one concatenate)
        return f"{x}[{', '.join(index)}]"
    return f"np.ascontiguousarray({x}).reshape({value_source(tuple(shape))})"


def _unit_axes_index(in_shape, out_shape):
    """The index (``':'``, ``'0'`` dropping an axis, ``'None'`` adding one)
    taking ``in_shape`` to ``out_shape`` when that only adds or drops axes of
    size 1, else None."""
    index, i, j = [], 0, 0
    while i < len(in_shape) or j < len(out_shape):
        if i < len(in_shape) and j < len(out_shape) and in_shape[i] == out_shape[j]:
            index.append(":")
            i, j = i + 1, j + 1
        elif j < len(out_shape) and out_shape[j] == 1:
            index.append("None")
            j += 1
        elif i < len(in_shape) and in_shape[i] == 1:
            index.append("0")
            i += 1
        else:
            return None
    return index


broadcast_in_dim_p.numba_lowering = _broadcast_in_dim_numba
broadcast_in_dim_p.numba_elementwise = True    # (of a scalar: joins a fused loop)
# in a fused loop nest (interpreters/numba_fusion.py) a broadcast, a reshape that
# only adds or drops size-1 axes and a transpose are reads through another index:
# operand axis -> result axis
broadcast_in_dim_p.numba_axis_map = (
    lambda in_aval, out_aval, shape, broadcast_dimensions, **_: tuple(broadcast_dimensions))


def _size1_axis_map(in_aval, out_aval, **_):
    """Operand axis -> result axis of a reshape that only adds or drops axes of
    size 1 (None for the dropped ones), or None for any other reshape."""
    kept = [j for j, d in enumerate(in_aval.shape) if d != 1]
    placed = [k for k, d in enumerate(out_aval.shape) if d != 1]
    if [in_aval.shape[j] for j in kept] != [out_aval.shape[k] for k in placed]:
        return None
    axis_map = [None] * len(in_aval.shape)
    for j, k in zip(kept, placed):
        axis_map[j] = k
    return tuple(axis_map)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    operand = as_operand(operand)
    shape = tuple(int(s) for s in shape)
    broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
    if get_aval(operand).shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return operand
    return checked_bind(broadcast_in_dim_p, operand, shape=shape,
                                   broadcast_dimensions=broadcast_dimensions)


def broadcast(operand, sizes):
    """Add leading dimensions of the given sizes (``jax.lax.broadcast``)."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    return broadcast_in_dim(operand, sizes + aval.shape,
                            tuple(range(len(sizes), len(sizes) + aval.ndim)))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (``jax.lax.full``);
    as JAX's, weakly typed when ``fill_value`` is and no dtype is given."""
    fill_aval = get_aval(fill_value)
    weak = dtype is None and fill_aval.weak_type
    dtype = np.dtype(dtype) if dtype is not None else fill_aval.dtype
    return broadcast_in_dim(_fill(fill_value, dtype, weak), tuple(shape), ())


def _fill(fill_value, dtype, weak: bool):
    """``fill_value`` as a 0-d value of ``dtype``, weakly typed or not."""
    if isinstance(fill_value, (bool, int, float, complex)):
        return weak_array(fill_value, dtype) if weak else np.asarray(fill_value, dtype)
    from fungrad.lax.selection import convert_weak_type
    return convert_weak_type(fill_value, dtype, weak)


# --- reshape --------------------------------------------------------------------

reshape_p = Primitive("reshape")
reshape_p.keeps_finite = True
reshape_p.def_impl(lambda x, new_sizes: np.reshape(x, new_sizes))


def _reshape_shape(x, new_sizes):
    if math.prod(new_sizes) != math.prod(x.shape):
        raise TypeError(f"reshape: cannot reshape an array of shape {x.shape} "
                        f"(size {x.size}) into shape {new_sizes}")
    return ShapedArray(new_sizes, x.dtype)


def _reshape_batch(axis_size, vals, dims, new_sizes):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return reshape(x, (axis_size,) + tuple(new_sizes)), 0


reshape_p.def_abstract_eval(_reshape_shape)
deflinear(reshape_p, lambda ct, x, new_sizes: [reshape(ct, x.aval.shape)])
reshape_p.batch = _reshape_batch
reshape_p.forwards_when = lambda params: True
def_lowering(reshape_p, lambda a, new_sizes: call(np.reshape, a[0], new_sizes))
reshape_p.numba_lowering = lambda a, in_avals, out_avals, new_sizes: _numba_reshape(
    a[0], in_avals[0], out_avals[0].shape)
reshape_p.numba_axis_map = _size1_axis_map


def reshape(operand, new_sizes, dimensions=None):
    operand = as_operand(operand)
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = tuple(int(s) for s in new_sizes)
    if get_aval(operand).shape == new_sizes:
        return operand
    return checked_bind(reshape_p, operand, new_sizes=new_sizes)


# --- transpose -------------------------------------------------------------------

transpose_p = Primitive("transpose")
transpose_p.keeps_finite = True
transpose_p.def_impl(lambda x, permutation: np.transpose(x, permutation))


def _transpose_shape(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation "
                        f"of the axes of an array of rank {x.ndim}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


def _transpose_batch(axis_size, vals, dims, permutation):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


transpose_p.def_abstract_eval(_transpose_shape)
deflinear(transpose_p, lambda ct, x, permutation:
          [transpose(ct, tuple(np.argsort(permutation).tolist()))])
transpose_p.batch = _transpose_batch
# (the same shape is not enough: a (3, 3) transposed differs)
transpose_p.forwards_when = lambda params: tuple(params["permutation"]) == tuple(
    range(len(params["permutation"])))
def_lowering(transpose_p, lambda a, permutation: call(np.transpose, a[0], permutation))
transpose_p.numba_lowering = lambda a, in_avals, out_avals, permutation: (
    a[0] if len(permutation) < 2 else f"{a[0]}.transpose({value_source(tuple(permutation))})")
transpose_p.numba_axis_map = lambda in_aval, out_aval, permutation: tuple(
    int(k) for k in np.argsort(permutation))


def transpose(operand, permutation):
    operand = as_operand(operand)
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return checked_bind(transpose_p, operand, permutation=permutation)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like ``x`` (its shape and dtype unless given) filled with
    ``fill_value`` (``jax.lax.full_like``)."""
    aval = get_aval(x)
    # as JAX's: weakly typed like ``x`` when no dtype is given (a rule's _ones(x))
    weak = dtype is None and aval.weak_type
    dtype = aval.dtype if dtype is None else np.dtype(dtype)
    return broadcast_in_dim(_fill(fill_value, dtype, weak),
                            aval.shape if shape is None else tuple(shape), ())


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge dimensions ``[start_dimension, stop_dimension)`` into one."""
    shape = get_aval(operand).shape
    ndim = len(shape)
    stop = ndim if stop_dimension is None else stop_dimension
    start, stop = (d + ndim if d < 0 else d for d in (start_dimension, stop))
    if not 0 <= start <= stop <= ndim:
        raise ValueError(f"lax.collapse: dimensions [{start_dimension}, {stop_dimension}) "
                         f"are not a valid range for an array of rank {ndim}")
    size = math.prod(shape[start:stop])
    return reshape(operand, shape[:start] + (size,) + shape[stop:])


def broadcast_to_rank(x, rank):
    """``x`` with leading size-1 dimensions added up to ``rank``."""
    shape = get_aval(x).shape
    if rank < len(shape):
        raise ValueError(f"lax.broadcast_to_rank: rank {rank} is smaller than the "
                         f"rank {len(shape)} of the operand {shape}")
    return reshape(x, (1,) * (rank - len(shape)) + shape)


def _shift_dims_batch(prim, param):
    """Batching for ops with a tuple of dimensions: batch axis to the front."""
    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        x = batching.moveaxis(x, d, 0)
        params[param] = tuple(a + 1 for a in params[param])
        return prim.bind(x, **params), 0
    prim.batch = rule


# --- squeeze, expand_dims ------------------------------------------------------------

def _squeeze_shape(x, dimensions):
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"lax.squeeze: dimension {d} of an array of shape "
                             f"{x.shape} has size {x.shape[d]}, not 1; only size-1 "
                             "dimensions can be squeezed")
    return ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in dimensions),
                       x.dtype)


squeeze_p = Primitive("squeeze")
squeeze_p.keeps_finite = True
squeeze_p.def_impl(lambda x, dimensions: np.squeeze(x, axis=dimensions))
squeeze_p.def_abstract_eval(_squeeze_shape)
deflinear(squeeze_p, lambda ct, x, dimensions: [reshape(ct, x.aval.shape)])
_shift_dims_batch(squeeze_p, "dimensions")
def_lowering(squeeze_p, lambda a, dimensions: call(np.squeeze, a[0], axis=dimensions))
squeeze_p.numba_lowering = lambda a, in_avals, out_avals, dimensions: _numba_reshape(
    a[0], in_avals[0], out_avals[0].shape)
squeeze_p.numba_axis_map = _size1_axis_map
squeeze_p.forwards_when = lambda params: True


def squeeze(array, dimensions):
    """Remove the size-1 ``dimensions`` of ``array`` (``jax.lax.squeeze``)."""
    array = as_operand(array)
    dimensions = canonical_axes("lax.squeeze", dimensions, get_aval(array).ndim)
    if not dimensions:
        return array
    return checked_bind(squeeze_p, array, dimensions=dimensions)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at the positions ``dimensions`` of the result
    (negative positions count from the end of the result)."""
    array = as_operand(array)
    shape = get_aval(array).shape
    dims = canonical_axes("lax.expand_dims", dimensions, len(shape) + len(tuple(dimensions)))
    new_shape = list(shape)
    for d in dims:
        new_shape.insert(d, 1)
    return reshape(array, tuple(new_shape))


# --- rev -----------------------------------------------------------------------------

rev_p = Primitive("rev")
rev_p.keeps_finite = True
rev_p.def_impl(lambda x, dimensions: np.flip(x, axis=dimensions))
rev_p.def_abstract_eval(lambda x, dimensions: ShapedArray(x.shape, x.dtype))
deflinear(rev_p, lambda ct, x, dimensions: [rev(ct, dimensions)])
_shift_dims_batch(rev_p, "dimensions")
def_lowering(rev_p, lambda a, dimensions: call(np.flip, a[0], axis=dimensions))


def rev(operand, dimensions):
    """Reverse ``operand`` along ``dimensions`` (``jax.lax.rev``)."""
    operand = as_operand(operand)
    dimensions = canonical_axes("lax.rev", dimensions, get_aval(operand).ndim)
    if not dimensions:
        return operand
    return checked_bind(rev_p, operand, dimensions=dimensions)


# --- slice ---------------------------------------------------------------------------
# Static start/limit/stride per dimension, as Python's x[start:limit:stride] with
# 0 <= start <= limit <= size.  Its transpose pads the cotangent with zeros.

def _slice_sizes(start_indices, limit_indices, strides):
    return tuple(max(0, -(-(l - s) // st)) for s, l, st in
                 zip(start_indices, limit_indices, strides))


def _slice_shape(x, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise TypeError(f"lax.slice: an operand of rank {x.ndim} (shape {x.shape}) needs "
                        f"{x.ndim} start and limit indices and strides, got "
                        f"start_indices={start_indices}, limit_indices={limit_indices}, "
                        f"strides={strides}")
    for n, s, l, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= l <= n or st < 1:
            raise ValueError(f"lax.slice: start_indices={start_indices}, limit_indices="
                             f"{limit_indices}, strides={strides} are invalid for shape "
                             f"{x.shape}: need 0 <= start <= limit <= size and stride >= 1")
    return ShapedArray(_slice_sizes(start_indices, limit_indices, strides), x.dtype)


def _slice_impl(x, start_indices, limit_indices, strides):
    return x[tuple(_slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _slice_transpose(ct, x, start_indices, limit_indices, strides):
    box = _slice_box(start_indices, limit_indices, strides)
    config = tuple((b.start, n - b.stop, b.step - 1) for n, b in zip(x.aval.shape, box))
    from fungrad.lax.elementwise import _const       # (elementwise imports this module)
    # (JAX pads with lax._const(ct, 0): a weak cotangent stays weak only if 0-d)
    return [pad(ct, _const(ct, 0), config)]


def _slice_batch(axis_size, vals, dims, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return slice_p.bind(x, start_indices=(0,) + start_indices,
                        limit_indices=(axis_size,) + limit_indices,
                        strides=(1,) + strides), 0


def _slice_lowering(args, start_indices, limit_indices, strides):
    parts = ", ".join(f"{s}:{l}:{st}" for s, l, st in zip(start_indices, limit_indices, strides))
    return Source(f"{args[0]}[{parts or '()'}]")


def _slice_box(start_indices, limit_indices, strides):
    """The slices (stop: one past the last element taken) a slice reads:
    where its transpose writes the cotangent into zeros."""
    sizes = _slice_sizes(start_indices, limit_indices, strides)
    return tuple(_slice(s, s + (m - 1) * st + 1 if m > 0 else s, st)
                 for s, m, st in zip(start_indices, sizes, strides))


slice_p = Primitive("slice")
slice_p.transpose_box = _slice_box
slice_p.keeps_finite = True
slice_p.def_impl(_slice_impl)
slice_p.def_abstract_eval(_slice_shape)
deflinear(slice_p, _slice_transpose)
slice_p.batch = _slice_batch
def_lowering(slice_p, _slice_lowering)


def _slice_numba(args, in_avals, out_avals, start_indices, limit_indices, strides):
    if in_avals[0].shape == ():
        return args[0]
    parts = ", ".join(f"{int(s)}:{int(l)}:{int(st or 1)}" for s, l, st in
                      zip(start_indices, limit_indices, strides or (1,) * len(start_indices)))
    return f"{args[0]}[{parts}]"


slice_p.numba_lowering = _slice_numba


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (JAX's name)
    """``operand[start:limit:stride, ...]`` with static bounds (``jax.lax.slice``)."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    start_indices = tuple(int(s) for s in start_indices)
    limit_indices = tuple(int(s) for s in limit_indices)
    strides = (1,) * len(start_indices) if strides is None else tuple(int(s) for s in strides)
    if (start_indices == (0,) * len(shape) and limit_indices == shape
            and strides == (1,) * len(shape)):
        return operand
    return checked_bind(slice_p, operand, start_indices=start_indices,
                        limit_indices=limit_indices, strides=strides)


def split(operand, sizes, axis=0):
    """``operand`` cut along ``axis`` into consecutive pieces of ``sizes``
    (``jax.lax.split``; the sizes sum to the axis length): a list of slices."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    (axis,) = canonical_axes("split", axis, len(shape))
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise ValueError(f"split: sizes {tuple(sizes)} must be non-negative and sum to the "
                         f"size {shape[axis]} of axis {axis} (operand shape {shape})")
    pieces, start = [], 0
    for size in sizes:
        lo = tuple(start if d == axis else 0 for d in range(len(shape)))
        hi = tuple(start + size if d == axis else n for d, n in enumerate(shape))
        pieces.append(slice(operand, lo, hi))
        start += size
    return pieces


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values must not be relied on
    (``jax.lax.empty``); here it holds zeros.  ``out_sharding`` is accepted
    for JAX compatibility (one device)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return full(shape, 0, np.dtype(dtype))


def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives ``shapes`` (``jax.lax.broadcast_shapes``);
    ValueError naming them if they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ValueError(f"broadcast_shapes: incompatible shapes for broadcasting: "
                         f"{', '.join(str(tuple(s)) for s in shapes)}") from None


def stack(operands, axis=0):
    """The arrays ``operands`` (one shape) joined along a new ``axis``
    (``jax.lax.stack``)."""
    operands = [as_operand(x) for x in operands]
    if not operands:
        raise ValueError("stack: need at least one array")
    ndim = get_aval(operands[0]).ndim
    (axis,) = canonical_axes("stack", axis, ndim + 1)
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, that axis removed (``jax.lax.unstack``)."""
    x = as_operand(x)
    shape = get_aval(x).shape
    (axis,) = canonical_axes("unstack", axis, len(shape))
    return tuple(squeeze(slice(x, tuple(i if d == axis else 0 for d in range(len(shape))),
                               tuple(i + 1 if d == axis else n for d, n in enumerate(shape))),
                         (axis,)) for i in range(shape[axis]))


def tile(operand, reps):
    """``operand`` repeated ``reps[d]`` times along each dimension d (``jax.lax.tile``;
    one rep per dimension)."""
    operand = as_operand(operand)
    shape = get_aval(operand).shape
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape) or any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be {len(shape)} non-negative ints (one per "
                         f"dimension of shape {shape}), got {reps}")
    interleaved = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    wide = broadcast_in_dim(operand, interleaved, tuple(range(1, 2 * len(shape), 2)))
    return reshape(wide, tuple(r * n for r, n in zip(reps, shape)))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy rules) to the shape of ``like_arr``
    (``jax.lax.broadcast_like``)."""
    arr = as_operand(arr)
    shape = get_aval(as_operand(like_arr)).shape
    a_shape = get_aval(arr).shape
    if len(a_shape) > len(shape) or broadcast_shapes(a_shape, shape) != shape:
        raise ValueError(f"broadcast_like: shape {a_shape} does not broadcast to {shape}")
    lead = len(shape) - len(a_shape)
    return broadcast_in_dim(arr, shape, tuple(range(lead, len(shape))))


def stage(x, /):
    """``x`` as an array of the current computation (``jax.lax.stage``): the
    identity on arrays and tracers, Python scalars and lists become arrays."""
    return as_operand(x)


# --- pad -----------------------------------------------------------------------------
# padding_config has one (low, high, interior) triple per dimension, as in JAX:
# ``interior`` values go between neighbouring elements, ``low``/``high`` at the
# ends; negative low/high remove elements.  Linear in the operand and in the
# padding value together, so the transpose gives a cotangent to both.

def _padded_size(n, low, high, interior):
    return low + high + n + max(n - 1, 0) * interior


def _pad_shape(x, padding_value, padding_config):
    if padding_value.ndim != 0:
        raise TypeError(f"lax.pad: padding_value must be a scalar, got shape "
                        f"{padding_value.shape}")
    if padding_value.dtype != x.dtype and not padding_value.weak_type:
        raise TypeError(f"lax.pad: padding_value dtype {padding_value.dtype.name} differs "
                        f"from the operand dtype {x.dtype.name}; convert one of them")
    if len(padding_config) != x.ndim or any(len(c) != 3 for c in padding_config):
        raise TypeError(f"lax.pad: an operand of rank {x.ndim} needs {x.ndim} "
                        f"(low, high, interior) triples, got {padding_config}")
    shape = tuple(_padded_size(n, *c) for n, c in zip(x.shape, padding_config))
    if any(c[2] < 0 for c in padding_config) or any(n < 0 for n in shape):
        raise ValueError(f"lax.pad: padding_config {padding_config} is invalid for shape "
                         f"{x.shape}: interior padding must be >= 0 and negative padding "
                         f"may not remove more elements than there are (result {shape})")
    return ShapedArray(shape, x.dtype)


def _pad_impl(x, padding_value, padding_config):
    x = np.asarray(x)
    grown = tuple(_padded_size(n, max(lo, 0), max(hi, 0), it)
                  for n, (lo, hi, it) in zip(x.shape, padding_config))
    out = np.full(grown, padding_value, dtype=x.dtype)
    place = tuple(_slice(max(lo, 0), max(lo, 0) + _padded_size(n, 0, 0, it), it + 1)
                  for n, (lo, hi, it) in zip(x.shape, padding_config))
    out[place] = x
    crop = tuple(_slice(-min(lo, 0), g + min(hi, 0))
                 for g, (lo, hi, _) in zip(grown, padding_config))
    return out[crop]


def _pad_transpose(ct, operand, padding_value, padding_config):
    from fungrad.lax.reductions import reduce_sum
    from fungrad.lax.elementwise import sub
    low, high, interior = zip(*padding_config)
    # undo the outer padding (negative padding comes back as zeros), then
    # take every (interior + 1)-th element: these positions held the operand
    unpadded = pad(ct, 0, tuple((-lo, -hi, 0) for lo, hi in zip(low, high)))
    t_operand = slice(unpadded, (0,) * len(low), get_aval(unpadded).shape,
                      tuple(i + 1 for i in interior))
    t_padv = None
    if is_undefined_primal(padding_value):
        total = lambda v: reduce_sum(v, tuple(range(len(low))))
        t_padv = sub(total(ct), total(t_operand))
    return [t_operand if is_undefined_primal(operand) else None, t_padv]


def _pad_batch(axis_size, vals, dims, padding_config):
    from fungrad.lax.elementwise import add, mul
    (x, padv), (dx, dp) = vals, dims
    x = batching.bdim_at_front(x, dx, axis_size)
    config = ((0, 0, 0),) + padding_config
    if dp is None:
        return pad_p.bind(x, padv, padding_config=config), 0
    # a batched padding value: pad with zeros, then add padv where padding went
    aval = get_aval(x)
    padded = pad_p.bind(x, np.zeros((), aval.dtype), padding_config=config)
    where_padding = _pad_impl(np.zeros(aval.shape[1:], aval.dtype),
                              np.ones((), aval.dtype), padding_config)
    padv = reshape(padv, (axis_size,) + (1,) * len(padding_config))
    return add(padded, mul(where_padding, padv)), 0


def _pad_lowering(args, padding_config):
    # an expression: fill a padded buffer, place the operand, crop negative padding
    x, v = args
    grown = ", ".join(f"{max(lo, 0) + max(hi, 0)} + {x}.shape[{i}] + max({x}.shape[{i}] - 1, 0) * {it}"
                      for i, (lo, hi, it) in enumerate(padding_config))
    place = ", ".join(f"{max(lo, 0)}:{max(lo, 0)} + {x}.shape[{i}] + max({x}.shape[{i}] - 1, 0) * {it}:{it + 1}"
                      for i, (lo, hi, it) in enumerate(padding_config))
    crop = ", ".join(f"{-min(lo, 0)}:{'' if hi >= 0 else hi}" for lo, hi, _ in padding_config)
    if not padding_config:
        return Source(f"np.array({x}, copy=True)")
    return Source(f"(lambda _o: (_o.__setitem__(np.s_[{place},], {x}), _o)[1])"
                  f"(np.full(({grown},), {v}, dtype={x}.dtype))[{crop}]")


pad_p = Primitive("pad")
pad_p.keeps_finite = True
pad_p.def_impl(_pad_impl)
pad_p.def_abstract_eval(_pad_shape)
deflinear(pad_p, _pad_transpose)
pad_p.batch = _pad_batch
def_lowering(pad_p, _pad_lowering)


def _pad_numba(block, eqn, args, out_names):
    """A buffer of the padding value with the operand placed in it, for padding
    without interior or negative amounts (a numba_block: two statements)."""
    from fungrad.interpreters.numba_backend import NotCompilable
    (x, v), (out,), config = args, out_names, eqn.params["padding_config"]
    aval, out_aval = eqn.inputs[0].aval, eqn.outvars[0].aval
    if aval.shape == () or any(lo < 0 or hi < 0 or it for lo, hi, it in config):
        raise NotCompilable("pad with interior or negative padding")
    shape = tuple(int(d) for d in out_aval.shape)
    block.line(f"{out} = np.full({shape!r}, {v}, {numba_type(out_aval.dtype)})")
    place = ", ".join(f"{int(lo)}:{int(lo) + int(n)}" for (lo, _, _), n in zip(config, aval.shape))
    block.line(f"{out}[{place}] = {x}")


pad_p.numba_block = _pad_numba


def pad(operand, padding_value, padding_config):
    """Pad ``operand`` with ``padding_value`` (``jax.lax.pad``): one
    ``(low, high, interior)`` triple per dimension; negative low/high crop."""
    operand = as_operand(operand)
    padding_value = as_operand(padding_value, like=operand)
    padding_config = tuple(tuple(int(v) for v in c) for c in padding_config)
    if all(c == (0, 0, 0) for c in padding_config) and len(padding_config) == get_aval(operand).ndim:
        return operand
    return checked_bind(pad_p, operand, padding_value, padding_config=padding_config)


# --- concatenate ---------------------------------------------------------------------

def _concatenate_shape(*operands, dimension):
    if not operands:
        raise TypeError("lax.concatenate needs at least one operand")
    first = operands[0]
    dtype = check_same_dtypes("concatenate", *operands)
    if not 0 <= dimension < first.ndim:
        raise ValueError(f"lax.concatenate: dimension {dimension} is out of range for "
                         f"operands of rank {first.ndim}")
    for op in operands:
        if op.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(op.shape, first.shape))
                                        if i != dimension):
            raise TypeError(f"lax.concatenate: operand shapes "
                            f"{[o.shape for o in operands]} must agree except in "
                            f"dimension {dimension}")
    size = sum(op.shape[dimension] for op in operands)
    return ShapedArray(first.shape[:dimension] + (size,) + first.shape[dimension + 1:], dtype)


def _concatenate_transpose(ct, *operands, dimension):
    shape = get_aval(ct).shape
    cts, offset = [], 0
    for op in operands:
        size = (op.aval if is_undefined_primal(op) else get_aval(op)).shape[dimension]
        if is_undefined_primal(op):
            start = tuple(offset if i == dimension else 0 for i in range(len(shape)))
            limit = tuple(offset + size if i == dimension else n for i, n in enumerate(shape))
            cts.append(slice(ct, start, limit))
        else:
            cts.append(None)
        offset += size
    return cts


def _concatenate_batch(axis_size, vals, dims, dimension):
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    return concatenate_p.bind(*vals, dimension=dimension + 1), 0


concatenate_p = Primitive("concatenate")
concatenate_p.keeps_finite = True
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))
concatenate_p.def_abstract_eval(_concatenate_shape)
deflinear(concatenate_p, _concatenate_transpose)
concatenate_p.batch = _concatenate_batch
def_lowering(concatenate_p, lambda args, dimension:
             Source(f"np.concatenate([{', '.join(args)}], axis={dimension})"))
concatenate_p.numba_lowering = lambda args, in_avals, out_avals, dimension: (
    f"np.concatenate(({', '.join(args)},), axis={int(dimension)})"
    if in_avals[0].shape != () and len({a.dtype for a in in_avals}) == 1 else None)


def concatenate(operands, dimension):
    """Join ``operands`` along ``dimension`` (``jax.lax.concatenate``)."""
    operands = [as_operand(op) for op in operands]
    if not operands:
        raise ValueError("lax.concatenate needs at least one operand")
    ndim = get_aval(operands[0]).ndim
    if not -ndim <= dimension < ndim:
        raise ValueError(f"lax.concatenate: dimension {dimension} is out of range for "
                         f"operands of rank {ndim}")
    if len(operands) == 1:
        return operands[0]
    return checked_bind(concatenate_p, *operands, dimension=dimension % ndim)
