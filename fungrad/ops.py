"""``jax.ops``: segment reductions.

``segment_sum(data, segment_ids, num_segments)`` reduces the rows of
``data`` that share a segment id into one row of the output, which has shape
``(num_segments,) + data.shape[1:]``.  Each is one scatter into an array
filled with the reduction's identity (0, 1, +inf/-inf or the integer
extremes, as JAX), so every transform goes through the scatter primitives'
rules: ``grad`` of ``segment_sum`` is a gather, of ``segment_max`` a
selection of the winning rows, and ``vmap`` batches the scatter.

As in JAX, ids outside ``[0, num_segments)`` (negative ones included) are
dropped under the default mode, ``num_segments`` must be static under
``jit``/``vmap`` (it sets the output's shape), and ``bucket_size`` reduces in
buckets of that many consecutive rows first, then across buckets.
"""
from __future__ import annotations

import operator

import numpy as np

from fungrad import lax
from fungrad.core import ConcretizationTypeError, Tracer, get_aval
from fungrad.lax.xla_scatter import GatherScatterMode

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(kind: str, dtype: np.dtype):
    """The value an empty segment gets: the identity of the reduction."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtype == np.bool_:
        return kind == "min"
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return info.max if kind == "min" else info.min
    return np.inf if kind == "min" else -np.inf


def _static_num_segments(who: str, num_segments, segment_ids):
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            raise ConcretizationTypeError(
                f"{who}: num_segments is needed when segment_ids is traced (under jit, "
                "vmap or grad): it sets the output's shape. Pass num_segments=N.")
        ids = np.asarray(segment_ids)
        return int(ids.max()) + 1 if ids.size else 0
    if isinstance(num_segments, Tracer):
        raise ConcretizationTypeError(
            f"{who}: num_segments must be a static int (it sets the output's shape), "
            "got a traced value; pass a Python int or mark it static in jit")
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError(f"{who}: num_segments must be non-negative, got {num_segments}")
    return num_segments


def _checked_operands(who: str, data, segment_ids):
    import fungrad.numpy as fnp
    data, segment_ids = fnp.asarray(data), fnp.asarray(segment_ids)
    d_aval, s_aval = get_aval(data), get_aval(segment_ids)
    if not np.issubdtype(s_aval.dtype, np.integer):
        raise TypeError(f"{who}: segment_ids must be integers, got {s_aval.dtype.name}")
    if s_aval.ndim != 1 or d_aval.ndim < 1 or d_aval.shape[0] != s_aval.shape[0]:
        raise ValueError(f"{who}: segment_ids must be one-dimensional with one id per row "
                         f"of data; got data of shape {d_aval.shape} and segment_ids of "
                         f"shape {s_aval.shape}")
    return data, segment_ids


def _unwrapped_negatives(segment_ids, num_segments, mode):
    """JAX does not wrap negative ids (``normalize_indices=False``): under
    FILL_OR_DROP they are out of bounds and under CLIP they clamp to 0.
    NumPy-style indices would wrap them, so send them past the end (where the
    scatter drops them) or to 0."""
    if mode is GatherScatterMode.PROMISE_IN_BOUNDS:
        return segment_ids
    to = num_segments if mode is GatherScatterMode.FILL_OR_DROP else 0
    return lax.select(lax.lt(segment_ids, lax.full_like(segment_ids, 0)),
                      lax.full_like(segment_ids, to), segment_ids)


_UPDATES = {"sum": "add", "prod": "multiply", "max": "max", "min": "min"}
_REDUCERS = {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}


def _segment_reduce(kind, data, segment_ids, num_segments, bucket_size, mode,
                    indices_are_sorted, unique_indices):
    import fungrad.numpy as fnp
    who = f"segment_{kind}"
    data, segment_ids = _checked_operands(who, data, segment_ids)
    num_segments = _static_num_segments(who, num_segments, segment_ids)
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else GatherScatterMode.from_any(mode)
    segment_ids = _unwrapped_negatives(segment_ids, num_segments, mode)
    dtype = get_aval(data).dtype
    rows = get_aval(data).shape[1:]
    flags = dict(mode=mode, indices_are_sorted=indices_are_sorted,
                 unique_indices=unique_indices)
    if bucket_size is None:
        out = fnp.full((num_segments,) + rows, _identity(kind, dtype), dtype=dtype)
        return getattr(out.at[segment_ids], _UPDATES[kind])(data, **flags)
    bucket_size = operator.index(bucket_size)
    if bucket_size < 1:
        raise ValueError(f"{who}: bucket_size must be a positive int, got {bucket_size}")
    n = get_aval(segment_ids).shape[0]
    buckets = -(-n // bucket_size)
    out = fnp.full((buckets, num_segments) + rows, _identity(kind, dtype), dtype=dtype)
    index = (np.arange(n) // bucket_size, segment_ids)
    out = getattr(out.at[index], _UPDATES[kind])(data, **flags)
    return getattr(fnp, _REDUCERS[kind])(out, axis=0).astype(dtype)


def _segment_function(kind: str):
    def segment(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
        return _segment_reduce(kind, data, segment_ids, num_segments, bucket_size, mode,
                               indices_are_sorted, unique_indices)
    empty = {"sum": "0", "prod": "1", "max": "-inf (the smallest integer)",
             "min": "+inf (the largest integer)"}[kind]
    segment.__name__ = segment.__qualname__ = f"segment_{kind}"
    segment.__doc__ = (
        f"``jax.ops.segment_{kind}``: the {kind} of the rows of ``data`` in each "
        f"segment; shape ``(num_segments,) + data.shape[1:]``. An empty segment is "
        f"{empty}. Ids outside ``[0, num_segments)`` are dropped (``mode`` "
        "FILL_OR_DROP, the default) or clamped (``mode='clip'``). ``num_segments`` "
        "defaults to ``max(segment_ids) + 1`` for concrete ids.")
    segment.__module__ = __name__
    return segment


segment_sum = _segment_function("sum")
segment_prod = _segment_function("prod")
segment_max = _segment_function("max")
segment_min = _segment_function("min")
