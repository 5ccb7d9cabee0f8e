"""jit's threaded code for long programs (fungrad/interpreters/threaded.py):
the same results as eager code and as the generated source, under grad and
vmap, with slots reused and large dead values dropped."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, lax, vmap
from fungrad.interpreters import codegen, passes, threaded


@pytest.fixture
def always_threaded(monkeypatch):
    """Every jitted program runs as threaded code, however short."""
    monkeypatch.setattr(threaded, "MIN_EQNS", -1)


# A random straight-line program: each step applies one operation to earlier
# values (so values are read several times, die at different points, and slots
# are reused), with literals of either sign of zero.
_UNARY = [fnp.sin, fnp.cos, fnp.tanh, lambda v: -v, lambda v: fnp.exp(-v * v),
          lambda v: fnp.sqrt(v * v + 1.0), lambda v: fnp.sum(v) * v]
_BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
           lambda a, b: a / (1.0 + b * b), fnp.maximum,
           lambda a, b: fnp.where(a > b, a, b * 0.5)]
_CONSTANTS = [0.0, -0.0, 0.5, -2.0, 1.0]

step = st.one_of(
    st.tuples(st.just("unary"), st.integers(0, len(_UNARY) - 1), st.integers(0, 50)),
    st.tuples(st.just("binary"), st.integers(0, len(_BINARY) - 1), st.integers(0, 50),
              st.integers(0, 50)),
    st.tuples(st.just("literal"), st.integers(0, len(_CONSTANTS) - 1), st.integers(0, 50)),
    st.tuples(st.just("multiple"), st.integers(0, 50)))


def program(steps):
    def f(x, y):
        values = [x, y]
        pick = lambda k: values[k % len(values)]
        for s in steps:
            if s[0] == "unary":
                values.append(_UNARY[s[1]](pick(s[2])))
            elif s[0] == "binary":
                values.append(_BINARY[s[1]](pick(s[2]), pick(s[3])))
            elif s[0] == "literal":
                values.append(pick(s[2]) * _CONSTANTS[s[1]])
            else:                 # a primitive with several results
                lo, hi = fnp.split(pick(s[1]), 2)
                values += [fnp.concatenate([hi, lo])]
        return fnp.sum(values[-1] * values[len(values) // 2]) + fnp.sum(values[-3:][0])
    return f


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    # (signs of zeros too: -0.0 and 0.0 literals must not share a slot)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _close(got, want):
    # against eager code: jit's passes may round differently, and the sign of
    # a zero is rounding (factor_products' x*a + x*b -> x*(a + b) turns
    # -0.0 + 0.0 into x * 0.0); slots are checked against the source (_same)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-300)


def _threads_equal_source(fun, *args):
    """``fun``'s optimised jaxpr run as threaded code and as generated source:
    the same numbers, zero signs included (returns the threaded results)."""
    opt = passes.optimize(fungrad.make_jaxpr(fun)(*args))
    by_source = codegen.compile_as_source(opt.jaxpr, consts=opt.consts)
    by_threads = threaded.compile_threaded(opt.jaxpr, consts=opt.consts)
    got = by_threads.fn(*by_threads.consts, *args)
    for g, s in zip(got, by_source.fn(*by_source.consts, *args)):
        _same(g, s)
    return got


ARGS = (np.linspace(-1.0, 1.0, 6), np.linspace(0.3, 2.0, 6))


@settings(max_examples=25, deadline=None)
@given(st.lists(step, min_size=1, max_size=60))
def test_random_programs_equal_eager_and_the_source(steps):
    f = program(steps)
    got = _threads_equal_source(f, *ARGS)
    _same(got[0], f(*ARGS))


def test_random_programs_under_grad_and_vmap(always_threaded):
    @settings(max_examples=15, deadline=None)
    @given(st.lists(step, min_size=1, max_size=40))
    def run(steps):
        f = program(steps)
        eager = grad(f, argnums=(0, 1))(*ARGS)
        for g, e in zip(jit(grad(f, argnums=(0, 1)))(*ARGS), eager):
            _close(g, e)
        for g, e in zip(_threads_equal_source(grad(f, argnums=(0, 1)), *ARGS), eager):
            _close(g, e)
        xs = np.stack([ARGS[0], ARGS[0][::-1], ARGS[0] * 0.5])
        batched = vmap(f, in_axes=(0, None))(xs, ARGS[1])
        _close(jit(vmap(f, in_axes=(0, None)))(xs, ARGS[1]), batched)
        _close(vmap(jit(f), in_axes=(0, None))(xs, ARGS[1]), batched)
        _threads_equal_source(vmap(f, in_axes=(0, None)), xs, ARGS[1])
        _close(grad(jit(f))(*ARGS), grad(f)(*ARGS))
    run()


def test_control_flow_and_integer_results_run_as_kernels(always_threaded):
    def f(x, n):
        y = lax.fori_loop(0, n, lambda i, c: c * 0.9 + fnp.sin(c), x)
        z = lax.cond(fnp.sum(y) > 0, lambda v: v * 2.0, lambda v: -v, y)
        return z, fnp.argmax(z), lax.scan(lambda c, v: (c + v, c * v), 0.0, z)
    x = np.linspace(-1.0, 1.0, 5)
    for got, want in zip(fungrad.tree_util.tree_leaves(jit(f)(x, 3)),
                         fungrad.tree_util.tree_leaves(f(x, 3))):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def chain(n):
    def f(x):
        for i in range(n):
            x = fnp.sin(x) * 0.999 if i % 2 else fnp.cos(x) + 0.5
        return fnp.sum(x)
    return f


def test_long_programs_run_as_threaded_code_with_few_kernels():
    x = np.linspace(0.1, 1.0, 8)
    g = jit(grad(chain(threaded.MIN_EQNS // 2)))
    comp = g.lower(x).compile()
    np.testing.assert_allclose(g(x), grad(chain(threaded.MIN_EQNS // 2))(x), rtol=1e-12)
    source = comp.as_text()
    # the program is over the threshold; its text is the equivalent source
    assert source.startswith("# ") and "run as threaded code" in source
    assert "\ndef fn(" in source
    # one kernel per kind of equation, not per equation
    entry = next(iter(g._cache.entries.values()))
    assert entry.fn.__qualname__.startswith("_tiered")
    assert "with " in source and int(source.split(" kernels")[0].split()[-1]) < 40


def test_short_programs_keep_generated_source():
    src = jit(grad(chain(20))).lower(np.ones(3)).source()
    assert src.startswith("def fn(")


def test_slots_are_reused_and_large_dead_values_dropped():
    def f(x):
        for _ in range(30):
            x = fnp.sin(x) + 1.0
        return x
    big = np.linspace(0.0, 1.0, 2 * codegen._REUSE_MIN_SIZE)
    closed = fungrad.make_jaxpr(f)(big)
    prog = threaded.build(closed.jaxpr)
    # a chain needs a couple of slots besides its input and the literal
    assert len(prog.initial) <= 4
    np.testing.assert_allclose(threaded.compile_threaded(closed.jaxpr).fn(big)[0], f(big),
                               rtol=1e-13)
    # of two large values dying at one equation, one slot takes its result and
    # the other value is dropped at once
    def g(x):
        return fnp.sum(fnp.sin(x) * fnp.cos(x))
    prog = threaded.build(fungrad.make_jaxpr(g)(big).jaxpr)
    drops = [ins for ins in prog.instructions if ins[0] is threaded._no_value]
    assert drops, "no large dead value was dropped"


@pytest.mark.parametrize("threads", [True, False])
def test_zero_literals_of_both_signs_keep_their_sign(monkeypatch, threads):
    # (neither a slot nor common-subexpression elimination merges 0.0 and -0.0)
    monkeypatch.setattr(threaded, "MIN_EQNS", -1 if threads else 10**9)
    f = lambda x: (x * 0.0, x * -0.0, x * np.float32(-0.0), x * np.float32(0.0))
    x = np.array([-1.0, 2.0])
    for got, want in zip(jit(f)(x), f(x)):
        _same(got, want)


def test_a_program_that_runs_long_enough_gets_its_source(monkeypatch):
    # (the threaded code's budget: no running time at all, so the first call
    # spends it and the second runs the compiled source)
    monkeypatch.setattr(threaded, "SOURCE_AFTER_RUN_PER_BUILD", 0.0)
    f = chain(40)
    x = np.linspace(0.1, 1.0, 8)
    closed = fungrad.make_jaxpr(grad(f))(x)
    comp = threaded.compile_threaded(passes.optimize(closed).jaxpr)
    assert comp.source_fn is None
    first = comp.fn(x)
    assert comp.source_fn is not None
    second = comp.fn(x)
    np.testing.assert_allclose(first[0], grad(f)(x), rtol=1e-13)
    np.testing.assert_array_equal(first[0], second[0])
    # and by default a program called a few times keeps its threaded code
    monkeypatch.undo()
    comp = threaded.compile_threaded(passes.optimize(closed).jaxpr)
    for _ in range(3):
        comp.fn(x)
    assert comp.source_fn is None


def test_long_scalar_programs_run_as_threaded_code_too():
    # (no Python-float twin: its source would be as long as the program)
    f = chain(threaded.MIN_EQNS // 2)
    g = jit(grad(f))
    np.testing.assert_allclose(g(0.3), grad(f)(0.3), rtol=1e-12)
    entry = next(iter(g._cache.entries.values()))
    assert entry.fn.__qualname__.startswith("_tiered")
