"""Autodiff: the seed examples of design.md §8, higher orders, nesting, pytrees, errors."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jvp, vjp, jacfwd, jacrev, hessian, linearize, value_and_grad
from fungrad.test_util import check_grads
from fungrad.examples import seed_f, seed_f_prime, robot_arm


# ----------------------------------------------------------------------------
# Seed examples
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("x", [-1.3, -0.2, 0.0, 0.7, 1.5])
def test_seed1_closed_form_both_modes(x):
    """Example 1: forward and reverse mode equal the closed form to machine precision."""
    rev = grad(seed_f)(x)
    fwd = jvp(seed_f, (x,), (1.0,))[1]
    want = seed_f_prime(x)
    assert abs(rev - want) <= 1e-13 * max(1, abs(want))
    assert abs(fwd - want) <= 1e-13 * max(1, abs(want))
    # central differences cannot get close to that precision
    h = 1e-5
    fd = (seed_f(x + h) - seed_f(x - h)) / (2 * h)
    if x != 0.0:   # (at 0 the function is even: differences are exact there)
        assert abs(fd - want) > abs(rev - want)


def test_seed2_reverse_accumulation_sums_both_paths():
    """Example 2: y = (a·b + sin a)²; a is used twice, its adjoint sums both paths."""
    f = lambda a, b: (a * b + fnp.sin(a)) ** 2
    a, b = 0.8, -1.7
    da, db = grad(f, argnums=(0, 1))(a, b)
    inner = a * b + np.sin(a)
    np.testing.assert_allclose(da, 2 * inner * (b + np.cos(a)), rtol=1e-14)
    np.testing.assert_allclose(db, 2 * inner * a, rtol=1e-14)


def test_seed3_linear_model_mse():
    """Example 3: w·x + b with MSE on x=[1,2,3], y=[2,4,6], w=2, b=-1."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0])
    loss = lambda w, b: fnp.mean((w * x + b - y) ** 2)
    assert loss(2.0, -1.0) == 1.0
    gw, gb = grad(loss, argnums=(0, 1))(2.0, -1.0)
    assert gw == -4.0 and gb == -2.0


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_seed4_mlp_backprop_equations():
    """Example 4: MLP 4 -> 3 (sigmoid) -> 1, loss ½(ŷ−y)²: grad equals the three
    backprop equations δ_L = ŷ−y, δ_1 = (W2ᵀ δ_L) ⊙ σ'(z1), ∇W_l = δ_l a_{l−1}ᵀ."""
    rng = np.random.default_rng(0)
    params = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=3),
              "W2": rng.normal(size=(1, 3)), "b2": rng.normal(size=1)}
    x, y = rng.normal(size=4), np.array([0.3])

    def loss(p):
        a1 = fungrad.nn_sigmoid(p["W1"] @ x + p["b1"]) if hasattr(fungrad, "nn_sigmoid") else \
            1 / (1 + fnp.exp(-(p["W1"] @ x + p["b1"])))
        y_hat = p["W2"] @ a1 + p["b2"]
        return 0.5 * fnp.sum((y_hat - y) ** 2)

    g = grad(loss)(params)
    z1 = params["W1"] @ x + params["b1"]
    a1 = _sigmoid(z1)
    y_hat = params["W2"] @ a1 + params["b2"]
    delta2 = y_hat - y
    delta1 = (params["W2"].T @ delta2) * a1 * (1 - a1)
    np.testing.assert_allclose(g["W2"], np.outer(delta2, a1), rtol=1e-13)
    np.testing.assert_allclose(g["b2"], delta2, rtol=1e-13)
    np.testing.assert_allclose(g["W1"], np.outer(delta1, x), rtol=1e-13)
    np.testing.assert_allclose(g["b1"], delta1, rtol=1e-13)


def test_seed5_loop_through_50_steps():
    """Example 5: x_{t+1} = x_t + θ sin x_t, 50 steps from 1, loss (x_50 − 2)²."""
    def loss(theta):
        x = 1.0
        for _ in range(50):
            x = x + theta * fnp.sin(x)
        return (x - 2.0) ** 2

    theta = 0.1
    x, dx = 1.0, 0.0           # forward sensitivity recurrence by hand
    for _ in range(50):
        x, dx = x + theta * np.sin(x), dx * (1 + theta * np.cos(x)) + np.sin(x)
    want = 2 * (x - 2.0) * dx
    np.testing.assert_allclose(grad(loss)(theta), want, rtol=1e-12)
    np.testing.assert_allclose(jvp(loss, (theta,), (1.0,))[1], want, rtol=1e-12)


def test_seed7_sum_sin_times_x():
    """Example 7: f(x) = Σ sin(x)·x; grad and jvp."""
    f = lambda x: fnp.sum(fnp.sin(x) * x)
    x = np.array([0.1, -0.7, 2.0])
    np.testing.assert_allclose(grad(f)(x), np.cos(x) * x + np.sin(x), rtol=1e-14)
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(jvp(f, (x,), (v,))[1], np.dot(np.cos(x) * x + np.sin(x), v),
                               rtol=1e-14)


def test_seed8_robot_arm_jacobian_fwd_equals_rev():
    """Example 8: the 150×3 Jacobian by jacfwd (3 passes) equals jacrev (150 passes)."""
    theta = np.array([0.3, -0.5, 1.1])
    jf = jacfwd(robot_arm)(theta)
    jr = jacrev(robot_arm)(theta)
    assert jf.shape == (150, 3) and jr.shape == (150, 3)
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-14)
    h = 1e-6
    fd = np.stack([(robot_arm(theta + h * e) - robot_arm(theta - h * e)) / (2 * h)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(jf, fd, rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------
# Higher order and nesting
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("f, d3, x", [
    (lambda x: fnp.sin(x), lambda x: -np.cos(x), 0.4),
    (lambda x: fnp.exp(2 * x), lambda x: 8 * np.exp(2 * x), -0.3),
    (lambda x: x ** 5, lambda x: 60 * x ** 2, 1.7),
    (lambda x: fnp.log(x), lambda x: 2 / x ** 3, 0.9),
    (lambda x: fnp.tanh(x), lambda x: -2 * (1 - np.tanh(x) ** 2) * (1 - 3 * np.tanh(x) ** 2), 0.3),
])
def test_third_derivatives_closed_forms(f, d3, x):
    np.testing.assert_allclose(grad(grad(grad(f)))(x), d3(x), rtol=1e-12)
    fwd3 = jvp(lambda y: jvp(lambda z: jvp(f, (z,), (1.0,))[1], (y,), (1.0,))[1], (x,), (1.0,))[1]
    np.testing.assert_allclose(fwd3, d3(x), rtol=1e-12)


def test_no_perturbation_confusion():
    """d/dx [x · d/dy (x + y)] = 1: the inner derivative must not see x's tangent."""
    f = lambda x: x * grad(lambda y: x + y)(1.0)
    assert grad(f)(2.0) == 1.0
    g = lambda x: x * jvp(lambda y: x + y, (1.0,), (1.0,))[1]
    assert jvp(g, (2.0,), (1.0,))[1] == 1.0


def test_closure_over_outer_tracer_in_nested_grad():
    # d/dx grad_y (x·y²)(y=3) = d/dx (6x) = 6
    assert grad(lambda x: grad(lambda y: x * y ** 2)(3.0))(1.5) == 6.0


def test_hvp_forward_over_reverse_equals_hessian():
    f = lambda v: fnp.sum(fnp.sin(v) * v ** 2) + fnp.prod(v)
    v, dv = np.array([0.1, 0.5, 1.0]), np.array([1.0, 0.3, -1.0])
    hvp_fr = jvp(grad(f), (v,), (dv,))[1]
    hvp_rr = grad(lambda x: fnp.vdot(grad(f)(x), dv))(v)
    H = hessian(f)(v)
    np.testing.assert_allclose(hvp_fr, H @ dv, rtol=1e-12)
    np.testing.assert_allclose(hvp_rr, H @ dv, rtol=1e-12)
    np.testing.assert_allclose(H, H.T, rtol=1e-12)


def test_long_chain_does_not_recurse():
    """A 100,000-equation chain differentiates without RecursionError."""
    def f(x):
        for _ in range(100_000):
            x = x * 1.000001
        return x
    np.testing.assert_allclose(grad(f)(1.0), 1.000001 ** 100_000, rtol=1e-9)


def test_python_control_flow_on_values_under_grad():
    f = lambda x: fnp.sin(x) if x > 0 else x ** 2
    np.testing.assert_allclose(grad(f)(0.5), np.cos(0.5), rtol=4 * np.finfo(float).eps)
    assert grad(f)(-2.0) == -4.0


# ----------------------------------------------------------------------------
# API semantics: pytrees, argnums, has_aux, vjp reuse, linearize, transpose
# ----------------------------------------------------------------------------

def test_grad_pytrees_in_and_argnums():
    P = collections.namedtuple("P", "w b")
    f = lambda p, xs: fnp.sum(p.w * xs["a"] + p.b * xs["c"][0])
    p = P(np.array([1.0, 2.0]), 3.0)
    xs = {"a": np.array([0.5, -1.0]), "c": [np.array(2.0)]}
    gp = grad(f)(p, xs)
    assert isinstance(gp, P)
    np.testing.assert_allclose(gp.w, xs["a"])
    np.testing.assert_allclose(gp.b, 2.0 * 2)
    gp, gx = grad(f, argnums=(0, 1))(p, xs)
    np.testing.assert_allclose(gx["c"][0], 3.0 * 2)
    assert set(gx) == {"a", "c"}


def test_value_and_grad_has_aux():
    f = lambda x: (fnp.sum(x ** 2), {"norm": fnp.sqrt(fnp.sum(x ** 2))})
    (val, aux), g = value_and_grad(f, has_aux=True)(np.array([3.0, 4.0]))
    assert val == 25.0 and aux["norm"] == 5.0
    np.testing.assert_allclose(g, [6.0, 8.0])
    g2, aux2 = grad(f, has_aux=True)(np.array([3.0, 4.0]))
    np.testing.assert_allclose(g2, [6.0, 8.0])
    assert aux2["norm"] == 5.0


def test_vjp_pullback_reusable_and_has_aux():
    f = lambda x: (fnp.sin(x), x.sum())
    x = np.array([0.1, 0.2])
    out, pullback = vjp(f, x)
    for u in (np.array([1.0, 0.0]), np.array([0.0, 2.0])):
        (g,) = pullback((u, 1.0 * 0))
        np.testing.assert_allclose(g, np.cos(x) * u)
    (g,) = pullback((np.zeros(2), 1.0))
    np.testing.assert_allclose(g, [1.0, 1.0])
    out, pullback, aux = vjp(lambda x: (fnp.sum(x ** 2), "aux"), x, has_aux=True)
    assert aux == "aux"


def test_linearize_and_linear_transpose():
    f = lambda x: fnp.sin(x) * x
    x = np.array([0.3, 0.9])
    y, f_jvp = linearize(f, x)
    t = np.array([1.0, -2.0])
    np.testing.assert_allclose(f_jvp(t), jvp(f, (x,), (t,))[1])
    np.testing.assert_allclose(y, f(x))
    A = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
    lin = lambda v: A @ v
    (ct,) = fungrad.linear_transpose(lin, np.zeros(2))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(ct, A.T @ np.array([1.0, 2.0, 3.0]))


def test_jacobians_pytrees_and_hessian_argnums():
    f = lambda x, y: {"s": fnp.sum(x * y), "p": x * 2.0}
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    jf, jr = jacfwd(f, argnums=(0, 1))(x, y), jacrev(f, argnums=(0, 1))(x, y)
    for j in (jf, jr):
        np.testing.assert_allclose(j["s"][0], y)
        np.testing.assert_allclose(j["s"][1], x)
        np.testing.assert_allclose(j["p"][0], 2 * np.eye(2))
        np.testing.assert_allclose(j["p"][1], np.zeros((2, 2)))
    H = hessian(lambda x, y: fnp.sum(x ** 2 * y), argnums=1)(x, y)
    np.testing.assert_allclose(H, np.zeros((2, 2)))
    H = hessian(lambda x, y: fnp.sum(x ** 2 * y))(x, y)
    np.testing.assert_allclose(H, np.diag(2 * y))


def test_integer_inputs_float0_and_allow_int():
    f = lambda x, n: x * n
    gx, gn = grad(f, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert gx == 3.0 and gn.dtype == fungrad.float0
    out, t = jvp(lambda x, n: x * n, (2.0, 3), (1.0, np.zeros((), fungrad.float0)))
    assert t == 3.0


def test_stop_gradient():
    f = lambda x: x ** 2 + fungrad.lax.stop_gradient(x ** 3)
    assert grad(f)(2.0) == 4.0
    assert grad(lambda x: fungrad.stop_gradient(x) * x)(3.0) == 3.0


def test_check_grads_on_user_function():
    f = lambda x, y: fnp.sum(fnp.tanh(x) * fnp.exp(y) / (1 + y ** 2))
    check_grads(f, (np.array([0.1, -0.4]), np.array([0.3, 0.2])), order=2)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------

def test_grad_of_non_scalar_output_suggests_fixes():
    with pytest.raises(TypeError, match=r"shape \(3,\).*sum\(\).*jacrev.*vjp"):
        grad(lambda x: x * 2)(np.ones(3))


def test_grad_integer_input_names_argument_and_allow_int():
    with pytest.raises(TypeError, match=r"argument 0.*int64.*allow_int"):
        grad(lambda x: x * 2.0)(np.array(3))


def test_grad_argnums_out_of_range():
    with pytest.raises(ValueError, match="argnums"):
        grad(lambda x: x, argnums=2)(1.0)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="has_aux"):
        grad(lambda x: x ** 2, has_aux=True)(1.0)


def test_pullback_wrong_cotangent():
    _, pullback = vjp(lambda x: fnp.sin(x), np.ones(3))
    with pytest.raises(ValueError, match=r"shape \(3,\).*got shape \(2,\)"):
        pullback(np.ones(2))
    with pytest.raises(ValueError, match="structure"):
        pullback((np.ones(3), np.ones(3)))


def test_escaped_tracer_raises_with_origin():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0
    grad(f)(1.0)
    with pytest.raises(fungrad.UnexpectedTracerError, match="test_autodiff.py"):
        fnp.sin(leaked[0])


def test_inputs_not_mutated():
    x = np.array([1.0, 2.0])
    x_copy = x.copy()
    grad(lambda v: fnp.sum(v ** 2))(x)
    np.testing.assert_array_equal(x, x_copy)
    g = grad(lambda v: fnp.sum(v ** 2))(x)
    with pytest.raises(TypeError, match="immutable"):
        g[0] = 1.0   # results are read-only


def test_eager_grad_computes_on_plain_ndarrays():
    """Eager grad's primal values are plain ndarrays whatever the inputs
    (fungrad Arrays, weak Array constants): the per-primitive compiled code
    then calls NumPy's C operators directly (an Array operand costs a Python
    method call per operator and a subclass wrap per ufunc).  The values and
    weak types are those of the Arrays."""
    from fungrad.interpreters import tape
    seen = []

    def f(x, w):
        y = fnp.asarray(0.5) * x          # a weak Array constant
        y = y @ w + fnp.ones(3)            # a strong Array constant
        seen.extend(type(v.primal) for v in (x, w, y) if type(v) is tape.TapeTracer)
        return fnp.sum(fnp.tanh(y) * 2.0)

    x, w = fnp.asarray(np.arange(3.0)), fnp.asarray(np.eye(3) * 0.25)
    value, (gx, gw) = value_and_grad(f, argnums=(0, 1))(x, w)
    assert seen and all(t is np.ndarray for t in seen), seen
    y = 0.5 * np.arange(3.0) @ (np.eye(3) * 0.25) + 1.0
    np.testing.assert_allclose(value, np.sum(np.tanh(y) * 2.0), rtol=1e-14)
    dy = 2.0 * (1 - np.tanh(y) ** 2)
    np.testing.assert_allclose(gx, 0.5 * (np.eye(3) * 0.25) @ dy, rtol=1e-14)
    np.testing.assert_allclose(gw, np.outer(0.5 * np.arange(3.0), dy), rtol=1e-14)
    assert isinstance(value, fungrad.Array) and isinstance(gx, fungrad.Array)
    assert not value.weak_type and not gx.weak_type


def test_eager_backward_computes_on_plain_ndarrays(monkeypatch):
    """A weakly typed seed cotangent (value_and_grad of a function of a Python
    float) reaches the compiled backward code as a plain ndarray (an Array
    sent each of its operators through fungrad.numpy: 75 against 25 us for the
    seed function's pullback); the gradient keeps its weak type."""
    from fungrad.interpreters import tape
    g = value_and_grad(seed_f)
    g(1.5)
    seen = []

    def recording(bwd):
        return lambda *args: seen.extend(type(a) for a in args) or bwd(*args)
    for lin in list(tape._CACHE.values()):
        if isinstance(lin, tape._Linearization) and lin.bwd is not None:
            monkeypatch.setattr(lin, "bwd", recording(lin.bwd))
    value, grad_value = g(1.5)
    assert seen and fungrad.Array not in seen, seen
    np.testing.assert_allclose(grad_value, seed_f_prime(1.5), rtol=1e-13)
    assert grad_value.weak_type and value.weak_type


@pytest.mark.parametrize("reduce", [fnp.max, fnp.min])
def test_eager_max_saves_its_operand_and_recomputes_the_mask(reduce):
    """The eager tape's linearization of a max (min) saves the operand, not
    the tie mask and counts (``Primitive.recompute_residuals``): a
    stop_gradient'ed max (a softmax's shift) costs one reduction.  Gradients,
    ties shared equally, are the jit's and the finite differences'."""
    from fungrad.interpreters import tape
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(4, 6)).astype(np.float64)     # many ties
    w = rng.normal(size=4)
    f = lambda x: fnp.sum(reduce(x, axis=1) * w) + fnp.sum(
        fnp.exp(x - fungrad.lax.stop_gradient(reduce(x, axis=1, keepdims=True))))
    got = grad(f)(x)
    np.testing.assert_array_equal(got, fungrad.jit(grad(f))(x))
    ties = (x == (x.max if reduce is fnp.max else x.min)(axis=1, keepdims=True))
    want = ties * (w / ties.sum(axis=1))[:, None] + np.exp(
        x - (x.max if reduce is fnp.max else x.min)(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-14)
    name = "reduce_max" if reduce is fnp.max else "reduce_min"
    lins = [lin for key, lin in tape._CACHE.items()
            if str(key[0]) == name and isinstance(lin, tape._Linearization)]
    assert lins and all(lin.forward.jaxpr.outvars[1] is lin.forward.jaxpr.invars[0]
                        for lin in lins)
