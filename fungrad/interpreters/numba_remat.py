"""Recomputing cheap elementwise values in the compiled segment that reads
them, instead of storing them in one segment and loading them in another
(the numba backend's rematerialization, ``remat_cheap_values``).

Between two GEMMs a fused loop nest writes every value a later segment
reads: a tanh-GELU's forward nest stores ``0.5 * u``, ``3 * u**2`` and
``c * (u + 0.044715 * u**3)``, the one after ``tanh`` stores ``1 + t`` and
``(1 + t) * (1 - t)``, and the backward nest loads them all again: ten
passes over memory where four would do, each value costing a write, a read
and fresh pages.  Those values are a few arithmetic instructions away from
arrays the program keeps anyway (the GEMM's output ``jh``, ``t``), so the
later segment recomputes them from those.

What may be recomputed: top-level equations of ``numba_fusion``'s cheap
arithmetic (and ``integer_pow`` up to a fourth power) that compile as
scalars, chains of them up to ``_BUDGET`` equations, from *anchors*: the
program's arguments and values some segment stores or NumPy computes for
other reasons (a GEMM's or ``tanh``'s result, a value already crossing
segments that is not itself cheap).  A run takes a recomputation only when
the bytes it reads do not grow (arrays under an eighth of the value's size
are free: a bias vector); the value's own store disappears once no later
run reads it (``part_interfaces`` then leaves it out of its segment's
results, and numba drops the dead scalar code).  So no segment returns
more arrays and none reads more bytes: the trade is a few flops per element
for passes over memory.  (An anchor computed inside a segment and not
returned, a 2-D GEMM numba compiles, is not used: returning it would add a
store; that trade, one store for several, is not made.)
"""
from __future__ import annotations

from fungrad.core import JaxprEqn, Literal, Var
from fungrad.interpreters.codegen import part_interfaces
from fungrad.interpreters.numba_fusion import _calls

__all__ = ["remat_cheap_values"]

# the longest chain of equations recomputed for one value
_BUDGET = 8


def _cheap(eqn, fusable) -> bool:
    """An equation worth recomputing rather than loading: an instruction or
    two per element, compiled as a scalar expression of its operands."""
    prim = eqn.primitive
    if len(eqn.outvars) != 1 or not fusable(eqn, True):
        return False
    if prim.name == "integer_pow":
        return 0 <= eqn.params["y"] <= 4
    return not _calls(eqn)


def _nbytes(v) -> int:
    return v.aval.size * v.aval.dtype.itemsize


class _Plan:
    """Which values are anchors and which equations are cheap, for ``runs``."""

    def __init__(self, runs, outvars, fusable):
        self.defining = {}          # var -> (its equation, the index of its run)
        for k, run in enumerate(runs):
            for eqn in run.eqns:
                for v in eqn.outvars:
                    self.defining[v] = (eqn, k)
        ins, outs = part_interfaces([run.eqns for run in runs], outvars)
        stored = {v for k, run in enumerate(runs) if run.compiled for v in outs[k]}
        self.cheap = {eqn for run in runs if run.compiled for eqn in run.eqns
                      if _cheap(eqn, fusable)}
        # arguments, NumPy results and stored values that are not cheap
        self.anchor = lambda v: v not in self.defining or (
            self.defining[v][0] not in self.cheap
            and (not runs[self.defining[v][1]].compiled or v in stored))
        self.ins = ins

    def chain(self, v, k: int, budget: list):
        """The cheap equations recomputing ``v`` in run ``k`` from anchors (in
        definition order) and the anchors read, or None."""
        eqn, at = self.defining.get(v, (None, k))
        budget[0] -= 1
        if eqn not in self.cheap or at >= k or budget[0] < 0:
            return None
        eqns, reads = [], {}
        for a in eqn.inputs:
            if isinstance(a, Literal) or not isinstance(a, Var):
                continue
            if self.anchor(a):
                reads[a] = None
                continue
            sub = self.chain(a, k, budget)
            if sub is None:
                return None
            eqns.extend(e for e in sub[0] if e not in eqns)
            reads.update(sub[1])
        return eqns + [eqn], reads


def _accept(reads: dict, v, chain_reads: dict) -> dict | None:
    """The run's reads with ``v`` replaced by ``chain_reads``, if that reads no
    more bytes (arrays under an eighth of ``v``'s size count as nothing)."""
    small = _nbytes(v) // 8
    cost = lambda vs: sum(_nbytes(a) for a in vs if _nbytes(a) > small)
    after = {a: None for a in reads if a is not v}
    after.update(chain_reads)
    return after if cost(after) <= cost(reads) else None


def _rewrite(run, eqns) -> None:
    """Prepend copies of ``eqns`` (fresh outputs) to ``run`` and read them there."""
    fresh = {}
    rename = lambda a: fresh.get(a, a) if isinstance(a, Var) else a
    copies = []
    for eqn in eqns:
        out = Var(eqn.outvars[0].aval)
        copies.append(JaxprEqn(eqn.primitive, [rename(a) for a in eqn.inputs], eqn.params,
                               [out], eqn.source, eqn.scope))
        fresh[eqn.outvars[0]] = out
    run.eqns = copies + [
        eqn if not any(a in fresh for a in eqn.inputs if isinstance(a, Var)) else
        JaxprEqn(eqn.primitive, [rename(a) for a in eqn.inputs], eqn.params, eqn.outvars,
                 eqn.source, eqn.scope)
        for eqn in run.eqns]


def remat_cheap_values(runs, outvars, fusable) -> None:
    """Rewrite the compiled ``runs`` (``numba_backend._Run``) of a program with
    outputs ``outvars`` to recompute the cheap values they read (module
    docstring); ``fusable(eqn, elementwise)`` is the backend's test."""
    plan = _Plan(runs, outvars, fusable)
    # (program order of the original equations: the copies keep it)
    order = {eqn: i for i, eqn in enumerate(e for r in runs for e in r.eqns)}
    for k, run in enumerate(runs):
        if not run.compiled:
            continue
        reads = dict.fromkeys(plan.ins[k])
        recompute = []
        for v in plan.ins[k]:
            found = plan.chain(v, k, [_BUDGET]) if not plan.anchor(v) else None
            if found is None:
                continue
            after = _accept(reads, v, found[1])
            if after is not None:
                reads = after
                recompute.extend(e for e in found[0] if e not in recompute)
        if recompute:
            _rewrite(run, sorted(recompute, key=order.__getitem__))
