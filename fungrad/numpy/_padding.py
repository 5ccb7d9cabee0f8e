"""``pad`` (every NumPy mode), diagonals and triangles, with NumPy's names and
semantics, on the structural lax primitives (split from ``_shape``, whose
helpers and conventions they share: see its docstring)."""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import core, lax
from fungrad.core import Tracer
from fungrad.numpy._shape import (_astype, _axis, _fnp, _operand, _out, _slice_axis,
                                  _static_int, _take_static, broadcast_shapes,
                                  broadcast_to, concatenate, flip, moveaxis, shape, squeeze)

__all__ = ["pad", "diagonal", "trace", "tril", "triu"]


# ----------------------------------------------------------------------------
# Padding
# ----------------------------------------------------------------------------

def _as_pairs(value, rank: int, name: str, as_index: bool) -> list:
    """Broadcast a pad_width / constant_values spec to ``rank`` (before, after) pairs."""
    if isinstance(value, dict):
        pairs = [(0, 0)] * rank
        for ax, w in value.items():
            pairs[_axis("pad", ax, rank)] = _as_pairs(w, 1, name, as_index)[0]
        return pairs
    arr = np.asarray(value)
    if as_index:
        if dtype_kind(arr.dtype) not in "iub":
            raise TypeError(f"pad: `{name}` must be of integral type, got {arr.dtype}")
        arr = arr.astype(np.int64)
        if arr.size and arr.min() < 0:
            raise ValueError(f"pad: `{name}` can't contain negative values, got {value}")
    if arr.ndim < 3 and arr.size == 1:
        return [(arr.ravel()[0], arr.ravel()[0])] * rank
    if arr.ndim < 3 and arr.size == 2 and arr.shape != (2, 1):
        return [tuple(arr.ravel())] * rank
    try:
        return [tuple(p) for p in np.broadcast_to(arr, (rank, 2))]
    except ValueError:
        raise ValueError(f"pad: `{name}` of shape {arr.shape} cannot be broadcast to "
                         f"({rank}, 2) (one (before, after) pair per axis)") from None


def _pad_constant(x, widths, values):
    """Pad with constants; per-axis values are applied axis by axis, so corners
    take the value of the later axis, as in NumPy."""
    if isinstance(values, Tracer):   # a traced fill value (differentiable)
        fill = _astype(values, x.dtype)
        if fill.ndim:
            raise ValueError("pad: a traced constant_values must be a scalar")
        return lax.pad(x, fill, tuple((lo, hi, 0) for lo, hi in widths))
    pairs = _as_pairs(values, x.ndim, "constant_values", as_index=False)
    flat = {np.asarray(v).item() for pair in pairs for v in pair} if pairs else {0}
    if len(flat) <= 1:
        fill = np.asarray(flat.pop() if flat else 0).astype(x.dtype)
        return lax.pad(x, fill, tuple((lo, hi, 0) for lo, hi in widths))
    for ax, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, pairs)):
        for width, v, side in ((lo, v_lo, 0), (hi, v_hi, 1)):
            if width:
                config = [(0, 0, 0)] * x.ndim
                config[ax] = (width, 0, 0) if side == 0 else (0, width, 0)
                x = lax.pad(x, np.asarray(v).astype(x.dtype), tuple(config))
    return x


def _axes_to_pad(x, widths):
    """(axis, low, high, length) of each axis that gets padding; an empty axis
    can't be extended by the modes that copy elements."""
    for ax, (lo, hi) in enumerate(widths):
        if not lo and not hi:
            continue
        n = x.shape[ax]
        if n == 0:
            raise ValueError(f"pad: can't extend empty axis {ax} using modes other "
                             "than 'constant' or 'empty'")
        yield ax, lo, hi, n


def _pad_by_index(x, widths, mode: str, **kwargs):
    """edge / reflect / symmetric / wrap: every padded element copies an element
    of the same line, so each axis is one static take (NumPy computes the map)."""
    for ax, lo, hi, n in _axes_to_pad(x, widths):
        idx = np.pad(np.arange(n), (lo, hi), mode=mode, **kwargs)
        x = _take_static(x, idx, ax)
    return x


def _pad_odd_reflection(x, widths, mode: str):
    """reflect_type='odd' is linear: out = M @ x along each axis, with M obtained
    by padding the identity matrix (NumPy computes M)."""
    matmul = _fnp().matmul
    for ax, lo, hi, n in _axes_to_pad(x, widths):
        m = np.pad(np.eye(n, dtype=x.dtype), ((lo, hi), (0, 0)), mode=mode,
                   reflect_type="odd")
        moved = moveaxis(x, ax, -1)
        x = moveaxis(matmul(moved, core.wrap_array(m.T.copy())), -1, ax)
    return x


def _pad_linear_ramp(x, widths, end_values):
    """Ramps from ``end_values`` to the edge values (endpoint excluded), as NumPy."""
    from fungrad.numpy._creation import linspace
    ends = _as_pairs(end_values, x.ndim, "end_values", as_index=False)
    for ax, lo, hi, n in _axes_to_pad(x, widths):
        e_lo, e_hi = ends[ax]
        first = squeeze(_slice_axis(x, 0, 1, ax), ax)
        last = squeeze(_slice_axis(x, n - 1, n, ax), ax)
        left = linspace(e_lo, first, lo, endpoint=False, dtype=x.dtype, axis=ax)
        right = flip(linspace(e_hi, last, hi, endpoint=False, dtype=x.dtype, axis=ax), ax)
        x = concatenate([left, x, right], axis=ax)
    return x


_PAD_KWARGS = {"constant": {"constant_values"}, "empty": set(), "edge": set(),
               "wrap": set(), "reflect": {"reflect_type"},
               "symmetric": {"reflect_type"}, "linear_ramp": {"end_values"}}


def pad(array, pad_width, mode="constant", **kwargs):
    """``np.pad`` for modes constant, empty (zeros), edge, reflect, symmetric
    (both reflect_type='even' and 'odd'), wrap and linear_ramp."""
    x = _operand(array)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"pad: mode {mode!r} is not supported; supported "
                                  f"modes: {', '.join(sorted(_PAD_KWARGS))}")
    unknown = set(kwargs) - _PAD_KWARGS[mode]
    if unknown:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(unknown)}")
    widths = [(int(lo), int(hi)) for lo, hi in
              _as_pairs(pad_width, x.ndim, "pad_width", as_index=True)]
    if mode in ("constant", "empty"):
        value = kwargs.get("constant_values", 0)
        from fungrad.numpy._ufunc_dtypes import weak_if_all_weak
        return _out(weak_if_all_weak(_pad_constant(x, widths, value), (x, value)))
    if mode == "linear_ramp":
        return _out(_pad_linear_ramp(x, widths, kwargs.get("end_values", 0)))
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if reflect_type == "odd":
        return _out(_pad_odd_reflection(x, widths, mode))
    return _out(_pad_by_index(x, widths, mode))


# ----------------------------------------------------------------------------
# Diagonals and triangles
# ----------------------------------------------------------------------------

def _diagonal_planes(name, a, offset, axis1, axis2):
    """``a`` with the (axis1, axis2) planes as its last two axes, and the offset."""
    x = _operand(a)
    if x.ndim < 2:
        raise ValueError(f"{name} requires an array of at least two dimensions, got "
                         f"shape {x.shape}")
    i, j = _axis(name, axis1, x.ndim), _axis(name, axis2, x.ndim)
    if i == j:
        raise ValueError(f"{name}: axis1 and axis2 cannot be the same (both {i})")
    k = _static_int(offset, f"{name}'s offset")
    rest = [d for d in range(x.ndim) if d not in (i, j)]
    return lax.transpose(x, tuple(rest) + (i, j)), k


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal of the (axis1, axis2) planes, as the last axis.

    The two axes are moved last and merged; the diagonal is then a strided
    slice of the merged axis (stride = columns + 1): reshape + slice, linear.
    """
    x, k = _diagonal_planes("diagonal", a, offset, axis1, axis2)
    lead, (rows, cols) = x.shape[:-2], x.shape[-2:]
    length = max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))
    start = k if k >= 0 else -k * cols
    flat = lax.reshape(x, lead + (rows * cols,))
    if length == 0:
        return _out(_slice_axis(flat, 0, 0, len(lead)))
    stop = start + (length - 1) * (cols + 1) + 1
    return _out(_slice_axis(flat, start, stop, len(lead), cols + 1))


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """NumPy's accumulator for sum/trace: small ints and bools widen to 64 bits."""
    if dtype_kind(dtype) == "b" or (dtype_kind(dtype) == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype_kind(dtype) == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along the ``offset`` diagonal of the (axis1, axis2) planes.

    The terms are made strong as jnp.sum makes them in JAX's trace (the value
    is strong; the conversion's transpose makes a weak input's gradient weak).
    """
    if out is not None:
        raise TypeError("trace: out= is not supported (fungrad arrays are immutable)")
    x, k = _diagonal_planes("trace", a, offset, axis1, axis2)
    dt = _sum_dtype(x.dtype) if dtype is None else np.dtype(dtype)
    from fungrad.lax.elementwise import convert_weak_type
    rows, cols = x.shape[-2:]
    spanning = (k >= 0 and rows <= cols - k) or (k < 0 and cols <= rows + k)
    # (only a weak matrix's cotangent comes out of the two forms with other
    # types; a strong one's takes the O(n) slice)
    if spanning and core.get_aval(x).weak_type:
        return _out(_sum_of_spanning_diagonal(x, k, dt))
    d = diagonal(x, k, x.ndim - 2, x.ndim - 1)
    return _out(lax.reduce_sum(convert_weak_type(d, dt, False), (d.ndim - 1,)))


def _sum_of_spanning_diagonal(x, k, dtype):
    """The trace of planes whose ``k`` diagonal has an element in every row
    (every column, for a negative ``k``), as JAX's: the planes masked to their
    diagonal by a select, whose transpose keeps a weak cotangent weak (a
    slice's makes it strong), then summed; O(n^2), as JAX's.  Each row
    (column) holds one term, so summing it first is exact: the total is
    NumPy's sum of the diagonal, bit for bit.  (Where the diagonal misses
    rows, the line sums would end in zeros that change NumPy's pairwise
    grouping, so ``trace`` slices there.)"""
    from fungrad.lax.elementwise import _zeros, convert_weak_type
    on_diagonal = np.broadcast_to(np.eye(*x.shape[-2:], k=k, dtype=bool), x.shape)
    masked = convert_weak_type(lax.select(on_diagonal, x, _zeros(x)), dtype, False)
    lines = lax.reduce_sum(masked, (x.ndim - 1 if k >= 0 else x.ndim - 2,))
    return lax.reduce_sum(lines, (x.ndim - 2,))


def _triangle(name: str, m, mask_fn):
    x = _operand(m)
    if x.ndim < 1:
        raise ValueError(f"{name}: input must be at least 1-d (a 1-d input is "
                         "broadcast to a square matrix, as in NumPy)")
    rows, cols = x.shape[-2:] if x.ndim >= 2 else (x.shape[0], x.shape[0])
    mask = mask_fn(rows, cols)
    shape = broadcast_shapes(x.shape, mask.shape)
    x = broadcast_to(x, shape)
    zeros = lax.full(shape, 0, x.dtype)
    return _out(lax.select_n(np.broadcast_to(mask, shape), zeros, x))


def tril(m, /, k=0):
    """Lower triangle (entries above the ``k``-th diagonal set to 0)."""
    k = _static_int(k, "tril's k")
    return _triangle("tril", m, lambda r, c: np.tri(r, c, k, dtype=bool))


def triu(m, /, k=0):
    """Upper triangle (entries below the ``k``-th diagonal set to 0)."""
    k = _static_int(k, "triu's k")
    return _triangle("triu", m, lambda r, c: ~np.tri(r, c, k - 1, dtype=bool))
