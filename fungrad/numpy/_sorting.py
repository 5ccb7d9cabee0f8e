"""Sorting and searching with NumPy 2's signatures (and jax.numpy's ``stable``/
``descending`` keywords), built on ``fungrad.lax``.

Every sort is stable (equal elements keep their order, also when
``descending=True``); NaNs sort last.  ``unique`` needs concrete values (its
output size depends on them) unless ``size=`` is given, as in jax.numpy.
"""
from __future__ import annotations

import operator

import numpy as np

from fungrad._dtype_classes import is_inexact, is_integer, kind as dtype_kind
from fungrad import core, lax
from fungrad.core import Tracer, ConcretizationTypeError, get_aval, wrap_array
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.lax.utils import check_choice

__all__ = ["sort", "sort_complex", "top_k", "argsort", "lexsort", "partition", "argpartition", "searchsorted", "unique",
           "unique_values", "unique_counts", "unique_inverse", "unique_all"]


def _axis(name, axis, ndim) -> int:
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer or None, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, f"fungrad.numpy.{name}")
    return axis % ndim


def _operand_and_axis(name, a, axis):
    """(array, axis) with ``axis=None`` meaning the flattened array."""
    x = asarray_operand(a)
    if axis is None:
        return lax.reshape(x, (x.size,)), 0
    return x, _axis(name, axis, x.ndim)


def _check_kind(name, kind, order):
    if order is not None:
        raise NotImplementedError(f"{name}: order= (structured arrays) is not supported")
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"{name}: unknown sort kind {kind!r}")


def sort(a, /, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """A sorted copy of ``a`` along ``axis`` (flattened if None); NaNs last, or
    first with ``descending=True``."""
    _check_kind("sort", kind, order)
    x, ax = _operand_and_axis("sort", a, axis)
    if descending:
        return lax.rev(lax.sort(lax.rev(x, (ax,)), dimension=ax), (ax,))
    return lax.sort(x, dimension=ax)


def sort_complex(a):
    """``a`` sorted along its last axis, as complex numbers (real part first, then
    imaginary part; ``numpy.sort_complex``).  Real input becomes complex as
    NumPy's does: complex64 for 8- and 16-bit integers, complex128 otherwise."""
    x, _ = _operand_and_axis("sort_complex", a, -1)
    out = sort(x, axis=-1)
    if dtype_kind(x.dtype) == "c":
        return out
    return out.astype(np.complex64 if x.dtype.char in "bhBH" else np.complex128)


def top_k(a, k, /, *, axis=-1, mode="largest", sorted=True):   # noqa: A002 (JAX's name)
    """``(values, indices)`` of the ``k`` largest (``mode="largest"``) or smallest
    entries of ``a`` along ``axis``, sorted, ties to the lower index
    (``jax.numpy.top_k``; ``sorted`` is accepted, the result is always sorted)."""
    x, ax = _operand_and_axis("top_k", a, axis)
    if dtype_kind(x.dtype) == "c":
        raise ValueError("top_k: complex inputs are not supported (as in JAX)")
    if mode not in ("largest", "smallest"):
        raise ValueError(f"top_k: mode must be 'largest' or 'smallest', got {mode!r}")
    if mode == "largest":
        return lax.top_k(x, k, axis=ax)
    # an order-reversing map: ~x (= -x - 1 for integers, without overflow), or -x
    flip = lax.bitwise_not if dtype_kind(x.dtype) in "biu" else lax.neg
    values, indices = lax.top_k(flip(x), k, axis=ax)
    return flip(values), indices


def argsort(a, /, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (int64; int32 without jax_enable_x64),
    stable: equal elements keep their original order, also with ``descending=True``."""
    _check_kind("argsort", kind, order)
    x, ax = _operand_and_axis("argsort", a, axis)
    shape = x.shape
    if descending:
        x = lax.rev(x, (ax,))
    index = core.default_int_dtype()
    iota = lax.broadcasted_iota(index, shape, ax)
    _, perm = lax.sort((x, iota), dimension=ax, num_keys=1)
    if descending:
        # positions in the reversed array, read back to front
        perm = lax.sub(np.asarray(shape[ax] - 1, index), lax.rev(perm, (ax,)))
    return perm


def lexsort(keys, axis=-1):
    """Indices sorting by several keys, the *last* key primary (``numpy.lexsort``)."""
    if isinstance(keys, (Tracer, np.ndarray)):
        keys = [keys[i] for i in range(get_aval(keys).shape[0])]
    keys = [asarray_operand(k) for k in keys]
    if not keys:
        raise TypeError("lexsort: need at least one key")
    shape = get_aval(keys[0]).shape
    if any(get_aval(k).shape != shape for k in keys):
        raise ValueError(f"lexsort: all keys need the same shape, got "
                         f"{[get_aval(k).shape for k in keys]}")
    ax = _axis("lexsort", axis, len(shape))
    iota = lax.broadcasted_iota(core.default_int_dtype(), shape, ax)
    outs = lax.sort(tuple(keys[::-1]) + (iota,), dimension=ax, num_keys=len(keys))
    return outs[-1]


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``a`` rearranged so the ``kth`` element is where a sort would put it, with
    smaller elements before and larger after (here: fully sorted, a valid answer)."""
    x, ax = _operand_and_axis("partition", a, axis)
    _check_kth("partition", kth, x.shape[ax])
    return lax.sort(x, dimension=ax)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition ``a`` (here: that sort it, a valid answer)."""
    x, ax = _operand_and_axis("argpartition", a, axis)
    _check_kth("argpartition", kth, x.shape[ax])
    return argsort(x, ax)


def _check_kth(name, kth, n):
    for k in np.atleast_1d(np.asarray(kth)).tolist():
        if not -n <= k < n:
            raise ValueError(f"{name}: kth(={k}) out of bounds ({n})")


def searchsorted(a, v, /, side="left", sorter=None, *, method="scan"):
    """Indices where the values ``v`` would be inserted into the sorted 1-d ``a``
    to keep it sorted (int64); ``v`` may be traced; zero derivative."""
    check_choice(side, ("left", "right"), "fungrad.numpy.searchsorted", "side")
    check_choice(method, ("scan", "scan_unrolled", "sort", "compare_all"),
                 "fungrad.numpy.searchsorted", "method")
    a = asarray_operand(a)
    if get_aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {get_aval(a).shape}")
    if sorter is not None:
        sorter = asarray_operand(sorter)
        a = lax.take_along_axis(a, _cast_int(sorter), 0)
    a, v = promote("searchsorted", a, v)
    return lax.searchsorted(a, v, side=side)


def _cast_int(x):
    if not is_integer(get_aval(x).dtype):
        raise TypeError(f"sorter must contain integers, got {get_aval(x).dtype.name}")
    return x


# ----------------------------------------------------------------------------
# unique
# ----------------------------------------------------------------------------

def _concrete(name, x, what="size"):
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"fungrad.numpy.{name}: the size of the result depends on the values of a "
            f"traced array {x.aval.str_short()}, which are not known under this "
            f"transformation. Pass a static {what}= (e.g. unique(x, size=n, fill_value=...)) "
            "so the output shape is fixed, or call it outside the transformation.")
    return np.asarray(x)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):  # noqa: A002
    """The sorted unique elements of ``ar`` (``numpy.unique``).  Concrete values
    only, unless ``size=`` fixes the output length (then only the values are
    supported: padded with ``fill_value``, default the smallest element)."""
    if size is not None:
        if return_index or return_inverse or return_counts or axis is not None:
            raise NotImplementedError("unique with size= supports neither return_index/"
                                      "return_inverse/return_counts nor axis=")
        return _unique_sized(asarray_operand(ar), operator.index(size), fill_value)
    x = _concrete("unique", ar)
    out = np.unique(x, return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis, equal_nan=equal_nan)
    if isinstance(out, tuple):
        return tuple(wrap_array(o) for o in out)
    return wrap_array(out)


def _unique_sized(x, size, fill_value):
    """Unique values with a fixed output length: sort, mark the first of each run,
    then move the marked ones to the front with a stable sort on the mark."""
    flat = lax.sort(lax.reshape(x, (get_aval(x).size,)), dimension=0)
    n = get_aval(flat).shape[0]
    if n == 0:
        raise ValueError("unique: size= needs a non-empty array (there is no fill value)")
    prev = lax.pad(lax.slice(flat, (0,), (n - 1,)), np.asarray(0, get_aval(flat).dtype),
                   ((1, 0, 0),))
    first = lax.ne(flat, prev)
    if is_inexact(get_aval(flat).dtype):   # NaNs are equal to each other here (equal_nan)
        first = lax.bitwise_and(first, lax.bitwise_not(lax.bitwise_and(
            lax.ne(flat, flat), lax.ne(prev, prev))))
    first = lax.bitwise_or(first, lax.eq(lax.broadcasted_iota(np.int64, (n,), 0),
                                         np.asarray(0, np.int64)))
    key = lax.convert_element_type(lax.bitwise_not(first), np.int8)
    _, moved = lax.sort((key, flat), dimension=0, num_keys=1)
    count = lax.reduce_sum(lax.convert_element_type(first, np.int64), (0,))
    if size > n:
        moved = lax.pad(moved, np.asarray(0, get_aval(flat).dtype), ((0, size - n, 0),))
    else:
        moved = lax.slice(moved, (0,), (size,))
    fill = lax.slice(flat, (0,), (1,)) if fill_value is None else \
        lax.full((1,), fill_value, get_aval(flat).dtype)
    keep = lax.lt(lax.broadcasted_iota(np.int64, (size,), 0), count)
    return lax.select(keep, moved, lax.broadcast_in_dim(fill, (size,), (0,)))


def unique_values(x, /):
    """NumPy 2's ``unique_values`` (concrete values only)."""
    return unique(x)


def unique_counts(x, /):
    """NumPy 2's ``unique_counts``: ``(values, counts)``."""
    values, counts = unique(x, return_counts=True)
    return _named("UniqueCountsResult", ("values", "counts"), values, counts)


def unique_inverse(x, /):
    """NumPy 2's ``unique_inverse``: ``(values, inverse_indices)``, inverse shaped like x."""
    values, inverse = unique(x, return_inverse=True)
    return _named("UniqueInverseResult", ("values", "inverse_indices"), values,
                  wrap_array(np.reshape(np.asarray(inverse), np.shape(np.asarray(x)))))


def unique_all(x, /):
    """NumPy 2's ``unique_all``: values, indices, inverse_indices, counts."""
    values, index, inverse, counts = unique(x, return_index=True, return_inverse=True,
                                            return_counts=True)
    inverse = wrap_array(np.reshape(np.asarray(inverse), np.shape(np.asarray(x))))
    return _named("UniqueAllResult", ("values", "indices", "inverse_indices", "counts"),
                  values, index, inverse, counts)


_RESULT_TYPES: dict = {}


def _named(type_name, fields, *values):
    import collections
    cls = _RESULT_TYPES.get(type_name)
    if cls is None:
        cls = _RESULT_TYPES[type_name] = collections.namedtuple(type_name, fields)
    return cls(*values)
