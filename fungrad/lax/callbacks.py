"""Calls from inside transformations back into Python: ``debug_callback_p``,
``pure_callback_p``, ``io_callback_p`` and ``check_p``.

Each primitive carries the Python callable in its ``callback`` param (a flat
function of the array inputs).  Their rules:

* eval: call it on read-only fungrad Arrays;
* jit: the generated code calls it; the callable is bound into the compiled
  function's namespace under a name (``_b0(a, b)``), never written by repr;
* jvp: debug callbacks and checks see the primals only (tangents are not
  printed); ``pure_callback`` and ``io_callback`` have no derivative (use
  ``custom_jvp``), as in JAX;
* vmap: debug callbacks and checks run once per lane (JAX's unrolled rule);
  ``pure_callback`` follows its ``vmap_method``, as JAX's; an unordered
  ``io_callback`` runs once per lane, an ordered one refuses, as JAX's.

``debug_callback_p``, ``io_callback_p`` and ``check_p`` are *effectful*: dead-code elimination
keeps them and CSE never merges them, and the generated code calls them in
program order.  ``pure_callback_p`` is pure: unused calls may be dropped.

    { lambda ; a:f64[]. let _ = debug_callback[callback=show] a; b:f64[] = sin a in (b,) }
    def fn(a):
        _b0(a)            # debug_callback
        b = np.sin(a)
        return (b,)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import core
from fungrad.core import Primitive, ShapedArray, wrap_array
from fungrad.interpreters import batching
from fungrad.lax import indexing, reductions, structural
from fungrad.tree_util import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["debug_callback_p", "pure_callback_p", "io_callback_p", "check_p", "JaxRuntimeError",
           "FlatCallback", "VMAP_METHODS"]

JaxRuntimeError = core.JaxRuntimeError


class FlatCallback:
    """A user callable taking pytrees, called on flat array inputs.

    ``static`` holds the non-array leaves (strings, None, ...) by flat position;
    ``callback(*arrays)`` rebuilds ``(args, kwargs)`` and calls the user's
    function.  Equal for the same function and argument structure (so that CSE
    can merge identical pure calls); ``__name__`` is what jaxprs print.
    """
    __slots__ = ("fun", "in_tree", "static", "__name__")

    def __init__(self, fun: Callable, in_tree, static: tuple = ()):
        self.fun, self.in_tree, self.static = fun, in_tree, tuple(static)
        self.__name__ = getattr(fun, "__name__", type(fun).__name__)

    def __call__(self, *arrays):
        static = dict(self.static)
        it = iter(arrays)
        leaves = [static[i] if i in static else next(it)
                  for i in range(len(static) + len(arrays))]
        args, kwargs = tree_unflatten(self.in_tree, leaves)
        return self.fun(*args, **kwargs)

    def _key(self):
        return (self.fun, self.in_tree, tuple((i, id(v)) for i, v in self.static))

    def __eq__(self, other):
        return type(other) is FlatCallback and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


def _as_arrays(args, copy: bool = False):
    """Read-only fungrad Arrays for the callable (copies where the caller's
    buffers may be reused afterwards, as generated code does with ``out=``)."""
    return [wrap_array(np.array(a) if copy else np.asarray(a)) for a in args]


def _lane(x, dim, i):
    return x if dim is None else indexing.index_in_dim(x, i, dim, keepdims=False)


def _emit_call(fn_value, comment: str):
    """An ``emit_block`` rule: the generated code calls ``fn_value`` (bound to a
    name in the compiled function's namespace) on the inputs."""
    def emit(block, eqn, args, out_names):
        fn = block.names.const(fn_value(eqn.params))
        call = f"{fn}({', '.join(args)})"
        if out_names:
            call = f"{', '.join(out_names)}, = {call}"
        block.line(f"{call}  # {comment}")
    return emit


# ----------------------------------------------------------------------------
# debug_callback: a side effect that sees concrete values (debug.print, ...)
# ----------------------------------------------------------------------------

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True


def _run_debug_callback(callback, copy=False):
    def run(*args):
        callback(*_as_arrays(args, copy))
        return ()
    return run


debug_callback_p.def_impl(lambda *args, callback: list(_run_debug_callback(callback)(*args)))
debug_callback_p.def_abstract_eval(lambda *avals, callback: [])


def _debug_callback_jvp(primals, tangents, callback):
    # the callback sees the primal values; tangents are not its business
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_callback_batch(axis_size, vals, dims, callback):
    # one call per lane, in lane order, as JAX's unrolled rule
    for i in range(axis_size):
        debug_callback_p.bind(*[_lane(v, d, i) for v, d in zip(vals, dims)], callback=callback)
    return [], []


debug_callback_p.jvp = _debug_callback_jvp
debug_callback_p.batch = _debug_callback_batch
# a callback whose inputs are tangents may be staged into a linear jaxpr: its
# transpose contributes no cotangent (it has no outputs), as in JAX
debug_callback_p.transpose = lambda cts, *args, callback: [None] * len(args)
debug_callback_p.emit_block = _emit_call(
    lambda params: _run_debug_callback(params["callback"], copy=True), "debug_callback")


# ----------------------------------------------------------------------------
# pure_callback: NumPy code as a function inside transformations
# ----------------------------------------------------------------------------

pure_callback_p = Primitive("pure_callback", multiple_results=True)

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


def _checked_results(results, result_avals, name) -> list:
    """The callable's results as arrays of the declared shapes and dtypes."""
    leaves = tree_leaves(results)
    if len(leaves) != len(result_avals):
        raise TypeError(f"pure_callback: {name} returned {len(leaves)} arrays, but "
                        f"result_shape_dtypes declares {len(result_avals)}")
    out = []
    for i, (r, aval) in enumerate(zip(leaves, result_avals)):
        r = np.asarray(r)
        if r.shape != aval.shape:
            raise ValueError(f"pure_callback: {name} returned shape {r.shape} for result {i}, "
                             f"but result_shape_dtypes declares {aval.shape}")
        if r.dtype != aval.dtype:
            if dtype_kind(r.dtype) != dtype_kind(aval.dtype) and not np.can_cast(r.dtype, aval.dtype):
                raise TypeError(f"pure_callback: {name} returned dtype {r.dtype} for result "
                                f"{i}, but result_shape_dtypes declares {aval.dtype}; "
                                f"convert it in the callback (.astype)")
        # a copy: the callable may return (a view of) an input, whose buffer
        # generated code may later reuse
        out.append(np.array(r, dtype=aval.dtype, copy=True))
    return out


def _run_pure_callback(callback, result_avals):
    def run(*args):
        return _checked_results(callback(*_as_arrays(args)), result_avals,
                                getattr(callback, "__name__", "the callback"))
    return run


def _pure_callback_impl(*args, callback, result_avals, vmap_method):
    return _run_pure_callback(callback, result_avals)(*args)


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `fungrad.custom_jvp` "
                     "(or custom_vjp) around the pure_callback to use it while taking "
                     "gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use "
                     "`fungrad.custom_vjp` to use callbacks while taking gradients.")


class _SequentialCallback:
    """The callable of a vmapped pure_callback with vmap_method='sequential':
    the original one, called lane by lane (batched inputs on axis 0), results
    stacked.  Runs in Python at run time, so nested vmaps and jit compose."""
    __slots__ = ("inner", "batched", "lane_avals", "__name__")

    def __init__(self, inner, batched, lane_avals):
        self.inner, self.batched, self.lane_avals = inner, tuple(batched), tuple(lane_avals)
        self.__name__ = f"sequential({getattr(inner, '__name__', 'callback')})"

    def __call__(self, *args):
        size = next(np.shape(a)[0] for a, b in zip(args, self.batched) if b)
        lane_args = lambda i: [a[i] if b else a for a, b in zip(args, self.batched)]
        lanes = [_checked_results(self.inner(*lane_args(i)), self.lane_avals, self.__name__)
                 for i in range(size)]
        return [np.stack([lane[k] for lane in lanes]) if lanes
                else np.zeros((0,) + a.shape, a.dtype) for k, a in enumerate(self.lane_avals)]

    def _key(self):
        return (self.inner, self.batched, self.lane_avals)

    def __eq__(self, other):
        return type(other) is _SequentialCallback and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


def _pure_callback_batch(axis_size, vals, dims, callback, result_avals, vmap_method):
    if vmap_method not in VMAP_METHODS[:-1]:
        raise NotImplementedError(
            f"vmap of pure_callback({callback.__name__}) needs vmap_method=: one of "
            "'sequential' (call once per batch element), 'expand_dims' (unbatched "
            "arguments get a leading axis of size 1), 'broadcast_all' (they are "
            "broadcast to the batch size) or 'legacy_vectorized' (left as they are)")
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    batched_avals = tuple(ShapedArray((axis_size,) + a.shape, a.dtype) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        callback = _SequentialCallback(callback, [d is not None for d in dims], result_avals)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        size = axis_size if vmap_method == "broadcast_all" else 1
        vals = [structural.broadcast(v, (size,)) if d is None else v for v, d in zip(vals, dims)]
    outs = pure_callback_p.bind(*vals, callback=callback, result_avals=batched_avals,
                                vmap_method=vmap_method)
    return outs, [0] * len(outs)


pure_callback_p.def_impl(_pure_callback_impl)
pure_callback_p.def_abstract_eval(lambda *avals, callback, result_avals, vmap_method:
                                  list(result_avals))
pure_callback_p.jvp = _pure_callback_jvp
pure_callback_p.transpose = _pure_callback_transpose
pure_callback_p.batch = _pure_callback_batch
pure_callback_p.emit_block = _emit_call(
    lambda params: _run_pure_callback(params["callback"], params["result_avals"]),
    "pure_callback")


# ----------------------------------------------------------------------------
# io_callback: a callback with side effects (I/O, host state) that returns values
# ----------------------------------------------------------------------------

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True       # runs even when its results are unused


def _io_callback_impl(*args, callback, result_avals, ordered):
    return _run_pure_callback(callback, result_avals)(*args)


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP: io_callback has no derivative; "
                     "wrap it in `fungrad.custom_jvp` or `custom_vjp` to differentiate")


def _io_callback_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose: io_callback has no derivative; "
                     "wrap it in `fungrad.custom_vjp` to differentiate")


def _io_callback_batch(axis_size, vals, dims, callback, result_avals, ordered):
    """Unordered: the callback runs once per lane, in lane order (JAX maps it
    sequentially); ordered: refused, as in JAX (lanes have no order)."""
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback: an io_callback with "
                         "ordered=True cannot run under vmap; pass ordered=False, or call "
                         "it outside the vmap")
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    batched_avals = tuple(ShapedArray((axis_size,) + a.shape, a.dtype) for a in result_avals)
    sequential = _SequentialCallback(callback, [d is not None for d in dims], result_avals)
    outs = io_callback_p.bind(*vals, callback=sequential, result_avals=batched_avals,
                              ordered=False)
    return outs, [0] * len(outs)


io_callback_p.def_impl(_io_callback_impl)
io_callback_p.def_abstract_eval(lambda *avals, callback, result_avals, ordered:
                                list(result_avals))
io_callback_p.jvp = _io_callback_jvp
io_callback_p.transpose = _io_callback_transpose
io_callback_p.batch = _io_callback_batch
io_callback_p.emit_block = _emit_call(
    lambda params: _run_pure_callback(params["callback"], params["result_avals"]),
    "io_callback")


# ----------------------------------------------------------------------------
# check: checkify.check outside checkify (raises at run time, also under jit)
# ----------------------------------------------------------------------------

check_p = Primitive("check", multiple_results=True)
check_p.effectful = True


def check_message(msg: str, fmt_tree, fmt_values, origin: str) -> str:
    args, kwargs = tree_unflatten(fmt_tree, [wrap_array(np.asarray(v)) for v in fmt_values])
    return f"{msg.format(*args, **kwargs)} (`check` failed at {origin})"


def _run_check(msg, fmt_tree, origin, debug):
    def run(failed, *fmt_values):
        if not debug and bool(np.asarray(failed)):
            raise JaxRuntimeError(check_message(msg, fmt_tree, fmt_values, origin))
        return ()
    return run


def _check_impl(failed, *fmt_values, msg, fmt_tree, origin, debug):
    _run_check(msg, fmt_tree, origin, debug)(failed, *fmt_values)
    return []


def _check_abstract_eval(failed, *fmt_avals, msg, fmt_tree, origin, debug):
    if failed.shape != () or failed.dtype != np.bool_:
        raise TypeError(f"check takes a scalar boolean predicate, got {failed.str_short()}")
    return []


def _check_jvp(primals, tangents, **params):
    return check_p.bind(*primals, **params), []   # checks the primal values


def _check_batch(axis_size, vals, dims, **params):
    """A batched check fails if any lane fails; its message shows the first one."""
    failed, *fmt = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    first = reductions.argmax(failed, 0, np.int32)
    fmt = [indexing.dynamic_index_in_dim(v, first, 0, keepdims=False) for v in fmt]
    check_p.bind(reductions.reduce_or(failed, (0,)), *fmt, **params)
    return [], []


check_p.def_impl(_check_impl)
check_p.def_abstract_eval(_check_abstract_eval)
check_p.jvp = _check_jvp
check_p.batch = _check_batch
check_p.emit_block = _emit_call(
    lambda p: _run_check(p["msg"], p["fmt_tree"], p["origin"], p["debug"]), "check")


def flatten_callback_args(fun, args, kwargs, who: str):
    """``(FlatCallback, dynamic leaves)`` for ``fun(*args, **kwargs)``: arrays,
    tracers and numbers are passed at run time, other leaves (strings, None...)
    are kept by the callback as they are."""
    if not callable(fun):
        raise TypeError(f"{who}: the first argument must be callable, got "
                        f"{type(fun).__name__}")
    leaves, in_tree = tree_flatten((tuple(args), dict(kwargs)))
    static, dynamic = [], []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, (core.Tracer, np.ndarray, np.generic, bool, int, float, complex)):
            dynamic.append(leaf)
        else:
            static.append((i, leaf))
    return FlatCallback(fun, in_tree, static), dynamic


def lane_avals(result_shape_dtypes):
    """``(flat ShapedArrays, tree)`` of a pytree of objects with shape and dtype."""
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError("pure_callback: result_shape_dtypes must be a pytree of objects "
                            "with .shape and .dtype (e.g. fungrad.ShapeDtypeStruct), got "
                            f"{type(leaf).__name__}")
        avals.append(ShapedArray(leaf.shape, core.canonicalize_dtype(leaf.dtype)))
    return tuple(avals), tree


def as_callback_operand(x):
    return x if isinstance(x, core.Tracer) else np.asarray(x)

