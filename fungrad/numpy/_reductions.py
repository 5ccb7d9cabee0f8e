"""Reductions, statistics and cumulative functions with NumPy 2's signatures,
dtypes and edge cases, built on ``fungrad.lax``.

JAX's dtype rules: ``sum``/``prod`` of bool and small integers accumulate in
the default int (int64, or int32 without x64; unsigned ones in uint64/uint32),
``cumsum``/``cumprod`` keep the dtype (bool counts as the default int),
``mean``/``var``/``std``/``median`` of integers up to 32 bits give float32, of
64-bit ones float64, of float16 float16 (accumulated in float32), ``argmax``
gives the default int, ``all``/``any`` give bool.  ``axis`` is
None, an int or a tuple (negative counts from the end); an axis out of range
raises NumPy's ``AxisError``.  ``out=`` is rejected: fungrad arrays are
immutable.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from fungrad._dtype_classes import is_small, finfo as dtype_finfo, iinfo as dtype_iinfo, is_inexact, is_integer, kind as dtype_kind
from fungrad import core, lax
from fungrad.core import Tracer, get_aval
from fungrad.lax.selection import convert_weak_type
from fungrad.numpy._dtypes import asarray_operand, inexact_dtype, result_type

__all__ = ["sum", "mean", "var", "std", "prod", "max", "min", "amax", "amin", "argmax",
           "argmin", "all", "any", "nansum", "nanmean", "nanmax", "nanmin", "nanprod",
           "nanvar", "nanstd", "nanargmax", "nanargmin", "ptp", "median", "nanmedian",
           "quantile", "percentile", "nanquantile", "nanpercentile", "average", "cumsum",
           "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod",
           "diff", "ediff1d", "count_nonzero"]


# ----------------------------------------------------------------------------
# Argument handling shared by every reduction
# ----------------------------------------------------------------------------

def _no_out(name, out):
    if out is not None:
        raise TypeError(f"fungrad.numpy.{name} does not support the out= argument: fungrad "
                        f"arrays are immutable. Use the returned array instead "
                        f"(y = fungrad.numpy.{name}(...)).")


def _normalize_axes(name, axis, ndim) -> tuple:
    """NumPy's axis argument -> sorted tuple of non-negative ints (AxisError if bad)."""
    if axis is None:
        return tuple(range(ndim))
    many = isinstance(axis, (tuple, list))
    out = []
    for a in (axis if many else (axis,)):
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{name}: axis must be None, an integer or a tuple of integers, "
                            f"got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim, f"fungrad.numpy.{name}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate value in 'axis': {axis!r}")
    return tuple(sorted(out))


def _reduced_size(x, axes) -> int:
    return math.prod([x.shape[a] for a in axes])


def _keep(r, axes, keepdims):
    """The reduction ``r`` with the reduced axes kept (``keepdims``), strongly
    typed: jax.numpy's reductions strip the weak type lax's keep."""
    r = convert_weak_type(r, get_aval(r).dtype, False)
    return lax.expand_dims(r, axes) if keepdims and axes else r


def _strong(x, dtype):
    """``x`` as a strongly typed ``dtype`` operand: jax.numpy's reductions
    convert their operand so (its transpose makes a weak input's gradient
    weak again), and their results are strong (``_keep``)."""
    return convert_weak_type(x, dtype, False)


def _cast(x, dtype):
    return lax.convert_element_type(x, dtype) if get_aval(x).dtype != dtype else x


def _full(shape, value, dtype):
    return lax.full(shape, np.asarray(value, dtype), dtype)


def _mask(name, x, where, fill):
    """``x`` with the positions where ``where`` is False replaced by ``fill``."""
    where = asarray_operand(where)
    shape, where_shape = get_aval(x).shape, get_aval(where).shape
    try:
        fits = np.broadcast_shapes(where_shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: the where= mask of shape {get_aval(where).shape} does not "
                         f"broadcast to the array's shape {shape}")
    where = _cast(where, np.dtype(bool))
    return lax.select(_broadcast(where, shape), x, _full(shape, fill, get_aval(x).dtype))


def _broadcast(x, shape):
    """NumPy broadcasting of ``x`` to ``shape`` (trailing dimensions line up)."""
    lead = len(shape) - get_aval(x).ndim
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(lead, len(shape))))


def _count(x, axes, where, dtype):
    """Number of elements taking part in a reduction (an array when masked)."""
    if where is None:
        return np.asarray(_reduced_size(x, axes), dtype)
    ones = _mask("count", _full(x.shape, 1, dtype), where, 0)
    return lax.reduce_sum(ones, axes)


def _accumulator_dtype(x_dtype, dtype, promote_integers=True):
    """NumPy's dtype for sum/prod/cumsum: small integers and bools widen."""
    if dtype is not None:
        return np.dtype(dtype)
    if not promote_integers:
        return x_dtype
    if x_dtype == np.bool_ or (dtype_kind(x_dtype) == "i" and x_dtype.itemsize < 8):
        return core.canonicalize_dtype(np.int64)       # (int32 without jax_enable_x64)
    if dtype_kind(x_dtype) == "u" and x_dtype.itemsize < 8:
        return core.canonicalize_dtype(np.uint64)
    return x_dtype


def _cumulative_dtype(x_dtype, dtype):
    """JAX's dtype for cumsum/cumprod: the input's, bools counted as the default int."""
    if dtype is not None:
        return np.dtype(dtype)
    return core.default_int_dtype() if x_dtype == np.bool_ else x_dtype


def _float_dtype(x_dtype, dtype=None):
    """Result dtype of mean/var/median: JAX's inexact counterpart (bools and
    integers up to 32 bits give float32, 64-bit integers float64)."""
    if dtype is not None:
        return np.dtype(dtype)
    return inexact_dtype(x_dtype)


def _real_dtype(dtype):
    return np.dtype(dtype_finfo(dtype).dtype) if dtype_kind(np.dtype(dtype)) == "c" else np.dtype(dtype)


def _isnan(x):
    return lax.ne(x, x)


def _has_nan_kind(x):
    return is_inexact(get_aval(x).dtype)


def _combine_where(where, extra):
    return extra if where is None else lax.bitwise_and(
        _cast(asarray_operand(where), np.dtype(bool)), extra)


# ----------------------------------------------------------------------------
# sum, prod
# ----------------------------------------------------------------------------

def _sum_like(name, a, axis, dtype, out, keepdims, initial, where, promote_integers,
              reduce, combine, identity):
    _no_out(name, out)
    x = asarray_operand(a)
    dt = _accumulator_dtype(get_aval(x).dtype, dtype, promote_integers)
    x = _strong(x, dt)
    axes = _normalize_axes(name, axis, x.ndim)
    if where is not None:
        x = _mask(name, x, where, identity)
    r = reduce(x, axes)
    if initial is not None:
        r = combine(r, _cast(asarray_operand(initial), dt))
    return _keep(r, axes, keepdims)


def sum(a, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers=True):
    """Sum of the elements over ``axis`` (``numpy.sum``)."""
    return _sum_like("sum", a, axis, dtype, out, keepdims, initial, where, promote_integers,
                     lax.reduce_sum, lax.add, 0)


def prod(a, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of the elements over ``axis`` (``numpy.prod``); the gradient is exact
    when the array contains zeros."""
    return _sum_like("prod", a, axis, dtype, out, keepdims, initial, where, promote_integers,
                     lax.reduce_prod, lax.mul, 1)


# ----------------------------------------------------------------------------
# max, min, ptp
# ----------------------------------------------------------------------------

def _identity_for(kind, dtype):
    """Fill value that never wins a max (kind='max') or a min (kind='min')."""
    if dtype == np.bool_:
        return kind == "min"
    if is_integer(dtype):
        info = dtype_iinfo(dtype)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


def _extreme(name, kind, a, axis, out, keepdims, initial, where):
    _no_out(name, out)
    x = asarray_operand(a)
    axes = _normalize_axes(name, axis, x.ndim)
    ufunc = "maximum" if kind == "max" else "minimum"
    if where is not None and initial is None:
        raise ValueError(f"reduction operation '{ufunc}' does not have an identity, so to "
                         f"use a where mask one has to specify 'initial' (in {name})")
    if initial is None and _reduced_size(x, axes) == 0 and x.size == 0:
        raise ValueError(f"zero-size array to reduction operation {ufunc} which has no "
                         f"identity (in {name}, shape {x.shape}, axis {axis}); pass initial=")
    dtype = get_aval(x).dtype
    x = _strong(x, dtype)
    if where is not None:
        x = _mask(name, x, where, _identity_for(kind, dtype))
    r = (lax.reduce_max if kind == "max" else lax.reduce_min)(x, axes)
    if initial is not None:
        r = (lax.max if kind == "max" else lax.min)(r, _cast(asarray_operand(initial), dtype))
    return _keep(r, axes, keepdims)


def max(a, /, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Largest element over ``axis``; ties share the gradient equally, as JAX."""
    return _extreme("max", "max", a, axis, out, keepdims, initial, where)


def min(a, /, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Smallest element over ``axis``; ties share the gradient equally, as JAX."""
    return _extreme("min", "min", a, axis, out, keepdims, initial, where)


amax = max
amin = min


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) over ``axis`` (``numpy.ptp``)."""
    x = asarray_operand(a)
    if get_aval(x).dtype == np.bool_:
        raise TypeError("ptp: numpy boolean subtract is not supported; convert the array "
                        "to an integer dtype first")
    hi = max(x, axis, out, keepdims)
    return lax.sub(hi, min(x, axis, None, keepdims))


# ----------------------------------------------------------------------------
# argmax, argmin
# ----------------------------------------------------------------------------

def _arg_extreme(name, lax_fn, a, axis, out, keepdims):
    _no_out(name, out)
    x = asarray_operand(a)
    ndim = x.ndim
    if axis is None:
        x = lax.reshape(x, (x.size,))
        ax = 0
    else:
        ax = _normalize_axes(name, operator.index(axis) if not isinstance(axis, (tuple, list))
                             else _single_axis(name, axis), ndim)[0]
    if x.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence (shape {get_aval(a).shape}"
                         f", axis {axis})")
    r = lax_fn(x, ax, core.default_int_dtype())
    if keepdims:
        r = lax.reshape(r, (1,) * ndim) if axis is None else lax.expand_dims(r, (ax,))
    return r


def _single_axis(name, axis):
    raise TypeError(f"{name}: axis must be None or a single integer, got {axis!r}")


def argmax(a, /, axis=None, out=None, *, keepdims=False):
    """Index of the first largest element (NaN counts as largest), int64."""
    return _arg_extreme("argmax", lax.argmax, a, axis, out, keepdims)


def argmin(a, /, axis=None, out=None, *, keepdims=False):
    """Index of the first smallest element (NaN counts as smallest), int64."""
    return _arg_extreme("argmin", lax.argmin, a, axis, out, keepdims)


# ----------------------------------------------------------------------------
# all, any, count_nonzero
# ----------------------------------------------------------------------------

def _truth(x):
    return x if get_aval(x).dtype == np.bool_ else lax.ne(x, _full((), 0, get_aval(x).dtype))


def _logical(name, reduce, identity, a, axis, out, keepdims, where):
    _no_out(name, out)
    x = _truth(asarray_operand(a))
    axes = _normalize_axes(name, axis, x.ndim)
    if where is not None:
        x = _mask(name, x, where, identity)
    return _keep(reduce(x, axes), axes, keepdims)


def all(a, /, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether every element over ``axis`` is true (non-zero; NaN is true)."""
    return _logical("all", lax.reduce_and, True, a, axis, out, keepdims, where)


def any(a, /, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether some element over ``axis`` is true (non-zero; NaN is true)."""
    return _logical("any", lax.reduce_or, False, a, axis, out, keepdims, where)


def count_nonzero(a, /, axis=None, *, keepdims=False):
    """Number of non-zero elements over ``axis`` (int64)."""
    x = _truth(asarray_operand(a))
    return sum(_cast(x, core.default_int_dtype()), axis=axis, keepdims=keepdims)


# ----------------------------------------------------------------------------
# mean, var, std, average
# ----------------------------------------------------------------------------

def _compute_dtype(dtype):
    # NumPy's float16 rule, and JAX's for float16/bfloat16 (float8 too): in float32
    return np.dtype(np.float32) if dtype == np.float16 or is_small(dtype) else dtype


def mean(a, /, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``: float64 for integer input; the mean of an
    empty selection is NaN (NumPy also warns)."""
    _no_out("mean", out)
    x = asarray_operand(a)
    res_dtype = _float_dtype(get_aval(x).dtype, dtype)
    work = _compute_dtype(res_dtype if is_inexact(res_dtype) else core.default_float_dtype())
    axes = _normalize_axes("mean", axis, x.ndim)
    x = _cast(x, work)
    if where is None and _reduced_size(x, axes) == 0:
        shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
        return _keep(_full(shape, np.nan, res_dtype), axes, keepdims)
    total = sum(x, axes, where=where)
    count = _count(x, axes, where, _real_dtype(work))
    r = lax.div(total, _cast(asarray_operand(count), work))
    return _keep(_cast(r, res_dtype), axes, keepdims)


_mean_fn = mean   # var/std have a parameter called ``mean``


def _ddof(name, ddof, correction):
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
    return correction


def var(a, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Variance over ``axis`` with ``ddof`` (or NumPy 2's ``correction``) degrees of
    freedom removed; ``mean=`` may pass a precomputed mean (keepdims shape)."""
    _no_out("var", out)
    ddof = _ddof("var", ddof, correction)
    x = asarray_operand(a)
    res_dtype = _float_dtype(get_aval(x).dtype, dtype)
    work = _compute_dtype(res_dtype if is_inexact(res_dtype) else core.default_float_dtype())
    axes = _normalize_axes("var", axis, x.ndim)
    x = _strong(x, work)          # (JAX's astype: strong; a weak x's gradient is weak)
    m = _mean_fn(x, axes, keepdims=True, where=where) if mean is None else \
        _cast(asarray_operand(mean), work)
    d = lax.sub(x, m)
    if where is not None:   # zero the masked deviations first: NaNs there must not
        d = _mask("var", d, where, 0)   # reach the gradient through d * d
    sq = lax.real(lax.mul(d, lax.conj(d))) if dtype_kind(work) == "c" else lax.mul(d, d)
    real = get_aval(sq).dtype
    total = sum(sq, axes, where=where)
    count = _count(x, axes, where, real)
    dof = lax.max(lax.sub(_cast(asarray_operand(count), real), np.asarray(ddof, real)),
                  np.asarray(0, real))
    r = lax.div(total, dof)
    return _keep(_cast(r, _real_dtype(res_dtype)), axes, keepdims)


def std(a, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Standard deviation: the square root of ``var`` with the same arguments."""
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                        correction=correction))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted mean; ``weights`` has ``a``'s shape or is 1-d along a single
    ``axis``.  With ``returned=True`` also the sum of the weights."""
    x = asarray_operand(a)
    if weights is None:
        avg = mean(x, axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = _normalize_axes("average", axis, x.ndim)
        scl = _full(get_aval(avg).shape, _reduced_size(x, axes), get_aval(avg).dtype)
        return avg, scl
    w = asarray_operand(weights)
    dt = result_type(x, w)
    dt = inexact_dtype(dt, (x, w))     # integer data: a float average, as JAX
    axes = _normalize_axes("average", axis, x.ndim)
    w = _cast(_weights_like(w, x, axis, axes), dt)
    scl = sum(w, axes, keepdims=keepdims)
    if not isinstance(scl, Tracer) and (np.asarray(scl) == 0).any():
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = lax.div(sum(lax.mul(_cast(x, dt), w), axes, keepdims=keepdims), scl)
    return (avg, scl) if returned else avg


def _weights_like(w, x, axis, axes):
    """NumPy's rule: weights of ``x``'s shape, or 1-d along one axis."""
    if get_aval(w).shape == x.shape:
        return w
    if axis is None:
        raise TypeError("average: axis must be specified when the shapes of a and weights "
                        "differ")
    if w.ndim != 1 or len(axes) != 1:
        raise TypeError("average: 1D weights expected when the shapes of a and weights differ")
    if w.shape[0] != x.shape[axes[0]]:
        raise ValueError("average: length of weights not compatible with the specified axis")
    return lax.broadcast_in_dim(w, x.shape, (axes[0],))


# ----------------------------------------------------------------------------
# NaN-ignoring reductions
# ----------------------------------------------------------------------------

def _replace_nans(x, fill):
    if not _has_nan_kind(x):
        return x
    return lax.select(_isnan(x), _full(get_aval(x).shape, fill, get_aval(x).dtype), x)


def _not_nan(x):
    return lax.eq(x, x)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaNs as zero."""
    return sum(_replace_nans(asarray_operand(a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaNs as one."""
    return prod(_replace_nans(asarray_operand(a), 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(name, kind, a, axis, out, keepdims, initial, where):
    x = asarray_operand(a)
    fn = max if kind == "max" else min
    if not _has_nan_kind(x):
        return fn(x, axis, out, keepdims, initial, where)
    r = fn(_replace_nans(x, _identity_for(kind, get_aval(x).dtype)), axis, out, keepdims,
           initial, where)
    if initial is not None:
        return r
    all_nan = all(_isnan(x), axis, None, keepdims, where=where)
    return lax.select(all_nan, _full(get_aval(r).shape, np.nan, get_aval(r).dtype), r)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``max`` ignoring NaNs; an all-NaN slice gives NaN (NumPy also warns)."""
    return _nan_extreme("nanmax", "max", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``min`` ignoring NaNs; an all-NaN slice gives NaN (NumPy also warns)."""
    return _nan_extreme("nanmin", "min", a, axis, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """``mean`` of the non-NaN elements; an all-NaN slice gives NaN."""
    x = asarray_operand(a)
    if not _has_nan_kind(x):
        return mean(x, axis, dtype, out, keepdims, where=where)
    return mean(x, axis, dtype, out, keepdims, where=_combine_where(where, _not_nan(x)))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """``var`` of the non-NaN elements."""
    x = asarray_operand(a)
    if _has_nan_kind(x):
        where = _combine_where(where, _not_nan(x))
    return var(x, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
               correction=correction)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """``std`` of the non-NaN elements."""
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                           correction=correction))


def _nan_arg(name, kind, a, axis, out, keepdims):
    x = asarray_operand(a)
    fn = argmax if kind == "max" else argmin
    if not _has_nan_kind(x):
        return fn(x, axis, out, keepdims=keepdims)
    r = fn(_replace_nans(x, _identity_for(kind, get_aval(x).dtype)), axis, out,
           keepdims=keepdims)
    all_nan = all(_isnan(x), axis, None, keepdims)
    return lax.select(all_nan, _full(get_aval(r).shape, -1, get_aval(r).dtype), r)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """``argmax`` ignoring NaNs; an all-NaN slice gives -1 (as JAX; NumPy raises)."""
    return _nan_arg("nanargmax", "max", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """``argmin`` ignoring NaNs; an all-NaN slice gives -1 (as JAX; NumPy raises)."""
    return _nan_arg("nanargmin", "min", a, axis, out, keepdims)


# ----------------------------------------------------------------------------
# median, quantile, percentile
# ----------------------------------------------------------------------------

_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _sorted_reduced(x, axes):
    """``x`` with the reduced axes merged into one last axis, sorted along it."""
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    moved = lax.transpose(x, kept + axes)
    merged = lax.reshape(moved, tuple(x.shape[i] for i in kept) + (_reduced_size(x, axes),))
    return lax.sort(merged, dimension=-1)


def _round_half_even(v):
    lo = lax.floor(v)
    frac = lax.sub(v, lo)
    half = np.asarray(0.5, get_aval(v).dtype)
    lo_odd = lax.ne(lax.sub(lo, lax.mul(lax.floor(lax.mul(lo, half)), np.asarray(2.0, get_aval(v).dtype))),
                    np.asarray(0.0, get_aval(v).dtype))
    up = lax.bitwise_or(lax.gt(frac, half), lax.bitwise_and(lax.eq(frac, half), lo_odd))
    return lax.add(lo, lax.convert_element_type(up, get_aval(v).dtype))


def _quantile_positions(vi, last, method):
    """(low index, high index, weight of high) of the virtual index ``vi``."""
    f64 = np.dtype(np.float64)
    lo = lax.floor(vi)
    if method == "lower":
        hi, gamma = lo, None
    elif method == "higher":
        lo = hi = lax.ceil(vi)
        gamma = None
    elif method == "nearest":
        lo = hi = _round_half_even(vi)
        gamma = None
    else:
        hi = lax.min(lax.add(lo, np.asarray(1.0, f64)), last)
        gamma = lax.sub(vi, lo)
        if method == "midpoint":      # (low + high) / 2 of floor and ceil, as JAX's
            hi, gamma = lax.ceil(vi), None
    to_int = lambda i: lax.convert_element_type(lax.max(i, np.asarray(0.0, f64)), np.int64)
    return to_int(lo), to_int(hi), gamma


def _lerp(a, b, t):
    """NumPy's interpolation formula (exact at t = 0 and t = 1)."""
    dt = get_aval(a).dtype
    t = _cast(t, dt)
    one = np.asarray(1, dt)
    diff = lax.sub(b, a)
    return lax.select(lax.ge(t, np.asarray(0.5, dt)), lax.sub(b, lax.mul(diff, lax.sub(one, t))),
                      lax.add(a, lax.mul(diff, t)))


def _take_last(srt, idx):
    """``out[q..., r...] = srt[r..., idx[q..., r...]]``: gather along the last axis
    (``idx`` has the output's shape ``q_shape + rest``)."""
    rest, n = get_aval(srt).shape[:-1], get_aval(srt).shape[-1]
    full_shape = get_aval(idx).shape
    q_shape = full_shape[:len(full_shape) - len(rest)]
    src = lax.broadcast_in_dim(srt, full_shape + (n,),
                               tuple(range(len(q_shape), len(full_shape) + 1)))
    ind = lax.reshape(idx, full_shape + (1,))
    return lax.reshape(lax.take_along_axis(src, ind, -1), full_shape)


def _check_q(name, q, scale):
    if not isinstance(q, Tracer):
        qv = np.asarray(q)
        if not np.isnan(qv).any() and not ((qv >= 0) & (qv <= scale)).all():
            raise ValueError(f"{name}: quantiles must be in the range [0, {scale}], got {q!r}"
                             if scale != 1 else "Quantiles must be in the range [0, 1]")


def _quantile(name, a, q, axis, method, keepdims, ignore_nan):
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{name}: method {method!r} is not supported; use one of "
                         f"{', '.join(_QUANTILE_METHODS)}")
    x = asarray_operand(a)
    # JAX's dtype, for every method: x's inexact counterpart (q does not promote)
    res_dtype = inexact_dtype(get_aval(x).dtype)
    q = asarray_operand(q)
    axes = _normalize_axes(name, axis, x.ndim)
    rest = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    q_shape = get_aval(q).shape
    out_shape = q_shape + rest
    n = _reduced_size(x, axes)
    if n == 0:
        r = _full(out_shape, np.nan, res_dtype if is_inexact(res_dtype) else np.float64)
        return _keep_quantile(r, q_shape, axes, x.ndim, keepdims)
    srt = _sorted_reduced(x, axes)
    f64 = np.dtype(np.float64)
    if ignore_nan and _has_nan_kind(x):
        count = lax.reduce_sum(_cast(_not_nan(srt), f64), (len(rest),))
    else:
        count = _full(rest, n, f64)
    last = _broadcast(lax.sub(count, np.asarray(1.0, f64)), out_shape)
    vi = lax.mul(_broadcast(lax.reshape(_cast(q, f64), q_shape + (1,) * len(rest)), out_shape), last)
    lo, hi, gamma = _quantile_positions(vi, last, method)
    r = _take_last(srt, lo)
    if method == "midpoint":      # JAX's (low + high) / 2: right for infinities (an odd
        # count reads one element twice), where a lerp's (high - low) * 0 would be NaN
        r = lax.mul(lax.add(_cast(r, res_dtype), _cast(_take_last(srt, hi), res_dtype)),
                    np.asarray(0.5, res_dtype))
    elif gamma is not None:
        r = _lerp(_cast(r, res_dtype), _cast(_take_last(srt, hi), res_dtype), gamma)
    r = _cast(r, res_dtype)
    if _has_nan_kind(x):
        bad = lax.lt(last, np.asarray(0.0, f64)) if ignore_nan else \
            _broadcast(_last_is_nan(srt, rest, n), out_shape)
        r = lax.select(bad, _full(out_shape, np.nan, res_dtype), r)
    return _keep_quantile(r, q_shape, axes, x.ndim, keepdims)


def _last_is_nan(srt, rest, n):
    last = lax.slice(srt, (0,) * len(rest) + (n - 1,), rest + (n,))
    return _isnan(lax.reshape(last, rest))


def _keep_quantile(r, q_shape, axes, ndim, keepdims):
    if not keepdims:
        return r
    return lax.expand_dims(r, tuple(len(q_shape) + a for a in axes))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th quantiles (0 <= q <= 1) over ``axis``; the result has the shape
    ``q.shape + reduced shape``.  Methods: linear, lower, higher, nearest, midpoint;
    ``q`` may be traced (its derivative is the slope between neighbours)."""
    return _quantile_api("quantile", a, q, axis, out, method, keepdims, weights,
                         interpolation, ignore_nan=False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """``quantile`` of the non-NaN elements; an all-NaN slice gives NaN."""
    return _quantile_api("nanquantile", a, q, axis, out, method, keepdims, weights,
                         interpolation, ignore_nan=True)


def _quantile_api(name, a, q, axis, out, method, keepdims, weights, interpolation, ignore_nan):
    """The argument checks quantile and nanquantile share."""
    _no_out(name, out)
    if weights is not None:
        raise NotImplementedError(f"{name}: weights= is not supported")
    method = interpolation if interpolation is not None else method
    _check_q(name, q, 1)
    return _quantile(name, a, q, axis, method, keepdims, ignore_nan=ignore_nan)


def _percent(q):
    """q / 100, keeping a Python scalar weak and a traced q traced."""
    if isinstance(q, (int, float)):
        return q / 100
    q = asarray_operand(q)
    if not is_inexact(get_aval(q).dtype):
        q = _cast(q, np.dtype(np.float64))
    return lax.div(q, np.asarray(100, get_aval(q).dtype))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """``quantile`` with ``q`` in percent (0 <= q <= 100)."""
    _check_q("percentile", q, 100)
    return quantile(a, _percent(q), axis, out, overwrite_input, method, keepdims,
                    weights=weights, interpolation=interpolation)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """``nanquantile`` with ``q`` in percent."""
    _check_q("nanpercentile", q, 100)
    return nanquantile(a, _percent(q), axis, out, overwrite_input, method, keepdims,
                       weights=weights, interpolation=interpolation)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median over ``axis`` (the mean of the two middle values for even counts);
    NaN if the slice contains a NaN; float64 for integer input."""
    _no_out("median", out)
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, ignore_nan=False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median of the non-NaN elements; an all-NaN slice gives NaN."""
    _no_out("nanmedian", out)
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, ignore_nan=True)


# ----------------------------------------------------------------------------
# Cumulative sums and products, differences
# ----------------------------------------------------------------------------

def _cumulative(name, lax_fn, a, axis, dtype, out, fill_nan=None):
    _no_out(name, out)
    x = asarray_operand(a)
    if fill_nan is not None:
        x = _replace_nans(x, fill_nan)
    x = _strong(x, _cumulative_dtype(get_aval(x).dtype, dtype))    # (see _strong)
    if axis is None or x.ndim == 0:   # NumPy treats a 0-d array as 1-d here
        x, ax = lax.reshape(x, (x.size,)), 0
    else:
        ax = _normalize_axes(name, operator.index(axis), x.ndim)[0]
    return convert_weak_type(lax_fn(x, ax), get_aval(x).dtype, False)   # (see _keep)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened if None)."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened if None); exact gradients with zeros."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``cumsum`` treating NaNs as zero."""
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``cumprod`` treating NaNs as one."""
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=1)


def _cumulative_v2(name, lax_fn, identity, x, axis, dtype, out, include_initial):
    """NumPy 2's cumulative_sum/prod: axis needed beyond 1-d, optional initial value."""
    x = asarray_operand(x)
    if x.ndim == 0:   # as NumPy: a 0-d array acts as 1-d
        x = lax.reshape(x, (1,))
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis must be specified for multi-dimensional arrays")
        axis = 0
    dtype = _accumulator_dtype(get_aval(x).dtype, dtype)   # (widens, unlike cumsum: JAX's)
    r = _cumulative(name, lax_fn, x, axis, dtype, out)
    if not include_initial:
        return r
    ax = _normalize_axes(name, axis, x.ndim)[0]
    config = tuple((1, 0, 0) if i == ax else (0, 0, 0) for i in range(x.ndim))
    return lax.pad(r, np.asarray(identity, get_aval(r).dtype), config)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """NumPy 2's ``cumulative_sum`` (``include_initial`` prepends a zero)."""
    return _cumulative_v2("cumulative_sum", lax.cumsum, 0, x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """NumPy 2's ``cumulative_prod`` (``include_initial`` prepends a one)."""
    return _cumulative_v2("cumulative_prod", lax.cumprod, 1, x, axis, dtype, out,
                          include_initial)


def _edge(value, x, ax):
    """``prepend``/``append`` of diff: a scalar becomes a slab of size 1 along ``ax``."""
    v = asarray_operand(value)
    if get_aval(v).ndim == 0:
        shape = tuple(1 if i == ax else n for i, n in enumerate(x.shape))
        v = _broadcast(v, shape)
    return v


def diff(a, /, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (booleans: not_equal)."""
    x = asarray_operand(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if n == 0:
        return x
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = _normalize_axes("diff", axis, x.ndim)[0]
    parts = ([_edge(prepend, x, ax)] if prepend is not None else []) + [x] + \
        ([_edge(append, x, ax)] if append is not None else [])
    if len(parts) > 1:
        dt = result_type(*parts)
        x = lax.concatenate([_cast(p, dt) for p in parts], ax)
    for _ in range(n):
        size = x.shape[ax]
        if size == 0:
            break
        hi = _slice_axis(x, ax, 1, size)
        lo = _slice_axis(x, ax, 0, size - 1)
        x = lax.ne(hi, lo) if get_aval(x).dtype == np.bool_ else lax.sub(hi, lo)
    return x


def _slice_axis(x, ax, start, stop):
    shape = get_aval(x).shape
    return lax.slice(x, tuple(start if i == ax else 0 for i in range(len(shape))),
                     tuple(stop if i == ax else n for i, n in enumerate(shape)))


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values before and after."""
    x = asarray_operand(ary)
    x = lax.reshape(x, (x.size,))
    dtype = get_aval(x).dtype
    d = diff(x) if x.size else x
    parts = [d]
    if to_begin is not None:
        parts.insert(0, _flat_as(to_begin, dtype))
    if to_end is not None:
        parts.append(_flat_as(to_end, dtype))
    return lax.concatenate(parts, 0) if len(parts) > 1 else d


def _flat_as(v, dtype):
    v = asarray_operand(v)
    if not np.can_cast(get_aval(v).dtype, dtype, casting="same_kind"):
        raise TypeError(f"ediff1d: dtype of to_begin/to_end ({get_aval(v).dtype.name}) must "
                        f"be compatible with the array's dtype ({dtype.name}) under the "
                        "'same_kind' rule")
    v = _cast(v, dtype)
    return lax.reshape(v, (get_aval(v).size,))
