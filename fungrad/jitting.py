"""``jit``: stage a function into a jaxpr once per abstract signature, lower it to
NumPy source (``interpreters/codegen.py``), compile it, and reuse it.

A jitted function binds ``jit_p`` (``fungrad/lax/control_flow/call.py``), a
higher-order primitive whose ``jaxpr`` param is the staged function, so every
transformation composes with it.  This module is the user-facing wrapper:
argument flattening, static arguments (``static_argnums`` and
``static_argnames`` completed from each other by the signature), the
per-function, per-signature cache (a cache hit, outside any transformation,
is a dict lookup and a call of the compiled function; see "The compilation
cache" below), ``lower()``/``compile()`` and the cache-miss log.

Side effects in the jitted Python function (print, appending to a list) run
only while tracing, i.e. once per new signature, as in JAX.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import logging
import threading
import time
import types
import weakref
from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from fungrad import _config, core, monitoring
from fungrad import name_stack as _name_stack
from fungrad.lax import state as _refs
from fungrad.core import ClosedJaxpr, Tracer, get_aval, plain_array, wrap_array
from fungrad.interpreters.codegen import compiled, compiled_scalar_or_numpy
from fungrad.interpreters.partial_eval import (by_value, closure_convert, output_value,
                                              trace_to_jaxpr, unalias)
from fungrad.lax.control_flow.call import jit_p
from fungrad.tree_util import tree_flatten, tree_map, tree_unflatten
from fungrad._jit_stages import ArgInfo, Compiled, Lowered, Traced, _StageInfo, _stand_ins

__all__ = ["jit", "Lowered", "Compiled"]

log = logging.getLogger("fungrad.jit")

# ----------------------------------------------------------------------------
# The user-facing wrapper
# ----------------------------------------------------------------------------

_PY_SCALARS = (bool, int, float, complex)
_LEAF_TYPES = {np.ndarray, core.Array, float, int, bool, complex, np.float64, np.float32,
               np.int64, np.int32, np.bool_}


def _signature(x):
    """The part of an argument the compiled code depends on."""
    t = type(x)
    if t is np.ndarray or t is core.Array and not x.weak_type:
        return (x.shape, x.dtype)
    if t in _PY_SCALARS:
        return t              # weakly typed, as JAX
    if isinstance(x, Tracer):
        return (x.aval.shape, x.aval.dtype, "traced")
    if t is _refs.Ref:        # (its value is read, and a Ref's key is not an array's)
        value = x._contents()
        return ("Ref", value.shape, value.dtype, getattr(value, "weak_type", False))
    aval = get_aval(x)      # (a weakly typed Array traces differently: its own key)
    return (aval.shape, aval.dtype, "weak") if aval.weak_type else (aval.shape, aval.dtype)


# Python scalars become NumPy *scalars* (not 0-d arrays) for the compiled code:
# same dtype and promotion as the 0-d array jit traced with, but NumPy's scalar
# fast path makes scalar code several times faster.  (int keeps np.asarray:
# an int beyond int64 must fail or promote as it did before, not overflow.)
# (the table is core's: without jax_enable_x64 floats become np.float32, ...)
_SCALAR_TO_NUMPY = core.SCALAR_TO_NUMPY


def _output_kind(out_tree) -> str:
    """How the cache-hit path rebuilds outputs: "single" leaf, a flat "tuple"
    of leaves (value_and_grad), or a general "tree"."""
    if out_tree.num_nodes == 1 and out_tree.num_leaves == 1:
        return "single"
    probe = tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
    if type(probe) is tuple and probe == tuple(range(out_tree.num_leaves)):
        return "tuple"
    return "tree"


class _Entry:
    # refs: None, or the ``ref.JitRefs`` of a function with Ref arguments or
    # closed-over Refs (its program takes and returns their values)
    __slots__ = ("closed", "out_tree", "fn", "consts", "cacheable", "hoisted", "output_kind",
                 "scalar_args", "in_types", "may_alias", "weak_outputs", "run",
                 "partition_runners", "refs")


_ndarray, _Array = np.ndarray, core.Array


class _ArgumentOverflow(OverflowError):
    """A Python int argument too large for NumPy (``Jitted`` names the argument)."""


# ----------------------------------------------------------------------------
# The edge of compiled code, shared by every backend: plain ndarrays inside
# ----------------------------------------------------------------------------
# NumPy's ufuncs cost about twice as much on an ndarray subclass as on an
# ndarray (``__array_finalize__``, wrapping; 0.9 against 0.44 us for ``np.sin``
# of a length-10 array), and users call jitted functions with fungrad Arrays.
# So Arrays enter compiled code as ndarray views of their read-only buffers
# (O(1), no copy; the code only reads its inputs) and results leave it as
# Arrays once.  Other ndarray subclasses pass as they are.  (Constants captured
# at trace time are stored as plain ndarrays by ``codegen.CompiledFunction``.)

def compiled_code_arguments(leaves, convert_scalars: bool) -> list:
    """The flat arguments as compiled code takes them: fungrad Arrays as plain
    ndarray views and, with ``convert_scalars``, Python scalars as NumPy scalars
    (same dtype as the 0-d array traced with; NumPy's scalar path is faster)."""
    if convert_scalars:
        to_numpy = _SCALAR_TO_NUMPY.get
        try:
            return [convert(x) if (convert := to_numpy(type(x))) is not None
                    else plain_array(x) for x in leaves]
        except OverflowError as err:      # an int too large for any NumPy int
            raise _ArgumentOverflow(str(err)) from None
    return [x.view(np.ndarray) if type(x) is core.Array else x for x in leaves]


def compiled_code_results(outs, leaves, may_alias, weak_outputs=()) -> list:
    """The flat results as callers get them: read-only Arrays, copied first where
    they may view a writeable array the caller passed in (``leaves``, as given:
    read-only fungrad Arrays are shared, never copied), weakly typed where the
    jaxpr's outputs are (``weak_outputs``: their indices)."""
    if may_alias:
        outs = unalias(outs, may_alias, leaves)
    wrapped = [wrap_array(o) for o in outs]
    for i in weak_outputs:
        out = wrapped[i]
        if out is outs[i]:        # an Array the compiled code passed through: shared
            wrapped[i] = core.with_weak_type(out, True)
        else:                     # made just now for this result: marked in place
            out.weak_type = True
    return wrapped


def weak_output_indices(closed: ClosedJaxpr) -> tuple:
    return tuple(i for i, a in enumerate(closed.out_avals) if a.weak_type)


def _runner(entry: "_Entry") -> Callable:
    """The cache-hit path of ``entry``, built once: the arguments into the
    compiled code, its results out of it (in their tree).  It is generated
    Python (``_runner_source``): one line per argument and result, no loops or
    calls of helpers for the common cases, which is most of ``jit``'s cost
    per call on scalar code.  (Very many leaves: the generic loops instead.)"""
    fn, consts, kind, out_tree = entry.fn, entry.consts, entry.output_kind, entry.out_tree
    scalar_args = entry.scalar_args and not getattr(fn, "takes_python_scalars", False)
    may_alias, weak_outputs = entry.may_alias, entry.weak_outputs
    if consts:
        fn = functools.partial(fn, *consts)
    in_avals = entry.closed.in_avals[len(entry.hoisted):]
    n_out = len(entry.closed.out_avals)
    if len(in_avals) + n_out > _MAX_GENERATED_LEAVES or may_alias:
        return _generic_runner(fn, scalar_args, may_alias, weak_outputs, kind, out_tree)
    namespace = {"_fn": fn, "_out_tree": out_tree, **_RUNNER_NAMES,
                 **{f"_{t.__name__}_to_numpy": convert for t, convert in _SCALAR_TO_NUMPY.items()}}
    direct = getattr(entry.fn, "direct_segment", None)
    if direct is not None:     # the numba backend's one segment, without its driver
        namespace["_segment"] = direct
        modes = [_direct_mode(t, a) for t, a in zip(entry.in_types, in_avals)]
    else:
        modes = ["convert" if scalar_args and t in _PY_SCALARS else "array"
                 for t in entry.in_types]
    source = _runner_source(modes, entry.in_types, "_fn" if direct is None else "_segment.call",
                            n_out, set(weak_outputs), kind)
    exec(compile(source, "<fungrad.jit runner>", "exec"), namespace)
    return namespace["run"]


def _ref_runner(entry: "_Entry") -> Callable:
    """The cache-hit path of a function with Refs: their current values in with
    the arguments, the written ones' new values out into them
    (``ref.JitRefs``); the generic loops (Refs make the call cost more anyway)."""
    fn = functools.partial(entry.fn, *entry.consts) if entry.consts else entry.fn
    scalar_args = entry.scalar_args and not getattr(entry.fn, "takes_python_scalars", False)
    may_alias, weak_outputs = entry.may_alias, entry.weak_outputs

    def run_compiled(values):
        outs = fn(*compiled_code_arguments(values, scalar_args))
        return compiled_code_results(outs, values, may_alias, weak_outputs)
    refs, out_tree = entry.refs, entry.out_tree
    return lambda leaves: refs.call(run_compiled, leaves, out_tree)


def _direct_mode(leaf_type, aval) -> str:
    """How an argument enters a numba segment: a Python float as it is when it
    is numba's float64 as well as the traced dtype, other Python scalars as
    NumPy scalars (an int too large raises), 0-d arrays as scalars (numba
    compiled the segment for scalars there), arrays as ndarrays."""
    if leaf_type is float and _SCALAR_TO_NUMPY[float] is np.float64:
        return "raw"
    if leaf_type in _PY_SCALARS:
        return "convert"
    return "scalar" if aval.shape == () else "array"


_MAX_GENERATED_LEAVES = 256

# what generated runners call (their only globals)
_RUNNER_NAMES = {"_Array": core.Array, "_ndarray": np.ndarray, "_new": np.ndarray.__new__,
                 "_float64": np.float64, "_F64": np.dtype(np.float64), "_wrap": wrap_array,
                 "_with_weak_type": core.with_weak_type, "_unflatten": tree_unflatten,
                 "_Overflow": _ArgumentOverflow}


def _argument_lines(x: str, mode: str, leaf_type) -> list[str]:
    if mode == "raw":
        return []
    if mode == "convert":     # (the NumPy scalar type of the traced dtype, bound
        # when the runner is built: jax_enable_x64 changing empties the caches)
        return [f"    try:\n        {x} = _{leaf_type.__name__}_to_numpy({x})\n"
                "    except OverflowError as err:\n        raise _Overflow(str(err))"]
    lines = [f"    if type({x}) is _Array:\n        {x} = {x}.view(_ndarray)"]
    return lines + [f"    {x} = {x}[()]"] if mode == "scalar" else lines


def _runner_source(modes, in_types, fn: str, n_out: int, weak: set, kind: str) -> str:
    """``run(leaves)``: unpack, convert each argument as its mode says (Arrays
    to ndarray views; "convert": Python scalars, of ``in_types``, the leaf types
    at trace time, to NumPy scalars; see ``_direct_mode``), call ``fn``,
    wrap each result (a Python float inline) and mark the weakly typed ones
    (in place when the Array is new), in ``kind``'s tree."""
    xs, outs = [f"x{i}" for i in range(len(modes))], [f"o{i}" for i in range(n_out)]
    lines = ["def run(leaves):"]
    if xs:
        lines.append(f"    {', '.join(xs)}, = leaves")
    for i, (x, mode) in enumerate(zip(xs, modes)):
        lines += _argument_lines(x, mode, in_types[i])
    call = f"{fn}({', '.join(xs)})"
    lines.append(f"    {', '.join(outs)}, = {call}" if n_out else f"    {call}")
    for i, o in enumerate(outs):
        lines.append(f"    r{i} = _new(_Array, (), _F64, _float64({o})) if type({o}) is float "
                     f"else _wrap({o})")
        if i in weak:
            lines.append(f"    if r{i} is {o}:\n        r{i} = _with_weak_type(r{i}, True)\n"
                         f"    else:\n        r{i}.weak_type = True")
    results = [f"r{i}" for i in range(n_out)]
    if kind == "single":
        lines.append(f"    return {results[0]}")
    elif kind == "tuple":
        lines.append(f"    return ({', '.join(results)}{',' if n_out == 1 else ''})")
    else:
        lines.append(f"    return _unflatten(_out_tree, [{', '.join(results)}])")
    return "\n".join(lines) + "\n"


def _generic_runner(fn, scalar_args, may_alias, weak_outputs, kind, out_tree) -> Callable:
    """``_runner``'s loops, for many leaves or outputs that may alias inputs."""
    def results(leaves):
        outs = fn(*compiled_code_arguments(leaves, scalar_args))
        return compiled_code_results(outs, leaves, may_alias, weak_outputs)
    if kind == "single":
        return lambda leaves: results(leaves)[0]
    if kind == "tuple":
        return lambda leaves: tuple(results(leaves))
    return lambda leaves: tree_unflatten(out_tree, results(leaves))


# ----------------------------------------------------------------------------
# The compilation cache: per underlying function (held weakly), LRU-bounded
# ----------------------------------------------------------------------------
# ``jit(f)`` looks up the cache of ``f`` (a bound method: of its function and,
# weakly, its instance) under its static-argument configuration, so that
# ``jit(f)(x)`` written inside a loop traces once, as in JAX, while each new
# closure or ``functools.partial`` is a new function.  Caches of functions
# that die go with them; each holds at most ``CACHE_SIZE`` signatures, the
# least recently used evicted first.  A function that cannot be held weakly
# (or hashed) gets a cache of its own ``Jitted``.

CACHE_SIZE = 256
_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


class _FunctionCache:
    """Compiled entries of one function under one static configuration, by call
    signature (argument structure, shapes/dtypes, static values), LRU-bounded.

    ``hit`` is a one-entry inline cache in front of the dictionary: (key, run)
    of the most recently used entry, which a call with the same signature as
    the last one (the common case: a loop) finds by one tuple comparison
    instead of hashing its key.  It is always the last entry in LRU order (set
    by every ``get`` and ``put``), so skipping ``move_to_end`` on an inline hit
    keeps the eviction order exact; it is stored as one tuple so that a thread
    never sees one entry's key with another's code."""
    __slots__ = ("entries", "last_key", "hit")

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()
        self.last_key = None
        self.hit = (None, None)

    def get(self, key):
        entry = self.entries.get(key)
        if entry is not None:
            try:
                self.entries.move_to_end(key)
            except KeyError:      # evicted by another thread meanwhile: still usable
                pass
            self.hit = (key, entry.run)
        return entry

    def runner(self, key):
        """The cache-hit code (``_Entry.run``) of ``key``, or None (a miss)."""
        hit = self.hit
        if hit[0] == key:
            return hit[1]
        entry = self.get(key)
        return None if entry is None else entry.run

    def put(self, key, entry):
        self.entries[key] = entry
        self.hit = (key, entry.run)
        if len(self.entries) > CACHE_SIZE:
            self.entries.popitem(last=False)

    def clear(self):
        self.entries.clear()
        self.hit = (None, None)


def _cache_for(fun, config) -> _FunctionCache:
    """The shared cache of ``fun`` under ``config`` (a new private one if ``fun``
    cannot be a weak dictionary key)."""
    owner, extra = fun, ()
    if isinstance(fun, types.MethodType):
        try:
            owner, extra = fun.__func__, (weakref.ref(fun.__self__),)
        except TypeError:
            return _FunctionCache()
    try:
        with _caches_lock:
            per_owner = _caches.get(owner)
            if per_owner is None:
                per_owner = _caches[owner] = {}
            key = extra + (config,)
            cache = per_owner.get(key)
            if cache is None:
                cache = per_owner[key] = _FunctionCache()
                if extra:    # forget a method's cache when its instance dies
                    weakref.finalize(fun.__self__, per_owner.pop, key, None)
            return cache
    except TypeError:        # not weakly referenceable, or unhashable
        return _FunctionCache()


# ----------------------------------------------------------------------------
# Static arguments: names and positions mapped to each other by the signature
# ----------------------------------------------------------------------------

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _as_tuple(value, kind, what):
    if value is None:
        return ()
    if isinstance(value, kind):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise TypeError(f"jit: {what} must be {kind.__name__} or a sequence of them, got "
                        f"{value!r}") from None
    if not all(isinstance(v, kind) for v in out):
        raise TypeError(f"jit: {what} must be {kind.__name__}s, got {value!r}")
    return out


def _static_config(fun, static_argnums, static_argnames):
    """``(static_argnums, static_argnames)`` completed from each other through
    ``inspect.signature(fun)``, as JAX does: an argument named static is static
    whether it is passed by position or by keyword."""
    nums = _as_tuple(static_argnums, int, "static_argnums")
    names = _as_tuple(static_argnames, str, "static_argnames")
    if not nums and not names:
        return (), ()
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):      # no signature (some builtins): take them as given
        return nums, names
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_pos = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    fname = getattr(fun, "__name__", type(fun).__name__)
    named = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                   inspect.Parameter.KEYWORD_ONLY)}
    unknown = [n for n in names if n not in named]
    if unknown and not var_kw:
        raise ValueError(f"jit: static_argnames {unknown} are not parameters of {fname}; "
                         f"its parameters are {[p.name for p in params]}")
    if not var_pos:
        bad = [n for n in nums if not -len(positional) <= n < len(positional)]
        if bad:
            raise ValueError(f"jit: static_argnums {bad} out of range: {fname} takes "
                             f"{len(positional)} positional arguments "
                             f"({[p.name for p in positional]})")
        nums = tuple(n % len(positional) for n in nums)
    names += tuple(positional[n].name for n in nums if 0 <= n < len(positional)
                   and positional[n].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    nums += tuple(i for i, p in enumerate(positional) if p.name in names)
    return tuple(sorted(set(nums))), tuple(dict.fromkeys(names))


# every Jitted, so that fungrad.clear_caches() (and changing jax_enable_x64 or the
# promotion options, which change what tracing produces) can empty their caches
_instances: weakref.WeakSet = weakref.WeakSet()
_disable_jit = _config.disable_jit


def _clear_caches():
    with _caches_lock:
        _caches.clear()
    for jitted in list(_instances):
        jitted._cache.clear()


_config.on_tracing_change.append(_clear_caches)


class Jitted:
    """A jit-compiled function; call it like the original.

    As a class attribute it binds like a method (``@jit`` on a method; with a
    hashable ``self``, ``@partial(jit, static_argnums=0)`` makes ``self`` static).
    """

    def __init__(self, fun, static_argnums=(), static_argnames=(), backend=None):
        if not callable(fun):
            raise TypeError(f"jit: expected a callable, got {type(fun).__name__} {fun!r}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums, self.static_argnames = _static_config(
            fun, static_argnums, static_argnames)
        self.name = getattr(fun, "__name__", "fn").replace("<", "").replace(">", "") or "fn"
        self.backend = _backend_choice(backend)    # None: fungrad_jit_backend's value
        self._cache = _cache_for(fun, (self.static_argnums, self.static_argnames, self.backend))
        self._positional = not self.static_argnums    # (calls that may take the fast path)
        _instances.add(self)

    def _cache_size(self) -> int:
        """How many signatures are compiled for this function (JAX's
        ``jitted._cache_size()``, which tests use to check that a loop does
        not retrace)."""
        return len(self._cache.entries)

    def _describe_position(self, n: int) -> str:
        try:
            params = list(inspect.signature(self.fun).parameters)
        except (TypeError, ValueError):
            params = []
        return f"argument {params[n]!r} (positional argument {n})" if n < len(params) \
            else f"positional argument {n}"

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def _split(self, args, kwargs):
        n_args = len(args)
        nums = {n % n_args for n in self.static_argnums if -n_args <= n < n_args}
        statics = [(n, _hashable(args[n], self._describe_position(n))) for n in sorted(nums)]
        statics += [(k, _hashable(kwargs[k], f"argument {k!r}"))
                    for k in self.static_argnames if k in kwargs]
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return dyn_args, dyn_kwargs, tuple(statics), nums

    def _entry(self, args, kwargs, float_checks: str | None = None):
        """(cache entry, flat arguments) for a call, tracing on a cache miss; with
        ``float_checks`` (jax_debug_nans/infs), the entry of the checking code."""
        if not kwargs and not self.static_argnums and all(type(a) in _LEAF_TYPES for a in args):
            # fast path: positional array/scalar arguments, no pytrees, no statics
            leaves, in_tree, statics, nums = args, len(args), (), ()
        else:
            dyn_args, dyn_kwargs, statics, nums = self._split(args, kwargs)
            leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        try:
            key = (in_tree, tuple(map(_signature, leaves)), statics)
            if float_checks is not None:
                key += (float_checks,)
        except TypeError:
            self._avals(args, kwargs, nums, leaves)    # raises, naming the argument
            raise
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(args, kwargs, nums, leaves, key)
        return entry, leaves
    def __call__(self, *args, **kwargs):
        if _plain_calls and not kwargs and self._positional and core._tls.trace is _EVAL_TRACE:
            # The cache hit of plain positional array/scalar arguments: their key
            # (as ``_entry`` builds it: the tests in the order of their cost, the
            # types as module globals; written out here, since every jitted call
            # outside transformations runs it), one comparison with the inline
            # cache or a lookup, and the entry's runner.
            sig = []
            for a in args:
                t = type(a)
                if t is float or t is int or t is bool or t is complex:
                    sig.append(t)                   # weakly typed (as _signature says)
                elif t is _ndarray:
                    sig.append((a.shape, a.dtype))
                elif t is _Array:
                    sig.append((a.shape, a.dtype, "weak") if a.weak_type else (a.shape, a.dtype))
                elif t in _LEAF_TYPES:              # NumPy scalars
                    sig.append(((), a.dtype))
                else:
                    break                           # a pytree, a tracer, ...: _call
            else:
                key = (len(args), tuple(sig), ())
                hit = self._cache.hit
                run = hit[1] if hit[0] == key else self._cache.runner(key)
                if run is not None:
                    try:
                        return run(args)
                    except _ArgumentOverflow as err:
                        self._raise_overflow(args, kwargs, (), args, err)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        """A call with pytrees, keywords or static arguments, a cache miss, a call
        under a transformation or while jax_disable_jit, jax_debug_nans or
        jax_debug_infs is on."""
        if _disable_jit.value:            # jax_disable_jit: the Python function, op by op
            return self.fun(*args, **kwargs)
        if core._float_checks:            # jax_debug_nans / jax_debug_infs
            return self._call_checked(args, kwargs)
        eager = core._tls.trace is core.EVAL_TRACE
        entry, leaves = self._entry(args, kwargs)
        if entry.refs is not None and not (eager and entry.cacheable):
            return self._bind_with_refs(entry, leaves)
        if core._global_array_types and any(type(x) in core._global_array_types for x in leaves):
            outs = _partitioned(self, entry, leaves) if eager else None
            if outs is not None:
                return tree_unflatten(entry.out_tree, outs)
            _log_gather_once(self, entry, leaves)
        if eager and entry.cacheable:
            try:
                return entry.run(leaves)
            except _ArgumentOverflow as err:
                nums = self._split(args, kwargs)[3] if self.static_argnums else ()
                self._raise_overflow(args, kwargs, nums, leaves, err)
        outs = jit_p.bind(*entry.hoisted, *leaves, jaxpr=entry.closed, name=self.name)
        return tree_unflatten(entry.out_tree, outs)

    def _call_checked(self, args, kwargs):
        """A call while jax_debug_nans/jax_debug_infs is on: the function is traced
        again (recording each equation's source line), cached under a key of its
        own (so switching the option off gives back the fast code), and run by
        code that checks every equation that can create a NaN/inf (codegen.py),
        then its outputs (for one that came in with the arguments)."""
        entry, leaves = self._entry(args, kwargs, core._float_check_mode)
        if entry.refs is not None:
            return self._bind_with_refs(entry, leaves)
        if core._tls.trace is not core.EVAL_TRACE or not entry.cacheable:
            outs = jit_p.bind(*entry.hoisted, *leaves, jaxpr=entry.closed, name=self.name)
            return tree_unflatten(entry.out_tree, outs)
        # (plain ndarrays inside also because NumPy's operators on Arrays are checked)
        outs = entry.fn(*entry.consts, *compiled_code_arguments(leaves, True))
        core.check_outputs(outs, f"the output of jit({self.name})")
        return tree_unflatten(entry.out_tree, compiled_code_results(
            outs, leaves, entry.may_alias, entry.weak_outputs))

    def _bind_with_refs(self, entry, leaves):
        """A call of a function with Refs through ``jit_p`` (under a transformation,
        or checking floats): the Refs' values in, the written ones' out."""
        bind = lambda values: jit_p.bind(*entry.hoisted, *values, jaxpr=entry.closed,
                                         name=self.name)
        return entry.refs.call(bind, leaves, entry.out_tree)

    def _trace(self, args, kwargs, nums, leaves, key) -> _Entry:
        with gc_paused():
            return self._trace_and_compile(args, kwargs, nums, leaves, key)

    def _trace_and_compile(self, args, kwargs, nums, leaves, key) -> _Entry:
        self._explain_miss(key)
        out_store, where = [], f"jit({self.name})"
        in_tree = key[0]
        ref_args = _refs.ref_positions(leaves, where)
        avals = self._avals(args, kwargs, nums, _refs.values_of(leaves) if ref_args else leaves)

        def flat_fun(*xs):
            # (Refs: arguments become stand-ins, closed-over ones inputs on first use)
            with _refs.JitRefScope(where, leaves, ref_args) as ref_scope:
                if ref_args:
                    xs = ref_scope.arguments(xs)
                if isinstance(in_tree, int):          # the fast path's flat arguments
                    dyn_args, dyn_kwargs = xs, {}
                else:
                    dyn_args, dyn_kwargs = tree_unflatten(in_tree, list(xs))
                it = iter(dyn_args)
                full = [args[i] if i in nums else next(it) for i in range(len(args))]
                kw = dict(kwargs)
                kw.update(dyn_kwargs)
                out_leaves, out_tree = tree_flatten(self.fun(*full, **kw))
                _refs.check_no_refs(out_leaves, where)
                out_store.append((out_tree, ref_scope))
                outs = [output_value(x, f"{where}: output {i}") for i, x in enumerate(out_leaves)]
                return outs + ref_scope.finish(len(outs))
        timed = monitoring.has_duration_listeners()
        started = time.perf_counter() if timed else 0.0
        with _name_stack.reset():   # the body's names are relative to the jit equation
            jaxpr, consts = trace_to_jaxpr(flat_fun, avals,
                                           self._arg_names(args, kwargs, nums),
                                           name=f"jit({self.name})")
        if timed:
            monitoring.record_event_duration_secs(
                "/jax/core/compile/jaxpr_trace_duration", time.perf_counter() - started,
                fun_name=getattr(self.fun, "__name__", self.name))
        if _config.enable_checks.value:
            core.typecheck_jaxpr(jaxpr)
        consts = [by_value(c) for c in consts]   # a compiled program's constants are its own
        entry = _Entry()
        entry.closed, entry.hoisted = closure_convert(jaxpr, consts)
        entry.out_tree, ref_scope = out_store[-1]
        entry.refs = ref_scope.plumbing
        entry.output_kind = _output_kind(entry.out_tree)
        entry.scalar_args = any(type(x) in _PY_SCALARS for x in leaves)
        entry.in_types = [type(x) for x in leaves]   # (fixed for Python scalars by the key)
        entry.cacheable = not entry.hoisted
        entry.weak_outputs = weak_output_indices(entry.closed)
        if entry.cacheable:
            started = time.perf_counter() if timed else 0.0
            comp = self._compiled(entry.closed)   # (checking code if traced by _call_checked)
            if timed:
                monitoring.record_event_duration_secs(
                    "/jax/core/compile/backend_compile_duration",
                    time.perf_counter() - started, fun_name=f"jit({self.name})")
            if _config.enable_checks.value:
                core.typecheck_jaxpr(comp.jaxpr)      # what the passes made of it
            entry.fn, entry.consts = comp.fn, comp.consts
            entry.may_alias = outputs_that_may_alias(comp.jaxpr)
            entry.run = _runner(entry) if entry.refs is None else _ref_runner(entry)
            self._cache.put(key, entry)
            if _config.log_compiles.value:
                log.warning("jit(%s): compiled %d equations to %d lines of %s code",
                            self.name, len(entry.closed.eqns), comp.source.count("\n"),
                            getattr(comp, "backend", "NumPy"))
        return entry

    def _compiled(self, closed):
        """The compiled code of ``closed`` on this function's backend (the NumPy
        backend's checking code while jax_debug_nans/jax_debug_infs is on)."""
        backend = self.backend or _config.jit_backend.value
        if backend == "numba" and not core._float_check_mode:
            from fungrad.interpreters import numba_backend
            return numba_backend.compiled(closed, self.name)
        return compiled_scalar_or_numpy(closed)

    def _avals(self, args, kwargs, nums, leaves):
        try:
            return [get_aval(x) for x in leaves]
        except OverflowError as err:
            self._raise_overflow(args, kwargs, nums, leaves, err)
        except TypeError as err:
            bad = next(i for i, x in enumerate(leaves) if not _is_array_like(x))
            name = self._arg_names(args, kwargs, nums)[bad]
            raise TypeError(
                f"jit({self.name}): {name} is a {type(leaves[bad]).__name__}, not an array: {err} "
                "If it is a setting, mark it static (static_argnums/static_argnames; for a "
                "method, static_argnums=0 makes a hashable self static); if it holds arrays, "
                "register its class as a pytree (fungrad.tree_util.register_pytree_node)."
            ) from None

    def _raise_overflow(self, args, kwargs, nums, leaves, err):
        bad = next((i for i, x in enumerate(leaves) if type(x) is int and _overflows(x)), None)
        name = "an argument" if bad is None else self._arg_names(args, kwargs, nums)[bad]
        raise OverflowError(f"jit({self.name}): {name}: {err}; pass it as a float, or as "
                            "an array of an explicit dtype") from None

    def _arg_names(self, args, kwargs, nums) -> list[str]:
        """Names of the flat arguments (for concretization errors)."""
        from fungrad.api import _leaf_names
        dyn_idx = [i for i in range(len(args)) if i not in nums]
        dyn = (tuple(args[i] for i in dyn_idx),
               {k: v for k, v in kwargs.items() if k not in self.static_argnames})
        return _leaf_names(self.fun, tree_flatten(dyn)[1], dyn_idx)

    def _explain_miss(self, key):
        last = self._cache.last_key
        if _config.no_tracing.value:
            raise RuntimeError(f"re-tracing function {self.name} for `jit` (arguments "
                               f"{key[1]}), but 'no_tracing' is set (jax_no_tracing); "
                               "call it with the shapes, dtypes and static values it "
                               "was compiled for, or leave no_tracing")
        if _config.log_compiles.value:    # jax_log_compiles: every trace, with its reason
            reason = "first call" if last is None else _describe_change(last, key)
            log.warning("jit(%s): tracing for arguments %s: %s", self.name, key[1], reason)
        elif _config.explain_cache_misses.value and last is not None:
            log.warning("jit(%s): TRACING CACHE MISS: %s", self.name,
                        _describe_change(last, key))
        elif log.isEnabledFor(logging.DEBUG) and last is not None:
            log.debug("jit(%s): cache miss: %s", self.name, _describe_change(last, key))
        self._cache.last_key = key

    def trace(self, *args, **kwargs) -> Traced:
        """The traced stage for these arguments (arrays, or ``ShapeDtypeStruct``s
        anywhere in their pytrees): ``.jaxpr``, ``.out_info``, ``.lower()``."""
        nums = self._split(args, kwargs)[3] if args else set()
        args, kwargs = _stand_ins(args, kwargs, nums, self.static_argnames)
        entry, _ = self._entry(args, kwargs)
        dyn_args, dyn_kwargs = self._split(args, kwargs)[:2]
        return Traced(_StageInfo(self, entry, tree_flatten((dyn_args, dyn_kwargs))[1]))

    def lower(self, *args, **kwargs) -> Lowered:
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """The outputs' shapes and dtypes (``ShapeDtypeStruct``s), without running."""
        return self.trace(*args, **kwargs).out_info


# primitives whose NumPy code may return its operand or a view of it
_VIEW_PRIMITIVES = frozenset({
    "broadcast_in_dim", "convert_element_type", "bitcast_convert_type", "reshape", "squeeze",
    "transpose", "slice", "rev", "real", "imag", "dynamic_slice", "gather", "pad", "select_n",
    "name", "stop_gradient", "pure_callback", "copy", "reduce_precision"})


def outputs_that_may_alias(jaxpr) -> tuple[int, ...]:
    """Indices of the outputs of ``jaxpr`` that may share memory with an input:
    the inputs themselves and what view-making (or higher-order) primitives
    compute from them.  Everything else is a fresh array."""
    maybe = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        # (the cheap test first: most equations read nothing that may alias)
        if not maybe.isdisjoint(eqn.inputs) and (
                eqn.primitive.name in _VIEW_PRIMITIVES or eqn.primitive.multiple_results
                or any(isinstance(p, ClosedJaxpr) or callable(p) for p in eqn.params.values())):
            maybe.update(eqn.outvars)
    return tuple(i for i, v in enumerate(jaxpr.outvars) if isinstance(v, core.Var) and v in maybe)


@contextlib.contextmanager
def gc_paused():
    """Tracing and compiling allocate objects (equations, variables, source
    lines) that all live until the end; the cyclic garbage collector's passes
    over them, every few thousand allocations, made a first call's cost grow
    quadratically with the program (3-4x of a 20,000-equation compile).  The
    collector is off meanwhile; what became garbage is reference-counted away,
    and cycles are collected once it is back on.

    What a long program leaves (its jaxprs and compiled code, millions of
    objects) lives as long as the function's cache entry: the first
    collection after the pause would scan all of it as young objects (a
    second per 500,000 equations), then again as middle-aged ones.  So when
    the pause allocated that much, everything is moved to the oldest
    generation at once (``gc.freeze`` then ``gc.unfreeze``: two list splices),
    which a generational collector does after scanning them twice; cycles
    among them are collected by the next full collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_count()[0] > _PROMOTE_AFTER:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


#: objects allocated during a paused compile beyond which they go to the
#: oldest generation at once (see ``gc_paused``)
_PROMOTE_AFTER = 200_000


def _overflows(x: int) -> bool:
    try:
        core.scalar_dtype(x)
    except OverflowError:
        return True
    return False


def _is_array_like(x) -> bool:
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def _hashable(value, what):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"jit: static {what} of type {type(value).__name__} is not hashable; "
                        "static arguments must be hashable (use a tuple instead of a list, "
                        "or pass arrays as regular, non-static arguments)") from None
    return value


def _describe_change(old, new) -> str:
    (t0, s0, st0), (t1, s1, st1) = old[:3], new[:3]
    if t0 != t1:
        return f"the argument structure changed from {t0} to {t1}"
    for i, (a, b) in enumerate(zip(s0, s1)):
        if a != b:
            return f"flat argument {i} changed from {a} to {b}"
    if st0 != st1:
        return f"static arguments changed from {st0} to {st1}"
    if old[3:] != new[3:]:
        return "jax_debug_nans/jax_debug_infs changed (the checking code is traced apart)"
    return "first call with this signature"


def _backend_choice(backend):
    """The backend ``jit(..., backend=)`` names: None (or JAX's platform name
    "cpu") follows the ``fungrad_jit_backend`` option; "numpy" or "numba"
    (ImportError naming the extra if numba is missing); ValueError otherwise."""
    if backend is None or (type(backend) is str and backend == "cpu"):
        return None
    backend = _config.parse_jit_backend(backend, "jit: backend")
    if backend == "numba":
        _config.require_numba("jit(backend='numba')")
    return backend


# Whether a call may take the cache-hit path of __call__: neither jax_disable_jit
# nor a float check is on (one module global read instead of two options;
# core's hook on the float-check options, registered earlier, runs first).
_plain_calls = True
_EVAL_TRACE = core.EVAL_TRACE


def _update_plain_calls(_=None):
    global _plain_calls
    _plain_calls = not _disable_jit.value and not core._float_checks


for _option in (_config.disable_jit, _config.debug_nans, _config.debug_infs):
    _option.hooks.append(_update_plain_calls)
_update_plain_calls()

# a new default backend: what is cached was compiled for the old one
_config.jit_backend.hooks.append(lambda value: _clear_caches())


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), **kwargs):
    """Compile ``fun`` to NumPy code once per argument signature (see module doc).

    ``static_argnums``/``static_argnames``: arguments that are Python values
    the program depends on (hashable; one compilation per value); each is
    completed from the other through ``fun``'s signature.  Without ``fun``,
    returns a decorator (``@jit(static_argnames="n")``).  ``donate_argnums``,
    ``donate_argnames``, ``keep_unused``, ``inline`` and ``device``
    are accepted and have no effect: NumPy has no device buffers to donate,
    unused arguments cost nothing, and nested jitted calls are always inlined
    into the enclosing generated code.

    ``backend``: ``"numpy"`` (NumPy source), ``"numba"`` (the optional compiled
    backend: ``pip install "fungrad[numba]"``), or None/``"cpu"`` for the
    ``fungrad_jit_backend`` option's choice (environment: FUNGRAD_JIT_BACKEND).

    Set ``logging.getLogger("fungrad.jit").setLevel(logging.DEBUG)`` to be told
    why a call missed the cache (like JAX's explain_cache_misses).
    """
    unknown = set(kwargs) - {"donate_argnums", "donate_argnames", "inline", "keep_unused",
                             "device", "backend", "in_shardings", "out_shardings"}
    if unknown:
        raise TypeError(f"jit got unexpected keyword arguments {sorted(unknown)}")
    backend = kwargs.get("backend")
    _backend_choice(backend)              # bad names fail here, not at the first call
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             **kwargs)
    in_shardings, out_shardings = kwargs.get("in_shardings"), kwargs.get("out_shardings")
    if in_shardings is not None or out_shardings is not None:
        return JittedWithShardings(fun, static_argnums, static_argnames, in_shardings,
                                   out_shardings, backend)
    return Jitted(fun, static_argnums, static_argnames, backend)


# ----------------------------------------------------------------------------
# in_shardings / out_shardings
# ----------------------------------------------------------------------------
# The checks and placements need fungrad.sharding, a library above this module;
# it installs them here when imported (as fungrad.numpy installs the array
# methods on core's classes).

#: an object with ``check_inputs(name, in_shardings, args)``,
#: ``place_outputs(name, out_shardings, outputs)`` and ``partitioned_runner``
#: (fungrad/distributed/partition.py), set by fungrad.sharding
sharding_support = None


class JittedWithShardings(Jitted):
    """``jit(f, in_shardings=..., out_shardings=...)``: the arguments are checked
    against ``in_shardings`` (tree prefix, mesh axes dividing the dimensions),
    the program runs as any jitted one (arguments split along one mesh axis:
    data-parallel on the mesh, see ``_partitioned``; other shardings gathered
    into this process, logged once), and the outputs are placed by ``out_shardings``
    (blocks on the mesh's devices; on one device, the array itself)."""

    def __init__(self, fun, static_argnums, static_argnames, in_shardings, out_shardings,
                 backend=None):
        super().__init__(fun, static_argnums, static_argnames, backend)
        self.in_shardings, self.out_shardings = in_shardings, out_shardings

    def __call__(self, *args, **kwargs):
        if self.in_shardings is not None:
            dyn_args = self._split(args, kwargs)[0]
            sharding_support.check_inputs(self.name, self.in_shardings, dyn_args)
        out = super().__call__(*args, **kwargs)
        if self.out_shardings is not None and core._tls.trace is core.EVAL_TRACE:
            out = sharding_support.place_outputs(self.name, self.out_shardings, out)
        return out


def _partitioned(jitted, entry, leaves):
    """The outputs of ``entry``'s program run data-parallel over the mesh its
    sharded arguments share (``distributed/partition.py``, reached through
    ``sharding_support``: it is a library above this module), or None when that
    is outside what is partitioned automatically (then it runs gathered)."""
    cache = getattr(entry, "partition_runners", None)
    if cache is None:
        cache = entry.partition_runners = {}
    runner = sharding_support.partitioned_runner(entry.closed, len(entry.hoisted), leaves,
                                                 cache)
    if runner is None:
        return None
    if cache.get("replicated") and not getattr(jitted, "_replicated_logged", False):
        jitted._replicated_logged = True
        log.warning("jit(%s): runs data-parallel on the mesh, but these operations read a "
                    "split value along the split dimension and run on the whole "
                    "(all-gathered) value on every device: %s", jitted.name,
                    "; ".join(cache["replicated"]))
    return list(runner(*entry.hoisted, *leaves))


def _log_gather_once(jitted, entry, leaves):
    """Sharded arguments that the program reads outside a ``shard_map`` are
    gathered into this process and computed here: say so once per function."""
    if getattr(jitted, "_gather_logged", False):
        return
    read = _read_outside_shard_map(entry.closed.jaxpr)
    invars = entry.closed.jaxpr.invars[len(entry.hoisted):]
    spread = [x for x, v in zip(leaves, invars) if v in read
              and type(x) in core._global_array_types and len(x.devices()) > 1]
    if spread:
        jitted._gather_logged = True
        log.warning("jit(%s): %d argument(s) sharded over several devices are gathered into "
                    "this process and computed here (correct, not parallel: %s; shard_map "
                    "says exactly what runs on the workers)", jitted.name, len(spread),
                    _why_not_partitioned(entry))


def _why_not_partitioned(entry) -> str:
    reason = (getattr(entry, "partition_runners", None) or {}).get("reason")
    return (f"automatic partitioning stops at {reason}" if reason else
            "the arguments are not split along one mesh axis, which is what fungrad "
            "partitions automatically")


def _read_outside_shard_map(jaxpr) -> set:
    """The variables some equation other than a ``shard_map`` reads (or outputs)."""
    read = {a for eqn in jaxpr.eqns if eqn.primitive.name != "shard_map"
            for a in eqn.inputs if isinstance(a, core.Var)}
    return read | {v for v in jaxpr.outvars if isinstance(v, core.Var)}
