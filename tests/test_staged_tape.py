"""``grad`` under plain staging records the eager tape and splices each
primitive's cached forward and backward jaxprs into the staging trace
(``tape.vjp_staged``).  Its programs give the eager gradient and the general
route's (JVP, partial evaluation, transposition), bit for bit where they are
the same program, on random straight-line programs, on first sightings of a
signature (the general path per primitive) and later ones (spliced)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, lax
from fungrad.core import TracerBoolConversionError
from fungrad.interpreters import tape
from tests.test_threaded import ARGS, _same, program, step


@pytest.fixture
def staged_calls(monkeypatch):
    """How many times the staged tape recorded a function."""
    calls = []
    original = tape.vjp_staged

    def counted(f, primals):
        calls.append(f)
        return original(f, primals)
    monkeypatch.setattr(tape, "vjp_staged", counted)
    return calls


def _general_route(monkeypatch):
    monkeypatch.setattr(tape, "staged_tape_applies", lambda: False)


@settings(max_examples=25, deadline=None)
@given(st.lists(step, min_size=1, max_size=40))
def test_random_programs_give_the_eager_gradient(steps):
    f = program(steps)
    want = grad(f, argnums=(0, 1))(*ARGS)
    tape._SIGHTED.clear()        # first sightings: the general path per primitive
    first = jit(grad(f, argnums=(0, 1)))(*ARGS)
    again = jit(grad(program(steps), argnums=(0, 1)))(*ARGS)    # spliced
    for got in (first, again):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-300)


def test_the_staged_program_is_the_general_routes(monkeypatch, staged_calls):
    def f(x):
        for i in range(40):
            x = fnp.sin(x) * 0.999 if i % 2 else fnp.cos(x) + 0.5
        return fnp.sum(x * x)
    x = np.linspace(0.1, 1.0, 8)
    fungrad.make_jaxpr(grad(f))(x)          # (every signature sighted)
    staged = fungrad.make_jaxpr(grad(f))(x)
    got = jit(grad(f))(x)
    assert staged_calls, "grad under staging did not use the staged tape"
    _general_route(monkeypatch)
    general = fungrad.make_jaxpr(grad(f))(x)
    assert [e.primitive for e in staged.eqns] == [e.primitive for e in general.eqns]
    _same(got, jit(grad(lambda x: f(x)))(x))


def test_fan_out_literals_and_several_results(staged_calls):
    def f(x, y):
        a = fnp.tanh(x) * y                     # x and y read again below
        lo, hi = fnp.split(a * x, 2)
        b = fnp.concatenate([hi * 0.0 + lo * -0.0, hi * 2.0 + lo])
        return fnp.sum(b * y + x) + lax.reduce_max(a, (0,))
    x, y = np.linspace(-1.0, 1.0, 6), np.linspace(0.3, 2.0, 6)
    for _ in range(2):                          # general path, then spliced
        got = jit(grad(f, argnums=(0, 1)))(x, y)
        for g, w in zip(got, grad(f, argnums=(0, 1))(x, y)):
            _same(g, w)
    assert staged_calls


def test_custom_rules_control_flow_and_nested_jit_inside(staged_calls):
    @fungrad.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * fungrad.nn.sigmoid(p[0])))

    def f(x):
        x = jit(lambda v: fnp.sin(v) * v)(x)
        x = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + fnp.cos(c), x)
        return fnp.sum(softplus(x) * x)
    x = np.linspace(-1.0, 1.0, 5)
    for _ in range(2):
        np.testing.assert_allclose(jit(grad(f))(x), grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(jit(fungrad.hessian(lambda v: f(v)))(x),
                               fungrad.hessian(f)(x), rtol=1e-10)
    assert staged_calls


def test_python_control_flow_on_a_staged_value_is_a_concretization_error():
    def f(x):
        return fnp.sin(x) if fnp.sum(x) > 0 else fnp.cos(x)
    with pytest.raises(TracerBoolConversionError, match="bool"):
        jit(grad(lambda x: fnp.sum(f(x))))(np.ones(3))


def test_vjp_under_jit_keeps_a_pullback_that_outlives_the_trace(staged_calls):
    f = lambda x: fnp.sin(x) * x
    x = np.linspace(0.0, 1.0, 4)
    out, pullback = jit(lambda x: fungrad.vjp(f, x))(x)
    ct = np.linspace(1.0, 2.0, 4)
    np.testing.assert_allclose(pullback(ct)[0], fungrad.vjp(f, x)[1](ct)[0], rtol=1e-13)
    assert not staged_calls        # (vjp's pullback may be called later: general route)


def test_array_constants_stay_one_const_under_jit_of_grad():
    """A fungrad Array closed over by a function differentiated twice under
    jit gives the program an ndarray gives: one constant per array, the same
    code (the eager tape views Array constants as ndarrays; staged, it keeps
    the objects)."""
    rng = np.random.default_rng(0)
    a, v = rng.normal(size=(6, 6)), rng.normal(size=6)

    def hvp_source(a, v):
        f = lambda y: fnp.sum(fnp.tanh(fnp.dot(a, y)))
        h = lambda y: fnp.dot(fungrad.grad(f)(y), v)
        return fungrad.jit(fungrad.grad(h)).lower(np.ones(6)).source()
    assert hvp_source(fnp.asarray(a), fnp.asarray(v)) == hvp_source(a, v)
