"""Partial evaluation and dead-code elimination of jaxprs.

Partial evaluation splits a computation into what can be computed now (the
*known* part) and what must wait for the *unknown* inputs.  The staging trace
of ``core.StagingTrace(fold_known=True)`` does it on the fly: an equation none
of whose inputs are unknown runs on the parent trace, the others are recorded,
and known values they use become residuals.  ``ad.linearize_flat`` is exactly
that with the tangents unknown.

``partial_eval_jaxpr`` applies the same split to an existing jaxpr, by
re-interpreting it under two stacked staging traces: the outer one records the
known part, the inner one (folding known equations into the outer) records
the unknown part.  Before/after, with the second input unknown::

    { lambda ; a:f64[] b:f64[]. let c = sin a; d = mul c b in (d,) }
  known:   { lambda ; a:f64[]. let c = sin a in (c,) }            # residual c
  unknown: { lambda ; c:f64[] b:f64[]. let d = mul c b in (d,) }
"""
from __future__ import annotations

from typing import Sequence

from fungrad import core
from fungrad.core import (ClosedJaxpr, Jaxpr, JaxprEqn, StagingTrace, StagingTracer,
                          Var, eval_jaxpr, new_trace_context)

__all__ = ["partial_eval_jaxpr", "dce_jaxpr", "has_effects"]


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False):
    """Split ``closed`` by which inputs are unknown.

    Returns ``(known, unknown, out_unknowns, num_res)``:
    ``known`` maps the known inputs to the known outputs followed by
    ``num_res`` residuals; ``unknown`` maps the residuals followed by the
    unknown inputs to the unknown outputs.  ``instantiate[i]`` forces output
    ``i`` to be computed by ``unknown`` even if it is known.
    """
    jaxpr = closed.jaxpr
    if len(unknowns) != len(jaxpr.invars):
        raise ValueError(f"partial_eval_jaxpr: {len(unknowns)} unknown flags for "
                         f"{len(jaxpr.invars)} inputs")
    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    known_trace = StagingTrace(core.current_trace(), fold_known=False)
    with new_trace_context(known_trace):
        unknown_trace = StagingTrace(known_trace, fold_known=True)
        with new_trace_context(unknown_trace):
            args = [unknown_trace.new_arg(v.aval) if u else known_trace.new_arg(v.aval)
                    for v, u in zip(jaxpr.invars, unknowns)]
            outs = eval_jaxpr(jaxpr, closed.consts, *args)
            is_unknown = [isinstance(o, StagingTracer) and o._trace is unknown_trace
                          for o in outs]
            out_unknowns = [u or i for u, i in zip(is_unknown, inst)]
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
        if any(v in live for v in eqn.outvars) or (keep_effects and has_effects(eqn)):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if isinstance(a, Var))
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
