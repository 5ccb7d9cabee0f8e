"""custom_jvp: the rule is used, composes with every transform, JAX's conventions."""
import functools

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, jvp, vmap, hessian


def test_rule_is_used_and_gives_a_stable_gradient():
    calls = []

    @fungrad.custom_jvp
    def log1pexp(x):
        return fnp.log1p(fnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        calls.append(1)
        return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))

    assert grad(log1pexp)(1000.0) == 1.0          # the rule's stable form
    assert len(calls) == 1
    np.testing.assert_allclose(jit(grad(log1pexp))(2.0), 1 / (1 + np.exp(-2.0)), rtol=1e-14)
    np.testing.assert_allclose(vmap(grad(log1pexp))(np.array([0.0, 2.0])),
                               1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-14)
    np.testing.assert_allclose(grad(lambda v: fnp.sum(vmap(log1pexp)(v)))(np.array([0.0, 2.0])),
                               1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-14)
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(grad(grad(log1pexp))(0.5), s * (1 - s), rtol=1e-14)


def test_rule_that_differs_from_the_function_is_what_autodiff_sees():
    @fungrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), 2.0 * t[0]))   # deliberately not cos
    assert grad(f)(0.3) == 2.0
    assert jvp(f, (0.3,), (1.5,))[1] == 3.0
    np.testing.assert_allclose(hessian(lambda x: f(x) * x)(0.3), 4.0)


def test_nondiff_argnums_and_pytrees():
    @fungrad.custom_jvp
    def power_sum(n, d):
        return fnp.sum(d["a"] ** n) + d["b"]

    power_sum.nondiff_argnums = (0,)

    @power_sum.defjvp
    def power_sum_jvp(n, primals, tangents):
        (d,), (t,) = primals, tangents
        return power_sum(n, d), fnp.sum(n * d["a"] ** (n - 1) * t["a"]) + t["b"]

    d = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    g = grad(lambda d: power_sum(3, d))(d)
    np.testing.assert_allclose(g["a"], 3 * d["a"] ** 2)
    assert g["b"] == 1.0


def test_missing_rule_is_an_error():
    f = fungrad.custom_jvp(lambda x: x * 2.0)
    with pytest.raises(TypeError, match="defjvp"):
        f(1.0)


# ----------------------------------------------------------------------------
# custom_vjp
# ----------------------------------------------------------------------------

def _make_scaled_grad(calls):
    @fungrad.custom_vjp
    def f(x, y):
        return fnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (fnp.cos(x), fnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        calls.append(1)
        return (cos_x * g * y, sin_x * g)
    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_vjp_bwd_is_used_under_every_transform():
    calls = []
    f = _make_scaled_grad(calls)
    x, y = 0.3, 2.0
    np.testing.assert_allclose(grad(f, argnums=(0, 1))(x, y), (np.cos(x) * y, np.sin(x)))
    assert len(calls) == 1
    np.testing.assert_allclose(jit(grad(f))(x, y), np.cos(x) * y)
    np.testing.assert_allclose(vmap(grad(f))(np.array([0.1, 0.3]), np.array([1.0, 2.0])),
                               np.cos([0.1, 0.3]) * np.array([1.0, 2.0]))
    np.testing.assert_allclose(grad(lambda v: fnp.sum(vmap(f)(v, np.ones(2))))(np.array([0.1, 0.3])),
                               np.cos([0.1, 0.3]))


def test_custom_vjp_forward_mode_beyond_jax():
    f = _make_scaled_grad([])
    x, y = 0.3, 2.0
    np.testing.assert_allclose(jvp(f, (x, y), (1.0, 0.0))[1], np.cos(x) * y)
    np.testing.assert_allclose(hessian(f)(x, y), -np.sin(x) * y)
    np.testing.assert_allclose(jit(lambda x: jvp(f, (x, y), (1.0, 0.0))[1])(x), np.cos(x) * y)
    np.testing.assert_allclose(jit(hessian(f))(x, y), -np.sin(x) * y)


def test_custom_vjp_gradient_clipping_trick():
    @fungrad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1.0, 1.0),))
    assert grad(lambda x: 5.0 * clip_gradient(x))(2.0) == 1.0


def test_custom_vjp_bad_bwd_structure():
    @fungrad.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g,))
    with pytest.raises(TypeError, match="bwd returned cotangents with structure"):
        grad(f)(1.0, 2.0)


def test_custom_jvp_symbolic_zeros_skip_unperturbed_inputs():
    from fungrad.custom_derivatives import SymbolicZero
    seen = []

    @fungrad.custom_jvp
    def f(x, y):
        return fnp.sin(x) * y

    @functools.partial(f.defjvp, symbolic_zeros=True)
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
        out = f(x, y)
        t = 0.0 * out
        if type(tx) is not SymbolicZero:
            t = t + fnp.cos(x) * tx * y
        if type(ty) is not SymbolicZero:
            assert ty.shape == fnp.shape(y)
            t = t + fnp.sin(x) * ty
        return out, t
    x, y = 0.3, 2.0
    np.testing.assert_allclose(fungrad.grad(f)(x, y), np.cos(x) * y, rtol=1e-15)
    assert seen[-1] == (False, True)      # y is not differentiated: a symbolic zero
    np.testing.assert_allclose(fungrad.grad(f, 1)(x, y), np.sin(x), rtol=1e-15)
    assert seen[-1] == (True, False)
    np.testing.assert_allclose(fungrad.grad(fungrad.grad(f))(x, y), -np.sin(x) * y, rtol=1e-14)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(f, (0, 1)))(x, y),
                               (np.cos(x) * y, np.sin(x)), rtol=1e-15)
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(f))(np.array([x, 1.0]), np.array([y, y])),
                               np.cos([x, 1.0]) * y, rtol=1e-15)
    # a rule may return a symbolic zero as the output tangent
    @fungrad.custom_jvp
    def g(x):
        return fnp.floor(x)
    g.defjvp(lambda p, t: (g(*p), SymbolicZero(fungrad.core.get_aval(p[0]))),
             symbolic_zeros=True)
    assert fungrad.grad(g)(1.5) == 0.0


def test_custom_vjp_bwd_may_return_none_for_a_zero_cotangent():
    @fungrad.custom_vjp
    def clip_grad(x, lo, hi):
        return x

    clip_grad.defvjp(lambda x, lo, hi: (x, (lo, hi)),
                     lambda res, g: (fnp.clip(g, res[0], res[1]), None, None))
    x = np.array([0.5, 3.0, -12.0])
    f = lambda x, lo, hi: fnp.sum(clip_grad(x, lo, hi) * x)
    np.testing.assert_allclose(grad(f)(x, -1.0, 1.0), np.clip(x, -1.0, 1.0) + x)
    np.testing.assert_array_equal(grad(f, (1, 2))(x, -1.0, 1.0), (0.0, 0.0))
