"""The rest of ``jax.numpy`` that is built from other ``fungrad.numpy`` functions:
set operations, histograms, polynomials, ``cov``/``corrcoef``, ``vectorize``,
``interp``, ``trapezoid``, window functions and a
few small helpers.

Nothing here is a primitive: every function composes ``fungrad.numpy``/
``fungrad.lax`` calls, so it is differentiable, vmappable and jittable wherever
its output shape does not depend on the input values.  Where it does (the set
operations, ``bincount``, ``roots``) the rules are JAX's: concrete inputs work
eagerly, and under ``jit``/``vmap``/``grad`` a static ``size=`` (``length=``
for ``bincount``) fixes the output shape; without it a
``ConcretizationTypeError`` says so.
"""
from __future__ import annotations

import itertools
import operator
import re

import numpy as np

from fungrad import lax
from fungrad.core import ConcretizationTypeError, Tracer, get_aval
from fungrad.interpreters import batching
from fungrad.numpy._convolve import convolve  # (polymul and poly multiply by convolution)
from fungrad.numpy._dtypes import asarray_operand, promote

__all__ = [
    # sets
    "isin", "in1d", "union1d", "intersect1d", "setdiff1d", "setxor1d",
    # histograms and counting
    "histogram_bin_edges", "histogram", "histogram2d", "histogramdd", "bincount", "digitize",
    # polynomials
    "polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit",
    "roots", "poly", "vander",
    # statistics, signals, calculus
    "cov", "corrcoef", "interp", "trapezoid",
    "bartlett", "blackman", "hamming", "hanning",
    # functional helpers
    "vectorize", "apply_along_axis", "apply_over_axes",
    # small helpers
    "iscomplex", "isreal", "rollaxis", "matvec", "vecmat", "fill_diagonal", "iterable",
]


_builtin_range, _builtin_max = range, max   # histogram* take an argument named range


def _fnp():
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    return fnp


def _at(x):
    """``x.at`` for arrays of any kind (plain ndarrays included)."""
    from fungrad.numpy._indexing import _IndexUpdateHelper
    return _IndexUpdateHelper(asarray_operand(x))


def _ravel(x):
    x = asarray_operand(x)
    return lax.reshape(x, (get_aval(x).size,))


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _static_int(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a static Python integer, got {value!r}") from None


def _concretization_error(name, hint):
    return ConcretizationTypeError(
        f"fungrad.numpy.{name}: the size of the result depends on the values of a traced "
        f"array, which are not known under this transformation (jit, vmap, grad). Pass a "
        f"static {hint} so the output shape is fixed, or call it outside the transformation.")


# ----------------------------------------------------------------------------
# Set operations
# ----------------------------------------------------------------------------
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
    if _dtype(sorted_values).kind in "fc":
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
    if _dtype(values).kind in "fc" and _shape(_ravel(ar))[0]:
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


# ----------------------------------------------------------------------------
# Histograms and counting
# ----------------------------------------------------------------------------

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
        dtype = np.result_type(_dtype(a), np.float64 if _dtype(a).kind in "biu" else _dtype(a))
        dtype = np.float64 if dtype.kind not in "fc" else dtype
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
    if _dtype(x).kind not in "biu":
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
        updates = weights if _dtype(weights).kind in "fc" else weights.astype(np.float64)
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


# ----------------------------------------------------------------------------
# Polynomials (coefficients highest power first, as numpy.poly*)
# ----------------------------------------------------------------------------

def _coefficients(name, p):
    p = asarray_operand(p)
    if len(_shape(p)) == 0:
        p = lax.reshape(p, (1,))
    if len(_shape(p)) != 1:
        raise ValueError(f"{name}: polynomial coefficients must be 1-d, got shape {_shape(p)}")
    return p


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients ``p`` at ``x`` (Horner's scheme)."""
    fnp = _fnp()
    p = asarray_operand(p)
    x = asarray_operand(x)
    p, x = promote("polyval", p, x)
    y = fnp.zeros(fnp.broadcast_shapes(_shape(x), _shape(p)[1:]), _dtype(x))
    for i in _builtin_range(_shape(p)[0] if _shape(p) else 1):
        y = y * x + (p[i] if _shape(p) else p)
    return y


def _pad_front(p, n):
    fnp = _fnp()
    extra = n - _shape(p)[0]
    return fnp.concatenate([fnp.zeros((extra,), _dtype(p)), p]) if extra > 0 else p


def polyadd(a1, a2):
    """The sum of two polynomials."""
    a1, a2 = promote("polyadd", _coefficients("polyadd", a1), _coefficients("polyadd", a2))
    n = _builtin_max(_shape(a1)[0], _shape(a2)[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = promote("polysub", _coefficients("polysub", a1), _coefficients("polysub", a2))
    n = _builtin_max(_shape(a1)[0], _shape(a2)[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


def _trim_leading_zeros(name, p):
    if isinstance(p, Tracer):
        raise _concretization_error(name, "trim_leading_zeros=False")
    values = np.asarray(p)
    nonzero = np.flatnonzero(values)
    return p[nonzero[0]:] if nonzero.size else p[-1:]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (the full convolution of the coefficients)."""
    a1, a2 = _coefficients("polymul", a1), _coefficients("polymul", a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros("polymul", a1), _trim_leading_zeros("polymul", a2)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """``(quotient, remainder)`` of polynomial division (float).  As JAX, the
    remainder keeps ``u``'s length (leading zeros) unless ``trim_leading_zeros``."""
    fnp = _fnp()
    u, v = promote("polydiv", _coefficients("polydiv", u), _coefficients("polydiv", v),
                   to_float=True)
    if trim_leading_zeros:
        v = _trim_leading_zeros("polydiv", v)
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = 1.0 / v[0]
    quotient = fnp.zeros((_builtin_max(m - n + 1, 1),), _dtype(u))
    remainder = u
    for k in _builtin_range(m - n + 1):
        d = scale * remainder[k]
        quotient = _at(quotient)[k].set(d)
        remainder = _at(remainder)[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        remainder = _trim_leading_zeros("polydiv", remainder)
    return quotient, remainder


def polyder(p, m=1):
    """The ``m``-th derivative of a polynomial."""
    fnp = _fnp()
    m = _static_int(m, "polyder's order m")
    if m < 0:
        raise ValueError(f"polyder: the order of derivative m must be non-negative, got {m}")
    p = _coefficients("polyder", p)
    for _ in _builtin_range(m):
        n = _shape(p)[0] - 1
        p = p[:-1] * fnp.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``
    (a scalar or ``m`` values, default 0)."""
    fnp = _fnp()
    m = _static_int(m, "polyint's order m")
    if m < 0:
        raise ValueError(f"polyint: the order of integral m must be non-negative, got {m}")
    p = _coefficients("polyint", p)
    constants = fnp.zeros((m,)) if k is None else asarray_operand(k)
    if len(_shape(constants)) == 0:
        constants = fnp.full((m,), constants)
    if _shape(constants) != (m,):
        raise ValueError(f"polyint: k must be a scalar or have m={m} values, got shape "
                         f"{_shape(constants)}")
    for i in _builtin_range(m):
        p = p / fnp.arange(_shape(p)[0], 0, -1)
        p, c = promote("polyint", p, constants[i:i + 1])
        p = fnp.concatenate([p, c])
    return p


def vander(x, N=None, increasing=False):  # noqa: N803
    """The Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1), ..., x, 1``
    (reversed with ``increasing``); built by repeated multiplication as NumPy."""
    fnp = _fnp()
    x = asarray_operand(x)
    if len(_shape(x)) != 1:
        raise ValueError(f"vander: x must be 1-d, got shape {_shape(x)}")
    n = _shape(x)[0] if N is None else _static_int(N, "vander's N")
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    columns = [fnp.ones(_shape(x), _dtype(x))] if n else []
    for _ in _builtin_range(n - 1):
        columns.append(columns[-1] * x)
    if not columns:
        return fnp.zeros((_shape(x)[0], 0), _dtype(x))
    out = fnp.stack(columns, axis=1)
    return out if increasing else out[:, ::-1]


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit (NumPy's column-scaled Vandermonde system).
    Returns the coefficients; with ``full`` also ``(residuals, rank, singular
    values, rcond)``; with ``cov`` the coefficients' covariance."""
    fnp = _fnp()
    deg = _static_int(deg, "polyfit's deg")
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    x, y = asarray_operand(x), asarray_operand(y)
    x, y = promote("polyfit", x, y, to_float=True)
    if len(_shape(x)) != 1 or _shape(x)[0] == 0:
        raise ValueError(f"polyfit: x must be a non-empty 1-d array, got shape {_shape(x)}")
    if len(_shape(y)) not in (1, 2) or _shape(y)[0] != _shape(x)[0]:
        raise ValueError(f"polyfit: y must be 1-d or 2-d with len(x)={_shape(x)[0]} rows, "
                         f"got shape {_shape(y)}")
    order = deg + 1
    rcond = _shape(x)[0] * float(np.finfo(_dtype(x)).eps) if rcond is None else rcond
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = asarray_operand(w)
        if _shape(w) != _shape(x):
            raise ValueError(f"polyfit: w must have the shape of x {_shape(x)}, got {_shape(w)}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if len(_shape(y)) == 1 else w[:, None])
    scale = fnp.sqrt(fnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    coef, resids, rank, s = fnp.linalg.lstsq(lhs, rhs, rcond)
    coef = (coef.T / scale).T
    if full:
        resids = fnp.reshape(resids, (1,)) if len(_shape(y)) == 1 else resids
        return coef, resids, rank, s, rcond
    if cov:
        return coef, _polyfit_covariance(lhs, scale, resids, order, cov, _shape(y))
    return coef


def _polyfit_covariance(lhs, scale, resids, order, cov, y_shape):
    fnp = _fnp()
    base = fnp.linalg.inv(lhs.T @ lhs) / fnp.outer(scale, scale)
    if cov == "unscaled":
        factor = 1.0
    else:
        if y_shape[0] <= order:
            raise ValueError("polyfit: the number of data points must exceed order to scale "
                             "the covariance matrix (or pass cov='unscaled')")
        factor = resids / (y_shape[0] - order)
    if len(y_shape) == 1:
        return base * factor
    return base[:, :, None] * factor


def roots(p, *, strip_zeros=True):
    """The roots of a polynomial: eigenvalues of its companion matrix (complex),
    differentiable through ``linalg.eigvals``.  With ``strip_zeros`` (NumPy's
    behaviour) leading zeros are dropped and trailing zeros give zero roots,
    which needs concrete coefficients (under jit pass ``strip_zeros=False``)."""
    from fungrad import core
    fnp = _fnp()
    p = _coefficients("roots", p)
    if not strip_zeros:
        return _companion_eigvals(p)
    values = np.asarray(core.concrete_or_error(
        p, "roots(strip_zeros=True) (the number of roots depends on the zero coefficients; "
           "under jit pass strip_zeros=False)"))
    nonzero = np.flatnonzero(values)
    if nonzero.size == 0:
        return fnp.zeros((0,), np.result_type(_dtype(p), np.complex64))
    lead, trail = int(nonzero[0]), int(values.size - 1 - nonzero[-1])
    found = _companion_eigvals(p[lead:values.size - trail])
    return fnp.concatenate([found, fnp.zeros((trail,), found.dtype)])


def _companion_eigvals(p):
    fnp = _fnp()
    n = _shape(p)[0] - 1
    if n < 1:
        return fnp.zeros((0,), np.result_type(_dtype(p), np.complex64))
    first_row = -p[1:] / p[0]
    companion = fnp.concatenate([first_row[None, :], fnp.eye(n - 1, n, dtype=first_row.dtype)])
    return fnp.linalg.eigvals(companion)


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a 1-d
    sequence), or a square matrix's characteristic polynomial (via ``eigvals``)."""
    fnp = _fnp()
    zeros = asarray_operand(seq_of_zeros)
    if len(_shape(zeros)) == 2 and _shape(zeros)[0] == _shape(zeros)[1] and _shape(zeros)[0]:
        # a matrix: its characteristic polynomial, real for real input as NumPy's
        real_input = _dtype(zeros).kind != "c"
        coefficients = poly(fnp.linalg.eigvals(zeros))
        return fnp.real(coefficients) if real_input else coefficients
    if len(_shape(zeros)) == 0:
        zeros = lax.reshape(zeros, (1,))
    if len(_shape(zeros)) != 1:
        raise ValueError(f"poly: input must be 1-d or a non-empty square 2-d array, got "
                         f"shape {_shape(zeros)}")
    dtype = np.result_type(_dtype(zeros), np.float64)
    if _shape(zeros)[0] == 0:
        return fnp.asarray(1.0)     # NumPy: the empty product, a scalar
    coefficients = fnp.ones((1,), dtype)
    for i in _builtin_range(_shape(zeros)[0]):
        factor = fnp.stack([fnp.ones((), dtype), -zeros[i].astype(dtype)])
        coefficients = convolve(coefficients, factor)
    if dtype.kind == "c" and not isinstance(zeros, Tracer):
        values = np.asarray(zeros)
        if np.array_equal(np.sort_complex(values[values.imag > 0]),
                          np.sort_complex(np.conjugate(values[values.imag < 0]))):
            return fnp.real(coefficients)
    return coefficients


# ----------------------------------------------------------------------------
# Convolution, interpolation, integration
# ----------------------------------------------------------------------------

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


def _window_points(name, M):
    M = _static_int(M, f"{name}'s M")
    return M, np.arange(1 - M, M, 2, dtype=np.float64)


def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points."""
    fnp = _fnp()
    M, n = _window_points("bartlett", M)
    if M <= 1:
        return fnp.ones((_builtin_max(M, 0),))
    return fnp.asarray(np.where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def _cosine_window(name, M, coefficients):
    fnp = _fnp()
    M, n = _window_points(name, M)
    if M <= 1:
        return fnp.ones((_builtin_max(M, 0),))
    out = sum(c * fnp.cos(k * np.pi * n / (M - 1)) for k, c in enumerate(coefficients))
    return out


def blackman(M):
    """The Blackman window of ``M`` points."""
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M):
    """The Hamming window of ``M`` points."""
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M):
    """The Hann window of ``M`` points."""
    return _cosine_window("hanning", M, (0.5, 0.5))


# ----------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------

def _observations(name, m, rowvar):
    """``m`` as a 2-d (variables, observations) float array."""
    fnp = _fnp()
    m = asarray_operand(m)
    if len(_shape(m)) > 2:
        raise ValueError(f"{name}: m must have at most 2 dimensions, got shape {_shape(m)}")
    m = m.astype(np.result_type(_dtype(m), np.float64))
    m = fnp.atleast_2d(m)
    if not rowvar and _shape(m)[0] != 1:
        m = m.T
    return m


def _frequency_weights(name, weights, n, kind):
    if weights is None:
        return None
    weights = asarray_operand(weights)
    if len(_shape(weights)) != 1 or _shape(weights)[0] != n:
        raise ValueError(f"{name}: {kind} must be 1-d with one weight per observation ({n}),"
                         f" got shape {_shape(weights)}")
    if not isinstance(weights, Tracer):
        values = np.asarray(weights)
        if kind == "fweights" and np.any(values != np.around(values)):
            raise TypeError(f"{name}: fweights must be integers")
        if np.any(values < 0):
            raise ValueError(f"{name}: {kind} cannot be negative")
    return weights.astype(np.float64) if _dtype(weights).kind in "biu" else weights


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """Covariance matrix of the variables in ``m`` (rows, or columns with
    ``rowvar=False``), with frequency and analytic weights as ``numpy.cov``."""
    fnp = _fnp()
    X = _observations("cov", m, rowvar)
    if y is not None:
        Y = _observations("cov", y, rowvar)
        X, Y = promote("cov", X, Y)
        X = fnp.concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = _shape(X)[1]
    fw = _frequency_weights("cov", fweights, n, "fweights")
    aw = _frequency_weights("cov", aweights, n, "aweights")
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        mean, w_sum = fnp.mean(X, axis=1), n
        fact = n - ddof
    else:
        mean, w_sum = fnp.average(X, axis=1, weights=w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * fnp.sum(w * aw) / w_sum
    fact = fnp.maximum(fact, 0.0)
    centred = X - mean[:, None]
    weighted = centred if w is None else centred * w
    c = (centred @ fnp.conj(weighted).T) / fact
    return fnp.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients (``cov`` normalised, clipped to [-1, 1])."""
    fnp = _fnp()
    c = cov(x, y, rowvar)
    if len(_shape(c)) == 0:
        return c / c
    stddev = fnp.sqrt(fnp.real(fnp.diagonal(c)))
    c = c / stddev[:, None] / stddev[None, :]
    if _dtype(c).kind == "c":
        return fnp.clip(fnp.real(c), -1, 1) + 1j * fnp.clip(fnp.imag(c), -1, 1)
    return fnp.clip(c, -1, 1)


# ----------------------------------------------------------------------------
# vectorize and friends
# ----------------------------------------------------------------------------

_DIMS = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*,?\s*\)"
_ARGS = rf"{_DIMS}(?:\s*,\s*{_DIMS})*"
_SIGNATURE = re.compile(rf"^\s*({_ARGS})?\s*->\s*({_ARGS})\s*$")


def _parse_dims(text):
    return [tuple(d for d in re.split(r"\s*,\s*", group.strip()) if d)
            for group in re.findall(r"\(([^)]*)\)", text)]


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m','n'), ('n',)], [('m',)])."""
    match = _SIGNATURE.match(signature)
    if not match:
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                         "something like '(m,n),(n)->(m)')")
    return _parse_dims(match.group(1) or ""), _parse_dims(match.group(2))


class vectorize:  # noqa: N801 (numpy's name)
    """``pyfunc`` mapped over the broadcast leading (loop) dimensions of its
    arguments with ``fungrad.vmap``; ``signature`` names the trailing core
    dimensions each argument and output keeps (``'(n),(n)->()'``); ``excluded``
    positions or keyword names are passed through unchanged."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        if not callable(pyfunc):
            raise TypeError(f"vectorize: pyfunc must be callable, got {pyfunc!r}")
        for e in excluded:
            if not isinstance(e, (int, str)):
                raise TypeError(f"vectorize: excluded must contain ints or strings, got {e!r}")
        self.pyfunc = pyfunc
        self.excluded = frozenset(excluded)
        self.signature = signature
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")

    def __call__(self, *args, **kwargs):
        fixed_pos = {i: a for i, a in enumerate(args) if i in self.excluded}
        fixed_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        mapped_pos = [i for i in _builtin_range(len(args)) if i not in self.excluded]
        mapped_kw = [k for k in kwargs if k not in self.excluded]
        arrays = [asarray_operand(args[i]) for i in mapped_pos] + \
                 [asarray_operand(kwargs[k]) for k in mapped_kw]

        def call(*values):
            full = list(args)
            for i, v in zip(mapped_pos, values):
                full[i] = v
            named = dict(fixed_kw, **dict(zip(mapped_kw, values[len(mapped_pos):])))
            full = [fixed_pos.get(i, a) for i, a in enumerate(full)]
            return self.pyfunc(*full, **named)

        core_in, core_out = self._core_dims(len(arrays))
        return _vectorized_call(call, arrays, core_in, core_out)

    def _core_dims(self, nargs):
        if self.signature is None:
            return [()] * nargs, None
        core_in, core_out = _parse_signature(self.signature)
        if len(core_in) != nargs:
            raise TypeError(f"vectorize: signature {self.signature!r} has {len(core_in)} "
                            f"inputs, but the function got {nargs} (non-excluded) arguments")
        return core_in, core_out


def _core_sizes(arrays, core_in):
    """The size of every named core dimension (ValueError on a mismatch)."""
    sizes = {}
    for k, (x, dims) in enumerate(zip(arrays, core_in)):
        if len(_shape(x)) < len(dims):
            raise ValueError(f"vectorize: argument {k} has shape {_shape(x)}, fewer dimensions "
                             f"than its core dimensions {dims}")
        for name, size in zip(dims, _shape(x)[len(_shape(x)) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} and {size}")
    return sizes


def _vectorized_call(call, arrays, core_in, core_out):
    """vmap ``call`` once per loop dimension (outermost first); an argument whose
    loop dimension is 1 where others are larger is not mapped at that level."""
    fnp = _fnp()
    sizes = _core_sizes(arrays, core_in)
    loop_shapes = [_shape(x)[:len(_shape(x)) - len(d)] for x, d in zip(arrays, core_in)]
    loop_shape = fnp.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    depth = len(loop_shape)
    in_axes_per_level, prepared = [], []
    for x, shape in zip(arrays, loop_shapes):
        core_shape = _shape(x)[len(shape):]
        shape = (1,) * (depth - len(shape)) + tuple(shape)
        x = fnp.reshape(x, shape + core_shape)
        mapped = [s != 1 or b == 1 for s, b in zip(shape, loop_shape)]
        drop = tuple(i for i, m in enumerate(mapped) if not m)
        prepared.append(fnp.squeeze(x, drop) if drop else x)
        in_axes_per_level.append(mapped)
    fun = _checked_outputs(call, core_out, sizes)
    for level in reversed(_builtin_range(depth)):
        axes = tuple(0 if m[level] else None for m in in_axes_per_level)
        fun = _vmap_level(fun, axes)
    return fun(*prepared)


def _vmap_level(fun, axes):
    return _vmap_arrays(fun, axes)


def _vmap_arrays(fun, in_axes, out_axes=0):
    """``vmap`` of a function of positional arrays returning an array or a tuple
    of arrays (all vectorize and apply_along_axis need; the full vmap, with
    pytrees, is the api layer's): ``in_axes`` one per argument or one for all."""
    def mapped(*xs):
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(xs)
        axes = [None if a is None else a % len(_shape(x)) for a, x in zip(axes, xs)]
        size = next(_shape(x)[a] for x, a in zip(xs, axes) if a is not None)
        returns_tuple = []

        def flat(*vals):
            out = fun(*vals)
            returns_tuple.append(isinstance(out, tuple))
            return [asarray_operand(o) for o in (out if isinstance(out, tuple) else (out,))]
        outs = batching.vmap_flat(flat, list(xs), axes, size, itertools.repeat(out_axes))
        return tuple(outs) if returns_tuple[0] else outs[0]
    return mapped


def _checked_outputs(call, core_out, sizes):
    """``call`` with its outputs turned into arrays and checked against the
    signature's output core dimensions."""
    fnp = _fnp()

    def checked(*values):
        out = call(*values)
        if core_out is None:
            return tuple(fnp.asarray(o) for o in out) if isinstance(out, tuple) \
                else fnp.asarray(out)
        outs = out if len(core_out) > 1 else (out,)
        if not isinstance(outs, tuple) or len(outs) != len(core_out):
            raise ValueError(f"vectorize: the function must return {len(core_out)} outputs "
                             "to match its signature")
        for k, (o, dims) in enumerate(zip(outs, core_out)):
            shape = _shape(fnp.asarray(o))
            want = tuple(sizes.get(d, s) for d, s in zip(dims, shape))
            if len(shape) != len(dims) or shape != want:
                raise ValueError(f"vectorize: output {k} has shape {shape}, which does not "
                                 f"match the signature's core dimensions {dims}")
            for d, s in zip(dims, shape):
                sizes.setdefault(d, s)
        return out if len(core_out) > 1 else fnp.asarray(out)
    return checked


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to the 1-d slices of ``arr`` along ``axis`` (via vmap);
    the output's dimensions replace ``axis``."""
    fnp = _fnp()
    arr = asarray_operand(arr)
    ndim = len(_shape(arr))
    axis = _static_int(axis, "apply_along_axis's axis")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, "fungrad.numpy.apply_along_axis")
    axis %= ndim
    fun = lambda x: fnp.asarray(func1d(x, *args, **kwargs))  # noqa: E731
    for _ in _builtin_range(ndim - 1 - axis):    # the dimensions after axis
        fun = _vmap_arrays(fun, -1, out_axes=-1)
    for _ in _builtin_range(axis):               # the dimensions before axis
        fun = _vmap_arrays(fun, 0, out_axes=0)
    return fun(arr)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn, keeping the dimension."""
    fnp = _fnp()
    a = asarray_operand(a)
    for axis in ([axes] if np.ndim(axes) == 0 else axes):
        axis = _static_int(axis, "apply_over_axes's axes")
        out = fnp.asarray(func(a, axis))
        if len(_shape(out)) == len(_shape(a)) - 1:
            out = fnp.expand_dims(out, axis)
        if len(_shape(out)) != len(_shape(a)):
            raise ValueError("apply_over_axes: func must keep or reduce by one the number of "
                             "dimensions")
        a = out
    return a


# ----------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------

def iscomplex(x):
    """Elementwise: True where the imaginary part is non-zero."""
    fnp = _fnp()
    x = asarray_operand(x)
    return fnp.imag(x) != 0 if _dtype(x).kind == "c" else fnp.zeros(_shape(x), bool)


def isreal(x):
    """Elementwise: True where the imaginary part is zero."""
    return _fnp().logical_not(iscomplex(x))


def rollaxis(a, axis, start=0):
    """Move ``axis`` to before position ``start`` (``numpy.rollaxis``)."""
    fnp = _fnp()
    a = asarray_operand(a)
    n = len(_shape(a))
    axis, start = _static_int(axis, "rollaxis's axis"), _static_int(start, "rollaxis's start")
    if not -n <= axis < n:
        raise np.exceptions.AxisError(axis, n, "fungrad.numpy.rollaxis")
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"rollaxis: start={start} must be in [{-n}, {n}]")
    axis %= n
    start = start % n if start < 0 else start
    if axis < start:
        start -= 1
    return fnp.moveaxis(a, axis, start) if axis != start else a


def matvec(x1, x2, /):
    """Batched matrix-vector product: ``x1 (..., m, n) @ x2 (..., n) -> (..., m)``."""
    fnp = _fnp()
    x1, x2 = asarray_operand(x1), asarray_operand(x2)
    return fnp.squeeze(fnp.matmul(x1, fnp.expand_dims(x2, -1)), -1)


def vecmat(x1, x2, /):
    """Batched vector-matrix product: ``conj(x1) (..., m) @ x2 (..., m, n) -> (..., n)``."""
    fnp = _fnp()
    x1, x2 = asarray_operand(x1), asarray_operand(x2)
    return fnp.squeeze(fnp.matmul(fnp.expand_dims(fnp.conj(x1), -2), x2), -2)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of ``a`` with its main diagonal set to ``val``.  As JAX, arrays are
    immutable: pass ``inplace=False``."""
    fnp = _fnp()
    if inplace:
        raise NotImplementedError("fill_diagonal: fungrad arrays are immutable; call "
                                  "fill_diagonal(a, val, inplace=False) and use the result")
    a = asarray_operand(a)
    shape = _shape(a)
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise ValueError(f"fill_diagonal: a must be 2-d, or n-d with equal dimensions, got "
                         f"shape {shape}")
    n = min(shape)
    if len(shape) == 2 and wrap and shape[0] > shape[1] + 1:
        rows = np.arange(shape[0])
        rows = rows[rows % (shape[1] + 1) < shape[1]]
        cols = rows % (shape[1] + 1)
        index = (rows, cols)
    else:
        index = (np.arange(n),) * len(shape)
    values = fnp.ravel(fnp.asarray(val)).astype(_dtype(a))
    count = index[0].shape[0]
    if _shape(values)[0] == 0:
        return a
    values = fnp.resize(values, (count,))
    return _at(a)[index].set(values)


def iterable(y):
    """Whether ``y`` can be iterated over (0-d arrays cannot)."""
    try:
        iter(y)
    except TypeError:
        return False
    return True
