"""Interpolation and integration of sampled functions: ``interp`` (piecewise
linear) and ``trapezoid``, differentiable in the sample values.
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Tracer
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.numpy._util import _builtin_max, _fnp, _shape, _dtype

__all__ = ["interp", "trapezoid"]


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at ``x`` (increasing 1-d ``xp``);
    differentiable in ``x`` and ``fp``."""
    fnp = _fnp()
    xp, fp = asarray_operand(xp), asarray_operand(fp)
    x = asarray_operand(x)
    if len(_shape(xp)) != 1 or _shape(xp) != _shape(fp) or _shape(xp)[0] == 0:
        raise ValueError(f"interp: xp and fp must be non-empty 1-d arrays of the same length,"
                         f" got shapes {_shape(xp)} and {_shape(fp)}")
    dtype = np.result_type(_dtype(fp), np.float64)
    x, xp = promote("interp", x, xp, to_float=True)
    fp = fp.astype(dtype)
    if period is not None:
        x, xp, fp = _periodic_points(x, xp, fp, period)
    n = _shape(xp)[0]
    i = fnp.clip(fnp.searchsorted(xp, x, side="right"), 1, _builtin_max(n - 1, 1))
    upper = i if n > 1 else i - 1
    x0, x1 = fnp.take(xp, i - 1), fnp.take(xp, upper)
    f0, f1 = fnp.take(fp, i - 1), fnp.take(fp, upper)
    dx = x1 - x0
    slope_t = fnp.where(dx == 0, 0.0, (x - x0) / fnp.where(dx == 0, 1.0, dx))
    out = f0 + slope_t * (f1 - f0)
    out = fnp.where(x == xp[-1], fp[-1], out)
    if period is None:
        out = fnp.where(x < xp[0], fp[0] if left is None else left, out)
        out = fnp.where(x > xp[-1], fp[-1] if right is None else right, out)
    return out.astype(dtype)


def _periodic_points(x, xp, fp, period):
    fnp = _fnp()
    if not isinstance(period, Tracer) and period == 0:
        raise ValueError("interp: period must be a non-zero value")
    period = fnp.abs(period)
    x, xp = fnp.mod(x, period), fnp.mod(xp, period)
    order = fnp.argsort(xp)
    xp, fp = fnp.take(xp, order), fnp.take(fp, order)
    xp = fnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = fnp.concatenate([fp[-1:], fp, fp[:1]])
    return x, xp, fp


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x``
    or spacing ``dx``)."""
    fnp = _fnp()
    y = asarray_operand(y)
    y = fnp.moveaxis(y, axis, -1)
    if x is None:
        widths = dx
    else:
        x = asarray_operand(x)
        x = fnp.diff(x) if len(_shape(x)) == 1 else fnp.diff(fnp.moveaxis(x, axis, -1))
        widths = x
    heights = (y[..., 1:] + y[..., :-1]) / 2.0
    return fnp.sum(widths * heights, axis=-1)
