"""Which primitives each generic test case binds: measured, not declared.

For every ``Case`` of ``tests/cases`` this stages, on one deterministic input
per dtype choice, the programs the generic tests transform: the function
itself, its JVP and VJP (transposes included), forward-over-reverse second
derivatives when ``grad_order >= 2``, and its vmap.  While they are staged,
every primitive that goes through ``Primitive.bind`` or is staged directly by
a partial-evaluation rule (``StagingTrace.stage``) is recorded, and the
staged jaxprs are walked, sub-jaxprs of higher-order primitives included.
So primitives bound inside control-flow bodies, custom rules, linearized
(transient) jaxprs and backward passes all count.

The measurement runs in a fresh interpreter (``python -m tests.prim_coverage``,
used by ``tests/test_generic.py``): jit and derived-jaxpr caches warmed by
other tests would otherwise hide what a case binds while it is traced.
Nothing here touches fungrad's code paths outside the measurement.
"""
from __future__ import annotations

import contextlib
import json
import sys

import numpy as np

import fungrad
from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr
from fungrad.interpreters.partial_eval import StagingTrace
from fungrad.tree_util import tree_flatten, tree_unflatten

_SHAPES = {"any": (2, 3), "nonempty": (2, 3), "vec": (3,), "mat": (3, 2), "sqmat": (3, 3)}


@contextlib.contextmanager
def recording(seen: set):
    """Add to ``seen`` the name of every primitive bound or staged meanwhile."""
    bind, stage = core.Primitive.bind, StagingTrace.stage

    def recording_bind(prim, *args, **params):
        seen.add(prim.name)
        return bind(prim, *args, **params)

    def recording_stage(trace, prim, args, params):
        seen.add(prim.name)
        return stage(trace, prim, args, params)
    core.Primitive.bind, StagingTrace.stage = recording_bind, recording_stage
    try:
        yield seen
    finally:
        core.Primitive.bind, StagingTrace.stage = bind, stage


def _walk(jaxpr: Jaxpr, seen: set):
    for eqn in jaxpr.eqns:
        seen.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, ClosedJaxpr):
                    _walk(sub.jaxpr, seen)
                elif isinstance(sub, Jaxpr):
                    _walk(sub, seen)


def example_inputs(case):
    """Deterministic inputs: one set per dtype choice (tuples of dtypes cycled)."""
    from tests.test_generic import _values
    base = next((_SHAPES[a.shape] for a in case.args if a.shape in _SHAPES), ())
    shapes = [a.shape if isinstance(a.shape, tuple) else _SHAPES.get(a.shape, base)
              for a in case.args]
    choices = max([len(a.dtype) for a in case.args if isinstance(a.dtype, tuple)] or [1])
    for k in range(choices):
        rng = np.random.default_rng(k)
        dtypes = []
        for a in case.args:        # ("same": the first argument's dtype, as test_generic)
            dtypes.append(dtypes[0] if a.dtype == "same" else
                          a.dtype[k % len(a.dtype)] if isinstance(a.dtype, tuple) else a.dtype)
        yield [_values(rng, a, s, d) for a, s, d in zip(case.args, shapes, dtypes)]


def _cotangents(outs):
    """Ones for the float outputs, float0 zeros for the others."""
    leaves, tree = tree_flatten(outs)
    avals = [core.get_aval(o) for o in leaves]
    return tree_unflatten(tree, [np.ones(a.shape, a.dtype) if a.dtype.kind in "fc"
                                 else np.zeros(a.shape, fungrad.float0) for a in avals])


def _jvp_of(f):
    return lambda *p: fungrad.jvp(f, p, tuple(fungrad.numpy.ones_like(x) for x in p))[1]


def _vjp_of(f):
    def pulled_back(*p):
        out, pullback = fungrad.vjp(f, *p)
        return pullback(_cotangents(out))
    return pulled_back


def programs(case, args):
    """``(function, arguments)`` pairs: what the generic tests transform."""
    from tests.test_generic import _diff_argnums
    yield case.fun, args
    nums = _diff_argnums(case, args)
    if case.grad_order > 0 and nums:
        def of_diff_args(*d):
            full = list(args)
            for i, v in zip(nums, d):
                full[i] = v
            return case.fun(*full)
        diff_args = tuple(args[i] for i in nums)
        firsts = ([_jvp_of(of_diff_args)] if "fwd" in case.modes else []) + (
            [_vjp_of(of_diff_args)] if "rev" in case.modes else [])
        for first in firsts:
            yield first, diff_args
        if case.grad_order > 1:
            yield _jvp_of(firsts[-1]), diff_args     # forward over reverse
    if case.vmap:
        yield fungrad.vmap(case.fun), [np.stack([x, x]) for x in args]


def bound_by(case) -> tuple[set, list]:
    """(names of the primitives ``case`` binds, errors while staging it)."""
    seen, errors = set(), []
    with recording(seen):
        for args in example_inputs(case):
            for fun, fun_args in programs(case, args):
                try:
                    _walk(fungrad.make_jaxpr(fun)(*fun_args).jaxpr, seen)
                except Exception as err:   # noqa: BLE001 - reported by the registry test
                    errors.append(f"{type(err).__name__}: {err}"[:300])
    return seen, errors


def measure() -> dict:
    """``{case name: {"prims": [...], "errors": [...]}}`` for every case."""
    from tests.test_generic import CASES
    result = {}
    with np.errstate(all="ignore"):
        for case in CASES:
            seen, errors = bound_by(case)
            result[case.name] = {"prims": sorted(seen), "errors": errors}
    return result


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    json.dump(measure(), sys.stdout)
