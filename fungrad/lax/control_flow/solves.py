"""Implicit differentiation of solvers: ``custom_linear_solve`` and ``custom_root``.

Both run the user's solver forward and differentiate the *equation* it solves
instead of the solver's iterations (implicit function theorem):

* ``x = custom_linear_solve(matvec, b, solve)`` solves ``A x = b`` with
  ``A = matvec``; the cotangent of ``b`` is ``A^-T x̄`` (by ``transpose_solve``,
  or ``solve`` when ``symmetric``) and that of every value ``matvec`` closes
  over is ``-(∂(A x)/∂θ)^T A^-T x̄``.
* ``x = custom_root(f, x0, solve, tangent_solve)`` solves ``f(x) = 0``; with
  ``θ`` the values ``f`` closes over, ``dx/dθ = -(∂f/∂x)^-1 ∂f/∂θ`` (the seeds'
  equation), so the cotangent of ``θ`` is ``-(∂f/∂θ)^T λ`` with
  ``λ = tangent_solve((∂f/∂x)^T, x̄)``.

Reverse mode (grad, vjp, any order) uses these rules; the solver's own
iterations are never differentiated in reverse and values the solver closes
over get no gradient through it (as in JAX).  Forward mode (jvp, jacfwd)
differentiates the solver itself (fungrad's custom_vjp forward mode), which is
exact for direct solvers and as accurate as the solver's convergence otherwise.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad.core import Tracer, eval_jaxpr, get_aval
from fungrad.interpreters.partial_eval import stage_pytree
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["custom_linear_solve", "custom_root"]


def _as_leaves(tree):
    leaves, treedef = tree_flatten(tree)
    return [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves], treedef


def _stage(fn: Callable, in_tree, avals):
    return stage_pytree(fn, in_tree, avals)


def _applier(closed, in_tree, out_tree):
    """The staged function as a pytree function of (its hoisted values, x)."""
    def apply(hoisted, x):
        leaves, _ = _as_leaves(x)
        return tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, closed.consts, *hoisted, *leaves))
    return apply


def _neg_tree(tree):
    from fungrad import lax
    from fungrad.tree_util import tree_map
    return tree_map(lax.neg, tree)


def _zeros_tree(tree):
    from fungrad import numpy as fnp
    from fungrad.tree_util import tree_map
    return tree_map(fnp.zeros_like, tree)


def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False):
    """``jax.lax.custom_linear_solve``: ``solve(matvec, b)`` differentiated
    implicitly (see the module docstring).  ``transpose_solve(vecmat, b)`` is
    needed for reverse mode unless ``symmetric``."""
    from fungrad import custom_vjp, vjp
    from fungrad.api import linear_transpose
    if not (callable(matvec) and callable(solve)):
        raise TypeError("custom_linear_solve: matvec and solve must be callables")
    b_leaves, b_tree = _as_leaves(b)
    b_avals = [get_aval(x).strip_weak_type() for x in b_leaves]
    mv_closed, mv_hoisted, mv_out_tree = _stage(matvec, b_tree, b_avals)
    if mv_out_tree != b_tree or [a.strip_weak_type() for a in mv_closed.out_avals] != b_avals:
        raise TypeError(f"custom_linear_solve: matvec must map b's structure and shapes to "
                        f"themselves, got {mv_out_tree} with "
                        f"{[a.str_short() for a in mv_closed.out_avals]} for {b_tree} with "
                        f"{[a.str_short() for a in b_avals]}")
    apply_mv = _applier(mv_closed, b_tree, b_tree)
    s_closed, s_hoisted, s_out_tree = _stage(
        lambda rhs: solve(lambda v: apply_mv(mv_hoisted, v), rhs), b_tree, b_avals)
    apply_solve = _applier(s_closed, b_tree, s_out_tree)
    # the transposed solve is staged now, while the values it closes over exist
    if symmetric:
        t_closed, t_hoisted = s_closed, s_hoisted
    elif transpose_solve is not None:
        A_T = linear_transpose(lambda v: apply_mv(mv_hoisted, v), b)
        t_closed, t_hoisted, _ = _stage(lambda r: transpose_solve(lambda u: A_T(u)[0], r),
                                        b_tree, b_avals)
    else:
        t_closed, t_hoisted = None, []
    apply_t_solve = t_closed and _applier(t_closed, b_tree, s_out_tree)

    @custom_vjp
    def implicit_solve(mv_consts, s_consts, t_consts, rhs):
        return apply_solve(s_consts, rhs)

    def fwd(mv_consts, s_consts, t_consts, rhs):
        out = apply_solve(s_consts, rhs)
        return out, (mv_consts, s_consts, t_consts, out[0] if has_aux else out)

    def bwd(res, ct):
        mv_consts, s_consts, t_consts, x = res
        if apply_t_solve is None:
            raise TypeError("custom_linear_solve: reverse-mode differentiation needs "
                            "transpose_solve (or symmetric=True)")
        ct_b = apply_t_solve(t_consts, ct[0] if has_aux else ct)
        if has_aux:
            ct_b = ct_b[0]
        _, pull = vjp(lambda c: apply_mv(c, x), mv_consts)
        return _neg_tree(pull(ct_b)[0]), _zeros_tree(s_consts), _zeros_tree(t_consts), ct_b
    implicit_solve.defvjp(fwd, bwd)
    return implicit_solve(mv_hoisted, s_hoisted, t_hoisted, tree_unflatten(b_tree, b_leaves))


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """``jax.lax.custom_root``: ``solve(f, initial_guess)`` finds ``x`` with
    ``f(x) = 0``; derivatives w.r.t. values ``f`` closes over come from the
    implicit function theorem, with ``tangent_solve(g, y)`` solving the linear
    system ``g(x) = y`` (``g`` a linear function)."""
    from fungrad import custom_vjp, vjp
    if not all(callable(c) for c in (f, solve, tangent_solve)):
        raise TypeError("custom_root: f, solve and tangent_solve must be callables")
    g_leaves, g_tree = _as_leaves(initial_guess)
    g_avals = [get_aval(x).strip_weak_type() for x in g_leaves]
    f_closed, f_hoisted, f_out_tree = _stage(f, g_tree, g_avals)
    if f_out_tree != g_tree:
        raise TypeError(f"custom_root: f must return the structure of initial_guess "
                        f"({g_tree}), got {f_out_tree}")
    apply_f = _applier(f_closed, g_tree, g_tree)
    s_closed, s_hoisted, s_out_tree = _stage(
        lambda x0: solve(lambda x: apply_f(f_hoisted, x), x0), g_tree, g_avals)
    apply_solve = _applier(s_closed, g_tree, s_out_tree)
    # tangent_solve, applied to (∂f/∂x)^T at a symbolic x, is staged now, while
    # the values it (and f) close over exist: (x, x̄) -> λ
    pair_tree = tree_flatten((initial_guess, initial_guess))[1]

    def lam_of(pair):
        x, ct_x = pair
        _, f_T = vjp(lambda z: apply_f(f_hoisted, z), x)        # v -> (∂f/∂x)^T v
        return tangent_solve(lambda v: f_T(v)[0], ct_x)
    t_closed, t_hoisted, t_out_tree = _stage(lam_of, pair_tree, g_avals + g_avals)
    apply_t_solve = _applier(t_closed, pair_tree, t_out_tree)

    @custom_vjp
    def root(f_consts, s_consts, t_consts, guess):
        return apply_solve(s_consts, guess)

    def fwd(f_consts, s_consts, t_consts, guess):
        out = apply_solve(s_consts, guess)
        return out, (f_consts, s_consts, t_consts, guess, out[0] if has_aux else out)

    def bwd(res, ct):
        f_consts, s_consts, t_consts, guess, x = res
        lam = apply_t_solve(t_consts, (x, ct[0] if has_aux else ct))
        _, pull = vjp(lambda c: apply_f(c, x), f_consts)
        return (_neg_tree(pull(lam)[0]), _zeros_tree(s_consts), _zeros_tree(t_consts),
                _zeros_tree(guess))
    root.defvjp(fwd, bwd)
    return root(f_hoisted, s_hoisted, t_hoisted, tree_unflatten(g_tree, g_leaves))
