"""JAX's XLA-style scatter signature on fungrad's NumPy-style scatters.

fungrad's ``lax.scatter``/``scatter_add``/... take a NumPy index
(``x.at[index]``).  JAX's take ``(operand, scatter_indices, updates,
dimension_numbers)``, and libraries call them that way (numpyro builds
triangular matrices with ``lax.scatter_add(..., lax.ScatterDimensionNumbers(
update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims))``).
``numpy_index`` turns the XLA form into the NumPy index that addresses the
same operand elements, one index array per operand axis, each broadcasting
to ``updates.shape``:

    operand[idx_0[u], idx_1[u], ...] <- updates[u]   for every position u

where axis d's index is the start that ``scatter_indices`` gives for d (0 if
d is not scattered) plus the offset along d's window dimension of the
updates (0 if d is an inserted, size-1 window axis).  XLA's semantics leave
an out-of-bounds window undefined and JAX drops it: a negative position is
sent out of bounds here so that 'drop' drops it instead of NumPy wrapping it.
Batching dimensions (``operand_batching_dims``) are not supported.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

import numpy as np

from fungrad.core import get_aval
from fungrad.lax import elementwise, structural

__all__ = ["ScatterDimensionNumbers", "GatherScatterMode"]


class GatherScatterMode(enum.Enum):
    """``jax.lax.GatherScatterMode``: what a gather or scatter does with an
    out-of-bounds index.  fungrad's gathers and scatters take the enum or its
    string names; ``mode_name`` turns either into the string they use."""
    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"Unknown gather mode {s!r}; use 'clip', 'fill', 'drop', "
                         "'promise_in_bounds' or a lax.GatherScatterMode")


def mode_name(mode, who: str):
    """A gather/scatter ``mode`` as fungrad's string spelling (``None`` kept:
    each caller has its own default, as in JAX)."""
    if not isinstance(mode, GatherScatterMode):
        return mode
    if mode is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(f"{who}: GatherScatterMode.ONE_HOT (XLA's one-hot "
                                  "matmul strategy) is not supported; use FILL_OR_DROP, "
                                  "which gives the same values for in-bounds indices")
    return {GatherScatterMode.CLIP: "clip", GatherScatterMode.FILL_OR_DROP: "fill",
            GatherScatterMode.PROMISE_IN_BOUNDS: "promise_in_bounds"}[mode]


class ScatterDimensionNumbers(NamedTuple):
    """``jax.lax.ScatterDimensionNumbers``: how the updates' dimensions and the
    index vectors map onto the operand (XLA's scatter)."""
    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


def numpy_index(operand_shape, scatter_indices, updates_shape, dnums, who: str) -> tuple:
    """The NumPy index (a tuple of integer arrays) equivalent to an XLA scatter."""
    if not isinstance(dnums, ScatterDimensionNumbers):
        raise TypeError(f"{who}: dimension_numbers must be a lax.ScatterDimensionNumbers, "
                        f"got {type(dnums).__name__}")
    if tuple(dnums.operand_batching_dims) or tuple(dnums.scatter_indices_batching_dims):
        raise NotImplementedError(f"{who}: operand_batching_dims are not supported by "
                                  "fungrad's XLA-style scatter; vmap the scatter instead")
    window_dims = tuple(dnums.update_window_dims)
    inserted = tuple(dnums.inserted_window_dims)
    to_operand = tuple(dnums.scatter_dims_to_operand_dims)
    rank, nu = len(operand_shape), len(updates_shape)
    operand_windows = [d for d in range(rank) if d not in inserted]
    idx_shape = get_aval(scatter_indices).shape
    if len(operand_windows) != len(window_dims) or not idx_shape \
            or idx_shape[-1] != len(to_operand):
        raise ValueError(f"{who}: dimension numbers {dnums} do not fit an operand of shape "
                         f"{tuple(operand_shape)}, indices of shape {idx_shape} and updates "
                         f"of shape {tuple(updates_shape)}")
    scatter_axes = [u for u in range(nu) if u not in window_dims]      # the index batch
    index = []
    for d in range(rank):
        pos = structural.broadcast_in_dim(np.zeros((), np.int64), (1,) * nu, ())
        if d in to_operand:
            j = to_operand.index(d)
            start = structural.slice(scatter_indices, (0,) * (len(idx_shape) - 1) + (j,),
                                     idx_shape[:-1] + (j + 1,))
            start = structural.reshape(elementwise.convert_element_type(start, np.int64),
                                       idx_shape[:-1])
            shape = tuple(updates_shape[u] if u in scatter_axes else 1 for u in range(nu))
            pos = elementwise.add(pos, structural.broadcast_in_dim(start, shape, scatter_axes))
        if d in operand_windows:
            u = window_dims[operand_windows.index(d)]
            offsets = np.arange(updates_shape[u]).reshape(
                tuple(updates_shape[u] if k == u else 1 for k in range(nu)))
            pos = elementwise.add(pos, offsets)
        # negative positions are out of bounds in XLA (dropped), not wrapped
        pos = elementwise.select_n(elementwise.lt(pos, np.int64(0)), pos,
                                   structural.full_like(pos, operand_shape[d]))
        index.append(pos)
    return tuple(index)
