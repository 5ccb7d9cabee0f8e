"""Eager reverse mode: each primitive application linearized onto a tape.

``vjp(f, x)`` on concrete arrays (the everyday ``grad(f)(x)``) does not need
a jaxpr of the whole function.  ``TapeTrace`` linearizes one primitive
application at a time: it runs the primal part now and appends the linear
part (how the output tangents depend on the input tangents) to a tape; the
pullback walks the tape backwards once.  The rules are the same JVP and
transpose rules as everywhere (no hand-written VJPs): for a primitive, a
pattern of differentiated inputs and the input types, the linearization is
derived once from the JVP rule and cached, as compiled NumPy code::

    prim(x, y)  --ad.jvp_jaxpr-->  (x, y, tx, ty) -> (out, t_out)
                --partial_eval-->  forward:  (x, y) -> (out, residuals)          compiled
                                   linear:   (residuals, tx, ty) -> t_out
                --transpose--->    backward: (residuals, ct_out) -> (ct_x, ct_y)  compiled

so a primitive under eager ``grad`` costs a cache lookup, one call of the
forward code and, in the backward pass, one call of the backward code.

Where the cached path does not apply, a primitive is linearized by the
general machinery instead (``ad.linearize_flat`` on that one application,
whose linear jaxpr the backward pass transposes): higher-order primitives
(their params carry jaxprs, often freshly staged, or Python callables such as
custom rules), unhashable params, and rules that need concrete values.  And
``vjp`` itself uses the general path (``ad.linearize_flat`` over the whole
function) whenever it is called under another transformation (``jit``,
``vmap``, an outer ``grad``...), so every composition keeps working: this is
an optimisation of the eager case only (``vjp_eager`` below is called by
``api.vjp`` only when the current trace is the evaluation trace).

The backward pass runs the compiled code when the cotangents are concrete
and nothing is being traced; under a transformation (``vmap`` of the
pullback in ``jacrev``, ``jit`` of it) it evaluates the same transposed
jaxprs through ``bind``, so they are traced like any other function.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fungrad import core
from fungrad.core import ClosedJaxpr, Tracer, eval_jaxpr, get_aval, new_trace_context
from fungrad.interpreters import ad
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_float, tangent_aval
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import partial_eval_jaxpr, trace_closed

__all__ = ["TapeTrace", "TapeTracer", "vjp_eager"]


class TapeTracer(Tracer):
    """A concrete primal value whose tangent is node ``node`` of the tape."""
    __slots__ = ("primal", "node", "_aval")

    def __init__(self, trace, primal, node, aval):
        self._trace = trace
        self.primal = primal
        self.node = node
        self._aval = aval

    @property
    def aval(self):
        return self._aval

    def _concrete_value(self):
        return np.asarray(self.primal)


class TapeTrace(core.Trace):
    """Linearizes each primitive application onto ``self.entries``; its parent
    is the evaluation trace (see the module docstring)."""
    __slots__ = ("node_avals", "entries")
    kind = "grad"

    def __init__(self, parent):
        super().__init__(parent)
        self.node_avals: list = []       # node id -> tangent aval
        self.entries: list = []          # (linearization, residuals, in_nodes, out_nodes)

    def new_node(self, aval) -> int:
        self.node_avals.append(aval)
        return len(self.node_avals) - 1

    def input(self, x):
        """``x`` as an input of the differentiated function (a node if it is float)."""
        aval = get_aval(x)
        if not is_float(aval.dtype):
            return x
        return TapeTracer(self, x, self.new_node(tangent_aval(aval)), aval)

    def process_primitive(self, prim, args, params):
        primals, nodes = [], []
        for a in args:
            if type(a) is TapeTracer and a._trace is self:
                primals.append(a.primal)
                nodes.append(a.node)
            else:
                if isinstance(a, Tracer):
                    self.check_foreign(a)
                primals.append(a)
                nodes.append(None)
        if all(n is None for n in nodes):
            return core.bind_on(self.parent, prim, primals, params)
        lin = _cached_linearization(prim, params, primals, nodes)
        if lin is None:
            outs, entry = _linearize_generally(self.parent, prim, params, primals, nodes)
        else:
            outs, entry = lin.apply(primals, nodes)
        out_nodes = [self.new_node(a) if nz else None
                     for a, nz in zip(entry[3], entry[4])]
        self.entries.append((entry[0], entry[1], entry[2], out_nodes))
        wrapped = [o if n is None else TapeTracer(self, o, n, get_aval(o))
                   for o, n in zip(outs, out_nodes)]
        return wrapped if prim.multiple_results else wrapped[0]


# ----------------------------------------------------------------------------
# Linearizations: cached and compiled per (primitive, params, types, pattern)
# ----------------------------------------------------------------------------

class _Linearization:
    """The linearization of one primitive at one signature (module docstring)."""
    __slots__ = ("forward", "backward", "num_out", "out_avals", "out_nonzeros", "in_nonzeros")

    def __init__(self, forward, backward, num_out, out_avals, out_nonzeros, in_nonzeros):
        self.forward, self.backward = forward, backward        # ClosedJaxprs
        self.num_out, self.out_avals = num_out, out_avals
        self.out_nonzeros, self.in_nonzeros = out_nonzeros, in_nonzeros

    def apply(self, primals, nodes):
        comp = compiled(self.forward)
        outs = comp.fn(*comp.consts, *primals)
        residuals = outs[self.num_out:]
        in_nodes = [n for n in nodes if n is not None]
        return outs[:self.num_out], (self, residuals, in_nodes, self.out_avals,
                                     self.out_nonzeros)

    def transpose(self, residuals, cts):
        if core.current_trace() is core.EVAL_TRACE and not any(isinstance(c, Tracer) for c in cts):
            comp = compiled(self.backward)
            return list(comp.fn(*comp.consts, *residuals, *cts))
        return eval_jaxpr(self.backward.jaxpr, self.backward.consts, *residuals, *cts)


_CACHE: dict = {}
_CACHE_LIMIT = 4096
_UNCACHEABLE = object()


def _cached_linearization(prim, params, primals, nodes):
    """The cached linearization for this application, or None (general path)."""
    try:
        key = (prim, tuple(n is not None for n in nodes), tuple(map(get_aval, primals)),
               tuple(sorted(params.items())) if params else ())
        hit = _CACHE.get(key)
    except TypeError:                   # unhashable params
        return None
    if hit is None:
        hit = _derive(prim, params, [get_aval(p) for p in primals], key[1])
        if len(_CACHE) >= _CACHE_LIMIT:  # bounded: drop the oldest entry
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = hit
    return None if hit is _UNCACHEABLE else hit


def _has_sub_programs(params) -> bool:
    return any(isinstance(v, ClosedJaxpr) or callable(v) and not isinstance(v, type)
               or isinstance(v, tuple) and any(isinstance(e, ClosedJaxpr) for e in v)
               for v in params.values())


def _derive(prim, params, avals, nonzeros):
    """Stage ``prim``'s JVP at these types, split it into the primal part and the
    linear part, transpose the latter (module docstring); _UNCACHEABLE when
    the general path must be used."""
    if _has_sub_programs(params):
        return _UNCACHEABLE
    with new_trace_context(core.EVAL_TRACE, finish=False):
        try:
            return _derive_staged(prim, params, avals, nonzeros)
        except Exception:  # noqa: BLE001
            # a rule that needs concrete values (or bad input, which the general
            # path, run on the concrete values, reports as it should)
            return _UNCACHEABLE


def _derive_staged(prim, params, avals, nonzeros):
    def one(*xs):
        out = prim.bind(*xs, **params)
        return list(out) if prim.multiple_results else [out]
    closed = trace_closed(one, avals)
    n_in, n_out = len(avals), len(closed.out_avals)
    jvp, out_nonzeros = ad.jvp_jaxpr(closed, nonzeros)
    n_t = sum(nonzeros)
    forward, linear, out_unknowns, num_res = partial_eval_jaxpr(
        jvp, [False] * n_in + [True] * n_t)
    if list(out_unknowns) != [False] * n_out + [True] * sum(out_nonzeros):
        return _UNCACHEABLE          # a tangent that does not depend on the tangents
    backward = ad.transpose_jaxpr(linear, (False,) * num_res + (True,) * n_t)
    out_avals = [tangent_aval(a) for a in closed.out_avals]
    return _Linearization(forward, backward, n_out, out_avals, tuple(out_nonzeros), nonzeros)


class _GeneralLinearization:
    """A primitive application linearized by the general machinery: its linear
    jaxpr (residuals as consts), transposed by the backward pass."""
    __slots__ = ("jaxpr", "out_avals", "out_nonzeros")

    def __init__(self, jaxpr, out_avals, out_nonzeros):
        self.jaxpr, self.out_avals, self.out_nonzeros = jaxpr, out_avals, out_nonzeros

    def transpose(self, residuals, cts):
        cts = ad.tangents_from(self.out_nonzeros, cts, self.out_avals)
        return ad.backward_pass(self.jaxpr, residuals, cts)


def _linearize_generally(parent, prim, params, primals, nodes):
    def one(*xs):
        out = prim.bind(*xs, **params)
        return list(out) if prim.multiple_results else [out]
    nonzeros = [n is not None for n in nodes]
    with core.set_current_trace(parent):
        outs, jaxpr, residuals = ad.linearize_flat(one, primals, nonzeros)
    out_avals = [tangent_aval(get_aval(o)) for o in outs]
    out_nonzeros = [is_float(a.dtype) for a in out_avals]   # the float outputs' tangents
    lin = _GeneralLinearization(jaxpr, out_avals, out_nonzeros)
    in_nodes = [n for n in nodes if n is not None]
    return outs, (lin, residuals, in_nodes, out_avals, out_nonzeros)


# ----------------------------------------------------------------------------
# vjp
# ----------------------------------------------------------------------------

def vjp_eager(f: Callable, primals: Sequence):
    """``vjp`` of flat ``f`` on concrete ``primals``: ``(outs, pullback)`` with
    ``pullback(cts) -> cts of the primals`` (Zero where there is none)."""
    trace = TapeTrace(core.current_trace())
    with new_trace_context(trace):
        ins = [trace.input(p) for p in primals]
        outs = f(*ins)
        out_nodes = [o.node if type(o) is TapeTracer and o._trace is trace else None
                     for o in outs]
        outs = [o.primal if type(o) is TapeTracer and o._trace is trace else o for o in outs]
    for o in outs:
        if isinstance(o, Tracer):
            trace.check_foreign(o)
    in_nodes = [x.node if type(x) is TapeTracer else None for x in ins]
    in_avals = [tangent_aval(get_aval(p)) for p in primals]
    node_avals, entries = trace.node_avals, trace.entries

    def pullback(cts):
        return _backward(entries, node_avals, out_nodes, cts, in_nodes, in_avals)
    return outs, pullback


def _backward(entries, node_avals, out_nodes, cts, in_nodes, in_avals) -> list:
    """Walk the tape backwards from the output cotangents ``cts``."""
    ct: list[Any] = [None] * len(node_avals)
    for n, c in zip(out_nodes, cts):
        if n is not None:
            _accumulate(ct, n, c)
    for lin, residuals, ins, outs in reversed(entries):
        out_cts = [None if n is None else ct[n] for n in outs]
        if all(c is None for c in out_cts):
            continue
        for n in outs:        # each node is produced once: its cotangent is complete
            if n is not None:
                ct[n] = None
        out_cts = [instantiate_zeros(Zero(node_avals[n])) if c is None else c
                   for n, c in zip(outs, out_cts) if n is not None]
        for n, c in zip(ins, lin.transpose(residuals, out_cts)):
            _accumulate(ct, n, c)
    return [Zero(a) if n is None or ct[n] is None else ct[n] for n, a in zip(in_nodes, in_avals)]


def _accumulate(ct: list, n: int, c):
    """Add cotangent ``c`` into node ``n`` (NumPy directly for concrete arrays)."""
    if c is None or type(c) is Zero:
        return
    old = ct[n]
    if old is None:
        ct[n] = c
    elif isinstance(old, Tracer) or isinstance(c, Tracer):
        ct[n] = ad.add_tangents(old, c)
    else:
        ct[n] = np.add(old, c)
