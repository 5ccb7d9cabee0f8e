"""Cases for the structural lax primitives (fungrad/lax/structural.py): they
move, copy, pad or reshape data and are all linear (see tests/harness.py)."""
import numpy as np

from fungrad import lax
from tests.harness import Arg, Case

ANY_DTYPE = ("float64", "float32", "int32", "bool", "complex128")
RC = ("float64", "complex128")


def _np_pad(x, value, config):
    """Reference lax.pad written with np.pad: interior padding by spreading
    the elements out, then positive edges with np.pad, negative ones by slicing."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        spread_shape = list(x.shape)
        spread_shape[axis] = n + max(n - 1, 0) * interior
        spread = np.full(spread_shape, value, x.dtype)
        sel = [slice(None)] * x.ndim
        sel[axis] = slice(None, None, interior + 1)
        spread[tuple(sel)] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(spread, widths, constant_values=value)
        crop = [slice(None)] * x.ndim
        crop[axis] = slice(-min(lo, 0), x.shape[axis] + min(hi, 0))
        x = x[tuple(crop)]
    return x


def _strided(x, stride):
    return x[(slice(None, None, stride),) * x.ndim]


CASES = [
    # --- squeeze / expand_dims ---------------------------------------------------------
    Case("lax.squeeze", lambda x: lax.squeeze(lax.reshape(x, (1,) + x.shape + (1,)),
                                              (0, -1)),
         lambda x: x, [Arg("any", dtype=ANY_DTYPE)], prims=("squeeze", "reshape")),
    Case("lax.squeeze_middle", lambda x: lax.squeeze(x, (1,)), lambda x: np.squeeze(x, 1),
         [Arg((3, 1, 2), RC)], prims=("squeeze",)),
    Case("lax.expand_dims", lambda x: lax.expand_dims(x, (0, -1)),
         lambda x: np.expand_dims(x, (0, -1)), [Arg("any", dtype=ANY_DTYPE)]),
    # --- rev ---------------------------------------------------------------------------
    Case("lax.rev_all", lambda x: lax.rev(x, tuple(range(x.ndim))),
         lambda x: np.flip(x, tuple(range(x.ndim))), [Arg("any", dtype=ANY_DTYPE)],
         prims=("rev",)),
    Case("lax.rev_last", lambda x: lax.rev(x, (-1,)), lambda x: np.flip(x, -1),
         [Arg("mat", RC)], prims=("rev",)),
    # --- slice -------------------------------------------------------------------------
    Case("lax.slice_strided", lambda x: lax.slice(x, (0,) * x.ndim, x.shape, (2,) * x.ndim),
         lambda x: _strided(x, 2), [Arg("any", dtype=ANY_DTYPE)], prims=("slice",)),
    Case("lax.slice_window", lambda x: lax.slice(x, (1, 0), (3, 4), (1, 3)),
         lambda x: x[1:3, 0:4:3], [Arg((4, 5), RC)], prims=("slice",)),
    Case("lax.slice_empty", lambda x: lax.slice(x, (2, 1), (2, 4)),
         lambda x: x[2:2, 1:4], [Arg((4, 5))], prims=("slice",)),
    Case("lax.slice_in_dim", lambda x: lax.slice_in_dim(x, -3, None, 2, axis=1),
         lambda x: x[:, -3::2], [Arg((2, 5), RC)], prims=("slice",)),
    Case("lax.index_in_dim", lambda x: lax.index_in_dim(x, -1, axis=0, keepdims=False),
         lambda x: x[-1], [Arg((3, 2), RC)], prims=("slice", "squeeze")),
    # --- pad ---------------------------------------------------------------------------
    Case("lax.pad_edges", lambda x: lax.pad(x, np.asarray(0.5, x.dtype), ((1, 2, 0),) * x.ndim),
         lambda x: _np_pad(x, 0.5, ((1, 2, 0),) * x.ndim), [Arg("any", dtype=("float64", "float32", "complex128"))],
         prims=("pad",)),
    Case("lax.pad_interior", lambda x: lax.pad(x, np.asarray(-1, x.dtype), ((0, 1, 2),) * x.ndim),
         lambda x: _np_pad(x, -1, ((0, 1, 2),) * x.ndim), [Arg("any", dtype=("float64", "int32"))],
         prims=("pad",)),
    Case("lax.pad_negative", lambda x: lax.pad(x, 0.0, ((-1, 1, 1),) * x.ndim),
         lambda x: _np_pad(x, 0.0, ((-1, 1, 1),) * x.ndim), [Arg("any", RC)], prims=("pad",)),
    Case("lax.pad_value", lambda x, v: lax.pad(x, v, ((2, -1, 1), (-2, 3, 0))),
         lambda x, v: _np_pad(x, v, ((2, -1, 1), (-2, 3, 0))), [Arg((3, 4), RC), Arg((), "same")],
         prims=("pad",)),
    # --- concatenate -------------------------------------------------------------------
    Case("lax.concatenate", lambda x, y: lax.concatenate([x, y, x], 0),
         lambda x, y: np.concatenate([x, y, x], 0), [Arg("mat", RC), Arg("same", "same")],
         prims=("concatenate",)),
    Case("lax.concatenate_axis1", lambda x, y: lax.concatenate([x, y], 1),
         lambda x, y: np.concatenate([x, y], 1), [Arg((2, 3), RC), Arg((2, 0), "same")],
         prims=("concatenate",)),
    Case("lax.concatenate_dtypes", lambda x: lax.concatenate([x, x], -1),
         lambda x: np.concatenate([x, x], -1), [Arg("vec", dtype=ANY_DTYPE)],
         prims=("concatenate",)),
    # --- broadcast / reshape / transpose / full_like / collapse ----------------------
    Case("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2,) + x.shape,
                                                                tuple(range(1, x.ndim + 1))),
         lambda x: np.broadcast_to(x, (2,) + x.shape), [Arg("any", dtype=ANY_DTYPE)],
         prims=("broadcast_in_dim",)),
    Case("lax.broadcast", lambda x: lax.broadcast(x, (2, 1)),
         lambda x: np.broadcast_to(x, (2, 1) + x.shape), [Arg("any", RC)],
         prims=("broadcast_in_dim",)),
    Case("lax.reshape_flat", lambda x: lax.reshape(x, (x.size,)), np.ravel,
         [Arg("any", dtype=ANY_DTYPE)], prims=("reshape",)),
    Case("lax.reshape_dimensions", lambda x: lax.reshape(x, (x.size,), dimensions=(1, 0)),
         lambda x: np.ravel(x.T), [Arg("mat", RC)], prims=("reshape", "transpose")),
    Case("lax.transpose", lambda x: lax.transpose(x, tuple(reversed(range(x.ndim)))),
         np.transpose, [Arg("any", dtype=ANY_DTYPE)], prims=("transpose",)),
    Case("lax.full_like", lambda x: lax.full_like(x, 2), lambda x: np.full_like(x, 2),
         [Arg("any", dtype=ANY_DTYPE)], grad_order=0),
    Case("lax.full_like_traced", lambda x, v: lax.full_like(x, v, shape=(2,)),
         lambda x, v: np.full((2,), v), [Arg("any", RC), Arg((), "same")]),
    Case("lax.collapse", lambda x: lax.collapse(x, 1), lambda x: x.reshape(x.shape[0], -1),
         [Arg((2, 3, 4), RC)], prims=("reshape",)),
    Case("lax.broadcast_to_rank", lambda x: lax.broadcast_to_rank(x, 4),
         lambda x: x.reshape((1,) * (4 - x.ndim) + x.shape), [Arg("any", RC)]),
]
