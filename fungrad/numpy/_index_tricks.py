"""NumPy's index tricks: ``r_`` and ``c_`` (concatenation by indexing, with
slices as ranges and NumPy's string directives), ``mgrid``/``ogrid`` (dense and
open grids) and ``s_``/``index_exp`` (index tuples).  ``r_``/``c_`` work on
traced values (they concatenate with ``fungrad.numpy.concatenate``); the grids
take static slices only, as in NumPy and JAX, and give fungrad Arrays.
"""
from __future__ import annotations

import numpy as np

from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._util import _fnp

__all__ = ["r_", "c_", "mgrid", "ogrid", "s_", "index_exp"]

s_ = np.s_
index_exp = np.index_exp


def _with_ndmin(fnp, x, ndmin, dtype=None):
    x = fnp.asarray(x, dtype=dtype)
    return fnp.reshape(x, (1,) * (ndmin - x.ndim) + x.shape) if x.ndim < ndmin else x


class _AxisConcatenator:
    """``r_``/``c_``: NumPy's ``AxisConcatenator`` on fungrad arrays."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def _directive(self, item):
        if item in ("r", "c"):
            raise NotImplementedError("r_/c_: the 'r' and 'c' matrix directives make "
                                      "np.matrix objects, which fungrad does not have")
        try:
            parts = [int(p) for p in item.split(",")]
        except ValueError:
            raise ValueError(f"r_/c_: unknown special directive {item!r}") from None
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"r_/c_: unknown special directive {item!r}")
        axis, ndmin, trans1d = parts + [self.ndmin, self.trans1d][len(parts) - 1:]
        return axis, ndmin, trans1d

    def _item(self, fnp, item, ndmin, trans1d):
        if isinstance(item, slice):
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, (complex, np.complexfloating)):
                new = fnp.linspace(start, item.stop, num=int(abs(step)))
            else:
                new = fnp.arange(start, item.stop, step)
            new = _with_ndmin(fnp, new, ndmin)
            return fnp.swapaxes(new, -1, trans1d) if ndmin > 1 and trans1d != -1 else new
        x = asarray_operand(item)
        item_ndim = np.ndim(x)
        new = _with_ndmin(fnp, x, ndmin)
        if trans1d != -1 and item_ndim < ndmin:
            k2, k1 = ndmin - item_ndim, trans1d
            k1 = k1 + k2 + 1 if k1 < 0 else k1
            order = list(range(ndmin))
            new = fnp.transpose(new, order[:k1] + order[k2:] + order[k1:k2])
        return new

    def __getitem__(self, key):
        fnp = _fnp()
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError("r_/c_: special directives must be the first entry")
                axis, ndmin, trans1d = self._directive(item)
                continue
            objs.append(self._item(fnp, item, ndmin, trans1d))
            kinds.append(item if type(item) in (bool, int, float, complex) else objs[-1].dtype)
        if not objs:
            return fnp.zeros((0,))
        dtype = np.result_type(*kinds)
        return fnp.concatenate([_with_ndmin(fnp, o, ndmin, dtype) for o in objs], axis=axis)

    def __len__(self):
        return 0


r_ = _AxisConcatenator(0, 1, -1)
c_ = _AxisConcatenator(-1, 2, 0)


class _Grid:
    """``mgrid``/``ogrid``: NumPy's grids of static slices, as fungrad Arrays."""

    def __init__(self, numpy_grid):
        self._grid = numpy_grid

    def __getitem__(self, key):
        fnp = _fnp()
        out = self._grid[key]
        if isinstance(out, (tuple, list)):
            return type(out)(fnp.asarray(a) for a in out)
        return fnp.asarray(out)


mgrid = _Grid(np.mgrid)
ogrid = _Grid(np.ogrid)
