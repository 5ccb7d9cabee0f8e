"""Record jax.scipy.optimize.minimize(method="BFGS") iterates as test data.

Run once with real JAX (float64), not by the tests:
    python tools/gen_bfgs_reference.py > tests/data/bfgs_reference.json
Made with JAX 0.10.2 (jax_enable_x64=True) on CPU. For each problem and each
maxiter in 1..6 and unlimited, it stores x, fun, nfev, njev, nit, status.
"""
import json

import jax
import jax.numpy as jnp
from jax.scipy.optimize import minimize

jax.config.update("jax_enable_x64", True)

PROBLEMS = {
    # the example: a badly scaled quadratic from 0
    "scaled_quadratic": (lambda x: jnp.sum(jnp.array([1.0, 10.0]) * (x - jnp.array([1.0, -2.0])) ** 2),
                         [0.0, 0.0]),
    "rosenbrock": (lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                   [-1.2, 1.0]),
    "rosenbrock_from_0_0": (lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                            [0.0, 0.0]),
    "rosenbrock_from_2_2": (lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                            [2.0, 2.0]),
    "rosenbrock_5d_scipy_start": (
        lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
        [1.3, 0.7, 0.8, 1.9, 1.2]),
    "quartic_3d": (lambda x: jnp.sum((x - jnp.array([0.5, -1.0, 2.0])) ** 4 + jnp.sin(x) ** 2),
                   [0.0, 0.0, 0.0]),
    "rosenbrock_4d": (lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                      [-1.0, 0.5, 1.5, -0.5]),
}


def record():
    out = {}
    for name, (f, x0) in PROBLEMS.items():
        rows = []
        for maxiter in (1, 2, 3, 4, 5, 6, None):
            options = {} if maxiter is None else {"maxiter": maxiter}
            r = minimize(f, jnp.array(x0), method="BFGS", options=options)
            rows.append({"maxiter": maxiter, "x": [float(v) for v in r.x], "fun": float(r.fun),
                         "nfev": int(r.nfev), "njev": int(r.njev), "nit": int(r.nit),
                         "status": int(r.status), "success": bool(r.success)})
        out[name] = {"x0": x0, "runs": rows}
    return out


if __name__ == "__main__":
    print(json.dumps({"jax_version": jax.__version__, "problems": record()}, indent=1))
