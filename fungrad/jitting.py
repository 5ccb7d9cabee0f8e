"""``jit``: stage a function into a jaxpr once per abstract signature, lower it to
NumPy source (``interpreters/codegen.py``), compile it, and reuse it.

A jitted function binds ``jit_p`` (``fungrad/lax/control_flow/call.py``), a
higher-order primitive whose ``jaxpr`` param is the staged function, so every
transformation composes with it.  This module is the user-facing wrapper:
argument flattening, static arguments, the per-signature cache (a cache hit,
outside any transformation, is a dict lookup and a call of the compiled
function), ``lower()`` and the cache-miss log.

Side effects in the jitted Python function (print, appending to a list) run
only while tracing, i.e. once per new signature, as in JAX.
"""
from __future__ import annotations

import functools
import logging
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from fungrad import _config, core
from fungrad.core import ClosedJaxpr, Tracer, get_aval, wrap_array
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import as_value, closure_convert, trace_to_jaxpr
from fungrad.lax.control_flow.call import jit_p
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["jit", "Lowered"]

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
    if t is np.ndarray or t is core.Array:
        return (x.shape, x.dtype)
    if t in _PY_SCALARS:
        return t              # weakly typed, as JAX
    if isinstance(x, Tracer):
        return (x.aval.shape, x.aval.dtype, "traced")
    return get_aval(x).shape, get_aval(x).dtype


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
    __slots__ = ("closed", "out_tree", "fn", "consts", "cacheable", "hoisted", "output_kind",
                 "scalar_args")


class Lowered:
    """What ``jitted.lower(*args)`` returns: the staged jaxpr and the generated code."""

    def __init__(self, closed: ClosedJaxpr, source: str):
        self.jaxpr = closed
        self._source = source

    def as_text(self) -> str:
        """The jaxpr, as ``make_jaxpr`` prints it."""
        return str(self.jaxpr)

    def source(self) -> str:
        """The generated Python/NumPy source of the compiled function."""
        return self._source

    def __repr__(self):
        return self._source


# every Jitted, so that fungrad.clear_caches() (and changing jax_enable_x64 or the
# promotion options, which change what tracing produces) can empty their caches
_instances: weakref.WeakSet = weakref.WeakSet()
_disable_jit = _config.disable_jit
_config.on_tracing_change.append(lambda: [j._cache.clear() for j in list(_instances)])


class Jitted:
    """A jit-compiled function; call it like the original."""

    def __init__(self, fun, static_argnums=(), static_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.name = getattr(fun, "__name__", "fn").replace("<", "").replace(">", "") or "fn"
        self._cache: dict = {}
        self._last_key = None
        _instances.add(self)

    def _split(self, args, kwargs):
        nums = {n % len(args) if -len(args) <= n < len(args) else n for n in self.static_argnums}
        statics = []
        for n in sorted(nums):
            if n >= len(args):
                raise ValueError(f"jit: static_argnums {n} is out of range for a call with "
                                 f"{len(args)} positional arguments")
            statics.append((n, _hashable(args[n], f"positional argument {n}")))
        statics += [(k, _hashable(kwargs[k], f"argument {k!r}"))
                    for k in self.static_argnames if k in kwargs]
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return dyn_args, dyn_kwargs, tuple(statics), nums

    def _entry(self, args, kwargs):
        """(cache entry, flat arguments) for a call, tracing on a cache miss."""
        if not kwargs and not self.static_argnums and all(type(a) in _LEAF_TYPES for a in args):
            # fast path: positional array/scalar arguments, no pytrees, no statics
            leaves, in_tree, statics, nums = args, len(args), (), ()
        else:
            dyn_args, dyn_kwargs, statics, nums = self._split(args, kwargs)
            leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        key = (in_tree, tuple(map(_signature, leaves)), statics)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(args, kwargs, nums, leaves, key)
        return entry, leaves

    def __call__(self, *args, **kwargs):
        if _disable_jit.value:            # jax_disable_jit: the Python function, op by op
            return self.fun(*args, **kwargs)
        entry, leaves = self._entry(args, kwargs)
        if core._tls.trace is core.EVAL_TRACE and entry.cacheable:
            if entry.scalar_args:     # Python scalars -> NumPy values for the code
                leaves = [_SCALAR_TO_NUMPY[type(x)](x) if type(x) in _SCALAR_TO_NUMPY else x
                          for x in leaves]
            outs = entry.fn(*entry.consts, *leaves)
            if core._float_checks:        # jax_debug_nans / jax_debug_infs
                core.check_jit_outputs(self, args, kwargs, outs)
            kind = entry.output_kind
            if kind == "single":
                return wrap_array(outs[0])
            if kind == "tuple":
                return tuple(map(wrap_array, outs))
            return tree_unflatten(entry.out_tree, [wrap_array(o) for o in outs])
        outs = jit_p.bind(*entry.hoisted, *leaves, jaxpr=entry.closed, name=self.name)
        return tree_unflatten(entry.out_tree, outs)

    def _trace(self, args, kwargs, nums, leaves, key) -> _Entry:
        self._explain_miss(key)
        avals = [get_aval(x) for x in leaves]
        out_store = []
        in_tree = key[0]

        def flat_fun(*xs):
            if isinstance(in_tree, int):          # the fast path's flat arguments
                dyn_args, dyn_kwargs = xs, {}
            else:
                dyn_args, dyn_kwargs = tree_unflatten(in_tree, list(xs))
            it = iter(dyn_args)
            full = [args[i] if i in nums else next(it) for i in range(len(args))]
            kw = dict(kwargs)
            kw.update(dyn_kwargs)
            out_leaves, out_tree = tree_flatten(self.fun(*full, **kw))
            out_store.append(out_tree)
            return [as_value(x) for x in out_leaves]
        jaxpr, consts = trace_to_jaxpr(flat_fun, avals, self._arg_names(args, kwargs, nums))
        entry = _Entry()
        entry.closed, entry.hoisted = closure_convert(jaxpr, consts)
        entry.out_tree = out_store[-1]
        entry.output_kind = _output_kind(entry.out_tree)
        entry.scalar_args = any(type(x) in _PY_SCALARS for x in leaves)
        entry.cacheable = not entry.hoisted
        if entry.cacheable:
            comp = compiled(entry.closed)
            entry.fn, entry.consts = comp.fn, comp.consts
            self._cache[key] = entry
            if _config.log_compiles.value:
                log.warning("jit(%s): compiled %d equations to %d lines of NumPy code",
                            self.name, len(entry.closed.eqns), comp.source.count("\n"))
        return entry

    def _arg_names(self, args, kwargs, nums) -> list[str]:
        """Names of the flat arguments (for concretization errors)."""
        from fungrad.api import _leaf_names
        dyn_idx = [i for i in range(len(args)) if i not in nums]
        dyn = (tuple(args[i] for i in dyn_idx),
               {k: v for k, v in kwargs.items() if k not in self.static_argnames})
        return _leaf_names(self.fun, tree_flatten(dyn)[1], dyn_idx)

    def _explain_miss(self, key):
        if _config.log_compiles.value:    # jax_log_compiles: every trace, with its reason
            reason = ("first call" if self._last_key is None
                      else _describe_change(self._last_key, key))
            log.warning("jit(%s): tracing for arguments %s: %s", self.name, key[1], reason)
        elif log.isEnabledFor(logging.DEBUG) and self._last_key is not None:
            log.debug("jit(%s): cache miss: %s", self.name, _describe_change(self._last_key, key))
        self._last_key = key

    def lower(self, *args, **kwargs) -> Lowered:
        entry, _ = self._entry(args, kwargs)
        return Lowered(entry.closed, compiled(entry.closed).source)


def _hashable(value, what):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"jit: static {what} of type {type(value).__name__} is not hashable; "
                        "static arguments must be hashable (use a tuple instead of a list, "
                        "or pass arrays as regular, non-static arguments)") from None
    return value


def _describe_change(old, new) -> str:
    (t0, s0, st0), (t1, s1, st1) = old, new
    if t0 != t1:
        return f"the argument structure changed from {t0} to {t1}"
    for i, (a, b) in enumerate(zip(s0, s1)):
        if a != b:
            return f"flat argument {i} changed from {a} to {b}"
    if st0 != st1:
        return f"static arguments changed from {st0} to {st1}"
    return "first call with this signature"


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), **kwargs):
    """Compile ``fun`` to NumPy code once per argument signature (see module doc).

    Set ``logging.getLogger("fungrad.jit").setLevel(logging.DEBUG)`` to be told
    why a call missed the cache (like JAX's explain_cache_misses).
    """
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames)
    unknown = set(kwargs) - {"donate_argnums", "donate_argnames", "inline", "keep_unused",
                             "device", "backend"}
    if unknown:
        raise TypeError(f"jit got unexpected keyword arguments {sorted(unknown)}")
    return Jitted(fun, static_argnums, static_argnames)
