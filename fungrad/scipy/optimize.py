"""``fungrad.scipy.optimize``: ``minimize`` with BFGS (``jax.scipy.optimize``).

``minimize(fun, x0, args, method="BFGS")`` runs quasi-Newton BFGS with a
strong-Wolfe line search (Nocedal & Wright, algorithms 3.5 and 3.6: bracket
by doubling the first step, then zoom by cubic / quadratic interpolation with
bisection as the fallback), taking JAX's steps: its first step (from the
previous decrease), zoom constants and failure rules, identity initial
inverse Hessian and stopping rules, so iterates and ``nfev``/``njev``/``nit``
are JAX's (and JAX's line search fails where SciPy's does not, e.g. on
Rosenbrock from (-1.2, 1)).  Gradients come from ``value_and_grad(fun)``.
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

from fungrad._dtype_classes import finfo as dtype_finfo, is_floating
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
    k: object
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


# JAX's zoom constants: a cubic (quadratic) trial is accepted only 20% (10%) of
# the bracket inside it; a bracket narrower than the threshold, or 30 trials, fail
_CUBIC_MARGIN, _QUAD_MARGIN, _ZOOM_MAXITER = 0.2, 0.1, 30


def _bracket_threshold(dtype):
    return 1e-10 if dtype_finfo(dtype).bits >= 64 else 1e-5


def _trial_step(lo, hi, rec, j):
    """Zoom's next trial: cubic (from iteration 1), else quadratic, else bisection,
    each accepted only well inside the bracket.  The margins scale with the
    signed width ``a_hi - a_lo``, as in JAX (a reversed bracket accepts no
    interpolant and its zoom fails after this trial)."""
    a_lo, f_lo, d_lo = lo
    a_hi, f_hi = hi[:2]
    dalpha = a_hi - a_lo
    left, right = fnp.minimum(a_lo, a_hi), fnp.maximum(a_lo, a_hi)

    def inside(a_ok, margin):
        a, ok = a_ok
        return ok & (a > left + margin * dalpha) & (a < right - margin * dalpha)
    cubic = _cubicmin(a_lo, f_lo, d_lo, a_hi, f_hi, *rec)
    quad = _quadmin(a_lo, f_lo, d_lo, a_hi, f_hi)
    use_cubic = (j > 0) & inside(cubic, _CUBIC_MARGIN)
    use_quad = ~use_cubic & inside(quad, _QUAD_MARGIN)
    return fnp.where(use_cubic, cubic[0], fnp.where(use_quad, quad[0], (a_lo + a_hi) / 2.0))


def _pick(mask, new, old):
    return tuple(fnp.where(mask, n, o) for n, o in zip(new, old))


def _zoom(phi, wolfe, lo, hi, g0, skip):
    """Algorithm 3.6 (Nocedal & Wright) as JAX runs it: shrink the bracket
    ``[lo, hi]`` (each ``(a, phi, dphi)``) until a trial satisfies the strong
    Wolfe conditions ``wolfe = (sufficient_decrease, curvature)``.  Returns
    ``(failed, evaluations, (a, phi, grad))``; runs no iteration if ``skip``.
    A failed zoom returns JAX's initial star (step 1 with lo's value)."""
    sufficient_decrease, curvature = wolfe
    threshold = _bracket_threshold(np.result_type(lo[0]))

    def body(c):
        done, failed, j, lo, hi, rec, star = c
        failed = failed | (hi[0] - lo[0] <= threshold)
        a_j = _trial_step(lo, hi, rec, j)
        f_j, d_j, g_j = phi(a_j)
        hi_to_j = sufficient_decrease(a_j, f_j) | (f_j >= lo[1])
        found = ~hi_to_j & curvature(d_j)
        lo_to_j = ~hi_to_j & ~found
        hi_to_lo = lo_to_j & (d_j * (hi[0] - lo[0]) >= 0)
        rec = _pick(hi_to_j | hi_to_lo, hi[:2], _pick(lo_to_j, lo[:2], rec))
        hi = _pick(hi_to_j, (a_j, f_j, d_j), _pick(hi_to_lo, lo, hi))
        lo = _pick(lo_to_j, (a_j, f_j, d_j), lo)
        star = _pick(found, (a_j, f_j, g_j), star)
        return done | found, failed | (j + 1 >= _ZOOM_MAXITER), j + 1, lo, hi, rec, star
    rec0 = ((lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0)
    init = (fnp.asarray(False), fnp.asarray(False), np.int64(0), lo, hi, rec0,
            (_f(1.0), lo[1], g0))
    _, failed, j, _, _, _, star = lax.while_loop(lambda c: ~c[0] & ~c[1] & ~skip, body, init)
    return failed, j, star


def _first_step(phi0, dphi0, old_old_fval):
    """The first trial step: 1, or JAX's (and SciPy's) guess from the previous
    decrease, ``min(1, 1.01 * 2 (f_k - f_{k-1}) / slope)``."""
    if old_old_fval is None:
        return _f(1.0)
    guess = 1.01 * 2 * (phi0 - old_old_fval) / dphi0
    return fnp.where(guess > 1, 1.0, guess)


def line_search(f: Callable, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4,
                c2=0.9, maxiter=20):
    """Strong-Wolfe line search along ``pk`` from ``xk``, as
    ``jax.scipy.optimize.line_search`` (its arguments, constants and results):
    the first step from ``old_old_fval`` (else 1), then doubling until a step
    satisfies the conditions or brackets one, which ``_zoom`` then finds.

    Returns ``_LineSearchResults(failed, nit, nfev, ngev, k, a_k, f_k, g_k, status)``;
    status 0 ok, 1 zoom failed, 3 maxiter reached.
    """
    from fungrad.api import value_and_grad
    vg = value_and_grad(f)

    def phi(a):
        val, g = vg(xk + a * pk)
        return val, fnp.dot(g, pk), g
    evaluated_start = old_fval is None or gfk is None
    if evaluated_start:
        old_fval, gfk = vg(xk)
    phi0, dphi0 = _f(old_fval), fnp.dot(gfk, pk)
    start = _first_step(phi0, dphi0, old_old_fval)
    wolfe = (lambda a, f_a: f_a > phi0 + c1 * a * dphi0,
             lambda d_a: fnp.abs(d_a) <= -c2 * dphi0)

    def body(c):
        done, failed, i, prev, nfev, star = c
        a_i = fnp.where(i == 1, start, 2.0 * prev[0])
        f_i, d_i, g_i = phi(a_i)
        cur = (a_i, f_i, d_i)
        zoom_up = wolfe[0](a_i, f_i) | ((f_i >= prev[1]) & (i > 1))
        accept = ~zoom_up & wolfe[1](d_i)
        zoom_down = ~zoom_up & ~accept & (d_i >= 0)
        lo, hi = _pick(zoom_up, prev, cur), _pick(zoom_up, cur, prev)
        z_failed, z_nfev, z_star = _zoom(phi, wolfe, lo, hi, gfk, ~(zoom_up | zoom_down))
        zoomed = zoom_up | zoom_down
        star = _pick(zoomed, z_star, _pick(accept, (a_i, f_i, g_i), star))
        return (done | zoomed | accept, failed | (zoomed & z_failed), i + 1, cur,
                nfev + 1 + z_nfev, star)
    init = (fnp.asarray(False), fnp.asarray(False), np.int64(1), (_f(0.0), phi0, dphi0),
            np.int64(1 if evaluated_start else 0), (_f(0.0), phi0, gfk))
    done, failed, i, _, nfev, (a_k, f_k, g_k) = lax.while_loop(
        lambda c: ~c[0] & ~c[1] & (c[2] <= maxiter), body, init)
    status = fnp.where(failed, 1, fnp.where(i > maxiter, 3, 0))
    if dtype_finfo(np.result_type(a_k)).bits != 64:      # JAX's floor on tiny float32 steps
        a_k = fnp.where(fnp.abs(a_k) < 1e-8, fnp.sign(a_k) * 1e-8, a_k)
    return _LineSearchResults(failed | ~done, i - 1, nfev, nfev, i, a_k, f_k, g_k, status)


# --------------------------------------------------------------------------- BFGS

def _norm(g, ord):
    return fnp.linalg.norm(g, ord=ord)


def _bfgs_update(H, s, y):
    """Inverse-Hessian update ``(I - ρ s yᵀ) H (I - ρ y sᵀ) + ρ s sᵀ``, ρ = 1/(yᵀs);
    H is kept where ρ is not finite (JAX's rule: a negative ``yᵀs`` updates)."""
    sy = fnp.dot(y, s)
    rho = 1.0 / fnp.where(sy == 0, 1.0, sy)     # never a division warning; masked below
    finite = (sy != 0) & fnp.isfinite(rho)
    rho = fnp.where(finite, rho, 0.0)
    W = fnp.eye(s.shape[0], dtype=H.dtype) - rho * fnp.outer(s, y)
    return fnp.where(finite, W @ H @ W.T + rho * fnp.outer(s, s), H)


def _minimize_bfgs(fun, x0, *, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS from ``x0`` (Nocedal & Wright, algorithm 6.1) with JAX's steps:
    identity initial inverse Hessian, the previous value guiding the line
    search's first step, and JAX's stopping rules; returns ``OptimizeResults``."""
    from fungrad.api import value_and_grad
    maxiter = 200 * x0.shape[0] if maxiter is None else int(maxiter)
    f0, g0 = value_and_grad(fun)(x0)
    f0 = _f(f0)

    def cond(c):
        converged, failed, k = c[:3]
        return ~converged & ~failed & (k < maxiter)

    def body(c):
        converged, failed, k, nfev, ngev, x, f, g, H, f_prev, ls_status = c
        p = -(H @ g)
        ls = line_search(fun, x, p, old_fval=f, old_old_fval=f_prev, gfk=g,
                         maxiter=line_search_maxiter)
        s = ls.a_k * p
        H = _bfgs_update(H, s, ls.g_k - g)
        converged = _norm(ls.g_k, norm) < gtol
        return (converged, ls.failed, k + 1, nfev + ls.nfev, ngev + ls.ngev, x + s, ls.f_k,
                ls.g_k, H, f, ls.status)
    init = (_norm(g0, norm) < gtol, fnp.asarray(False), np.int64(0), np.int64(1),
            np.int64(1), x0, f0, g0, fnp.eye(x0.shape[0], dtype=x0.dtype),
            f0 + _norm(g0, 2) / 2, np.int64(0))
    converged, failed, k, nfev, ngev, x, f, g, H, _, ls_status = lax.while_loop(cond, body, init)
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
    if not is_floating(x0.dtype):
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
