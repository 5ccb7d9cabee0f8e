"""Forward mode (JVP), linearize, and transposition (reverse mode).

One set of rules serves both modes:

* every primitive has a JVP rule written with other primitives, so the JVP of
  a JVP is just another trace and derivatives of any order come for free;
* only *linear* primitives have a transpose rule;
* ``linearize = jvp + partial evaluation``: primal operations are evaluated
  (they are *known*), tangent operations are staged into a linear jaxpr whose
  constants are the residuals;
* ``vjp = linearize + backward_pass`` over that linear jaxpr.

Types, in the autodidax style::

    jvp       : (a -> b) -> (a, T a) -> (b, T b)
    linearize : (a -> b) -> a -> (b, T a -o T b)
    transpose : (T a -o T b) -> (T b -o T a)
    vjp       : (a -> b) -> a -> (b, T b -o T a)

Tangents and cotangents may be the symbolic ``Zero(aval)``; rules skip them,
and they are only materialised at API boundaries (``instantiate_zeros``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fungrad._dtype_classes import is_inexact
from fungrad import core
from fungrad.core import (ClosedJaxpr, ShapedArray, Tracer, Trace, Var, Literal, Jaxpr,
                          eval_jaxpr, get_aval, bind_on, new_trace_context, float0)
from fungrad.interpreters import array_ops
from fungrad.interpreters.partial_eval import (StagingTrace, partial_eval_jaxpr,
                                               trace_closed)
from fungrad.interpreters.rule_tables import RuleTable

__all__ = ["Zero", "UndefinedPrimal", "JVPTrace", "JVPTracer", "jvp_flat",
           "linearize_flat", "vjp_flat", "backward_pass", "jvp_jaxpr", "transpose_jaxpr",
           "defjvp", "defjvp2", "deflinear",
           "defbilinear", "defjvp_zero", "instantiate_zeros", "add_tangents",
           "tangent_aval", "is_undefined_primal", "unbroadcast", "primitive_jvps",
           "primitive_transposes"]


# ----------------------------------------------------------------------------
# Symbolic zeros and tangent types
# ----------------------------------------------------------------------------

class Zero:
    """A tangent/cotangent known to be zero; costs nothing until instantiated."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"

    # what a custom_jvp rule with symbolic_zeros=True may ask of one (JAX's SymbolicZero)
    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))


def is_float(dtype) -> bool:
    """Real or complex floating point: the dtypes with a tangent space."""
    return is_inexact(np.dtype(dtype))


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Floats are their own tangent space, of their weak type (JAX's
    ``to_tangent_aval``: the tangent of a Python number is weak, and the
    rules' operations keep it so or not); ints and bools have none (float0)."""
    if is_float(aval.dtype):
        return aval
    return ShapedArray(aval.shape, float0)


def zeros_like_aval(aval: ShapedArray):
    if aval.dtype == float0:
        return np.zeros(aval.shape, float0)
    if aval.weak_type:              # (a weak zero, as JAX's zeros_like_shaped_array)
        return array_ops.full(aval.shape, core.weak_array(0, aval.dtype))
    return array_ops.full(aval.shape, 0, aval.dtype)


def instantiate_zeros(t):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(x, y):
    """Sum of two (co)tangents; ``None`` and ``Zero`` are the identity."""
    if x is None or type(x) is Zero:
        return y
    if y is None or type(y) is Zero:
        return x
    return array_ops.add(x, y)


def unbroadcast(x, aval: ShapedArray):
    """Sum ``x`` down to ``aval.shape`` (transpose of NumPy broadcasting)."""
    shape = tuple(np.shape(x)) if not isinstance(x, Tracer) else x.shape
    if shape == aval.shape:
        return x
    lead = len(shape) - len(aval.shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(aval.shape) if d == 1 and shape[lead + i] != 1)
    summed = array_ops.reduce_sum(x, axes) if axes else x
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return summed if kept == aval.shape else array_ops.reshape(summed, aval.shape)


# ----------------------------------------------------------------------------
# The JVP trace
# ----------------------------------------------------------------------------

class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent", "_aval")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        self._aval = None

    @property
    def aval(self):
        aval = self._aval
        if aval is None:       # computed once: fungrad.numpy asks for dtypes often
            aval = self._aval = get_aval(self.primal)
        return aval

    def _concrete_value(self):
        p = self.primal
        return p._concrete_value() if isinstance(p, Tracer) else np.asarray(p)


class JVPTrace(Trace):
    """Pairs every value with its tangent; rules run on the parent trace."""
    __slots__ = ()
    kind = "jvp"

    def lift(self, x):
        """(primal, tangent) of ``x``; values of other traces have zero tangent."""
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        nonzero = False
        for a in args:
            if type(a) is JVPTracer and a._trace is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
                nonzero = nonzero or type(a.tangent) is not Zero
            else:
                p, t = self.lift(a)
                primals.append(p)
                tangents.append(t)
        if not nonzero:
            return bind_on(self.parent, prim, primals, params)
        if prim.jvp is None:
            raise TypeError(f"Differentiation rule for primitive '{prim.name}' is "
                            "not implemented (no JVP rule registered).")
        prev = core._tls.trace
        core._tls.trace = self.parent
        try:
            out, t_out = prim.jvp(primals, tangents, **params)
        finally:
            core._tls.trace = prev
        if prim.multiple_results:
            return [self.pure(o, t) for o, t in zip(out, t_out)]
        return self.pure(out, t_out)

    def pure(self, primal, tangent):
        if type(tangent) is Zero:
            return primal    # nothing to track: save a tracer
        return JVPTracer(self, primal, tangent)


def jvp_flat(f: Callable, primals: Sequence, tangents: Sequence):
    """Run flat ``f`` on (primal, tangent) pairs; returns (outs, out_tangents)."""
    trace = JVPTrace(core.current_trace())
    with new_trace_context(trace):
        ins = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = f(*ins)
        pairs = [trace.lift(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]


def vjp_flat(f: Callable, primals: Sequence):
    """``vjp : ([a] -> [b]), [a] -> ([b], [T b] -o [T a])`` on flat lists:
    linearize, then a backward pass per call of the pullback."""
    outs, jaxpr, residuals = linearize_flat(f, primals)
    return outs, lambda cts: backward_pass(jaxpr, residuals, list(cts))


def tangents_from(nonzeros: Sequence[bool], values, avals) -> list:
    """One tangent per aval: the next of ``values`` where ``nonzeros``, else a Zero."""
    it = iter(values)
    return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzeros, avals)]


# ----------------------------------------------------------------------------
# Rule helpers (one signature per table)
# ----------------------------------------------------------------------------

# JAX's registries, as views of each primitive's own rules (rule_tables.py):
# ``ad.primitive_jvps[p] = rule`` is ``p.jvp = rule``; same signatures as JAX
primitive_jvps = RuleTable("jvp")
primitive_transposes = RuleTable("transpose", on_set=lambda p: setattr(p, "linear", True))


def _sum_contributions(parts, out_aval):
    total = None
    for p in parts:
        total = add_tangents(total, p)
    return Zero(tangent_aval(out_aval)) if total is None else total


def defjvp(prim, *rules):
    """JVP from one rule per argument: ``rule(g, *primals, **params) -> tangent``.

    A rule of ``None`` means the argument is not differentiable. Zero tangents
    are skipped; the contributions are summed.
    """
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        parts = [r(t, *primals, **params) for r, t in zip(rules, tangents)
                 if r is not None and type(t) is not Zero]
        return ans, _sum_contributions(parts, get_aval(ans))
    prim.jvp = jvp


def defjvp2(prim, *rules):
    """Like ``defjvp`` but each rule also gets the output: ``rule(g, ans, *primals)``."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        parts = [r(t, ans, *primals, **params) for r, t in zip(rules, tangents)
                 if r is not None and type(t) is not Zero]
        return ans, _sum_contributions(parts, get_aval(ans))
    prim.jvp = jvp


def defjvp_zero(prim):
    """A primitive whose outputs are piecewise constant (zero derivative)."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
        return ans, Zero(tangent_aval(get_aval(ans)))
    prim.jvp = jvp


def deflinear(prim, transpose_rule):
    """A primitive linear in all of its arguments: its JVP is itself applied to
    the tangents, and ``transpose_rule(ct, *args, **params)`` reverses it."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        t_out = prim.bind(*[instantiate_zeros(t) for t in tangents], **params)
        return ans, t_out
    prim.jvp = jvp
    prim.transpose = transpose_rule
    prim.linear = True


def defbilinear(prim, lhs_transpose, rhs_transpose):
    """A product ``prim(x, y)`` linear in each argument separately.

    ``lhs_transpose(ct, x_undefined, y, **params)`` gives the cotangent of x;
    ``rhs_transpose(ct, x, y_undefined, **params)`` that of y.
    """
    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        ans = prim.bind(x, y, **params)
        parts = []
        if type(tx) is not Zero:
            parts.append(prim.bind(tx, y, **params))
        if type(ty) is not Zero:
            parts.append(prim.bind(x, ty, **params))
        return ans, _sum_contributions(parts, get_aval(ans))

    def transpose(ct, x, y, **params):
        if is_undefined_primal(x) and is_undefined_primal(y):
            raise TypeError(f"{prim.name} of two linear values is not linear")
        if is_undefined_primal(x):
            return [lhs_transpose(ct, x, y, **params), None]
        return [None, rhs_transpose(ct, x, y, **params)]
    prim.jvp = jvp
    prim.transpose = transpose
    prim.linear = True


# ----------------------------------------------------------------------------
# Linearize: JVP with unknown tangents, staged by partial evaluation
# ----------------------------------------------------------------------------

def linearize_flat(f: Callable, primals: Sequence, nonzeros: Sequence[bool] | None = None,
                   out_nonzeros: list | None = None):
    """``(outs, linear_jaxpr, residuals)``; the jaxpr maps input tangents to
    output tangents, with the residuals as its constvars.  With ``nonzeros``,
    only the marked inputs have a tangent (and an input of the jaxpr); the
    others are held fixed.  ``out_nonzeros``, a list, gets whether each
    output's tangent is not symbolically zero (its jaxpr output is zeros then).

    Before/after for ``f = sin``::

        linear jaxpr: { lambda a:f64[]; b:f64[]. let c:f64[] = mul b a in (c,) }
        residuals:    [cos(x)]
    """
    pe = StagingTrace(core.current_trace(), fold_known=True)
    nonzeros = [True] * len(primals) if nonzeros is None else nonzeros
    with new_trace_context(pe):
        tangents = []
        for p, nz in zip(primals, nonzeros):
            t_aval = tangent_aval(get_aval(p))
            if not nz:
                tangents.append(Zero(t_aval))
                continue
            arg = pe.new_arg(t_aval)
            tangents.append(arg if t_aval.dtype != float0 else Zero(t_aval))
        outs, out_tangents = jvp_flat(f, primals, tangents)
        if out_nonzeros is not None:
            out_nonzeros.extend(type(t) is not Zero for t in out_tangents)
        out_tangents = [instantiate_zeros(t) for t in out_tangents]
        jaxpr, residuals = pe.build(out_tangents)
    return outs, jaxpr, residuals


# ----------------------------------------------------------------------------
# Derived jaxprs: the JVP of a jaxpr (higher-order primitives' jvp rules)
# ----------------------------------------------------------------------------

def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool] = False):
    """``jvp_jaxpr : ClosedJaxpr(a -> b), nonzeros -> (ClosedJaxpr((a, T a') -> (b, T b')), out_nonzeros)``

    ``T a'`` are the tangents of the inputs marked in ``nonzeros`` (the others
    are zero); ``T b'`` those of the outputs whose tangent is not symbolically
    zero (``out_nonzeros``), or that ``instantiate`` forces (float outputs
    only: integers have no tangent).  Cached on ``closed``.  For ``sin``::

        { lambda ; a:f64[]. let b = sin a in (b,) }, nonzeros=(True,) ->
        { lambda ; a:f64[] c:f64[]. let b = sin a; d = cos a; e = mul c d in (b, e) }
    """
    n_out = len(closed.out_avals)
    inst = (instantiate,) * n_out if isinstance(instantiate, bool) else tuple(instantiate)
    return closed.derived(("jvp", tuple(nonzeros), inst),
                          lambda: _jvp_jaxpr(closed, tuple(nonzeros), inst))


def _jvp_jaxpr(closed: ClosedJaxpr, nonzeros, inst):
    n = len(closed.in_avals)
    out_nonzeros = []

    def jvp_fun(*args):
        tangents = tangents_from(nonzeros, args[n:], closed.in_avals)
        outs, out_ts = jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                list(args[:n]), tangents)
        out_ts = [instantiate_zeros(t) if i and is_float(a.dtype) else t
                  for t, i, a in zip(out_ts, inst, closed.out_avals)]
        out_nonzeros[:] = [type(t) is not Zero for t in out_ts]
        return outs + [t for t in out_ts if type(t) is not Zero]
    t_avals = [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]
    return trace_closed(jvp_fun, list(closed.in_avals) + t_avals), tuple(out_nonzeros)


# ----------------------------------------------------------------------------
# Transposition: the backward pass over a linear jaxpr
# ----------------------------------------------------------------------------

class UndefinedPrimal:
    """Stands for the linear input of a primitive being transposed."""
    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr: Jaxpr, consts: Sequence, cts_out: Sequence) -> list:
    """Cotangents of ``jaxpr``'s invars given those of its outvars.

    A loop over the equations in reverse (never recursion, so chains of any
    length work); cotangents of a variable used several times are summed.
    Returns ``Zero`` for inputs that received no cotangent.
    """
    known = dict(zip(jaxpr.constvars, consts))
    ct_env: dict[Var, Any] = {}

    def accumulate(v, ct):
        if isinstance(v, Var) and v not in known and ct is not None and type(ct) is not Zero:
            ct_env[v] = add_tangents(ct_env.get(v), ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        accumulate(v, ct)
    # the equation being transposed: what its rule binds is attributed to its
    # source (the user's primal line); what user code it runs (custom_vjp's bwd)
    # is marked as running in the backward pass (jax_debug_nans' provenance)
    tls = core._tls
    running, transforms = tls.running, tls.transforms
    running.append(None)
    tls.transforms = transforms + (_BACKWARD,)
    try:
        for eqn in reversed(jaxpr.eqns):
            cts = [ct_env.pop(v, None) for v in eqn.outvars]
            if all(c is None for c in cts):
                continue
            running[-1] = eqn
            prim = eqn.primitive
            if prim.transpose is None:
                raise TypeError(f"Transpose rule for '{prim.name}' is not implemented: "
                                "the function being transposed is not linear in its input.")
            invals = [a.val if type(a) is Literal else
                      known[a] if a in known else UndefinedPrimal(a.aval)
                      for a in eqn.inputs]
            if prim.multiple_results:
                ct = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outvars, cts)]
            else:
                ct = cts[0]
            cts_in = prim.transpose(ct, *invals, **eqn.params)
            for a, c in zip(eqn.inputs, cts_in):
                if type(a) is Var and a not in known:
                    accumulate(a, c)
    finally:
        running.pop()
        tls.transforms = transforms
    return [ct_env.pop(v) if v in ct_env else Zero(v.aval) for v in jaxpr.invars]


_BACKWARD = ("backward pass", "")
core.register_interpreter(backward_pass, phase=("transpose", ""))


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool],
                    ct_weak: Sequence[bool] | None = None) -> ClosedJaxpr:
    """``transpose_jaxpr : ClosedJaxpr((r, T a) -o T b), linear -> ClosedJaxpr((r, T b) -o T a)``

    ``linear[i]`` marks the inputs the jaxpr is linear in; the transposed
    jaxpr takes the others (residuals ``r``, in order) and then one cotangent
    per output, and returns one instantiated cotangent per linear input.
    Equations that depend on residuals only are evaluated first (a
    checkpoint's recomputation, constants), then the backward pass runs over
    the linear rest.  ``ct_weak``: the weak types of the cotangents it is
    called with (by default its outputs'), which those it returns follow (JAX
    stages a transpose at its cotangents' types).  Cached on ``closed``.
    """
    ct_weak = None if ct_weak is None else tuple(ct_weak)
    return closed.derived(("transpose", tuple(linear), ct_weak),
                          lambda: _transpose_jaxpr(closed, tuple(linear), ct_weak))


def _transpose_jaxpr(closed: ClosedJaxpr, linear, ct_weak=None):
    forward, lin_part, out_linear, num_res = _split_nonlinear(closed, linear)
    lj = lin_part.jaxpr
    as_linear = Jaxpr(lj.constvars + lj.invars[:num_res], lj.invars[num_res:], lj.eqns,
                      lj.outvars)
    n_res = sum(not lin for lin in linear)

    def transposed(*args):
        res, cts = list(args[:n_res]), args[n_res:]
        if forward is not None:
            outs = eval_jaxpr(forward.jaxpr, forward.consts, *res)
            res = outs[len(outs) - num_res:] if num_res else []
        cts = [c for c, lin in zip(cts, out_linear) if lin]
        cts_in = backward_pass(as_linear, list(lin_part.consts) + res, cts)
        return [instantiate_zeros(c) for c in cts_in]
    ct_avals = [tangent_aval(a) for a in closed.out_avals]
    if ct_weak is not None:
        ct_avals = with_ct_weak(ct_avals, ct_weak)
    avals = [a for a, lin in zip(closed.in_avals, linear) if not lin] + ct_avals
    return trace_closed(transposed, avals)


def with_ct_weak(ct_avals, ct_weak) -> list:
    """``ct_avals`` weakly typed as the cotangents a transpose is called with
    (``ct_weak``): JAX stages a transpose at its cotangents' types."""
    return [a if a.dtype == float0 or a.weak_type == w else ShapedArray(a.shape, a.dtype, w)
            for a, w in zip(ct_avals, ct_weak)]


def _split_nonlinear(closed: ClosedJaxpr, linear):
    """``(forward, linear part, out_linear, num_res)``: when some equations do not
    depend on the linear inputs, ``forward`` computes them (residuals -> the
    linear part's residuals) and the linear part takes those; otherwise
    ``forward`` is None and the linear part is ``closed`` with its residual
    inputs first."""
    jaxpr = closed.jaxpr
    linear_vars = {v for v, lin in zip(jaxpr.invars, linear) if lin}
    for eqn in jaxpr.eqns:
        if not any(isinstance(a, Var) and a in linear_vars for a in eqn.inputs):
            forward, lin_part, out_unknowns, num_res = partial_eval_jaxpr(closed, linear)
            return forward, lin_part, out_unknowns, num_res
        linear_vars.update(eqn.outvars)
    res = [v for v, lin in zip(jaxpr.invars, linear) if not lin]
    lin = [v for v, lin in zip(jaxpr.invars, linear) if lin]
    reordered = ClosedJaxpr(Jaxpr(jaxpr.constvars, res + lin, jaxpr.eqns, jaxpr.outvars),
                            closed.consts)
    return None, reordered, [True] * len(jaxpr.outvars), len(res)
