"""The jaxpr passes inside the sub-jaxprs of control-flow primitives.

``passes.optimize`` recurses into every param that is a ClosedJaxpr (or a
tuple of them): the bodies must keep their meaning and their signature, and
the autodiff noise (x * 1, x + 0, repeated subexpressions) must disappear
from them as it does from the top level.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, lax
from fungrad.core import ClosedJaxpr, Jaxpr, JaxprEqn, Primitive, Var
from fungrad.interpreters import codegen, passes

_UNARY = {"sin": fnp.sin, "cos": fnp.cos, "tanh": fnp.tanh, "neg": lambda a: -a,
          "sq": lambda a: a * a, "mul1": lambda a: a * 1.0, "add0": lambda a: a + 0.0}
_OPS = st.lists(st.tuples(st.sampled_from(sorted(_UNARY) + ["add", "mul"]),
                          st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=8)


def _program(ops, a, b):
    """A random straight-line program of ``a`` and ``b`` (both scalars or vectors)."""
    vals = [a, b]
    for name, i, j in ops:
        x, y = vals[i % len(vals)], vals[j % len(vals)]
        vals.append(x + y if name == "add" else x * y if name == "mul" else _UNARY[name](x))
    return vals[-1] + vals[-2]


def _with_scan(ops):
    def f(x, y):
        def body(carry, xi):
            new = 0.5 * fnp.tanh(_program(ops, carry, xi * y))
            return new, new * xi
        c, ys = lax.scan(body, x, fnp.linspace(0.1, 1.0, 4))
        return c + fnp.sum(ys)
    return f


def _with_cond(ops):
    def f(x, y):
        return lax.cond(x > 0.3, lambda a, b: _program(ops, a, b),
                        lambda a, b: fnp.sin(_program(ops, b, a)), x, y)
    return f


def _with_fori(ops):
    def f(x, y):
        return lax.fori_loop(0, 3, lambda i, c: 0.5 * fnp.tanh(_program(ops, c, y)), x)
    return f


def _compiled_results(closed, args):
    comp = codegen.compile_closed(closed)
    return comp.fn(*comp.consts, *args)


def _assert_optimize_preserves(fun, args):
    closed = fungrad.make_jaxpr(fun)(*args)
    flat = passes.inline_calls(closed)
    want = _compiled_results(flat, args)
    got = _compiled_results(passes.optimize(closed), args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [_with_scan, _with_cond, _with_fori])
@given(ops=_OPS, x=st.floats(-1.0, 1.0), y=st.floats(-1.0, 1.0))
def test_optimize_preserves_meaning_inside_control_flow(make, ops, x, y):
    f = make(ops)
    for fun in (f, grad(f), grad(f, argnums=1), jit(grad(f))):
        _assert_optimize_preserves(fun, (x, y))
    np.testing.assert_allclose(jit(grad(f))(x, y), grad(f)(x, y), rtol=1e-12, atol=1e-14)


def test_optimize_preserves_while_loop_with_grad_noise_in_body():
    def f(x):
        def body(c):
            v, n = c
            return v * 1.0 + 0.0 + fnp.sin(v) * fnp.sin(v), n + 1
        v, _ = lax.while_loop(lambda c: c[1] < 4, body, (x, 0))
        return v
    # forward-mode derivative inside the loop: JVP rules leave noise in the body
    dfx = lambda x: fungrad.jvp(f, (x,), (1.0,))[1]
    for fun in (f, dfx):
        _assert_optimize_preserves(fun, (0.3,))
    np.testing.assert_allclose(jit(dfx)(0.3), dfx(0.3), rtol=1e-13)


def _sub_jaxprs(jaxpr: Jaxpr):
    """Every (eqn, param name, ClosedJaxpr) reachable from ``jaxpr``, outermost first."""
    for eqn in jaxpr.eqns:
        for name, value in eqn.params.items():
            subs = value if isinstance(value, tuple) else (value,)
            for sub in subs:
                if isinstance(sub, ClosedJaxpr):
                    yield eqn, name, sub
                    yield from _sub_jaxprs(sub.jaxpr)


def _noise(jaxpr: Jaxpr) -> int:
    """Equations that are algebraic no-ops (x * 1, x + 0)."""
    return sum(1 for e in jaxpr.eqns if e.primitive.name in ("mul", "add") and any(
        np.ndim(getattr(a, "val", None)) == 0 and getattr(a, "val", None) ==
        (1.0 if e.primitive.name == "mul" else 0.0) for a in e.inputs))


def _scan_body(jaxpr: Jaxpr) -> ClosedJaxpr:
    return next(sub for eqn, name, sub in _sub_jaxprs(jaxpr) if eqn.primitive.name == "scan")


def test_noise_disappears_inside_scan_body():
    def f(x):
        def body(c, xi):
            return c * 1.0 + 0.0 + fnp.sin(c) * fnp.sin(c) * xi, c * xi
        c, ys = lax.scan(body, x, fnp.arange(1.0, 5.0))
        return c + fnp.sum(ys)
    closed = fungrad.make_jaxpr(jit(grad(f)))(0.3)
    before = passes.inline_calls(closed).jaxpr
    after = passes.optimize(closed).jaxpr
    for old, new in zip([s for *_, s in _sub_jaxprs(before)],
                        [s for *_, s in _sub_jaxprs(after)]):
        # the signature the scan/cond rules rely on is kept exactly
        assert [v.aval for v in new.jaxpr.invars] == [v.aval for v in old.jaxpr.invars]
        assert [v.aval for v in new.jaxpr.outvars] == [v.aval for v in old.jaxpr.outvars]
    b_old, b_new = _scan_body(before), _scan_body(after)
    assert _noise(b_old.jaxpr) > 0 and _noise(b_new.jaxpr) == 0
    assert len(b_new.jaxpr.eqns) < len(b_old.jaxpr.eqns)
    sins = [e for e in b_new.jaxpr.eqns if e.primitive.name == "sin"]
    assert len(sins) == 1                                   # CSE inside the body
    np.testing.assert_allclose(jit(grad(f))(0.3), grad(f)(0.3), rtol=1e-13)


def test_noise_disappears_inside_cond_branches():
    f = lambda x: lax.cond(x > 0, lambda a: fnp.sin(a) * fnp.sin(a) * a,
                           lambda a: fnp.cos(a) + a, x)
    closed = fungrad.make_jaxpr(jit(grad(f)))(0.4)
    before = passes.inline_calls(closed).jaxpr
    after = passes.optimize(closed).jaxpr
    count = lambda jaxpr: sum(len(s.jaxpr.eqns) for e, n, s in _sub_jaxprs(jaxpr)
                              if e.primitive.name == "cond")
    assert count(after) < count(before)
    assert all(_noise(s.jaxpr) == 0 for e, n, s in _sub_jaxprs(after))
    for x in (0.4, -0.4):
        np.testing.assert_allclose(jit(grad(f))(x), grad(f)(x), rtol=1e-13)


def test_optimize_never_mutates_the_input_jaxprs():
    def f(x):
        return lax.scan(lambda c, xi: (c * 1.0 + fnp.sin(xi), c), x, fnp.ones(3))[0]
    closed = fungrad.make_jaxpr(grad(f))(0.5)
    snapshot = [(e, dict(e.params), s, list(s.jaxpr.eqns), list(s.jaxpr.outvars))
                for e, n, s in _sub_jaxprs(closed.jaxpr)]
    assert snapshot
    passes.optimize(closed)
    for eqn, params, sub, eqns, outvars in snapshot:
        assert eqn.params == params
        assert sub.jaxpr.eqns == eqns and sub.jaxpr.outvars == outvars


def test_shared_sub_jaxpr_is_optimised_once():
    f = lambda c, xs: lax.scan(lambda a, b: (a * 1.0 + b, a + 0.0), c, xs)[0]
    outer = fungrad.make_jaxpr(f)(0.0, np.ones(3))
    scan = next(e for e in outer.jaxpr.eqns if e.primitive.name == "scan")
    # the same scan twice (same body object), both results used
    again = JaxprEqn(scan.primitive, scan.inputs, dict(scan.params),
                     [Var(v.aval) for v in scan.outvars])
    jaxpr = Jaxpr(outer.jaxpr.constvars, outer.jaxpr.invars, list(outer.jaxpr.eqns) + [again],
                  [scan.outvars[0], again.outvars[0]])
    memo: dict = {}
    opt = passes.optimize(ClosedJaxpr(jaxpr, outer.consts), memo)
    assert len(memo) == 1
    # one optimised body for both, so CSE still sees two equal scans and merges them
    assert [e.primitive.name for e in opt.jaxpr.eqns].count("scan") == 1
    assert scan.params["body"] is again.params["body"]      # the input is untouched


_remat_p = Primitive("remat_test_call", multiple_results=True)
del fungrad.core.primitives["remat_test_call"]   # a test stand-in, not a real primitive
_remat_p.inline = True
_remat_p.def_abstract_eval(lambda *avals, jaxpr: list(jaxpr.out_avals))


def test_cse_does_not_merge_across_a_remat_boundary(monkeypatch):
    # a stand-in for the checkpoint primitive: it declares itself a remat
    monkeypatch.setattr(_remat_p, "remat", True)
    inner = fungrad.make_jaxpr(lambda x: [fnp.sin(x) * 2.0])(0.0)
    outer = fungrad.make_jaxpr(lambda x: [fnp.sin(x) * 2.0])(0.0)
    x = outer.jaxpr.invars[0]
    first_out = outer.jaxpr.outvars[0]
    recomputed, total = Var(first_out.aval), Var(first_out.aval)
    add_p = fungrad.core.primitives["add"]
    jaxpr = Jaxpr([], [x], list(outer.jaxpr.eqns) + [
        JaxprEqn(_remat_p, [x], dict(jaxpr=inner), [recomputed]),
        JaxprEqn(add_p, [first_out, recomputed], {}, [total])], [total])
    opt = passes.optimize(ClosedJaxpr(jaxpr, []))
    assert sum(e.primitive.name == "sin" for e in opt.jaxpr.eqns) == 2   # recomputed
    comp = codegen.compile_closed(opt)
    np.testing.assert_allclose(comp.fn(*comp.consts, np.float64(0.3))[0], 4 * np.sin(0.3))


def _chain(x, steps):
    for _ in range(steps):
        x = fnp.sin(x) * 0.9 + x * 0.1
    return fnp.sum(x)


def test_chain_gradient_has_no_more_operations_than_by_hand():
    # by hand: per step sin, mul, mul, add forward and cos, mul, add, mul
    # backward (g = g * (cos(x) * 0.9 + 0.1)); plus the sum and the ones
    steps, x = 50, np.linspace(-1.0, 1.0, 10)
    f = fungrad.value_and_grad(lambda v: _chain(v, steps))
    optimized = passes.optimize(fungrad.make_jaxpr(f)(x))
    assert len(optimized.jaxpr.eqns) <= 8 * steps + 2
    got, want = _compiled_results(optimized, (x,)), f(x)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)


def _count(fun, *args):
    return len(passes.optimize(fungrad.make_jaxpr(fun)(*args)).jaxpr.eqns)


def test_factoring_never_adds_operations():
    v, s = np.linspace(0.1, 1.0, 5), 0.7
    # the common factor is a scalar, the other factors full-size: left alone
    assert _count(lambda x, y: x * y + (x * 2.0) * fnp.cos(y), s, v) == 5
    # a product used twice stays: factoring would not remove it
    assert _count(lambda x, y: (x * y + x * 3.0) * (x * y), v, v) == 4
    # x*y + x*z -> x*(y + z)
    assert _count(lambda x, y, z: x * y + x * z, v, v, v) == 2
    assert _count(lambda x, y, z: x * y - (z * x) * y, v, v, v) == 3


@given(x=st.floats(-2.0, 2.0), y=st.floats(-2.0, 2.0), z=st.floats(-2.0, 2.0))
def test_factored_programs_keep_their_values(x, y, z):
    funs = [lambda a, b, c: a * b + a * c, lambda a, b, c: (a * 0.5) * b - a * c,
            lambda a, b, c: a * (b * c) + (c * a) * 2.0]
    args = tuple(np.full(3, t) for t in (x, y, z))
    for fun in funs:
        _assert_optimize_preserves(fun, args)


def _split_loss(sizes, used, axis):
    """A loss of the slices of ``x`` along ``axis`` (widths ``sizes``, in
    order; ``used[k]`` False leaves slice k out: a gap in the cotangent)."""
    def loss(x):
        total, at = 0.0, 0
        for k, (size, use) in enumerate(zip(sizes, used)):
            piece = lax.slice_in_dim(x, at, at + size, axis=axis)
            at += size
            if use:
                total = total + fnp.sum(fnp.sin(piece) * (k + 1))
        return total
    return loss


@given(sizes=st.lists(st.integers(1, 3), min_size=2, max_size=5),
       used=st.lists(st.booleans(), min_size=5, max_size=5), axis=st.integers(0, 1))
def test_gradient_of_slices_keeps_its_values_as_a_concatenation(sizes, used, axis):
    x = np.random.default_rng(len(sizes)).normal(size=(sum(sizes), 4) if axis == 0
                                                 else (3, sum(sizes)))
    loss = _split_loss(sizes, used[:len(sizes)], axis)
    _assert_optimize_preserves(grad(loss), (x,))
    np.testing.assert_allclose(jit(grad(loss))(x), grad(loss)(x), rtol=1e-15)


def _primitive_names(fun, *args):
    return [e.primitive.name for e in passes.optimize(fungrad.make_jaxpr(fun)(*args)).jaxpr.eqns]


def test_cotangent_of_a_split_is_one_concatenation():
    # q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2] under grad: three zero-padded
    # cotangents summed before; one concatenate now, no pads or additions
    def loss(qkv):
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        return fnp.sum(fnp.sin(q) * k + v ** 2)
    names = _primitive_names(grad(loss), np.ones((4, 3, 5)))
    assert names.count("concatenate") == 1
    assert "pad" not in names and "add" not in names
    # a slice used but overlapping another one stays a padded term of the sum
    names = _primitive_names(grad(lambda x: fnp.sum(fnp.sin(x[:, 0]) + x[:, 2] * x[:, 1:3].sum())),
                             np.ones((4, 4)))
    assert names.count("concatenate") == 1 and names.count("pad") == 1
