"""``fungrad.ode.odeint``: adaptive Dormand–Prince integration with adjoint gradients
(``jax.experimental.ode.odeint``).

The forward pass is an explicit Runge–Kutta 5(4) method with embedded error
control (Dormand–Prince, FSAL), stepping exactly onto every requested time:
a ``scan`` over the output times, each a ``while_loop`` of adaptive steps.

Reverse mode does not differentiate those steps.  It solves the adjoint
equations backwards in time (``custom_vjp``): with ``a(t) = ∂L/∂y(t)``,

    da/dt = -aᵀ ∂f/∂y,    dā_θ/dt = -aᵀ ∂f/∂θ,

integrated together with ``y`` from the last time to the first, adding each
output's cotangent to ``a`` as it is passed.  Memory does not grow with the
number of steps; the price is a second (backward) integration, accurate to the
same tolerances.  Forward mode (``jvp``) differentiates the solver itself.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad._dtype_classes import is_floating, is_inexact
from fungrad import lax
from fungrad import numpy as fnp
from fungrad.flatten_util import ravel_pytree
from fungrad.interpreters.partial_eval import stage_pytree
from fungrad.tree_util import tree_flatten, tree_map

__all__ = ["odeint"]

# Dormand–Prince 5(4): nodes, stages, 5th-order weights, and (5th - 4th)-order weights
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = [[],
      [1 / 5],
      [3 / 40, 9 / 40],
      [44 / 45, -56 / 15, 32 / 9],
      [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
      [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
      [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
_B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_B_ERR = _B - np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200,
                        187 / 2100, 1 / 40])


def _rms(x):
    return fnp.sqrt(fnp.mean(x * x))


def _dopri_step(fn, y, f0, t, h):
    """One Dormand–Prince step: (y at t + h, f there, error estimate)."""
    ks = [f0]
    for i in range(1, 7):
        yi = y + h * sum(a * k for a, k in zip(_A[i], ks) if a != 0.0)
        ks.append(fn(yi, t + _C[i] * h))
    y_new = y + h * sum(b * k for b, k in zip(_B, ks) if b != 0.0)
    err = h * sum(e * k for e, k in zip(_B_ERR, ks) if e != 0.0)
    return y_new, ks[6], err


def _initial_step(fn, t0, y0, f0, rtol, atol):
    """Hairer, Nørsett & Wanner's starting step for a 5th-order method."""
    scale = atol + fnp.abs(y0) * rtol
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = fnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / fnp.maximum(d1, 1e-300))
    f1 = fn(y0 + h0 * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / h0
    h1 = fnp.where(fnp.maximum(d1, d2) <= 1e-15, fnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / fnp.maximum(fnp.maximum(d1, d2), 1e-300)) ** (1 / 5))
    return fnp.minimum(100 * h0, h1)


def _integrate(fn: Callable, y0, ts, rtol, atol, mxstep, hmax):
    """``y`` at every time of the increasing ``ts`` for ``dy/dt = fn(y, t)``, ``y(ts[0]) = y0``."""
    f0 = fn(y0, ts[0])
    h0 = _initial_step(fn, ts[0], y0, f0, rtol, atol)

    def to_next_time(carry, t_target):
        def keep_going(c):
            _, _, t, _, n = c
            return (t < t_target) & (n < mxstep)

        def step(c):
            y, f, t, h, n = c
            h = fnp.minimum(fnp.minimum(h, hmax), t_target - t)
            lands = h >= t_target - t          # this step reaches the output time exactly
            y_new, f_new, err = _dopri_step(fn, y, f, t, h)
            ratio = _rms(err / (atol + rtol * fnp.maximum(fnp.abs(y), fnp.abs(y_new))))
            accept = ratio <= 1.0
            factor = fnp.where(ratio == 0.0, 10.0,
                               fnp.clip(0.9 * fnp.maximum(ratio, 1e-300) ** -0.2, 0.2, 10.0))
            return (fnp.where(accept, y_new, y), fnp.where(accept, f_new, f),
                    fnp.where(accept, fnp.where(lands, t_target, t + h), t), h * factor, n + 1)
        y, f, t, h = carry
        y, f, t, h, _ = lax.while_loop(keep_going, step, (y, f, t, h, np.int64(0)))
        return (y, f, t, h), y
    _, ys = lax.scan(to_next_time, (y0, f0, ts[0], h0), ts[1:])
    return fnp.concatenate([y0[None], ys])


def _check_times(t):
    t = fnp.asarray(t)
    if t.ndim != 1 or t.shape[0] < 1:
        raise ValueError(f"odeint: t must be a 1-d array of output times, got shape {t.shape}")
    if not is_floating(t.dtype):
        t = t.astype(np.float64)
    try:
        if np.any(np.diff(np.asarray(t)) < 0):
            raise ValueError("odeint: the times t must be increasing")
    except (TypeError, ValueError) as e:
        if "increasing" in str(e):
            raise
    return t


def odeint(func: Callable, y0, t, *args, rtol: float = 1.4e-8, atol: float = 1.4e-8,
           mxstep=np.inf, hmax=np.inf):
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; returns ``y`` at
    every time in ``t`` (stacked along a new leading axis of each leaf of
    ``y0``'s pytree).  Differentiable w.r.t. ``y0``, ``t``, ``args`` and values
    ``func`` closes over (adjoint method in reverse mode)."""
    if not callable(func):
        raise TypeError("odeint: func must be a callable func(y, t, *args)")
    t = _check_times(t)
    y0_flat, unravel = ravel_pytree(y0)
    y0_flat = fnp.asarray(y0_flat, dtype=np.result_type(y0_flat.dtype, np.float64))
    arg_leaves, arg_tree = tree_flatten(args)
    in_tree = tree_flatten((y0_flat, t[0], args))[1]
    avals = [_aval(x) for x in tree_flatten((y0_flat, t[0], args))[0]]

    def flat_field(yta):
        y, tt, a = yta
        dy = ravel_pytree(func(unravel(y), tt, *a))[0]
        if dy.shape != y.shape:
            raise TypeError(f"odeint: func must return the structure and shapes of y0 "
                            f"({y.shape[0]} numbers in all), got {dy.shape[0]}")
        return fnp.astype(dy, y.dtype)
    closed, hoisted, _ = stage_pytree(flat_field, in_tree, avals)
    ys = _odeint_flat(closed, hoisted, y0_flat, t, list(arg_leaves), arg_tree,
                      rtol, atol, mxstep, hmax)
    return _unravel_stacked(ys, unravel, y0)


def _aval(x):
    from fungrad.core import get_aval
    return get_aval(x).strip_weak_type()


def _unravel_stacked(ys, unravel, y0):
    """(N, size) -> y0's pytree with a leading axis of length N on every leaf."""
    from fungrad.api import vmap
    if not tree_flatten(y0)[0]:
        return y0
    return vmap(unravel)(ys)


def _odeint_flat(closed, hoisted, y0, t, arg_leaves, arg_tree, rtol, atol, mxstep, hmax):
    """``y`` at the times ``t`` for the staged flat vector field ``closed``
    ((hoisted values, y, t, argument leaves) -> dy/dt), with the adjoint rule."""
    from fungrad.custom_derivatives import custom_vjp
    from fungrad.core import eval_jaxpr
    bad = [i for i, x in enumerate(arg_leaves) if not is_inexact(fnp.asarray(x).dtype)]
    if bad:
        raise TypeError(f"odeint: the extra arguments must be float arrays (leaves {bad} are "
                        "not); close over integer or boolean values in func instead")

    def field(consts, y, tt, a):
        return eval_jaxpr(closed.jaxpr, closed.consts, *consts, y, tt, *a)[0]

    def solve(consts, y, ts, a):
        return _integrate(lambda yy, tt: field(consts, yy, tt, a), y, ts, rtol, atol, mxstep, hmax)

    @custom_vjp
    def ode(consts, y, ts, a):
        return solve(consts, y, ts, a)

    def fwd(consts, y, ts, a):
        ys = solve(consts, y, ts, a)
        return ys, (consts, ts, a, ys)

    def bwd(res, ct_ys):
        consts, ts, a, ys = res
        return _adjoint(field, consts, ts, a, ys, ct_ys, (rtol, atol, mxstep, hmax))
    ode.defvjp(fwd, bwd)
    return ode(list(hoisted), y0, t, [fnp.asarray(x) for x in arg_leaves])


def _adjoint(field, consts, ts, a, ys, ct_ys, tolerances):
    """Cotangents of (consts, y0, ts, args) by integrating the adjoint system
    backwards over each interval, restarting ``y`` from the stored forward value."""
    from fungrad.api import vjp, vmap
    theta = (consts, a)
    zero_theta = tree_map(fnp.zeros_like, theta)
    _, unravel_aug = ravel_pytree((ys[0], ct_ys[0], zero_theta))

    def aug_field(aug, s):                   # in reversed time s = -t
        y, adj, _ = unravel_aug(aug)
        f_y, pull = vjp(lambda yy, th: field(th[0], yy, -s, th[1]), y, theta)
        adj_y, adj_theta = pull(adj)
        return ravel_pytree((-f_y, adj_y, adj_theta))[0]

    def interval(carry, x):
        adj, adj_theta = carry
        t_hi, t_lo, y_hi, ct_lo = x
        aug0 = ravel_pytree((y_hi, adj, adj_theta))[0]
        aug = _integrate(aug_field, aug0, fnp.stack([-t_hi, -t_lo]), *tolerances)[-1]
        _, adj, adj_theta = unravel_aug(aug)
        return (adj + ct_lo, adj_theta), adj        # adj: a(t_lo) before its own cotangent
    (adj0, adj_theta), adj_after = lax.scan(
        interval, (ct_ys[-1], zero_theta), (ts[1:], ts[:-1], ys[1:], ct_ys[:-1]), reverse=True)
    # y(t_i) moves with t_i along the trajectory; moving t_0 shifts the whole solution
    f_at = vmap(lambda y, tt: field(consts, y, tt, a))(ys, ts)
    ct_t = fnp.sum(ct_ys * f_at, axis=1)
    ct_t0 = -fnp.sum(adj_after[0] * f_at[0]) if ts.shape[0] > 1 else fnp.zeros((), ts.dtype)
    ct_t = fnp.concatenate([ct_t0[None], ct_t[1:]])
    return adj_theta[0], adj0, ct_t, adj_theta[1]
