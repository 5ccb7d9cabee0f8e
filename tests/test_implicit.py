"""Implicit differentiation: custom_linear_solve, custom_root and
fungrad.implicit.fixed_point against direct/unrolled differentiation."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, jvp, lax, vmap
from fungrad.implicit import fixed_point
from fungrad.test_util import check_grads

rng = np.random.default_rng(0)
N = 5
W = rng.normal(size=(N, N)) * 0.3 / np.sqrt(N)
X = rng.normal(size=N)


def _layer(z, params):
    W, x = params
    return fnp.tanh(W @ z + x)


def _implicit_loss(W, x, solver="iterate"):
    return fnp.sum(fixed_point(_layer, fnp.zeros(N), (W, x), solver=solver) ** 2)


def _unrolled_loss(W, x, iterations=200):
    z = fnp.zeros(N)
    for _ in range(iterations):
        z = _layer(z, (W, x))
    return fnp.sum(z ** 2)


@pytest.mark.parametrize("solver", ["iterate", "dense"])
def test_fixed_point_layer_implicit_equals_unrolling_200_iterations(solver):
    expected = grad(_unrolled_loss, (0, 1))(W, X)
    for how, got in [("eager", grad(_implicit_loss, (0, 1))(W, X, solver)),
                     ("jit", jit(grad(_implicit_loss, (0, 1)), static_argnums=2)(W, X, solver))]:
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10, err_msg=how)
    np.testing.assert_allclose(_implicit_loss(W, X, solver), _unrolled_loss(W, X), rtol=1e-10)
    # second order (reverse over reverse, forward over reverse) and forward mode
    np.testing.assert_allclose(fungrad.hessian(lambda x: _implicit_loss(W, x, solver))(X),
                               fungrad.hessian(lambda x: _unrolled_loss(W, x))(X),
                               rtol=1e-7, atol=1e-9)
    v = rng.normal(size=N)
    np.testing.assert_allclose(jvp(lambda x: _implicit_loss(W, x, solver), (X,), (v,))[1],
                               jvp(lambda x: _unrolled_loss(W, x), (X,), (v,))[1], rtol=1e-8)
    xs = rng.normal(size=(3, N))
    np.testing.assert_allclose(vmap(grad(lambda x: _implicit_loss(W, x, solver)))(xs),
                               [grad(lambda x: _unrolled_loss(W, x))(x) for x in xs],
                               rtol=1e-8, atol=1e-10)


def test_fixed_point_gradient_does_not_depend_on_the_iteration_count():
    # a loose forward tolerance changes the value slightly, not the method:
    # the backward pass is one linear solve at whatever point was reached
    g_tight = grad(lambda x: fnp.sum(fixed_point(_layer, fnp.zeros(N), (W, x))))(X)
    g_loose = grad(lambda x: fnp.sum(fixed_point(_layer, fnp.zeros(N), (W, x), tol=1e-6)))(X)
    np.testing.assert_allclose(g_tight, g_loose, rtol=1e-4)


def _solve_with(A, b, **kw):
    return lax.custom_linear_solve(lambda v: A @ v, b, **kw)


def test_custom_linear_solve_matches_a_direct_solve_to_second_order():
    A = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=4)

    def f(A, b):
        x = _solve_with(A, b, solve=lambda mv, r: fnp.linalg.solve(A, r),
                        transpose_solve=lambda vm, r: fnp.linalg.solve(A.T, r))
        return fnp.sum(fnp.sin(x))
    direct = lambda A, b: fnp.sum(fnp.sin(fnp.linalg.solve(A, b)))
    for got, want in zip(grad(f, (0, 1))(A, b), grad(direct, (0, 1))(A, b)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(f, (A, b), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(jit(grad(f, (0, 1)))(A, b)[0], grad(direct)(A, b), rtol=1e-12)


def _conjugate_gradient(matvec, b, iterations):
    x, r = fnp.zeros_like(b), b
    p = r
    for _ in range(iterations):
        Ap = matvec(p)
        alpha = (r @ r) / (p @ Ap)
        x, r_new = x + alpha * p, r - alpha * Ap
        p, r = r_new + (r_new @ r_new) / (r @ r) * p, r_new
    return x


def test_custom_linear_solve_uses_the_implicit_rule_not_the_iterations():
    M = rng.normal(size=(6, 6))
    A = M @ M.T + 6 * np.eye(6)
    b = rng.normal(size=6)
    calls = []

    def cg(mv, r):
        calls.append(1)
        return _conjugate_gradient(mv, r, iterations=6)   # exact in 6 steps for 6x6

    def f(A, b):
        return fnp.sum(_solve_with(A, b, solve=cg, symmetric=True) ** 2)
    got = grad(f, (0, 1))(A, b)
    x = np.linalg.solve(A, b)
    lam = np.linalg.solve(A, 2 * x)                       # A^-T xbar, A symmetric
    np.testing.assert_allclose(got[1], lam, rtol=1e-8)
    np.testing.assert_allclose(got[0], -np.outer(lam, x), rtol=1e-8)
    # cg was traced once; the backward solve reuses that staged solve (symmetric)
    # and differentiates the equation, never cg's iterations
    assert len(calls) == 1


def test_custom_root_newton_sqrt():
    def sqrt(a):
        newton = lambda F, x0: lax.while_loop(lambda x: fnp.abs(F(x)) > 1e-13,
                                              lambda x: x - F(x) / (2 * x), x0)
        return lax.custom_root(lambda x: x * x - a, 1.0, newton, lambda g, y: y / g(1.0))
    a = 2.0
    np.testing.assert_allclose(sqrt(a), np.sqrt(a), rtol=1e-14)
    np.testing.assert_allclose(grad(sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-13)
    np.testing.assert_allclose(jit(grad(sqrt))(a), 0.5 / np.sqrt(a), rtol=1e-13)
    np.testing.assert_allclose(grad(grad(sqrt))(a), -0.25 * a ** -1.5, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(sqrt))(np.array([1.0, 4.0, 9.0])), [0.5, 0.25, 1 / 6],
                               rtol=1e-13)

    # a tangent_solve closing over a differentiated value (staged at call time)
    def sqrt_closed(a):
        newton = lambda F, x0: lax.while_loop(lambda x: fnp.abs(F(x)) > 1e-13,
                                              lambda x: x - F(x) / (2 * x), x0)
        return lax.custom_root(lambda x: x * x - a, 1.0, newton,
                               lambda g, y: y / (2 * fnp.sqrt(a)))
    np.testing.assert_allclose(grad(sqrt_closed)(a), 0.5 / np.sqrt(a), rtol=1e-13)
    np.testing.assert_allclose(grad(grad(sqrt_closed))(a), -0.25 * a ** -1.5, rtol=1e-12)


def test_bad_input():
    with pytest.raises(TypeError, match="reverse-mode.*transpose_solve"):
        grad(lambda b: fnp.sum(_solve_with(2 * np.eye(2), b,
                                           solve=lambda mv, r: r / 2)))(np.ones(2))
    with pytest.raises(TypeError, match="matvec must map"):
        lax.custom_linear_solve(lambda v: v[:1], np.ones(2), solve=lambda mv, r: r)
    with pytest.raises(TypeError, match="structure of initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, lambda F, x0: x0, lambda g, y: y)
    with pytest.raises(ValueError, match="solver must be"):
        fixed_point(_layer, fnp.zeros(N), (W, X), solver="newton")
    with pytest.raises(TypeError, match="float array"):
        fixed_point(_layer, np.zeros(N, np.int64), (W, X))
