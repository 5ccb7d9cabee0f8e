"""Set operations of ``jax.numpy`` (``isin``, ``union1d``, ``intersect1d``,
``setdiff1d``, ``setxor1d``), built from sorting and ``fungrad.numpy`` calls.

The output shape depends on the input values: concrete inputs work eagerly;
under ``jit``/``vmap``/``grad`` a static ``size=`` fixes the output shape, and
without it a ``ConcretizationTypeError`` says so (JAX's rules).
"""
from __future__ import annotations

import numpy as np
from fungrad._dtype_classes import is_inexact

from fungrad import lax
from fungrad.core import Tracer
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.numpy._util import _fnp, _ravel, _shape, _dtype, _static_int, _concretization_error

__all__ = ["isin", "in1d", "union1d", "intersect1d", "setdiff1d", "setxor1d"]


# Every set operation sorts its candidates, marks the ones to keep, and moves
# the kept ones to the front (``_compact``).  Eagerly the number kept is read
# off the mask; under a transformation ``size=`` must give it.

_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of ``element`` is in ``test_elements`` (bool, shaped like
    ``element``).  Works under every transformation (the output shape is static)."""
    if method not in _ISIN_METHODS:
        raise ValueError(f"isin: method must be one of {_ISIN_METHODS}, got {method!r}")
    fnp = _fnp()
    element = asarray_operand(element)
    tests = _ravel(test_elements)
    if _shape(tests)[0] == 0:
        found = fnp.zeros(_shape(element), bool)
    else:
        found = fnp.any(fnp.equal(fnp.expand_dims(element, -1), tests), axis=-1)
    return fnp.logical_not(found) if invert else found


def in1d(ar1, ar2, assume_unique=False, invert=False, *, method="auto"):
    """``isin`` of the flattened ``ar1`` (NumPy's older name; 1-d result)."""
    return isin(_ravel(ar1), ar2, assume_unique, invert, method=method)


def _first_of_runs(sorted_values):
    """True at the first element of each run of equal values of a sorted 1-d array
    (NaNs count as equal to each other, as ``unique``'s ``equal_nan``)."""
    fnp = _fnp()
    n = _shape(sorted_values)[0]
    if n == 0:
        return fnp.zeros((0,), bool)
    prev, cur = sorted_values[:-1], sorted_values[1:]
    differs = fnp.not_equal(prev, cur)
    if is_inexact(_dtype(sorted_values)):
        differs = differs & ~(fnp.isnan(prev) & fnp.isnan(cur))
    return fnp.concatenate([fnp.ones((1,), bool), differs])


def _kept_count(name, keep, size):
    """The output length: ``size`` if given, else the (concrete) number kept."""
    if size is not None:
        size = _static_int(size, f"{name}'s size")
        if size < 0:
            raise ValueError(f"{name}: size must be non-negative, got {size}")
        return size
    if isinstance(keep, Tracer):
        raise _concretization_error(name, f"size= (e.g. {name}(a, b, size=n, fill_value=0))")
    return int(np.count_nonzero(np.asarray(keep)))


def _compact(values, keep, size, fill_value, extras=(), extra_fill=()):
    """The kept ``values`` (in their order) moved to the front, cut or padded to
    ``size``; padding is ``fill_value`` (default: the first kept value, or 0).
    ``extras`` are arrays moved alongside (padded with ``extra_fill``)."""
    fnp = _fnp()
    n = _shape(values)[0]
    key = lax.convert_element_type(fnp.logical_not(keep), np.int8)
    moved = lax.sort((key, values) + tuple(extras), dimension=0, num_keys=1)[1:]
    count = fnp.sum(keep)
    valid = fnp.arange(size) < count
    outs = []
    for arr, fill in zip(moved, (fill_value,) + tuple(extra_fill)):
        arr = arr[:size] if size <= n else fnp.concatenate(
            [arr, fnp.zeros((size - n,), _dtype(arr))])
        if fill is None:
            fill = fnp.where(count > 0, arr[0], fnp.zeros((), _dtype(arr))) if n and size \
                else fnp.zeros((), _dtype(arr))
        outs.append(fnp.where(valid, arr, fnp.asarray(fill).astype(_dtype(arr))))
    return outs


def _sorted_candidates(*arrays):
    """The flattened arrays concatenated (common dtype) and sorted."""
    fnp = _fnp()
    flat = [_ravel(a) for a in arrays]
    flat = promote("set operation", *flat) if len(flat) > 1 else flat
    return fnp.sort(fnp.concatenate(flat) if len(flat) > 1 else flat[0])


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values that are in either array."""
    values = _sorted_candidates(ar1, ar2)
    keep = _first_of_runs(values)
    return _compact(values, keep, _kept_count("union1d", keep, size), fill_value)[0]


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The unique values of ``ar1`` that are not in ``ar2`` (sorted; with
    ``assume_unique=True`` in ``ar1``'s order, as NumPy)."""
    fnp = _fnp()
    if assume_unique:
        values = _ravel(ar1)
        keep = isin(values, ar2, invert=True)
    else:
        values = fnp.sort(_ravel(ar1))
        keep = _first_of_runs(values) & isin(values, ar2, invert=True)
    return _compact(values, keep, _kept_count("setdiff1d", keep, size), fill_value)[0]


def _member(values, ar):
    """``isin`` that also finds NaN in an array containing NaN (set semantics)."""
    fnp = _fnp()
    found = isin(values, ar)
    if is_inexact(_dtype(values)) and _shape(_ravel(ar))[0]:
        found = found | (fnp.isnan(values) & fnp.any(fnp.isnan(_ravel(ar))))
    return found


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values that are in exactly one of the arrays."""
    values = _sorted_candidates(ar1, ar2)
    keep = _first_of_runs(values) & (_member(values, ar1) ^ _member(values, ar2))
    return _compact(values, keep, _kept_count("setxor1d", keep, size), fill_value)[0]


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted unique values in both arrays; with ``return_indices`` also the
    index of each value's first occurrence in the flattened ``ar1`` and ``ar2``
    (padded with the out-of-bounds index ``ar.size`` when ``size`` exceeds the count)."""
    fnp = _fnp()
    a1, a2 = promote("intersect1d", _ravel(ar1), _ravel(ar2))
    order1 = fnp.argsort(a1)            # stable: the first of a run is the first occurrence
    values = fnp.take(a1, order1)
    keep = _first_of_runs(values) & isin(values, a2)
    size = _kept_count("intersect1d", keep, size)
    if not return_indices:
        return _compact(values, keep, size, fill_value)[0]
    order2 = fnp.argsort(a2)
    n2 = _shape(a2)[0]
    pos2 = fnp.clip(fnp.searchsorted(fnp.take(a2, order2), values), 0, max(n2 - 1, 0))
    index2 = fnp.take(order2, pos2) if n2 else fnp.zeros_like(order1)
    return tuple(_compact(values, keep, size, fill_value, extras=(order1, index2),
                          extra_fill=(_shape(a1)[0], n2)))
