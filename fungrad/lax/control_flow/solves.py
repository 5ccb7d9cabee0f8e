"""Implicit differentiation of solvers: ``custom_linear_solve`` and ``custom_root``.

Both run the user's solver forward and differentiate the *equation* it solves
instead of the solver's iterations (implicit function theorem), as JAX does:

* ``x = custom_linear_solve(matvec, b, solve)`` solves ``A x = b`` with
  ``A = matvec`` (a primitive, ``custom_linear_solve_p``).  Differentiating
  ``A x = b`` gives ``∂A x + A ∂x = ∂b``, so the JVP is another solve,
  ``∂x = A⁻¹ (∂b − ∂A x)``; the solve is linear in ``b`` and its transpose is
  the transposed solve (``transpose_solve`` with ``vecmat = Aᵀ``, or
  ``solve`` again when ``symmetric``).
* ``x = custom_root(f, x0, solve, tangent_solve)`` solves ``f(x) = 0``
  (``custom_root_p``); with ``θ`` the values ``f`` closes over,
  ``∂x = −(∂f/∂x)⁻¹ (∂f/∂θ ∂θ)``, where ``tangent_solve(g, y)`` solves the
  linear system ``g(u) = y`` for ``g = ∂f/∂x`` at the solution.  Reverse mode
  transposes that tangent solve.

    custom_linear_solve_p(*matvec_consts, *vecmat_consts, *solve_consts, *tsolve_consts, *b,
                   matvec, vecmat, solve, transpose_solve, const_lengths)
    custom_root_p(*f_consts, *solve_consts, *tsolve_consts, *guess,
                  f, solve, tangent_solve, const_lengths)

Every order of forward and reverse mode and vmap follow from these rules; the
solver's own iterations are never differentiated, and values the solver
closes over get no derivative through it (as in JAX).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad.core import ClosedJaxpr, Primitive, eval_jaxpr, get_aval
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import as_value, stage_pytree
from fungrad.lax.control_flow.common import split_list
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["custom_linear_solve", "custom_root", "custom_linear_solve_p", "custom_root_p"]


def _run(closed: ClosedJaxpr, *args):
    """Evaluate ``closed`` through ``bind`` (so under a transformation it is traced)."""
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _call_compiled(closed: ClosedJaxpr, args):
    comp = compiled(closed)
    return [np.asarray(o) for o in comp.fn(*comp.consts, *args)]


def _emit_solve(block, eqn, args, out_names):
    """Lowering: the solver's own jaxpr, inline (its consts, then its operand)."""
    p = eqn.params
    groups = split_list(args, list(p["const_lengths"]))
    solve_consts = groups[2] if eqn.primitive is custom_linear_solve_p else groups[1]
    outs = block.body(p["solve"], solve_consts + groups[-1], extra_indent="")
    for o, n in zip(out_names, outs):
        block.line(f"{o} = {n}")


def _batch_operands(axis_size, vals, dims, const_lengths):
    """vmap: consts keep their batching (moved to axis 0), the operand is batched.
    Returns the operands and the consts' batch dims, one group per jaxpr."""
    vals, in_dims = batching.bdims_to_front(vals, dims)
    *const_groups, operand = split_list(vals, list(const_lengths))
    *dim_groups, operand_dims = split_list(in_dims, list(const_lengths))
    operand = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(operand, operand_dims)]
    return [v for g in const_groups for v in g] + operand, [tuple(g) for g in dim_groups]


def _batched(closed, axis_size, const_dims, n_operands):
    """``closed`` batched with its consts as given and its operands batched (None stays)."""
    if closed is None:
        return None
    return batching.batch_jaxpr(closed, axis_size, const_dims + (0,) * n_operands)


# ----------------------------------------------------------------------------
# custom_linear_solve_p
# ----------------------------------------------------------------------------

custom_linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
_LS_JAXPRS = ("matvec", "vecmat", "solve", "transpose_solve")


def _ls_split(args, const_lengths):
    mv, vm, s, ts, b = split_list(args, list(const_lengths))
    return mv, vm, s, ts, b


def _ls_impl(*args, matvec, vecmat, solve, transpose_solve, const_lengths):
    _, _, s_consts, _, b = _ls_split(args, const_lengths)
    return _call_compiled(solve, s_consts + b)


custom_linear_solve_p.def_impl(_ls_impl)


def _ls_abstract_eval(*avals, solve, const_lengths, **params):
    # (as JAX's: the solution has b's types, weak ones included; aux outputs solve's)
    b = avals[sum(const_lengths):]
    return list(b) + list(solve.out_avals[len(b):])


custom_linear_solve_p.def_abstract_eval(_ls_abstract_eval)


def _ls_jvp(primals, tangents, **params):
    """∂x = A⁻¹ (∂b − ∂A x): one more solve of the same system."""
    matvec, const_lengths = params["matvec"], params["const_lengths"]
    outs = custom_linear_solve_p.bind(*primals, **params)
    mv_consts, _, _, _, b = _ls_split(primals, const_lengths)
    t_mv, _, _, _, t_b = _ls_split(tangents, const_lengths)
    n_b = len(b)
    x = outs[:n_b]
    rhs = [ad.instantiate_zeros(t) if type(t) is not Zero else None for t in t_b]
    if any(type(t) is not Zero for t in t_mv):
        nonzeros = tuple(type(t) is not Zero for t in t_mv) + (False,) * n_b
        mv_jvp, out_nz = ad.jvp_jaxpr(matvec, nonzeros, instantiate=True)
        dA_x = _run(mv_jvp, *mv_consts, *x, *[t for t in t_mv if type(t) is not Zero])[n_b:]
        from fungrad import lax
        rhs = [lax.neg(d) if r is None else lax.sub(r, d) for r, d in zip(rhs, dA_x)]
    out_avals = params["solve"].out_avals
    zeros = [Zero(ad.tangent_aval(a)) for a in out_avals]
    if all(r is None for r in rhs):
        return outs, zeros
    rhs = [ad.zeros_like_aval(ad.tangent_aval(get_aval(bi))) if r is None else r
           for r, bi in zip(rhs, b)]
    consts = list(primals[:len(primals) - n_b])
    x_dot = custom_linear_solve_p.bind(*consts, *rhs, **params)[:n_b]
    return outs, x_dot + zeros[n_b:]        # auxiliary outputs have no tangent


custom_linear_solve_p.jvp = _ls_jvp


def _ls_transpose(cts, *args, matvec, vecmat, solve, transpose_solve, const_lengths):
    """The transpose of ``b -> A⁻¹ b`` is ``c -> A⁻ᵀ c``: the transposed solve."""
    if transpose_solve is None:
        raise TypeError("custom_linear_solve: reverse-mode differentiation needs "
                        "transpose_solve (or symmetric=True)")
    mv, vm, s, ts, b = _ls_split(args, const_lengths)
    if any(ad.is_undefined_primal(c) for c in mv + vm + s + ts):
        raise TypeError("custom_linear_solve is linear in b only, not in the values "
                        "matvec or the solvers close over")
    n_b = len(b)
    ct_x = [ad.instantiate_zeros(c) for c in cts[:n_b]]
    ct_b = custom_linear_solve_p.bind(*vm, *mv, *ts, *s, *ct_x, matvec=vecmat, vecmat=matvec,
                               solve=transpose_solve, transpose_solve=solve,
                               const_lengths=(len(vm), len(mv), len(ts), len(s)))[:n_b]
    return [None] * (len(args) - n_b) + ct_b


custom_linear_solve_p.transpose = _ls_transpose
custom_linear_solve_p.linear = True


def _ls_batch(axis_size, vals, dims, **params):
    n_b = len(vals) - sum(params["const_lengths"])
    vals, const_dims = _batch_operands(axis_size, vals, dims, params["const_lengths"])
    new = {name: _batched(params[name], axis_size, d, n_b)
           for name, d in zip(_LS_JAXPRS, const_dims)}
    outs = custom_linear_solve_p.bind(*vals, const_lengths=params["const_lengths"], **new)
    return outs, [0] * len(outs)


custom_linear_solve_p.batch = _ls_batch
custom_linear_solve_p.emit_block = _emit_solve


# ----------------------------------------------------------------------------
# custom_root_p
# ----------------------------------------------------------------------------

custom_root_p = Primitive("custom_root", multiple_results=True)


def _root_impl(*args, f, solve, tangent_solve, const_lengths):
    _, s_consts, _, guess = split_list(args, list(const_lengths))
    return _call_compiled(solve, s_consts + guess)


custom_root_p.def_impl(_root_impl)
custom_root_p.def_abstract_eval(lambda *avals, solve, **params: list(solve.out_avals))


def _root_jvp(primals, tangents, f, solve, tangent_solve, const_lengths):
    """∂x = −(∂f/∂x)⁻¹ (∂f/∂θ ∂θ) at the solution, by ``tangent_solve``."""
    params = dict(f=f, solve=solve, tangent_solve=tangent_solve, const_lengths=const_lengths)
    outs = custom_root_p.bind(*primals, **params)
    f_consts, _, t_consts, guess = split_list(primals, list(const_lengths))
    t_f = split_list(tangents, list(const_lengths))[0]
    n_x = len(guess)
    x = outs[:n_x]
    zeros = [Zero(ad.tangent_aval(a)) for a in solve.out_avals]
    if all(type(t) is Zero for t in t_f):
        return outs, zeros
    from fungrad import lax
    nonzeros = tuple(type(t) is not Zero for t in t_f) + (False,) * n_x
    f_jvp, _ = ad.jvp_jaxpr(f, nonzeros, instantiate=True)
    rhs = _run(f_jvp, *f_consts, *x, *[t for t in t_f if type(t) is not Zero])[n_x:]
    u = _run(tangent_solve, *t_consts, *x, *rhs)
    return outs, [lax.neg(ui) for ui in u] + zeros[n_x:]   # auxiliary outputs: no tangent


custom_root_p.jvp = _root_jvp


def _root_batch(axis_size, vals, dims, **params):
    n_x = len(vals) - sum(params["const_lengths"])
    vals, (f_dims, s_dims, t_dims) = _batch_operands(axis_size, vals, dims,
                                                     params["const_lengths"])
    outs = custom_root_p.bind(                  # tangent_solve takes (consts, x, y)
        *vals, f=_batched(params["f"], axis_size, f_dims, n_x),
        solve=_batched(params["solve"], axis_size, s_dims, n_x),
        tangent_solve=_batched(params["tangent_solve"], axis_size, t_dims, 2 * n_x),
        const_lengths=params["const_lengths"])
    return outs, [0] * len(outs)


custom_root_p.batch = _root_batch
custom_root_p.emit_block = _emit_solve


# ----------------------------------------------------------------------------
# Public API: stage the user's functions, bind the primitives
# ----------------------------------------------------------------------------

def _as_leaves(tree):
    leaves, treedef = tree_flatten(tree)
    return [as_value(x) for x in leaves], treedef


def _applier(closed, hoisted, out_tree):
    """The staged function as a pytree function of its argument."""
    def apply(x):
        leaves, _ = _as_leaves(x)
        return tree_unflatten(out_tree, _run(closed, *hoisted, *leaves))
    return apply


def _check_solution(who, out_tree, tree, avals, closed, has_aux):
    sol_tree = out_tree.children()[0] if has_aux else out_tree
    n = len(avals)
    if sol_tree != tree or [a.strip_weak_type() for a in closed.out_avals[:n]] != [
            a.strip_weak_type() for a in avals]:
        raise TypeError(f"{who}: solve must return the structure and types of its right-hand "
                        f"side ({tree}), got {out_tree}"
                        + (" (with has_aux=True, a pair (solution, aux))" if has_aux else ""))


def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False):
    """``jax.lax.custom_linear_solve``: ``solve(matvec, b)`` differentiated
    implicitly (see the module docstring).  ``transpose_solve(vecmat, b)`` is
    needed for reverse mode unless ``symmetric``."""
    if not (callable(matvec) and callable(solve)):
        raise TypeError("custom_linear_solve: matvec and solve must be callables")
    b_leaves, b_tree = _as_leaves(b)
    b_avals = [get_aval(x) for x in b_leaves]    # (weak ones too: JAX traces at b's types)
    mv, mv_consts, mv_tree = stage_pytree(matvec, b_tree, b_avals)
    if mv_tree != b_tree or [a.strip_weak_type() for a in mv.out_avals] != [
            a.strip_weak_type() for a in b_avals]:
        raise TypeError(f"custom_linear_solve: matvec must map b's structure and shapes to "
                        f"themselves, got {mv_tree} with {[a.str_short() for a in mv.out_avals]} "
                        f"for {b_tree} with {[a.str_short() for a in b_avals]}")
    s, s_consts, s_tree = stage_pytree(lambda r: solve(_applier(mv, mv_consts, b_tree), r),
                                       b_tree, b_avals)
    _check_solution("custom_linear_solve", s_tree, b_tree, b_avals, s, has_aux)
    if symmetric:
        vm, vm_consts, ts, ts_consts = mv, mv_consts, s, s_consts
    elif transpose_solve is not None:
        # vecmat = Aᵀ, the transpose of matvec in its operand
        vm = ad.transpose_jaxpr(mv, (False,) * len(mv_consts) + (True,) * len(b_leaves))
        vm_consts = mv_consts
        ts, ts_consts, ts_tree = stage_pytree(
            lambda r: transpose_solve(_applier(vm, vm_consts, b_tree), r), b_tree, b_avals)
        _check_solution("custom_linear_solve", ts_tree, b_tree, b_avals, ts, has_aux)
    else:
        vm, vm_consts, ts, ts_consts = None, [], None, []
    outs = custom_linear_solve_p.bind(*mv_consts, *vm_consts, *s_consts, *ts_consts, *b_leaves,
                               matvec=mv, vecmat=vm, solve=s, transpose_solve=ts,
                               const_lengths=(len(mv_consts), len(vm_consts), len(s_consts),
                                              len(ts_consts)))
    return tree_unflatten(s_tree, outs)


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """``jax.lax.custom_root``: ``solve(f, initial_guess)`` finds ``x`` with
    ``f(x) = 0``; derivatives w.r.t. values ``f`` closes over come from the
    implicit function theorem, with ``tangent_solve(g, y)`` solving the linear
    system ``g(u) = y`` (``g`` a linear function)."""
    if not all(callable(c) for c in (f, solve, tangent_solve)):
        raise TypeError("custom_root: f, solve and tangent_solve must be callables")
    g_leaves, g_tree = _as_leaves(initial_guess)
    g_avals = [get_aval(x) for x in g_leaves]    # (weak ones too: JAX traces at their types)
    f_closed, f_consts, f_tree = stage_pytree(f, g_tree, g_avals)
    if f_tree != g_tree:
        raise TypeError(f"custom_root: f must return the structure of initial_guess "
                        f"({g_tree}), got {f_tree}")
    apply_f = _applier(f_closed, f_consts, g_tree)
    s, s_consts, s_tree = stage_pytree(lambda x0: solve(apply_f, x0), g_tree, g_avals)
    _check_solution("custom_root", s_tree, g_tree, g_avals, s, has_aux)
    pair_tree = tree_flatten((initial_guess, initial_guess))[1]

    def linearize_and_solve(pair):        # (x, y) -> u with (∂f/∂x at x)(u) = y
        x, y = pair
        x_leaves, _ = _as_leaves(x)
        _, lin, residuals = ad.linearize_flat(
            lambda *xs: _run(f_closed, *f_consts, *xs), x_leaves)

        def g(v):
            v_leaves, _ = _as_leaves(v)
            return tree_unflatten(g_tree, eval_jaxpr(lin, residuals, *v_leaves))
        return tangent_solve(g, y)
    ts, ts_consts, ts_tree = stage_pytree(linearize_and_solve, pair_tree, g_avals + g_avals)
    if ts_tree != g_tree:
        raise TypeError(f"custom_root: tangent_solve must return the structure of "
                        f"initial_guess ({g_tree}), got {ts_tree}")
    outs = custom_root_p.bind(*f_consts, *s_consts, *ts_consts, *g_leaves, f=f_closed, solve=s,
                              tangent_solve=ts,
                              const_lengths=(len(f_consts), len(s_consts), len(ts_consts)))
    return tree_unflatten(s_tree, outs)
