"""``fungrad.scipy.optimize``: ``minimize`` with BFGS (``jax.scipy.optimize``).

``minimize(fun, x0, args, method="BFGS")`` runs quasi-Newton BFGS with a
strong-Wolfe line search (Nocedal & Wright, algorithms 3.5 and 3.6: bracket
by doubling the step from 1, then zoom by cubic / quadratic interpolation with
bisection as the fallback).  Gradients come from ``value_and_grad(fun)``.
Every loop is a ``lax.while_loop``, so ``minimize`` runs under ``jit`` and
``vmap`` (e.g. over several starting points).

Differentiating through ``minimize`` (JAX does not support it): the loops are
``while_loop``s, which fungrad differentiates in forward and reverse mode, so
``grad``/``jvp`` w.r.t. ``args`` or closed-over parameters differentiate the
optimiser's iterations (memory linear in the iteration count).  The result is
the derivative of the *algorithm*: close to the implicit derivative of the
optimum once converged (to ~gtol), not exact; w.r.t. ``x0`` it is ~0.  For the optimum's
sensitivity to parameters use ``lax.custom_root`` on ``grad(fun)``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from fungrad import lax
from fungrad import numpy as fnp

__all__ = ["minimize", "OptimizeResults", "line_search"]


class OptimizeResults(NamedTuple):
    """Result of ``minimize`` (as ``jax.scipy.optimize.OptimizeResults``).

    status: 0 converged, 1 maxiter reached, 3 line search zoom failed,
    4 line search stuck at a saddle point, 5 line search maxiter reached.
    """
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


class _LineSearchResults(NamedTuple):
    failed: object
    nit: object
    nfev: object
    ngev: object
    a_k: object
    f_k: object
    g_k: object
    status: object


def _f(x):
    return fnp.asarray(x, dtype=np.float64)


# --------------------------------------------------------------------------- line search

def _div(num, den):
    """``num / den`` and whether ``den != 0``; 0 (never a warning, never a NaN
    that could poison reverse mode) where it is."""
    ok = den != 0
    return fnp.where(ok, num / fnp.where(ok, den, 1.0), 0.0), ok


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """``(minimiser, exists)`` of the cubic through (a, fa) with slope fpa,
    (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = fb - fa - fpa * db
    d2 = fc - fa - fpa * dc
    A, ok1 = _div(dc ** 2 * d1 - db ** 2 * d2, denom)
    B, _ = _div(-dc ** 3 * d1 + db ** 3 * d2, denom)
    radical = B * B - 3 * A * fpa
    root = fnp.sqrt(fnp.where(radical > 0, radical, 1.0)) * (radical > 0)
    step, ok2 = _div(-B + root, 3 * A)
    return a + step, ok1 & ok2 & (radical >= 0)


def _quadmin(a, fa, fpa, b, fb):
    """``(minimiser, exists)`` of the quadratic through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    B, ok1 = _div(fb - fa - fpa * db, db * db)
    step, ok2 = _div(fpa, 2 * B)
    return a - step, ok1 & ok2


def _trial_step(lo, hi, rec, j):
    """Zoom's next trial: cubic (from iteration 1), else quadratic, else bisection,
    each accepted only well inside the bracket."""
    a_lo, f_lo, d_lo = lo
    a_hi, f_hi = hi[:2]
    a_rec, f_rec = rec
    dalpha = a_hi - a_lo
    left, right = fnp.minimum(a_lo, a_hi), fnp.maximum(a_lo, a_hi)

    def inside(a_ok, frac):
        a, ok = a_ok
        margin = frac * fnp.abs(dalpha)
        return ok & fnp.isfinite(a) & (a > left + margin) & (a < right - margin)
    cubic = _cubicmin(a_lo, f_lo, d_lo, a_hi, f_hi, a_rec, f_rec)
    quad = _quadmin(a_lo, f_lo, d_lo, a_hi, f_hi)
    a_cubic, a_quad = cubic[0], quad[0]
    use_cubic = (j > 0) & inside(cubic, 0.2)
    use_quad = ~use_cubic & inside(quad, 0.1)
    return fnp.where(use_cubic, a_cubic, fnp.where(use_quad, a_quad, a_lo + 0.5 * dalpha))


def _zoom(phi, phi0, dphi0, lo, hi, skip, c1, c2, maxiter):
    """Algorithm 3.6: shrink the bracket ``[lo, hi]`` (each ``(a, phi, dphi)``)
    until a step satisfies the strong Wolfe conditions.  Returns
    ``(failed, iterations, a, phi, grad)``; runs zero iterations if ``skip``."""
    g_dummy = phi(lo[0])[2] * 0.0

    def cond(c):
        done, failed = c[0], c[1]
        return ~done & ~failed

    def body(c):
        done, failed, j, lo, hi, rec, star = c
        a_j = _trial_step(lo, hi, rec, j)
        f_j, d_j, g_j = phi(a_j)
        new = (a_j, f_j, d_j)
        hi_to_j = (f_j > phi0 + c1 * a_j * dphi0) | (f_j >= lo[1])
        found = ~hi_to_j & (fnp.abs(d_j) <= -c2 * dphi0)
        lo_to_j = ~hi_to_j & ~found
        flip = lo_to_j & (d_j * (hi[0] - lo[0]) >= 0)
        pick = lambda m, u, v: tuple(fnp.where(m, s, t) for s, t in zip(u, v))
        rec = pick(hi_to_j | flip, hi[:2], pick(lo_to_j, lo[:2], rec))
        hi = pick(hi_to_j, new, pick(flip, lo, hi))
        lo = pick(lo_to_j, new, lo)
        star = pick(found, (a_j, f_j, g_j), star)
        tiny = fnp.abs(hi[0] - lo[0]) <= 1e-12 * fnp.maximum(1.0, fnp.abs(lo[0]))
        failed = ~found & ((j + 1 >= maxiter) | tiny)
        return found, failed, j + 1, lo, hi, rec, star
    star0 = (_f(0.0), phi0, g_dummy)
    init = (fnp.asarray(skip), fnp.asarray(False), np.int64(0), lo, hi, lo[:2], star0)
    done, failed, j, lo, hi, rec, star = lax.while_loop(cond, body, init)
    return failed, j, star


def line_search(f: Callable, xk, pk, old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
    """Strong-Wolfe line search along ``pk`` from ``xk`` (``jax.scipy.optimize.line_search``
    semantics, minus ``old_old_fval``): steps 1, 2, 4, ... until a step satisfies
    the conditions or brackets one, which ``_zoom`` then finds.

    Returns ``_LineSearchResults(failed, nit, nfev, ngev, a_k, f_k, g_k, status)``;
    status 0 ok, 1 zoom failed, 2 saddle point (zero slope), 3 maxiter reached.
    """
    from fungrad.api import value_and_grad
    vg = value_and_grad(f)

    def phi(a):
        val, g = vg(xk + a * pk)
        return val, fnp.dot(g, pk), g
    if old_fval is None or gfk is None:
        old_fval, gfk = vg(xk)
    phi0, dphi0 = _f(old_fval), fnp.dot(gfk, pk)
    zoom_max = 30

    def cond(c):
        return ~c[0] & (c[1] <= maxiter)

    def body(c):
        done, i, a_prev, f_prev, d_prev, nfev, star, failed, saddle = c
        a_i = fnp.where(i == 1, 1.0, 2.0 * a_prev)
        f_i, d_i, g_i = phi(a_i)
        star1 = (f_i > phi0 + c1 * a_i * dphi0) | ((f_i >= f_prev) & (i > 1))
        star2 = ~star1 & (fnp.abs(d_i) <= -c2 * dphi0)
        star3 = ~star1 & ~star2 & (d_i >= 0)
        zoom = star1 | star3
        cur, prev = (a_i, f_i, d_i), (a_prev, f_prev, d_prev)
        lo = tuple(fnp.where(star1, p, q) for p, q in zip(prev, cur))
        hi = tuple(fnp.where(star1, q, p) for p, q in zip(prev, cur))
        z_failed, z_iters, z_star = _zoom(phi, phi0, dphi0, lo, hi, ~zoom, c1, c2, zoom_max)
        star = tuple(fnp.where(zoom, z, fnp.where(star2, s, o))
                     for z, s, o in zip(z_star, (a_i, f_i, g_i), star))
        done = zoom | star2
        return (done, i + 1, a_i, f_i, d_i, nfev + 1 + z_iters, star,
                failed | (zoom & z_failed), saddle)
    star0 = (_f(0.0), phi0, gfk)
    saddle = ~(dphi0 < 0)           # not a descent direction: nothing to search
    init = (saddle, np.int64(1), _f(0.0), phi0, dphi0, np.int64(0), star0,
            fnp.asarray(False), saddle)
    done, i, _, _, _, nfev, (a_k, f_k, g_k), failed, saddle = lax.while_loop(cond, body, init)
    status = fnp.where(saddle, 2, fnp.where(failed, 1, fnp.where(~done, 3, 0)))
    failed = failed | saddle | ~done
    return _LineSearchResults(failed, i - 1, nfev, nfev, a_k, f_k, g_k, status)


# --------------------------------------------------------------------------- BFGS

def _norm(g, ord):
    return fnp.linalg.norm(g, ord=ord)


def _bfgs_update(H, s, y):
    """Inverse-Hessian update ``(I - ρ s yᵀ) H (I - ρ y sᵀ) + ρ s sᵀ``, ρ = 1/(yᵀs);
    skipped (H kept) when ``yᵀs`` is not positive and finite."""
    sy = fnp.dot(y, s)
    ok = fnp.isfinite(sy) & (sy > 0)
    rho = fnp.where(ok, 1.0 / fnp.where(ok, sy, 1.0), 0.0)
    W = fnp.eye(s.shape[0], dtype=H.dtype) - rho * fnp.outer(s, y)
    return fnp.where(ok, W @ H @ W.T + rho * fnp.outer(s, s), H)


def _minimize_bfgs(fun, x0, *, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS from ``x0``; returns the final ``OptimizeResults``."""
    from fungrad.api import value_and_grad
    maxiter = 200 * x0.shape[0] if maxiter is None else int(maxiter)
    f0, g0 = value_and_grad(fun)(x0)
    f0 = _f(f0)

    def cond(c):
        converged, failed, k = c[:3]
        return ~converged & ~failed & (k < maxiter)

    def body(c):
        converged, failed, k, nfev, ngev, x, f, g, H, ls_status = c
        p = -(H @ g)
        ls = line_search(fun, x, p, old_fval=f, gfk=g, maxiter=line_search_maxiter)
        s = fnp.where(ls.failed, 0.0, ls.a_k * p)
        x_new = x + s
        f_new = fnp.where(ls.failed, f, ls.f_k)
        g_new = fnp.where(ls.failed, g, ls.g_k)
        H = fnp.where(ls.failed, H, _bfgs_update(H, s, g_new - g))
        converged = _norm(g_new, norm) < gtol
        return (converged, ls.failed, k + 1, nfev + ls.nfev, ngev + ls.ngev, x_new, f_new,
                g_new, H, ls.status)
    init = (_norm(g0, norm) < gtol, fnp.asarray(False), np.int64(0), np.int64(1),
            np.int64(1), x0, f0, g0, fnp.eye(x0.shape[0], dtype=x0.dtype), np.int64(0))
    converged, failed, k, nfev, ngev, x, f, g, H, ls_status = lax.while_loop(cond, body, init)
    status = fnp.where(converged, 0, fnp.where(k == maxiter, 1,
                                               fnp.where(failed, 2 + ls_status, -1)))
    return OptimizeResults(x=x, success=converged & ~failed, status=status, fun=f, jac=g,
                           hess_inv=H, nfev=nfev, njev=ngev, nit=k)


# --------------------------------------------------------------------------- L-BFGS

_LBFGS_OPTIONS = ("maxiter", "norm", "maxcor", "ftol", "gtol", "maxls")


def _two_loop(g, S, Y, rho, count):
    """``H g`` by the L-BFGS two-loop recursion over the history rows (newest
    first; rows ``>= count`` are unused and masked out)."""
    m = S.shape[0]
    used = fnp.arange(m) < count

    def first(i, c):
        q, alphas = c
        a = fnp.where(used[i], rho[i] * fnp.dot(S[i], q), 0.0)
        return q - a * Y[i], alphas.at[i].set(a)
    q, alphas = lax.fori_loop(0, m, first, (g, fnp.zeros(m, g.dtype)))
    yy = fnp.dot(Y[0], Y[0])
    gamma = fnp.where((count > 0) & (yy > 0), 1.0 / fnp.where(rho[0] > 0, rho[0], 1.0)
                      / fnp.where(yy > 0, yy, 1.0), 1.0)
    r = gamma * q

    def second(j, r):
        i = m - 1 - j
        beta = rho[i] * fnp.dot(Y[i], r)
        return r + fnp.where(used[i], alphas[i] - beta, 0.0) * S[i]
    return lax.fori_loop(0, m, second, r)


def _minimize_lbfgs(fun, x0, *, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-5, maxls=20):
    """Limited-memory BFGS (history ``maxcor``) with the same line search;
    stops when ``||g|| < gtol`` or the relative decrease of f is below ``ftol``."""
    from fungrad.api import value_and_grad
    maxiter = 200 * x0.shape[0] if maxiter is None else int(maxiter)
    n, m = x0.shape[0], int(maxcor)
    f0, g0 = value_and_grad(fun)(x0)
    f0 = _f(f0)

    def cond(c):
        return ~c[0] & ~c[1] & (c[2] < maxiter)

    def body(c):
        converged, failed, k, nfev, x, f, g, S, Y, rho, count, ls_status = c
        p = -_two_loop(g, S, Y, rho, count)
        ls = line_search(fun, x, p, old_fval=f, gfk=g, maxiter=maxls)
        s = fnp.where(ls.failed, 0.0, ls.a_k * p)
        f_new, g_new = fnp.where(ls.failed, f, ls.f_k), fnp.where(ls.failed, g, ls.g_k)
        y = g_new - g
        sy = fnp.dot(s, y)
        keep = ~ls.failed & (sy > 0)
        S = fnp.where(keep, fnp.roll(S, 1, axis=0).at[0].set(s), S)
        Y = fnp.where(keep, fnp.roll(Y, 1, axis=0).at[0].set(y), Y)
        rho = fnp.where(keep, fnp.roll(rho, 1).at[0].set(1.0 / fnp.where(keep, sy, 1.0)), rho)
        count = fnp.where(keep, fnp.minimum(count + 1, m), count)
        small_step = (f - f_new) <= ftol * fnp.maximum(fnp.maximum(fnp.abs(f), fnp.abs(f_new)), 1.0)
        converged = (_norm(g_new, norm) < gtol) | (~ls.failed & small_step)
        return (converged, ls.failed, k + 1, nfev + ls.nfev, x + s, f_new, g_new, S, Y, rho,
                count, ls.status)
    z = fnp.zeros((m, n), x0.dtype)
    init = (_norm(g0, norm) < gtol, fnp.asarray(False), np.int64(0), np.int64(1), x0, f0, g0,
            z, z, fnp.zeros(m, x0.dtype), np.int64(0), np.int64(0))
    converged, failed, k, nfev, x, f, g, *_, ls_status = lax.while_loop(cond, body, init)
    status = fnp.where(converged, 0, fnp.where(k == maxiter, 1,
                                               fnp.where(failed, 2 + ls_status, -1)))
    return OptimizeResults(x=x, success=converged & ~failed, status=status, fun=f, jac=g,
                           hess_inv=None, nfev=nfev, njev=nfev, nit=k)


# --------------------------------------------------------------------------- minimize

_BFGS_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimise ``fun(x, *args)`` over a 1-d ``x`` from ``x0`` (``jax.scipy.optimize.minimize``).

    ``method``: ``"BFGS"`` (case-insensitive) or
    ``"l-bfgs-experimental-do-not-rely-on-this"``.  ``options`` for BFGS:
    ``maxiter`` (default ``200 * len(x0)``), ``gtol`` (1e-5), ``norm``
    (``inf``) and ``line_search_maxiter`` (10); ``tol``, if given, is the
    default ``gtol``.  Returns an ``OptimizeResults`` of arrays.
    """
    if not callable(fun):
        raise TypeError(f"minimize: fun must be a callable fun(x, *args), got {type(fun)}")
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {type(args).__name__}; "
                        f"wrap a single argument as (arg,)")
    if not isinstance(method, str):
        raise TypeError(f"minimize: method must be a string such as 'BFGS', got {method!r}")
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    x0 = fnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be 1-dimensional, got shape {x0.shape}; "
                         f"ravel it (fungrad.flatten_util.ravel_pytree for pytrees)")
    if x0.dtype.kind != "f":
        x0 = x0.astype(np.float64)
    fun_with_args = lambda x: fun(x, *args)
    kind = method.lower()
    if kind == "bfgs":
        return _minimize_bfgs(fun_with_args, x0, **_checked(options, _BFGS_OPTIONS, method))
    if kind == "l-bfgs-experimental-do-not-rely-on-this":
        return _minimize_lbfgs(fun_with_args, x0, **_checked(options, _LBFGS_OPTIONS, method))
    raise ValueError(f"minimize: method {method!r} is not supported; use 'BFGS' or "
                     f"'l-bfgs-experimental-do-not-rely-on-this'")


def _checked(options, known, method):
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"minimize: unknown option(s) {unknown} for method {method!r}; "
                        f"supported: {list(known)}")
    return options
