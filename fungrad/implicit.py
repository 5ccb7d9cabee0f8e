"""``fungrad.implicit``: fixed points differentiated with the implicit function theorem.

``z = fixed_point(f, z0, params)`` iterates ``z <- f(z, params)`` to
convergence.  Its derivative does not go through the iterations: with
``F(z, θ) = f(z, θ) - z = 0`` at the fixed point,

    dz*/dθ = -(∂F/∂z)^-1 ∂F/∂θ = (I - ∂f/∂z)^-1 ∂f/∂θ,

so forward mode needs one linear solve with ``I - ∂f/∂z`` and reverse mode
one with its transpose (by iterating ``u <- (∂f/∂z) u + y``, which converges
whenever the forward iteration does, or by a dense solve), whatever the
number of forward iterations.  Built on ``fungrad.lax.custom_root`` and
``custom_linear_solve``; works under jit, vmap and grad of any order.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from fungrad._dtype_classes import is_floating

from fungrad import lax
from fungrad import numpy as fnp
from fungrad.api import jacfwd

__all__ = ["fixed_point"]


def _converged(z_new, z, tol):
    return fnp.max(fnp.abs(z_new - z)) <= tol * (1.0 + fnp.max(fnp.abs(z_new)))


def _iterate(step: Callable, z0, tol: float, max_iter: int):
    """``z <- step(z)`` until two iterates agree to ``tol`` or ``max_iter`` steps."""
    def cond(c):
        i, z, z_prev = c
        return (i < max_iter) & ((i == 0) | ~_converged(z, z_prev, tol))

    def body(c):
        i, z, _ = c
        return i + 1, step(z), z
    _, z, _ = lax.while_loop(cond, body, (np.int64(0), z0, z0))
    return z


def fixed_point(f: Callable, z0, params, *, tol: float = 1e-10, max_iter: int = 1000,
                solver: str = "iterate"):
    """The fixed point ``z = f(z, params)`` reached from ``z0`` (an array).

    Derivatives w.r.t. ``params`` (any pytree) are implicit: exact at the
    fixed point, independent of how many iterations it took.  ``solver``
    picks the backward linear solve: ``"iterate"`` (matrix-free, needs
    ``f`` to be a contraction in ``z``, as the forward iteration does) or
    ``"dense"`` (materialises ``∂f/∂z``: for small ``z``).
    """
    if not callable(f):
        raise TypeError("fixed_point: f must be a callable f(z, params) -> z")
    if solver not in ("iterate", "dense"):
        raise ValueError(f"fixed_point: solver must be 'iterate' or 'dense', got {solver!r}")
    z0 = fnp.asarray(z0)
    if not is_floating(z0.dtype):
        raise TypeError(f"fixed_point: z0 must be a float array, got {z0.dtype}")

    def solve(F, z_init):
        # F(z) = f(z, params) - z, so z + F(z) is one step of the iteration
        return _iterate(lambda z: z + F(z), z_init, tol, max_iter)

    def tangent_solve(g, y):
        # g(v) = (∂f/∂z - I) v; solve g(x) = y (JAX's custom_root convention)
        if solver == "dense":
            n = int(np.prod(np.shape(y)))
            flat_g = lambda v: fnp.ravel(g(fnp.reshape(v, np.shape(y))))
            M = jacfwd(flat_g)(fnp.zeros(n, y.dtype))
            return fnp.reshape(fnp.linalg.solve(M, fnp.ravel(y)), np.shape(y))
        # matrix-free, as a linear solve (so reverse mode transposes the equation,
        # not the iterations): with A = g + I, x = -(I - A)^-1 y, the limit of
        # u <- A u + y; the transposed system iterates with Aᵀ the same way
        def iterate_solve(matvec, rhs):
            return -_iterate(lambda u: matvec(u) + u + rhs, rhs, tol, max_iter)
        return lax.custom_linear_solve(g, y, iterate_solve, transpose_solve=iterate_solve)

    return lax.custom_root(lambda z: f(z, params) - z, z0, solve, tangent_solve)
