"""``fungrad.scipy.sparse.linalg``: Krylov solvers (``jax.scipy.sparse.linalg``).

``cg``, ``bicgstab`` and ``gmres`` solve ``A x = b`` where ``A`` (and the
preconditioner ``M``, which approximates ``A^-1``) is a square matrix or a
linear function, and ``b`` an array or a pytree of arrays.  They return
``(x, info)`` with ``info`` always ``None`` (as JAX).

Every loop is a ``lax.while_loop``, so the solvers run eagerly, under ``jit``
and under ``vmap`` (lanes run until all have converged).  The solve is wrapped
in ``lax.custom_linear_solve``: reverse mode differentiates the *equation*, not
the iterations -- the cotangent of ``b`` is ``A^-T x̄`` (one more solve, with
the same method on the transposed operator; ``cg`` uses ``symmetric=True``)
and values ``A`` closes over (matrix entries, parameters) get
``-(∂(A x)/∂θ)^T A^-T x̄``.  As in JAX, ``x0`` and ``M`` get no gradient and the
transposed solve uses ``M`` itself (not ``M^T``).  Forward mode (``jvp``)
differentiates the solver's iterations (see ``lax.custom_linear_solve``).

Internally the pytree ``b`` is raveled into one vector (``ravel_pytree``) and
``A``/``M`` are applied through that flattening.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, kind as dtype_kind
from fungrad import lax
from fungrad import numpy as fnp
from fungrad.flatten_util import ravel_pytree
from fungrad.tree_util import tree_flatten, tree_map

__all__ = ["cg", "bicgstab", "gmres"]


# --------------------------------------------------------------------------- operators

def _as_operator(A, name: str, size: int) -> Callable:
    """``A`` as a function ``x -> A x``: callables as they are, square matrices
    (anything with ``@``) by ``A @ x``; ``None`` (for ``M``) is the identity."""
    if A is None:
        return lambda x: x
    if callable(A):
        return A
    shape = np.shape(A)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix or a function computing "
                         f"{name}(x); got an array of shape {shape}")
    if shape[0] != size:
        raise ValueError(f"{name} has shape {shape} but b has {size} elements; "
                         f"pass a ({size}, {size}) matrix or a function")
    return lambda x: fnp.matmul(A, x)


def _check_x0(b, x0):
    if x0 is None:
        return tree_map(fnp.zeros_like, b)
    b_leaves, b_tree = tree_flatten(b)
    x_leaves, x_tree = tree_flatten(x0)
    if b_tree != x_tree or [np.shape(u) for u in b_leaves] != [np.shape(u) for u in x_leaves]:
        raise ValueError(f"x0 and b must have the same structure and shapes; got x0 "
                         f"{x_tree} {[np.shape(u) for u in x_leaves]} and b {b_tree} "
                         f"{[np.shape(u) for u in b_leaves]}")
    return x0


def _flat_solve(method: Callable, x0, M: Callable, **kw) -> Callable:
    """``solve(matvec, rhs)`` for custom_linear_solve: ravel the pytree ``rhs``,
    run ``method(A_flat, b_flat, x0_flat, M_flat, **kw)`` and unravel."""
    def solve(matvec, rhs):
        b_flat, unravel = ravel_pytree(rhs)
        x0_flat = ravel_pytree(x0)[0].astype(b_flat.dtype)
        A_flat = lambda v: ravel_pytree(matvec(unravel(v)))[0].astype(b_flat.dtype)
        M_flat = lambda v: ravel_pytree(M(unravel(v)))[0].astype(b_flat.dtype)
        return unravel(method(A_flat, b_flat, x0_flat, M_flat, **kw))
    return solve


def _isolve(who, method, A, b, x0, tol, atol, maxiter, M, symmetric, **kw):
    leaves = tree_flatten(b)[0]
    if not leaves:
        raise ValueError(f"{who}: b has no arrays; pass an array or a pytree of arrays")
    for leaf in leaves:
        if dtype_kind(fnp.result_type(leaf)) not in "fiu":
            raise TypeError(f"{who}: b must be real (float) arrays, got dtype "
                            f"{fnp.result_type(leaf)}; complex systems are not supported")
    b = tree_map(lambda u: fnp.asarray(u, dtype=fnp.promote_types(fnp.result_type(u),
                                                                  np.float64)), b)
    size = sum(int(np.size(u)) for u in leaves)
    if maxiter is None:
        maxiter = 10 * size
    if int(maxiter) < 0:
        raise ValueError(f"{who}: maxiter must be a non-negative integer, got {maxiter}")
    A_op, M_op = _as_operator(A, "A", size), _as_operator(M, "M", size)
    x0 = _check_x0(b, x0)
    solve = _flat_solve(method, x0, M_op, tol=tol, atol=atol, maxiter=int(maxiter), **kw)
    x = lax.custom_linear_solve(A_op, b, solve=solve, transpose_solve=solve,
                                symmetric=symmetric)
    return x, None


def _zero_safe_div(num, den):
    """``num / den``, 0 where ``den == 0`` (a breakdown: the loop stops there)."""
    ok = den != 0
    return fnp.where(ok, num / fnp.where(ok, den, 1.0), 0.0)


# --------------------------------------------------------------------------- CG

def _cg_flat(A, b, x0, M, *, tol, atol, maxiter):
    """Preconditioned conjugate gradients on 1-d arrays."""
    bound2 = fnp.maximum(tol ** 2 * fnp.vdot(b, b), atol ** 2)
    r0 = b - A(x0)
    z0 = M(r0)

    def cond(c):
        x, r, gamma, p, k = c
        return (fnp.vdot(r, r) > bound2) & (k < maxiter)

    def body(c):
        x, r, gamma, p, k = c
        Ap = A(p)
        alpha = _zero_safe_div(gamma, fnp.vdot(p, Ap))
        x, r = x + alpha * p, r - alpha * Ap
        z = M(r)
        gamma_new = fnp.vdot(r, z)
        p = z + _zero_safe_div(gamma_new, gamma) * p
        return x, r, gamma_new, p, k + 1
    out = lax.while_loop(cond, body, (x0, r0, fnp.vdot(r0, z0), z0, np.int64(0)))
    return out[0]


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for symmetric positive definite ``A`` (``jax.scipy.sparse.linalg.cg``).

    Stops when ``||b - A x|| <= max(tol * ||b||, atol)`` or after ``maxiter``
    iterations (default ``10 * size(b)``).  Returns ``(x, None)``.
    Differentiable with ``custom_linear_solve(..., symmetric=True)``.
    """
    return _isolve("cg", _cg_flat, A, b, x0, tol, atol, maxiter, M, symmetric=True)


# --------------------------------------------------------------------------- BiCGSTAB

def _bicgstab_flat(A, b, x0, M, *, tol, atol, maxiter):
    """Preconditioned BiCGSTAB on 1-d arrays; ``k < 0`` flags a breakdown
    (``rho == 0``: -10, ``alpha == 0`` or ``omega == 0``: -11) and stops."""
    bound2 = fnp.maximum(tol ** 2 * fnp.vdot(b, b), atol ** 2)
    r0 = b - A(x0)
    one = fnp.ones((), b.dtype)

    def cond(c):
        x, r, rhat, alpha, omega, rho, p, q, k = c
        return (fnp.vdot(r, r) > bound2) & (k < maxiter) & (k >= 0)

    def body(c):
        x, r, rhat, alpha, omega, rho, p, q, k = c
        rho_new = fnp.vdot(rhat, r)
        beta = _zero_safe_div(rho_new, rho) * _zero_safe_div(alpha, omega)
        p = r + beta * (p - omega * q)
        phat = M(p)
        q = A(phat)
        alpha = _zero_safe_div(rho_new, fnp.vdot(rhat, q))
        s = r - alpha * q
        shat = M(s)
        t = A(shat)
        omega = _zero_safe_div(fnp.vdot(t, s), fnp.vdot(t, t))
        x = x + alpha * phat + omega * shat
        r = s - omega * t
        k = fnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = fnp.where(rho_new == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_new, p, q, k
    zeros = fnp.zeros_like(b)
    init = (x0, r0, r0, one, one, one, zeros, zeros, np.int64(0))
    return lax.while_loop(cond, body, init)[0]


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """BiCGSTAB for general (non-symmetric) ``A`` (``jax.scipy.sparse.linalg.bicgstab``).

    Stops when ``||b - A x|| <= max(tol * ||b||, atol)``, after ``maxiter``
    iterations (default ``10 * size(b)``) or at a breakdown.  Returns
    ``(x, None)``; reverse mode solves the transposed system with BiCGSTAB.
    """
    return _isolve("bicgstab", _bicgstab_flat, A, b, x0, tol, atol, maxiter, M,
                   symmetric=False)


# --------------------------------------------------------------------------- GMRES

def _safe_normalize(v, scale):
    """``(v / ||v||, ||v||)``, or ``(0, 0)`` when ``||v||`` is round-off of ``scale``."""
    nrm = fnp.linalg.norm(v)
    tiny = nrm <= dtype_finfo(np.float64).eps * scale
    return fnp.where(tiny, 0.0, v / fnp.where(tiny, 1.0, nrm)), fnp.where(tiny, 0.0, nrm)


def _arnoldi_step(A, M, V, H, k):
    """Extend the Krylov basis ``V`` (rows) by ``M A V[k]``, orthogonalised by
    classical Gram-Schmidt done twice; column ``k`` of ``H`` records the coefficients."""
    w = M(A(V[k]))
    scale = fnp.linalg.norm(w)
    h = V @ w                       # rows of V past k are still zero
    w = w - h @ V
    h2 = V @ w
    w, h = w - h2 @ V, h + h2
    w, nrm = _safe_normalize(w, scale)
    V = V.at[k + 1].set(w)
    H = H.at[:, k].set(h.at[k + 1].set(nrm))
    return V, H


def _gmres_cycle_batched(A, M, x, r, beta, restart):
    """One restart cycle: ``restart`` Arnoldi steps, then least squares."""
    n = r.shape[0]
    V = fnp.zeros((restart + 1, n), r.dtype).at[0].set(_zero_safe_div(1.0, beta) * r)
    H = fnp.zeros((restart + 1, restart), r.dtype)
    V, H = lax.fori_loop(0, restart, lambda k, c: _arnoldi_step(A, M, *c, k), (V, H))
    rhs = fnp.zeros(restart + 1, r.dtype).at[0].set(beta)
    y = fnp.linalg.lstsq(H, rhs)[0]
    return x + y @ V[:restart]


def _givens(a, b):
    """``(c, s)`` with ``[[c, s], [-s, c]] @ [a, b] = [hypot(a, b), 0]``."""
    rho = fnp.sqrt(a * a + b * b)
    safe = fnp.where(rho == 0, 1.0, rho)
    return fnp.where(rho == 0, 1.0, a / safe), fnp.where(rho == 0, 0.0, b / safe)


def _gmres_cycle_incremental(A, M, x, r, beta, restart, ptol):
    """One restart cycle with Givens rotations: stops as soon as the
    (preconditioned) residual estimate is below ``ptol``."""
    n = r.shape[0]
    V = fnp.zeros((restart + 1, n), r.dtype).at[0].set(_zero_safe_div(1.0, beta) * r)
    H = fnp.zeros((restart + 1, restart), r.dtype)
    g = fnp.zeros(restart + 1, r.dtype).at[0].set(beta)
    rot = fnp.zeros((restart, 2), r.dtype)

    def cond(c):
        V, H, g, rot, k = c
        return (k < restart) & (fnp.abs(g[k]) > ptol)

    def body(c):
        V, H, g, rot, k = c
        V, H = _arnoldi_step(A, M, V, H, k)
        col = H[:, k]

        def apply_old(i, col):      # previous rotations, masked beyond k
            cs, sn = rot[i, 0], rot[i, 1]
            a, b = col[i], col[i + 1]
            new = col.at[i].set(cs * a + sn * b).at[i + 1].set(-sn * a + cs * b)
            return fnp.where(i < k, new, col)
        col = lax.fori_loop(0, restart - 1, apply_old, col)
        cs, sn = _givens(col[k], col[k + 1])
        col = col.at[k].set(cs * col[k] + sn * col[k + 1]).at[k + 1].set(0.0)
        g = g.at[k + 1].set(-sn * g[k]).at[k].set(cs * g[k])
        return V, H.at[:, k].set(col), g, rot.at[k].set(fnp.stack([cs, sn])), k + 1
    V, R, g, _, k = lax.while_loop(cond, body, (V, H, g, rot, np.int64(0)))
    # R[:k, :k] is upper triangular; pad the unused part with the identity
    used = fnp.arange(restart) < k
    R = fnp.where(used[:, None] & used[None, :], R[:restart], fnp.eye(restart, dtype=r.dtype))
    diag = fnp.diagonal(R)
    R = R + fnp.diag(fnp.where(used & (diag == 0), 1.0, 0.0))    # breakdown guard
    y = fnp.linalg.solve(fnp.triu(R), fnp.where(used, g[:restart], 0.0))
    return x + fnp.where(used, y, 0.0) @ V[:restart]


def _gmres_flat(A, b, x0, M, *, tol, atol, maxiter, restart, solve_method):
    """Restarted GMRES on 1-d arrays, left-preconditioned by ``M``."""
    b_norm = fnp.linalg.norm(b)
    bound = fnp.maximum(tol * b_norm, atol)
    Mb_norm = fnp.linalg.norm(M(b))
    # the preconditioned residual's target, scaled like JAX's
    ptol = Mb_norm * fnp.minimum(1.0, _zero_safe_div(bound, b_norm))

    def residual(x):
        r = M(b - A(x))
        return r, fnp.linalg.norm(r)
    r0, beta0 = residual(x0)

    def cond(c):
        x, r, beta, k = c
        return (k < maxiter) & (beta > ptol)

    def body(c):
        x, r, beta, k = c
        if solve_method == "batched":
            x = _gmres_cycle_batched(A, M, x, r, beta, restart)
        else:
            x = _gmres_cycle_incremental(A, M, x, r, beta, restart, ptol)
        r, beta = residual(x)
        return x, r, beta, k + 1
    return lax.while_loop(cond, body, (x0, r0, beta0, np.int64(0)))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Restarted GMRES for general ``A`` (``jax.scipy.sparse.linalg.gmres``).

    ``restart`` is the Krylov subspace size per cycle (capped at ``size(b)``),
    ``maxiter`` the number of restart cycles (default ``10 * size(b)``).
    ``solve_method="batched"`` runs all ``restart`` Arnoldi steps then a least
    squares solve; ``"incremental"`` updates a QR factorisation by Givens
    rotations and ends a cycle early once converged.  Stops when the
    preconditioned residual ``||M(b - A x)||`` is below
    ``||M b|| * min(1, max(tol * ||b||, atol) / ||b||)``.  Returns ``(x, None)``.
    """
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"gmres: solve_method must be 'batched' or 'incremental', "
                         f"got {solve_method!r}")
    size = sum(int(np.size(u)) for u in tree_flatten(b)[0])
    if int(restart) < 1:
        raise ValueError(f"gmres: restart must be a positive integer, got {restart}")
    restart = min(int(restart), max(size, 1))
    return _isolve("gmres", _gmres_flat, A, b, x0, tol, atol, maxiter, M, symmetric=False,
                   restart=restart, solve_method=solve_method)
