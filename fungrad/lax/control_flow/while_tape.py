"""Reverse mode of a staged ``while_loop`` (inside jit): a run-time tape.

Inside jit the trip count exists only at run time, so the linear part of a
``while_p`` cannot become a scan.  Instead::

    while_lin_p(*cond_consts, *known_consts, *known_init, *linear_consts, *linear_init,
                cond, known, lin, cond_nconsts, known_nconsts, known_ncarry)

replays the loop's known part (``cond: (cond_consts, known carry) -> pred``,
``known: (known_consts, known carry) -> (known carry, residuals)``), appending
each iteration's residuals to a Python list, then applies the linear step
``lin: (residuals, linear_consts, linear carry) -> linear carry`` once per
entry.  It is linear in (linear_consts, linear carry).  Its transpose
``while_lin_t_p`` replays the loop the same way and runs the transposed step
over the list backwards, accumulating the linear consts' cotangents.

Memory: one set of residuals per iteration, alive during that call only.
Rules of both: vmap masks finished lanes (each tape entry records which lanes
were live); forward mode records residual tangents in the tape (so
``jit(hessian(f))`` works), and partial evaluation of that (``linearize`` of
a derivative inside jit) keeps its primal outputs known (``PrimalPart``);
reverse mode over the transpose would need a tape of the tape and raises.
"""
from __future__ import annotations

import numpy as np

from fungrad.interpreters.lowering import scalar_type_name
from fungrad import core
from fungrad.core import ClosedJaxpr, Primitive, ShapedArray, bind_on, eval_jaxpr, get_aval
from fungrad.interpreters import ad, batching
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import partial_eval_jaxpr, select_inputs, trace_closed
from fungrad.lax.control_flow.common import (cached, grouped_jvp_jaxpr, lane_mask, merge_lists,
                                             partition_list, split_list)

__all__ = ["while_lin_p", "while_lin_t_p", "while_lin_partial_eval"]

while_lin_p = Primitive("while_lin", multiple_results=True)
while_lin_t_p = Primitive("while_lin_t", multiple_results=True)


def _groups(args, params) -> list[list]:
    """(cond consts, known consts, known carry, the rest) of a tape primitive's operands."""
    return split_list(args, [params["cond_nconsts"], params["known_nconsts"],
                             params["known_ncarry"]])


def while_lin_partial_eval(trace, args, known_outs, cond, body, nc, nb, u_bc, u_carry):
    """``while_p``'s partial eval inside jit: the known carries' final values
    (``known_outs``, computed already) and a staged ``while_lin_p`` for the rest."""
    cond_k, known, lin = cached("while_lin", (cond, body), (tuple(u_bc), tuple(u_carry)),
                                lambda: _split_while(cond, body, nc, u_bc, u_carry))
    c_consts, b_consts, carry = split_list(args, [nc, nb])
    k_bconsts, u_bconsts = partition_list(u_bc, b_consts)
    k_carry, u_carry_vals = partition_list(u_carry, carry)
    staged = trace.stage(while_lin_p, c_consts + k_bconsts + k_carry + u_bconsts + u_carry_vals,
                         dict(cond=cond_k, known=known, lin=lin, cond_nconsts=nc,
                              known_nconsts=len(k_bconsts), known_ncarry=len(k_carry)))
    return merge_lists(u_carry, known_outs, staged)


def _split_while(cond, body, nc, u_bc, u_carry):
    """(cond on the known carries, known body (kb, kc) -> (kc, residuals),
    linear body (residuals, ub, uc) -> uc)."""
    carry_avals = list(body.out_avals)
    k_carry_avals, u_carry_avals = partition_list(u_carry, carry_avals)

    def cond_fn(*xs):     # unknown carries are fed zeros: the predicate ignores them
        c_consts, kc = split_list(xs, [nc])
        kc = merge_lists(u_carry, kc, [ad.zeros_like_aval(a) for a in u_carry_avals])
        return eval_jaxpr(cond.jaxpr, cond.consts, *c_consts, *kc)
    cond_k = trace_closed(cond_fn, list(cond.in_avals[:nc]) + k_carry_avals)
    known, lin, _, _ = partial_eval_jaxpr(body, list(u_bc) + list(u_carry),
                                          instantiate=list(u_carry))
    return cond_k, known, lin


def _record_tape(cond, known, cond_consts, known_consts, known_carry):
    c_comp, k_comp = compiled(cond), compiled(known)
    n_kc = len(known_carry)
    tape = []
    while c_comp.fn(*c_comp.consts, *cond_consts, *known_carry)[0]:
        outs = k_comp.fn(*k_comp.consts, *known_consts, *known_carry)
        known_carry, residuals = outs[:n_kc], outs[n_kc:]
        tape.append(residuals)
    return tape


def _while_lin_impl(*args, cond, known, lin, **params):
    cc, kb, kc, rest = _groups(args, params)
    ub, uc = split_list(rest, [len(rest) - len(lin.out_avals)])
    comp = compiled(lin)
    for residuals in _record_tape(cond, known, cc, kb, kc):
        uc = list(comp.fn(*comp.consts, *residuals, *ub, *uc))
    return [np.asarray(x) for x in uc]


def _while_lin_transpose(cts, *args, cond, known, lin, **params):
    cc, kb, kc, rest = _groups(args, params)
    if any(ad.is_undefined_primal(x) for x in cc + kb + kc):
        _reverse_over_linearized_tape()
    # a linear input known here is an instantiated zero tangent (see _while_jvp):
    # it gets a cotangent like the others, which is dropped
    num_res = len(lin.in_avals) - len(rest)
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = [get_aval(c).weak_type for c in cts]      # (the transpose follows them)
    lin_t = ad.transpose_jaxpr(lin, (False,) * num_res + (True,) * len(rest), ct_weak)
    params = {k: v for k, v in params.items() if k != "primal_part"}   # (while_lin's)
    outs = while_lin_t_p.bind(*cc, *kb, *kc, *cts, cond=cond, known=known, lin_t=lin_t, **params)
    return [None] * (len(args) - len(rest)) + [ct if ad.is_undefined_primal(x) else None
                                               for ct, x in zip(outs, rest)]


def _while_lin_t_impl(*args, cond, known, lin_t, **params):
    cc, kb, kc, ct_uc = _groups(args, params)
    n_ub = len(lin_t.out_avals) - len(ct_uc)
    acc = [np.zeros(a.shape, a.dtype) for a in lin_t.out_avals[:n_ub]]
    comp = compiled(lin_t)
    for residuals in reversed(_record_tape(cond, known, cc, kb, kc)):
        outs = comp.fn(*comp.consts, *residuals, *ct_uc)
        acc = [a + o for a, o in zip(acc, outs[:n_ub])]
        ct_uc = list(outs[n_ub:])
    return [np.asarray(x) for x in acc + ct_uc]


def _reverse_over_reverse(*args, **params):
    raise TypeError(
        "Reverse mode over the reverse-mode derivative of a lax.while_loop inside jit "
        "(e.g. jit(grad(grad(f))), grad(jit(grad(f)))) is not supported: inside jit the trip "
        "count exists only at run time. Use forward-over-reverse (jit(hessian(f)), or "
        "jvp of grad for Hessian-vector products), or take grad(grad(f)) outside jit, where "
        "fungrad differentiates while_loop as a scan of the counted length.")


def _reverse_over_linearized_tape():
    # the tangents of the replayed loop's own values (the tape's forward-mode
    # derivative, which linearize stages) are linear only through the loop
    raise TypeError(
        "Reverse mode over linearize of a lax.while_loop inside jit (e.g. "
        "jit(grad(lambda x: linearize(f, x)[1](t)))) is not supported: inside jit the "
        "linearized loop is a run-time tape, and transposing its forward-mode derivative "
        "would need a tape of the tape. Use jvp instead of linearize under the reverse-mode "
        "transform (jvp(f, (x,), (t,)) gives the same tangent), or apply the reverse-mode "
        "transform outside jit.")


while_lin_p.def_impl(_while_lin_impl)
while_lin_p.def_abstract_eval(lambda *avals, lin, **params: list(lin.out_avals))
while_lin_p.transpose = _while_lin_transpose
while_lin_p.linear = True
while_lin_t_p.def_impl(_while_lin_t_impl)
while_lin_t_p.def_abstract_eval(lambda *avals, lin_t, **params: list(lin_t.out_avals))


# ----------------------------------------------------------------------------
# Forward mode over the tape primitives (jvp/jacfwd of a derivative taken
# inside jit, e.g. jit(hessian(f)) = jacfwd(jacrev)): the same primitive over a
# tape of (residuals, their tangents) recorded by the known loop's JVP, with
# the JVP of the per-step map; output tangents come out as extra carries.
# Only float values get tangent slots.
# ----------------------------------------------------------------------------

def _float_jvp(step: ClosedJaxpr, in_sizes, out_sizes) -> ClosedJaxpr:
    """``step`` with each group of inputs/outputs followed by its float members' tangents."""
    floats = [ad.is_float(a.dtype) for a in step.in_avals]
    return grouped_jvp_jaxpr(step, in_sizes, floats, out_sizes, instantiate=True)[0]


def _with_float_tangents(primals, tangents):
    """Each value followed by the tangents of the float ones (zeros instantiated)."""
    return list(primals) + [ad.instantiate_zeros(t) for p, t in zip(primals, tangents)
                            if ad.is_float(get_aval(p).dtype)]


def _n_float(avals):
    return sum(ad.is_float(a.dtype) for a in avals)


def _jvp_tape(cond, known, n_kb, n_kc, num_res):
    """The cond (reading primal carries only) and known step of the JVP tape."""
    kc_dot = [a for a in known.in_avals[n_kb:] if ad.is_float(a.dtype)]
    n_cond = len(cond.in_avals)
    cond_j = select_inputs(cond, list(cond.in_avals) + kc_dot, list(range(n_cond)))
    return cond_j, _float_jvp(known, [n_kb, n_kc], [n_kc, num_res])


def _tape_jvp_params(known, params):
    n_kb = params["known_nconsts"]
    return dict(cond_nconsts=params["cond_nconsts"],
                known_nconsts=n_kb + _n_float(known.in_avals[:n_kb]),
                known_ncarry=params["known_ncarry"] + _n_float(known.in_avals[n_kb:]))


def _split_tangent_outputs(outs, sizes, avals):
    """Undo the (group, its float tangents) interleaving of a jvp'd primitive's outputs."""
    primal, tangent, i, j = [], [], 0, 0
    for n in sizes:
        group = list(avals[j:j + n])
        primal += outs[i:i + n]
        floats = [ad.is_float(a.dtype) for a in group]
        tangent += ad.tangents_from(floats, outs[i + n:i + n + sum(floats)], group)
        i, j = i + n + sum(floats), j + n
    return primal, tangent


def _while_lin_jvp(primals, tangents, cond, known, lin, **params):
    cc, kb, kc, rest = _groups(primals, params)
    _, t_kb, t_kc, t_rest = _groups(tangents, params)
    n_uc = len(lin.out_avals)
    n_ub, num_res = len(rest) - n_uc, len(lin.in_avals) - len(rest)
    cond_j, known_j, lin_j = cached("while_lin_jvp", (cond, known, lin), None, lambda: (
        *_jvp_tape(cond, known, len(kb), len(kc), num_res),
        _float_jvp(lin, [num_res, n_ub, n_uc], [n_uc])))
    part = PrimalPart(len(cc), [kb, kc, rest[:n_ub], rest[n_ub:]], [lin.out_avals],
                      dict(params, cond=cond, known=known, lin=lin))
    outs = while_lin_p.bind(
        *cc, *_with_float_tangents(kb, t_kb), *_with_float_tangents(kc, t_kc),
        *_with_float_tangents(rest[:n_ub], t_rest[:n_ub]),
        *_with_float_tangents(rest[n_ub:], t_rest[n_ub:]),
        cond=cond_j, known=known_j, lin=lin_j, primal_part=part,
        **_tape_jvp_params(known, params))
    return _split_tangent_outputs(outs, [n_uc], lin.out_avals)


def _while_lin_t_jvp(primals, tangents, cond, known, lin_t, **params):
    cc, kb, kc, ct = _groups(primals, params)
    _, t_kb, t_kc, t_ct = _groups(tangents, params)
    n_ct = len(ct)
    n_ub, num_res = len(lin_t.out_avals) - n_ct, len(lin_t.in_avals) - n_ct
    cond_j, known_j, lin_t_j = cached("while_lin_t_jvp", (cond, known, lin_t), None, lambda: (
        *_jvp_tape(cond, known, len(kb), len(kc), num_res),
        _float_jvp(lin_t, [num_res, n_ct], [n_ub, n_ct])))
    part = PrimalPart(len(cc), [kb, kc, ct], [lin_t.out_avals[:n_ub], lin_t.out_avals[n_ub:]],
                      dict(params, cond=cond, known=known, lin_t=lin_t))
    outs = while_lin_t_p.bind(
        *cc, *_with_float_tangents(kb, t_kb), *_with_float_tangents(kc, t_kc),
        *_with_float_tangents(ct, t_ct), cond=cond_j, known=known_j, lin_t=lin_t_j,
        primal_part=part, **_tape_jvp_params(known, params))
    return _split_tangent_outputs(outs, [n_ub, n_ct], lin_t.out_avals)


class PrimalPart:
    """The ``primal_part`` param of a jvp'd tape primitive: which of its inputs
    and outputs are those of the primal primitive it extends (each group of
    values is followed by its float members' tangents), and that primitive's
    params.  Partial evaluation with unknown tangents (``linearize`` of a
    derivative inside jit) computes the primal outputs from the known primal
    inputs on the parent trace, so they stay known values: staging the whole
    equation would make them values of the linearization, which then leak
    out of it as the primal results."""
    __slots__ = ("inputs", "outputs", "params")

    def __init__(self, n_leading: int, in_groups, out_groups, params: dict):
        self.inputs = tuple(range(n_leading)) + tuple(
            n_leading + i for i in _value_positions([[get_aval(x) for x in g]
                                                     for g in in_groups]))
        self.outputs = _value_positions(out_groups)
        self.params = params

    def __repr__(self):
        return f"PrimalPart({len(self.inputs)} inputs, {len(self.outputs)} outputs)"


def _value_positions(groups) -> tuple[int, ...]:
    """Positions of the values (not their tangents) in the group-by-group layout."""
    positions, i = [], 0
    for avals in groups:
        positions += range(i, i + len(avals))
        i += len(avals) + _n_float(avals)
    return tuple(positions)


def _tape_partial_eval(prim):
    def partial_eval(trace, args, **params):
        part = params.get("primal_part")
        if part is None or any(trace.owns(args[i]) for i in part.inputs):
            return trace.stage(prim, list(args), params)
        primal_outs = bind_on(trace.parent, prim, [args[i] for i in part.inputs], part.params)
        outs = trace.stage(prim, list(args), params)     # (its primal outputs go unused)
        for j, o in zip(part.outputs, primal_outs):
            outs[j] = o
        return outs
    return partial_eval


while_lin_p.jvp = _while_lin_jvp
while_lin_t_p.jvp = _while_lin_t_jvp
while_lin_p.partial_eval = _tape_partial_eval(while_lin_p)
while_lin_t_p.partial_eval = _tape_partial_eval(while_lin_t_p)
# (the transpose of a jvp'd tape would need a tape of the tape)
while_lin_t_p.transpose = _reverse_over_reverse


# ----------------------------------------------------------------------------
# vmap of the tape primitives: every carry batched, the loop runs while any lane
# is live, each tape entry also records which lanes were live, and the linear
# step leaves the others unchanged (so the transposed step passes their
# cotangents through and adds nothing for them)
# ----------------------------------------------------------------------------

def _masked_tape(cond, known, axis_size, c_dims, b_dims, n_kc):
    """(cond: any lane live, known: (cc, kb, kc) -> (kc, live, residuals))."""
    from fungrad import lax
    n_cc, n_kb = len(c_dims), len(b_dims)
    b_cond = batching.batch_jaxpr(cond, axis_size, c_dims + (0,) * n_kc)
    b_known = batching.batch_jaxpr(known, axis_size, b_dims + (0,) * n_kc)

    def any_fn(*xs):
        return [lax.reduce_or(eval_jaxpr(b_cond.jaxpr, b_cond.consts, *xs)[0], (0,))]

    def known_fn(*xs):
        cc, kb, kc = split_list(xs, [n_cc, n_kb])
        live = eval_jaxpr(b_cond.jaxpr, b_cond.consts, *cc, *kc)[0]
        outs = eval_jaxpr(b_known.jaxpr, b_known.consts, *kb, *kc)
        new_kc = [lax.select(lane_mask(live, o), o, c) for o, c in zip(outs[:n_kc], kc)]
        return new_kc + [live] + list(outs[n_kc:])
    c_avals = list(b_cond.in_avals)
    return (trace_closed(any_fn, c_avals),
            trace_closed(known_fn, c_avals[:n_cc] + list(b_known.in_avals)))


def _batched_tape_args(axis_size, vals, dims, params, n_rest_batched):
    """Consts moved to axis 0 (dims recorded); carries and the last
    ``n_rest_batched`` operands batched at 0."""
    vals, dims = batching.bdims_to_front(vals, dims)
    cc, kb, kc, rest = _groups(vals, params)
    _, _, kc_dims, rest_dims = _groups(dims, params)
    fixed, batched = split_list(rest, [len(rest) - n_rest_batched])
    fixed_dims, batched_dims = split_list(rest_dims, [len(rest) - n_rest_batched])
    at_front = lambda xs, ds: [batching.bdim_at_front(v, d, axis_size) for v, d in zip(xs, ds)]
    return cc + kb + at_front(kc, kc_dims) + fixed + at_front(batched, batched_dims), dims


def _masked_step(step, axis_size, n_keep, ct_mode):
    """The batched linear step under the live-lane mask: finished lanes keep
    their carry (``ct_mode``: the transposed step, whose first outputs are
    accumulated cotangents, zero for finished lanes)."""
    from fungrad import lax

    def fn(live, *xs):
        outs = eval_jaxpr(step.jaxpr, step.consts, *xs)
        carried = xs[len(xs) - n_keep:]
        head = outs[:len(outs) - n_keep]
        head = [lax.select(lane_mask(live, o), o, ad.zeros_like_aval(get_aval(o)))
                for o in head] if ct_mode else head
        return head + [lax.select(lane_mask(live, o), o, c)
                       for o, c in zip(outs[len(outs) - n_keep:], carried)]
    live_aval = ShapedArray((axis_size,), np.dtype(np.bool_))
    return trace_closed(fn, [live_aval] + list(step.in_avals))


def _masked_tape_params(params):
    n_cc = params["cond_nconsts"]
    return dict(cond_nconsts=n_cc, known_nconsts=n_cc + params["known_nconsts"],
                known_ncarry=params["known_ncarry"])


def _while_lin_batch(axis_size, vals, dims, cond, known, lin, **params):
    n_uc = len(lin.out_avals)
    vals, dims = _batched_tape_args(axis_size, vals, dims, params, n_uc)
    c_dims, b_dims, _, rest_dims = _groups(dims, params)
    u_dims = tuple(rest_dims[:len(rest_dims) - n_uc])
    num_res = len(lin.in_avals) - len(u_dims) - n_uc
    key = (tuple(c_dims), tuple(b_dims), u_dims, axis_size)

    def build():
        m_cond, m_known = _masked_tape(cond, known, axis_size, tuple(c_dims), tuple(b_dims),
                                       params["known_ncarry"])
        b_lin = batching.batch_jaxpr(lin, axis_size, (0,) * num_res + u_dims + (0,) * n_uc)
        return m_cond, m_known, _masked_step(b_lin, axis_size, n_uc, ct_mode=False)
    m_cond, m_known, m_lin = cached("while_lin_batch", (cond, known, lin), key, build)
    cc = vals[:params["cond_nconsts"]]
    outs = while_lin_p.bind(*cc, *vals, cond=m_cond, known=m_known, lin=m_lin,
                            **_masked_tape_params(params))
    return outs, [0] * len(outs)


def _while_lin_t_batch(axis_size, vals, dims, cond, known, lin_t, **params):
    n_ct = len(vals) - params["cond_nconsts"] - params["known_nconsts"] - params["known_ncarry"]
    vals, dims = _batched_tape_args(axis_size, vals, dims, params, n_ct)
    c_dims, b_dims, _, _ = _groups(dims, params)
    num_res = len(lin_t.in_avals) - n_ct

    def build():
        m_cond, m_known = _masked_tape(cond, known, axis_size, tuple(c_dims), tuple(b_dims),
                                       params["known_ncarry"])
        b_lin_t = batching.batch_jaxpr(lin_t, axis_size, (0,) * (num_res + n_ct))
        return m_cond, m_known, _masked_step(b_lin_t, axis_size, n_ct, ct_mode=True)
    m_cond, m_known, m_lin_t = cached("while_lin_t_batch", (cond, known, lin_t),
                                      (tuple(c_dims), tuple(b_dims), axis_size), build)
    cc = vals[:params["cond_nconsts"]]
    outs = while_lin_t_p.bind(*cc, *vals, cond=m_cond, known=m_known, lin_t=m_lin_t,
                              **_masked_tape_params(params))
    return outs, [0] * len(outs)


while_lin_p.batch = _while_lin_batch
while_lin_t_p.batch = _while_lin_t_batch


# ----------------------------------------------------------------------------
# Lowering: the known loop appends to a list, then a for loop over it
# ----------------------------------------------------------------------------

def _emit_tape(block, cond, known, cc, kb, kc_init):
    """Emit the known loop, appending each iteration's residuals to a list; returns
    (the list's name, names for one entry's residuals)."""
    new = lambda: block.names.new(core.Var(ShapedArray((), np.dtype(np.int64))))
    n_kc = len(kc_init)
    tape, kc = new(), [new() for _ in range(n_kc)]
    block.line(f"{tape} = []")
    for name, init in zip(kc, kc_init):
        block.line(f"{name} = {init}")
    block.line("while True:")
    (pred,) = block.body(cond, list(cc) + kc)
    block.line(f"if not {pred}:", "    ")
    block.line("break", "        ")
    outs = block.body(known, list(kb) + kc)
    block.line(f"{tape}.append(({''.join(o + ', ' for o in outs[n_kc:])}))", "    ")
    if n_kc:
        block.line(f"{', '.join(kc)}, = {', '.join(outs[:n_kc])},", "    ")
    return tape, [new() for _ in outs[n_kc:]]


def _tuple_target(names):
    return f"({''.join(n + ', ' for n in names)})" if names else "_"


def _while_lin_emit(block, eqn, args, out_names):
    p = eqn.params
    cc, kb, kc, rest = _groups(args, p)
    ub, uc = split_list(rest, [len(rest) - len(out_names)])
    tape, res = _emit_tape(block, p["cond"], p["known"], cc, kb, kc)
    for o, init in zip(out_names, uc):
        block.line(f"{o} = {init}")
    block.line(f"for {_tuple_target(res)} in {tape}:")
    outs = block.body(p["lin"], res + list(ub) + list(out_names))
    if out_names:
        block.line(f"{', '.join(out_names)}, = {', '.join(outs)},", "    ")


def _while_lin_t_emit(block, eqn, args, out_names):
    p = eqn.params
    cc, kb, kc, ct_uc = _groups(args, p)
    lin_t = p["lin_t"]
    n_ub = len(lin_t.out_avals) - len(ct_uc)
    tape, res = _emit_tape(block, p["cond"], p["known"], cc, kb, kc)
    acc, ct_names = out_names[:n_ub], out_names[n_ub:]
    for name, a in zip(acc, lin_t.out_avals[:n_ub]):
        block.line(f"{name} = np.zeros({a.shape!r}, {scalar_type_name(a.dtype)})")
    for name, init in zip(ct_names, ct_uc):
        block.line(f"{name} = {init}")
    block.line(f"for {_tuple_target(res)} in reversed({tape}):")
    outs = block.body(lin_t, res + list(ct_names))
    for name, o in zip(acc, outs[:n_ub]):
        block.line(f"{name} = {name} + {o}", "    ")
    if ct_names:
        block.line(f"{', '.join(ct_names)}, = {', '.join(outs[n_ub:])},", "    ")


while_lin_p.emit_block = _while_lin_emit
while_lin_t_p.emit_block = _while_lin_t_emit
