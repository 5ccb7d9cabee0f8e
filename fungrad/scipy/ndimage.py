"""``fungrad.scipy.ndimage``: ``map_coordinates`` (``jax.scipy.ndimage``).

Interpolation of order 0 (nearest, ties rounded away from zero) or 1
(multilinear), built from gathers (``x[idx]``) and ``where``: differentiable
in ``input`` and (order 1) in ``coordinates``, vmappable and jittable.

Modes (how indices outside ``[0, n)`` are mapped), as JAX defines them:

==========  ======================================  =========================
mode        extension of ``a b c d``                 SciPy equivalent
==========  ======================================  =========================
constant    ``k k | a b c d | k k`` (k = cval)       'grid-constant'
nearest     ``a a | a b c d | d d``                  'nearest'
mirror      ``c b | a b c d | c b``                  'mirror'
reflect     ``b a | a b c d | d c``                  'reflect'
wrap        ``c d | a b c d | a b``                  'grid-wrap'
==========  ======================================  =========================

In 'constant' mode each interpolation corner outside the array contributes
``cval``; integer inputs are rounded (half away from zero) and keep their dtype.
"""
from __future__ import annotations

import itertools

import numpy as np

from fungrad._dtype_classes import is_inexact, is_integer, issubdtype as dtype_issubdtype
from fungrad.core import get_aval
import fungrad.numpy as fnp

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "mirror", "reflect", "wrap")


def _round_half_away(x):
    return fnp.sign(x) * fnp.floor(fnp.abs(x) + 0.5)


def _fix_index(index, n, mode):
    """Map integer ``index`` into ``[0, n)`` by ``mode``; (index, in_bounds or None)."""
    if mode == "constant":
        valid = (index >= 0) & (index < n)
        return fnp.clip(index, 0, n - 1), valid
    if mode == "nearest" or n == 1:
        return fnp.clip(index, 0, n - 1), None
    if mode == "wrap":
        return fnp.mod(index, n), None
    if mode == "mirror":
        period = 2 * (n - 1)
        m = fnp.mod(index, period)
        return fnp.where(m >= n, period - m, m), None
    period = 2 * n   # reflect
    m = fnp.mod(index, period)
    return fnp.where(m >= n, period - 1 - m, m), None


def _corners(coordinate, order):
    """[(integer index, weight or None)] for one axis."""
    if order == 0:
        return [(fnp.asarray(_round_half_away(coordinate), dtype=np.int64), None)]
    lower = fnp.floor(coordinate)
    upper_weight = coordinate - lower
    lower = fnp.asarray(lower, dtype=np.int64)
    return [(lower, 1.0 - upper_weight), (lower + 1, upper_weight)]


def _check(x, coordinates, order, mode):
    shape = get_aval(x).shape
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates: order must be 0 (nearest) or 1 "
                                  f"(linear), got order={order!r}")
    if mode not in _MODES:
        raise NotImplementedError(f"map_coordinates: mode must be one of {_MODES}, got "
                                  f"{mode!r}")
    if len(coordinates) != len(shape):
        raise ValueError(f"map_coordinates: coordinates must be a sequence of "
                         f"input.ndim={len(shape)} arrays (one per axis), got "
                         f"{len(coordinates)}")
    if 0 in shape:
        raise ValueError(f"map_coordinates: input of shape {shape} is empty")
    for c in coordinates:
        if dtype_issubdtype(get_aval(c).dtype, np.complexfloating):
            raise TypeError("map_coordinates: coordinates must be real")


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):  # noqa: A002
    """Values of ``input`` at the points ``coordinates[0][...], coordinates[1][...], ...``
    (fractional indices) by interpolation of ``order`` 0 or 1."""
    x = fnp.asarray(input)
    coords = [fnp.asarray(c) for c in coordinates]
    _check(x, coords, order, mode)
    coords = fnp.broadcast_arrays(*coords) if coords else coords
    shape = get_aval(x).shape
    if not shape:
        return x
    is_int = not is_inexact(get_aval(x).dtype)
    per_axis = [_corners(c if is_int or not is_integer(get_aval(c).dtype)
                         else fnp.asarray(c, dtype=np.float64), order) for c in coords]
    total = 0.0
    for corner in itertools.product(*per_axis):
        indices, valid, weight = [], None, None
        for (index, w), n in zip(corner, shape):
            fixed, ok = _fix_index(index, n, mode)
            indices.append(fixed)
            valid = ok if valid is None else (valid if ok is None else valid & ok)
            weight = w if weight is None else (weight if w is None else weight * w)
        value = x[tuple(indices)]
        if valid is not None:
            value = fnp.where(valid, value, cval)
        total = total + (value if weight is None else value * weight)
    if is_int:
        total = _round_half_away(total)
    return fnp.asarray(total, dtype=get_aval(x).dtype)
