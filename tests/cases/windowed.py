"""Cases for fungrad.lax.windowed (see tests/harness.py).

The reference ``ref_reduce_window`` is written independently of the
implementation: Python loops over output positions and window taps, mapping
each tap back to an operand element (skipping base-dilation holes and
padding).  ``ref_select_index`` likewise finds the first max/min of each
window by a scan with a strict comparison.  Shapes are small so that
check_grads at order 2 stays fast; max/min operands are drawn without ties.
"""
import itertools

import numpy as np

from fungrad import lax
import fungrad.numpy as jnp
from fungrad.lax.windowed import (reduce_window, reduce_window_max, reduce_window_min,
                                  reduce_window_sum, window_gather_p, window_scatter_add_p,
                                  window_select_index_p)
from tests.harness import Arg, Case

_COMBINE = {"sum": lambda a, b: a + b, "max": max, "min": min}


def _identity(kind, dtype):
    dtype = np.dtype(dtype)
    if kind == "sum":
        return dtype.type(0)
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max)
    return dtype.type(-np.inf if kind == "max" else np.inf)


def _out_size(n, k, s, lo, hi, bd, wd):
    padded = (0 if n == 0 else (n - 1) * bd + 1) + lo + hi
    kd = (k - 1) * wd + 1
    return (padded - kd) // s + 1 if padded >= kd else 0


def _window_taps(x, pos, window, strides, pads, base, wdil):
    """(tap, value) for the taps of the window at ``pos``; None for holes/padding."""
    for tap in itertools.product(*map(range, window)):
        src = []
        for p, t, s, (lo, _), bd, wd, n in zip(pos, tap, strides, pads, base, wdil, x.shape):
            j = p * s + t * wd - lo          # position in the dilated operand
            src.append(j // bd if j >= 0 and j % bd == 0 and j // bd < n else None)
        yield tap, (None if None in src else x[tuple(src)])


def _out_shape(x, window, strides, pads, base, wdil):
    return tuple(_out_size(n, k, s, lo, hi, bd, wd) for n, k, s, (lo, hi), bd, wd
                 in zip(x.shape, window, strides, pads, base, wdil))


def ref_reduce_window(kind, x, window, strides, pads, base=None, wdil=None):
    """Windowed sum/max/min by loops (reference only)."""
    nd = x.ndim
    base, wdil = base or (1,) * nd, wdil or (1,) * nd
    shape = _out_shape(x, window, strides, pads, base, wdil)
    out = np.empty(shape, x.dtype)
    for pos in itertools.product(*map(range, shape)):
        acc = _identity(kind, x.dtype)
        for _, v in _window_taps(x, pos, window, strides, pads, base, wdil):
            if v is not None:
                acc = _COMBINE[kind](acc, v)
        out[pos] = acc
    return out


def ref_select_index(kind, x, window, strides, pads, base=None, wdil=None):
    """Row-major window position of the first max/min (holes/padding hold the identity)."""
    nd = x.ndim
    base, wdil = base or (1,) * nd, wdil or (1,) * nd
    shape = _out_shape(x, window, strides, pads, base, wdil)
    out = np.zeros(shape, np.int64)
    better = (lambda a, b: a > b) if kind == "max" else (lambda a, b: a < b)
    for pos in itertools.product(*map(range, shape)):
        best = None
        for i, (_, v) in enumerate(_window_taps(x, pos, window, strides, pads, base, wdil)):
            v = _identity(kind, x.dtype) if v is None else v
            if best is None or better(v, best):
                best, out[pos] = v, i
    return out


def _tap_source(pos, tap_number, window, strides, pads, base, wdil, shape):
    """The operand element that tap ``tap_number`` of window ``pos`` reads, or None."""
    tap = np.unravel_index(tap_number, window)
    src = [p * s + t * d - lo for p, s, t, d, (lo, _) in zip(pos, strides, tap, wdil, pads)]
    if all(j >= 0 and j % b == 0 and j // b < n for j, b, n in zip(src, base, shape)):
        return tuple(j // b for j, b in zip(src, base))
    return None


def ref_window_gather(t, idx, window, strides, pads, base, wdil):
    """``t`` read at window position ``idx`` of every window (0 in padding/holes)."""
    out = np.zeros(idx.shape, t.dtype)
    for pos in np.ndindex(idx.shape):
        src = _tap_source(pos, idx[pos], window, strides, pads, base, wdil, t.shape)
        if src is not None:
            out[pos] = t[src]
    return out


def ref_window_scatter_add(c, idx, shape, window, strides, pads, base, wdil):
    """Each ``c[pos]`` added to the operand element at window position ``idx[pos]``."""
    out = np.zeros(shape, c.dtype)
    for pos in np.ndindex(idx.shape):
        src = _tap_source(pos, idx[pos], window, strides, pads, base, wdil, shape)
        if src is not None:
            out[src] += c[pos]
    return out


# window positions for the direct cases of window_gather / window_scatter_add:
# windows (2, 3) at strides (1, 2), padding ((1, 0), (0, 1)) over a (3, 4) operand
_TAP_PARAMS = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (0, 1)),
                   base_dilation=(1, 1), window_dilation=(1, 1))
_TAP_INDEX = np.random.default_rng(7).integers(0, 6, size=(3, 2))
_TAP_REF = ((2, 3), (1, 2), [(1, 0), (0, 1)], (1, 1), (1, 1))

CASES = [
    Case("reduce_window_sum_1d_stride_pad",
         lambda x: reduce_window(x, 0.0, lax.add, (1, 3), (1, 2), [(0, 0), (1, 2)]),
         lambda x: ref_reduce_window("sum", x, (1, 3), (1, 2), [(0, 0), (1, 2)]),
         [Arg((2, 6), ("float64", "complex128"))], prims=("reduce_window_sum",)),
    # SAME on the undilated operand (4, 3) and the dilated window (2, 3): pads (0,1),(1,1)
    Case("reduce_window_sum_2d_dilated_jnp",
         lambda x: reduce_window(x, 0.0, jnp.add, (2, 2), (1, 1), "SAME", (2, 1), (1, 2)),
         lambda x: ref_reduce_window("sum", x, (2, 2), (1, 1), [(0, 1), (1, 1)], (2, 1), (1, 2)),
         [Arg((4, 3), ("float64", "complex128"))], prims=("reduce_window_sum",)),
    Case("reduce_window_max_1d_stride_pad",
         lambda x: reduce_window(x, -np.inf, lax.max, (3,), (2,), [(1, 1)]),
         lambda x: ref_reduce_window("max", x, (3,), (2,), [(1, 1)]),
         [Arg((9,), unique=True)], prims=("reduce_window_max", "window_select_index")),
    Case("reduce_window_max_2d_same_nhwc",
         lambda x: reduce_window(x, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
         lambda x: ref_reduce_window("max", x, (1, 3, 3, 1), (1, 2, 2, 1),
                                     [(0, 0), (0, 1), (1, 1), (0, 0)]),
         [Arg((1, 4, 3, 2), unique=True)], prims=("reduce_window_max", "window_select_index")),
    Case("reduce_window_max_2d_dilations",
         lambda x: reduce_window_max(x, (2, 2), (1, 2), [(0, 1), (1, 0)], (1, 2), (2, 1)),
         lambda x: ref_reduce_window("max", x, (2, 2), (1, 2), [(0, 1), (1, 0)], (1, 2), (2, 1)),
         [Arg((4, 3), unique=True)], prims=("reduce_window_max", "window_select_index")),
    Case("reduce_window_min_2d_stride_pad",
         lambda x: reduce_window(x, np.inf, jnp.minimum, (2, 3), (2, 1), [(1, 0), (1, 1)]),
         lambda x: ref_reduce_window("min", x, (2, 3), (2, 1), [(1, 0), (1, 1)]),
         [Arg((3, 4), unique=True)], prims=("reduce_window_min", "window_select_index")),
    Case("reduce_window_sum_direct_3d",
         lambda x: reduce_window_sum(x, (2, 1, 2), (1, 1, 2), "VALID", None, (1, 1, 2)),
         lambda x: ref_reduce_window("sum", x, (2, 1, 2), (1, 1, 2), [(0, 0)] * 3,
                                     None, (1, 1, 2)),
         [Arg((3, 2, 5), ("float64", "complex128"))], prims=("reduce_window_sum",), grad_order=1),
    Case("reduce_window_min_int",
         lambda x: reduce_window_min(x, (2,), (1,), [(0, 1)]),
         lambda x: ref_reduce_window("min", x, (2,), (1,), [(0, 1)]),
         [Arg((5,), dtype="int32", low=-5, high=5)], prims=("reduce_window_min",),
         grad_order=0),
    Case("window_select_index",
         lambda x: window_select_index_p.bind(
             x, kind="max", window_dimensions=(2, 3), window_strides=(1, 2),
             padding=((1, 0), (0, 1)), base_dilation=(1, 1), window_dilation=(1, 1)),
         lambda x: ref_select_index("max", x, (2, 3), (1, 2), [(1, 0), (0, 1)]),
         [Arg((3, 4), low=-2, high=2)], prims=("window_select_index",), grad_order=0),
    Case("window_gather",
         lambda t: window_gather_p.bind(t, _TAP_INDEX, **_TAP_PARAMS),
         lambda t: ref_window_gather(t, _TAP_INDEX, *_TAP_REF),
         [Arg((3, 4), ("float64", "complex128"))], prims=("window_gather",)),
    Case("window_scatter_add",
         lambda c: window_scatter_add_p.bind(c, _TAP_INDEX, operand_shape=(3, 4), **_TAP_PARAMS),
         lambda c: ref_window_scatter_add(c, _TAP_INDEX, (3, 4), *_TAP_REF),
         [Arg((3, 2), ("float64", "complex128"))], prims=("window_scatter_add",)),
]
