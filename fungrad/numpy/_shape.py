"""Shape manipulation with NumPy's names and semantics, built on lax.

Every function here is a composition of a few *structural* lax primitives
(reshape, transpose, broadcast_in_dim, slice, rev, pad, concatenate), all of
which are linear, so every function is differentiable to any order and
batches under ``vmap`` through those primitives' rules.

Conventions:
* axis arguments accept negative values; an out-of-range axis raises
  ``numpy.exceptions.AxisError`` (a ``ValueError`` and an ``IndexError``)
  naming the function, the axis and the rank;
* shape-determining arguments (shapes, split points, repeats, pad widths,
  shifts) must be concrete: a traced value raises ``ConcretizationTypeError``;
* results are read-only ``fungrad.Array``s (eager) or tracers, never one of
  the caller's writable arrays, and inputs are never modified;
* index maps with a static pattern (pad's reflect/wrap modes, roll, insert,
  delete, repeat with an array of repeats) are computed with NumPy on
  ``arange`` and applied with ``_take_static``: a few slices + concatenate.

``pad``, diagonals and triangles are in ``_padding`` (on these helpers).
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import core, lax
from fungrad.core import Tracer
from fungrad.numpy import _lattice
from fungrad.numpy._dtypes import asarray_operand, dtype_of
from fungrad.numpy._dtypes import result_type as _ops_result_type
from fungrad.numpy._dtypes import weak_result_type as _weak_result_type
from fungrad.numpy._lattice import lattice_result_type

__all__ = [
    # queries and dtype helpers
    "shape", "ndim", "size", "result_type", "promote_types", "can_cast",
    "isscalar", "iscomplexobj", "isrealobj", "iscomplex", "isreal", "iterable",
    # reshaping
    "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to",
    "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "resize",
    # axes
    "transpose", "permute_dims", "matrix_transpose", "moveaxis", "swapaxes", "rollaxis",
    "flip", "fliplr", "flipud", "rot90", "roll",
    # joining and splitting
    "concatenate", "concat", "stack", "hstack", "vstack", "dstack",
    "column_stack", "row_stack", "block", "append", "split", "array_split",
    "hsplit", "vsplit", "dsplit", "unstack",
    # repetition, insertion
    "tile", "repeat", "insert", "delete", "trim_zeros",
]

AxisError = np.exceptions.AxisError
_MAX_RUNS = 16   # above this many slices, _take_static uses a gather instead


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

def _operand(x):
    """A tracer or ndarray for ``x`` (lists and Python scalars: NumPy's dtypes)."""
    return asarray_operand(x)


def _out(x):
    """Results are tracers or read-only fungrad Arrays, never a caller's array."""
    return x if isinstance(x, Tracer) else core.wrap_array(x)


def _concrete(value, what: str):
    """The concrete value of a shape-determining argument. Under jvp/grad a
    tracer has one; under jit/vmap this raises the concretization error."""
    if isinstance(value, Tracer):
        return value._concrete_or_raise(f"{what} (it determines the shape of the result)")
    return value


def _static_int(value, what: str) -> int:
    """``int(value)`` for a shape-like argument (traced values need a concrete value)."""
    value = _concrete(value, what)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} "
                        f"{value!r:.40}") from None


def _static_ints(values, what: str) -> tuple:
    values = _concrete(values, what)
    if np.ndim(values) == 0:
        return (_static_int(values, what),)
    return tuple(_static_int(v, what) for v in values)


def _shape_tuple(shape, what: str = "shape") -> tuple:
    """A shape argument (int or sequence of ints) as a tuple of ints >= 0."""
    dims = _static_ints(shape, what)
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimensions are not allowed: {what}={dims}")
    return dims


def _axis(name: str, axis, ndim: int) -> int:
    """Normalise one axis; out of range -> AxisError naming ``name`` and the rank."""
    a = _static_int(axis, f"{name}'s axis")
    if not -ndim <= a < ndim:
        raise AxisError(f"{name}: axis {a} is out of bounds for an array of rank "
                        f"{ndim} (valid axes: {-ndim}..{ndim - 1})" if ndim else
                        f"{name}: axis {a} is out of bounds for a 0-d array (it has no axes)")
    return a % ndim


def _axes(name: str, axes, ndim: int) -> tuple:
    """Normalise an int or sequence of axes; repeated axes raise ValueError."""
    seq = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    out = tuple(_axis(name, a, ndim) for a in seq)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(seq)}")
    return out


def _slice_axis(x, start: int, stop: int, axis: int, step: int = 1):
    """``x[..., start:stop:step, ...]`` along ``axis`` (start <= stop, step > 0)."""
    shape = x.shape
    if start == 0 and stop == shape[axis] and step == 1:
        return x
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return lax.slice(x, tuple(starts), tuple(limits),
                     None if step == 1 else tuple(strides))


def _index_runs(idx) -> list:
    """Split an index vector into arithmetic runs ``(first, step, length)``."""
    runs, i, n = [], 0, len(idx)
    while i < n:
        if i + 1 == n:
            runs.append((int(idx[i]), 1, 1))
            break
        step = int(idx[i + 1] - idx[i])
        j = i + 1
        while j + 1 < n and idx[j + 1] - idx[j] == step:
            j += 1
        if abs(step) > 1 and j - i + 1 < 3:   # a jump, not a strided run
            j = i
        runs.append((int(idx[i]), step if j > i else 1, j - i + 1))
        i = j + 1
    return runs


def _run_piece(x, first: int, step: int, length: int, axis: int):
    """The elements ``first, first+step, ...`` (``length`` of them) along ``axis``."""
    if step == 0 or length == 1:
        piece = _slice_axis(x, first, first + 1, axis)
        if length == 1:
            return piece
        shape = piece.shape[:axis] + (length,) + piece.shape[axis + 1:]
        return lax.broadcast_in_dim(piece, shape, tuple(range(len(shape))))
    if step > 0:
        return _slice_axis(x, first, first + step * (length - 1) + 1, axis, step)
    last = first + step * (length - 1)
    return lax.rev(_slice_axis(x, last, first + 1, axis, -step), (axis,))


def _take_static(x, idx, axis: int):
    """``np.take(x, idx, axis)`` for a concrete 1-D index vector ``idx``.

    Static index maps (roll, pad modes, insert/delete) are a handful of
    arithmetic runs, so slices + one concatenate express them with linear
    primitives only; long irregular maps fall back to a gather.
    """
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size == 0:
        return _slice_axis(x, 0, 0, axis)
    if np.array_equal(idx, np.arange(x.shape[axis])):
        return x
    runs = _index_runs(idx)
    if len(runs) > _MAX_RUNS:
        return _fnp().take(x, idx, axis=axis)
    pieces = [_run_piece(x, f, s, n, axis) for f, s, n in runs]
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _fnp():
    import fungrad.numpy as fnp   # late: functions of other fungrad.numpy modules
    return fnp


def _astype(x, dtype, weak: bool = False):
    """``x`` as ``dtype`` (a conversion of a promotion takes the result's weak type)."""
    if dtype_of(x) == dtype:
        return x
    from fungrad.lax.elementwise import convert_weak_type
    return convert_weak_type(x, dtype, weak)


# ----------------------------------------------------------------------------
# Queries and dtype helpers
# ----------------------------------------------------------------------------

def shape(a) -> tuple:
    """The shape of ``a`` (works on tracers: shapes are always static)."""
    return a.shape if isinstance(a, (Tracer, np.ndarray)) else np.shape(a)


def ndim(a) -> int:
    return a.ndim if isinstance(a, (Tracer, np.ndarray)) else np.ndim(a)


def size(a, axis=None) -> int:
    s = shape(a)
    if axis is None:
        return math.prod(s)
    axes = _axes("size", axis, len(s))
    return math.prod([s[i] for i in axes])


def _typed_arg(x) -> tuple:
    """``(dtype, weak)`` of a ``result_type`` argument, as JAX reads it: the
    types ``int``/``float``/``complex`` and Python scalars are weak; dtype
    specifiers, NumPy arrays and scalars are canonicalised (32-bit without
    x64); fungrad Arrays and tracers keep their dtype; None is the default float."""
    if isinstance(x, Tracer):
        return x.dtype, x.weak_type
    if x is None:
        return core.default_float_dtype(), False
    if x is int or x is float or x is complex:
        return core.canonicalize_dtype(x), True
    if type(x) in (bool, int, float, complex):
        return core.scalar_dtype(x), type(x) is not bool
    if type(x) is core.Array:
        return x.dtype, False
    if isinstance(x, (np.ndarray, np.generic)):
        return core.canonicalize_dtype(x.dtype), False
    try:
        return core.canonicalize_dtype(np.dtype(x)), False
    except TypeError:
        return core.canonicalize_dtype(np.asarray(x).dtype), False


def result_type(*arrays_and_dtypes, return_weak_type_flag: bool = False):
    """JAX's result dtype for arrays, tracers, dtypes and Python scalars (its
    promotion lattice: ``float32`` and ``int64`` give ``float32``; Python
    scalars are weak; see ``_lattice.py``)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    dtype, weak = lattice_result_type([_typed_arg(a) for a in arrays_and_dtypes])
    return (dtype, weak) if return_weak_type_flag else dtype


def promote_types(type1, type2) -> np.dtype:
    """JAX's ``promote_types``: the join of two dtypes on its lattice
    (``int8`` and ``uint64`` give ``float64``); ``int``/``float``/``complex``
    count as weak (``promote_types('uint8', int)`` is ``uint8``)."""
    return _lattice.promote_types(type1, type2)


def can_cast(from_, /, to, casting="safe") -> bool:
    """``np.can_cast``; a tracer counts as its dtype."""
    if isinstance(from_, Tracer):
        from_ = from_.dtype
    return np.can_cast(from_, to, casting=casting)


def isscalar(element) -> bool:
    """NumPy's definition: Python/NumPy scalars are scalars, arrays (including
    0-d arrays and tracers) are not (``jnp.isscalar`` differs: it says True
    for 0-d arrays)."""
    return False if isinstance(element, Tracer) else bool(np.isscalar(element))


def iscomplexobj(x) -> bool:
    if isinstance(x, Tracer):
        return dtype_kind(x.dtype) == "c"
    return bool(np.iscomplexobj(x))


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def iscomplex(x):
    """Elementwise: True where the imaginary part is non-zero."""
    fnp = _fnp()
    x = asarray_operand(x)
    return fnp.imag(x) != 0 if dtype_kind(dtype_of(x)) == "c" else fnp.zeros(core.get_aval(x).shape, bool)


def isreal(x):
    """Elementwise: True where the imaginary part is zero."""
    return _fnp().logical_not(iscomplex(x))


def iterable(y):
    """Whether ``y`` can be iterated over (0-d arrays cannot)."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


# ----------------------------------------------------------------------------
# Reshaping
# ----------------------------------------------------------------------------

def _infer_shape(new_shape, old_shape: tuple, total: int) -> tuple:
    """Resolve one -1 in ``new_shape``; a size mismatch names both shapes."""
    dims = _static_ints(new_shape, "reshape's shape")
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension (-1), got {dims}")
    if any(d < -1 for d in dims):
        raise ValueError(f"reshape: negative dimensions are not allowed, got {dims}")
    known = math.prod([d for d in dims if d != -1])
    if unknown and known != 0 and total % known == 0:
        dims = dims[:unknown[0]] + (total // known,) + dims[unknown[0] + 1:]
    elif unknown or known != total:
        shown = tuple("-1" if d == -1 else d for d in dims)
        raise ValueError(
            f"cannot reshape array of shape {old_shape} (size {total}) into shape "
            f"({', '.join(map(str, shown))}{',' if len(dims) == 1 else ''}) "
            f"(size {'unknown' if unknown else known}): the sizes must match.")
    return dims


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """``np.reshape``: ``order`` 'C' (default) or 'F'; one -1 is inferred."""
    if newshape is not None:
        if shape is not None:
            raise TypeError("reshape: give either 'shape' or the deprecated "
                            "'newshape', not both.")
        warnings.warn("reshape's 'newshape' keyword is deprecated (NumPy 2.1); "
                      "use 'shape'.", DeprecationWarning, stacklevel=2)
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing the required argument 'shape'")
    x = _operand(a)
    dims = _infer_shape(shape, x.shape, math.prod(x.shape))
    if order in ("C", "A", "K", None):
        return _out(lax.reshape(x, dims))
    if order == "F":   # column-major order: reverse the axes on both sides
        xt = transpose(x)
        return transpose(lax.reshape(xt, dims[::-1]))
    raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")


def ravel(a, order="C"):
    x = _operand(a)
    if order == "F":
        x = transpose(x)
    elif order not in ("C", "A", "K"):
        raise ValueError(f"ravel: order must be 'C', 'F', 'A' or 'K', got {order!r}")
    return _out(lax.reshape(x, (math.prod(x.shape),)))


def expand_dims(a, /, axis):
    """Insert size-1 axes at the positions ``axis`` (int or tuple) of the result."""
    x = _operand(a)
    n_new = 1 if np.ndim(axis) == 0 else len(axis)
    axes = set(_axes("expand_dims", axis, x.ndim + n_new))
    dims = iter(x.shape)
    new_shape = tuple(1 if i in axes else next(dims) for i in range(x.ndim + n_new))
    return _out(lax.reshape(x, new_shape))


def squeeze(a, /, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``, which must be size 1)."""
    x = _operand(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes("squeeze", axis, x.ndim)
        for i in axes:
            if x.shape[i] != 1:
                raise ValueError(
                    f"squeeze: cannot select an axis to squeeze out which has size "
                    f"not equal to one: axis {i} has size {x.shape[i]} in shape {x.shape}")
    new_shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return _out(lax.reshape(x, new_shape))


def broadcast_to(array, /, shape):
    """``np.broadcast_to`` (the result is read-only, as NumPy's)."""
    x = _operand(array)
    target = _shape_tuple(shape)
    lead = len(target) - x.ndim
    ok = lead >= 0 and all(d in (1, target[lead + i]) for i, d in enumerate(x.shape))
    if not ok:
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {x.shape} "
                         f"to shape {target}: each dimension must be 1 or equal to the "
                         "target's trailing dimension, and the target needs at least "
                         f"{x.ndim} dimensions.")
    return _out(lax.broadcast_in_dim(x, target, tuple(range(lead, len(target)))))


def broadcast_shapes(*shapes) -> tuple:
    shapes = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def broadcast_arrays(*args) -> list:
    """The arguments broadcast to one shape: a list, as JAX and the array API
    (NumPy 2 gives a tuple)."""
    ops = [_operand(a) for a in args]
    target = broadcast_shapes(*(x.shape for x in ops))
    return [broadcast_to(x, target) for x in ops]


def _atleast(arys, ndim_min: int, place):
    outs = []
    for a in arys:
        x = _operand(a)
        outs.append(_out(lax.reshape(x, place(x.shape)) if x.ndim < ndim_min else x))
    return outs[0] if len(outs) == 1 else tuple(outs)


def atleast_1d(*arys):
    return _atleast(arys, 1, lambda s: (1,))


def atleast_2d(*arys):
    return _atleast(arys, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*arys):
    # NumPy's placement: (N,) -> (1, N, 1) and (M, N) -> (M, N, 1)
    return _atleast(arys, 3, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def resize(a, new_shape):
    """``np.resize``: the flattened ``a`` repeated cyclically to fill ``new_shape``."""
    target = _shape_tuple(new_shape, "resize's new_shape")
    flat = ravel(a)
    total = math.prod(target)
    if flat.size == 0 or total == 0:
        return _fnp().zeros(target, flat.dtype)
    copies = -(-total // flat.size)
    tiled = tile(flat, copies) if copies > 1 else flat
    return reshape(_slice_axis(tiled, 0, total, 0), target)


# ----------------------------------------------------------------------------
# Axes: transpose, moveaxis, flips, rotations, roll
# ----------------------------------------------------------------------------

def transpose(a, axes=None):
    """Permute the axes (reverse them when ``axes`` is None)."""
    x = _operand(a)
    if axes is None:
        perm = tuple(range(x.ndim))[::-1]
    else:
        perm = _axes("transpose", axes, x.ndim)
        if len(perm) != x.ndim:
            raise ValueError(f"transpose: axes {tuple(axes)} don't match an array of "
                             f"rank {x.ndim}: give a permutation of all {x.ndim} axes")
    return _out(lax.transpose(x, perm))


def permute_dims(a, /, axes):
    return transpose(a, axes)


def matrix_transpose(x, /):
    x = _operand(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: input must have at least 2 dimensions, "
                         f"got shape {x.shape}")
    return swapaxes(x, -1, -2)


def moveaxis(a, /, source, destination):
    x = _operand(a)
    src = _axes("moveaxis (source)", source, x.ndim)
    dst = _axes("moveaxis (destination)", destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the "
                         f"same number of elements, got {source} and {destination}")
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _out(lax.transpose(x, tuple(order)))


def swapaxes(a, axis1, axis2):
    x = _operand(a)
    i, j = _axis("swapaxes", axis1, x.ndim), _axis("swapaxes", axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[i], perm[j] = j, i
    return _out(lax.transpose(x, tuple(perm)))


def rollaxis(a, axis, start=0):
    """Move ``axis`` to before position ``start`` (``numpy.rollaxis``)."""
    a = asarray_operand(a)
    n = core.get_aval(a).ndim
    axis, start = _static_int(axis, "rollaxis's axis"), _static_int(start, "rollaxis's start")
    if not -n <= axis < n:
        raise np.exceptions.AxisError(axis, n, "fungrad.numpy.rollaxis")
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"rollaxis: start={start} must be in [{-n}, {n}]")
    axis %= n
    start = start % n if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


def flip(m, /, axis=None):
    x = _operand(m)
    axes = tuple(range(x.ndim)) if axis is None else _axes("flip", axis, x.ndim)
    return _out(lax.rev(x, axes) if axes else x)


def fliplr(m):
    x = _operand(m)
    if x.ndim < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {x.shape}")
    return flip(x, 1)


def flipud(m):
    x = _operand(m)
    if x.ndim < 1:
        raise ValueError("flipud: input must be >= 1-d, got a 0-d array")
    return flip(x, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (NumPy's recipe)."""
    x = _operand(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}")
    a0, a1 = (_axis("rot90", a, x.ndim) for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: axes must be different, got axes={axes}")
    k = _static_int(k, "rot90's k") % 4
    if k == 0:
        return _out(x)
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, a1), perm)
    return flip(transpose(x, perm), a1)


def roll(a, /, shift, axis=None):
    """Roll elements along axes (static shifts; ``shift``/``axis`` may be tuples)."""
    x = _operand(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    if np.ndim(shift) > 1 or np.ndim(axis) > 1:
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences")
    shifts = np.asarray(_static_ints(shift, "roll's shift"))
    axes_raw = np.asarray(_static_ints(axis, "roll's axis"))
    shifts, axes_raw = np.broadcast_arrays(shifts, axes_raw)
    total = {}
    for s, ax in zip(shifts.tolist(), axes_raw.tolist()):
        ax = _axis("roll", ax, x.ndim)
        total[ax] = total.get(ax, 0) + s
    for ax, s in total.items():
        n = x.shape[ax]
        if n and s % n:
            x = _take_static(x, (np.arange(n) - s) % n, ax)
    return _out(x)


# ----------------------------------------------------------------------------
# Joining
# ----------------------------------------------------------------------------

def _as_sequence(arrays, name: str) -> list:
    """NumPy lets an array stand for the sequence of its sub-arrays along axis 0."""
    if isinstance(arrays, (Tracer, np.ndarray)):
        return list(unstack(arrays)) if arrays.ndim else [arrays]
    if not isinstance(arrays, (list, tuple)):
        try:
            arrays = list(arrays)
        except TypeError:
            raise TypeError(f"{name}: expected a sequence of arrays, got "
                            f"{type(arrays).__name__}") from None
    return list(arrays)


def _common_dtype(name: str, ops, dtype, casting: str):
    if dtype is None:
        return _ops_result_type(*ops)
    dtype = np.dtype(dtype)
    for i, x in enumerate(ops):
        if not np.can_cast(x.dtype, dtype, casting=casting):
            raise TypeError(f"{name}: cannot cast array {i} from dtype {x.dtype.name} to "
                            f"{dtype.name} according to the rule {casting!r}")
    return dtype


def _check_concat_shapes(ops, axis: int):
    first = ops[0].shape
    for i, x in enumerate(ops[1:], 1):
        for d, (n0, n1) in enumerate(zip(first, x.shape)):
            if d != axis and n0 != n1:
                raise ValueError(
                    "concatenate: all the input array dimensions except for the "
                    f"concatenation axis ({axis}) must match exactly, but along "
                    f"dimension {d}, the array at index 0 has size {n0} and the array "
                    f"at index {i} has size {n1} (shapes {first} and {x.shape})")


def _extended_array_type(arrays):
    """The class of the typed PRNG key arrays among ``arrays`` (which join
    themselves: ``_stack``/``_concatenate``), or None. fungrad.random's key
    arrays say so with ``__fungrad_extended_array__`` (a layer below, numpy
    cannot import them)."""
    for a in arrays:
        if getattr(type(a), "__fungrad_extended_array__", False):
            return type(a)
    return None


def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along ``axis`` (None: flatten first), promoting dtypes as NumPy."""
    if out is not None:
        raise TypeError("concatenate: out= is not supported (fungrad arrays are "
                        "immutable); use the returned array.")
    arrays = _as_sequence(arrays, "concatenate")
    if (keys := _extended_array_type(arrays)) is not None:
        return keys._concatenate(arrays, axis)
    ops = [_operand(a) for a in arrays]
    if not ops:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        ops, axis = [ravel(x) for x in ops], 0
    if any(x.ndim == 0 for x in ops):
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated; "
                         "use stack, or make them 1-d first (atleast_1d)")
    for i, x in enumerate(ops[1:], 1):
        if x.ndim != ops[0].ndim:
            raise ValueError(
                "concatenate: all the input arrays must have the same number of "
                f"dimensions, but the array at index 0 has {ops[0].ndim} dimension(s) "
                f"and the array at index {i} has {x.ndim} dimension(s)")
    axis = _axis("concatenate", axis, ops[0].ndim)
    _check_concat_shapes(ops, axis)
    dt = _common_dtype("concatenate", ops, dtype, casting)
    weak = dtype is None and _weak_result_type(*ops)[1]
    # (every operand takes the result's type, a weak one of its dtype too, as
    # JAX's promote_dtypes: the conversion's transpose makes its cotangent weak)
    from fungrad.lax.elementwise import convert_weak_type
    ops = [convert_weak_type(x, dt, weak) for x in ops]
    return _out(ops[0] if len(ops) == 1 else lax.concatenate(ops, axis))


def concat(arrays, /, *, axis=0):
    """Array-API spelling of ``concatenate``."""
    return concatenate(arrays, axis=axis)


def stack(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is not None:
        raise TypeError("stack: out= is not supported (fungrad arrays are immutable)")
    arrays = _as_sequence(arrays, "stack")
    if (keys := _extended_array_type(arrays)) is not None:
        return keys._stack(arrays, axis)
    ops = [_operand(a) for a in arrays]
    if not ops:
        raise ValueError("stack: need at least one array to stack")
    for i, x in enumerate(ops[1:], 1):
        if x.shape != ops[0].shape:
            raise ValueError(f"stack: all input arrays must have the same shape, but "
                             f"array 0 has shape {ops[0].shape} and array {i} has "
                             f"shape {x.shape}")
    axis = _axis("stack", axis, ops[0].ndim + 1)
    expanded = [expand_dims(x, axis) for x in ops]
    return concatenate(expanded, axis=axis, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in _as_sequence(tup, "hstack")]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis=axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_2d(a) for a in _as_sequence(tup, "vstack")]
    return concatenate(arrs, axis=0, dtype=dtype, casting=casting)


row_stack = vstack


def dstack(tup):
    arrs = [atleast_3d(a) for a in _as_sequence(tup, "dstack")]
    return concatenate(arrs, axis=2)


def column_stack(tup):
    """1-d inputs become columns; 2-d inputs are stacked as they are."""
    arrs = []
    for a in _as_sequence(tup, "column_stack"):
        x = _operand(a)
        arrs.append(reshape(x, (-1, 1)) if x.ndim < 2 else x)
    return concatenate(arrs, axis=1)


def _block_depth(arrays, index=()) -> int:
    if isinstance(arrays, tuple):
        raise TypeError(f"block: arrays{list(index)} is a tuple; only lists may be "
                        "used to arrange blocks, and np.block does not allow implicit "
                        "conversion from tuple to ndarray.")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"block: arrays{list(index)} is an empty list; lists cannot "
                         "be empty")
    depths = {_block_depth(a, index + (i,)) for i, a in enumerate(arrays)}
    if len(depths) != 1:
        raise ValueError(f"block: list depths are mismatched inside arrays{list(index)}")
    return 1 + depths.pop()


def _block_max_ndim(arrays) -> int:
    if isinstance(arrays, list):
        return max(_block_max_ndim(a) for a in arrays)
    return ndim(arrays)


def _block_join(arrays, depth: int, rank: int):
    if not isinstance(arrays, list):
        x = _operand(arrays)
        return lax.reshape(x, (1,) * (rank - x.ndim) + x.shape)
    parts = [_block_join(a, depth - 1, rank) for a in arrays]
    return concatenate(parts, axis=-depth)


def block(arrays):
    """Assemble an array from nested lists of blocks (``np.block``)."""
    depth = _block_depth(arrays)
    rank = max(_block_max_ndim(arrays), depth)
    return _out(_block_join(arrays, depth, rank))


def append(arr, values, axis=None):
    x, v = _operand(arr), _operand(values)
    if axis is None:
        return concatenate([ravel(x), ravel(v)], axis=0)
    return concatenate([x, v], axis=axis)


# ----------------------------------------------------------------------------
# Splitting
# ----------------------------------------------------------------------------

def _split_points(n: int, indices_or_sections, name: str) -> list:
    if np.ndim(indices_or_sections) == 0 and not isinstance(indices_or_sections, Tracer):
        sections = _static_int(indices_or_sections, f"{name}'s sections")
        if sections <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, "
                             f"got {sections}")
        each, extra = divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        return np.cumsum(sizes).tolist()
    points = _static_ints(indices_or_sections, f"{name}'s indices")
    return [0, *points, n]


def array_split(ary, indices_or_sections, axis=0):
    """Split into (possibly unequal) parts; split points use Python slice rules."""
    x = _operand(ary)
    axis = _axis("array_split", axis, x.ndim)
    n = x.shape[axis]
    points = _split_points(n, indices_or_sections, "array_split")
    parts = []
    for start, stop in zip(points[:-1], points[1:]):
        start, stop, _ = slice(start, stop).indices(n)
        parts.append(_out(_slice_axis(x, start, max(start, stop), axis)))
    return parts


def split(ary, indices_or_sections, axis=0):
    x = _operand(ary)
    if np.ndim(indices_or_sections) == 0:
        axis_n = _axis("split", axis, x.ndim)
        sections = _static_int(indices_or_sections, "split's sections")
        if sections <= 0 or x.shape[axis_n] % sections:
            raise ValueError(f"split: array split does not result in an equal division: "
                             f"axis {axis_n} of size {x.shape[axis_n]} into {sections} "
                             "sections (use array_split for unequal parts)")
    return array_split(x, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    x = _operand(ary)
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    x = _operand(ary)
    if x.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    x = _operand(ary)
    if x.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, 2)


def unstack(x, /, *, axis=0) -> tuple:
    """The sub-arrays along ``axis``, as a tuple (NumPy 2.1)."""
    x = _operand(x)
    if x.ndim == 0:
        raise ValueError("unstack: input array must be at least 1-d")
    axis = _axis("unstack", axis, x.ndim)
    rest = x.shape[:axis] + x.shape[axis + 1:]
    return tuple(_out(lax.reshape(_slice_axis(x, i, i + 1, axis), rest))
                 for i in range(x.shape[axis]))


# ----------------------------------------------------------------------------
# Repetition, insertion, deletion
# ----------------------------------------------------------------------------

def tile(A, /, reps):
    """Repeat ``A`` ``reps`` times per axis: one broadcast and one reshape."""
    x = _operand(A)
    reps = _static_ints(reps, "tile's reps")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: negative repetitions are not allowed, got reps={reps}")
    reps = (1,) * (x.ndim - len(reps)) + reps
    base = (1,) * (len(reps) - x.ndim) + x.shape
    x = lax.reshape(x, base)
    # broadcast to (r0, s0, r1, s1, ...) then merge each (r_i, s_i) pair
    interleaved = tuple(d for pair in zip(reps, base) for d in pair)
    dims = tuple(range(1, 2 * len(base), 2))
    big = lax.broadcast_in_dim(x, interleaved, dims)
    return _out(lax.reshape(big, tuple(r * s for r, s in zip(reps, base))))


def _repeat_indices(repeats, n: int, total):
    counts = np.asarray(repeats)
    if dtype_kind(counts.dtype) not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got dtype {counts.dtype}")
    if np.any(counts < 0):
        raise ValueError("repeat: negative repeats are not allowed")
    if counts.ndim > 1 or (counts.size != 1 and counts.size != n):
        raise ValueError(f"repeat: repeats of shape {counts.shape} do not match an axis "
                         f"of length {n} (give one count, or one per element)")
    idx = np.repeat(np.arange(n), counts.ravel() if counts.size != 1 else counts.item())
    if total is not None:
        pad = max(total - idx.size, 0)
        if pad and n == 0:
            raise ValueError(f"repeat: total_repeat_length={total} but the axis is empty")
        # jnp: a short result is completed with the final value of the axis
        idx = np.concatenate([idx[:total], np.full(pad, n - 1)])
    return idx


def repeat(a, /, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element ``repeats`` times (an int, or one concrete count per element).

    ``total_repeat_length`` (jnp) truncates the result, or extends it with
    the final value of the axis (``a[..., -1, ...]``), as jnp does.
    """
    x = _operand(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("repeat", axis, x.ndim)
    repeats = _concrete(repeats, "repeat's repeats")
    total = None if total_repeat_length is None else _static_int(
        total_repeat_length, "repeat's total_repeat_length")
    n = x.shape[axis]
    if np.ndim(repeats) == 0 and total is None:
        r = _static_int(repeats, "repeat's repeats")
        if r < 0:
            raise ValueError(f"repeat: negative repeats are not allowed, got {r}")
        shape = x.shape[:axis + 1] + (r,) + x.shape[axis + 1:]
        dims = tuple(i for i in range(x.ndim + 1) if i != axis + 1)
        big = lax.broadcast_in_dim(x, shape, dims)
        return _out(lax.reshape(big, x.shape[:axis] + (n * r,) + x.shape[axis + 1:]))
    return _out(_take_static(x, _repeat_indices(repeats, n, total), axis))


def _static_obj(obj, name: str):
    """insert/delete positions (int, slice, sequence, mask) must be concrete."""
    if isinstance(obj, slice):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_concrete(o, f"{name}'s positions") for o in obj]
    return _concrete(obj, f"{name}'s positions")


def delete(arr, obj, axis=None):
    """Remove the entries at static positions ``obj`` along ``axis``."""
    x = _operand(arr)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("delete", axis, x.ndim)
    keep = np.delete(np.arange(x.shape[axis]), _static_obj(obj, "delete"))
    return _out(_take_static(x, keep, axis))


def _insert_block(x, obj, values, axis: int):
    """The inserted values shaped and cast as NumPy's insert places them."""
    n = x.shape[axis]
    indices = np.arange(*obj.indices(n)) if isinstance(obj, slice) else np.asarray(obj)
    if indices.dtype == bool:
        indices = np.flatnonzero(indices)
    v = _astype(_operand(values), x.dtype)
    if indices.size == 1:
        v = lax.reshape(v, (1,) * (x.ndim - v.ndim) + v.shape)
        if np.ndim(indices) == 0:   # a[:, i] = v behaves like a[:, i:i+1] = v
            v = moveaxis(v, 0, axis)
        count = v.shape[axis]
    else:
        count = indices.size
    block_shape = x.shape[:axis] + (count,) + x.shape[axis + 1:]
    return broadcast_to(v, block_shape), count


def insert(arr, obj, values, axis=None):
    """Insert ``values`` before the static positions ``obj`` along ``axis``."""
    x = _operand(arr)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("insert", axis, x.ndim)
    obj = _static_obj(obj, "insert")
    block_vals, count = _insert_block(x, obj, values, axis)
    n = x.shape[axis]
    # where each output element comes from: 0..n-1 from x, n.. from the block
    order = np.insert(np.arange(n), obj, np.arange(n, n + count))
    joined = concatenate([x, block_vals], axis=axis)
    return _out(_take_static(joined, order, axis))


def trim_zeros(filt, trim="fb", axis=None):
    """``np.trim_zeros``: slice off leading/trailing zeros (of every axis, or of
    ``axis``). The amounts come from the concrete values (so this works under
    grad, where the slice is differentiable, but not under jit/vmap)."""
    x = _operand(filt)
    value = np.asarray(_concrete(x, "trim_zeros's input (the amount trimmed depends "
                                    "on the values)"))
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise ValueError(f"trim_zeros: unexpected character(s) in `trim`: {trim!r} "
                         "(use 'f', 'b' or 'fb')")
    axes = range(value.ndim) if axis is None else _axes("trim_zeros", axis, value.ndim)
    nonzero = np.argwhere(value)
    for ax in axes:
        if nonzero.size == 0:
            start = stop = 0
        else:
            start = int(nonzero[:, ax].min()) if "f" in trim else 0
            stop = int(nonzero[:, ax].max()) + 1 if "b" in trim else value.shape[ax]
        x = _slice_axis(x, start, stop, ax)
    return _out(x)
