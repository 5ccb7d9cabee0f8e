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
                                  reduce_window_sum, window_select_index_p)
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
]
