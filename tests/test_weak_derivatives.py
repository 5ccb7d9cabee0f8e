"""Weak types of derivatives (gradients, tangents, cotangents) against real JAX.

tests/data/jax_weak_derivative_table.json was recorded once with real JAX
0.10.2 by tools/gen_weak_derivative_table.py (see its docstring) from the
cases of tests/weak_derivative_cases.py: for every unary and binary
primitive family of the generic suite (lax's elementwise ops, integer
literals in rules, reductions and scans, structural and indexing ops,
matrices, control flow, custom rules, jnp and nn compositions), on weak,
strong and Python-scalar arguments, the dtype and weak type of every output
of grad, value_and_grad, jvp, vjp (with a cotangent ``ones_like`` the output
and with a strongly typed one), linearize, jacfwd and jacrev, with
jax_enable_x64 on and off.

In JAX a (co)tangent is weak as the constants of each JVP and transpose rule
make it: a tangent has its primal's weak type, a rule's constant is weak when
the value it is made like is a weak scalar (``lax._const``), and every
operation of a rule is weak when all its operands are.  fungrad's rules are
written with the same operations, so the same types come out.
``KNOWN_DIFFERENCES`` lists what differs by design and ``OPEN_DIFFERENCES``
what is not mirrored yet, each with the reason; the tests check that exactly
those entries differ, so a fix or a new difference both show up.
"""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.lax as flax_
import fungrad.numpy as fnp
from tests.weak_derivative_cases import CASES, derivative_types, make_arg

TABLE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_weak_derivative_table.json")
                   .read_text())
MODES = {"x64": True, "x32": False}
NAMESPACE = {"jax": fungrad, "jnp": fnp, "lax": flax_, "np": np}

ALL_WAYS = ("grad", "value_and_grad", "jvp", "linearize", "vjp", "vjp_strong_ct", "jacfwd")
_REVERSE = ("grad", "value_and_grad", "vjp", "vjp_strong_ct")


def _entries(src, arg_lists, ways, reason) -> dict:
    return {(src, args, way): reason for args in arg_lists for way in ways}


# (expression, arguments, way) -> why fungrad differs from JAX there (both
# x64 settings).  Differences by design:
KNOWN_DIFFERENCES = {
    **_entries("lambda a: lax.conj(a)", ("pf", "wf0", "wf", "f32", "f32s"),
               ("jvp", "linearize", "vjp", "vjp_strong_ct", "jacfwd"),
               "a dtype, not a weak type: fungrad's lax.conj of a real array is the array "
               "(NumPy's conj), JAX's makes it complex"),
    **{key: "fungrad's matrix rules (inverse, determinants, Cholesky, eigh, triangular "
            "solve) are other formulas than JAX's; a weak matrix's derivatives are weak as "
            "their operations make them, JAX's as its own happen to"
       for src, ways in [("lambda a: jnp.linalg.inv(a)", _REVERSE),
                         ("lambda a: jnp.linalg.det(a)", ("grad", "value_and_grad", "vjp")),
                         ("lambda a: jnp.linalg.slogdet(a)[1]", _REVERSE),
                         ("lambda a: jnp.linalg.cholesky(a)", ALL_WAYS),
                         ("lambda a: jnp.linalg.eigh(a)[0]",
                          ("jvp", "linearize", "vjp", "vjp_strong_ct", "jacfwd")),
                         ("lambda a: lax.linalg.triangular_solve(a, a, left_side=True, "
                          "lower=True)", ("grad", "value_and_grad", "jvp", "linearize", "vjp"))]
       for key in _entries(src, ("wm",), ways, "")},
}
# ... and differences not mirrored yet, each with the operations that would
# mirror JAX (none now: a new one goes here)
OPEN_DIFFERENCES: dict = {}


def describe(x):
    if not hasattr(x, "dtype"):
        return f"a {type(x).__name__}, not an array"
    return [str(x.dtype), bool(fungrad.typeof(x).weak_type)]


def _mismatches(mode, src, arg_lists):
    fn = eval(src, NAMESPACE)
    bad = []
    for argnames in arg_lists:
        key = f"{src} @ {','.join(argnames)}"
        args = [make_arg(NAMESPACE, n) for n in argnames]
        for way, want in TABLE[mode][key].items():
            if want is None:            # JAX rejects it: nothing to compare
                continue
            try:
                got = derivative_types(NAMESPACE, fn, args, way, describe)
            except Exception as err:    # reported as a mismatch, with the reason
                got = f"{type(err).__name__}: {str(err)[:120]}"
            entry = (src, ",".join(argnames), way)
            known = entry in KNOWN_DIFFERENCES or entry in OPEN_DIFFERENCES
            if (got == want) == known:
                bad.append(f"{key} [{way}]: fungrad {got}, JAX {want}"
                           + (" (a listed difference that is gone: remove it from "
                              "KNOWN_DIFFERENCES/OPEN_DIFFERENCES)" if known else ""))
    return bad


@pytest.mark.parametrize("x64", list(MODES))
@pytest.mark.parametrize("src,arg_lists", CASES, ids=[src for src, _ in CASES])
def test_derivative_types_match_jax(x64, src, arg_lists):
    with fungrad.enable_x64(MODES[x64]):
        assert _mismatches(x64, src, arg_lists) == []


def test_the_table_covers_every_way_and_rejects_few():
    # the record is what the tests compare with: most entries ran in JAX
    entries = [v for mode in MODES for case in TABLE[mode].values() for v in case.values()]
    assert len(entries) > 5000 and sum(v is None for v in entries) < len(entries) // 4
    assert {tuple(leaf) for v in entries if v for leaf in v} >= {
        ("float32", True), ("float32", False), ("float64", True), ("float64", False)}


# the three ways fungrad computes a gradient (the eager tape, the tape staged
# under jit, and linearize + backward pass under another transformation) give
# it one weak type, for chains of the rules above on weak and strong arguments
_CHAIN_OPS = [lambda x: fnp.sin(x), lambda x: x * 2.0, lambda x: x * 2, lambda x: fnp.sqrt(x),
              lambda x: flax_.square(x), lambda x: fnp.tanh(x), lambda x: fnp.maximum(x, 0.5),
              lambda x: fnp.cumsum(x), lambda x: fnp.sort(fnp.atleast_1d(x)),
              lambda x: fnp.atleast_1d(x)[:1], lambda x: x * fnp.float32(3)]


@given(st.lists(st.sampled_from(range(len(_CHAIN_OPS))), min_size=1, max_size=4),
       st.sampled_from(["pf", "wf0", "wf", "f32", "f32s"]), st.booleans())
def test_eager_staged_and_linearized_gradients_have_one_weak_type(ops, arg, x64):
    def loss(a):
        for i in ops:
            a = _CHAIN_OPS[i](a)
        return fnp.sum(a)
    with fungrad.enable_x64(x64):
        x = make_arg(NAMESPACE, arg)
        one = 1.0 if isinstance(x, float) else fnp.ones_like(x)
        eager = fungrad.grad(loss)(x)
        staged = fungrad.jit(fungrad.grad(loss))(x)
        linearized = fungrad.jvp(fungrad.grad(loss), (x,), (one,))[0]
        assert describe(eager) == describe(staged) == describe(linearized)
        np.testing.assert_allclose(np.asarray(eager), np.asarray(staged), rtol=1e-6)


@pytest.mark.parametrize("arg", ["pf", "wf0", "wf", "f32"])
@pytest.mark.parametrize("strong_ct", [False, True])
def test_while_loop_cotangent_types_eager_and_staged_agree(arg, strong_ct):
    # JAX rejects reverse mode through while_loop.  fungrad's (a scan of the
    # counted length eagerly, a run-time tape under jit) follows the
    # cotangent's weak type both ways, as JAX's scan transpose does
    def loop(a):
        return flax_.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, fnp.sin(c[1])),
                                (0, a))[1]

    def pullback(a):
        y, back = fungrad.vjp(loop, a)
        ct = fnp.ones(fnp.shape(y), y.dtype) if strong_ct else fnp.ones_like(y)
        return back(ct)[0]
    x = make_arg(NAMESPACE, arg)
    eager, staged = pullback(x), fungrad.jit(pullback)(x)
    weak_in = isinstance(x, float) or fungrad.typeof(x).weak_type
    assert describe(eager) == describe(staged) == [describe(eager)[0], weak_in and not strong_ct]
    np.testing.assert_allclose(np.asarray(eager), np.asarray(staged), rtol=1e-6)
