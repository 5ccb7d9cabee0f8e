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

from fungrad import _config, core
from fungrad.core import ClosedJaxpr, Tracer, Var, eval_jaxpr, get_aval, new_trace_context
from fungrad.interpreters import ad, tape_pads
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_float, tangent_aval
from fungrad.interpreters.codegen import compiled
from fungrad.name_stack import _state as _name_stack_state
from fungrad.interpreters.partial_eval import (Splice, StagingTrace, StagingTracer, dce_jaxpr,
                                               partial_eval_jaxpr, provenance_of, trace_closed)

__all__ = ["TapeTrace", "TapeTracer", "vjp_eager"]


class TapeTracer(Tracer):
    """A concrete primal value whose tangent is node ``node`` of the tape;
    ``sig`` is what its linearizations are cached on (differentiated, shape, dtype)."""
    __slots__ = ("primal", "node", "_aval", "sig")

    def __init__(self, trace, primal, node, aval, sig):
        self._trace = trace
        self.primal = primal
        self.node = node
        self._aval = aval
        self.sig = sig

    @property
    def aval(self):
        return self._aval

    def _concrete_value(self):
        p = self.primal     # (a staged value under the staged tape: none)
        return p._concrete_value() if isinstance(p, Tracer) else np.asarray(p)


class TapeTrace(core.Trace):
    """Linearizes each primitive application onto ``self.entries``, entries
    ``(linearization, residuals, input nodes, output nodes)``; its parent is the
    evaluation trace (see the module docstring)."""
    __slots__ = ("num_nodes", "entries", "staged", "scopes")
    kind = "grad"

    def __init__(self, parent, staged: bool = False):
        super().__init__(parent)
        self.num_nodes = 0
        self.entries: list = []
        # the parent is a staging trace that the linearizations are spliced
        # into (``vjp_staged``), instead of an evaluation that runs them
        self.staged = staged
        # staged: entry index -> the scope names open when it was recorded (the
        # backward pass stages its equations under them: fungrad/name_stack.py)
        self.scopes: dict = {}

    def _note_scope(self):
        """Under the staged tape, remember the names open for the next entry."""
        names = _name_stack_state.names
        if names:
            self.scopes[len(self.entries)] = names

    def input(self, x):
        """``x`` as an input of the differentiated function (a node if it is float)."""
        aval = get_aval(x)
        if not is_float(aval.dtype):
            return x
        node, self.num_nodes = self.num_nodes, self.num_nodes + 1
        if type(x) is core.Array:
            # primals are plain ndarrays, so the compiled code computes on
            # them: an Array operand sends every operator through its Python
            # method and every ufunc through subclass wrapping (~1 us each),
            # and its results are Arrays again.  The aval keeps the weak type.
            x = x.view(np.ndarray)
        return TapeTracer(self, x, node, aval, _signature(aval))

    def process_primitive(self, prim, args, params):
        # The hot path of eager grad: one pass over the arguments builds the
        # primal values, the input nodes and the cache key.
        primals, in_nodes, key = [], [], [prim]
        arrays = False
        for a in args:
            if type(a) is TapeTracer and a._trace is self:
                primals.append(a.primal)
                in_nodes.append(a.node)
                key.append(a.sig)
            else:
                t = type(a)
                if t is np.ndarray or t is core.Array and not a.weak_type:
                    key.append((False, a.shape, a.dtype))
                else:
                    if isinstance(a, Tracer):
                        self.check_foreign(a)
                    key.append(_constant_signature(a))
                arrays = arrays or t is core.Array
                primals.append(a)
        if not in_nodes:
            return core.bind_on(self.parent, prim, primals, params)
        if arrays and not self.staged:
            # (the compiled code computes on plain ndarrays: input(); staged, a
            # constant stays the one object, so its jaxpr const is shared)
            primals = [p.view(np.ndarray) if type(p) is core.Array else p for p in primals]
        if params:
            key.append(tuple(params.items()))
        key = tuple(key)
        try:
            lin = _CACHE.get(key)
        except TypeError:                   # unhashable params: the general path
            lin = _UNCACHEABLE
        if lin is None:
            if self.staged and not _has_sub_programs(params) and _first_sighting(key):
                # (deriving costs about as much as tracing fifty equations: under
                # jit a signature is derived once it shows up again, i.e. where
                # a long program repeats itself; once, it takes the general path)
                return self._append_general(prim, params, primals, args)
            lin = _linearization(prim, params, [a._aval if type(a) is TapeTracer
                                                else get_aval(a) for a in args], key)
        if lin is _UNCACHEABLE:
            return self._append_general(prim, params, primals, args)
        if self.staged:
            return self._splice_forward(prim, lin, primals, in_nodes)
        outs = lin.fwd(*lin.fwd_consts, *primals)
        if lin.single:              # one output, with a tangent: the common case
            node, self.num_nodes = self.num_nodes, self.num_nodes + 1
            self.entries.append((lin, outs[1:], in_nodes, (node,)))
            return TapeTracer(self, outs[0], node, lin.out_avals[0], lin.out_sigs[0])
        n_out = lin.num_out
        return self._wrap(prim, outs[:n_out], lin, outs[n_out:], in_nodes,
                          lin.out_nonzeros, lin.out_avals, lin.out_sigs)

    def _splice_forward(self, prim, lin, primals, in_nodes):
        """The staged tape's forward step: ``lin``'s forward jaxpr spliced into
        the parent staging trace; the residuals stay atoms of its jaxpr."""
        parent = self.parent
        splice = lin.forward_splice
        if splice is None:
            splice = lin.forward_splice = Splice(lin.forward)
        outs = parent.splice(splice, [
            p._var if type(p) is StagingTracer and p._trace is parent else parent.to_atom(p)
            for p in primals])
        prov = provenance_of(primals)
        self._note_scope()
        if lin.single:
            node, self.num_nodes = self.num_nodes, self.num_nodes + 1
            self.entries.append((lin, outs[1:], in_nodes, (node,)))
            out = outs[0]
            primal = StagingTracer(parent, out.aval, out, prov) if type(out) is Var \
                else parent.tracer(out)
            return TapeTracer(self, primal, node, lin.out_avals[0], lin.out_sigs[0])
        n_out = lin.num_out
        return self._wrap(prim, [parent.tracer(a, prov) for a in outs[:n_out]], lin,
                          outs[n_out:], in_nodes, lin.out_nonzeros, lin.out_avals, lin.out_sigs)

    def _wrap(self, prim, outs, lin, residuals, in_nodes, out_nonzeros, out_avals, out_sigs):
        out_nodes, wrapped = [], []
        for o, nz, aval, sig in zip(outs, out_nonzeros, out_avals, out_sigs):
            if nz:
                node, self.num_nodes = self.num_nodes, self.num_nodes + 1
                out_nodes.append(node)
                if type(o) is core.Array:       # (as input() does)
                    o = o.view(np.ndarray)
                wrapped.append(TapeTracer(self, o, node, aval, sig))
            else:         # (a value without a tangent: of its type, weak or not)
                out_nodes.append(None)
                wrapped.append(core.with_weak_type(core.wrap_array(o), True)
                               if aval.weak_type and not isinstance(o, Tracer) else o)
        if self.staged and prim is None:      # (_splice_forward noted a primitive's)
            self._note_scope()
        self.entries.append((lin, residuals, in_nodes, tuple(out_nodes)))
        return wrapped if prim is None or prim.multiple_results else wrapped[0]

    def owns(self, x) -> bool:
        return type(x) is TapeTracer and x._trace is self

    def _append_general(self, prim, params, primals, args):
        def one(*xs):
            out = prim.bind(*xs, **params)
            return list(out) if prim.multiple_results else [out]
        outs = self.call_generally(one, args)
        return outs if prim.multiple_results else outs[0]

    def call_generally(self, fn: Callable, args) -> list:
        """``fn(*args)`` (a flat function returning a list) linearized onto the tape by
        the general machinery, its JVP trace on the concrete primals: also how
        custom rules (custom_jvp/custom_vjp) see concrete values under eager grad."""
        primals = [_primal_value(a) if self.owns(a) else a for a in args]
        nodes = [a.node if self.owns(a) else None for a in args]
        outs, lin, residuals = _linearize_generally(self.parent, fn, primals, nodes)
        avals = [get_aval(o) for o in outs]
        sigs = [_signature(a) for a in avals]
        return self._wrap(None, outs, lin, residuals, [n for n in nodes if n is not None],
                          lin.out_nonzeros, avals, sigs)


def _primal_value(x: TapeTracer):
    """The primal of ``x`` as a value of its type (a weakly typed one as a weak
    Array: the general path traces on values, the compiled one on arrays)."""
    if x._aval.weak_type and not isinstance(x.primal, Tracer):    # (staged: it is)
        return core.with_weak_type(core.wrap_array(x.primal), True)
    return x.primal


def _constant_signature(x):
    """The cache-key part of a value that is not differentiated."""
    t = type(x)
    if t is np.ndarray or t is core.Array and not x.weak_type or isinstance(x, np.generic):
        return False, x.shape, x.dtype
    return False, get_aval(x)          # Python scalars, weak Arrays: weakly typed


def _signature(aval) -> tuple:
    """The cache-key part of a differentiated value of type ``aval`` (a weak
    one differs: what is staged from it is weakly typed too)."""
    if aval.weak_type:
        return True, aval.shape, aval.dtype, True
    return True, aval.shape, aval.dtype


# ----------------------------------------------------------------------------
# Linearizations: cached and compiled per (primitive, params, types, pattern)
# ----------------------------------------------------------------------------

class _Linearization:
    """The linearization of one primitive at one signature (module docstring):
    the forward and backward jaxprs, compiled once."""
    __slots__ = ("forward", "backward", "num_out", "out_avals", "out_sigs", "tangent_avals",
                 "out_nonzeros", "single", "fwd", "fwd_consts", "bwd", "bwd_consts",
                 "forward_splice", "backward_splice", "weak_cts", "weak_residuals",
                 "box", "__weakref__")

    def __init__(self, forward, backward, out_avals, out_nonzeros, multiple_results):
        self.forward, self.backward = forward, backward        # ClosedJaxprs
        self.num_out = len(out_avals)
        self.out_avals = out_avals        # (weakly typed where eager results are)
        self.out_sigs = [_signature(a) for a in out_avals]
        self.tangent_avals = [tangent_aval(a) for a in out_avals]
        self.out_nonzeros = out_nonzeros
        self.single = not multiple_results and tuple(out_nonzeros) == (True,)
        # compiled on first use: the staged tape splices the jaxprs instead
        self.fwd, self.fwd_consts = self._compile_forward, ()
        self.bwd, self.bwd_consts = self._compile_backward, ()
        self.forward_splice = self.backward_splice = None    # (built on first use too)
        # backward jaxprs staged at other cotangent weak types (backward_at)
        self.weak_cts: dict = {}
        n_res = len(backward.in_avals) - sum(out_nonzeros)
        self.weak_residuals = tuple(i for i, a in enumerate(backward.in_avals[:n_res])
                                    if a.weak_type)
        # (box, input shape) when the backward only puts the cotangent in a box
        # of zeros (a slice's): _backward keeps it as a tape_pads.Pad
        self.box = None

    def backward_at(self, out_weak: tuple) -> list:
        """``[backward jaxpr, its outputs' weak types, its Splice or None]`` for
        output cotangents of the weak types ``out_weak``: the backward jaxpr
        staged at those types (JAX stages a transpose at its cotangents'
        types; the values are the same, the weak types follow them).  Cached."""
        entry = self.weak_cts.get(out_weak)
        if entry is None:
            bwd = _backward_at(self.backward, out_weak)
            entry = self.weak_cts[out_weak] = [bwd, tuple(a.weak_type for a in bwd.out_avals),
                                               None]
        return entry

    def cts_weak(self, out_weak: tuple) -> tuple:
        """Which input cotangents are weakly typed when the output cotangents'
        weak types are ``out_weak``."""
        return self.backward_at(out_weak)[1]

    def splice_at(self, ct_atoms) -> Splice:
        """The Splice of the backward jaxpr for cotangent atoms ``ct_atoms`` of
        the staging trace (the staged tape's backward step)."""
        out_weak = tuple(a.aval.weak_type for a in ct_atoms)
        n_res = len(self.backward.in_avals) - len(out_weak)
        if out_weak == tuple(a.weak_type for a in self.backward.in_avals[n_res:]):
            splice = self.backward_splice
            if splice is None:
                splice = self.backward_splice = Splice(self.backward)
            return splice
        entry = self.backward_at(out_weak)
        if entry[2] is None:
            entry[2] = Splice(entry[0])
        return entry[2]

    def _compile_forward(self, *primals):
        fwd = compiled(self.forward)
        self.fwd, self.fwd_consts = fwd.fn, fwd.consts
        return fwd.fn(*fwd.consts, *primals)

    def _compile_backward(self, *args):
        bwd = compiled(self.backward)
        self.bwd, self.bwd_consts = bwd.fn, bwd.consts
        return bwd.fn(*bwd.consts, *args)

    def transpose(self, residuals, cts):
        """Cotangents of the differentiated inputs, through ``bind`` (traceable);
        the residuals the forward code returned as plain arrays are given
        their weak types again."""
        if self.weak_residuals:
            residuals = list(residuals)
            for i in self.weak_residuals:
                r = residuals[i]
                if not isinstance(r, Tracer):
                    residuals[i] = core.with_weak_type(core.wrap_array(np.asarray(r)), True)
        return eval_jaxpr(self.backward.jaxpr, self.backward.consts, *residuals, *cts)

    def transpose_now(self, residuals, cts):
        """The same on concrete values, by the compiled code."""
        return self.bwd(*self.bwd_consts, *residuals, *cts)


_CACHE: dict = {}
_CACHE_LIMIT = 4096
_UNCACHEABLE = object()
_SIGHTED: dict = {}     # keys the staged tape has seen once (an ordered set)
# what staging produces depends on jax_enable_x64 and the promotion options
_config.on_tracing_change.append(_CACHE.clear)
_config.on_tracing_change.append(_SIGHTED.clear)


def _first_sighting(key) -> bool:
    """Is this the first time the staged tape meets ``key`` (then remember it)?"""
    if key in _SIGHTED:
        return False
    if len(_SIGHTED) >= _CACHE_LIMIT:
        del _SIGHTED[next(iter(_SIGHTED))]
    _SIGHTED[key] = None
    return True


def _linearization(prim, params, avals, key):
    """Derive and cache the linearization for a cache miss (``_UNCACHEABLE``:
    the general path)."""
    if _has_sub_programs(params):
        # higher-order: keyed on a freshly staged jaxpr or a closure, an entry
        # would only keep them (and everything derived from them) alive
        return _UNCACHEABLE
    nonzeros = tuple(k[0] for k in key[1:1 + len(avals)])
    hit = _derive(prim, params, avals, nonzeros)
    if len(_CACHE) >= _CACHE_LIMIT:  # bounded: drop the oldest entry
        del _CACHE[next(iter(_CACHE))]
    _CACHE[key] = hit
    return hit


def _has_sub_programs(params) -> bool:
    return any(isinstance(v, ClosedJaxpr) or callable(v) and not isinstance(v, type)
               or isinstance(v, tuple) and any(isinstance(e, ClosedJaxpr) for e in v)
               for v in params.values())


def _derive(prim, params, avals, nonzeros):
    """Stage ``prim``'s JVP at these types, split it into the primal part and the
    linear part, transpose the latter (module docstring); _UNCACHEABLE when
    the general path must be used."""
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
    if prim.recompute_residuals and all(nonzeros):
        forward, backward = _residuals_recomputed(forward, backward, avals, n_out)
    # (the values' types are the JVP's, as JAX's under grad: a rule may compute
    # a value of another weak type than the primitive's own, reduce_prod's)
    lin = _Linearization(forward, backward, forward.out_avals[:n_out], tuple(out_nonzeros),
                         prim.multiple_results)
    if prim.transpose_box is not None and nonzeros == (True,) and lin.single:
        lin.box = (prim.transpose_box(**params), tuple(avals[0].shape))
    return lin


def _residuals_recomputed(forward, backward, avals, n_out):
    """``(forward, backward)`` saving the operands as the residuals: the new
    forward computes the outputs only, the new backward the old residuals
    from the operands, then the old backward (``Primitive.recompute_residuals``)."""
    n_in = len(avals)
    # (the outputs alone: the residuals' equations dropped)
    outputs_only, _ = dce_jaxpr(forward.jaxpr, [True] * n_out + [False] * (
        len(forward.out_avals) - n_out))

    def outputs(*xs):
        return [*eval_jaxpr(outputs_only, forward.consts, *xs), *xs]

    def cotangents(*args):
        residuals = eval_jaxpr(forward.jaxpr, forward.consts, *args[:n_in])[n_out:]
        return eval_jaxpr(backward.jaxpr, backward.consts, *residuals, *args[n_in:])
    ct_avals = list(backward.in_avals[len(forward.out_avals) - n_out:])
    return (trace_closed(outputs, list(forward.in_avals)),
            trace_closed(cotangents, list(forward.in_avals) + ct_avals))


def _backward_at(backward: ClosedJaxpr, out_weak: tuple) -> ClosedJaxpr:
    """``backward`` staged again with its trailing cotangent inputs of the
    weak types ``out_weak`` (itself when they are those)."""
    n_res = len(backward.in_avals) - len(out_weak)
    avals = list(backward.in_avals[:n_res]) + [
        core.ShapedArray(a.shape, a.dtype, w) for a, w in zip(backward.in_avals[n_res:], out_weak)]
    if avals == list(backward.in_avals):
        return backward
    with new_trace_context(core.EVAL_TRACE, finish=False):
        return trace_closed(lambda *xs: eval_jaxpr(backward.jaxpr, backward.consts, *xs), avals)


class _GeneralLinearization:
    """A primitive application linearized by the general machinery: its linear
    jaxpr (residuals as consts), transposed by the backward pass."""
    __slots__ = ("jaxpr", "tangent_avals", "out_nonzeros")
    bwd = None                      # no compiled backward code: transpose() always
    box = None                      # (never a slice's box: _Linearization.box)

    def __init__(self, jaxpr, tangent_avals, out_nonzeros):
        self.jaxpr, self.tangent_avals, self.out_nonzeros = jaxpr, tangent_avals, out_nonzeros

    def transpose(self, residuals, cts):
        cts = ad.tangents_from(self.out_nonzeros, cts, self.tangent_avals)
        return ad.backward_pass(self.jaxpr, residuals, cts)

    transpose_now = transpose


def _linearize_generally(parent, fn, primals, nodes):
    """``(outs, linearization, residuals)`` by ``ad.linearize_flat`` of ``fn`` on
    the concrete values."""
    nonzeros, symbolic = [n is not None for n in nodes], []
    with core.set_current_trace(parent):
        outs, jaxpr, residuals = ad.linearize_flat(fn, primals, nonzeros, symbolic)
    tangent_avals = [tangent_aval(get_aval(o)) for o in outs]
    # the float outputs' tangents, but for those known to be zero (a
    # stop_gradient: such an output is a plain value, which a Ref made outside
    # the differentiated function may hold)
    out_nonzeros = [nz and is_float(a.dtype) for nz, a in zip(symbolic, tangent_avals)]
    return outs, _GeneralLinearization(jaxpr, tangent_avals, out_nonzeros), residuals


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
        outs = [core.with_weak_type(core.wrap_array(o.primal), o._aval.weak_type)
                if type(o) is TapeTracer and o._trace is trace else o for o in outs]
    for o in outs:
        if isinstance(o, Tracer):
            trace.check_foreign(o)
    in_nodes = [x.node if type(x) is TapeTracer else None for x in ins]
    in_avals = [tangent_aval(x._aval if type(x) is TapeTracer else get_aval(x)) for x in ins]
    entries, num_nodes = trace.entries, trace.num_nodes

    def pullback(cts):
        return _backward(entries, num_nodes, out_nodes, cts, in_nodes, in_avals)
    return outs, pullback


def staged_tape_applies() -> bool:
    """Is the current trace one the staged tape splices into: plain staging
    (``jit``, ``make_jaxpr``), not partial evaluation, not a subclass with its
    own bookkeeping, and no per-equation source lines asked for?"""
    trace = core._tls.trace
    return type(trace) is StagingTrace and not trace.fold_known and not core._float_checks


def vjp_staged(f: Callable, primals: Sequence):
    """``vjp_eager`` under ``jit``: the same tape, but each primitive's cached
    forward jaxpr is spliced into the current staging trace, and the pullback
    splices the backward jaxprs in reverse (``StagingTrace.splice``), so
    ``jit(grad(f))`` stages the same program the eager tape runs without a
    JVP trace, partial evaluation and a transposition per equation.  The
    pullback must be called while that trace is current, once (``grad``
    does); ``vjp`` itself, whose pullback may outlive the trace, does not
    use it."""
    parent = core._tls.trace
    trace = TapeTrace(parent, staged=True)
    with new_trace_context(trace):
        ins = [trace.input(p) for p in primals]
        outs = f(*ins)
        out_nodes = [o.node if type(o) is TapeTracer and o._trace is trace else None
                     for o in outs]
        outs = [_staged_primal(o) if type(o) is TapeTracer and o._trace is trace else o
                for o in outs]
    for o in outs:
        if isinstance(o, Tracer) and o._trace is not parent:
            trace.check_foreign(o)
    in_nodes = [x.node if type(x) is TapeTracer else None for x in ins]
    in_avals = [tangent_aval(x._aval if type(x) is TapeTracer else get_aval(x)) for x in ins]
    entries, num_nodes, scopes = trace.entries, trace.num_nodes, trace.scopes

    def pullback(cts):
        if core._tls.trace is not parent:
            raise AssertionError("internal error: the staged tape's pullback runs outside "
                                 "the trace it was recorded on")
        outer = _name_stack_state.names
        try:
            return _backward_staged(parent, entries, num_nodes, out_nodes, cts, in_nodes,
                                    in_avals, scopes, outer)
        finally:
            _name_stack_state.names = outer
    return outs, pullback


def _staged_primal(x: TapeTracer):
    p = x.primal
    return p if isinstance(p, Tracer) else core.with_weak_type(core.wrap_array(p),
                                                               x._aval.weak_type)


def _backward_staged(trace, entries, num_nodes, out_nodes, cts, in_nodes, in_avals,
                     scopes, outer_names) -> list:
    """``_backward`` for the staged tape: the cotangents are atoms of ``trace``'s
    jaxpr, each cached linearization's backward jaxpr is spliced into it, and
    entries of the general path transpose through ``bind`` on it; each under
    the scope names its entry was recorded in (``scopes``, else ``outer_names``)."""
    atom = trace.atom
    ct: list[Any] = [None] * num_nodes

    def add(old, c):        # (two cotangents of one value: a fan-out in the forward pass)
        return atom(ad.add_tangents(trace.tracer(old), trace.tracer(c)))
    for n, c in zip(out_nodes, cts):
        if n is not None and c is not None and type(c) is not Zero:
            ct[n] = atom(c) if ct[n] is None else add(ct[n], atom(c))
    while entries:      # (each entry freed once used: the tape shrinks as the jaxpr grows)
        lin, residuals, ins, outs = entries.pop()
        if scopes:
            _name_stack_state.names = scopes.get(len(entries), outer_names)
        general = type(lin) is _GeneralLinearization
        if len(outs) == 1 and not general:      # the common case
            n = outs[0]
            c = None if n is None else ct[n]
            if c is None:
                continue
            ct[n] = None
            cts_in = trace.splice(lin.splice_at((c,)), [*residuals, c])
        else:
            out_cts = [None if n is None else ct[n] for n in outs]
            if all(c is None for c in out_cts):
                continue
            for n in outs:
                if n is not None:
                    ct[n] = None
            cts_in = _transpose_staged(trace, lin, residuals, outs, out_cts, general)
        for n, c in zip(ins, cts_in):
            if c is not None:
                old = ct[n]
                ct[n] = c if old is None else add(old, c)
    return [Zero(a) if n is None or ct[n] is None else trace.tracer(ct[n])
            for n, a in zip(in_nodes, in_avals)]


def _transpose_staged(trace, lin, residuals, outs, out_cts, general) -> list:
    """The input cotangents (atoms, or None) of an entry with several outputs
    or of the general path, the output cotangents ``out_cts`` being atoms."""
    if general:       # (through bind on the staging trace; symbolic zeros as they are)
        values = [Zero(a) if c is None else trace.tracer(c) for n, c, a
                  in zip(outs, out_cts, lin.tangent_avals) if n is not None]
        return [None if c is None or type(c) is Zero else trace.atom(c)
                for c in lin.transpose(residuals, values)]
    atoms = [trace.atom(instantiate_zeros(Zero(a))) if c is None else c
             for n, c, a in zip(outs, out_cts, lin.tangent_avals) if n is not None]
    return trace.splice(lin.splice_at(atoms), [*residuals, *atoms])


def _backward(entries, num_nodes, out_nodes, cts, in_nodes, in_avals) -> list:
    """Walk the tape backwards from the output cotangents ``cts``: compiled code
    when they are concrete and nothing is traced, ``bind`` otherwise.  The
    compiled code returns plain arrays; when a cotangent or an input is weakly
    typed, ``_WeakTypes`` follows the weak types (JAX's) alongside."""
    now = core._tls.trace is core.EVAL_TRACE and not any(isinstance(c, Tracer) for c in cts)
    add = tape_pads.accumulate if now else ad.add_tangents
    ct: list[Any] = [None] * num_nodes
    weak = _WeakTypes.start(num_nodes, out_nodes, cts, in_avals) if now else None
    if now:         # (plain ndarrays for the compiled code, as the primals: input())
        cts = [c.view(np.ndarray) if type(c) is core.Array else c for c in cts]
    for n, c in zip(out_nodes, cts):
        if n is not None and c is not None and type(c) is not Zero:
            ct[n] = c if ct[n] is None else add(ct[n], c)
    for lin, residuals, ins, outs in reversed(entries):
        if len(outs) == 1:       # the common case, inlined
            n = outs[0]
            if n is None:
                continue
            c = ct[n]
            if c is None:
                continue
            ct[n] = None
            if now and lin.box is not None and weak is None:
                cts_in = (tape_pads.Pad.of(c, *lin.box),)        # (a slice's: written later)
            elif now and lin.bwd is not None:
                cts_in = lin.bwd(*lin.bwd_consts, *residuals, tape_pads.dense(c))
            else:
                c = tape_pads.dense(c)
                cts_in = lin.transpose(residuals, (c,) if weak is None else weak.outs(lin, (n,), [c]))
            in_weak = None if weak is None else weak.ins(lin, (n,), cts_in)
            for i, (n, c) in enumerate(zip(ins, cts_in)):
                if c is not None and type(c) is not Zero:
                    old = ct[n]
                    ct[n] = c if old is None else add(old, c)
                    if in_weak is not None:
                        weak.accumulate(n, in_weak[i], old is None)
            continue
        else:
            out_cts = [None if n is None else tape_pads.dense(ct[n]) for n in outs]
            if all(c is None for c in out_cts):
                continue
            # compiled backward code takes arrays; the general path's backward pass
            # takes symbolic zeros (a custom_vjp bwd with symbolic_zeros sees them)
            zero = Zero if lin.bwd is None else (lambda a: instantiate_zeros(Zero(a)))
            out_cts = [zero(a) if c is None else c for n, c, a
                       in zip(outs, out_cts, lin.tangent_avals) if n is not None]
        for n in outs:        # each node is produced once: its cotangent is complete
            if n is not None:
                ct[n] = None
        if weak is not None:
            out_cts = weak.outs(lin, outs, out_cts)
        cts_in = (lin.transpose_now if now else lin.transpose)(residuals, out_cts)
        in_weak = None if weak is None else weak.ins(lin, outs, cts_in)
        for i, (n, c) in enumerate(zip(ins, cts_in)):
            if c is not None and type(c) is not Zero:
                old = ct[n]
                ct[n] = c if old is None else add(old, c)
                if in_weak is not None:
                    weak.accumulate(n, in_weak[i], old is None)
    results = [Zero(a) if n is None or ct[n] is None else tape_pads.dense(ct[n])
               for n, a in zip(in_nodes, in_avals)]
    return results if weak is None else weak.finish(results, in_nodes)


class _WeakTypes:
    """The weak types of the eager backward pass's cotangents (``_backward``),
    node by node: the compiled backward code computes on plain arrays, so a
    cotangent's weak type is what its linearization's backward jaxpr gives
    for the weak types of the cotangents going in (``_Linearization.
    cts_weak``), and a sum of two is weak when both are (JAX's add)."""
    __slots__ = ("flags",)

    def __init__(self, flags):
        self.flags = flags

    @classmethod
    def start(cls, num_nodes, out_nodes, cts, in_avals):
        """None (nothing weak: every cotangent is strong, the common case) or
        the flags of the output cotangents ``cts``."""
        seeds = [c is not None and type(c) is not Zero and get_aval(c).weak_type for c in cts]
        if not any(seeds) and not any(a.weak_type for a in in_avals):
            return None
        flags = [None] * num_nodes
        for n, w, c in zip(out_nodes, seeds, cts):
            if n is not None and c is not None and type(c) is not Zero:
                flags[n] = w if flags[n] is None else flags[n] and w
        return cls(flags)

    def accumulate(self, node, weak: bool, first: bool):
        self.flags[node] = weak if first else self.flags[node] and weak

    def outs(self, lin, outs, out_cts) -> list:
        """``out_cts`` (the cotangents of an entry's outputs ``outs``) as values
        of their weak types, for a backward pass through ``bind``."""
        if lin.bwd is not None:
            return out_cts        # (compiled: the flags are looked up in ins())
        nodes = [n for n in outs if n is not None]
        return [c if type(c) is Zero or isinstance(c, Tracer) else
                core.with_weak_type(core.wrap_array(np.asarray(c)), bool(self.flags[n]))
                for n, c in zip(nodes, out_cts)]

    def ins(self, lin, outs, cts_in) -> list:
        """The weak types of an entry's input cotangents ``cts_in``."""
        if lin.bwd is None:     # through bind: the values carry their types
            return [c is not None and type(c) is not Zero and get_aval(c).weak_type
                    for c in cts_in]
        flags = self.flags       # (an output without a cotangent got zeros of its type)
        return lin.cts_weak(tuple(a.weak_type if flags[n] is None else flags[n]
                                  for n, a in zip(outs, lin.tangent_avals) if n is not None))

    def finish(self, results, in_nodes) -> list:
        """The input cotangents as Arrays of their weak types (NumPy's ufuncs on
        a weak Array return one that says weak: the flags decide)."""
        return [c if type(c) is Zero or n is None or isinstance(c, Tracer)
                else core.with_weak_type(core.wrap_array(np.asarray(c)), bool(self.flags[n]))
                for c, n in zip(results, in_nodes)]
