"""``jit``: stage a function into a jaxpr once per abstract signature, lower it to
NumPy source (``interpreters/codegen.py``), compile it, and reuse it.

``jit`` is a higher-order primitive, ``jit_p``, whose ``jaxpr`` param is the
staged function, so every transformation composes with it:

* eval (no transformation, the common case): a cache hit is a dict lookup
  and a call of the compiled function;
* jvp: the jaxpr's JVP is staged once (per pattern of nonzero tangents) and
  bound as another ``jit_p``;
* linearize / vjp: a ``partial_eval`` rule splits the call into a known
  ``jit_p`` (evaluated now) and an unknown one (staged into the linear jaxpr);
* transpose: the backward pass over the inner jaxpr is itself staged once
  and bound as a ``jit_p``;
* vmap: the batched jaxpr is staged once per batching pattern;
* lowering: nested calls are inlined into the enclosing generated code.

All derived jaxprs are cached on the identity of the jaxpr they come from.
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
from fungrad.core import (ClosedJaxpr, Jaxpr, Primitive, ShapedArray, StagingTrace,
                          StagingTracer, Tracer, bind_on, eval_jaxpr, get_aval, wrap_array)
from fungrad.interpreters import ad, batching, codegen
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.partial_eval import partial_eval_jaxpr
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["jit", "jit_p", "Lowered"]

log = logging.getLogger("fungrad.jit")

# ----------------------------------------------------------------------------
# Caches of compiled code and derived jaxprs, keyed on jaxpr identity
# ----------------------------------------------------------------------------

_derived: dict[tuple, tuple[ClosedJaxpr, Any]] = {}


def _cached(kind: str, closed: ClosedJaxpr, extra, build: Callable):
    key = (kind, id(closed), extra)
    hit = _derived.get(key)
    if hit is None or hit[0] is not closed:
        hit = _derived[key] = (closed, build())   # keep ``closed`` alive: ids stay unique
    return hit[1]


def compiled(closed: ClosedJaxpr) -> codegen.CompiledFunction:
    """The compiled code of ``closed``; call it as ``fn(*comp.consts, *args)``."""
    from fungrad.interpreters.passes import optimize
    return _cached("compile", closed, None, lambda: codegen.compile_closed(optimize(closed)))


def _stage(flat_fun: Callable, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    jaxpr, consts = core.trace_to_jaxpr(flat_fun, avals)
    return _closure_convert(jaxpr, consts)[0]


def stage_pytree(fn: Callable, in_tree, avals: Sequence[ShapedArray]):
    """Trace ``fn`` (a function of one pytree with structure ``in_tree``) to
    ``(closed jaxpr, hoisted values, output tree)``: values of enclosing
    transformations it closes over become explicit leading inputs (hoisted)."""
    out_tree = []

    def flat(*xs):
        leaves, tree = tree_flatten(fn(tree_unflatten(in_tree, list(xs))))
        out_tree.append(tree)
        return [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
    jaxpr, consts = core.trace_to_jaxpr(flat, list(avals))
    closed, hoisted = _closure_convert(jaxpr, consts)
    return closed, hoisted, out_tree[0]


def _closure_convert(jaxpr: Jaxpr, consts) -> tuple[ClosedJaxpr, list]:
    """Constants that are tracers of enclosing transformations become leading
    inputs (returned as the second result); concrete constants stay constants."""
    traced = [isinstance(c, Tracer) for c in consts]
    if not any(traced):
        return ClosedJaxpr(jaxpr, consts), []
    keep = [v for v, t in zip(jaxpr.constvars, traced) if not t]
    hoist = [v for v, t in zip(jaxpr.constvars, traced) if t]
    new = Jaxpr(keep, hoist + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return (ClosedJaxpr(new, [c for c, t in zip(consts, traced) if not t]),
            [c for c, t in zip(consts, traced) if t])


# ----------------------------------------------------------------------------
# The primitive and its rules
# ----------------------------------------------------------------------------

jit_p = Primitive("jit", multiple_results=True)
jit_p.inline = True          # codegen inlines nested calls


def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str):
    comp = compiled(jaxpr)
    return list(comp.fn(*comp.consts, *args))


jit_p.def_impl(_jit_impl)
jit_p.def_abstract_eval(lambda *avals, jaxpr, name: list(jaxpr.out_avals))
jit_p.lower = None           # inlined by codegen, never called


def _jit_jvp(primals, tangents, jaxpr, name):
    nonzero = tuple(type(t) is not Zero for t in tangents)
    jvp_jaxpr, out_nonzero = _cached("jvp", jaxpr, nonzero, lambda: _jvp_jaxpr(jaxpr, nonzero))
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, jaxpr=jvp_jaxpr, name=f"jvp_{name}")
    n = len(jaxpr.out_avals)
    it = iter(outs[n:])
    t_out = [next(it) if nz else Zero(ad.tangent_aval(a))
             for nz, a in zip(out_nonzero, jaxpr.out_avals)]
    return outs[:n], t_out


def _jvp_jaxpr(closed: ClosedJaxpr, nonzero):
    n = len(closed.in_avals)
    out_nonzero = []

    def jvp_fun(*args):
        primals, rest = list(args[:n]), iter(args[n:])
        tangents = [next(rest) if nz else Zero(ad.tangent_aval(a))
                    for nz, a in zip(nonzero, closed.in_avals)]
        outs, out_ts = ad.jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                   primals, tangents)
        out_nonzero[:] = [type(t) is not Zero for t in out_ts]
        return outs + [t for t in out_ts if type(t) is not Zero]
    t_avals = [ad.tangent_aval(a) for a, nz in zip(closed.in_avals, nonzero) if nz]
    return _stage(jvp_fun, list(closed.in_avals) + t_avals), tuple(out_nonzero)


jit_p.jvp = _jit_jvp


def _jit_partial_eval(trace: StagingTrace, args, jaxpr, name):
    """Split a call with some unknown inputs into a known call evaluated now and
    an unknown call staged into ``trace`` (which takes residuals + unknowns)."""
    unknowns = tuple(isinstance(a, StagingTracer) and a._trace is trace for a in args)
    known, unknown, out_unknowns, num_res = _cached(
        "pe", jaxpr, unknowns, lambda: partial_eval_jaxpr(jaxpr, list(unknowns)))
    known_args = [a for a, u in zip(args, unknowns) if not u]
    known_outs = bind_on(trace.parent, jit_p, known_args, dict(jaxpr=known, name=f"known_{name}"))
    n_known = len(known_outs) - num_res
    residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
    unknown_args = [a for a, u in zip(args, unknowns) if u]
    staged = trace.stage(jit_p, list(residuals) + unknown_args,
                         dict(jaxpr=unknown, name=f"unknown_{name}"))
    k, s = iter(known_outs), iter(staged)
    return [next(s) if u else next(k) for u in out_unknowns]


jit_p.partial_eval = _jit_partial_eval


def _jit_transpose(cts, *args, jaxpr, name):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    t_jaxpr = _cached("transpose", jaxpr, linear, lambda: _transpose_jaxpr(jaxpr, linear))
    residuals = [a for a in args if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate_zeros(c) for c in cts]
    outs = iter(jit_p.bind(*residuals, *cts, jaxpr=t_jaxpr, name=f"transpose_{name}"))
    return [next(outs) if lin else None for lin in linear]


def _transpose_jaxpr(closed: ClosedJaxpr, linear):
    jaxpr = closed.jaxpr
    nonlin_vars = [v for v, lin in zip(jaxpr.invars, linear) if not lin]
    lin_vars = [v for v, lin in zip(jaxpr.invars, linear) if lin]
    as_linear = Jaxpr(jaxpr.constvars + nonlin_vars, lin_vars, jaxpr.eqns, jaxpr.outvars)
    n_res = len(nonlin_vars)

    def transposed(*args):
        res, cts = args[:n_res], args[n_res:]
        cts_in = ad.backward_pass(as_linear, list(closed.consts) + list(res), list(cts))
        return [ad.instantiate_zeros(c) for c in cts_in]
    avals = [v.aval for v in nonlin_vars] + [ad.tangent_aval(a) for a in closed.out_avals]
    return _stage(transposed, avals)


jit_p.transpose = _jit_transpose
jit_p.linear = True


def _jit_batch(axis_size, vals, dims, jaxpr, name):
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    in_dims = tuple(None if d is None else 0 for d in dims)
    b_jaxpr = _cached("batch", jaxpr, (in_dims, axis_size),
                      lambda: _batch_jaxpr(jaxpr, in_dims, axis_size))
    outs = jit_p.bind(*vals, jaxpr=b_jaxpr, name=f"vmap_{name}")
    return outs, [0] * len(outs)


def _batch_jaxpr(closed: ClosedJaxpr, in_dims, axis_size):
    n_out = len(closed.out_avals)

    def batched(*args):
        return batching.vmap_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                  args, in_dims, axis_size, [0] * n_out)
    avals = [a if d is None else ShapedArray((axis_size,) + a.shape, a.dtype)
             for a, d in zip(closed.in_avals, in_dims)]
    return _stage(batched, avals)


jit_p.batch = _jit_batch


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
_config.on_tracing_change.append(
    lambda: (_derived.clear(), [j._cache.clear() for j in list(_instances)]))


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
            return [x if isinstance(x, Tracer) else np.asarray(x) for x in out_leaves]
        jaxpr, consts = core.trace_to_jaxpr(flat_fun, avals, self._arg_names(args, kwargs, nums))
        entry = _Entry()
        entry.closed, entry.hoisted = _closure_convert(jaxpr, consts)
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
