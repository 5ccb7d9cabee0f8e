"""Finite differences of sampled values: ``gradient`` (central differences,
NumPy's one-sided edges of order 1 or 2, uniform or coordinate spacing) and
``unwrap`` (phase unwrapping).  Both are made of slices and arithmetic, so
they are differentiable, vmappable and jittable; NumPy's semantics, JAX's
list of arrays for several axes (NumPy returns a tuple)."""
from __future__ import annotations

import operator

import numpy as np

from fungrad._dtype_classes import is_inexact, is_integer, kind as dtype_kind
from fungrad import lax
from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._util import _fnp, _shape

__all__ = ["gradient", "unwrap"]


def _along(x, axis, start, stop):
    """``x[start:stop]`` along ``axis`` (negative bounds count from the end)."""
    n = _shape(x)[axis]
    start = start + n if start is not None and start < 0 else (start or 0)
    stop = n if stop is None else (stop + n if stop < 0 else stop)
    return lax.slice_in_dim(x, start, stop, axis=axis)


def _inexact(fnp, x):
    x = fnp.asarray(x)
    return x if is_inexact(x.dtype) else x.astype(np.float64)


def _spacing_along(fnp, h, f, axis):
    """Uniform spacing (a scalar) or coordinates (1-d, one per sample) along ``axis``."""
    h = _inexact(fnp, h)
    if h.ndim == 0:
        return h, None
    if h.ndim != 1 or h.shape[0] != f.shape[axis]:
        raise ValueError(f"gradient: coordinates along axis {axis} must be a 1-d array of "
                         f"length {f.shape[axis]}, got shape {h.shape}")
    shape = [1] * f.ndim
    shape[axis] = h.shape[0]
    return None, fnp.reshape(h, shape)


def _gradient_along(fnp, f, h, axis, edge_order):
    """NumPy's ``gradient`` of ``f`` along one axis."""
    step, coords = _spacing_along(fnp, h, f, axis)
    s = lambda a, b: _along(f, axis, a, b)          # noqa: E731 - slices of f
    if coords is None:
        inner = (s(2, None) - s(None, -2)) / (2 * step)
        if edge_order == 1:
            first, last = (s(1, 2) - s(0, 1)) / step, (s(-1, None) - s(-2, -1)) / step
        else:
            first = (-1.5 * s(0, 1) + 2 * s(1, 2) - 0.5 * s(2, 3)) / step
            last = (0.5 * s(-3, -2) - 2 * s(-2, -1) + 1.5 * s(-1, None)) / step
        return fnp.concatenate([first, inner, last], axis=axis)
    x = lambda a, b: _along(coords, axis, a, b)     # noqa: E731 - slices of the coordinates
    dx = x(1, None) - x(None, -1)
    d1, d2 = _along(dx, axis, None, -1), _along(dx, axis, 1, None)
    inner = (-(d2 / (d1 * (d1 + d2))) * s(None, -2) + ((d2 - d1) / (d1 * d2)) * s(1, -1)
             + (d1 / (d2 * (d1 + d2))) * s(2, None))
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / _along(dx, axis, 0, 1)
        last = (s(-1, None) - s(-2, -1)) / _along(dx, axis, -1, None)
    else:
        a1, a2 = _along(dx, axis, 0, 1), _along(dx, axis, 1, 2)
        first = (-(2 * a1 + a2) / (a1 * (a1 + a2)) * s(0, 1) + (a1 + a2) / (a1 * a2) * s(1, 2)
                 - a1 / (a2 * (a1 + a2)) * s(2, 3))
        b1, b2 = _along(dx, axis, -2, -1), _along(dx, axis, -1, None)
        last = (b2 / (b1 * (b1 + b2)) * s(-3, -2) - (b1 + b2) / (b1 * b2) * s(-2, -1)
                + (2 * b2 + b1) / (b2 * (b1 + b2)) * s(-1, None))
    return fnp.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """The gradient of sampled values ``f`` by central differences in the interior
    and one-sided differences of ``edge_order`` (1 or 2) at the edges
    (``numpy.gradient``).  ``varargs``: the spacing, one scalar for every axis,
    or one per axis (a scalar step or the 1-d coordinates of the samples).
    One array for one axis, else a list of them (one per axis, as JAX)."""
    fnp = _fnp()
    f = _inexact(fnp, asarray_operand(f))
    ndim = f.ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(operator.index(a) for a in (axis if isinstance(axis, (tuple, list))
                                                  else (axis,)))
        if any(not -ndim <= a < ndim for a in axes):
            raise np.exceptions.AxisError(f"gradient: axis {axis} is out of bounds for an "
                                          f"array of dimension {ndim}")
        axes = tuple(a % ndim for a in axes)
    edge_order = operator.index(edge_order) if edge_order is not None else 1
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if not axes:
        return []
    if any(f.shape[a] < edge_order + 1 for a in axes):
        raise ValueError(f"gradient: shape {f.shape} is too small along axes {axes}: at least "
                         f"{edge_order + 1} samples are needed for edge_order={edge_order}")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacing arguments for {len(axes)} axes; give "
                        "none, one scalar, or one per axis")
    out = [_gradient_along(fnp, f, h, a, edge_order) for a, h in zip(axes, spacing)]
    return out[0] if len(axes) == 1 else out


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """``p`` with each step along ``axis`` of at least ``discont`` (default
    ``period / 2``) replaced by its representative modulo ``period`` in
    ``[-period/2, period/2]`` (``numpy.unwrap``; a step of exactly half a period
    keeps its sign).  Real inputs; the corrections are piecewise constant, so
    the derivative is the identity."""
    fnp = _fnp()
    p = fnp.asarray(asarray_operand(p))
    if dtype_kind(p.dtype) == "c":
        raise ValueError("unwrap: complex inputs are not supported (as in NumPy and JAX)")
    if p.ndim == 0:
        raise ValueError("unwrap: p must have at least one dimension")
    axis = operator.index(axis) % p.ndim
    dd = fnp.diff(p, axis=axis)
    dtype = fnp.result_type(dd, period)
    if is_integer(dtype):
        high, rest = divmod(operator.index(period), 2)
        ambiguous = rest == 0
    else:
        high, ambiguous = period / 2, True
    if discont is None:
        discont = period / 2
    if p.shape[axis] == 0:
        return p.astype(dtype)
    ddmod = fnp.mod(dd + high, period) - high
    if ambiguous:
        ddmod = fnp.where((ddmod == -high) & (dd > 0), high, ddmod)
    correction = lax.stop_gradient(fnp.where(fnp.abs(dd) < discont, 0, ddmod - dd))
    head = _along(p, axis, 0, 1).astype(dtype)
    rest = _along(p, axis, 1, None) + fnp.cumsum(correction, axis=axis)
    return fnp.concatenate([head, rest.astype(dtype)], axis=axis)
