"""jet (jax.experimental.jet): Taylor coefficients against closed forms, every
dedicated rule against the generic one (nested jvp), composites against
derivatives along the path, JAX's recorded numbers, and the transforms."""
import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as jnp
from fungrad import lax, nn
from fungrad.experimental import jet as jet_module
from fungrad.experimental.jet import jet

finite = st.floats(0.2, 2.0)


@settings(max_examples=15)
@given(finite)
def test_closed_forms_along_a_unit_direction(x):
    unit = ((1.0, 0.0, 0.0, 0.0),)
    cases = {
        jnp.exp: [np.exp(x)] * 4,
        jnp.sin: [np.cos(x), -np.sin(x), -np.cos(x), np.sin(x)],
        jnp.cos: [-np.sin(x), -np.cos(x), np.sin(x), np.cos(x)],
        jnp.log: [1 / x, -1 / x ** 2, 2 / x ** 3, -6 / x ** 4],
        jnp.sqrt: [0.5 * x ** -0.5, -0.25 * x ** -1.5, 0.375 * x ** -2.5,
                   -0.9375 * x ** -3.5],
        lambda v: 1.0 / v: [-1 / x ** 2, 2 / x ** 3, -6 / x ** 4, 24 / x ** 5],
    }
    for f, want in cases.items():
        out, series = jet(f, (x,), unit)
        np.testing.assert_allclose(series, want, rtol=1e-12)


def _random_series(rng, shape, K=3):
    return [rng.normal(size=shape) for _ in range(K)]


RULE_CASES = {
    "add": (lax.add, 2), "sub": (lax.sub, 2), "neg": (lax.neg, 1), "mul": (lax.mul, 2),
    "div": (lax.div, 2), "exp": (lax.exp, 1), "log": (lax.log, 1), "sin": (lax.sin, 1),
    "cos": (lax.cos, 1), "tanh": (lax.tanh, 1), "logistic": (lax.logistic, 1),
    "sqrt": (lax.sqrt, 1), "dot_general": (lambda a, b: a @ b, 2),
    "reduce_sum": (lambda a: jnp.sum(a, axis=0), 1), "transpose": (lambda a: a.T, 1),
    "slice": (lambda a: a[1:, :2], 1), "select_n": (lambda a, b: jnp.where(a > b, a, b), 2),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_each_rule_equals_the_generic_nested_jvp_rule(name, monkeypatch):
    f, arity = RULE_CASES[name]
    rng = np.random.default_rng(len(name))
    args = [rng.uniform(0.5, 2.0, size=(3, 3)) for _ in range(arity)]
    series = [_random_series(rng, (3, 3)) for _ in range(arity)]
    want = jet(f, tuple(args), tuple(series))
    monkeypatch.setattr(jet_module, "_RULES", {})          # everything by nested jvp
    generic = jet(f, tuple(args), tuple(series))
    np.testing.assert_allclose(want[0], generic[0], rtol=1e-13)
    np.testing.assert_allclose(want[1], generic[1], rtol=1e-10, atol=1e-12)


def _path_derivatives(f, x, series, K):
    """d^k/dt^k f(x(t)) at 0 by repeated forward mode (the definition)."""
    def along(t):
        return f(x + sum(s * t ** k / math.factorial(k) for k, s in enumerate(series, 1)))
    out, g = [], along
    for _ in range(K):
        g = (lambda h: lambda t: fungrad.jvp(h, (t,), (1.0,))[1])(g)
        out.append(g(0.0))
    return out


@settings(max_examples=10)
@given(st.integers(0, 2 ** 16))
def test_composites_against_derivatives_along_the_path(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.3, 1.5, size=3)
    series = _random_series(rng, 3, K=3)
    f = lambda v: jnp.sum(jnp.tanh(v) * jnp.log1p(v ** 2)) / (1.0 + jnp.sum(jnp.exp(-v)))
    _, got = jet(f, (x,), (series,))
    np.testing.assert_allclose(got, _path_derivatives(f, x, series, 3), rtol=1e-10, atol=1e-12)


def test_linear_algebra_and_control_flow_by_their_jvp_rules():
    a = np.array([[2.0, 0.5], [0.3, 1.5]])
    g = lambda m: jnp.linalg.solve(m, jnp.array([1.0, 2.0])) + jnp.linalg.slogdet(m)[1]
    series = [np.eye(2), np.array([[0.0, 1.0], [0.5, 0.0]])]
    _, got = jet(g, (a,), (series,))
    np.testing.assert_allclose(got, _path_derivatives(g, a, series, 2), rtol=1e-11)
    loop = lambda v: lax.fori_loop(0, 5, lambda i, c: jnp.sin(c) * 1.1 + v, v)
    _, got = jet(loop, (0.4,), ((1.0, 0.2, -0.3),))
    np.testing.assert_allclose(got, _path_derivatives(loop, 0.4, [1.0, 0.2, -0.3], 3),
                               rtol=1e-10)


def _jax_reference():
    # recorded once from JAX 0.10.2 (float64) by tools/gen_jet_reference.py
    return json.loads((pathlib.Path(__file__).parent / "data" / "jet_reference.json").read_text())


FUNCTIONS = {
    "composite": lambda x: jnp.sum(jnp.exp(jnp.sin(x) * x) / (1.0 + x ** 2)),
    "tanh_log": lambda x: jnp.log(jnp.tanh(x) ** 2 + 1.0) * jnp.sqrt(x ** 2 + 0.5),
    "logistic_dot": lambda x: nn.sigmoid(jnp.outer(x, x) @ x),
    "cos_div": lambda x: jnp.cos(x) / (2.0 + jnp.sin(3.0 * x)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jaxs_numbers(name):
    ref = _jax_reference()
    x, series = np.array(ref["x"]), [np.array(s) for s in ref["series"]]
    primal, got = jet(FUNCTIONS[name], (x,), (series,))
    np.testing.assert_allclose(primal, ref["results"][name]["primal"], rtol=1e-13)
    np.testing.assert_allclose(got, ref["results"][name]["series"], rtol=1e-11, atol=1e-13)


def test_under_jit_vmap_grad_and_with_pytrees():
    f = lambda x: jnp.exp(jnp.sin(x))
    three = lambda x: jet(f, (x,), ((1.0, 0.0, 0.0),))[1][2]
    xs = np.array([0.2, 0.9])
    want = [float(three(x)) for x in xs]
    np.testing.assert_allclose(fungrad.vmap(three)(xs), want, rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(three))(xs), want, rtol=1e-13)
    # the derivative of the third derivative is the fourth
    np.testing.assert_allclose(fungrad.grad(three)(0.2),
                               jet(f, (0.2,), ((1.0, 0.0, 0.0, 0.0),))[1][3], rtol=1e-11)
    out, series = jet(lambda d: {"s": d["a"] * d["b"], "c": 3.0}, ({"a": 2.0, "b": 3.0},),
                      ([{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}],))
    assert float(out["s"]) == 6.0 and [float(v) for v in series["s"]] == [3.0, 0.0]
    assert [float(v) for v in series["c"]] == [0.0, 0.0]       # a constant output


def test_bad_input():
    with pytest.raises(TypeError, match="fun must be callable"):
        jet(3, (1.0,), ((1.0,),))
    with pytest.raises(ValueError, match="2 primals but 1 series"):
        jet(lambda a, b: a * b, (1.0, 2.0), ((1.0,),))
    with pytest.raises(ValueError, match=r"series\[0\]\[0\] has shape \(2,\) but its primal "
                                         r"has shape \(3,\)"):
        jet(jnp.sin, (np.ones(3),), ([np.ones(2)],))
    with pytest.raises(ValueError, match="same number of series terms"):
        jet(lambda a, b: a * b, (1.0, 2.0), ((1.0,), (1.0, 2.0)))
    with pytest.raises(TypeError, match="must be a list of terms"):
        jet(jnp.sin, (1.0,), (1.0,))
