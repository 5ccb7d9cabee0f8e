"""Scatter-add with repeated indices (NumPy-only module).

``np.add.at`` adds one update at a time; when the updates outnumber the
elements they land on (an embedding's gradient over a small vocabulary, a
histogram), ``np.bincount`` over flat positions sums them in one vectorised
pass and is several times faster.  Below that ratio ``np.add.at`` is faster
(``bincount`` allocates an operand-sized result).  ``bincount`` accumulates
in float64, so it is used for float64 and complex128 only: other dtypes keep
``np.add.at``'s rounding.  Shared by the impls and ``jit`` lowerings of
``scatter_add`` and ``put_along_axis_add``, and embedded by ``fungrad.export``.
"""
import numpy as np

__all__ = ["add_at", "add_at_flat"]

# updates per operand element from which bincount beats np.add.at (measured
# on NumPy 2.x: equal near 1, bincount 5-7x faster at 10 and more)
BINCOUNT_RATIO = 2


def _bincount_fits(out, n_updates):
    return (out.dtype in (np.float64, np.complex128) and out.size > 0
            and n_updates >= BINCOUNT_RATIO * out.size)


def _bincount_into(flat, positions, updates):
    n = flat.size
    if flat.dtype == np.complex128:
        flat.real += np.bincount(positions, weights=updates.real, minlength=n)
        flat.imag += np.bincount(positions, weights=updates.imag, minlength=n)
    else:
        flat += np.bincount(positions, weights=updates, minlength=n)


def add_at_flat(flat, positions, updates):
    """``np.add.at(flat, positions, updates)`` for a 1-D ``flat`` and flat
    ``positions`` (any shape), in place; returns ``flat``."""
    positions = np.asarray(positions)
    updates = np.broadcast_to(np.asarray(updates, flat.dtype), positions.shape)
    if _bincount_fits(flat, positions.size):
        _bincount_into(flat, positions.reshape(-1), updates.reshape(-1))
    else:
        np.add.at(flat, positions, updates)
    return flat


def add_at(out, index, updates):
    """``np.add.at(out, index, updates)`` in place (``out`` C-contiguous, ``index``
    any NumPy index, ``updates`` of the indexed shape); returns ``out``."""
    updates = np.asarray(updates)
    if not _bincount_fits(out, updates.size):
        np.add.at(out, index, updates)
        return out
    positions = np.arange(out.size).reshape(out.shape)[index]
    updates = np.broadcast_to(updates.astype(out.dtype, copy=False), positions.shape)
    _bincount_into(out.reshape(-1), positions.reshape(-1), updates.reshape(-1))
    return out
