"""Control flow as primitives carrying sub-jaxprs: ``cond`` / ``switch``.

``cond_p(index, *operands, branches=(closed jaxprs...))`` runs one branch.
Its rules, each staging derived jaxprs once (cached on branch identity, like
``jit``):

* eval: run the chosen branch's compiled code;
* jvp: the JVP of every branch (same tangent pattern, every float output's
  tangent instantiated so the branches agree) under one ``cond``;
* partial eval (linearize): each branch splits into a known part, evaluated now
  by a ``cond`` on the same index, and an unknown part staged as a ``cond``;
  residuals of all branches are merged (each branch fills its own slots and
  zeros elsewhere) so that the branches keep one signature;
* transpose: the backward pass of every branch under one ``cond``;
* vmap: an unbatched index keeps a ``cond`` of batched branches; a batched
  index runs every branch and selects per lane (``select_n``);
* lowering: a real ``if``/``elif``/``else`` block in the generated code.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from fungrad import _config, core
from fungrad.core import (ClosedJaxpr, Primitive, ShapedArray, StagingTracer, Tracer,
                          bind_on, eval_jaxpr, get_aval)
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.partial_eval import partial_eval_jaxpr
from fungrad.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["cond", "switch", "scan", "fori_loop", "while_loop", "map", "associative_scan",
           "cond_p", "scan_p", "while_p", "while_lin_p", "while_lin_t_p"]


_jit = core.jit_module


# ----------------------------------------------------------------------------
# jax_disable_jit: cond/switch, scan (and fori_loop) and while_loop run as Python
# on the values (so that print and pdb see them), as JAX's do
# ----------------------------------------------------------------------------

def _python_control_flow() -> bool:
    return _config.disable_jit.value


def _python_scan(f, init, xs, length, reverse):
    """``scan`` as a Python loop; the ys are stacked with lax.concatenate."""
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


# ----------------------------------------------------------------------------
# Staging user functions into branch jaxprs
# ----------------------------------------------------------------------------

def _stage_branches(branches: Sequence[Callable], operands, who: str, labels=None):
    """Trace every branch on the operands' avals.

    Returns (branch jaxprs all taking ``hoisted + operand leaves``, the hoisted
    values, the operand leaves, the output tree).  Hoisted values are tracers
    of enclosing transformations that a branch closes over; they become
    explicit operands so that those transformations see them.
    """
    leaves, in_tree = tree_flatten(tuple(operands))
    leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
    avals = [get_aval(x).strip_weak_type() for x in leaves]
    staged = []
    for fn in branches:
        out_tree = []

        def flat(*xs, fn=fn, out_tree=out_tree):
            out_leaves, tree = tree_flatten(fn(*tree_unflatten(in_tree, list(xs))))
            out_tree.append(tree)
            return [x if isinstance(x, Tracer) else np.asarray(x) for x in out_leaves]
        jaxpr, consts = core.trace_to_jaxpr(flat, avals)
        closed, hoisted = _jit()._closure_convert(jaxpr, consts)
        staged.append((closed, hoisted, out_tree[0]))
    _check_same_outputs(staged, who, labels or [f"branch {i}" for i in range(len(staged))])
    hoisted = [h for _, hs, _ in staged for h in hs]
    all_avals = [get_aval(h) for h in hoisted] + avals
    unified, offset = [], 0
    for closed, hs, _ in staged:
        if len(hs) == len(hoisted):
            unified.append(closed)
        else:
            picks = list(range(offset, offset + len(hs))) + list(
                range(len(hoisted), len(all_avals)))
            unified.append(_select_inputs(closed, all_avals, picks))
        offset += len(hs)
    return tuple(unified), hoisted, leaves, staged[0][2]


def _check_same_outputs(staged, who, labels):
    tree0, avals0 = staged[0][2], [a.strip_weak_type() for a in staged[0][0].out_avals]
    for i, (closed, _, tree) in enumerate(staged[1:], 1):
        avals = [a.strip_weak_type() for a in closed.out_avals]
        if tree != tree0 or avals != avals0:
            raise TypeError(
                f"{who}: the branches must return the same types, but {labels[0]} returns "
                f"{tree0} with {[a.str_short() for a in avals0]} and {labels[i]} returns "
                f"{tree} with {[a.str_short() for a in avals]}")


def _select_inputs(closed: ClosedJaxpr, all_avals, picks) -> ClosedJaxpr:
    """``closed`` as a function of ``all_avals`` inputs, using those in ``picks``."""
    def fn(*xs):
        return eval_jaxpr(closed.jaxpr, closed.consts, *[xs[k] for k in picks])
    return _jit()._stage(fn, list(all_avals))


def _zeros_outputs(closed: ClosedJaxpr, before, after) -> ClosedJaxpr:
    """``closed`` with extra outputs: zeros of avals ``before`` and ``after``."""
    def fn(*xs):
        zeros = lambda avals: [ad.zeros_like_aval(a) for a in avals]
        return zeros(before) + eval_jaxpr(closed.jaxpr, closed.consts, *xs) + zeros(after)
    return _jit()._stage(fn, list(closed.in_avals))


# ----------------------------------------------------------------------------
# The primitive
# ----------------------------------------------------------------------------

cond_p = Primitive("cond", multiple_results=True)


def _cond_impl(index, *args, branches):
    comp = _jit().compiled(branches[int(np.clip(index, 0, len(branches) - 1))])
    return list(comp.fn(*comp.consts, *args))


def _cond_abstract_eval(index, *avals, branches):
    if index.shape != () or index.dtype.kind not in "iub":
        raise TypeError(f"cond/switch: the index must be an integer or boolean scalar, "
                        f"got {index.str_short()}")
    return list(branches[0].out_avals)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)


def _cached(kind, branches, extra, build):
    # derived branch tuples are cached on the first branch's identity plus the rest
    return _jit()._cached(kind, branches[0], (tuple(id(b) for b in branches[1:]), extra), build)


def _cond_jvp(primals, tangents, branches):
    index, *args = primals
    nonzero = tuple(type(t) is not Zero for t in tangents[1:])
    jvp_branches = _cached("cond_jvp", branches, nonzero,
                           lambda: tuple(_jvp_branch(br, nonzero) for br in branches))
    nz = [t for t in tangents[1:] if type(t) is not Zero]
    outs = cond_p.bind(index, *args, *nz, branches=jvp_branches)
    n = len(branches[0].out_avals)
    it = iter(outs[n:])
    t_out = [next(it) if ad.is_float(a.dtype) else Zero(ad.tangent_aval(a))
             for a in branches[0].out_avals]
    return outs[:n], t_out


def _jvp_branch(closed: ClosedJaxpr, nonzero) -> ClosedJaxpr:
    """The JVP of a branch with every float output's tangent instantiated."""
    n = len(closed.in_avals)

    def fn(*xs):
        it = iter(xs[n:])
        tangents = [next(it) if nz else Zero(ad.tangent_aval(a))
                    for nz, a in zip(nonzero, closed.in_avals)]
        outs, out_ts = ad.jvp_flat(lambda *p: eval_jaxpr(closed.jaxpr, closed.consts, *p),
                                   list(xs[:n]), tangents)
        return outs + [ad.instantiate_zeros(t) for t, a in zip(out_ts, closed.out_avals)
                       if ad.is_float(a.dtype)]
    t_avals = [ad.tangent_aval(a) for a, nz in zip(closed.in_avals, nonzero) if nz]
    return _jit()._stage(fn, list(closed.in_avals) + t_avals)


cond_p.jvp = _cond_jvp


def _cond_partial_eval(trace, args, branches):
    index, ops = args[0], args[1:]
    own = lambda x: isinstance(x, StagingTracer) and x._trace is trace
    if own(index):
        return trace.stage(cond_p, list(args), dict(branches=branches))
    unknowns = tuple(own(x) for x in ops)
    known, unknown, out_unknowns = _cached(
        "cond_pe", branches, unknowns, lambda: _split_branches(branches, unknowns))
    known_outs = bind_on(trace.parent, cond_p, [index] + [x for x, u in zip(ops, unknowns)
                                                        if not u], dict(branches=known))
    n_known = sum(not u for u in out_unknowns)
    residuals = known_outs[n_known:]
    staged = trace.stage(cond_p, [index] + list(residuals) + [x for x, u in zip(ops, unknowns) if u],
                         dict(branches=unknown))
    k, s = iter(known_outs[:n_known]), iter(staged)
    return [next(s) if u else next(k) for u in out_unknowns]


def _split_branches(branches, unknowns):
    """Known/unknown parts of every branch with one merged residual signature."""
    first = [partial_eval_jaxpr(br, list(unknowns)) for br in branches]
    out_unknowns = [any(p[2][i] for p in first) for i in range(len(branches[0].out_avals))]
    parts = [partial_eval_jaxpr(br, list(unknowns), instantiate=out_unknowns) for br in branches]
    res_avals = [list(k.out_avals[len(k.out_avals) - n:]) if n else []
                 for k, _, _, n in parts]
    known, unknown = [], []
    for i, (k, u, _, n) in enumerate(parts):
        before = [a for r in res_avals[:i] for a in r]
        after = [a for r in res_avals[i + 1:] for a in r]
        known.append(_place_residuals(k, n, before, after))
        all_res = before + res_avals[i] + after
        picks = list(range(len(before), len(before) + n)) + list(
            range(len(all_res), len(all_res) + len(u.in_avals) - n))
        unknown.append(_select_inputs(u, all_res + list(u.in_avals[n:]), picks))
    return tuple(known), tuple(unknown), out_unknowns


def _place_residuals(known: ClosedJaxpr, n_res, before, after) -> ClosedJaxpr:
    """Known outputs, then zeros for other branches' residuals around this one's."""
    n_out = len(known.out_avals) - n_res

    def fn(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        zeros = lambda avals: [ad.zeros_like_aval(a) for a in avals]
        return outs[:n_out] + zeros(before) + outs[n_out:] + zeros(after)
    return _jit()._stage(fn, list(known.in_avals))


cond_p.partial_eval = _cond_partial_eval


def _cond_transpose(cts, index, *args, branches):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    t_branches = _cached("cond_t", branches, linear,
                         lambda: tuple(_jit()._transpose_jaxpr(br, linear) for br in branches))
    residuals = [a for a in args if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate_zeros(c) for c in cts]
    outs = iter(cond_p.bind(index, *residuals, *cts, branches=t_branches))
    return [None] + [next(outs) if lin else None for lin in linear]


cond_p.transpose = _cond_transpose
cond_p.linear = True


def _cond_batch(axis_size, vals, dims, branches):
    from fungrad import lax
    index, *ops = vals
    idim, *odims = dims
    ops = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(ops, odims)]
    in_dims = tuple(None if d is None else 0 for d in odims)
    batched = _cached("cond_batch", branches, (in_dims, axis_size), lambda: tuple(
        _jit()._batch_jaxpr(br, in_dims, axis_size) for br in branches))
    if idim is None:
        outs = cond_p.bind(index, *ops, branches=batched)
        return outs, [0] * len(outs)
    # a batched index: every branch runs on the whole batch, lanes select
    per_branch = [eval_jaxpr(br.jaxpr, br.consts, *ops) for br in batched]
    index = batching.moveaxis(index, idim, 0)
    outs = []
    for k, aval in enumerate(batched[0].out_avals):
        which = lax.reshape(index, (axis_size,) + (1,) * (aval.ndim - 1))
        outs.append(lax.select_n(which, *[p[k] for p in per_branch]))
    return outs, [0] * len(outs)


cond_p.batch = _cond_batch


def _cond_emit(block, eqn, args, out_names):
    index, ops = args[0], args[1:]
    branches = eqn.params["branches"]
    for i, br in enumerate(branches):
        if i == 0:
            block.line(f"if {index} <= 0:" if len(branches) > 1 else "if True:")
        elif i < len(branches) - 1:
            block.line(f"elif {index} == {i}:")
        else:
            block.line("else:")
        outs = block.body(br, ops)
        if out_names:
            block.line(f"{', '.join(out_names)}{',' if len(out_names) == 1 else ''} = "
                       f"{', '.join(outs)}{',' if len(outs) == 1 else ''}", "    ")


cond_p.emit_block = _cond_emit


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------

def switch(index, branches: Sequence[Callable], *operands):
    """``branches[index](*operands)``, index clamped into range (``jax.lax.switch``)."""
    return _switch(index, branches, operands, "switch", None)


def _switch(index, branches, operands, who, labels):
    from fungrad import lax
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise TypeError("switch: branches must be a non-empty sequence of callables")
    index_aval = get_aval(index)
    if index_aval.shape != () or index_aval.dtype.kind not in "iub":
        raise TypeError(f"switch: the index must be an integer scalar, got "
                        f"{index_aval.str_short()}")
    if _python_control_flow() and not isinstance(index, Tracer):   # jax_disable_jit
        return branches[int(np.clip(np.asarray(index), 0, len(branches) - 1))](*operands)
    index = lax.convert_element_type(index, np.int32)
    index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    closed, hoisted, leaves, out_tree = _stage_branches(branches, operands, who, labels)
    outs = cond_p.bind(index, *hoisted, *leaves, branches=closed)
    return tree_unflatten(out_tree, outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (``jax.lax.cond``).

    Only the chosen branch runs (also in jit-generated code: an ``if`` block);
    under vmap with a batched predicate both run and lanes select.
    """
    pred_aval = get_aval(pred)
    if pred_aval.shape != ():
        raise TypeError(f"cond: the predicate must be a scalar, got {pred_aval.str_short()}; "
                        "use fungrad.numpy.where for elementwise selection, or vmap")
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun must be callables")
    from fungrad import lax
    if pred_aval.dtype != np.bool_:
        pred = lax.ne(pred, np.zeros((), pred_aval.dtype))
    return _switch(pred, [false_fun, true_fun], operands, "cond", ["false_fun", "true_fun"])


# ----------------------------------------------------------------------------
# scan: a loop carrying state, consuming and producing stacked arrays
# ----------------------------------------------------------------------------
# scan_p(*consts, *init, *xs, body, num_consts, num_carry, length, reverse)
#   body : (consts, carry, x slices) -> (carry, y slices)
# Rules: eval (a Python loop over the compiled body), JVP (with a fixpoint over
# which carries have nonzero tangents), partial eval (known scan now; unknown
# scan staged, consuming the per-iteration residuals as stacked xs), transpose
# (a scan running the other way, accumulating the consts' cotangents in the
# carry), vmap (carries batched), lowering (a real ``for`` loop).

scan_p = Primitive("scan", multiple_results=True)


def _split3(seq, num_consts, num_carry):
    return (list(seq[:num_consts]), list(seq[num_consts:num_consts + num_carry]),
            list(seq[num_consts + num_carry:]))


def _stack_ys(ys_per_iter, y_avals, length):
    if length == 0:
        return [np.zeros((0,) + a.shape, a.dtype) for a in y_avals]
    return [np.stack([np.asarray(it[k]) for it in ys_per_iter]) for k in range(len(y_avals))]


def _scan_impl(*args, body, num_consts, num_carry, length, reverse):
    comp = _jit().compiled(body)
    consts, carry, xs = _split3(args, num_consts, num_carry)
    order = range(length - 1, -1, -1) if reverse else range(length)
    ys = []
    for i in order:
        out = comp.fn(*comp.consts, *consts, *carry, *[x[i] for x in xs])
        carry, y = list(out[:num_carry]), out[num_carry:]
        ys.append(y)
    if reverse:
        ys.reverse()
    return [np.asarray(c) for c in carry] + _stack_ys(ys, body.out_avals[num_carry:], length)


def _scan_abstract_eval(*avals, body, num_consts, num_carry, length, reverse):
    _, carry, xs = _split3(avals, num_consts, num_carry)
    for i, (a, b) in enumerate(zip(carry, body.out_avals[:num_carry])):
        if a.strip_weak_type() != b.strip_weak_type():
            raise TypeError(f"scan: the body changes carry leaf {i} from {a.str_short()} to "
                            f"{b.str_short()}; the carry must keep its shape and dtype")
    for i, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise ValueError(f"scan: xs leaf {i} has shape {x.shape}, expected a leading "
                             f"axis of length {length}")
    ys = [ShapedArray((length,) + a.shape, a.dtype) for a in body.out_avals[num_carry:]]
    return list(body.out_avals[:num_carry]) + ys


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract_eval)


def _scan_jvp(primals, tangents, body, num_consts, num_carry, length, reverse):
    nz = [type(t) is not Zero for t in tangents]
    nz_consts, nz_carry, nz_xs = _split3(nz, num_consts, num_carry)
    for _ in range(num_carry + 1):          # fixpoint: a carry's tangent may become nonzero
        jvp_body, out_nz = _cached("scan_jvp", (body,), (tuple(nz_consts), tuple(nz_carry),
                                                          tuple(nz_xs)),
                                   lambda: _jvp_scan_body(body, num_consts, num_carry,
                                                          nz_consts, nz_carry, nz_xs))
        new = [a or b for a, b in zip(nz_carry, out_nz[:num_carry])]
        if new == nz_carry:
            break
        nz_carry = new
    consts, carry, xs = _split3(primals, num_consts, num_carry)
    t_consts, t_carry, t_xs = _split3(tangents, num_consts, num_carry)
    t_carry = [ad.instantiate_zeros(t) if n else None for t, n in zip(t_carry, nz_carry)]
    pick = lambda ts, flags: [t for t, f in zip(ts, flags) if f]
    args = (consts + pick(t_consts, nz_consts) + carry + pick(t_carry, nz_carry)
            + xs + pick(t_xs, nz_xs))
    outs = scan_p.bind(*args, body=jvp_body, num_consts=num_consts + sum(nz_consts),
                       num_carry=num_carry + sum(nz_carry), length=length, reverse=reverse)
    n_ct = sum(nz_carry)
    carry_out, ct_out, rest = outs[:num_carry], outs[num_carry:num_carry + n_ct], outs[num_carry + n_ct:]
    y_avals = body.out_avals[num_carry:]
    ys, yts = rest[:len(y_avals)], iter(rest[len(y_avals):])
    it = iter(ct_out)
    t_carry_out = [next(it) if n else Zero(ad.tangent_aval(a))
                   for n, a in zip(nz_carry, body.out_avals[:num_carry])]
    t_ys = [next(yts) if ad.is_float(a.dtype) else Zero(ad.tangent_aval(a)) for a in y_avals]
    return carry_out + ys, t_carry_out + t_ys


def _jvp_scan_body(body, num_consts, num_carry, nz_consts, nz_carry, nz_xs):
    """Body of the JVP scan: (consts, const tangents), (carry, carry tangents),
    (xs, xs tangents) -> (carry, carry tangents), (ys, float ys' tangents)."""
    avals = list(body.in_avals)
    c_av, k_av, x_av = _split3(avals, num_consts, num_carry)
    t = lambda avs, flags: [ad.tangent_aval(a) for a, f in zip(avs, flags) if f]
    in_avals = c_av + t(c_av, nz_consts) + k_av + t(k_av, nz_carry) + x_av + t(x_av, nz_xs)
    out_nz_box = []

    def fn(*xs):
        it = iter(xs)
        take = lambda n: [next(it) for _ in range(n)]
        primal, tang = [], []
        for avs, flags in ((c_av, nz_consts), (k_av, nz_carry), (x_av, nz_xs)):
            p = take(len(avs))
            ts = take(sum(flags))
            tit = iter(ts)
            primal += p
            tang += [next(tit) if f else Zero(ad.tangent_aval(a)) for a, f in zip(avs, flags)]
        outs, out_ts = ad.jvp_flat(lambda *a: eval_jaxpr(body.jaxpr, body.consts, *a), primal, tang)
        out_nz_box[:] = [type(o) is not Zero for o in out_ts]
        carry_t = [ad.instantiate_zeros(o) for o, f in zip(out_ts[:num_carry], nz_carry) if f]
        ys_t = [ad.instantiate_zeros(o) for o, a in zip(out_ts[num_carry:], body.out_avals[num_carry:])
                if ad.is_float(a.dtype)]
        return outs[:num_carry] + carry_t + outs[num_carry:] + ys_t
    return _jit()._stage(fn, in_avals), tuple(out_nz_box)


scan_p.jvp = _scan_jvp


def _scan_partial_eval(trace, args, body, num_consts, num_carry, length, reverse):
    own = lambda x: isinstance(x, StagingTracer) and x._trace is trace
    unknowns = [own(x) for x in args]
    u_consts, u_carry, u_xs = _split3(unknowns, num_consts, num_carry)
    for _ in range(num_carry + 1):          # fixpoint: an unknown carry stays unknown
        split = _cached("scan_pe", (body,), (tuple(u_consts), tuple(u_carry), tuple(u_xs)),
                        lambda: _split_scan_body(body, num_consts, num_carry,
                                                 u_consts, u_carry, u_xs))
        out_u = split[3]
        new = [a or b for a, b in zip(u_carry, out_u[:num_carry])]
        if new == u_carry:
            break
        u_carry = new
    known_body, invariants, unknown_body, out_u, num_res, num_inv, passed = split
    consts, carry, xs = _split3(args, num_consts, num_carry)
    k = lambda vals, flags: [v for v, f in zip(vals, flags) if not f]
    u = lambda vals, flags: [v for v, f in zip(vals, flags) if f]
    # residuals that depend on the consts only are computed once, not per iteration
    inv_res = bind_on(trace.parent, _jit().jit_p, k(consts, u_consts),
                      dict(jaxpr=invariants, name="scan_invariants")) if num_inv else []
    known_outs = bind_on(trace.parent, scan_p, k(consts, u_consts) + k(carry, u_carry) + k(xs, u_xs),
                         dict(body=known_body, num_consts=num_consts - sum(u_consts),
                              num_carry=num_carry - sum(u_carry), length=length, reverse=reverse))
    residuals = known_outs[len(known_outs) - num_res:] if num_res else []
    known_outs = known_outs[:len(known_outs) - num_res] if num_res else known_outs
    k_xs = k(xs, u_xs)
    staged = trace.stage(scan_p, u(consts, u_consts) + list(inv_res) + u(carry, u_carry)
                         + list(residuals) + [k_xs[j] for j in passed] + u(xs, u_xs),
                         dict(body=unknown_body, num_consts=sum(u_consts) + num_inv,
                              num_carry=sum(u_carry), length=length, reverse=reverse))
    ko, so = iter(known_outs), iter(staged)
    return [next(so) if f else next(ko) for f in out_u]


def _split_scan_body(body, num_consts, num_carry, u_consts, u_carry, u_xs):
    """Known body: (k consts, k carry, k xs) -> (k carry, k ys, stacked residuals);
    invariants: (k consts) -> residuals that depend on the consts only;
    unknown body: (u consts, invariants, u carry, stacked residuals, passed-through
    k xs, u xs) -> (u carry, u ys), where residuals that are slices of a known xs
    are read from that xs (by index, also returned) instead of being restacked."""
    unknowns = list(u_consts) + list(u_carry) + list(u_xs)
    inst = list(u_carry) + [False] * (len(body.out_avals) - num_carry)
    known, unknown, out_u, num_res = partial_eval_jaxpr(body, unknowns, instantiate=inst)
    # carries must be unknown on both sides or neither: force agreement
    out_u = [a or b for a, b in zip(out_u, inst)]
    n_kc, n_kcarry = num_consts - sum(u_consts), num_carry - sum(u_carry)
    kj = known.jaxpr
    residuals = kj.outvars[len(kj.outvars) - num_res:]
    invariant = _const_only(kj, n_kc)[len(kj.outvars) - num_res:]
    k_xs = list(kj.invars[n_kc + n_kcarry:])
    passed = [k_xs.index(r) if not inv and r in k_xs else None
              for r, inv in zip(residuals, invariant)]
    stacked = [not inv and j is None for inv, j in zip(invariant, passed)]
    known, invariants = _hoist_invariants(known, num_res, n_kc, invariant, stacked)
    n_uc, n_ucarry = sum(u_consts), sum(u_carry)
    inv_pos = [i for i, f in enumerate(invariant) if f]
    var_pos = [i for i, f in enumerate(stacked) if f]
    pass_pos = [i for i, j in enumerate(passed) if j is not None]
    # reorder the unknown body's inputs from (res, consts, carry, xs) to
    # (consts, invariant res, carry, stacked res, passed-through res, xs)
    n_u_in = len(unknown.in_avals) - num_res
    order = (list(range(num_res, num_res + n_uc)) + inv_pos
             + list(range(num_res + n_uc, num_res + n_uc + n_ucarry)) + var_pos + pass_pos
             + list(range(num_res + n_uc + n_ucarry, num_res + n_u_in)))
    all_avals = list(unknown.in_avals)
    picks = [order.index(i) for i in range(len(all_avals))]
    unknown = _select_inputs(unknown, [all_avals[i] for i in order], picks)
    return (known, invariants, unknown, tuple(out_u), len(var_pos), len(inv_pos),
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
    from fungrad.interpreters.partial_eval import dce_jaxpr
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


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _split3(args, num_consts, num_carry)
    lin = ad.is_undefined_primal
    # non-linear consts are loop-invariant residuals (see _hoist_invariants);
    # a carry whose initial value is known here is an instantiated zero tangent
    # (see _scan_jvp): it gets a cotangent like the others, which is dropped
    c_lin = tuple(lin(c) for c in consts)
    x_lin = tuple(lin(x) for x in xs)
    res_consts = [c for c in consts if not lin(c)]
    lin_consts = [c for c in consts if lin(c)]
    res = [x for x in xs if not lin(x)]
    t_body = _cached("scan_t", (body,), (c_lin, x_lin),
                     lambda: _transpose_scan_body(body, num_consts, num_carry, c_lin, x_lin))
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    ct_consts0 = [ad.zeros_like_aval(c.aval) for c in lin_consts]
    ct_carry = [ad.instantiate_zeros(c) for c in ct_carry]
    ct_ys = [ad.instantiate_zeros(c) for c in ct_ys]
    n_lc = len(lin_consts)
    outs = scan_p.bind(*res_consts, *ct_consts0, *ct_carry, *res, *ct_ys, body=t_body,
                       num_consts=len(res_consts), num_carry=n_lc + num_carry, length=length,
                       reverse=not reverse)
    ct_c, ct_k, ct_x = iter(outs[:n_lc]), outs[n_lc:n_lc + num_carry], iter(outs[n_lc + num_carry:])
    ct_k = [c if lin(k) else None for c, k in zip(ct_k, carry)]
    return ([next(ct_c) if f else None for f in c_lin] + ct_k
            + [next(ct_x) if f else None for f in x_lin])


def _transpose_scan_body(body, num_consts, num_carry, c_lin, x_lin):
    """(res consts), (ct linear consts acc, ct carry), (res x slices, ct y slices) ->
    (ct consts acc + this step's, ct carry in), ct of the linear x slices."""
    jaxpr = body.jaxpr
    c_v, k_v, x_v = _split3(jaxpr.invars, num_consts, num_carry)
    res_c_v = [v for v, f in zip(c_v, c_lin) if not f]
    lin_c_v = [v for v, f in zip(c_v, c_lin) if f]
    res_v = [v for v, f in zip(x_v, x_lin) if not f]
    lin_x_v = [v for v, f in zip(x_v, x_lin) if f]
    as_linear = core.Jaxpr(jaxpr.constvars + res_c_v + res_v, lin_c_v + k_v + lin_x_v,
                           jaxpr.eqns, jaxpr.outvars)
    n_rc, n_lc, n_res = len(res_c_v), len(lin_c_v), len(res_v)

    def fn(*xs):
        res_c, acc = xs[:n_rc], xs[n_rc:n_rc + n_lc]
        ct_carry = xs[n_rc + n_lc:n_rc + n_lc + num_carry]
        rest = xs[n_rc + n_lc + num_carry:]
        res, ct_ys = rest[:n_res], rest[n_res:]
        cts_in = ad.backward_pass(as_linear, list(body.consts) + list(res_c) + list(res),
                                  list(ct_carry) + list(ct_ys))
        cts_in = [ad.instantiate_zeros(c) for c in cts_in]
        new_acc = [ad.add_tangents(a, c) for a, c in zip(acc, cts_in[:n_lc])]
        return new_acc + cts_in[n_lc:]
    avals = ([v.aval for v in res_c_v] + [v.aval for v in lin_c_v] + [v.aval for v in k_v]
             + [v.aval for v in res_v] + [ad.tangent_aval(a) for a in body.out_avals[num_carry:]])
    return _jit()._stage(fn, avals)


scan_p.transpose = _scan_transpose
scan_p.linear = True


def _scan_batch(axis_size, vals, dims, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _split3(vals, num_consts, num_carry)
    c_d, k_d, x_d = _split3(dims, num_consts, num_carry)
    consts = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(consts, c_d)]
    carry = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(carry, k_d)]   # all batched
    xs = [v if d is None else batching.moveaxis(v, d, 1) for v, d in zip(xs, x_d)]
    in_dims = (tuple(None if d is None else 0 for d in c_d) + (0,) * num_carry
               + tuple(None if d is None else 0 for d in x_d))
    b_body = _cached("scan_batch", (body,), (in_dims, axis_size),
                     lambda: _jit()._batch_jaxpr(body, in_dims, axis_size))
    outs = scan_p.bind(*consts, *carry, *xs, body=b_body, num_consts=num_consts,
                       num_carry=num_carry, length=length, reverse=reverse)
    return outs, [0] * num_carry + [1] * (len(outs) - num_carry)


scan_p.batch = _scan_batch


def _scan_emit(block, eqn, args, out_names):
    p = eqn.params
    body, nc, nk, length = p["body"], p["num_consts"], p["num_carry"], p["length"]
    consts, carry, xs = _split3(args, nc, nk)
    carry_names, ys_names = out_names[:nk], out_names[nk:]
    i = block.names.new(core.Var(ShapedArray((), np.int64)))
    for c, n in zip(carry_names, carry):
        block.line(f"{c} = {n}")
    lists = [f"{y}_list" for y in ys_names]
    for l in lists:
        block.line(f"{l} = []")
    rng = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
    block.line(f"for {i} in {rng}:")
    outs = block.body(body, list(consts) + carry_names + [f"{x}[{i}]" for x in xs])
    # ys first: a y may be the incoming carry; then all carries at once (they may swap)
    for l, o in zip(lists, outs[nk:]):
        block.line(f"{l}.append({o})", "    ")
    if nk:
        block.line(f"{', '.join(carry_names)}, = {', '.join(outs[:nk])},", "    ")
    for y, l, a in zip(ys_names, lists, body.out_avals[nk:]):
        rev = "[::-1]" if p["reverse"] else ""
        block.line(f"{y} = np.stack({l}{rev}) if {l} else "
                   f"np.zeros((0,) + {a.shape!r}, np.{a.dtype.name})")


scan_p.emit_block = _scan_emit


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int = 1):
    """``jax.lax.scan``: ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``;
    returns ``(final carry, stacked ys)``.  ``unroll`` is accepted and ignored
    (the generated code is a Python ``for`` loop either way)."""
    init_leaves, init_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
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
    n = lengths.pop()
    if _python_control_flow():                                    # jax_disable_jit
        return _python_scan(f, init, xs, n, reverse)
    init_leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in init_leaves]
    xs_leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in xs_leaves]
    carry_avals = [get_aval(x).strip_weak_type() for x in init_leaves]
    x_avals = [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in xs_leaves]
    y_tree_box = []

    def flat(*leaves):
        carry = tree_unflatten(init_tree, list(leaves[:len(carry_avals)]))
        x = tree_unflatten(xs_tree, list(leaves[len(carry_avals):]))
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: the body must return a pair (carry, y)")
        c_leaves, c_tree = tree_flatten(out[0])
        if c_tree != init_tree:
            raise TypeError(f"scan: the body returns a carry with structure {c_tree}, "
                            f"but the initial carry has structure {init_tree}")
        y_leaves, y_tree = tree_flatten(out[1])
        y_tree_box.append(y_tree)
        as_val = lambda v: v if isinstance(v, Tracer) else np.asarray(v)
        return [as_val(v) for v in c_leaves] + [as_val(v) for v in y_leaves]
    jaxpr, consts = core.trace_to_jaxpr(flat, carry_avals + x_avals)
    closed, hoisted = _jit()._closure_convert(jaxpr, consts)
    for i, (a, b) in enumerate(zip(carry_avals, closed.out_avals)):
        if a != b.strip_weak_type():
            raise TypeError(f"scan: the body changes carry leaf {i} from {a.str_short()} to "
                            f"{b.str_short()}; the carry must keep its shape and dtype")
    outs = scan_p.bind(*hoisted, *init_leaves, *xs_leaves, body=closed, num_consts=len(hoisted),
                       num_carry=len(carry_avals), length=n, reverse=bool(reverse))
    k = len(carry_avals)
    return tree_unflatten(init_tree, outs[:k]), tree_unflatten(y_tree_box[0], outs[k:])


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
    from fungrad import numpy as fnp
    from fungrad.api import vmap
    leaves, tree = tree_flatten(xs)
    n = np.shape(leaves[0])[0] if leaves else 0
    n_full = (n // batch_size) * batch_size
    chunks = [fnp.reshape(x[:n_full], (n // batch_size, batch_size) + np.shape(x)[1:])
              for x in leaves]
    out = scan(lambda c, x: (c, vmap(f)(tree_unflatten(tree, list(x)))), None, chunks)[1]
    out_leaves, out_tree = tree_flatten(out)
    out_leaves = [fnp.reshape(y, (n_full,) + np.shape(y)[2:]) for y in out_leaves]
    if n_full < n:
        rest = tree_flatten(vmap(f)(tree_unflatten(tree, [x[n_full:] for x in leaves])))[0]
        out_leaves = [fnp.concatenate([a, b]) for a, b in zip(out_leaves, rest)]
    return tree_unflatten(out_tree, out_leaves)


# ----------------------------------------------------------------------------
# while_loop: iterate while a predicate holds (trip count known only at run time)
# ----------------------------------------------------------------------------
# while_p(*cond_consts, *body_consts, *init, cond, body, cond_nconsts, body_nconsts)
# Rules: eval (a Python while loop over compiled code), JVP (fixpoint over
# nonzero carry tangents; the predicate ignores tangents), vmap (every carry
# batched: the loop runs while any lane's predicate holds and only live lanes
# update), lowering (a real ``while`` loop), partial eval (reverse mode,
# beyond JAX: count the iterations, then differentiate as a scan of that
# length; inside jit, a run-time tape: while_lin_p below).

while_p = Primitive("while", multiple_results=True)


def _while_impl(*args, cond, body, cond_nconsts, body_nconsts):
    jit = _jit()
    c_comp, b_comp = jit.compiled(cond), jit.compiled(body)
    c_consts, b_consts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    while c_comp.fn(*c_comp.consts, *c_consts, *carry)[0]:
        carry = list(b_comp.fn(*b_comp.consts, *b_consts, *carry))
    return [np.asarray(c) for c in carry]


def _while_abstract_eval(*avals, cond, body, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    for i, (a, b) in enumerate(zip(carry, body.out_avals)):
        if a.strip_weak_type() != b.strip_weak_type():
            raise TypeError(f"while_loop: the body changes carry leaf {i} from {a.str_short()} "
                            f"to {b.str_short()}; the carry must keep its shape and dtype")
    return list(body.out_avals)


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract_eval)


def _while_jvp(primals, tangents, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    c_consts, b_consts, carry = primals[:nc], primals[nc:nc + nb], primals[nc + nb:]
    t_bconsts, t_carry = tangents[nc:nc + nb], tangents[nc + nb:]
    nz_b = [type(t) is not Zero for t in t_bconsts]
    nz_carry = [type(t) is not Zero for t in t_carry]
    for _ in range(len(carry) + 1):        # fixpoint over carries with nonzero tangents
        jvp_body, out_nz = _cached("while_jvp", (body,), (tuple(nz_b), tuple(nz_carry)),
                                   lambda: _jvp_scan_body(body, nb, len(carry), nz_b, nz_carry, []))
        new = [a or b for a, b in zip(nz_carry, out_nz[:len(carry)])]
        if new == nz_carry:
            break
        nz_carry = new
    n_t = sum(nz_carry)
    t_cond = _cached("while_cond_t", (cond,), n_t,
                     lambda: _select_inputs(cond, list(cond.in_avals) + [
                         ad.tangent_aval(a) for a, f in zip(body.out_avals, nz_carry) if f],
                         list(range(len(cond.in_avals)))))
    pick = lambda ts, flags: [ad.instantiate_zeros(t) for t, f in zip(ts, flags) if f]
    outs = while_p.bind(*c_consts, *b_consts, *pick(t_bconsts, nz_b), *carry,
                        *pick(t_carry, nz_carry), cond=t_cond, body=jvp_body,
                        cond_nconsts=nc, body_nconsts=nb + sum(nz_b))
    it = iter(outs[len(carry):])
    return outs[:len(carry)], [next(it) if f else Zero(ad.tangent_aval(a))
                               for f, a in zip(nz_carry, body.out_avals)]


while_p.jvp = _while_jvp


def _while_partial_eval(trace, args, cond, body, cond_nconsts, body_nconsts):
    """Reverse mode of ``while_loop`` (beyond JAX, which refuses it).

    The loop's known part runs first, counting its iterations ``N``.  When the
    count is concrete (eagerly, under vmap: the most any lane needs), the loop
    is differentiated as a ``scan`` of length ``N`` over its body: one set of
    residuals per iteration, every order and transform a scan supports; lanes
    that finish earlier keep their carry (the scan body selects on the
    predicate); the primal loop runs twice (count, then the scan's known part).
    Inside a staged function (jit) the count exists only at run time: the
    linear part becomes ``while_lin_p``, which replays the known loop at run
    time recording its residuals in a Python list.
    """
    nc, nb = cond_nconsts, body_nconsts
    own = lambda x: isinstance(x, StagingTracer) and x._trace is trace
    unknown = [own(x) for x in args]
    u_cc, u_bc, u_carry = unknown[:nc], unknown[nc:nc + nb], unknown[nc + nb:]
    for _ in range(len(u_carry) + 1):       # fixpoint: which carries stay unknown
        out_u = _cached("while_pe_flags", (body,), (tuple(u_bc), tuple(u_carry)),
                        lambda: partial_eval_jaxpr(body, u_bc + u_carry)[2])
        new = [a or b for a, b in zip(u_carry, out_u)]
        if new == u_carry:
            break
        u_carry = new
    if any(u_cc) or any(_cached("while_pe_flags", (cond,), (tuple(u_cc), tuple(u_carry)),
                                lambda: partial_eval_jaxpr(cond, u_cc + u_carry)[2])):
        # the predicate itself depends on unknown values: nothing to split
        return trace.stage(while_p, list(args), dict(cond=cond, body=body, cond_nconsts=nc,
                                                     body_nconsts=nb))
    known = [x for x, u in zip(args, u_cc + u_bc + u_carry) if not u]
    counts, known_outs = _count_iterations(trace.parent, known, cond, body, nc, nb, u_bc, u_carry)
    if counts is None:
        return _while_partial_eval_staged(trace, args, known_outs, cond, body, nc, nb,
                                          u_bc, u_carry)
    n_max = int(counts.max()) if counts.size else 0
    masked = bool(counts.size and counts.min() != n_max)
    scan_body = _cached("while_as_scan", (cond, body), (nc, nb, masked),
                        lambda: _while_body_as_scan(cond, body, nc, nb, masked))
    scan_args = list(args) if masked else list(args[nc:])
    return _scan_partial_eval(trace, scan_args, body=scan_body,
                              num_consts=(nc if masked else 0) + nb,
                              num_carry=len(args) - nc - nb, length=n_max, reverse=False)


def _count_iterations(parent, known, cond, body, nc, nb, u_bc, u_carry):
    """Run the loop's known part on ``parent`` with a counter: (the counter's
    concrete values, one per vmap lane, or None when they exist only at run
    time; the known carries' final values)."""
    counter = _cached("while_count", (cond, body), (tuple(u_bc), tuple(u_carry)),
                      lambda: _counting_loop(cond, body, nc, nb, u_bc, u_carry))
    c_cond, c_body = counter
    k_bc = sum(not u for u in u_bc)
    outs = bind_on(parent, while_p, known[:nc] + known[nc:nc + k_bc] + [np.int64(0)]
                   + known[nc + k_bc:], dict(cond=c_cond, body=c_body, cond_nconsts=nc,
                                             body_nconsts=k_bc))
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


def _counting_loop(cond, body, nc, nb, u_bc, u_carry):
    """A while loop over (counter, known carries) only: unknown inputs are fed
    zeros, which the known outputs cannot depend on (fixpoint above)."""
    from fungrad import lax
    carry_avals = list(body.out_avals)
    k_bc_avals = [a for a, u in zip(body.in_avals[:nb], u_bc) if not u]
    k_carry_avals = [a for a, u in zip(carry_avals, u_carry) if not u]

    def fill(vals, flags, avals):
        it = iter(vals)
        return [ad.zeros_like_aval(a) if u else next(it) for u, a in zip(flags, avals)]

    def cond_fn(*xs):
        kc = fill(xs[nc + 1:], u_carry, carry_avals)
        return eval_jaxpr(cond.jaxpr, cond.consts, *xs[:nc], *kc)

    def body_fn(*xs):
        bc = fill(xs[:len(k_bc_avals)], u_bc, body.in_avals[:nb])
        count, kc = xs[len(k_bc_avals)], fill(xs[len(k_bc_avals) + 1:], u_carry, carry_avals)
        outs = eval_jaxpr(body.jaxpr, body.consts, *bc, *kc)
        return [lax.add(count, np.int64(1))] + [o for o, u in zip(outs, u_carry) if not u]
    count_aval = ShapedArray((), np.dtype(np.int64))
    jit = _jit()
    return (jit._stage(cond_fn, list(cond.in_avals[:nc]) + [count_aval] + k_carry_avals),
            jit._stage(body_fn, k_bc_avals + [count_aval] + k_carry_avals))


def _while_body_as_scan(cond, body, nc, nb, masked) -> ClosedJaxpr:
    """The loop body as a scan body ``(consts, carry) -> (carry,)``; ``masked``
    keeps the carry of lanes whose predicate no longer holds."""
    from fungrad import lax

    def fn(*xs):
        carry = list(xs[(nc if masked else 0) + nb:])
        b_consts = xs[nc:nc + nb] if masked else xs[:nb]
        new = eval_jaxpr(body.jaxpr, body.consts, *b_consts, *carry)
        if not masked:
            return new
        live = eval_jaxpr(cond.jaxpr, cond.consts, *xs[:nc], *carry)[0]
        return [lax.select(live, n, c) for n, c in zip(new, carry)]
    avals = (list(cond.in_avals[:nc]) if masked else []) + list(body.in_avals)
    return _jit()._stage(fn, avals)


while_p.partial_eval = _while_partial_eval


# ----------------------------------------------------------------------------
# Reverse mode of a staged while_loop: a run-time tape
# ----------------------------------------------------------------------------
# while_lin_p(*cond_consts, *known_body_consts, *known_init, *u_body_consts, *u_init,
#             cond, known, lin, n_cc, n_kb, n_kc)
#   replays the loop's known part (cond: (cc, kc) -> pred; known: (kb, kc) ->
#   (kc, residuals)), appending each iteration's residuals to a Python list,
#   then applies the linear part lin: (residuals, ub, uc) -> uc once per entry.
#   Linear in (ub, uc).  Its transpose while_lin_t_p replays the loop the same
#   way and runs lin's transpose over the list backwards.  Memory: one set of
#   residuals per iteration, alive during that call only.  vmap masks
#   finished lanes; forward mode records residual tangents (so jit(hessian)
#   works); reverse mode over the transpose raises.

while_lin_p = Primitive("while_lin", multiple_results=True)
while_lin_t_p = Primitive("while_lin_t", multiple_results=True)


def _while_partial_eval_staged(trace, args, known_outs, cond, body, nc, nb, u_bc, u_carry):
    cond_k, known, lin, _ = _cached("while_lin", (cond, body), (tuple(u_bc), tuple(u_carry)),
                                    lambda: _split_while(cond, body, nc, nb, u_bc, u_carry))
    b_consts, carry = list(args[nc:nc + nb]), list(args[nc + nb:])
    k = lambda vals, flags: [v for v, f in zip(vals, flags) if not f]
    u = lambda vals, flags: [v for v, f in zip(vals, flags) if f]
    staged = trace.stage(while_lin_p, list(args[:nc]) + k(b_consts, u_bc) + k(carry, u_carry)
                         + u(b_consts, u_bc) + u(carry, u_carry),
                         dict(cond=cond_k, known=known, lin=lin, n_cc=nc,
                              n_kb=nb - sum(u_bc), n_kc=len(carry) - sum(u_carry)))
    ko, so = iter(known_outs), iter(staged)
    return [next(so) if f else next(ko) for f in u_carry]


def _split_while(cond, body, nc, nb, u_bc, u_carry):
    """(cond on the known carries, known body (kb, kc) -> (kc, residuals),
    linear body (residuals, ub, uc) -> uc, number of residuals)."""
    carry_avals = list(body.out_avals)

    def cond_fn(*xs):
        it = iter(xs[nc:])
        kc = [ad.zeros_like_aval(a) if f else next(it) for f, a in zip(u_carry, carry_avals)]
        return eval_jaxpr(cond.jaxpr, cond.consts, *xs[:nc], *kc)
    k_carry_avals = [a for a, f in zip(carry_avals, u_carry) if not f]
    cond_k = _jit()._stage(cond_fn, list(cond.in_avals[:nc]) + k_carry_avals)
    known, lin, _, num_res = partial_eval_jaxpr(body, list(u_bc) + list(u_carry),
                                                instantiate=list(u_carry))
    return cond_k, known, lin, num_res


def _record_tape(cond, known, cc, kb, kc, n_kc):
    c_comp, k_comp = _jit().compiled(cond), _jit().compiled(known)
    tape = []
    while c_comp.fn(*c_comp.consts, *cc, *kc)[0]:
        outs = k_comp.fn(*k_comp.consts, *kb, *kc)
        kc, res = outs[:n_kc], outs[n_kc:]
        tape.append(res)
    return tape


def _split_lin_args(args, n_cc, n_kb, n_kc):
    a, b, c = n_cc, n_cc + n_kb, n_cc + n_kb + n_kc
    return list(args[:a]), list(args[a:b]), list(args[b:c]), list(args[c:])


def _while_lin_impl(*args, cond, known, lin, n_cc, n_kb, n_kc):
    cc, kb, kc, rest = _split_lin_args(args, n_cc, n_kb, n_kc)
    n_uc = len(lin.out_avals)
    ub, uc = rest[:len(rest) - n_uc], rest[len(rest) - n_uc:]
    comp = _jit().compiled(lin)
    for res in _record_tape(cond, known, cc, kb, kc, n_kc):
        uc = list(comp.fn(*comp.consts, *res, *ub, *uc))
    return [np.asarray(x) for x in uc]


def _while_lin_transpose(cts, *args, cond, known, lin, n_cc, n_kb, n_kc):
    cc, kb, kc, rest = _split_lin_args(args, n_cc, n_kb, n_kc)
    # a linear input known here is an instantiated zero tangent (see _while_jvp):
    # it gets a cotangent like the others, which is dropped
    num_res = len(lin.in_avals) - len(rest)
    lin_t = _cached("while_lin_t", (lin,), num_res, lambda: _jit()._transpose_jaxpr(
        lin, (False,) * num_res + (True,) * len(rest)))
    cts = [ad.instantiate_zeros(c) for c in cts]
    outs = while_lin_t_p.bind(*cc, *kb, *kc, *cts, cond=cond, known=known, lin_t=lin_t,
                              n_cc=n_cc, n_kb=n_kb, n_kc=n_kc)
    return [None] * (n_cc + n_kb + n_kc) + [ct if ad.is_undefined_primal(x) else None
                                            for ct, x in zip(outs, rest)]


def _while_lin_t_impl(*args, cond, known, lin_t, n_cc, n_kb, n_kc):
    cc, kb, kc, ct_uc = _split_lin_args(args, n_cc, n_kb, n_kc)
    n_ub = len(lin_t.out_avals) - len(ct_uc)
    acc = [np.zeros(a.shape, a.dtype) for a in lin_t.out_avals[:n_ub]]
    comp = _jit().compiled(lin_t)
    for res in reversed(_record_tape(cond, known, cc, kb, kc, n_kc)):
        outs = comp.fn(*comp.consts, *res, *ct_uc)
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


while_lin_p.def_impl(_while_lin_impl)
while_lin_p.def_abstract_eval(lambda *avals, lin, **params: list(lin.out_avals))
while_lin_p.transpose = _while_lin_transpose
while_lin_p.linear = True
while_lin_t_p.def_impl(_while_lin_t_impl)
while_lin_t_p.def_abstract_eval(lambda *avals, lin_t, **params: list(lin_t.out_avals))
# Forward mode over the tape primitives (jvp/jacfwd of a derivative taken
# inside jit, e.g. jit(hessian(f)) = jacfwd(jacrev)): the same primitive over a
# tape of (residuals, their tangents) recorded by the known loop's JVP, with
# the JVP of the per-step map; output tangents come out as extra carries.
# Only float values get tangent slots.

def _jvp_step(step: ClosedJaxpr, in_groups, out_groups) -> ClosedJaxpr:
    """``step`` with each consecutive input group followed by its (float) tangents,
    returning each output group followed by its (float) tangents."""
    avals = list(step.in_avals)
    floats = [ad.is_float(a.dtype) for a in avals]
    out_floats = [ad.is_float(a.dtype) for a in step.out_avals]

    def fn(*xs):
        primal, tangent, i, j = [], [], 0, 0
        for n in in_groups:
            group = avals[j:j + n]
            primal += xs[i:i + n]
            i += n
            it = iter(xs[i:i + sum(floats[j:j + n])])
            tangent += [next(it) if f else ad.Zero(ad.tangent_aval(a))
                        for f, a in zip(floats[j:j + n], group)]
            i, j = i + sum(floats[j:j + n]), j + n
        outs, t_outs = ad.jvp_flat(lambda *a: eval_jaxpr(step.jaxpr, step.consts, *a),
                                   primal, tangent)
        result, k = [], 0
        for n in out_groups:
            result += outs[k:k + n] + [ad.instantiate_zeros(t) for t, f
                                       in zip(t_outs[k:k + n], out_floats[k:k + n]) if f]
            k += n
        return result
    in_avals, j = [], 0
    for n in in_groups:
        group = avals[j:j + n]
        in_avals += group + [a.strip_weak_type() for a in group if ad.is_float(a.dtype)]
        j += n
    return _jit()._stage(fn, in_avals)


def _with_float_tangents(primals, tangents):
    """Each value followed by the tangents of the float ones (zeros instantiated)."""
    return list(primals) + [ad.instantiate_zeros(t) for p, t in zip(primals, tangents)
                            if ad.is_float(get_aval(p).dtype)]


def _jvp_tape(cond, known, n_cc, n_kb, n_kc, num_res):
    kc_avals = list(known.in_avals[n_kb:])
    kc_dot = [a for a in kc_avals if ad.is_float(a.dtype)]
    cond_j = _select_inputs(cond, list(cond.in_avals) + kc_dot, list(range(n_cc + n_kc)))
    return cond_j, _jvp_step(known, [n_kb, n_kc], [n_kc, num_res])


def _n_float(avals):
    return sum(ad.is_float(a.dtype) for a in avals)


def _while_lin_jvp(primals, tangents, cond, known, lin, n_cc, n_kb, n_kc):
    cc, kb, kc, rest = _split_lin_args(primals, n_cc, n_kb, n_kc)
    _, t_kb, t_kc, t_rest = _split_lin_args(tangents, n_cc, n_kb, n_kc)
    n_uc = len(lin.out_avals)
    num_res = len(lin.in_avals) - len(rest)
    n_ub = len(rest) - n_uc
    cond_j, known_j, lin_j = _cached("while_lin_jvp", (cond, known, lin), None, lambda: (
        *_jvp_tape(cond, known, n_cc, n_kb, n_kc, num_res),
        _jvp_step(lin, [num_res, n_ub, n_uc], [n_uc])))
    outs = while_lin_p.bind(
        *cc, *_with_float_tangents(kb, t_kb), *_with_float_tangents(kc, t_kc),
        *_with_float_tangents(rest[:n_ub], t_rest[:n_ub]),
        *_with_float_tangents(rest[n_ub:], t_rest[n_ub:]),
        cond=cond_j, known=known_j, lin=lin_j, n_cc=n_cc,
        n_kb=n_kb + _n_float(known.in_avals[:n_kb]), n_kc=n_kc + _n_float(known.in_avals[n_kb:]))
    return _split_tangent_outputs(outs, [n_uc], lin.out_avals)


def _split_tangent_outputs(outs, groups, avals):
    """Undo the (group, its float tangents) interleaving of a jvp'd primitive's outputs."""
    primal, tangent, i, j = [], [], 0, 0
    for n in groups:
        group = list(avals[j:j + n])
        primal += outs[i:i + n]
        it = iter(outs[i + n:i + n + _n_float(group)])
        tangent += [next(it) if ad.is_float(a.dtype) else ad.Zero(ad.tangent_aval(a))
                    for a in group]
        i, j = i + n + _n_float(group), j + n
    return primal, tangent


def _while_lin_t_jvp(primals, tangents, cond, known, lin_t, n_cc, n_kb, n_kc):
    cc, kb, kc, ct = _split_lin_args(primals, n_cc, n_kb, n_kc)
    _, t_kb, t_kc, t_ct = _split_lin_args(tangents, n_cc, n_kb, n_kc)
    n_ct = len(ct)
    n_ub = len(lin_t.out_avals) - n_ct
    num_res = len(lin_t.in_avals) - n_ct
    cond_j, known_j, lin_t_j = _cached("while_lin_t_jvp", (cond, known, lin_t), None, lambda: (
        *_jvp_tape(cond, known, n_cc, n_kb, n_kc, num_res),
        _jvp_step(lin_t, [num_res, n_ct], [n_ub, n_ct])))
    outs = while_lin_t_p.bind(
        *cc, *_with_float_tangents(kb, t_kb), *_with_float_tangents(kc, t_kc),
        *_with_float_tangents(ct, t_ct), cond=cond_j, known=known_j, lin_t=lin_t_j,
        n_cc=n_cc, n_kb=n_kb + _n_float(known.in_avals[:n_kb]),
        n_kc=n_kc + _n_float(known.in_avals[n_kb:]))
    return _split_tangent_outputs(outs, [n_ub, n_ct], lin_t.out_avals)


while_lin_p.jvp = _while_lin_jvp
while_lin_t_p.jvp = _while_lin_t_jvp
# (the transpose of a jvp'd tape would need a tape of the tape)
while_lin_t_p.transpose = _reverse_over_reverse


# vmap of the tape primitives: every carry batched, the loop runs while any lane
# is live, each tape entry also records which lanes were live, and the linear
# step leaves the others unchanged (so the transposed step passes their
# cotangents through and adds nothing for them)

def _lane_mask(live, x):
    from fungrad import lax
    return lax.reshape(live, live.shape + (1,) * (get_aval(x).ndim - 1))


def _masked_tape(cond, known, axis_size, c_dims, b_dims, n_kc):
    """(cond: any lane live, known: (cc, kb, kc) -> (kc, live, residuals))."""
    from fungrad import lax
    jit = _jit()
    n_cc, n_kb = len(c_dims), len(b_dims)
    b_cond = jit._batch_jaxpr(cond, c_dims + (0,) * n_kc, axis_size)
    b_known = jit._batch_jaxpr(known, b_dims + (0,) * n_kc, axis_size)

    def any_fn(*xs):
        return [lax.reduce_or(eval_jaxpr(b_cond.jaxpr, b_cond.consts, *xs)[0], (0,))]

    def known_fn(*xs):
        cc, kb, kc = xs[:n_cc], xs[n_cc:n_cc + n_kb], list(xs[n_cc + n_kb:])
        live = eval_jaxpr(b_cond.jaxpr, b_cond.consts, *cc, *kc)[0]
        outs = eval_jaxpr(b_known.jaxpr, b_known.consts, *kb, *kc)
        new_kc = [lax.select(_lane_mask(live, o), o, c) for o, c in zip(outs[:n_kc], kc)]
        return new_kc + [live] + list(outs[n_kc:])
    c_avals = list(b_cond.in_avals)
    return (jit._stage(any_fn, c_avals),
            jit._stage(known_fn, c_avals[:n_cc] + list(b_known.in_avals)))


def _batched_tape_args(axis_size, vals, dims, n_cc, n_kb, n_kc, n_rest_batched):
    """Consts moved to axis 0 (dims recorded); carries and the last
    ``n_rest_batched`` inputs batched at 0."""
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    n_fixed = len(vals) - n_rest_batched
    out = list(vals[:n_cc + n_kb])
    out += [batching.bdim_at_front(v, d, axis_size)
            for v, d in zip(vals[n_cc + n_kb:n_cc + n_kb + n_kc], dims[n_cc + n_kb:])]
    out += list(vals[n_cc + n_kb + n_kc:n_fixed])
    out += [batching.bdim_at_front(v, d, axis_size)
            for v, d in zip(vals[n_fixed:], dims[n_fixed:])]
    return out, tuple(dims)


def _while_lin_batch(axis_size, vals, dims, cond, known, lin, n_cc, n_kb, n_kc):
    from fungrad import lax
    n_uc = len(lin.out_avals)
    vals, dims = _batched_tape_args(axis_size, vals, dims, n_cc, n_kb, n_kc, n_uc)
    c_dims, b_dims = dims[:n_cc], dims[n_cc:n_cc + n_kb]
    u_dims = dims[n_cc + n_kb + n_kc:len(dims) - n_uc]
    num_res = len(lin.in_avals) - len(u_dims) - n_uc
    key = (c_dims, b_dims, u_dims, axis_size)

    def build():
        m_cond, m_known = _masked_tape(cond, known, axis_size, c_dims, b_dims, n_kc)
        b_lin = _jit()._batch_jaxpr(lin, (0,) * num_res + u_dims + (0,) * n_uc, axis_size)

        def lin_fn(live, *xs):
            uc = xs[len(xs) - n_uc:]
            outs = eval_jaxpr(b_lin.jaxpr, b_lin.consts, *xs)
            return [lax.select(_lane_mask(live, o), o, c) for o, c in zip(outs, uc)]
        live_aval = ShapedArray((axis_size,), np.dtype(np.bool_))
        return m_cond, m_known, _jit()._stage(lin_fn, [live_aval] + list(b_lin.in_avals))
    m_cond, m_known, m_lin = _cached("while_lin_batch", (cond, known, lin), key, build)
    cc = vals[:n_cc]
    outs = while_lin_p.bind(*cc, *cc, *vals[n_cc:], cond=m_cond, known=m_known, lin=m_lin,
                            n_cc=n_cc, n_kb=n_cc + n_kb, n_kc=n_kc)
    return outs, [0] * len(outs)


def _while_lin_t_batch(axis_size, vals, dims, cond, known, lin_t, n_cc, n_kb, n_kc):
    from fungrad import lax
    n_ct = len(vals) - n_cc - n_kb - n_kc
    vals, dims = _batched_tape_args(axis_size, vals, dims, n_cc, n_kb, n_kc, n_ct)
    c_dims, b_dims = dims[:n_cc], dims[n_cc:n_cc + n_kb]
    n_ub = len(lin_t.out_avals) - n_ct
    num_res = len(lin_t.in_avals) - n_ct

    def build():
        m_cond, m_known = _masked_tape(cond, known, axis_size, c_dims, b_dims, n_kc)
        b_lin_t = _jit()._batch_jaxpr(lin_t, (0,) * (num_res + n_ct), axis_size)

        def lin_t_fn(live, *xs):
            ct_uc = xs[num_res:]
            outs = eval_jaxpr(b_lin_t.jaxpr, b_lin_t.consts, *xs)
            ct_ub = [lax.select(_lane_mask(live, o), o, ad.zeros_like_aval(get_aval(o)))
                     for o in outs[:n_ub]]
            return ct_ub + [lax.select(_lane_mask(live, o), o, c)
                            for o, c in zip(outs[n_ub:], ct_uc)]
        live_aval = ShapedArray((axis_size,), np.dtype(np.bool_))
        return m_cond, m_known, _jit()._stage(lin_t_fn, [live_aval] + list(b_lin_t.in_avals))
    m_cond, m_known, m_lin_t = _cached("while_lin_t_batch", (cond, known, lin_t),
                                       (c_dims, b_dims, axis_size), build)
    cc = vals[:n_cc]
    outs = while_lin_t_p.bind(*cc, *cc, *vals[n_cc:], cond=m_cond, known=m_known,
                              lin_t=m_lin_t, n_cc=n_cc, n_kb=n_cc + n_kb, n_kc=n_kc)
    return outs, [0] * len(outs)


while_lin_p.batch = _while_lin_batch
while_lin_t_p.batch = _while_lin_t_batch


def _emit_tape(block, cond, known, cc, kb, kc_init, n_kc):
    """Emit the known loop, appending each iteration's residuals to a list; returns
    (the list's name, names for one entry's residuals)."""
    new = lambda: block.names.new(core.Var(ShapedArray((), np.dtype(np.int64))))
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
    res = [new() for _ in outs[n_kc:]]
    return tape, res


def _tuple_target(names):
    return f"({''.join(n + ', ' for n in names)})" if names else "_"


def _while_lin_emit(block, eqn, args, out_names):
    p = eqn.params
    cc, kb, kc, rest = _split_lin_args(args, p["n_cc"], p["n_kb"], p["n_kc"])
    n_uc = len(out_names)
    ub, uc = rest[:len(rest) - n_uc], rest[len(rest) - n_uc:]
    tape, res = _emit_tape(block, p["cond"], p["known"], cc, kb, kc, p["n_kc"])
    for o, init in zip(out_names, uc):
        block.line(f"{o} = {init}")
    block.line(f"for {_tuple_target(res)} in {tape}:")
    outs = block.body(p["lin"], res + list(ub) + list(out_names))
    if out_names:
        block.line(f"{', '.join(out_names)}, = {', '.join(outs)},", "    ")


def _while_lin_t_emit(block, eqn, args, out_names):
    p = eqn.params
    cc, kb, kc, ct_uc = _split_lin_args(args, p["n_cc"], p["n_kb"], p["n_kc"])
    lin_t = p["lin_t"]
    n_ub = len(lin_t.out_avals) - len(ct_uc)
    tape, res = _emit_tape(block, p["cond"], p["known"], cc, kb, kc, p["n_kc"])
    acc, ct_names = out_names[:n_ub], out_names[n_ub:]
    for name, a in zip(acc, lin_t.out_avals[:n_ub]):
        block.line(f"{name} = np.zeros({a.shape!r}, np.{a.dtype.name})")
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


def _while_batch(axis_size, vals, dims, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    c_dims = tuple(None if d is None else 0 for d in dims[:nc])
    b_dims = tuple(None if d is None else 0 for d in dims[nc:nc + nb])
    # (vals are already moved: a batched carry is at axis 0 now)
    carry = [batching.bdim_at_front(v, None if d is None else 0, axis_size)
             for v, d in zip(vals[nc + nb:], dims[nc + nb:])]
    n = len(carry)
    jit = _jit()
    b_cond = _cached("while_bcond", (cond,), (c_dims, axis_size),
                     lambda: jit._batch_jaxpr(cond, c_dims + (0,) * n, axis_size))
    b_body = _cached("while_bbody", (body,), (b_dims, axis_size),
                     lambda: jit._batch_jaxpr(body, b_dims + (0,) * n, axis_size))
    any_cond, masked_body = _cached("while_masked", (b_cond, b_body), (nc, nb),
                                    lambda: _masked_while(b_cond, b_body, nc, nb))
    outs = while_p.bind(*vals[:nc], *vals[:nc], *vals[nc:nc + nb], *carry, cond=any_cond,
                        body=masked_body, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, [0] * n


def _masked_while(b_cond, b_body, nc, nb):
    """Loop while any lane's predicate holds; lanes that are done keep their carry."""
    from fungrad import lax

    def any_fn(*xs):
        return [lax.reduce_or(eval_jaxpr(b_cond.jaxpr, b_cond.consts, *xs)[0], (0,))]

    def body_fn(*xs):
        c_consts, b_consts, carry = xs[:nc], xs[nc:nc + nb], list(xs[nc + nb:])
        live = eval_jaxpr(b_cond.jaxpr, b_cond.consts, *c_consts, *carry)[0]
        new = eval_jaxpr(b_body.jaxpr, b_body.consts, *b_consts, *carry)
        out = []
        for old, upd in zip(carry, new):
            mask = lax.reshape(live, live.shape + (1,) * (get_aval(upd).ndim - 1))
            out.append(lax.select(mask, upd, old))
        return out
    c_avals = list(b_cond.in_avals)
    return (_jit()._stage(any_fn, c_avals),
            _jit()._stage(body_fn, c_avals[:nc] + list(b_body.in_avals)))


while_p.batch = _while_batch


def _while_emit(block, eqn, args, out_names):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    c_consts, b_consts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]
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
    if _python_control_flow():                                    # jax_disable_jit
        try:
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val
        except core.ConcretizationTypeError:
            pass      # a traced predicate (e.g. under vmap): the primitive, as JAX does
    leaves, tree = tree_flatten(init_val)
    leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
    avals = [get_aval(x).strip_weak_type() for x in leaves]

    def stage(fn, what):
        closed, hoisted, out_tree = _jit().stage_pytree(fn, tree, avals)
        if what == "body" and out_tree != tree:
            raise TypeError(f"while_loop: body_fun returns structure {out_tree}, but the "
                            f"loop carry has structure {tree}")
        return closed, hoisted
    cond_closed, cond_hoisted = stage(cond_fun, "cond")
    outs = cond_closed.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                        f"{[a.str_short() for a in outs]}")
    body_closed, body_hoisted = stage(body_fun, "body")
    _while_abstract_eval(*[get_aval(h) for h in cond_hoisted + body_hoisted], *avals,
                         cond=cond_closed, body=body_closed, cond_nconsts=len(cond_hoisted),
                         body_nconsts=len(body_hoisted))
    out = while_p.bind(*cond_hoisted, *body_hoisted, *leaves, cond=cond_closed, body=body_closed,
                       cond_nconsts=len(cond_hoisted), body_nconsts=len(body_hoisted))
    return tree_unflatten(tree, out)


# ----------------------------------------------------------------------------
# associative_scan: a parallel prefix built from slices, so every transform works
# ----------------------------------------------------------------------------

def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """``jax.lax.associative_scan``: all prefix combinations ``fn(...fn(e0, e1)..., ei)``
    along ``axis`` for an associative ``fn`` (elementwise over its pytree
    arguments' slices), in O(log n) rounds of whole-array calls to ``fn``
    (pairs combined, the half-length problem solved recursively, the rest
    filled in), with no new primitive: it differentiates, vmaps and jits
    through the slicing and ``fn``."""
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
    ndim = get_aval(leaves[0]).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"associative_scan: axis {axis} is out of range for arrays of rank {ndim}")
    axis = axis % ndim
    lengths = {get_aval(x).shape[axis] if get_aval(x).ndim > axis else None for x in leaves}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(f"associative_scan: every leaf of elems needs the same length along "
                         f"axis {axis}, got shapes {[get_aval(x).shape for x in leaves]}")

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return the structure of elems "
                            f"({tree}), got {out_tree}")
        return out_leaves
    from fungrad import lax
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]
    out = _prefix_scan(combine, leaves, axis, lengths.pop())
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


def _prefix_scan(combine, elems, axis, n):
    from fungrad import lax
    if n < 2:
        return elems
    take = lambda xs, start, stop, step=1: [
        lax.slice_in_dim(x, start, stop, step, axis) for x in xs]
    pairs = combine(take(elems, 0, n - 1, 2), take(elems, 1, n, 2))     # e0+e1, e2+e3, ...
    odd = _prefix_scan(combine, pairs, axis, n // 2)                     # prefixes 1, 3, 5...
    n_rest = (n - 1) // 2                                                # e2, e4, ...
    first = take(elems, 0, 1)                                            # prefix 0 = e0
    if n_rest:                                  # prefix 2k = prefix (2k-1) + e_2k
        tail = combine(take(odd, 0, n_rest), take(elems, 2, n, 2))
        even = [lax.concatenate([f, t], axis) for f, t in zip(first, tail)]
    else:
        even = first
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _interleave(even, odd, axis):
    """``even[0], odd[0], even[1], odd[1], ...`` along ``axis`` (even may be one longer)."""
    from fungrad import lax
    n_even, n_odd = get_aval(even).shape[axis], get_aval(odd).shape[axis]
    head = lax.slice_in_dim(even, 0, n_odd, 1, axis)
    shape = list(get_aval(odd).shape)
    both = lax.concatenate([lax.expand_dims(head, (axis + 1,)), lax.expand_dims(odd, (axis + 1,))],
                           axis + 1)
    shape[axis] = 2 * n_odd
    merged = lax.reshape(both, tuple(shape))
    if n_even == n_odd:
        return merged
    return lax.concatenate([merged, lax.slice_in_dim(even, n_odd, n_even, 1, axis)], axis)
