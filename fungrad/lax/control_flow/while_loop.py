"""``while_loop``: iterate while a predicate holds (the trip count is known only
at run time).

    while_p(*cond_consts, *body_consts, *init, cond, body, cond_nconsts, body_nconsts)
    cond : (cond_consts, carry) -> bool scalar;   body : (body_consts, carry) -> carry

Rules:

* eval: a Python ``while`` over the compiled cond and body;
* jvp: a while loop of the body's JVP (the tangents ride along as body consts
  and carries; a fixpoint finds which carries get nonzero tangents); the
  predicate ignores tangents;
* vmap: as JAX, when the predicate does not depend on batched values only the
  carries computed from batched values are batched (a fixpoint over the
  body); otherwise every carry is batched, the loop runs while any lane's
  predicate holds and only live lanes update;
* lowering: a real ``while`` loop;
* partial eval (reverse mode, beyond JAX, which refuses it): the loop's known
  part runs first, counting its iterations ``N``.  When the count is concrete
  (eagerly; under vmap, the most any lane needs) the loop is differentiated as
  a ``scan`` of length ``N`` over its body; lanes that finish earlier keep
  their carry.  Inside a staged function (jit) the count exists only at run
  time: the linear part becomes ``while_lin_p`` (``while_tape.py``), which
  replays the loop at run time recording its residuals in a Python list.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad.lax import state as _refs
from fungrad.core import (ClosedJaxpr, ConcretizationTypeError, Primitive, ShapedArray, Tracer,
                          bind_on, eval_jaxpr, get_aval)
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import (as_value, partial_eval_jaxpr, select_inputs,
                                               stage_pytree, trace_closed)
from fungrad.lax.control_flow.common import (cached, lane_mask,
                                             merge_lists, partition_list,
                                             python_control_flow, split_list)
from fungrad.lax.control_flow.scan import (_check_carry, _scan_partial_eval, loop_jvp_body,
                                           promote_weak_carry, _carry_out_avals)
from fungrad.lax.control_flow.while_tape import while_lin_partial_eval
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["while_loop", "while_p"]

while_p = Primitive("while", multiple_results=True)


def _while_impl(*args, cond, body, cond_nconsts, body_nconsts):
    c_comp, b_comp = compiled(cond), compiled(body)
    c_consts, b_consts, carry = split_list(args, [cond_nconsts, body_nconsts])
    while c_comp.fn(*c_comp.consts, *c_consts, *carry)[0]:
        carry = list(b_comp.fn(*b_comp.consts, *b_consts, *carry))
    return [np.asarray(c) for c in carry]


def _while_abstract_eval(*avals, cond, body, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    _check_carry("while_loop", carry, body.out_avals)
    return _carry_out_avals(carry, body.out_avals)


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract_eval)


def _while_jvp(primals, tangents, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    c_consts, b_consts, carry = split_list(primals, [nc, nb])
    _, t_bconsts, t_carry = split_list(tangents, [nc, nb])
    nz_b = [type(t) is not Zero for t in t_bconsts]
    nz_carry = [type(t) is not Zero for t in t_carry]
    jvp_body, nz_carry = loop_jvp_body(body, nb, len(carry), nz_b, nz_carry, [])
    t_avals = [ad.tangent_aval(a) for a, f in zip(body.out_avals, nz_carry) if f]
    # the predicate reads the primal carries only
    t_cond = select_inputs(cond, list(cond.in_avals) + t_avals, list(range(len(cond.in_avals))))
    pick = lambda ts, flags: [ad.instantiate_zeros(t) for t, f in zip(ts, flags) if f]
    outs = while_p.bind(*c_consts, *b_consts, *pick(t_bconsts, nz_b), *carry,
                        *pick(t_carry, nz_carry), cond=t_cond, body=jvp_body,
                        cond_nconsts=nc, body_nconsts=nb + sum(nz_b))
    n = len(carry)
    return outs[:n], ad.tangents_from(nz_carry, outs[n:], body.out_avals)


while_p.jvp = _while_jvp


# ----------------------------------------------------------------------------
# partial evaluation: reverse mode by counting, then a scan (or a run-time tape)
# ----------------------------------------------------------------------------

def _unknown_outputs(closed: ClosedJaxpr, unknowns) -> list:
    return list(partial_eval_jaxpr(closed, unknowns)[2])


def _while_partial_eval(trace, args, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    u_cc, u_bc, u_carry = split_list([trace.owns(x) for x in args], [nc, nb])
    for _ in range(len(u_carry) + 1):       # fixpoint: which carries stay unknown
        grown = [a or b for a, b in zip(u_carry, _unknown_outputs(body, u_bc + u_carry))]
        if grown == u_carry:
            break
        u_carry = grown
    if any(u_cc) or any(_unknown_outputs(cond, u_cc + u_carry)):
        # the predicate itself depends on unknown values: nothing to split
        return trace.stage(while_p, list(args), dict(cond=cond, body=body, cond_nconsts=nc,
                                                     body_nconsts=nb))
    c_consts, b_consts, carry = split_list(args, [nc, nb])
    k_bconsts, _ = partition_list(u_bc, b_consts)
    k_carry, _ = partition_list(u_carry, carry)
    counts, known_outs = _count_iterations(trace.parent, c_consts, k_bconsts, k_carry,
                                           cond, body, u_bc, u_carry)
    if counts is None:       # inside jit: the count exists only at run time
        return while_lin_partial_eval(trace, args, known_outs, cond, body, nc, nb,
                                      u_bc, u_carry)
    n_max = int(counts.max()) if counts.size else 0
    masked = bool(counts.size and counts.min() != n_max)
    scan_body = cached("while_as_scan", (cond, body), (nc, nb, masked),
                       lambda: _while_body_as_scan(cond, body, nc, nb, masked))
    scan_args = list(args) if masked else list(args[nc:])
    return _scan_partial_eval(trace, scan_args, body=scan_body,
                              num_consts=(nc if masked else 0) + nb,
                              num_carry=len(carry), length=n_max, reverse=False)


def _count_iterations(parent, c_consts, k_bconsts, k_carry, cond, body, u_bc, u_carry):
    """Run the loop's known part on ``parent`` with a counter: (the counter's
    concrete values, one per vmap lane, or None when they exist only at run
    time; the known carries' final values)."""
    c_cond, c_body = cached("while_count", (cond, body), (tuple(u_bc), tuple(u_carry)),
                            lambda: _counting_loop(cond, body, u_bc, u_carry))
    outs = bind_on(parent, while_p, list(c_consts) + list(k_bconsts) + [np.int64(0)]
                   + list(k_carry), dict(cond=c_cond, body=c_body, cond_nconsts=len(c_consts),
                                         body_nconsts=len(k_bconsts)))
    count = _underlying_value(outs[0])
    return (None if count is None else np.asarray(count).reshape(-1)), list(outs[1:])


def _underlying_value(x):
    """All concrete values a (possibly vmapped or differentiated) value stands for."""
    while isinstance(x, Tracer):
        if isinstance(x, batching.BatchTracer):
            x = x.val
        elif isinstance(x, ad.JVPTracer):
            x = x.primal
        else:
            return None
    return np.asarray(x)


def _counting_loop(cond, body, u_bc, u_carry):
    """A while loop over (counter, known carries) only: unknown inputs are fed
    zeros, which the known outputs cannot depend on (fixpoint above)."""
    from fungrad import lax
    nc, nb = len(cond.in_avals) - len(u_carry), len(u_bc)
    carry_avals = list(body.out_avals)
    k_bc_avals, _ = partition_list(u_bc, body.in_avals[:nb])
    k_carry_avals, _ = partition_list(u_carry, carry_avals)
    zeros = lambda avals: [ad.zeros_like_aval(a) for a in avals]

    def fill(known, flags, avals):      # known values, zeros where unknown
        return merge_lists(flags, known, zeros(partition_list(flags, avals)[1]))

    def cond_fn(*xs):
        c_consts, _, kc = split_list(xs, [nc, 1])
        return eval_jaxpr(cond.jaxpr, cond.consts, *c_consts, *fill(kc, u_carry, carry_avals))

    def body_fn(*xs):
        kb, (count,), kc = split_list(xs, [len(k_bc_avals), 1])
        outs = eval_jaxpr(body.jaxpr, body.consts, *fill(kb, u_bc, body.in_avals[:nb]),
                          *fill(kc, u_carry, carry_avals))
        return [lax.add(count, np.int64(1))] + partition_list(u_carry, outs)[0]
    count_aval = ShapedArray((), np.dtype(np.int64))
    return (trace_closed(cond_fn, list(cond.in_avals[:nc]) + [count_aval] + k_carry_avals),
            trace_closed(body_fn, k_bc_avals + [count_aval] + k_carry_avals))


def _while_body_as_scan(cond, body, nc, nb, masked) -> ClosedJaxpr:
    """The loop body as a scan body ``(consts, carry) -> (carry,)``; ``masked``
    keeps the carry of lanes whose predicate no longer holds."""
    from fungrad import lax

    def fn(*xs):
        if not masked:
            b_consts, carry = split_list(xs, [nb])
            return eval_jaxpr(body.jaxpr, body.consts, *b_consts, *carry)
        c_consts, b_consts, carry = split_list(xs, [nc, nb])
        new = eval_jaxpr(body.jaxpr, body.consts, *b_consts, *carry)
        live = eval_jaxpr(cond.jaxpr, cond.consts, *c_consts, *carry)[0]
        return [lax.select(live, n, c) for n, c in zip(new, carry)]
    avals = (list(cond.in_avals[:nc]) if masked else []) + list(body.in_avals)
    return trace_closed(fn, avals)


while_p.partial_eval = _while_partial_eval


# ----------------------------------------------------------------------------
# vmap, lowering
# ----------------------------------------------------------------------------

def _while_batch(axis_size, vals, dims, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    vals, in_dims = batching.bdims_to_front(vals, dims)
    c_consts, b_consts, carry = split_list(vals, [nc, nb])
    c_dims, b_dims, k_dims = split_list(in_dims, [nc, nb])
    carry_bat = _batched_carries(axis_size, body, b_dims, [d is not None for d in k_dims])
    pred_dims = tuple(c_dims) + tuple(0 if b else None for b in carry_bat)
    if not batching.batch_keeping_unbatched(cond, axis_size, pred_dims, (False,))[1][0]:
        # as JAX: one predicate for every lane, so the carries that depend on no
        # batched value stay unbatched (a counter stays one number)
        carry = [batching.bdim_at_front(v, d, axis_size) if b else v
                 for v, d, b in zip(carry, k_dims, carry_bat)]
        b_cond = batching.batch_keeping_unbatched(cond, axis_size, pred_dims, (False,))[0]
        b_body = batching.batch_keeping_unbatched(body, axis_size, tuple(b_dims) + pred_dims[nc:],
                                  tuple(carry_bat))[0]
        outs = while_p.bind(*c_consts, *b_consts, *carry, cond=b_cond, body=b_body,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, [0 if b else None for b in carry_bat]
    carry = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(carry, k_dims)]
    n = len(carry)
    b_cond = batching.batch_jaxpr(cond, axis_size, tuple(c_dims) + (0,) * n)
    b_body = batching.batch_jaxpr(body, axis_size, tuple(b_dims) + (0,) * n)
    any_cond, masked_body = cached("while_masked", (b_cond, b_body), (nc, nb),
                                   lambda: _masked_while(b_cond, b_body, nc, nb))
    outs = while_p.bind(*c_consts, *c_consts, *b_consts, *carry, cond=any_cond,
                        body=masked_body, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, [0] * n


def _batched_carries(axis_size, body, b_dims, carry_bat) -> list:
    """Which carries must be batched: those batched initially and, to a fixpoint,
    those the body computes from batched values."""
    for _ in range(len(carry_bat) + 1):
        in_dims = tuple(b_dims) + tuple(0 if b else None for b in carry_bat)
        out_bat = batching.batch_keeping_unbatched(body, axis_size, in_dims, tuple(carry_bat))[1]
        if list(out_bat) == list(carry_bat):
            break
        carry_bat = [a or b for a, b in zip(carry_bat, out_bat)]
    return list(carry_bat)


def _masked_while(b_cond, b_body, nc, nb):
    """Loop while any lane's predicate holds; lanes that are done keep their carry."""
    from fungrad import lax

    def any_fn(*xs):
        return [lax.reduce_or(eval_jaxpr(b_cond.jaxpr, b_cond.consts, *xs)[0], (0,))]

    def body_fn(*xs):
        c_consts, b_consts, carry = split_list(xs, [nc, nb])
        live = eval_jaxpr(b_cond.jaxpr, b_cond.consts, *c_consts, *carry)[0]
        new = eval_jaxpr(b_body.jaxpr, b_body.consts, *b_consts, *carry)
        return [lax.select(lane_mask(live, upd), upd, old) for old, upd in zip(carry, new)]
    c_avals = list(b_cond.in_avals)
    return (trace_closed(any_fn, c_avals),
            trace_closed(body_fn, c_avals[:nc] + list(b_body.in_avals)))


while_p.batch = _while_batch


def _while_emit(block, eqn, args, out_names):
    p = eqn.params
    c_consts, b_consts, init = split_list(args, [p["cond_nconsts"], p["body_nconsts"]])
    for c, n in zip(out_names, init):
        block.line(f"{c} = {n}")
    block.line("while True:")
    (pred,) = block.body(p["cond"], list(c_consts) + list(out_names))
    block.line(f"if not {pred}:", "    ")
    block.line("break", "        ")
    outs = block.body(p["body"], list(b_consts) + list(out_names))
    if out_names:
        block.line(f"{', '.join(out_names)}, = {', '.join(outs)},", "    ")


while_p.emit_block = _while_emit
while_p.numba_block = _while_emit      # (the same Python loop compiles natively)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``jax.lax.while_loop``: ``while cond_fun(val): val = body_fun(val)``.

    Works eagerly and under jit (a Python ``while`` in the generated code),
    vmap (runs while any lane is live) and forward mode (jvp, jacfwd).

    Beyond JAX, reverse mode works too.  Outside jit (grad, vjp, hessian, any
    order, under vmap): the loop's iterations are counted, then it is
    differentiated as a ``scan`` of that length.  Inside jit (``jit(grad(f))``,
    ``grad(jit(f))``): the backward pass replays the loop at run
    time, appending each iteration's residuals to a Python list, then walks
    the list backwards.  Either way memory grows linearly with the trip count
    (one set of residuals per iteration) and the primal loop runs twice.
    Inside jit, forward mode over it works (``jit(hessian(f))``, HVPs) and
    so does vmap (lanes keep their own trip counts); reverse over reverse
    (``jit(grad(grad(f)))``) raises a TypeError.
    """
    if python_control_flow():                                    # jax_disable_jit
        try:
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val
        except ConcretizationTypeError:
            pass      # a traced predicate (e.g. under vmap): the primitive, as JAX does
    funs, refs = (cond_fun, body_fun), []   # (Refs from outside: threaded through the carry)
    cond_fun = _refs.discovering(cond_fun, refs, "while_loop cond")
    body_fun = _refs.discovering(body_fun, refs, "while_loop body")
    leaves, tree = tree_flatten(init_val)
    weak = [get_aval(x).weak_type for x in leaves]
    leaves = [as_value(x) for x in leaves]
    # weak carries are staged weak, so that a loop nested in the body can
    # promote them in turn (blackjax's NUTS: an int carry cast to int32 inside)
    avals = [ShapedArray(get_aval(x).shape, get_aval(x).dtype, w) for x, w in zip(leaves, weak)]
    cond_closed, cond_hoisted, _ = stage_pytree(cond_fun, tree, avals, name="while_loop cond")
    outs = cond_closed.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                        f"{[a.str_short() for a in outs]}")
    body_closed, body_hoisted, out_tree = stage_pytree(body_fun, tree, avals, name="while_loop body")
    if out_tree != tree:
        raise TypeError(f"while_loop: body_fun returns structure {out_tree}, but the "
                        f"loop carry has structure {tree}")
    promoted = promote_weak_carry(leaves, weak, body_closed.out_avals)
    if promoted is not None:     # a Python-scalar carry takes the body's dtype (as JAX)
        leaves = promoted
        avals = [get_aval(x) for x in leaves]
        cond_closed, cond_hoisted, _ = stage_pytree(cond_fun, tree, avals)
        body_closed, body_hoisted, _ = stage_pytree(body_fun, tree, avals)
    _check_carry("while_loop", avals, body_closed.out_avals)
    if refs:
        return _refs.while_with_refs(while_loop, *funs, init_val, refs)
    out = while_p.bind(*cond_hoisted, *body_hoisted, *leaves, cond=cond_closed, body=body_closed,
                       cond_nconsts=len(cond_hoisted), body_nconsts=len(body_hoisted))
    return tree_unflatten(tree, out)
