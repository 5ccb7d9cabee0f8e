"""Optimisation passes over jaxprs, run before code generation.

Each pass is a function ``Jaxpr -> Jaxpr`` that keeps the jaxpr's meaning
(checked by property tests: the optimised function equals the original):

* ``simplify``: algebraic no-ops autodiff leaves behind — ``x * 1``, ``x + 0``,
  ``neg(neg x)``, no-op reshape/transpose/convert/broadcast, reductions over
  no axes;
* ``cse``: common-subexpression elimination (same primitive, params, inputs);
* ``dce``: dead-code elimination (``partial_eval.dce_jaxpr``).

``optimize`` runs them in that order.
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Jaxpr, JaxprEqn, Literal, Var
from fungrad.interpreters.partial_eval import dce_jaxpr

__all__ = ["optimize", "simplify", "cse", "dce"]


def _is_literal(atom, value) -> bool:
    return isinstance(atom, Literal) and np.ndim(atom.val) == 0 and atom.val == value


def _forward(eqn: JaxprEqn):
    """The input an equation merely forwards (so it can be dropped), or None."""
    name, ins, out = eqn.primitive.name, eqn.inputs, eqn.outvars[0] if eqn.outvars else None
    if eqn.primitive.multiple_results or out is None:
        return None
    same = lambda a: a.aval.shape == out.aval.shape and a.aval.dtype == out.aval.dtype
    if name == "mul":
        for a, b in ((ins[0], ins[1]), (ins[1], ins[0])):
            if _is_literal(b, 1) and same(a):
                return a
    if name == "add":
        for a, b in ((ins[0], ins[1]), (ins[1], ins[0])):
            if _is_literal(b, 0) and same(a):
                return a
    if name in ("sub", "div") and _is_literal(ins[1], 0 if name == "sub" else 1) and same(ins[0]):
        return ins[0]
    if name in ("reshape", "transpose", "convert_element_type", "broadcast_in_dim",
                "reduce_sum", "squeeze", "expand_dims") and same(ins[0]):
        if name == "reduce_sum" and eqn.params.get("axes"):
            return None
        return ins[0]
    return None


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Remove equations that are algebraic no-ops; rewire their users."""
    subst: dict = {}
    producer: dict = {}
    eqns = []
    read = lambda a: subst.get(a, a) if isinstance(a, Var) else a
    for eqn in jaxpr.eqns:
        eqn = JaxprEqn(eqn.primitive, [read(a) for a in eqn.inputs], eqn.params, eqn.outvars)
        fwd = _forward(eqn)
        if fwd is None and eqn.primitive.name == "neg":
            inner = producer.get(eqn.inputs[0])
            if inner is not None and inner.primitive.name == "neg":
                fwd = inner.inputs[0]
        if fwd is not None:
            subst[eqn.outvars[0]] = fwd
            continue
        for v in eqn.outvars:
            producer[v] = eqn
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(v) for v in jaxpr.outvars])


def _key(atom):
    if isinstance(atom, Literal):
        return ("lit", np.asarray(atom.val).dtype.str, np.asarray(atom.val).item())
    return atom


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Reuse the outputs of an earlier identical equation."""
    seen: dict = {}
    subst: dict = {}
    eqns = []
    read = lambda a: subst.get(a, a) if isinstance(a, Var) else a
    for eqn in jaxpr.eqns:
        inputs = [read(a) for a in eqn.inputs]
        try:
            key = (eqn.primitive, tuple(map(_key, inputs)),
                   tuple(sorted(eqn.params.items())))
            hash(key)
        except TypeError:      # unhashable params: never merged
            key = None
        if key is not None and key in seen:
            for v, w in zip(eqn.outvars, seen[key]):
                subst[v] = w
            continue
        if key is not None:
            seen[key] = eqn.outvars
        eqns.append(JaxprEqn(eqn.primitive, inputs, eqn.params, eqn.outvars))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(v) for v in jaxpr.outvars])


def dce(jaxpr: Jaxpr) -> Jaxpr:
    return dce_jaxpr(jaxpr)[0]


def optimize(jaxpr: Jaxpr) -> Jaxpr:
    return dce(cse(simplify(jaxpr)))
