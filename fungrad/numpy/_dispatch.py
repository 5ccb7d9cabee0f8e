"""NumPy's own functions on fungrad tracers: NEP 13 (``__array_ufunc__``) and
NEP 18 (``__array_function__``).

Code written with ``import numpy as np`` only is differentiated, vmapped and
jitted: when a NumPy function meets a tracer, NumPy hands the call to the
tracer, and the tracer calls the ``fungrad.numpy`` function of the same name
(``np.sin`` -> ``fnp.sin``, ``np.linalg.solve`` -> ``fnp.linalg.solve``,
``np.add.reduce`` -> ``fnp.sum``...).  ``dispatched_functions()`` lists them;
``docs/numpy_dispatch.md`` is generated from it.

A NumPy ufunc keeps NumPy's dtype promotion on tracers (its inputs are
converted to the dtypes of NumPy's own loop first, so ``np.add(f32, i64)`` is
float64 as NumPy's, where ``fnp.add`` is JAX's float32).

Concrete fungrad ``Array``s do not take part (they keep NumPy's own
ndarray behaviour); in a mixed call such as ``np.add(array, tracer)`` NumPy
gives the call to the only override there is, the tracer's.  What cannot be
done raises TypeError naming the fungrad spelling: a NumPy function without a
fungrad counterpart, ``out=`` (fungrad arrays are immutable) and
``ufunc.at`` (in place; fungrad's is ``x.at[idx].add(v)``).
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
import fungrad.numpy as fnp
from fungrad import core
from fungrad.core import Tracer
from fungrad.numpy._dtypes import dtype_of, x32_default
from fungrad.tree_util import tree_flatten, tree_unflatten
from fungrad.numpy._ufunc_api import reduceat_by_slices
from fungrad.numpy._ufunc_dtypes import _numpy_loop_dtypes

# the NumPy namespaces whose functions dispatch, with their fungrad counterparts
_NAMESPACES = (("numpy", np, fnp), ("numpy.linalg", np.linalg, fnp.linalg),
               ("numpy.fft", np.fft, fnp.fft))

_UFUNCS: dict = {}       # np.ufunc -> fungrad.numpy function
_FUNCTIONS: dict = {}    # NumPy's __array_function__ dispatcher -> fungrad function
_NAMES: dict = {}        # either of them -> its public name ("numpy.linalg.solve")


def _build_tables():
    for modname, npmod, fmod in _NAMESPACES:
        for name in dir(npmod):
            obj = getattr(npmod, name)
            target = getattr(fmod, name, None) if not name.startswith("_") else None
            if isinstance(obj, np.ufunc):
                _NAMES.setdefault(obj, f"numpy.{obj.__name__}")
                target = getattr(fmod, obj.__name__, target)
                if callable(target):
                    _UFUNCS[obj] = target
            elif hasattr(obj, "_implementation"):   # an __array_function__ dispatcher
                _NAMES.setdefault(obj, f"{modname}.{name}")
                if callable(target) and not isinstance(target, type):
                    _FUNCTIONS[obj] = target
    _FUNCTIONS.update(_numpy_semantics())
    for f in _IN_PLACE:
        _FUNCTIONS.pop(f, None)


# NumPy functions that write into their argument and return None: dispatching
# them to fungrad's functional versions would silently drop the update
_IN_PLACE = {np.fill_diagonal: "fungrad.numpy.fill_diagonal(a, val, inplace=False)",
             np.put_along_axis: "fungrad.numpy.put_along_axis(arr, indices, values, axis, "
                                "inplace=False)",
             np.copyto: "dst = fungrad.numpy.where(where, src, dst)",
             np.place: "arr = fungrad.numpy.place(arr, mask, vals, inplace=False)",
             np.put: "a = fungrad.numpy.put(a, ind, v, inplace=False)",
             np.putmask: "a = fungrad.numpy.where(mask, values, a)"}


def _numpy_semantics() -> dict:
    """Where fungrad follows JAX and NumPy differs, the NumPy function dispatches
    to fungrad's with NumPy's meaning: NumPy's symmetric solvers use one triangle
    (the lower, or the one ``UPLO``/``upper`` names) where JAX's symmetrize the
    input, which changes derivatives off the symmetric matrices; NumPy's polydiv
    remainder is shorter."""
    LA = fnp.linalg

    def cholesky(a, /, *, upper=False):
        a = fnp.asarray(a)
        if upper:   # NumPy's upper factor comes from the upper triangle
            return LA.cholesky(fnp.conj(fnp.matrix_transpose(a)), upper=True,
                               symmetrize_input=False)
        return LA.cholesky(a, symmetrize_input=False)

    def eigh(a, /, UPLO="L"):
        return LA.eigh(a, UPLO, symmetrize_input=False)

    def eigvalsh(a, /, UPLO="L"):
        return LA.eigvalsh(a, UPLO, symmetrize_input=False)

    def polydiv(u, v):
        # NumPy's remainder drops the len(u) - len(v) + 1 leading (zero) terms that
        # fungrad's, as JAX's, keeps; it may drop more zeros, by value (not here)
        q, r = fnp.polydiv(u, v)
        n_u, n_v = fnp.shape(u)[-1], fnp.shape(v)[-1]
        return q, r[min(max(n_u - n_v + 1, 0), r.shape[-1] - 1):]

    return {np.linalg.cholesky: cholesky, np.linalg.eigh: eigh, np.linalg.eigvalsh: eigvalsh,
            np.polydiv: polydiv}


def dispatched_functions() -> list[tuple[str, str]]:
    """(NumPy name, fungrad name) of every NumPy function that runs on tracers."""
    return sorted({(_NAMES[f], "fungrad." + _NAMES[f])
                   for table in (_UFUNCS, _FUNCTIONS) for f in table})


def undispatched_functions() -> list[str]:
    """NumPy functions that raise TypeError on tracers (no fungrad counterpart)."""
    done = set(_UFUNCS) | set(_FUNCTIONS)
    return sorted({n for f, n in _NAMES.items() if f not in done})


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

def _check_live(values):
    """A tracer of a finished transformation: fungrad's escaped-tracer error."""
    for x in values:
        if isinstance(x, Tracer) and not x._trace.active:
            raise core.UnexpectedTracerError(core.escaped_message(x))


def _no_counterpart(np_fn):
    name = _NAMES.get(np_fn, getattr(np_fn, "__name__", repr(np_fn)))
    if np_fn in _IN_PLACE:
        return TypeError(
            f"{name} modifies its argument in place, and fungrad arrays are immutable. "
            f"Use the functional form and its result: {_IN_PLACE[np_fn]}.")
    return TypeError(
        f"{name} was called on a traced value, and fungrad has no counterpart for it, so "
        "it cannot be traced (differentiated, vmapped or jitted). Write it with "
        "fungrad.numpy / fungrad.lax functions, or compute it outside the transformation.")


def _no_out(name):
    return TypeError(
        f"{name}(..., out=...) on a traced value: fungrad arrays are immutable, so out= is "
        "not supported (an in-place operator such as ndarray += tracer passes out= too). "
        f"Use the return value (y = {name}(...), y = y + x); to update part of an array "
        "use y = x.at[idx].set(value).")


# ----------------------------------------------------------------------------
# NEP 18: __array_function__
# ----------------------------------------------------------------------------

def _overridable(types) -> bool:
    return all(issubclass(t, (Tracer, np.ndarray)) for t in types)


def array_function(self, func, types, args, kwargs):
    if not _overridable(types):
        return NotImplemented
    _check_live((self,))
    target = _FUNCTIONS.get(func)
    if target is None:
        raise _no_counterpart(func)
    if "out" in kwargs:
        if kwargs["out"] is not None:
            raise _no_out(_NAMES[func])
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    want = _numpy_dtypes(func, args, kwargs)
    if kwargs:
        args, kwargs = _positional(func, target, args, kwargs)
    return _numpy_result(func, _as_dtypes(target(*args, **kwargs), want))


# NumPy's own functions keep NumPy's dtypes on tracers (np.mean of int32 is
# float64, np.concatenate of float32 and int64 float64), where fungrad.numpy's
# are JAX's: NumPy runs the call once on small stand-ins of the traced
# arguments (their dtypes, every axis of length 1), and fungrad's result is
# converted to the dtypes NumPy gives.  Where the stand-ins do not fit the call
# (a reshape to a given shape, an index out of their range), fungrad's dtypes stay.

def _stand_in(x):
    if not isinstance(x, Tracer):
        return x
    if x.aval.weak_type:
        return {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1.0 + 0j}[dtype_kind(x.dtype)]
    return np.ones(tuple(min(d, 1) for d in x.shape), x.dtype)


def _stand_ins(value):
    if type(value) in (list, tuple):
        return type(value)(_stand_ins(v) for v in value)
    return _stand_in(value)


_DTYPES_CACHE: dict = {}     # (func, argument types) -> NumPy's result dtypes (bounded)


def _type_key(value):
    """A hashable key of what NumPy's result dtype may depend on (TypeError if none)."""
    if isinstance(value, Tracer):
        return ("traced", min(value.ndim, 1) and tuple(min(d, 1) for d in value.shape),
                value.dtype, value.aval.weak_type)
    if type(value) in (list, tuple):
        return type(value), tuple(map(_type_key, value))
    if isinstance(value, np.ndarray):
        raise TypeError("arrays: not cached")
    hash(value)
    return type(value), value


def _numpy_dtypes(func, args, kwargs):
    """The dtypes of NumPy's ``func`` on stand-ins of the arguments (a list, one
    per array in its result), or None where NumPy cannot say; cached by the
    arguments' types where they are hashable."""
    try:
        key = (func, _type_key(args), _type_key(tuple(sorted(kwargs.items()))), core._x64)
    except TypeError:
        return _numpy_dtypes_now(func, args, kwargs)
    if key not in _DTYPES_CACHE:
        if len(_DTYPES_CACHE) >= 4096:
            _DTYPES_CACHE.clear()
        _DTYPES_CACHE[key] = _numpy_dtypes_now(func, args, kwargs)
    return _DTYPES_CACHE[key]


def _numpy_dtypes_now(func, args, kwargs):
    if any(callable(a) for a in (*args, *kwargs.values())):
        return None        # (np.piecewise, apply_along_axis: no second run of user code)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = func(*_stand_ins(args), **{k: _stand_ins(v) for k, v in kwargs.items()})
    except Exception:      # the stand-ins do not fit this call: keep fungrad's dtypes
        return None
    leaves = tree_flatten(out)[0]
    if not all(isinstance(leaf, (np.ndarray, np.generic)) for leaf in leaves):
        return None
    dtypes = [leaf.dtype for leaf in leaves]
    return dtypes if core._x64 else [x32_default(d, args) for d in dtypes]


def _as_dtypes(out, dtypes):
    if dtypes is None:
        return out
    leaves, tree = tree_flatten(out)
    if len(leaves) != len(dtypes) or not all(isinstance(leaf, (Tracer, np.ndarray))
                                             for leaf in leaves):
        return out
    # only within a kind or upwards (float32 -> float64, int32 -> float64): never
    # complex -> real, whose NumPy dtype may depend on the values (eigvals, roots)
    return tree_unflatten(tree, [fnp.astype(leaf, d) if dtype_of(leaf) != d and dtype_kind(d) in "biufc"
                                 and np.can_cast(dtype_of(leaf), d, "same_kind") else leaf
                                 for leaf, d in zip(leaves, dtypes)])


def _numpy_result(func, out):
    """fungrad's named-tuple results (SlogdetResult, EighResult...) as NumPy's own
    class of the same name, and its lists (meshgrid, broadcast_arrays, gradient:
    JAX's) as NumPy's tuples, so that code comparing with NumPy sees one structure."""
    if type(out) is list and func in (np.meshgrid, np.broadcast_arrays, np.gradient):
        return tuple(out)
    fields = getattr(type(out), "_fields", None)
    if fields is None:
        return out
    cls = func._implementation.__globals__.get(type(out).__name__)
    return cls(*out) if getattr(cls, "_fields", None) == fields else out


_POSITIONAL_NAMES: dict = {}


def _positional(func, target, args, kwargs):
    """Arguments NumPy takes by keyword but fungrad only by position (the array
    API's positional-only parameters, e.g. ``np.sum(a=x)``) moved into ``args``."""
    names = _POSITIONAL_NAMES.get(func)
    if names is None:
        names = _POSITIONAL_NAMES[func] = _positional_only_names(func, target)
    if not names or not any(n in kwargs for n in names):
        return args, kwargs
    args = list(args)
    for i, n in enumerate(names):
        if i >= len(args) and n in kwargs:
            args.append(kwargs.pop(n))
        elif i >= len(args):
            break
    return tuple(args), kwargs


def _positional_only_names(func, target) -> tuple:
    """NumPy's names of the leading parameters that ``target`` takes by position only."""
    try:
        np_params = list(inspect.signature(func).parameters.values())
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return ()
    count = sum(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params)
    return tuple(p.name for p in np_params[:count]
                 if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)


# ----------------------------------------------------------------------------
# NEP 13: __array_ufunc__
# ----------------------------------------------------------------------------

def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    _check_live(inputs)
    name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in out):
        raise _no_out(name)
    fn = _UFUNCS.get(ufunc)
    if fn is None:
        raise _no_counterpart(ufunc)
    if method == "__call__":
        return _call(ufunc, fn, inputs, kwargs)
    if method == "at":
        raise TypeError(_at_message(ufunc))
    return _UFUNC_METHODS[method](ufunc, fn, *inputs, **kwargs)


_CALL_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None}


def _call(ufunc, fn, inputs, kwargs):
    dtype = kwargs.pop("dtype", None)
    passed = ("where", "axis", "axes", "keepdims") if ufunc.signature else ("where",)
    for key, value in kwargs.items():
        if key not in passed and _CALL_DEFAULTS.get(key, object()) != value:
            raise TypeError(f"numpy.{ufunc.__name__}({key}={value!r}) is not supported on "
                            f"traced values; call fungrad.numpy.{ufunc.__name__} without it.")
    if dtype is not None:
        inputs = _cast_for_loop(ufunc, inputs, dtype)
        out = fn(*inputs, **kwargs)
        if ufunc.nout == 1 and out.dtype != np.dtype(dtype):
            out = fnp.astype(out, dtype)
        return out
    return _with_numpy_dtypes(ufunc, fn, inputs, kwargs)


def _with_numpy_dtypes(ufunc, fn, inputs, kwargs):
    """``fn(*inputs)`` in the dtypes of NumPy's own loop for ``ufunc``: a NumPy
    ufunc keeps NumPy's promotion on tracers (``np.add(f32, i64)`` is float64,
    ``np.sin(int8)`` float16), where fungrad.numpy's function is JAX's."""
    try:
        loop = _numpy_loop_dtypes(ufunc, inputs)
    except TypeError:
        return fn(*inputs, **kwargs)          # fungrad.numpy's error for what NumPy refuses
    ins = [x if dtype_of(x) == d else fnp.astype(x, d) for x, d in zip(inputs, loop)]
    out = fn(*ins, **kwargs)
    outs = loop[ufunc.nin:]
    if ufunc.nout == 1:
        return out if out.dtype == outs[0] else fnp.astype(out, outs[0])
    return type(out)(o if o.dtype == d else fnp.astype(o, d) for o, d in zip(out, outs))


def _cast_for_loop(ufunc, inputs, dtype):
    """The inputs converted to NumPy's inner-loop dtypes for ``ufunc(..., dtype=dtype)``."""
    dtypes = [fnp.result_type(x) for x in inputs]
    loop = ufunc.resolve_dtypes(tuple(dtypes) + (np.dtype(dtype),) * ufunc.nout)
    return [fnp.astype(x, d) for x, d in zip(inputs, loop)]


def _at_message(ufunc) -> str:
    method = {"add": "add", "multiply": "multiply", "maximum": "max", "minimum": "min",
              "power": "power"}.get(ufunc.__name__)
    fix = (f"x = x.at[indices].{method}(values)" if method else
           f"x = x.at[indices].set(fungrad.numpy.{ufunc.__name__}(x[indices], values))")
    return (f"numpy.{ufunc.__name__}.at updates an array in place, and fungrad arrays are "
            f"immutable. Use the functional form: {fix}.")


# ufunc.reduce / accumulate by fungrad's own reductions where there is one
_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "logical_and": "all", "logical_or": "any", "fmax": "nanmax", "fmin": "nanmin"}
_ACCUMULATIONS = {"add": "cumsum", "multiply": "cumprod"}
_NO_VALUE = np._NoValue


def _reduce(ufunc, fn, array, axis=0, dtype=None, keepdims=False, initial=_NO_VALUE,
            where=True):
    reduction = _REDUCTIONS.get(ufunc.__name__)
    x = fnp.asarray(array)
    if reduction is not None:
        kwargs = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kwargs["dtype"] = dtype
        if initial is not _NO_VALUE:
            kwargs["initial"] = initial
        if where is not True:
            kwargs["where"] = where
        return getattr(fnp, reduction)(x, **kwargs)
    if where is not True:
        raise TypeError(f"numpy.{ufunc.__name__}.reduce(where=...) is not supported on "
                        "traced values; select first: fungrad.numpy.where(mask, x, identity).")
    return _fold_reduce(ufunc, fn, x, axis, dtype, keepdims, initial)


def _fold_reduce(ufunc, fn, x, axis, dtype, keepdims, initial):
    """``ufunc.reduce`` as a left fold of ``fn`` along each axis (NumPy's order)."""
    if dtype is not None:
        x = fnp.astype(x, dtype)
    axes = range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = sorted({a % max(x.ndim, 1) for a in axes}, reverse=True)
    for ax in axes:
        slabs = [fnp.take(x, i, axis=ax) for i in range(x.shape[ax])]
        if initial is not _NO_VALUE:
            slabs.insert(0, fnp.full(slabs[0].shape if slabs else
                                     x.shape[:ax] + x.shape[ax + 1:], initial, x.dtype))
        if not slabs:
            if ufunc.identity is None:
                raise ValueError(f"zero-size array to reduction operation "
                                 f"{ufunc.__name__} which has no identity")
            slabs = [fnp.full(x.shape[:ax] + x.shape[ax + 1:], ufunc.identity, x.dtype)]
        acc = slabs[0]
        for s in slabs[1:]:
            acc = fn(acc, s)
        x = fnp.expand_dims(acc, ax) if keepdims else acc
    return x


def _accumulate(ufunc, fn, array, axis=0, dtype=None):
    x = fnp.asarray(array)
    name = _ACCUMULATIONS.get(ufunc.__name__)
    if name is not None:
        return getattr(fnp, name)(x, axis=axis, dtype=dtype)
    if dtype is not None:
        x = fnp.astype(x, dtype)
    if x.shape[axis] == 0:
        return x
    acc = [fnp.take(x, 0, axis=axis)]
    for i in range(1, x.shape[axis]):
        acc.append(fn(acc[-1], fnp.take(x, i, axis=axis)))
    return fnp.stack(acc, axis=axis)


def _outer(ufunc, fn, a, b, **kwargs):
    a, b = fnp.asarray(a), fnp.asarray(b)
    return _call(ufunc, fn, (fnp.reshape(a, a.shape + (1,) * b.ndim), b), kwargs)


def _reduceat(ufunc, fn, array, indices, axis=0, dtype=None):
    x = fnp.asarray(array)
    indices = np.asarray(core.concrete_or_error(indices, "the indices of ufunc.reduceat"))
    return reduceat_by_slices(x, indices, axis,
                              lambda piece: _reduce(ufunc, fn, piece, axis=axis, dtype=dtype))


_UFUNC_METHODS = {"reduce": _reduce, "accumulate": _accumulate, "outer": _outer,
                  "reduceat": _reduceat}


def install():
    """Make tracers answer NumPy's ufuncs and array functions."""
    _build_tables()
    Tracer.__array_ufunc__ = array_ufunc
    Tracer.__array_function__ = array_function
