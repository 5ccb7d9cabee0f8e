"""NumPy indexing for fungrad: ``x[idx]``, ``x.at[idx].set(...)`` and the
index functions (take, nonzero, select, ...).

``getitem`` picks the cheapest primitives that express an index:

* only ints, slices, None, Ellipsis: ``lax.slice`` + ``lax.rev`` (negative
  steps) + ``lax.reshape`` (dropping int dims, adding None dims);
* plus traced integer scalars: the same with a ``lax.dynamic_slice``;
* integer arrays (lists, concrete or traced): one ``lax.gather``, NumPy's
  advanced-indexing semantics included;
* boolean masks: turned into integer arrays with ``nonzero`` (concrete values
  only: the result's shape depends on the data; under a transformation use
  ``where`` or ``nonzero(..., size=)``).

Out-of-bounds behaviour follows JAX: static ints out of bounds raise
IndexError (as NumPy); traced ints and index arrays wrap negatives once,
then ``x[idx]`` clamps (``mode="clip"``) and ``x.at[idx].<update>`` drops
out-of-bounds updates.  ``x.at[idx].get/set/...`` accept ``mode`` as JAX:
``"promise_in_bounds"`` (the defaults above), ``"clip"``, ``"drop"`` and
``"fill"`` (gather returns ``fill_value``; scatter drops).  ``take`` and
``take_along_axis`` default to ``"fill"`` as in JAX.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from fungrad._dtype_classes import is_floating, is_inexact, is_integer
from fungrad import lax
from fungrad.core import (Tracer, ConcretizationTypeError, get_aval, wrap_array,
                          current_trace, EVAL_TRACE)
from fungrad.numpy._dtypes import asarray_operand, result_type

__all__ = ["take", "take_along_axis", "put_along_axis", "nonzero", "argwhere",
           "flatnonzero", "select", "choose", "compress", "extract", "diag_indices",
           "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "ix_", "indices", "unravel_index", "ravel_multi_index",
           "fill_diagonal", "place", "put", "mask_indices"]

_INDEX_ERROR = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                "and integer or boolean arrays are valid indices")


# ----------------------------------------------------------------------------
# Normalising an index: masks, bool scalars, lists, Ellipsis
# ----------------------------------------------------------------------------

def _mask_error(what):
    return ConcretizationTypeError(
        f"Boolean {what} indexing needs concrete values: the shape of x[mask] is the "
        "number of True entries, which is not known while the function is traced. "
        "Use fungrad.numpy.where(mask, x, other) to keep the shape, or "
        "nonzero(mask, size=N, fill_value=...) / x.at[...] with a static size N.")


def _classify(item):
    """One raw index item -> (kind, value); kinds: none, ellipsis, slice, int,
    bool (scalar), mask (concrete bool array), array (int array or tracer)."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", _static_slice(item)
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, Tracer):
        dtype = item.dtype
        if dtype == np.bool_:
            raise _mask_error("mask" if item.ndim else "scalar")
        if not is_integer(dtype):
            raise IndexError(f"{_INDEX_ERROR}; got a traced array of dtype {dtype.name}")
        return "array", item
    arr = np.asarray(item)
    if arr.dtype == np.bool_:
        return ("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr)
    if arr.size == 0 and is_floating(arr.dtype):      # [] is an empty integer index
        arr = arr.astype(np.intp)
    if not is_integer(arr.dtype):
        raise IndexError(f"{_INDEX_ERROR}; got {type(item).__name__} of dtype {arr.dtype}")
    return ("int", int(arr)) if arr.ndim == 0 else ("array", arr)


def _static_slice(s):
    def bound(b):
        if b is None:
            return None
        if isinstance(b, Tracer):
            raise IndexError(
                f"slice bounds must be static, got a traced value in {s!r}. Array "
                "shapes must be known while tracing: use lax.dynamic_slice(x, start, "
                "size) or lax.dynamic_slice_in_dim for a traced start and a fixed size.")
        try:
            return operator.index(b)
        except TypeError:
            raise IndexError(f"slice indices must be integers or None, got {b!r}") from None
    return slice(bound(s.start), bound(s.stop), bound(s.step))


def _normalize(x, idx):
    """``(x, items)``: items are ints, slices, None and integer arrays with the
    Ellipsis expanded and masks replaced by their ``nonzero`` arrays; bool
    scalars add a size-1 axis to ``x`` indexed by ``arange(0 or 1)``."""
    raw = idx if type(idx) is tuple else (idx,)
    parsed = [_classify(it) for it in raw]
    if sum(k == "ellipsis" for k, _ in parsed) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    shape = get_aval(x).shape
    used = sum(v.ndim if k == "mask" else k in ("slice", "int", "array") for k, v in parsed)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    # a lone bool scalar is a newaxis; with other advanced indices (or other
    # bool scalars) it is an advanced index of length 0 or 1 on a new axis
    lone_bool = (sum(k == "bool" for k, _ in parsed) == 1
                 and not any(k in ("array", "mask") for k, _ in parsed))
    items, dim, new_axes = [], 0, []
    for k, v in parsed:
        if k == "ellipsis":
            items += [slice(None)] * (len(shape) - used)
            dim += len(shape) - used
        elif k == "none":
            items.append(None)
        elif k == "bool" and v and lone_bool:
            items.append(None)                      # x[True] is x[None]
        elif k == "bool":
            new_axes.append(dim + len(new_axes))
            items.append(np.arange(int(v)))
        elif k == "mask":
            if v.shape != shape[dim:dim + v.ndim]:
                raise IndexError(f"boolean index of shape {v.shape} does not match the "
                                 f"indexed dimensions {shape[dim:dim + v.ndim]} of the "
                                 f"array of shape {shape}")
            items += list(np.nonzero(v))
            dim += v.ndim
        else:
            items.append(v)
            dim += 1
    if new_axes:
        x = lax.expand_dims(x, tuple(new_axes))
    return x, tuple(items)


def _kinds(items):
    arrays = [it for it in items if isinstance(it, (np.ndarray, Tracer))]
    nd_arrays = any(np.ndim(a) > 0 if not isinstance(a, Tracer) else a.ndim > 0 for a in arrays)
    return bool(arrays), nd_arrays


# ----------------------------------------------------------------------------
# x[idx]
# ----------------------------------------------------------------------------

def getitem(x, idx, mode=None, fill_value=None):
    """``x[idx]`` with NumPy's semantics (see the module docstring)."""
    mode = lax.xla_scatter.mode_name(mode, "x.at[...].get")
    if mode not in (None, "clip", "fill", "drop", "promise_in_bounds"):
        raise ValueError(f"x.at[...].get: unknown mode {mode!r}; use 'promise_in_bounds', "
                         "'clip', 'fill' or 'drop'")
    x = asarray_operand(x)
    x, items = _normalize(x, idx)
    if mode in ("fill", "drop", "clip"):   # out-of-bounds ints are read as asked: a gather
        items = tuple(np.asarray(it) if isinstance(it, int) else it for it in items)
    has_arrays, nd_arrays = _kinds(items)
    if nd_arrays or (has_arrays and mode in ("fill", "drop", "clip")):
        return lax.gather(x, items, mode=mode, fill_value=fill_value)
    if not has_arrays and not isinstance(x, Tracer) and current_trace() is EVAL_TRACE:
        # no transformation is watching and basic indexing means the same in
        # NumPy: take NumPy's read-only view (a fast path for eager code)
        return wrap_array(np.asarray(x)[items])
    return _basic_getitem(x, items)


def _basic_getitem(x, items):
    """Ints, slices, None and traced integer scalars: slice, rev, dynamic_slice,
    reshape — no gather."""
    shape = get_aval(x).shape
    starts, limits, strides, flips, out_shape = [], [], [], [], []
    dyn_starts, dim = {}, 0
    used = sum(it is not None for it in items)
    for it in items + (slice(None),) * (len(shape) - used):
        if it is None:
            out_shape.append(1)
            continue
        n = shape[dim]
        if isinstance(it, slice):
            start, limit, stride, count, flip = _slice_window(it, n)
            if flip:
                flips.append(dim)
            out_shape.append(count)
        elif isinstance(it, int):
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for axis {dim} with size {n}")
            start, limit, stride = it % n, it % n + 1, 1
        else:                                       # a traced integer scalar
            start, limit, stride = 0, n, 1
            dyn_starts[dim] = it
        starts.append(start)
        limits.append(limit)
        strides.append(stride)
        dim += 1
    out = lax.slice(x, starts, limits, strides)
    if dyn_starts:
        sliced = get_aval(out).shape
        zero = np.zeros((), np.int64)
        out = lax.dynamic_slice(out, [dyn_starts.get(d, zero) for d in range(len(sliced))],
                                [1 if d in dyn_starts else m for d, m in enumerate(sliced)])
    out = lax.rev(out, tuple(flips))
    return lax.reshape(out, tuple(out_shape))


def _slice_window(s, n):
    """(start, limit, stride, count, flip) of a Python slice as a lax.slice
    with a positive stride, reversed afterwards when the step is negative."""
    start, stop, step = s.indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        return 0, 0, 1, 0, False
    if step > 0:
        return start, start + (count - 1) * step + 1, step, count, False
    last = start + (count - 1) * step
    return last, start + 1, -step, count, True


# ----------------------------------------------------------------------------
# x.at[idx].set(...) and friends
# ----------------------------------------------------------------------------

class _IndexUpdateHelper:
    """``x.at``: ``x.at[idx]`` gives an ``_IndexUpdateRef`` (JAX's API)."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """Functional updates at ``index``; every method returns a new array and
    leaves ``array`` unchanged.

    Repeated indices accumulate in add/multiply/min/max (``ufunc.at``); in
    ``set`` one of them wins.  ``apply(f)`` (``lax.scatter_apply``) applies the
    scalar function ``f`` once per repetition of an index, as JAX.
    """
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter, self.array, self.index, values, mode, unique_indices)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter_add, self.array, self.index, values, mode, unique_indices)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter_sub, self.array, self.index, values, mode, unique_indices)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter_mul, self.array, self.index, values, mode, unique_indices)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        import fungrad.numpy as fnp
        x = asarray_operand(self.array)
        if not is_inexact(x.dtype):
            raise TypeError(f"x.at[...].divide on an array of dtype {x.dtype.name} would "
                            "change its dtype (NumPy refuses too): convert x to a float "
                            "dtype first")
        ones = lax.full_like(x, 1)
        return fnp.divide(x, _update(lax.scatter_mul, ones, self.index, values, mode,
                                     unique_indices))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        import fungrad.numpy as fnp
        x = asarray_operand(self.array)
        exponents = _update(lax.scatter_mul, lax.full_like(x, 1), self.index, values, mode,
                            unique_indices)
        return fnp.power(x, exponents)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter_min, self.array, self.index, values, mode, unique_indices)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return _update(lax.scatter_max, self.array, self.index, values, mode, unique_indices)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        # func of one scalar; an element indexed k times gets it k times, as JAX
        x = asarray_operand(self.array)
        shape = get_aval(x).shape
        expanded, items = _normalize(x, self.index)
        out = lax.scatter_apply(expanded, items, func, mode=mode, unique_indices=unique_indices)
        return lax.reshape(out, shape)


def _update(scatter_fn, x, idx, values, mode, unique_indices):
    """``scatter_fn`` at the NumPy index ``idx``; values cast to x's dtype (as JAX)."""
    x = asarray_operand(x)
    shape = get_aval(x).shape
    expanded, items = _normalize(x, idx)
    values = asarray_operand(values)
    if get_aval(values).dtype != get_aval(x).dtype:
        values = lax.convert_element_type(values, get_aval(x).dtype)
    out = scatter_fn(expanded, items, values, mode=mode, unique_indices=unique_indices)
    return lax.reshape(out, shape)       # drop the axes bool scalars added


# ----------------------------------------------------------------------------
# take, take_along_axis, put_along_axis
# ----------------------------------------------------------------------------

def _canonical_axis(who, axis, ndim):
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{who}: axis must be an integer or None, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, f"fungrad.numpy.{who}")
    return axis % ndim


def _index_array(who, indices):
    indices = asarray_operand(indices)
    if not is_integer(get_aval(indices).dtype):
        raise TypeError(f"{who}: indices must be integers, got {get_aval(indices).dtype.name}")
    return indices


def _take_mode(who, mode, indices, n):
    """(gather mode, indices) for NumPy/JAX take modes."""
    if mode in (None, "fill"):
        return "fill", indices
    if mode == "clip":
        return "clip", indices
    if mode == "wrap":
        import fungrad.numpy as fnp
        return "clip", (np.mod(indices, n) if not isinstance(indices, Tracer)
                        else fnp.remainder(indices, n))
    if mode == "raise":
        raise NotImplementedError(f"{who}: mode='raise' is not supported (as in JAX): "
                                  "use 'fill', 'clip' or 'wrap'")
    raise ValueError(f"{who}: invalid mode {mode!r}; use 'fill', 'clip' or 'wrap'")


def take(a, indices, /, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """``np.take``; out-of-bounds indices give ``fill_value`` (mode="fill",
    the JAX default: NaN for floats), or are clamped ("clip") or wrapped ("wrap")."""
    if out is not None:
        raise TypeError("take: the out argument is not supported (fungrad arrays are immutable)")
    a = asarray_operand(a)
    if axis is None:
        a, axis = lax.reshape(a, (get_aval(a).size,)), 0
    axis = _canonical_axis("take", axis, get_aval(a).ndim)
    indices = _index_array("take", indices)
    gmode, indices = _take_mode("take", mode, indices, get_aval(a).shape[axis])
    index = (slice(None),) * axis + (indices,)
    if get_aval(indices).ndim == 0:      # a scalar index: a 0-d advanced index
        index = (slice(None),) * axis + (lax.reshape(indices, (1,)),)
        out = lax.gather(a, index, mode=gmode, fill_value=fill_value)
        return lax.squeeze(out, (axis,))
    return lax.gather(a, index, mode=gmode, fill_value=fill_value)


def _along_axis_index(who, arr, indices, axis):
    """(arr, index tuple, axis): aranges on the other axes, ``indices`` on ``axis``."""
    arr = asarray_operand(arr)
    indices = _index_array(who, indices)
    if axis is None:
        arr = lax.reshape(arr, (get_aval(arr).size,))
        if get_aval(indices).ndim != 1:
            raise ValueError(f"{who}: with axis=None the indices must be 1-d, got shape "
                             f"{get_aval(indices).shape}")
        axis = 0
    shape = get_aval(arr).shape
    axis = _canonical_axis(who, axis, len(shape))
    if get_aval(indices).ndim != len(shape):
        raise ValueError(f"{who}: indices (shape {get_aval(indices).shape}) and arr (shape "
                         f"{shape}) must have the same number of dimensions")
    index = tuple(indices if d == axis else
                  np.arange(n).reshape([n if k == d else 1 for k in range(len(shape))])
                  for d, n in enumerate(shape))
    return arr, index, axis


def take_along_axis(arr, indices, /, axis=-1, mode=None, fill_value=None):
    """``np.take_along_axis``; out-of-bounds indices give ``fill_value``
    (mode="fill", the JAX default) or are clamped (mode="clip")."""
    arr, index, axis = _along_axis_index("take_along_axis", arr, indices, axis)
    gmode, idx = _take_mode("take_along_axis", mode, index[axis], get_aval(arr).shape[axis])
    index = index[:axis] + (idx,) + index[axis + 1:]
    return lax.gather(arr, index, mode=gmode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``np.put_along_axis`` returning a new array; pass ``inplace=False``
    (as JAX requires) to acknowledge that ``arr`` is not modified."""
    if inplace:
        raise ValueError("put_along_axis: fungrad arrays are immutable; pass inplace=False "
                         "to get the updated array as the return value")
    arr, index, axis = _along_axis_index("put_along_axis", arr, indices, axis)
    return _update(lax.scatter, arr, index, values, mode, False)


# ----------------------------------------------------------------------------
# nonzero, argwhere, flatnonzero
# ----------------------------------------------------------------------------

def _fill_values(fill_value, ndim):
    if fill_value is None:
        return (0,) * ndim
    if np.ndim(fill_value) == 0:
        return (fill_value,) * ndim
    fill = tuple(fill_value)
    if len(fill) != ndim:
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length "
                         f"{ndim} (one per dimension), got {fill_value!r}")
    return fill


def nonzero(a, /, *, size=None, fill_value=None):
    """``np.nonzero``.  Concrete inputs only, unless ``size`` is given: then the
    result has ``size`` entries per dimension (padded with ``fill_value``,
    default 0, or truncated) and ``a`` may be traced."""
    a = asarray_operand(a)
    aval = get_aval(a)
    if aval.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not allowed (as in NumPy 2): use "
                         "atleast_1d(a).nonzero() instead")
    fills = _fill_values(fill_value, aval.ndim)
    if not isinstance(a, Tracer):
        found = np.nonzero(np.asarray(a))
        if size is not None:
            size = operator.index(size)
            found = [np.concatenate([f[:size], np.full(max(size - len(f), 0), v, f.dtype)])
                     for f, v in zip(found, fills)]
        return tuple(wrap_array(f) for f in found)
    if size is None:
        raise ConcretizationTypeError(
            "nonzero of a traced array: the number of nonzero entries (the result's "
            "shape) is not known while tracing. Pass a static size=N (and fill_value) "
            "to get N entries, or use where(cond, x, y), which keeps the shape.")
    return _traced_nonzero(a, operator.index(size), fills)


def _traced_nonzero(a, size, fills):
    """The k-th nonzero entry goes to slot k = (running count of nonzeros) - 1;
    zero entries and overflow slots >= size are dropped by the scatter."""
    import fungrad.numpy as fnp
    shape = get_aval(a).shape
    flags = lax.convert_element_type(lax.reshape(lax.convert_element_type(a, np.bool_),
                                                 (int(np.prod(shape)),)), np.int64)
    slot = lax.sub(fnp.cumsum(flags), np.int64(1))
    # nonzero: slot; zero: `size` (out of bounds: dropped)
    target = lax.add(lax.mul(flags, lax.sub(slot, np.int64(size))), np.int64(size))
    coords = np.indices(shape).reshape(len(shape), -1)
    return tuple(lax.scatter(lax.full((size,), fill, np.int64), (target,), coord, mode="drop")
                 for coord, fill in zip(coords, fills))


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero entries of ``ravel(a)`` (``size=`` as nonzero)."""
    a = asarray_operand(a)
    return nonzero(lax.reshape(a, (get_aval(a).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """``np.argwhere``: one row of indices per nonzero entry (``size=`` as nonzero)."""
    a = asarray_operand(a)
    if get_aval(a).ndim == 0:
        # NumPy: one row (no columns) if a is nonzero, else none
        rows = nonzero(lax.reshape(a, (1,)), size=size, fill_value=fill_value)[0]
        return lax.full((get_aval(rows).shape[0], 0), 0, np.int64)
    cols = nonzero(a, size=size, fill_value=fill_value)
    n = get_aval(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (n, 1)) for c in cols], 1)


# ----------------------------------------------------------------------------
# select, choose, compress, extract
# ----------------------------------------------------------------------------

def select(condlist, choicelist, default=0):
    """``np.select``: the value of the first true condition's choice, else ``default``."""
    import fungrad.numpy as fnp
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist (length {len(condlist)}) and choicelist (length "
                         f"{len(choicelist)}) must have the same length")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    for i, c in enumerate(condlist):
        if get_aval(asarray_operand(c)).dtype != np.bool_:
            raise TypeError(f"select: condlist[{i}] must be a boolean array, got "
                            f"{get_aval(asarray_operand(c)).dtype.name}")
    dtype = result_type(*choicelist, default)
    out = fnp.asarray(default, dtype=dtype)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = fnp.where(cond, fnp.asarray(choice, dtype=dtype), out)
    shape = np.broadcast_shapes(*[np.shape(c) if not isinstance(c, Tracer) else c.shape
                                  for c in condlist + choicelist])
    return fnp.broadcast_to(out, np.broadcast_shapes(shape, get_aval(out).shape))


def choose(a, choices, out=None, mode="raise"):
    """``np.choose``: ``choices[a[i]][i]`` with broadcasting. mode "raise" needs
    concrete ``a``; "wrap" and "clip" work on traced values too."""
    import fungrad.numpy as fnp
    if out is not None:
        raise TypeError("choose: the out argument is not supported")
    a = _index_array("choose", a)
    choices = [asarray_operand(c) for c in choices]
    n = len(choices)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise ConcretizationTypeError("choose with mode='raise' needs concrete indices "
                                          "(it checks them); use mode='clip' or 'wrap'")
        if np.any((np.asarray(a) < 0) | (np.asarray(a) >= n)):
            raise ValueError("choose: invalid entry in choice array")
    elif mode == "wrap":
        a = np.mod(a, n) if not isinstance(a, Tracer) else fnp.remainder(a, n)
    elif mode == "clip":
        a = np.clip(a, 0, n - 1) if not isinstance(a, Tracer) else fnp.clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: invalid mode {mode!r}; use 'raise', 'wrap' or 'clip'")
    arrays = fnp.broadcast_arrays(a, *choices)
    stacked = fnp.stack(arrays[1:])
    shape = get_aval(arrays[0]).shape
    index = (arrays[0],) + tuple(np.arange(m).reshape([m if k == d else 1
                                                       for k in range(len(shape))])
                                 for d, m in enumerate(shape))
    return lax.gather(stacked, index)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """``np.compress``: the slices of ``a`` along ``axis`` where ``condition`` is
    true.  A traced condition needs a static ``size`` (padded with ``fill_value``)."""
    if out is not None:
        raise TypeError("compress: the out argument is not supported")
    a = asarray_operand(a)
    if axis is None:
        a, axis = lax.reshape(a, (get_aval(a).size,)), 0
    axis = _canonical_axis("compress", axis, get_aval(a).ndim)
    condition = asarray_operand(condition)
    if get_aval(condition).ndim != 1:
        raise ValueError("compress: condition must be a 1-d array")
    n = get_aval(a).shape[axis]
    if not isinstance(condition, Tracer):
        cond = np.asarray(condition).astype(bool)
        if np.any(cond[n:]):
            raise IndexError(f"compress: condition has a true entry beyond the {n} entries "
                             f"of axis {axis}")
        condition = cond[:n]
    elif get_aval(condition).shape[0] > n:
        condition = lax.slice_in_dim(condition, 0, n)
    picked = nonzero(condition, size=size, fill_value=n)[0]
    return take(a, picked, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """``np.extract``: ``ravel(arr)`` where ``ravel(condition)`` is nonzero."""
    condition = asarray_operand(condition)
    arr = asarray_operand(arr)
    flat_cond = lax.convert_element_type(lax.reshape(condition, (get_aval(condition).size,)),
                                         np.bool_)
    return compress(flat_cond, lax.reshape(arr, (get_aval(arr).size,)), size=size,
                    fill_value=fill_value)


# ----------------------------------------------------------------------------
# Index constructors: static shapes in, concrete index arrays out
# ----------------------------------------------------------------------------

def _wrap_all(result):
    if isinstance(result, tuple):
        return tuple(wrap_array(r) for r in result)
    return wrap_array(result)


def diag_indices(n, ndim=2):
    return _wrap_all(np.diag_indices(operator.index(n), operator.index(ndim)))


def diag_indices_from(arr):
    shape = get_aval(asarray_operand(arr)).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: the array must be at least 2-d with all "
                         f"dimensions equal, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def tril_indices(n, k=0, m=None):
    return _wrap_all(np.tril_indices(operator.index(n), operator.index(k), m))


def triu_indices(n, k=0, m=None):
    return _wrap_all(np.triu_indices(operator.index(n), operator.index(k), m))


def _check_2d(who, arr):
    shape = get_aval(asarray_operand(arr)).shape
    if len(shape) != 2:
        raise ValueError(f"{who}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr, k=0):
    n, m = _check_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = _check_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def indices(dimensions, dtype=int, sparse=False):
    return _wrap_all(np.indices(tuple(dimensions), dtype=dtype, sparse=sparse))


def ix_(*args):
    """``np.ix_``: open-mesh index arrays (traced 1-d integer arrays allowed)."""
    out = []
    for k, a in enumerate(args):
        a = asarray_operand(a)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"ix_: cross index must be 1-dimensional, argument {k} has "
                             f"shape {aval.shape}")
        if aval.dtype == np.bool_:
            if isinstance(a, Tracer):
                raise _mask_error("ix_")
            a = np.nonzero(np.asarray(a))[0]
        shape = [1] * len(args)
        shape[k] = get_aval(a).shape[0]
        out.append(lax.reshape(a, tuple(shape)) if isinstance(a, Tracer)
                   else wrap_array(np.asarray(a).reshape(shape)))
    return tuple(out)


def unravel_index(indices, shape):
    """``np.unravel_index``.  As JAX, traced indices are clamped into
    ``[-size, size)`` and negative ones wrap (NumPy raises instead)."""
    import fungrad.numpy as fnp
    shape = tuple(operator.index(n) for n in np.atleast_1d(shape))
    indices = _index_array("unravel_index", indices)
    size = math.prod(shape)
    if not isinstance(indices, Tracer):
        return _wrap_all(np.unravel_index(np.asarray(indices), shape))
    idx = fnp.clip(indices, -size, size - 1)
    idx = fnp.where(idx < 0, idx + size, idx)
    out = []
    for d in range(len(shape)):
        stride = math.prod(shape[d + 1:])
        out.append(fnp.remainder(fnp.floor_divide(idx, stride), shape[d]))
    return tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """``np.ravel_multi_index``; traced indices need mode "wrap" or "clip"."""
    import fungrad.numpy as fnp
    dims = tuple(operator.index(n) for n in dims)
    multi_index = [_index_array("ravel_multi_index", i) for i in multi_index]
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dimensions")
    if not any(isinstance(i, Tracer) for i in multi_index):
        return wrap_array(np.ravel_multi_index([np.asarray(i) for i in multi_index], dims,
                                               mode=mode, order=order))
    if mode == "raise":
        raise ConcretizationTypeError("ravel_multi_index with mode='raise' needs concrete "
                                      "indices (it checks them); use mode='wrap' or 'clip'")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    axes = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    total, stride = 0, 1
    for d in reversed(list(axes)):
        i = multi_index[d]
        i = fnp.remainder(i, dims[d]) if mode == "wrap" else fnp.clip(i, 0, dims[d] - 1)
        total = fnp.add(total, fnp.multiply(i, stride))
        stride *= dims[d]
    return total


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of ``a`` with its main diagonal set to ``val``.  As JAX, arrays are
    immutable: pass ``inplace=False``."""
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    if inplace:
        raise NotImplementedError("fill_diagonal: fungrad arrays are immutable; call "
                                  "fill_diagonal(a, val, inplace=False) and use the result")
    a = asarray_operand(a)
    shape = get_aval(a).shape
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise ValueError(f"fill_diagonal: a must be 2-d, or n-d with equal dimensions, got "
                         f"shape {shape}")
    n = min(shape)
    if len(shape) == 2 and wrap and shape[0] > shape[1] + 1:
        rows = np.arange(shape[0])
        rows = rows[rows % (shape[1] + 1) < shape[1]]
        cols = rows % (shape[1] + 1)
        index = (rows, cols)
    else:
        index = (np.arange(n),) * len(shape)
    values = fnp.ravel(fnp.asarray(val)).astype(get_aval(a).dtype)
    count = index[0].shape[0]
    if get_aval(values).shape[0] == 0:
        return a
    values = fnp.resize(values, (count,))
    return _IndexUpdateHelper(a)[index].set(values)


_IMMUTABLE = ("fungrad.numpy.{0} cannot modify arrays in place: fungrad arrays are immutable. "
              "Pass inplace=False and use the returned array.")


def place(arr, mask, vals, *, inplace=True):
    """A copy of ``arr`` with the elements where ``mask`` is true replaced, in
    order, by the values of ``vals`` (repeated as needed) (``numpy.place``, as
    JAX's ``inplace=False``).  ``mask`` may be traced."""
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    if inplace:
        raise ValueError(_IMMUTABLE.format("place"))
    data, mask = asarray_operand(arr), asarray_operand(mask)
    values = fnp.ravel(asarray_operand(vals))
    size = get_aval(data).size
    if get_aval(mask).size != size:
        raise ValueError(f"place: arr (shape {get_aval(data).shape}) and mask (shape "
                         f"{get_aval(mask).shape}) must have the same size")
    if get_aval(values).size == 0:
        raise ValueError("place: cannot place values from an empty array")
    if size == 0:
        return data
    (positions,) = fnp.nonzero(fnp.ravel(mask), size=size, fill_value=size)
    values = fnp.resize(values, (size,)).astype(get_aval(data).dtype)
    flat = _IndexUpdateHelper(fnp.ravel(data))[positions].set(values, mode="drop")
    return lax.reshape(flat, get_aval(data).shape)


def _put_positions(fnp, ind, size, mode):
    """Flat positions for ``put``'s ``mode``: None drops out-of-bounds indices
    (negative ones count from the end, once), 'clip' clamps, 'wrap' wraps;
    'raise' checks concrete indices."""
    if mode in (None, "raise"):
        if mode == "raise":
            if isinstance(ind, Tracer):
                raise NotImplementedError("put: mode='raise' needs concrete indices; use "
                                          "mode='clip', 'wrap' or None (drop) under transforms")
            bad = np.asarray(ind)[(np.asarray(ind) < -size) | (np.asarray(ind) >= size)]
            if bad.size:
                raise IndexError(f"put: index {int(bad[0])} is out of bounds for size {size}")
        return fnp.where(ind < 0, ind + size, ind)
    if mode == "clip":
        return fnp.clip(ind, 0, size - 1)
    if mode == "wrap":
        return fnp.mod(ind, size)
    raise ValueError(f"put: mode must be None, 'raise', 'clip' or 'wrap', got {mode!r}")


def put(a, ind, v, mode=None, *, inplace=True):
    """A copy of ``a`` with the elements at the flat indices ``ind`` set to ``v``
    (repeated as needed) (``numpy.put``, as JAX's ``inplace=False``).  mode: None
    (JAX's default) drops out-of-bounds indices, 'clip' clamps, 'wrap' wraps,
    'raise' raises IndexError (concrete indices)."""
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    if inplace:
        raise ValueError(_IMMUTABLE.format("put"))
    data = asarray_operand(a)
    ind = fnp.ravel(asarray_operand(ind))
    values = fnp.ravel(asarray_operand(v))
    if not is_integer(get_aval(ind).dtype):
        raise TypeError(f"put: indices must be integers, got {get_aval(ind).dtype.name}")
    size, count = get_aval(data).size, get_aval(ind).size
    if size == 0 or count == 0 or get_aval(values).size == 0:
        return data
    positions = _put_positions(fnp, ind, size, mode)
    values = fnp.resize(values, (count,)).astype(get_aval(data).dtype)
    flat = _IndexUpdateHelper(fnp.ravel(data))[positions].set(values, mode="drop")
    return lax.reshape(flat, get_aval(data).shape)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices ``(rows, cols)`` where ``mask_func(ones((n, n)), k)`` is nonzero
    (``numpy.mask_indices``; ``size`` as ``nonzero``'s, for use under jit)."""
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    n = operator.index(n)
    return tuple(fnp.nonzero(mask_func(fnp.ones((n, n)), k), size=size))
