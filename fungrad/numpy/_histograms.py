"""Histograms and counting of ``jax.numpy``: ``histogram``, ``histogram2d``,
``histogramdd``, ``histogram_bin_edges``, ``bincount``, ``digitize``.

Built from ``searchsorted`` and scatter-adds, so they are differentiable in
the weights; ``bincount`` needs a static ``length=`` under transformations.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import is_inexact, kind as dtype_kind
from fungrad.core import Tracer
from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._util import (_builtin_range, _builtin_max, _fnp, _at, _ravel, _shape, _dtype,
                                 _static_int, _concretization_error)

__all__ = ["histogram_bin_edges", "histogram", "histogram2d", "histogramdd", "bincount", "digitize"]


def _outer_edges(name, a, value_range):
    """(first, last) edge: the range given, else the data's min and max (widened
    by 0.5 on each side when they are equal, (0, 1) for empty data)."""
    fnp = _fnp()
    if value_range is not None:
        try:
            first, last = value_range
        except (TypeError, ValueError):
            raise ValueError(f"{name}: range must be a pair (min, max), got {value_range!r}") \
                from None
        if not isinstance(first, Tracer) and not isinstance(last, Tracer) and first > last:
            raise ValueError(f"{name}: max must be larger than min in range, got {value_range}")
        return first, last
    if _shape(a)[0] == 0:
        return 0.0, 1.0
    first, last = fnp.min(a), fnp.max(a)
    same = first == last
    return fnp.where(same, first - 0.5, first), fnp.where(same, last + 0.5, last)


def _edges_1d(name, a, bins, value_range):
    """Bin edges for the flattened 1-d ``a``: ``bins`` edges as given, or
    ``bins`` equal bins over the range (float; NumPy's linspace)."""
    fnp = _fnp()
    if isinstance(bins, str):
        raise NotImplementedError(f"{name}: string bin rules such as bins={bins!r} are not "
                                  "supported (as in JAX); pass a number of bins or the edges")
    if np.ndim(bins) == 0 and not isinstance(bins, Tracer):
        count = _static_int(bins, f"{name}'s bins")
        if count < 1:
            raise ValueError(f"{name}: bins must be a positive integer, got {count}")
        first, last = _outer_edges(name, a, value_range)
        dtype = np.result_type(_dtype(a), np.float64 if dtype_kind(_dtype(a)) in "biu" else _dtype(a))
        dtype = np.float64 if not is_inexact(dtype) else dtype
        return fnp.linspace(fnp.asarray(first, dtype), fnp.asarray(last, dtype), count + 1)
    edges = asarray_operand(bins)
    if len(_shape(edges)) != 1 or _shape(edges)[0] < 1:
        raise ValueError(f"{name}: bins must be an integer or a non-empty 1-d array of "
                         f"edges, got shape {_shape(edges)}")
    if not isinstance(edges, Tracer) and np.any(np.diff(np.asarray(edges)) < 0):
        raise ValueError(f"{name}: bins must increase monotonically")
    return edges


def _bin_index(values, edges, nbins):
    """The bin of each value (the last bin includes its right edge); values outside
    the edges get the out-of-range index ``nbins``."""
    fnp = _fnp()
    index = fnp.searchsorted(edges, values, side="right") - 1
    index = fnp.where(values == edges[-1], nbins - 1, index)
    inside = (values >= edges[0]) & (values <= edges[-1])
    return fnp.where(inside, index, nbins)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The bin edges ``histogram`` would use."""
    return _edges_1d("histogram_bin_edges", _ravel(a), bins, range)


def _check_weights(name, weights, n):
    if weights is None:
        return None
    weights = _ravel(weights)
    if _shape(weights)[0] != n:
        raise ValueError(f"{name}: weights must have the same number of elements as the "
                         f"data ({n}), got {_shape(weights)[0]}")
    return weights


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``(counts, edges)`` of the flattened ``a``; differentiable in ``weights``.
    Counts are int64 without weights, the weights' dtype with them (NumPy's)."""
    fnp = _fnp()
    a = _ravel(a)
    weights = _check_weights("histogram", weights, _shape(a)[0])
    edges = _edges_1d("histogram", a, bins, range)
    nbins = _shape(edges)[0] - 1
    index = _bin_index(a, edges, nbins)
    updates = fnp.ones(_shape(a), np.int64) if weights is None else weights
    counts = _at(fnp.zeros((nbins,), _dtype(updates)))[index].add(updates, mode="drop")
    if density:
        widths = fnp.diff(edges)
        return counts / widths / fnp.sum(counts), edges
    return counts, edges


def _sample_columns(name, sample):
    """The data of ``histogramdd`` as a list of D flat columns."""
    if isinstance(sample, (list, tuple)):
        columns = [_ravel(s) for s in sample]
    else:
        sample = asarray_operand(sample)
        if len(_shape(sample)) == 1:
            columns = [sample]
        elif len(_shape(sample)) == 2:
            columns = [sample[:, i] for i in _builtin_range(_shape(sample)[1])]
        else:
            raise ValueError(f"{name}: sample must be (N, D) or a sequence of D arrays, got "
                             f"shape {_shape(sample)}")
    if len({_shape(c)[0] for c in columns}) > 1:
        raise ValueError(f"{name}: all sample coordinates need the same length, got "
                         f"{[_shape(c)[0] for c in columns]}")
    return columns



def _per_dimension(name, what, value, ndims, is_single):
    if is_single(value):
        return [value] * ndims
    if len(value) != ndims:
        raise ValueError(f"{name}: {what} must have one entry per dimension ({ndims}), "
                         f"got {len(value)}")
    return list(value)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``(hist, edges)`` of D-dimensional data (float64 counts, as NumPy)."""
    fnp = _fnp()
    columns = _sample_columns("histogramdd", sample)
    ndims, n = len(columns), _shape(columns[0])[0]
    bins = _per_dimension("histogramdd", "bins", bins, ndims,
                          lambda b: not isinstance(b, (list, tuple, Tracer)) and np.ndim(b) == 0)
    ranges = _per_dimension("histogramdd", "range", range, ndims, lambda r: r is None)
    weights = _check_weights("histogramdd", weights, n)
    edges = [_edges_1d("histogramdd", c, b, r) for c, b, r in zip(columns, bins, ranges)]
    nbins = [_shape(e)[0] - 1 for e in edges]
    flat_index = fnp.zeros((n,), np.int64)
    outside = fnp.zeros((n,), bool)
    for column, edge, count in zip(columns, edges, nbins):
        index = _bin_index(column, edge, count)
        outside = outside | (index == count)
        flat_index = flat_index * count + fnp.minimum(index, count - 1)
    total = int(np.prod(nbins))
    flat_index = fnp.where(outside, total, flat_index)
    dtype = np.float64 if weights is None else np.result_type(_dtype(weights), np.float64)
    updates = fnp.ones((n,), dtype) if weights is None else weights.astype(dtype)
    hist = _at(fnp.zeros((total,), dtype))[flat_index].add(updates, mode="drop")
    hist = fnp.reshape(hist, tuple(nbins))
    if density:
        volume = fnp.ones(tuple(nbins), dtype)
        for axis, edge in enumerate(edges):
            shape = [1] * ndims
            shape[axis] = nbins[axis]
            volume = volume * fnp.reshape(fnp.diff(edge), shape)
        hist = hist / volume / fnp.sum(hist)
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``(hist, xedges, yedges)`` of the points (x, y)."""
    if isinstance(bins, (list, tuple)):
        is_edges = len(bins) not in (1, 2)
    else:
        is_edges = np.ndim(bins) == 1
    if is_edges:
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, weights, density)
    return hist, edges[0], edges[1]


def bincount(x, weights=None, minlength=0, *, length=None):
    """Occurrences of each non-negative integer in the 1-d ``x`` (weighted sums with
    ``weights``).  As JAX: negative values count as 0, values >= ``length`` are
    dropped, and ``length`` is needed under transformations."""
    fnp = _fnp()
    x = asarray_operand(x)
    if dtype_kind(_dtype(x)) not in "biu":
        raise TypeError(f"bincount: x must be an integer array, got {_dtype(x).name}; "
                        "cast it with x.astype(int)")
    if len(_shape(x)) != 1:
        raise ValueError(f"bincount: x must be 1-d, got shape {_shape(x)}")
    minlength = _static_int(minlength, "bincount's minlength")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        if isinstance(x, Tracer):
            raise _concretization_error("bincount", "length= (e.g. bincount(x, length=n))")
        biggest = int(np.max(np.asarray(x))) + 1 if _shape(x)[0] else 0
        length = _builtin_max(biggest, minlength)
    length = _static_int(length, "bincount's length")
    weights = _check_weights("bincount", weights, _shape(x)[0])
    if weights is None:
        updates = fnp.ones(_shape(x), np.int64)
    else:
        updates = weights if is_inexact(_dtype(weights)) else weights.astype(np.float64)
    index = fnp.maximum(x.astype(np.int64), 0)
    return _at(fnp.zeros((length,), _dtype(updates)))[index].add(updates, mode="drop")



def digitize(x, bins, right=False, *, method=None):
    """The index of the bin each ``x`` falls in, for monotonically increasing or
    decreasing 1-d ``bins`` (int64; ``bins`` may be traced)."""
    fnp = _fnp()
    bins = asarray_operand(bins)
    if len(_shape(bins)) != 1:
        raise ValueError(f"digitize: bins must be 1-d, got shape {_shape(bins)}")
    x = asarray_operand(x)
    n = _shape(bins)[0]
    if n == 0:
        return fnp.zeros(_shape(x), np.int64)
    side = "left" if right else "right"
    increasing = fnp.searchsorted(bins, x, side=side)
    decreasing = n - fnp.searchsorted(bins[::-1], x, side=side)
    return fnp.where(bins[-1] >= bins[0], increasing, decreasing).astype(np.int64)
