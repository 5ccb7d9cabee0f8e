"""Staging functions into jaxprs, partial evaluation, dead-code elimination.

The staging trace records every primitive bound while it is current as an
equation of a jaxpr (``make_jaxpr``, ``jit``, the bodies of control flow).
With ``fold_known=True`` it *partially evaluates*: an equation none of whose
inputs are unknown (this trace's tracers) runs on the parent trace right away,
and only the unknown part is recorded; known values that unknown equations
use become the jaxpr's constvars (the residuals).  ``ad.linearize_flat`` is
exactly that with the tangents unknown.

``partial_eval_jaxpr`` applies the same split to an existing jaxpr, by
re-interpreting it under two stacked staging traces: the outer one records the
known part, the inner one (folding known equations into the outer) records
the unknown part.  Before/after, with the second input unknown::

    { lambda ; a:f64[] b:f64[]. let c = sin a; d = mul c b in (d,) }
  known:   { lambda ; a:f64[]. let c = sin a in (c,) }            # residual c
  unknown: { lambda ; c:f64[] b:f64[]. let d = mul c b in (d,) }

Types::

    trace_to_jaxpr  : ([a] -> [b]), avals a -> (Jaxpr(a -> b), consts)
    stage_pytree    : (pytree a -> pytree b), tree, avals -> (ClosedJaxpr(hoisted, a -> b), hoisted, out tree)
    trace_closed    : ([a] -> [b]), avals a -> ClosedJaxpr(a -> b)      (no hoisting: derived jaxprs)
    partial_eval_jaxpr : ClosedJaxpr(a -> b), unknowns -> (known, unknown, out_unknowns, num_res)
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Sequence

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import _config, core
from fungrad.core import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Trace, Tracer,
                          Var, _tls, bind_on, eval_jaxpr, get_aval, new_trace_context,
                          with_weak_types)
from fungrad.name_stack import _state as _name_stack_state
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["StagingTrace", "StagingTracer", "trace_to_jaxpr", "closure_convert",
           "stage_pytree", "trace_closed", "as_value", "partial_eval_jaxpr", "dce_jaxpr",
           "select_inputs", "permute_binders", "has_effects"]

_PY_SCALARS = (bool, int, float, complex)


# ----------------------------------------------------------------------------
# The staging trace
# ----------------------------------------------------------------------------

def _scope() -> tuple:
    """The scope names an equation staged now records (fungrad/name_stack.py):
    those of the equation an interpreter is deriving it from (a JVP's, a
    transpose's), else the names open now."""
    running = _tls.running
    if running:
        eqn = running[-1]
        if eqn is not None and eqn.scope:
            return eqn.scope
    return _name_stack_state.names


class StagingTracer(Tracer):
    # ``_var``, not ``var``: arrays have a ``.var()`` method, which a slot named
    # var would shadow on staged values (``x.var()`` under jit)
    __slots__ = ("_aval", "_var", "provenance")

    def __init__(self, trace, aval, var, provenance=None):
        self._trace = trace
        self._aval = aval
        self._var = var
        self.provenance = provenance

    @property
    def aval(self):
        return self._aval


#: bumped when an option that changes what tracing produces changes (x64,
#: promotion): staging traces then forget the output avals they remembered
_memo_generation = [0]


def _new_memo_generation():
    _memo_generation[0] += 1


_config.on_tracing_change.append(_new_memo_generation)


class StagingTrace(Trace):
    """Records equations into a jaxpr (see the module docstring for ``fold_known``)."""
    __slots__ = ("fold_known", "eqns", "invars", "const_vars", "const_vals", "name", "avals",
                 "out_avals_memo", "memo_generation", "literals")
    kind = "staging"

    def __init__(self, parent, fold_known=False, name=None):
        super().__init__(parent)
        self.fold_known = fold_known
        self.name = name        # what staged it, for error messages ("jit(f)")
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.const_vars: dict[int, Var] = {}   # id(value) -> Var
        self.const_vals: list[Any] = []
        # one ShapedArray per distinct aval of this jaxpr's variables (they are
        # never mutated): long programs repeat a few shapes over and over
        self.avals: dict = {}
        self.out_avals_memo: dict = {}           # (see _out_avals)
        self.memo_generation = _memo_generation[0]
        self.literals: dict = {}                 # (see literal)

    def new_arg(self, aval: ShapedArray, provenance=None) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, aval, var, provenance)

    def label(self) -> str:
        return self.name or ("linearize" if self.fold_known else "staging")

    def owns(self, x) -> bool:
        """Is ``x`` a value of this trace (an unknown, under partial evaluation)?"""
        return isinstance(x, StagingTracer) and x._trace is self

    def to_atom(self, x):
        if isinstance(x, StagingTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer):
            self.check_foreign(x)
        elif isinstance(x, _PY_SCALARS) or isinstance(x, np.generic) or (
                isinstance(x, np.ndarray) and x.ndim == 0):
            return self.literal(x)
        var = self.const_vars.get(id(x))
        if var is None:
            var = self.const_vars[id(x)] = Var(get_aval(x))   # (weak Arrays stay weak)
            self.const_vals.append((var, x))
        return var

    def literal(self, x) -> Literal:
        """The literal of the scalar ``x``: one object per value and type of a
        float or a 0-d array (fungrad.numpy makes a new 0-d array of each
        Python number it is given: a long program of ``x * 0.5`` has one
        literal, not one per equation)."""
        t = type(x)
        if t is float:
            key = (t, x if x else repr(x))          # (the sign of a zero matters)
        elif t is np.ndarray or t is core.Array:
            if x.dtype.kind not in "fiub":
                return Literal(by_value(x))
            value = x.item()
            key = (t, x.dtype, t is core.Array and x.weak_type, value if value else repr(value))
        else:
            return Literal(by_value(x) if isinstance(x, np.ndarray) else x)
        hit = self.literals.get(key)
        if hit is None:
            hit = self.literals[key] = Literal(by_value(x) if t is not float else x)
        return hit

    def process_primitive(self, prim, args, params):
        if self.fold_known:
            if not any(isinstance(a, StagingTracer) and a._trace is self for a in args):
                return bind_on(self.parent, prim, args, params)
            if prim.partial_eval is not None:   # higher-order: split known/unknown
                return prim.partial_eval(self, args, **params)
        return self.stage(prim, args, params)

    def stage(self, prim, args, params):
        """Record ``prim(*args)`` as an equation; returns the output tracer(s)."""
        atoms = [a._var if type(a) is StagingTracer and a._trace is self else self.to_atom(a)
                 for a in args]
        outvars = self.stage_atoms(prim, atoms, params)
        prov = provenance_of(args)
        outs = [StagingTracer(self, v.aval, v, prov) for v in outvars]
        return outs if prim.multiple_results else outs[0]

    def stage_atoms(self, prim, atoms: list, params) -> list:
        """Record ``prim`` applied to ``atoms`` (this jaxpr's variables and
        literals); returns its output variables."""
        outvars = [Var(a) for a in self._out_avals(prim, atoms, params)]
        # the user's line, while jax_debug_nans/infs is on (finding it costs a
        # quarter of tracing time on CPython 3.11: reading f_back creates frame objects)
        source = core.current_source() if core._float_checks else None
        self.eqns.append(JaxprEqn(prim, atoms, params, outvars, source, _scope()))
        return outvars

    def atom(self, x):
        """``x`` as an atom of this jaxpr (``to_atom``, its own values first)."""
        return x._var if type(x) is StagingTracer and x._trace is self else self.to_atom(x)

    def tracer(self, atom, provenance=None):
        """The value of this trace an atom stands for (a literal: its value)."""
        if type(atom) is Literal:
            return atom.val
        return StagingTracer(self, atom.aval, atom, provenance)

    def splice(self, template: "Splice", atoms: list) -> list:
        """Record the equations of ``template`` (a jaxpr) applied to ``atoms``,
        with fresh output variables; returns the atoms of its outputs.  No rule
        runs: the equations and their types are the jaxpr's (the staged tape
        of ``interpreters/tape.py`` splices cached linearizations this way)."""
        env = template.literals + [self.to_atom(c) for c in template.consts] + atoms \
            if template.consts else template.literals + atoms
        append, scope = self.eqns.append, _scope()
        for prim, params, read, out_aval, out_avals in template.eqns:
            # (``read``: the one position read, or a getter of several; see Splice)
            inputs = [env[read]] if type(read) is int else list(read(env))
            if out_aval is not None:
                out = Var(out_aval)
                append(JaxprEqn(prim, inputs, params, [out], None, scope))
                env.append(out)
            else:
                outvars = [Var(a) for a in out_avals]
                append(JaxprEqn(prim, inputs, params, outvars, None, scope))
                env += outvars
        return [env[i] for i in template.outs]

    def _out_avals(self, prim, atoms, params) -> list:
        """The output avals of ``prim`` on ``atoms``, one object per distinct aval
        (``self.avals``).  Long programs apply a few primitives to a few types
        over and over: an application without params on avals seen before is
        a dict lookup (keyed on the variables' avals' identities, which stay
        valid: the entry holds them; a literal's own aval by value; ``_memo_generation`` changes with the options that
        change what tracing produces) instead of the abstract-evaluation rule."""
        key = None
        if not params:
            key = (prim, *[id(a.aval) if type(a) is Var else a.aval for a in atoms])
            memo = self.out_avals_memo
            if self.memo_generation != _memo_generation[0]:
                memo.clear()
                self.memo_generation = _memo_generation[0]
            hit = memo.get(key)
            if hit is not None:
                return hit[0]
        in_avals = [a.aval for a in atoms]
        out_aval = prim.abstract_eval(*in_avals, **params)
        out_avals = out_aval if prim.multiple_results else [out_aval]
        if prim.weak_type_rule is not None:       # (JAX's weak types, by the rule)
            out_avals = with_weak_types(prim, in_avals, params, out_avals)
        avals = self.avals
        out_avals = [avals.setdefault(a, a) for a in out_avals]
        if key is not None:
            self.out_avals_memo[key] = (out_avals, [a.aval for a in atoms])
        return out_avals

    def build(self, outs) -> tuple[Jaxpr, list]:
        """The jaxpr with outputs ``outs`` and the values of its constvars."""
        outvars = [self.to_atom(o) for o in outs]
        constvars = [v for v, _ in self.const_vals]
        consts = [x for _, x in self.const_vals]
        return Jaxpr(constvars, self.invars, self.eqns, outvars), consts


def provenance_of(args):
    """Which argument the first staged value among ``args`` derives from (for
    concretization errors), or None."""
    for a in args:
        if type(a) is StagingTracer and a.provenance:
            return a.provenance
    return None


class Splice:
    """A closed jaxpr in the form ``StagingTrace.splice`` copies fast: its
    equations as ``(primitive, params, read, output aval, output avals)``,
    ``read`` the position read (one input) or an ``itemgetter`` of the
    positions, in a list of its literals, then its constants, then its
    inputs, then the outputs of the equations so far; ``output aval`` that of
    a single output, else None."""
    __slots__ = ("literals", "consts", "eqns", "outs")

    def __init__(self, closed: ClosedJaxpr):
        jaxpr = closed.jaxpr
        self.literals: list = []
        self.consts = list(closed.consts)
        position: dict = {}
        literal_position: dict = {}

        def read(atom):
            if type(atom) is not Literal:
                return position[atom]
            if id(atom) not in literal_position:
                literal_position[id(atom)] = len(self.literals)
                self.literals.append(atom)
            return literal_position[id(atom)]
        for eqn in jaxpr.eqns:          # (first: the literals' positions come first)
            for a in eqn.inputs:
                if type(a) is Literal:
                    read(a)
        for a in jaxpr.outvars:
            if type(a) is Literal:
                read(a)
        for v in list(jaxpr.constvars) + list(jaxpr.invars):
            position[v] = len(self.literals) + len(position)
        self.eqns = []
        for eqn in jaxpr.eqns:
            reads = tuple(read(a) for a in eqn.inputs)
            for v in eqn.outvars:
                position[v] = len(self.literals) + len(position)
            reader = reads[0] if len(reads) == 1 else itemgetter(*reads) if reads \
                else _read_nothing
            out_avals = tuple(v.aval for v in eqn.outvars)
            self.eqns.append((eqn.primitive, eqn.params, reader,
                              out_avals[0] if len(out_avals) == 1 else None, out_avals))
        self.outs = tuple(read(a) for a in jaxpr.outvars)


def _read_nothing(env) -> tuple:
    return ()


def mutable_memory(x) -> bool:
    """Can someone other than fungrad write to ``x``'s memory?  A fungrad Array
    (read-only, made by fungrad) and read-only arrays over read-only memory
    cannot; a writeable NumPy array, or a read-only view of one, can."""
    while True:
        if x is None or type(x) is core.Array or isinstance(x, bytes):
            return False
        if not isinstance(x, np.ndarray):
            return True                # memory of some other object: assume it may change
        if x.flags.writeable:
            return True
        x = x.base


def by_value(x):
    """A constant captured when traced, as JAX does: ``x`` if its memory cannot
    change, else a read-only copy (so that changing the caller's array in place
    later does not change a compiled function's results)."""
    if isinstance(x, np.ndarray) and mutable_memory(x):
        x = np.array(x, copy=True)
        x.setflags(write=False)
    return x


def unalias(outs, indices, inputs):
    """``outs`` with ``outs[i]`` (i in ``indices``) copied where it shares memory
    with an input someone else may write to (JAX returns fresh buffers)."""
    mutable = [x for x in inputs if isinstance(x, np.ndarray) and mutable_memory(x)]
    if not mutable:
        return outs
    outs = list(outs)
    for i in indices:
        if isinstance(outs[i], np.ndarray) and any(np.may_share_memory(outs[i], x)
                                                    for x in mutable):
            outs[i] = outs[i].copy()
    return outs


def trace_to_jaxpr(flat_fun: Callable, in_avals: Sequence[ShapedArray],
                   provenances: Sequence[str] | None = None,
                   fold_known: bool = False, name: str | None = None) -> tuple[Jaxpr, list]:
    """Stage ``flat_fun`` (arrays -> list of arrays) into a jaxpr and its consts.

    ``provenances`` name the inputs for concretization errors ("argument 'x'");
    ``name`` the transformation in error messages ("jit(f)").
    """
    trace = StagingTrace(core.current_trace(), fold_known, name)
    provenances = provenances or [None] * len(in_avals)
    with new_trace_context(trace):
        args = [trace.new_arg(a, p) for a, p in zip(in_avals, provenances)]
        outs = flat_fun(*args)
        return trace.build(outs)


# ----------------------------------------------------------------------------
# Closure conversion and the staging entry points of higher-order primitives
# ----------------------------------------------------------------------------

def closure_convert(jaxpr: Jaxpr, consts) -> tuple[ClosedJaxpr, list]:
    """Constants that are tracers of enclosing transformations become leading
    inputs (*hoisted*, returned as the second result), so that those
    transformations see them as operands; concrete constants stay constants."""
    traced = [isinstance(c, Tracer) for c in consts]
    if not any(traced):
        return ClosedJaxpr(jaxpr, consts), []
    keep = [v for v, t in zip(jaxpr.constvars, traced) if not t]
    hoist = [v for v, t in zip(jaxpr.constvars, traced) if t]
    new = Jaxpr(keep, hoist + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return (ClosedJaxpr(new, [c for c, t in zip(consts, traced) if not t]),
            [c for c, t in zip(consts, traced) if t])


def as_value(x):
    """A leaf as an operand: tracers stay, everything else becomes an ndarray
    (Python scalars of the default dtypes: 32-bit without jax_enable_x64)."""
    if isinstance(x, Tracer) or type(x) is core.Array:    # (an Array keeps its weak type)
        return x
    if type(x) in _PY_SCALARS:      # a Python number is weakly typed, as in JAX
        dtype = core.scalar_dtype(x)
        return np.asarray(x, dtype) if type(x) is bool else core.weak_array(x, dtype)
    return np.asarray(x)


def output_value(x, what: str):
    """``as_value(x)`` for an output of a traced function; TypeError naming the
    output (``what``) if it is not a number or array of numbers (a str, an
    object, a generator), which no compiled code can return."""
    arr = as_value(x)
    if not isinstance(arr, Tracer) and dtype_kind(arr.dtype) in "OUS":
        raise TypeError(f"{what} has type {type(x).__name__} ({x!r:.60}), not an array: traced "
                        "functions return numbers or arrays (in tuples, lists, dicts); return "
                        "other values from outside the transformation, or mark inputs static")
    return arr


def stage_pytree(fn: Callable, in_tree, avals: Sequence[ShapedArray], provenances=None,
                 name: str | None = None):
    """Trace ``fn`` (a function of one pytree with structure ``in_tree``) to
    ``(closed jaxpr, hoisted values, output tree)``; the jaxpr takes the hoisted
    values (tracers ``fn`` closes over) first, then the leaves of its argument.
    ``name`` says what is staged in error messages ("scan body")."""
    out_tree = []

    def flat(*xs):
        leaves, tree = tree_flatten(fn(tree_unflatten(in_tree, list(xs))))
        out_tree.append(tree)
        return [as_value(x) for x in leaves]
    jaxpr, consts = trace_to_jaxpr(flat, list(avals), provenances, name=name)
    closed, hoisted = closure_convert(jaxpr, consts)
    return closed, hoisted, out_tree[0]


def trace_closed(flat_fun: Callable, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """Stage a function derived from existing jaxprs (an interpreter run over
    them): it closes over no tracers, so nothing is hoisted."""
    jaxpr, consts = trace_to_jaxpr(flat_fun, list(avals))
    closed, hoisted = closure_convert(jaxpr, consts)
    if hoisted:
        raise AssertionError("internal error: a derived jaxpr closes over traced values")
    return closed


def select_inputs(closed: ClosedJaxpr, all_avals, picks) -> ClosedJaxpr:
    """``closed`` as a function of inputs typed ``all_avals``, of which it reads
    ``picks`` (``closed``'s input i is the new input ``picks[i]``)."""
    def fn(*xs):
        return eval_jaxpr(closed.jaxpr, closed.consts, *[xs[k] for k in picks])
    return closed.derived(("select_inputs", tuple(all_avals), tuple(picks)),
                          lambda: trace_closed(fn, list(all_avals)))


def permute_binders(closed: ClosedJaxpr, in_order, out_order) -> ClosedJaxpr:
    """``closed`` with its inputs and outputs reordered (no re-tracing): new input
    ``i`` is old input ``in_order[i]``, new output ``j`` old output ``out_order[j]``."""
    in_order, out_order = tuple(in_order), tuple(out_order)
    if in_order == tuple(range(len(in_order))) and out_order == tuple(range(len(out_order))):
        return closed

    def build():
        j = closed.jaxpr
        return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order], j.eqns,
                                 [j.outvars[i] for i in out_order]), closed.consts)
    return closed.derived(("permute", in_order, out_order), build)


# ----------------------------------------------------------------------------
# Partial evaluation of a jaxpr, dead-code elimination
# ----------------------------------------------------------------------------

def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False):
    """Split ``closed`` by which inputs are unknown (cached per jaxpr).

    Returns ``(known, unknown, out_unknowns, num_res)``:
    ``known`` maps the known inputs to the known outputs followed by
    ``num_res`` residuals; ``unknown`` maps the residuals followed by the
    unknown inputs to the unknown outputs.  ``instantiate[i]`` forces output
    ``i`` to be computed by ``unknown`` even if it is known.
    """
    n_out = len(closed.jaxpr.outvars)
    inst = (instantiate,) * n_out if isinstance(instantiate, bool) else tuple(instantiate)
    return closed.derived(("partial_eval", tuple(unknowns), inst),
                          lambda: _partial_eval_jaxpr(closed, list(unknowns), list(inst)))


def _partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, inst):
    jaxpr = closed.jaxpr
    if len(unknowns) != len(jaxpr.invars):
        raise ValueError(f"partial_eval_jaxpr: {len(unknowns)} unknown flags for "
                         f"{len(jaxpr.invars)} inputs")
    known_trace = StagingTrace(core.current_trace(), fold_known=False)
    with new_trace_context(known_trace):
        unknown_trace = StagingTrace(known_trace, fold_known=True)
        with new_trace_context(unknown_trace):
            args = [unknown_trace.new_arg(v.aval) if u else known_trace.new_arg(v.aval)
                    for v, u in zip(jaxpr.invars, unknowns)]
            outs = eval_jaxpr(jaxpr, closed.consts, *args)
            out_unknowns = [unknown_trace.owns(o) or i for o, i in zip(outs, inst)]
            unknown_jaxpr, residuals = unknown_trace.build(
                [o for o, u in zip(outs, out_unknowns) if u])
        known_outs = [o for o, u in zip(outs, out_unknowns) if not u]
        known_jaxpr, known_consts = known_trace.build(known_outs + list(residuals))
    # the unknown jaxpr takes its residuals as leading inputs instead of consts
    unknown_jaxpr = Jaxpr([], unknown_jaxpr.constvars + unknown_jaxpr.invars,
                          unknown_jaxpr.eqns, unknown_jaxpr.outvars)
    return (ClosedJaxpr(known_jaxpr, known_consts), ClosedJaxpr(unknown_jaxpr, []),
            out_unknowns, len(residuals))


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None,
              keep_effects: bool = True):
    """Drop equations whose outputs are never used.  Effectful equations (debug
    callbacks, checks: ``primitive.effectful``) are kept unless ``keep_effects``
    is False (when slicing out part of a jaxpr that is also run in full).

    Returns ``(new_jaxpr, used_inputs)``; the new jaxpr keeps the outputs
    marked in ``used_outputs`` (all by default) and all of its inputs.
    """
    used_outputs = [True] * len(jaxpr.outvars) if used_outputs is None else list(used_outputs)
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if isinstance(v, Var)}
    kept: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        outs = eqn.outvars
        if not live.isdisjoint(outs) or (keep_effects and has_effects(eqn)):
            kept.append(eqn)
            # (a variable is live from here back to where it is made: the set
            # stays as small as what is live at once)
            live.difference_update(outs)
            live.update(eqn.inputs)     # (literals too: harmless, and no filter to run)
    kept.reverse()
    used_inputs = [v in live for v in jaxpr.invars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, outvars), used_inputs


def has_effects(eqn: JaxprEqn) -> bool:
    """The equation is effectful, or carries a sub-jaxpr (a loop body, a branch)
    with an effectful equation: it must run even if its outputs are unused."""
    if eqn.primitive.effectful:
        return True
    for value in eqn.params.values():
        subs = value if isinstance(value, tuple) else (value,)
        for sub in subs:
            jaxpr = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
            if isinstance(jaxpr, Jaxpr) and any(has_effects(e) for e in jaxpr.eqns):
                return True
    return False


# ----------------------------------------------------------------------------
# JAX's partial-evaluation entry points (jax.interpreters.partial_eval), for
# libraries that stage functions themselves (flax's nn.scan and lazy_init).
# ``fun`` is a ``linear_util.WrappedFun`` of flat arguments returning a flat
# list (``api_util.flatten_fun``), or any such callable.
# ----------------------------------------------------------------------------

class PartialVal(tuple):
    """``(None, value)``: a known value; ``(aval, None)``: an unknown one."""

    def __new__(cls, pair):
        aval, const = pair
        if (aval is None) == (const is None):
            raise ValueError("PartialVal is (aval, None) for an unknown value or (None, "
                             f"value) for a known one, got ({aval!r}, {const!r})")
        return tuple.__new__(cls, (aval, const))

    @classmethod
    def known(cls, const) -> "PartialVal":
        return cls((None, const))

    @classmethod
    def unknown(cls, aval) -> "PartialVal":
        return cls((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        return get_aval(self[1]) if self[0] is None else self[0]


def _flat_callable(fun) -> Callable:
    call = getattr(fun, "call_wrapped", fun)
    if not callable(call):
        raise TypeError(f"expected a linear_util.WrappedFun (wrap_init(f)), got {type(fun).__name__}")
    return call


def trace_to_jaxpr_nounits(fun, pvals: Sequence[PartialVal], instantiate=False):
    """Partially evaluate ``fun``: known inputs (``PartialVal.known``) compute
    now, on the current trace; what depends on unknown inputs is staged.
    Returns ``(jaxpr, out_pvals, consts)``: the jaxpr takes the unknown inputs
    (its constvars are the residuals ``consts``) and returns the unknown
    outputs; ``out_pvals`` has each output known (its value) or unknown (its
    aval).  ``instantiate`` (a bool or one per output) makes known outputs
    outputs of the jaxpr too."""
    trace = StagingTrace(core.current_trace(), fold_known=True, name="partial_eval")
    with new_trace_context(trace):
        args = [pv.get_known() if pv.is_known() else trace.new_arg(pv[0]) for pv in pvals]
        outs = list(_flat_callable(fun)(*args))
        inst = instantiate if isinstance(instantiate, (list, tuple)) else [instantiate] * len(outs)
        unknown = [trace.owns(o) or bool(i) for o, i in zip(outs, inst)]
        out_pvals = [PartialVal.unknown(get_aval(o)) if u else PartialVal.known(o)
                     for o, u in zip(outs, unknown)]
        jaxpr, consts = trace.build([o for o, u in zip(outs, unknown) if u])
    return jaxpr, out_pvals, consts


def trace_to_jaxpr_dynamic(fun, in_avals: Sequence[ShapedArray], *, keep_inputs=None,
                           lower: bool = False, auto_dce: bool = False):
    """Stage ``fun`` on abstract inputs: ``(jaxpr, out_avals, consts)``, the
    jaxpr's constvars standing for ``consts``; inputs whose ``keep_inputs``
    entry is False are not inputs of the jaxpr."""
    jaxpr, consts = trace_to_jaxpr(_flat_callable(fun), list(in_avals))
    if keep_inputs is not None:
        invars = [v for v, keep in zip(jaxpr.invars, keep_inputs) if keep]
        jaxpr = Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, jaxpr.outvars)
    if auto_dce:
        jaxpr, _ = dce_jaxpr(jaxpr)
    return jaxpr, [v.aval for v in jaxpr.outvars], consts


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """The same jaxpr with its constvars moved to the front of its invars."""
    return Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.eqns, jaxpr.outvars)
