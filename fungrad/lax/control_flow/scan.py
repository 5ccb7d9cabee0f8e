"""``scan``: a loop carrying state, consuming and producing stacked arrays;
``fori_loop`` and ``map`` are built on it.

    scan_p(*consts, *init, *xs, body, num_consts, num_carry, length, reverse)
    body : (consts, carry, x slices) -> (carry, y slices)

Rules:

* eval: a Python loop over the compiled body;
* jvp: a scan of the body's JVP, the tangents riding along as extra consts,
  carries and xs; a fixpoint finds which carries get nonzero tangents;
* partial eval (linearize): the known scan runs now, returning the
  per-iteration residuals stacked as ys; the unknown scan is staged and
  consumes them as xs.  Residuals that depend on the consts only are
  computed once (loop-invariant hoisting), and residuals that are slices of
  a known xs are read from it instead of being restacked;
* transpose: a scan running the other way, accumulating the consts'
  cotangents in the carry;
* vmap: every carry batched; consts and xs keep their batching;
* lowering: a real ``for`` loop appending ys to lists.

Partial evaluation, before/after, for ``scan(lambda c, x: (sin(c) * x, ()), c0, xs)``
with the carry's tangent ``t`` unknown::

    c = scan[body=(c, x -> sin c * x)] c0 xs
  known, now:  c, r = scan[body=(c, x -> sin c * x, cos c * x)] c0 xs      # r stacked
  unknown:     t = scan[body=(t, r -> r * t)] t0 r
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad import core
from fungrad.lax import state as _refs
from fungrad.core import ClosedJaxpr, Primitive, ShapedArray, bind_on, eval_jaxpr, get_aval
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.lowering import scalar_type_name
from fungrad.interpreters.partial_eval import (as_value, dce_jaxpr, partial_eval_jaxpr,
                                               select_inputs, stage_pytree, trace_closed)
from fungrad.lax.control_flow.call import jit_p
from fungrad.lax.control_flow.common import (grouped_jvp_jaxpr, merge_lists, partition_list,
                                             python_control_flow, split_list)
from fungrad.lax.utils import numba_type
from fungrad.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["scan", "fori_loop", "map", "scan_p"]

scan_p = Primitive("scan", multiple_results=True)


def _stack_ys(ys_per_iter, y_avals, length):
    if length == 0:
        return [np.zeros((0,) + a.shape, a.dtype) for a in y_avals]
    return [np.stack([np.asarray(it[k]) for it in ys_per_iter]) for k in range(len(y_avals))]


def _scan_impl(*args, body, num_consts, num_carry, length, reverse):
    comp = compiled(body)
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    order = range(length - 1, -1, -1) if reverse else range(length)
    ys = []
    for i in order:
        out = comp.fn(*comp.consts, *consts, *carry, *[x[i] for x in xs])
        carry, y = list(out[:num_carry]), out[num_carry:]
        ys.append(y)
    if reverse:
        ys.reverse()
    return [np.asarray(c) for c in carry] + _stack_ys(ys, body.out_avals[num_carry:], length)


_WEAK_SCALAR = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def promote_weak_carry(leaves, weak, out_avals):
    """JAX's rule for loop carries that start as Python scalars (weakly typed):
    such a leaf takes the dtype the body gives it when its own would not fit
    (``while_loop(c, body, 0)`` with a float body carries a float). Returns the
    new leaves, or None when nothing changes."""
    from fungrad import lax
    changed = False
    leaves = list(leaves)
    for i, (leaf, is_weak, out) in enumerate(zip(leaves, weak, out_avals)):
        aval = get_aval(leaf)
        if not is_weak or aval.shape != out.shape:
            continue
        if aval.dtype == out.dtype:
            if not out.weak_type:    # the body makes it strong: so is the carry (JAX)
                leaves[i] = lax.convert_element_type(leaf, aval.dtype)
                changed = True
            continue
        dtype = np.result_type(_WEAK_SCALAR.get(dtype_kind(aval.dtype), 0), out.dtype)
        if dtype != aval.dtype:
            leaves[i] = lax.convert_element_type(leaf, dtype)
            changed = True
    return leaves if changed else None


def _check_carry(who, carry_avals, out_avals):
    for i, (a, b) in enumerate(zip(carry_avals, out_avals)):
        if a.strip_weak_type() != b.strip_weak_type():
            raise TypeError(f"{who}: the body changes carry leaf {i} from {a.str_short()} to "
                            f"{b.str_short()}; the carry must keep its shape and dtype")


def _scan_abstract_eval(*avals, body, num_consts, num_carry, length, reverse):
    _, carry, xs = split_list(avals, [num_consts, num_carry])
    _check_carry("scan", carry, body.out_avals[:num_carry])
    for i, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise ValueError(f"scan: xs leaf {i} has shape {x.shape}, expected a leading "
                             f"axis of length {length}")
    ys = [ShapedArray((length,) + a.shape, a.dtype, a.weak_type)
          for a in body.out_avals[num_carry:]]
    return _carry_out_avals(carry, body.out_avals[:num_carry]) + ys


def _carry_out_avals(carry_avals, body_out_avals) -> list:
    """A loop's carry outputs: the body's, weakly typed where the carry is too."""
    return [b if b.weak_type <= a.weak_type else b.strip_weak_type()
            for a, b in zip(carry_avals, body_out_avals)]


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract_eval)
# its jaxpr may make weak outputs of strong operands (a Python constant, a
# transpose's conversion back to a weak operand's type): evaluated eagerly too,
# its outputs take the abstract rule's weak types
scan_p.weak_from_params = True


# ----------------------------------------------------------------------------
# jvp
# ----------------------------------------------------------------------------

def loop_jvp_body(body: ClosedJaxpr, num_consts, num_carry, nz_consts, nz_carry, nz_xs):
    """The body of the JVP loop and its carries' nonzero pattern (a fixpoint:
    a carry whose tangent becomes nonzero after one iteration is nonzero from
    the start).  Inputs: consts, their tangents, carry, its tangents, xs, their
    tangents; outputs: carry, its tangents, ys, the float ys' tangents."""
    n_ys = len(body.out_avals) - num_carry
    for _ in range(num_carry + 1):
        jvp_body, out_nz = grouped_jvp_jaxpr(
            body, [num_consts, num_carry, len(nz_xs)], nz_consts + nz_carry + nz_xs,
            [num_carry, n_ys], instantiate=nz_carry + [True] * n_ys)
        grown = [a or b for a, b in zip(nz_carry, out_nz[:num_carry])]
        if grown == nz_carry:
            return jvp_body, nz_carry
        nz_carry = grown
    raise AssertionError("internal error: the carry tangent fixpoint did not converge")


def _scan_jvp(primals, tangents, body, num_consts, num_carry, length, reverse):
    nonzeros = [type(t) is not Zero for t in tangents]
    nz_consts, nz_carry, nz_xs = split_list(nonzeros, [num_consts, num_carry])
    jvp_body, nz_carry = loop_jvp_body(body, num_consts, num_carry, nz_consts, nz_carry, nz_xs)
    consts, carry, xs = split_list(primals, [num_consts, num_carry])
    t_consts, t_carry, t_xs = split_list(tangents, [num_consts, num_carry])
    pick = lambda ts, flags: [ad.instantiate_zeros(t) for t, f in zip(ts, flags) if f]
    outs = scan_p.bind(*consts, *pick(t_consts, nz_consts), *carry, *pick(t_carry, nz_carry),
                       *xs, *pick(t_xs, nz_xs), body=jvp_body,
                       num_consts=num_consts + sum(nz_consts),
                       num_carry=num_carry + sum(nz_carry), length=length, reverse=reverse)
    carry_out, t_carry_out, ys, t_ys = split_list(
        outs, [num_carry, sum(nz_carry), len(body.out_avals) - num_carry])
    carry_avals, y_avals = split_list(body.out_avals, [num_carry])
    y_floats = [ad.is_float(a.dtype) for a in y_avals]
    return (carry_out + ys, ad.tangents_from(nz_carry, t_carry_out, carry_avals)
            + ad.tangents_from(y_floats, t_ys, y_avals))


scan_p.jvp = _scan_jvp


# ----------------------------------------------------------------------------
# partial evaluation
# ----------------------------------------------------------------------------

def _scan_partial_eval(trace, args, body, num_consts, num_carry, length, reverse):
    unknowns = [trace.owns(x) for x in args]
    u_consts, u_carry, u_xs = split_list(unknowns, [num_consts, num_carry])
    for _ in range(num_carry + 1):          # fixpoint: an unknown carry stays unknown
        split = body.derived(("scan_pe", tuple(u_consts), tuple(u_carry), tuple(u_xs)),
                             lambda: _split_scan_body(body, num_consts, num_carry,
                                                      u_consts, u_carry, u_xs))
        grown = [a or b for a, b in zip(u_carry, split.out_unknowns[:num_carry])]
        if grown == u_carry:
            break
        u_carry = grown
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    k_consts, uk_consts = partition_list(u_consts, consts)
    k_carry, uk_carry = partition_list(u_carry, carry)
    k_xs, uk_xs = partition_list(u_xs, xs)
    # residuals that depend on the consts only are computed once, not per iteration
    invariants = bind_on(trace.parent, jit_p, k_consts,
                         dict(jaxpr=split.invariants, name="scan_invariants")
                         ) if split.invariants is not None else []
    known_outs = bind_on(trace.parent, scan_p, k_consts + k_carry + k_xs,
                         dict(body=split.known, num_consts=len(k_consts),
                              num_carry=len(k_carry), length=length, reverse=reverse))
    n_known = len(known_outs) - split.num_stacked
    known_outs, stacked = known_outs[:n_known], known_outs[n_known:]
    staged = trace.stage(scan_p, uk_consts + list(invariants) + uk_carry + list(stacked)
                         + [k_xs[j] for j in split.passed] + uk_xs,
                         dict(body=split.unknown, num_consts=len(uk_consts) + len(invariants),
                              num_carry=len(uk_carry), length=length, reverse=reverse))
    return merge_lists(split.out_unknowns, known_outs, staged)


class _ScanSplit:
    """A scan body split into known and unknown parts (``_split_scan_body``)."""
    __slots__ = ("known", "invariants", "unknown", "out_unknowns", "num_stacked", "passed")

    def __init__(self, known, invariants, unknown, out_unknowns, num_stacked, passed):
        self.known, self.invariants, self.unknown = known, invariants, unknown
        self.out_unknowns, self.num_stacked, self.passed = out_unknowns, num_stacked, passed


def _split_scan_body(body, num_consts, num_carry, u_consts, u_carry, u_xs) -> _ScanSplit:
    """known: (k consts, k carry, k xs) -> (k carry, k ys, stacked residuals);
    invariants: (k consts) -> residuals that depend on the consts only (or None);
    unknown: (u consts, invariants, u carry, stacked residuals, passed-through
    k xs, u xs) -> (u carry, u ys), where residuals that are slices of a known xs
    are read from that xs (``passed``: their positions among the known xs)."""
    inst = list(u_carry) + [False] * (len(body.out_avals) - num_carry)
    known, unknown, out_u, num_res = partial_eval_jaxpr(body, u_consts + u_carry + u_xs,
                                                        instantiate=inst)
    out_u = [a or b for a, b in zip(out_u, inst)]   # carries: unknown on both sides or neither
    n_kconsts, n_kcarry = num_consts - sum(u_consts), num_carry - sum(u_carry)
    kj = known.jaxpr
    residuals = kj.outvars[len(kj.outvars) - num_res:]
    invariant = _const_only(kj, n_kconsts)[len(kj.outvars) - num_res:]
    k_xs = list(kj.invars[n_kconsts + n_kcarry:])
    passed = [k_xs.index(r) if not inv and r in k_xs else None
              for r, inv in zip(residuals, invariant)]
    stacked = [not inv and j is None for inv, j in zip(invariant, passed)]
    known, invariants = _hoist_invariants(known, num_res, n_kconsts, invariant, stacked)
    # the unknown body's inputs: (residuals, u consts, u carry, u xs) reordered to
    # (u consts, invariant res, u carry, stacked res, passed-through res, u xs)
    inv_pos = [i for i in range(num_res) if invariant[i]]
    var_pos = [i for i in range(num_res) if stacked[i]]
    pass_pos = [i for i in range(num_res) if passed[i] is not None]
    uc, uk, ux = split_list(range(num_res, len(unknown.in_avals)), [sum(u_consts), sum(u_carry)])
    order = uc + inv_pos + uk + var_pos + pass_pos + ux
    all_avals = list(unknown.in_avals)
    unknown = select_inputs(unknown, [all_avals[i] for i in order],
                            [order.index(i) for i in range(len(all_avals))])
    return _ScanSplit(known, invariants, unknown, tuple(out_u), len(var_pos),
                      tuple(passed[i] for i in pass_pos))


def _const_only(jaxpr: core.Jaxpr, n_consts) -> list:
    """For each output of ``jaxpr``: does it depend on its first ``n_consts`` inputs only?"""
    varying = set(jaxpr.invars[n_consts:])
    for eqn in jaxpr.eqns:
        if any(isinstance(a, core.Var) and a in varying for a in eqn.inputs):
            varying.update(eqn.outvars)
    return [not (isinstance(v, core.Var) and v in varying) for v in jaxpr.outvars]


def _hoist_invariants(known: ClosedJaxpr, num_res, n_consts, invariant, stacked):
    """The known body keeps only the ``stacked`` residual outputs; the loop-invariant
    ones move to a jaxpr of the consts evaluated once (None if there are none)."""
    if all(stacked):
        return known, None
    kj = known.jaxpr
    n_out = len(kj.outvars) - num_res
    res = kj.outvars[n_out:]
    body = core.Jaxpr(kj.constvars, kj.invars, kj.eqns,
                      kj.outvars[:n_out] + [r for r, f in zip(res, stacked) if f])
    body = ClosedJaxpr(dce_jaxpr(body)[0], known.consts)
    if not any(invariant):
        return body, None
    inv = core.Jaxpr(kj.constvars, kj.invars[:n_consts], kj.eqns,
                     [r for r, f in zip(res, invariant) if f])
    # (effects stay in the body, which runs every iteration, not in the invariants)
    return body, ClosedJaxpr(dce_jaxpr(inv, keep_effects=False)[0], known.consts)


scan_p.partial_eval = _scan_partial_eval


# ----------------------------------------------------------------------------
# transpose, vmap, lowering
# ----------------------------------------------------------------------------

def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    lin = ad.is_undefined_primal
    # non-linear consts are loop-invariant residuals (see _hoist_invariants);
    # a carry whose initial value is known here is an instantiated zero tangent
    # (see _scan_jvp): it gets a cotangent like the others, which is dropped
    c_lin = tuple(lin(c) for c in consts)
    x_lin = tuple(lin(x) for x in xs)
    res_consts, lin_consts = partition_list(c_lin, consts)
    res_xs, _ = partition_list(x_lin, xs)
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = tuple(get_aval(c).weak_type for c in cts)     # (the transpose follows them)
    t_body = body.derived(("scan_transpose", c_lin, x_lin, ct_weak),
                          lambda: _transpose_scan_body(body, num_consts, num_carry, c_lin, x_lin,
                                                       ct_weak))
    ct_carry, ct_ys = split_list(cts, [num_carry])
    ct_consts0 = [ad.zeros_like_aval(c.aval) for c in lin_consts]
    outs = scan_p.bind(*res_consts, *ct_consts0, *ct_carry, *res_xs, *ct_ys, body=t_body,
                       num_consts=len(res_consts), num_carry=len(lin_consts) + num_carry,
                       length=length, reverse=not reverse)
    ct_consts, ct_init, ct_xs = split_list(outs, [len(lin_consts), num_carry])
    ct_init = [c if lin(k) else None for c, k in zip(ct_init, carry)]
    return (merge_lists(c_lin, [None] * len(res_consts), ct_consts) + ct_init
            + merge_lists(x_lin, [None] * len(res_xs), ct_xs))


def _transpose_scan_body(body, num_consts, num_carry, c_lin, x_lin, ct_weak):
    """(res consts), (ct of linear consts so far, ct carry), (res x slices, ct y
    slices) -> (ct of linear consts + this step's, ct carry in), ct linear x slices.
    Staged at the weak types ``ct_weak`` of the cotangents of the carry and ys
    (as JAX's): a strong ys cotangent makes the carry's strong."""
    t_body = ad.transpose_jaxpr(body, c_lin + (True,) * num_carry + x_lin, ct_weak)
    n_res_c, n_lin_c = c_lin.count(False), c_lin.count(True)

    def fn(*args):
        res_c, acc, ct_carry, res_x, ct_ys = split_list(
            args, [n_res_c, n_lin_c, num_carry, x_lin.count(False)])
        cts = eval_jaxpr(t_body.jaxpr, t_body.consts, *res_c, *res_x, *ct_carry, *ct_ys)
        ct_c, ct_rest = cts[:n_lin_c], cts[n_lin_c:]
        return [ad.add_tangents(a, c) for a, c in zip(acc, ct_c)] + ct_rest
    in_avals = body.in_avals
    consts_av, carry_av, xs_av = split_list(in_avals, [num_consts, num_carry])
    res_c_av, lin_c_av = partition_list(c_lin, consts_av)
    res_x_av, _ = partition_list(x_lin, xs_av)
    # (an integer carry's cotangent is float0: its aval stays the carry's)
    carry_ct_av = ad.with_ct_weak(carry_av, [w if ad.is_float(a.dtype) else a.weak_type
                                             for a, w in zip(carry_av, ct_weak)])
    y_ct_av = ad.with_ct_weak([ad.tangent_aval(a) for a in body.out_avals[num_carry:]],
                              ct_weak[num_carry:])
    return trace_closed(fn, res_c_av + lin_c_av + carry_ct_av + res_x_av + y_ct_av)


scan_p.transpose = _scan_transpose
scan_p.linear = True


def _scan_batch(axis_size, vals, dims, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = split_list(vals, [num_consts, num_carry])
    c_dims, k_dims, x_dims = split_list(dims, [num_consts, num_carry])
    consts, c_in = batching.bdims_to_front(consts, c_dims)
    carry = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(carry, k_dims)]
    xs = [v if d is None else batching.moveaxis(v, d, 1) for v, d in zip(xs, x_dims)]
    x_in = tuple(None if d is None else 0 for d in x_dims)
    b_body = batching.batch_jaxpr(body, axis_size, c_in + (0,) * num_carry + x_in)
    outs = scan_p.bind(*consts, *carry, *xs, body=b_body, num_consts=num_consts,
                       num_carry=num_carry, length=length, reverse=reverse)
    return outs, [0] * num_carry + [1] * (len(outs) - num_carry)


scan_p.batch = _scan_batch


def _chained_ys(body, num_consts, nk) -> dict:
    """{y index: carry index} for per-step outputs that are a carry as it came
    into the step (a gradient's residuals), computed elsewhere as that carry
    (an array) -- the carry stored once per step, not copied into ys too."""
    jaxpr, chained = body.jaxpr, {}
    carry_in = jaxpr.invars[num_consts:num_consts + nk]
    for k, v in enumerate(jaxpr.outvars[nk:]):
        if v in carry_in:
            j = carry_in.index(v)
            new = jaxpr.outvars[j]
            if (j not in chained.values() and v.aval.ndim > 0 and isinstance(new, core.Var)
                    and new not in jaxpr.invars and jaxpr.outvars.count(new) == 1):
                chained[k] = j
    return chained


def _scan_loop(block, eqn, args, out_names, dtype_source):
    """A ``for`` loop over the steps, for both backends: the carries are
    locals, each per-step output is written into an array allocated before the
    loop (``dtype_source(dtype)`` names its dtype in the backend's code).  A
    per-step output that is an incoming carry (``_chained_ys``) lives in one
    more slot than the steps: step i's carry is slot i (i + 1 in reverse), its
    new carry goes into the next one, computed there when the backend can."""
    p = eqn.params
    body, nk, length, reverse = p["body"], p["num_carry"], int(p["length"]), p["reverse"]
    consts, carry, xs = split_list(args, [p["num_consts"], nk])
    carry_names, ys_names = out_names[:nk], out_names[nk:]
    chained = _chained_ys(body, p["num_consts"], nk)
    i = block.names.new(core.Var(ShapedArray((), np.int64)))
    for c, n in zip(carry_names, carry):
        block.line(f"{c} = {n}")
    buffers = {}                    # y index -> its (length + 1)-slot array
    for k, (y, a) in enumerate(zip(ys_names, body.out_avals[nk:])):
        shape = (length + (k in chained),) + tuple(int(d) for d in a.shape)
        if k in chained:
            buffers[k] = y = block.names.new(core.Var(ShapedArray(shape, a.dtype)))
        block.line(f"{y} = np.empty({shape!r}, {dtype_source(a.dtype)})")
        if k in chained:
            block.line(f"{y}[{length if reverse else 0}] = {carry[chained[k]]}")
    rng = f"range({length} - 1, -1, -1)" if reverse else f"range({length})"
    block.line(f"for {i} in {rng}:")
    slots = [f"{y}[{i}]" for y in ys_names]
    into = {nk + k: slot for k, slot in enumerate(slots) if k not in chained}
    for k, j in chained.items():
        into[j] = f"{buffers[k]}[{i}]" if reverse else f"{buffers[k]}[{i} + 1]"
    outs = block.body(body, list(consts) + carry_names + [f"{x}[{i}]" for x in xs], into=into)
    # ys and new carries into their slots (unless computed there) first: a y
    # may be the incoming carry; then all carries at once (they may swap)
    for k, (slot, o) in enumerate(zip(slots, outs[nk:])):
        if k not in chained and o != slot:
            block.line(f"{slot} = {o}", "    ")
    for k, j in chained.items():
        if outs[j] != into[j]:
            block.line(f"{into[j]} = {outs[j]}", "    ")
    if nk:
        block.line(f"{', '.join(carry_names)}, = {', '.join(outs[:nk])},", "    ")
    for k, buffer in buffers.items():
        block.line(f"{ys_names[k]} = {buffer}[1:]" if reverse else
                   f"{ys_names[k]} = {buffer}[:{length}]")


scan_p.emit_block = lambda block, eqn, args, out_names: _scan_loop(
    block, eqn, args, out_names, scalar_type_name)
# the compiled backend's scan: the same native loop, numba's dtype names
scan_p.numba_block = lambda block, eqn, args, out_names: _scan_loop(
    block, eqn, args, out_names, numba_type)



# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------

def _scan_length(xs_leaves, length) -> int:
    lengths = {np.shape(x)[0] if np.ndim(x) else None for x in xs_leaves}
    if None in lengths:
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"scan: xs leaves and length disagree on the scan length: "
                         f"{sorted(lengths)} (shapes {[np.shape(x) for x in xs_leaves]})")
    if not lengths:
        raise ValueError("scan: give xs or length")
    return lengths.pop()


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int = 1, _split_transpose: bool = False):
    """``jax.lax.scan``: ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``;
    returns ``(final carry, stacked ys)``.  ``unroll`` is accepted and ignored
    (the generated code is a Python ``for`` loop either way), and so is JAX's
    private ``_split_transpose`` (how XLA schedules the backward loop; flax's
    ``nn.scan`` passes it), which changes no value."""
    init_leaves, init_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
    n = _scan_length(xs_leaves, length)
    if python_control_flow():                                    # jax_disable_jit
        return _python_scan(f, init, xs, n, reverse)
    body_fun, refs = f, []        # (Refs from outside the body: threaded through the carry)
    f = _refs.discovering(f, refs, "scan body")
    weak = [get_aval(x).weak_type for x in init_leaves]
    init_leaves = [as_value(x) for x in init_leaves]
    xs_leaves = [as_value(x) for x in xs_leaves]
    # weak carries are staged weak (as while_loop's), kept weak where the body
    # keeps them so (promote_weak_carry)
    carry_avals = [ShapedArray(get_aval(x).shape, get_aval(x).dtype, w)
                   for x, w in zip(init_leaves, weak)]
    x_avals = [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in xs_leaves]
    y_tree_box = []

    def step(carry_and_x):
        carry, x = carry_and_x
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: the body must return a pair (carry, y)")
        c_tree = tree_flatten(out[0])[1]
        if c_tree != init_tree:
            raise TypeError(f"scan: the body returns a carry with structure {c_tree}, "
                            f"but the initial carry has structure {init_tree}")
        y_tree_box.append(tree_flatten(out[1])[1])
        return out
    in_tree = tree_flatten((init, xs))[1]
    closed, hoisted, _ = stage_pytree(step, in_tree, carry_avals + x_avals, name="scan body")
    promoted = promote_weak_carry(init_leaves, weak, closed.out_avals)
    if promoted is not None:
        init_leaves = promoted
        carry_avals = [get_aval(x) for x in init_leaves]
        y_tree_box.clear()
        closed, hoisted, _ = stage_pytree(step, in_tree, carry_avals + x_avals, name="scan body")
    _check_carry("scan", carry_avals, closed.out_avals)
    if refs:
        return _refs.scan_with_refs(scan, body_fun, init, xs, refs, length=length,
                                    reverse=reverse)
    outs = scan_p.bind(*hoisted, *init_leaves, *xs_leaves, body=closed, num_consts=len(hoisted),
                       num_carry=len(carry_avals), length=n, reverse=bool(reverse))
    k = len(carry_avals)
    return tree_unflatten(init_tree, outs[:k]), tree_unflatten(y_tree_box[0], outs[k:])


def _python_scan(f, init, xs, length, reverse):
    """``scan`` as a Python loop (jax_disable_jit); the ys are stacked with lax."""
    from fungrad import lax
    if length == 0:
        raise ValueError("scan: a zero-length scan is not supported under disable_jit "
                         "(the type of its outputs is unknown without tracing)")
    carry, ys = init, []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        carry, y = f(carry, tree_map(lambda x: x[i], xs))
        ys.append(y)
    if reverse:
        ys.reverse()
    stack = lambda *leaves: lax.concatenate([lax.expand_dims(v, (0,)) for v in leaves], 0)
    return carry, tree_map(stack, *ys)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``jax.lax.fori_loop``: with concrete bounds a ``scan`` over ``range(lower, upper)``
    (every transform, reverse mode included); with traced bounds a ``while_loop``
    (every transform; see ``while_loop`` for reverse mode).  ``unroll`` is
    accepted and ignored, as scan's (the generated code is a Python loop)."""
    index = core.default_int_dtype()     # (int32 when jax_enable_x64 is off, as JAX)
    try:
        lo, hi = int(lower), int(upper)
    except (TypeError, core.ConcretizationTypeError):
        from fungrad import lax
        from fungrad.lax.control_flow.while_loop import while_loop
        start = lax.convert_element_type(lower, index)
        stop = lax.convert_element_type(upper, index)
        _, _, out = while_loop(lambda c: lax.lt(c[0], c[1]),
                               lambda c: (lax.add(c[0], index.type(1)), c[1], body_fun(c[0], c[2])),
                               (start, stop, init_val))
        return out
    idx = np.arange(lo, max(lo, hi), dtype=index)
    carry, _ = scan(lambda c, i: (body_fun(i, c), None), init_val, idx)
    return carry


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 (JAX's name)
    """``jax.lax.map``: ``f`` over the leading axis of ``xs``, as a scan.  With
    ``batch_size``, ``f`` is vmapped over chunks of that many elements (a scan
    over the chunks, the remainder vmapped separately), as in JAX."""
    if batch_size is None:
        return scan(lambda c, x: (c, f(x)), None, xs)[1]
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int, got {batch_size!r}")
    from fungrad import lax
    leaves, tree = tree_flatten(xs)
    leaves = [as_value(x) for x in leaves]
    n = get_aval(leaves[0]).shape[0] if leaves else 0
    n_full = (n // batch_size) * batch_size
    chunks = [lax.reshape(lax.slice_in_dim(x, 0, n_full, 1, 0),
                          (n // batch_size, batch_size) + get_aval(x).shape[1:]) for x in leaves]
    out = scan(lambda c, x: (c, _vmapped(f, tree, x)), None, chunks)[1]
    out_leaves, out_tree = tree_flatten(out)
    out_leaves = [lax.reshape(y, (n_full,) + get_aval(y).shape[2:]) for y in out_leaves]
    if n_full < n:
        rest = tree_flatten(_vmapped(f, tree, [lax.slice_in_dim(x, n_full, n, 1, 0)
                                               for x in leaves]))[0]
        out_leaves = [lax.concatenate([a, b], 0) for a, b in zip(out_leaves, rest)]
    return tree_unflatten(out_tree, out_leaves)


def _vmapped(f, tree, leaves):
    """``vmap(f)`` over the leading axis of the leaves of one pytree argument."""
    out_tree = []

    def flat(*xs):
        out, tr = tree_flatten(f(tree_unflatten(tree, list(xs))))
        out_tree.append(tr)
        return [as_value(o) for o in out]
    size = get_aval(leaves[0]).shape[0]
    outs = batching.vmap_flat(flat, list(leaves), [0] * len(leaves), size, itertools.repeat(0))
    return tree_unflatten(out_tree[0], outs)
