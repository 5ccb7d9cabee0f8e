"""Array creation with NumPy's names, dtypes and semantics, built on lax.

Two regimes, decided per call:

* **concrete** (no transformation is running, or nothing traced is involved
  in a function of static arguments such as ``arange``/``eye``): NumPy builds
  the array and it is returned as a read-only ``fungrad.Array``, contiguous,
  with exactly NumPy's values and dtype;
* **traced** (inside ``make_jaxpr``/``jit``/``grad``/``vmap`` the filled
  creators ``zeros``/``ones``/``full``/``*_like`` use ``lax.full``, one
  ``broadcast_in_dim`` of a scalar literal, so staged code stays small instead
  of embedding a large constant; functions of traced values (``full`` with a
  traced fill value, ``linspace``/``logspace``/``geomspace`` of traced
  endpoints, ``diag``, ``array`` of a list of tracers) return tracers and are
  differentiable in those values.

Functions of static integers only (``arange``, ``eye``, ``identity``, ``tri``)
always return concrete arrays; under a trace they become constants of the
jaxpr, which is what ``jnp`` does too in effect.  Their traced arguments raise
the usual concretization error.

Python scalars get NumPy's default dtypes (float64, int64, bool, complex128).
With ``jax_enable_x64`` off, creation functions without a ``dtype`` give 32-bit
dtypes instead (float32, int32, complex64), and ``array``/``asarray`` convert
Python data and 64-bit NumPy input to them, as JAX's; an explicit ``dtype``
(float64 included) is respected.
"""
from __future__ import annotations

import numpy as np
from fungrad._dtype_classes import iinfo as dtype_iinfo, is_integer, kind as dtype_kind

from fungrad import core, lax
from fungrad.core import ShapedArray, Tracer, get_aval
from fungrad.lax.elementwise import convert_weak_type as lax_convert_weak_type
from fungrad.numpy._dtypes import (asarray_operand, dtype_of, inexact_dtype, result_type,
                                    user_dtype)
from fungrad.numpy._padding import diagonal
from fungrad.numpy._shape import (_astype, _axis, _concrete, _out, _shape_tuple,
                                  _slice_axis, _static_int, broadcast_arrays,
                                  broadcast_to, concatenate, moveaxis, ravel, reshape)

__all__ = [
    "array", "asarray", "copy", "astype",
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "arange", "linspace", "logspace", "geomspace", "eye",
    "identity", "tri", "diag", "diagflat", "meshgrid", "fromfunction",
]

_NUMERIC_KINDS = "biufc"


def _eager() -> bool:
    """No transformation is running: build concrete NumPy arrays directly."""
    return type(core.current_trace()) is core.EvalTrace


def _dtype(dtype, default=None):
    """``np.dtype`` of a user dtype; ``None`` gives ``default`` (``np.dtype(None)``
    would be float64), which is 32-bit when jax_enable_x64 is off."""
    if dtype is not None:
        return user_dtype(dtype)
    return None if default is None else core.canonicalize_dtype(default)


def _canonical(arr: np.ndarray) -> np.ndarray:
    """``arr`` in fungrad's dtype for it (jax_enable_x64 off: 64-bit -> 32-bit)."""
    dtype = core.canonicalize_dtype(arr.dtype)
    if dtype == arr.dtype:
        return arr
    if is_integer(dtype) and arr.size:
        info = dtype_iinfo(dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise OverflowError(f"integers up to {arr.max()} do not fit in {dtype.name} "
                                "(jax_enable_x64 is off; turn it on, or pass dtype=np.int64)")
    return arr.astype(dtype)


def _check_numeric(arr: np.ndarray, who: str) -> np.ndarray:
    if dtype_kind(arr.dtype) not in _NUMERIC_KINDS:
        raise TypeError(f"{who}: fungrad arrays hold booleans and numbers, but this "
                        f"input gives dtype {arr.dtype} (strings, objects and dates are "
                        "not supported); convert it to numbers first.")
    return arr


# ----------------------------------------------------------------------------
# array, asarray, copy, astype
# ----------------------------------------------------------------------------

def _holds_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    return isinstance(obj, (list, tuple)) and any(_holds_tracer(o) for o in obj)


def _stack_nested(obj):
    """A nested list holding tracers -> one traced array (stacked with concatenate).

    Dtypes combine as NumPy's array coercion does: Python scalars count with
    their default dtype (``[f32_tracer, 1.0]`` gives float64, as in NumPy).
    """
    if isinstance(obj, Tracer):
        return obj
    if not _holds_tracer(obj):
        return _canonical(_check_numeric(np.asarray(obj), "array"))
    parts = [_stack_nested(o) for o in obj]
    shapes = {p.shape for p in parts}
    if len(shapes) != 1:
        raise ValueError("array: setting an array element with a sequence; the nested "
                         "sequence has an inhomogeneous shape (its elements have shapes "
                         f"{', '.join(str(p.shape) for p in parts)})")
    dt = np.result_type(*[p.dtype for p in parts])
    rows = [lax.reshape(_astype(p, dt), (1,) + p.shape) for p in parts]
    return rows[0] if len(rows) == 1 else lax.concatenate(rows, 0)


def _traced_array(obj, dtype, ndmin: int):
    x = _stack_nested(obj)
    if dtype is not None:     # (a dtype given: strongly typed, as JAX's)
        x = lax.convert_element_type(x, np.dtype(dtype))
    if x.ndim < ndmin:
        x = lax.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def array(object, dtype=None, *, copy=True, order="K", ndmin=0, subok=False, like=None):
    """A new read-only array (``copy=True``: always a copy, as NumPy).

    Tracers are returned as they are (values are immutable, so a copy is
    meaningless); lists holding tracers are stacked into one traced array.
    """
    ndmin = _static_int(ndmin, "array's ndmin")
    if _holds_tracer(object):
        return _traced_array(object, dtype, ndmin)
    weak = dtype is None and _weakly_typed(object)     # (JAX: a Python number's is weak)
    if isinstance(object, np.ndarray) and type(object) is not np.ndarray:
        object = object.view(np.ndarray)   # fungrad.Array: copy as a plain ndarray
    dtype = None if dtype is None else user_dtype(dtype)
    arr = _check_numeric(np.array(object, dtype=dtype, copy=copy, order=order, ndmin=ndmin),
                         "array")
    return _with_weak_type(core.wrap_array(arr if dtype is not None else _canonical(arr)), weak)


def _weakly_typed(x) -> bool:
    """JAX's ``dtypes.is_weakly_typed``: Python numbers (not bools) and weakly
    typed arrays, tracers and abstract values."""
    return type(x) in (int, float, complex) or getattr(x, "weak_type", False) is True


def _with_weak_type(x, weak: bool):
    """``x`` weakly typed if ``weak`` (a tracer through a weak conversion)."""
    if not weak:
        return x
    if isinstance(x, Tracer):
        return lax_convert_weak_type(x, x.dtype, True)
    return core.with_weak_type(core.wrap_array(x), True)


def asarray(a, /, dtype=None, order=None, *, copy=None, device=None, like=None):
    """Convert to a read-only fungrad Array (tracers are returned unchanged).

    ``copy=None`` returns fungrad Arrays as they are and takes a snapshot of
    any other input (a writable NumPy array could otherwise change under a
    result that is meant to be immutable); ``copy=False`` never copies and
    returns a read-only view (NumPy's error if a conversion is needed).
    """
    if _holds_tracer(a):
        return _traced_array(a, dtype, 0)
    if type(a) is core.Array and copy is not True and (
            dtype is None or np.dtype(dtype) == a.dtype) and core._x64:
        return a
    if copy is False:
        dtype = None if dtype is None else user_dtype(dtype)
        arr = np.asarray(a.view(np.ndarray) if isinstance(a, np.ndarray) else a,
                         dtype=dtype, order=order, copy=False)
        arr = _check_numeric(arr, "asarray")
        return core.wrap_array(arr if dtype is not None else _canonical(arr))
    return array(a, dtype=dtype, copy=True, order=order or "K")


def copy(a, order="K", subok=False):
    """A copy of ``a`` (a tracer is returned as it is: tracers are immutable)."""
    return array(a, copy=True, order=order)


def astype(x, dtype, /, *, copy=False, device=None):
    """``x`` converted to ``dtype`` with NumPy's casting (the function form of
    ``x.astype``, as in NumPy 2 / jnp); differentiable between float dtypes."""
    operand = asarray_operand(x)
    dtype = user_dtype(dtype)
    if dtype_of(operand) == dtype and not isinstance(operand, Tracer):
        # (the result is strongly typed, as JAX's: a weak operand's type changes)
        return array(operand, dtype, copy=True) if copy else _out(
            core.with_weak_type(core.wrap_array(operand), False))
    return _out(lax.convert_element_type(operand, dtype))


# ----------------------------------------------------------------------------
# Filled arrays: zeros, ones, full, empty and their *_like forms
# ----------------------------------------------------------------------------

def _filled(shape, value, dtype):
    """A ``shape`` array of the scalar ``value``: NumPy eagerly, lax.full if traced."""
    shape = _shape_tuple(shape)
    if _eager():
        return core.wrap_array(np.full(shape, value, dtype))
    return lax.full(shape, value, dtype)


def zeros(shape, dtype=None, order="C", *, device=None, like=None):
    return _filled(shape, 0, _dtype(dtype, np.float64))


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return _filled(shape, 1, _dtype(dtype, np.float64))


def empty(shape, dtype=None, order="C", *, device=None, like=None):
    """Like NumPy's empty but deterministic: the values are zeros."""
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """``shape`` filled with ``fill_value`` (broadcast; cast with NumPy's unsafe
    casting, e.g. 2.7 -> 2 for an int dtype). A traced fill value gives a
    traced, differentiable result."""
    shape = _shape_tuple(shape)
    if not isinstance(fill_value, Tracer) and _eager():
        fill = np.asarray(fill_value.view(np.ndarray) if isinstance(fill_value, np.ndarray)
                          else fill_value)
        _check_numeric(fill, "full")
        return _with_weak_type(core.wrap_array(np.full(shape, fill, _dtype(dtype, fill.dtype))),
                               dtype is None and _weakly_typed(fill_value))
    fill = asarray_operand(fill_value)
    weak = dtype is None and _weakly_typed(fill_value)
    return broadcast_to(lax_convert_weak_type(fill, _dtype(dtype, fill.dtype), weak), shape)


def _duck_typed_aval(a):
    """The ShapedArray of a duck-typed array (shape and dtype, no data), else None."""
    if isinstance(a, (np.ndarray, np.generic, Tracer)) or not (
            hasattr(a, "shape") and hasattr(a, "dtype")):
        return None
    try:
        return ShapedArray(a.shape, a.dtype)
    except TypeError:
        return None


def _like(a, dtype, shape):
    """(shape, dtype) of the *_like functions; ``a`` is only looked at, never used.
    As in JAX, ``a`` may also be any object with ``shape`` and ``dtype`` (a
    ``ShapeDtypeStruct`` from ``eval_shape``, an abstract value)."""
    aval = _duck_typed_aval(a) or get_aval(a)
    shape = aval.shape if shape is None else shape
    return shape, _dtype(dtype, aval.dtype)


def zeros_like(a, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    weak = dtype is None and _weakly_typed(a)       # (JAX: like a's weak type)
    shape, dtype = _like(a, dtype, shape)
    return _with_weak_type(_filled(shape, 0, dtype), weak)


def ones_like(a, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    weak = dtype is None and _weakly_typed(a)
    shape, dtype = _like(a, dtype, shape)
    return _with_weak_type(_filled(shape, 1, dtype), weak)


def empty_like(prototype, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Like NumPy's empty_like but deterministic: the values are zeros."""
    return zeros_like(prototype, dtype, shape=shape)


def full_like(a, /, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    weak = dtype is None and _weakly_typed(a)
    shape, dtype = _like(a, dtype, shape)
    return _with_weak_type(full(shape, fill_value, dtype), weak)


# ----------------------------------------------------------------------------
# Ranges: arange, linspace, logspace, geomspace
# ----------------------------------------------------------------------------

def arange(start, /, stop=None, step=None, dtype=None, *, device=None, like=None):
    """``np.arange`` with NumPy's dtype rules (ints -> int64, any float ->
    float64). The length depends on the arguments, so they must be concrete
    (traced ones under jit/vmap raise the concretization error)."""
    start, stop, step = (
        _concrete(v, f"fungrad.numpy.arange's {name} (the length of the result depends "
                     "on it; pass a Python number, or use linspace for traced endpoints)")
        for name, v in (("start", start), ("stop", stop), ("step", step)))
    if dtype is not None:
        return core.wrap_array(np.arange(start, stop, step, dtype=user_dtype(dtype)))
    return core.wrap_array(_canonical(np.arange(start, stop, step)))


def _linspace_dtype(start, stop) -> np.dtype:
    """JAX's linspace dtype: promote (Python scalars weak), then ensure inexact."""
    return inexact_dtype(result_type(start, stop), (start, stop))


def _linspace_body(start, stop, num: int, endpoint: bool, dt):
    """Samples along a new leading axis, with NumPy's arithmetic:
    ``i * step + start`` and the last sample set to ``stop`` exactly."""
    start, stop = (_astype(asarray_operand(v), dt) for v in (start, stop))
    delta = lax.sub(stop, start)
    div = num - 1 if endpoint else num
    ramp = np.arange(num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = lax.div(delta, np.asarray(div, dt))
        if not isinstance(step, Tracer) and np.any(np.asarray(step) == 0):
            y = lax.mul(ramp / np.asarray(div, dt), delta)   # denormal steps, as NumPy
        else:
            y = lax.mul(ramp, step)
    else:
        step = np.asarray(np.nan, dt)   # 0 or 1 samples: undefined step
        y = lax.mul(ramp, delta)
    y = lax.add(y, start)
    if endpoint and num > 1:
        last = lax.reshape(broadcast_to(stop, delta.shape), (1,) + delta.shape)
        y = lax.concatenate([_slice_axis(y, 0, num - 1, 0), last], 0)
    return y, step


def linspace(start, stop, /, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             *, device=None):
    """``num`` evenly spaced samples; ``start``/``stop`` may be arrays or traced
    (the result is then differentiable in them)."""
    num = _static_int(num, "linspace's num")
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    dt = _linspace_dtype(start, stop)
    y, step = _linspace_body(start, stop, num, bool(endpoint), dt)
    axis = _axis("linspace", axis, y.ndim)
    if axis:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        dtype = user_dtype(dtype)
        if is_integer(dtype):
            y = lax.floor(y)   # NumPy rounds down, not towards zero
        y = _astype(y, dtype)
    return (_out(y), _out(step)) if retstep else _out(y)


def _power(base, exponent):
    import fungrad.numpy as fnp   # late: power is an elementwise ufunc
    return fnp.power(base, exponent)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)`` (differentiable in start, stop, base)."""
    if not isinstance(base, (float, int)) and np.ndim(base):
        base = asarray_operand(base)
        start, stop = asarray_operand(start), asarray_operand(stop)
        rank = max(np.ndim(start), np.ndim(stop), base.ndim)
        start, stop, base = (lax.reshape(v, (1,) * (rank - v.ndim) + v.shape)
                             for v in (start, stop, base))
        y = linspace(start, stop, num, endpoint, axis=axis)
        base = lax.reshape(base, base.shape[:axis % y.ndim] + (1,) + base.shape[axis % y.ndim:])
    else:
        y = linspace(start, stop, num, endpoint, axis=axis)
    out = _power(base, y)
    return _out(out if dtype is None else _astype(out, np.dtype(dtype)))


def _concrete_has_zero(*values) -> bool:
    return any(not isinstance(v, Tracer) and np.any(np.asarray(v) == 0) for v in values)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Geometric progression (real inputs; negative ones allowed, as in NumPy);
    the endpoints are exactly ``start`` and ``stop``."""
    import fungrad.numpy as fnp   # late: sign and log10 are elementwise ufuncs
    start, stop = asarray_operand(start), asarray_operand(stop)
    if _concrete_has_zero(start, stop):
        raise ValueError("geomspace: geometric sequence cannot include zero")
    num = _static_int(num, "geomspace's num")
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    start, stop = _astype(start, dt), _astype(stop, dt)
    if dtype_kind(dt) == "c":
        raise NotImplementedError("geomspace: complex endpoints are not supported")
    sign = fnp.sign(start)
    start, stop = lax.div(start, sign), lax.div(stop, sign)
    y = logspace(fnp.log10(start), fnp.log10(stop), num, endpoint, base=10.0, dtype=dt)
    shape = y.shape[1:]
    ends = [lax.reshape(broadcast_to(v, shape), (1,) + shape) for v in (start, stop)]
    if num > 1 and endpoint:
        y = concatenate([ends[0], _slice_axis(y, 1, num - 1, 0), ends[1]], axis=0)
    elif num > 0:
        y = concatenate([ends[0], _slice_axis(y, 1, num, 0)], axis=0)
    y = lax.mul(y, sign)
    y = moveaxis(y, 0, axis) if axis != 0 else y
    return _out(_astype(y, _dtype(dtype, dt)))


# ----------------------------------------------------------------------------
# Matrices: eye, identity, tri, diag, diagflat
# ----------------------------------------------------------------------------

def eye(N, /, M=None, k=0, dtype=None, order="C", *, device=None, like=None):
    N = _static_int(N, "eye's N")
    M = None if M is None else _static_int(M, "eye's M")
    k = _static_int(k, "eye's k")
    return core.wrap_array(np.eye(N, M, k, dtype=_dtype(dtype, np.float64)))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None, *, like=None):
    N = _static_int(N, "tri's N")
    M = None if M is None else _static_int(M, "tri's M")
    k = _static_int(k, "tri's k")
    return core.wrap_array(np.tri(N, M, k, dtype=_dtype(dtype, np.float64)))


def _diag_matrix(v, k: int):
    """The square matrix with ``v`` on its ``k``-th diagonal.

    One ``pad`` with interior padding lays the elements ``m + 1`` apart in
    the flattened ``m x m`` result (m = n + |k|); a reshape folds it.
    Example (n=2, k=0): [a, b] -> [a, 0, 0, b] -> [[a, 0], [0, b]].
    """
    n = v.shape[0]
    m = n + abs(k)
    if n == 0:
        return _filled((m, m), 0, v.dtype)
    low = k if k >= 0 else -k * m
    high = m * m - (n + (n - 1) * m) - low
    flat = lax.pad(v, np.zeros((), v.dtype), ((low, high, m),))
    return lax.reshape(flat, (m, m))


def diag(v, k=0):
    """1-d input: a matrix with ``v`` on diagonal ``k``; 2-d: that diagonal."""
    x = asarray_operand(v)
    k = _static_int(k, "diag's k")
    if x.ndim == 1:
        return _out(_diag_matrix(x, k))
    if x.ndim == 2:
        return diagonal(x, k)
    raise ValueError(f"diag: input must be 1-d or 2-d, got shape {x.shape}")


def diagflat(v, k=0):
    return diag(ravel(v), k)


# ----------------------------------------------------------------------------
# Grids
# ----------------------------------------------------------------------------

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays (a list, as JAX and the array API; NumPy 2 gives a tuple).
    Results are read-only."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: valid values for `indexing` are 'xy' and 'ij', "
                         f"got {indexing!r}")
    n = len(xi)
    ones_shape = (1,) * n
    out = [reshape(x, ones_shape[:i] + (-1,) + ones_shape[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and n > 1:   # Cartesian: the first two axes swap roles
        out[0] = reshape(out[0], (1, -1) + ones_shape[2:])
        out[1] = reshape(out[1], (-1, 1) + ones_shape[2:])
    return out if sparse else broadcast_arrays(*out)


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """``function(*coordinate_arrays)`` over an index grid of ``shape``."""
    grids = np.indices(_shape_tuple(shape), dtype=dtype)
    return function(*[core.wrap_array(g) for g in grids], **kwargs)
