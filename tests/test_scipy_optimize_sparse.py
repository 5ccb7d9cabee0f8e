"""fungrad.scipy.optimize.minimize (BFGS, L-BFGS) and fungrad.scipy.sparse.linalg
(cg, bicgstab, gmres) against SciPy / NumPy, under jit, vmap and grad."""
import json
import pathlib

import numpy as np
import pytest
import scipy.optimize

import fungrad
import fungrad.numpy as fnp
import fungrad.scipy.optimize as fopt
import fungrad.scipy.sparse.linalg as fsla
from fungrad import grad, jit, vmap

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
rng = np.random.default_rng(0)
N = 6
_Q = rng.normal(size=(N, N))
SPD = _Q @ _Q.T + N * np.eye(N)
GEN = rng.normal(size=(N, N)) + 4 * np.eye(N)
B = rng.normal(size=N)


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


# --------------------------------------------------------------------------- minimize

@pytest.mark.parametrize("method", ["BFGS", "bfgs", LBFGS])
def test_minimize_quadratic_is_exact(method):
    c = np.arange(1.0, N + 1)
    # L-BFGS also stops on a small relative decrease of f (ftol): switch that off
    options = {"ftol": 0.0} if method == LBFGS else None
    res = fopt.minimize(lambda x: 0.5 * x @ SPD @ x - c @ x, np.zeros(N), method=method,
                        tol=1e-10, options=options)
    np.testing.assert_allclose(res.x, np.linalg.solve(SPD, c), rtol=1e-6, atol=1e-8)
    assert bool(res.success) and int(res.status) == 0


def _jax_bfgs_reference():
    # recorded once from JAX 0.10.2 (float64) by tools/gen_bfgs_reference.py
    path = pathlib.Path(__file__).parent / "data" / "bfgs_reference.json"
    return json.loads(path.read_text())["problems"]


BFGS_PROBLEMS = {
    "scaled_quadratic": lambda x: fnp.sum(fnp.array([1.0, 10.0]) * (x - fnp.array([1.0, -2.0])) ** 2),
    "rosenbrock": rosen, "rosenbrock_from_0_0": rosen, "rosenbrock_from_2_2": rosen,
    "rosenbrock_5d_scipy_start": rosen, "rosenbrock_4d": rosen,
    "quartic_3d": lambda x: fnp.sum((x - fnp.array([0.5, -1.0, 2.0])) ** 4 + fnp.sin(x) ** 2),
}


@pytest.mark.parametrize("name", sorted(BFGS_PROBLEMS))
def test_bfgs_takes_jaxs_steps(name):
    """Same iterates and counts as JAX after every number of iterations: JAX's
    line search (first step from the previous decrease, zoom's margins and
    failure rules), initial inverse Hessian and stopping rules. JAX's search
    also fails where SciPy's succeeds (Rosenbrock from (-1.2, 1): status 3)."""
    problem = _jax_bfgs_reference()[name]
    for run in problem["runs"]:
        options = {} if run["maxiter"] is None else {"maxiter": run["maxiter"]}
        res = fopt.minimize(BFGS_PROBLEMS[name], np.array(problem["x0"]), method="BFGS",
                            options=options)
        counts = [int(res.nfev), int(res.njev), int(res.nit), int(res.status)]
        assert counts == [run["nfev"], run["njev"], run["nit"], run["status"]], run["maxiter"]
        assert bool(res.success) == run["success"]
        np.testing.assert_allclose(res.x, run["x"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.fun, run["fun"], rtol=1e-9, atol=1e-15)


def test_lbfgs_rosenbrock_matches_scipy():
    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])    # scipy's example
    res = fopt.minimize(rosen, x0, method=LBFGS)
    ref = scipy.optimize.minimize(lambda x: float(rosen(x)), x0, method="BFGS",
                                  jac=lambda x: np.asarray(grad(rosen)(x)))
    assert bool(res.success)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)
    np.testing.assert_allclose(res.x, np.ones(5), atol=1e-4)
    assert float(res.fun) < 1e-8


def test_minimize_result_fields():
    res = fopt.minimize(rosen, np.array([2.0, 2.0]), method="BFGS")
    assert isinstance(res, fopt.OptimizeResults)
    assert res._fields == ("x", "success", "status", "fun", "jac", "hess_inv", "nfev",
                           "njev", "nit")
    np.testing.assert_allclose(res.jac, grad(rosen)(res.x), rtol=1e-12)
    assert np.max(np.abs(res.jac)) < 1e-5
    np.testing.assert_allclose(res.fun, rosen(res.x))
    # hess_inv approximates the inverse Hessian at the optimum
    np.testing.assert_allclose(res.hess_inv, np.linalg.inv(fungrad.hessian(rosen)(res.x)),
                               rtol=0.05, atol=0.02)
    assert res.hess_inv.shape == (2, 2)
    assert 0 < int(res.nit) < 100 and int(res.nfev) >= int(res.nit) and int(res.njev) > 0
    short = fopt.minimize(rosen, np.array([2.0, 2.0]), method="BFGS", options={"maxiter": 3})
    assert int(short.nit) == 3 and int(short.status) == 1 and not bool(short.success)


def test_minimize_args_tol_and_options():
    f = lambda x, a, b: fnp.sum((x - a) ** 2) * b
    res = fopt.minimize(f, np.zeros(3), args=(np.array([1.0, 2.0, 3.0]), 2.0), method="BFGS",
                        tol=1e-10)
    np.testing.assert_allclose(res.x, [1.0, 2.0, 3.0], atol=1e-9)
    res = fopt.minimize(f, np.zeros(3), (np.ones(3), 1.0), method="BFGS",
                        options={"gtol": 1e-3, "norm": 2, "line_search_maxiter": 5})
    assert bool(res.success)


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
def test_minimize_under_jit_and_vmap(method):
    # starts each method converges from: JAX's line search fails from (-1.2, 1) and
    # (0, 0) with BFGS, and from more starts with its (experimental) L-BFGS
    x0s = np.array([[0.5, 0.5], [1.5, 1.5], [2.0, 2.0]] if method == "BFGS"
                   else [[1.5, 1.5], [0.8, 1.2], [1.5, 1.5]])
    run = lambda x: fopt.minimize(rosen, x, method=method)
    eager = [run(x) for x in x0s]
    batched = vmap(run)(x0s)
    jitted = jit(vmap(run))(x0s)
    for res in (batched, jitted):
        np.testing.assert_allclose(res.x, np.ones((3, 2)), atol=2e-4)
        np.testing.assert_allclose(res.x, [e.x for e in eager], rtol=1e-8)
        np.testing.assert_array_equal(res.nit, [e.nit for e in eager])
    np.testing.assert_allclose(jit(run)(x0s[0]).x, eager[0].x, rtol=1e-10)
    # a parameter traced by vmap through args
    centers = np.array([[1.0, 2.0], [-3.0, 0.5]])
    sols = vmap(lambda c: fopt.minimize(lambda x, c: fnp.sum((x - c) ** 4 + (x - c) ** 2),
                                        np.zeros(2), (c,), method=method).x)(centers)
    np.testing.assert_allclose(sols, centers, atol=1e-5)


def test_minimize_bad_input_errors():
    with pytest.raises(ValueError, match="method 'nelder-mead' is not supported"):
        fopt.minimize(rosen, np.zeros(2), method="nelder-mead")
    with pytest.raises(TypeError, match="args must be a tuple"):
        fopt.minimize(lambda x, a: fnp.sum(x * a), np.zeros(2), args=1.0, method="BFGS")
    with pytest.raises(ValueError, match="x0 must be 1-dimensional"):
        fopt.minimize(rosen, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError, match="unknown option"):
        fopt.minimize(rosen, np.zeros(2), method="BFGS", options={"maxfun": 3})


# --------------------------------------------------------------------------- linear solvers

SOLVERS = [("cg", fsla.cg, SPD), ("bicgstab", fsla.bicgstab, GEN), ("gmres", fsla.gmres, GEN),
           ("gmres-incremental",
            lambda *a, **k: fsla.gmres(*a, solve_method="incremental", restart=4, **k), GEN)]
IDS = [s[0] for s in SOLVERS]


@pytest.mark.parametrize("name,solve,A", SOLVERS, ids=IDS)
def test_solvers_match_numpy_matrix_and_function(name, solve, A):
    expected = np.linalg.solve(A, B)
    x, info = solve(A, B, tol=1e-10)
    assert info is None
    np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
    x, _ = solve(lambda v: A @ v, B, tol=1e-10, x0=np.ones(N))
    np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
    # default tolerance: relative residual 1e-5
    x, _ = solve(A, B)
    assert np.linalg.norm(A @ x - B) <= 1e-5 * np.linalg.norm(B) * 1.0001


@pytest.mark.parametrize("name,solve,A", SOLVERS, ids=IDS)
def test_solvers_pytree_b_and_preconditioner(name, solve, A):
    # block-diagonal operator on {"u": (2,), "w": (2, 2)}
    A1, A2 = A[:2, :2] + 3 * np.eye(2), A[2:, 2:] + 3 * np.eye(4)
    op = lambda t: {"u": A1 @ t["u"], "w": (A2 @ t["w"].ravel()).reshape(2, 2)}
    b = {"u": B[:2], "w": B[2:].reshape(2, 2)}
    x, _ = solve(op, b, tol=1e-11)
    np.testing.assert_allclose(x["u"], np.linalg.solve(A1, B[:2]), rtol=1e-8)
    np.testing.assert_allclose(x["w"].ravel(), np.linalg.solve(A2, B[2:]), rtol=1e-8)
    # Jacobi preconditioner (matrix form, and function form)
    Minv = np.diag(1.0 / np.diag(A))
    for M in (Minv, lambda v: Minv @ v):
        x, _ = solve(A, B, tol=1e-11, M=M)
        np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name,solve,A", SOLVERS, ids=IDS)
def test_solvers_gradients_match_direct_solve(name, solve, A):
    loss = lambda A, b, s: fnp.sum(fnp.sin(s(A, b)) * fnp.arange(1.0, N + 1))
    iterative = lambda A, b: solve(A, b, tol=1e-12)[0]
    direct = lambda A, b: fnp.linalg.solve(A, b)
    for argnum in (0, 1):
        got = grad(loss, argnum)(A, B, iterative)
        want = grad(loss, argnum)(A, B, direct)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)
    # parameters closed over by a function-form operator
    op_loss = lambda t, s: fnp.sum(s(lambda v: (A + t * np.eye(N)) @ v, B) ** 2)
    fn_iter = lambda op, b: solve(op, b, tol=1e-12)[0]
    fn_direct = lambda op, b: fnp.linalg.solve(fungrad.jacfwd(op)(fnp.zeros(N)), b)
    np.testing.assert_allclose(grad(op_loss)(0.5, fn_iter), grad(op_loss)(0.5, fn_direct),
                               rtol=1e-7)
    # under jit
    np.testing.assert_allclose(jit(grad(loss, 1), static_argnums=2)(A, B, iterative),
                               grad(loss, 1)(A, B, direct), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name,solve,A", SOLVERS, ids=IDS)
def test_solvers_under_jit_and_vmap(name, solve, A):
    bs = rng.normal(size=(3, N))
    expected = np.linalg.solve(A, bs.T).T
    run = lambda b: solve(A, b, tol=1e-10)[0]
    np.testing.assert_allclose(vmap(run)(bs), expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(jit(vmap(run))(bs), expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(jit(run)(bs[0]), expected[0], rtol=1e-8, atol=1e-10)
    # vmap over matrices too
    As = np.stack([A, A + np.eye(N), A + 2 * np.eye(N)])
    got = vmap(lambda A, b: solve(A, b, tol=1e-10)[0])(As, bs)
    np.testing.assert_allclose(got, np.linalg.solve(As, bs[..., None])[..., 0], rtol=1e-8,
                               atol=1e-10)


def test_solver_bad_inputs():
    with pytest.raises(ValueError, match="A must be a square 2-D matrix"):
        fsla.cg(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="b has 3 elements"):
        fsla.bicgstab(np.eye(4), np.ones(3))
    with pytest.raises(ValueError, match="x0 and b must have the same structure"):
        fsla.cg(np.eye(3), np.ones(3), x0=np.ones(2))
    with pytest.raises(ValueError, match="solve_method must be"):
        fsla.gmres(np.eye(3), np.ones(3), solve_method="qr")
    # restart larger than the system is capped (as JAX)
    np.testing.assert_allclose(fsla.gmres(GEN, B, restart=50, tol=1e-10)[0],
                               np.linalg.solve(GEN, B), rtol=1e-8)


def test_grad_through_minimize_unrolls_the_iterations():
    # beyond JAX: reverse mode goes through the while_loops (the algorithm's
    # derivative), which at convergence is close to the implicit derivative
    f = lambda x, c: fnp.sum((x - c) ** 2 + 0.1 * x ** 4)
    c = np.array([1.0, 2.0])
    g = grad(lambda c: fnp.sum(fopt.minimize(f, np.zeros(2), (c,), method="BFGS").x))(c)
    x = fopt.minimize(f, np.zeros(2), (c,), method="BFGS").x
    np.testing.assert_allclose(g, 2 / (2 + 1.2 * x ** 2), rtol=1e-4)
