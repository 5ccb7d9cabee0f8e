"""``cond`` / ``switch``: run one of several branches, chosen by an index.

    cond_p(index, *operands, branches=(ClosedJaxpr(ops -> outs), ...))

Every branch takes the same operands (values the branches close over are
hoisted into them) and returns the same types.  Rules:

* eval: run the chosen branch's compiled code;
* jvp: the JVP of every branch (same tangent pattern; every float output's
  tangent instantiated so the branches agree) under one ``cond``;
* partial eval (linearize): each branch splits into a known part, evaluated
  now by a ``cond`` on the same index, and an unknown part staged as a
  ``cond``; the residuals of all branches are merged into one signature (each
  branch fills its own slots and zeros elsewhere);
* transpose: the transpose of every branch under one ``cond``;
* vmap: an unbatched index keeps a ``cond`` of batched branches (an output no
  branch computes from a batched value stays unbatched, as in JAX); a batched
  index runs every branch and selects per lane (``select_n``);
* lowering: a real ``if``/``elif``/``else`` block in the generated code.

Partial evaluation, before/after, for ``cond(p, lambda x, t: sin(x) * t,
lambda x, t: t, x, t)`` with ``t`` unknown (a tangent under linearize)::

    y = cond[branches=(x, t -> sin x * t;  x, t -> t)] p x t
  known, now:    r = cond[branches=(x -> sin x;  x -> 0.0)] p x
  unknown:       y = cond[branches=(r, t -> r * t;  r, t -> t)] p r t
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from fungrad._dtype_classes import is_integer, kind as dtype_kind
from fungrad.core import (ClosedJaxpr, Jaxpr, Literal, Primitive, ShapedArray, Tracer, bind_on,
                          eval_jaxpr, get_aval)
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import (as_value, partial_eval_jaxpr, select_inputs,
                                               stage_pytree, trace_closed)
from fungrad.lax.control_flow.common import (cached, merge_lists,
                                             partition_list, python_control_flow)
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond", multiple_results=True)


def _cond_impl(index, *args, branches):
    comp = compiled(branches[int(np.clip(index, 0, len(branches) - 1))])
    return list(comp.fn(*comp.consts, *args))


def _cond_abstract_eval(index, *avals, branches):
    if index.shape != () or dtype_kind(index.dtype) not in "iub":
        raise TypeError(f"cond/switch: the index must be an integer or boolean scalar, "
                        f"got {index.str_short()}")
    # an output is weakly typed when it is in every branch (as in JAX)
    return [a if all(br.out_avals[i].weak_type for br in branches) else a.strip_weak_type()
            for i, a in enumerate(branches[0].out_avals)]


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)
# its jaxpr may make weak outputs of strong operands (a Python constant, a
# transpose's conversion back to a weak operand's type): evaluated eagerly too,
# its outputs take the abstract rule's weak types
cond_p.weak_from_params = True


def _cond_jvp(primals, tangents, branches):
    index, *args = primals
    nonzeros = tuple(type(t) is not Zero for t in tangents[1:])
    jvp_branches = tuple(ad.jvp_jaxpr(br, nonzeros, instantiate=True)[0] for br in branches)
    nz_tangents = [t for t in tangents[1:] if type(t) is not Zero]
    outs = cond_p.bind(index, *args, *nz_tangents, branches=jvp_branches)
    out_avals = branches[0].out_avals
    n = len(out_avals)
    floats = [ad.is_float(a.dtype) for a in out_avals]
    return outs[:n], ad.tangents_from(floats, outs[n:], out_avals)


cond_p.jvp = _cond_jvp


def _cond_partial_eval(trace, args, branches):
    index, ops = args[0], args[1:]
    if trace.owns(index):
        return trace.stage(cond_p, list(args), dict(branches=branches))
    unknowns = tuple(trace.owns(x) for x in ops)
    known, unknown, out_unknowns = cached("cond_pe", branches, unknowns,
                                          lambda: _split_branches(branches, unknowns))
    known_ops, unknown_ops = partition_list(unknowns, ops)
    known_outs = bind_on(trace.parent, cond_p, [index] + known_ops, dict(branches=known))
    n_known = sum(not u for u in out_unknowns)
    known_outs, residuals = known_outs[:n_known], known_outs[n_known:]
    staged = trace.stage(cond_p, [index] + residuals + unknown_ops, dict(branches=unknown))
    return merge_lists(out_unknowns, known_outs, staged)


def _split_branches(branches, unknowns):
    """Known/unknown parts of every branch with one merged residual signature:
    known branch i returns (known outs, zeros..., its residuals, zeros...)."""
    first = [partial_eval_jaxpr(br, unknowns) for br in branches]
    out_unknowns = [any(p[2][i] for p in first) for i in range(len(branches[0].out_avals))]
    parts = [partial_eval_jaxpr(br, unknowns, instantiate=out_unknowns) for br in branches]
    res_avals = [list(k.out_avals[len(k.out_avals) - n:]) if n else [] for k, _, _, n in parts]
    known, unknown = [], []
    for i, (k, u, _, n) in enumerate(parts):
        before = [a for r in res_avals[:i] for a in r]
        after = [a for r in res_avals[i + 1:] for a in r]
        known.append(_place_residuals(k, n, before, after))
        all_res = before + res_avals[i] + after
        picks = list(range(len(before), len(before) + n)) + list(
            range(len(all_res), len(all_res) + len(u.in_avals) - n))
        unknown.append(select_inputs(u, all_res + list(u.in_avals[n:]), picks))
    return tuple(known), tuple(unknown), out_unknowns


def _place_residuals(known: ClosedJaxpr, n_res, before, after) -> ClosedJaxpr:
    """Known outputs, then zeros for other branches' residuals around this one's."""
    n_out = len(known.out_avals) - n_res

    def fn(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        zeros = lambda avals: [ad.zeros_like_aval(a) for a in avals]
        return outs[:n_out] + zeros(before) + outs[n_out:] + zeros(after)
    return trace_closed(fn, list(known.in_avals))


cond_p.partial_eval = _cond_partial_eval


def _cond_transpose(cts, index, *args, branches):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = [get_aval(c).weak_type for c in cts]     # (the transposes follow them)
    t_branches = tuple(ad.transpose_jaxpr(br, linear, ct_weak) for br in branches)
    residuals = [a for a in args if not ad.is_undefined_primal(a)]
    ct_args = cond_p.bind(index, *residuals, *cts, branches=t_branches)
    return [None] + merge_lists(linear, [None] * len(residuals), ct_args)


cond_p.transpose = _cond_transpose
cond_p.linear = True


def _cond_batch(axis_size, vals, dims, branches):
    from fungrad import lax
    (index, *ops), (idim, *odims) = vals, dims
    ops, in_dims = batching.bdims_to_front(ops, odims)
    if idim is None:
        # as JAX: an output computed from no batched value in any branch stays unbatched
        n = len(branches[0].out_avals)
        out_bat = [any(bat) for bat in zip(*[
            batching.batch_keeping_unbatched(br, axis_size, in_dims, (False,) * n)[1]
            for br in branches])]
        batched = tuple(batching.batch_keeping_unbatched(br, axis_size, in_dims, tuple(out_bat))[0]
                        for br in branches)
        outs = cond_p.bind(index, *ops, branches=batched)
        return outs, [0 if b else None for b in out_bat]
    batched = tuple(batching.batch_jaxpr(br, axis_size, in_dims) for br in branches)
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
cond_p.numba_block = _cond_emit        # (the same branches compile natively)


# ----------------------------------------------------------------------------
# Staging the branches, public API
# ----------------------------------------------------------------------------

def _stage_branches(branches: Sequence[Callable], operands, who: str, labels):
    """Trace every branch on the operands' avals.

    Returns (branch jaxprs all taking ``hoisted + operand leaves``, the hoisted
    values of all branches, the operand leaves, the output tree).
    """
    leaves, in_tree = tree_flatten(tuple(operands))
    leaves = [as_value(x) for x in leaves]
    avals = [get_aval(x) for x in leaves]     # (weak operands stay weak in the branches)
    scalars = [[] for _ in branches]      # per branch: which outputs are Python scalars
    staged = [stage_pytree(lambda ops, fn=fn, rec=rec: _noting_scalars(fn(*ops), rec), in_tree,
                           avals, name="cond branch") for fn, rec in zip(branches, scalars)]
    widths = _common_widths(staged)
    if widths is not None:       # re-stage, casting each output to the common dtype
        staged = [stage_pytree(lambda ops, fn=fn: _cast_leaves(fn(*ops), widths), in_tree,
                                avals, name="cond branch")
                  for fn in branches]
    else:
        staged = [(_weak_literal_outputs(closed, rec[-1]), hs, tree)
                  for (closed, hs, tree), rec in zip(staged, scalars)]
    _check_same_outputs(staged, who, labels)
    hoisted = [h for _, hs, _ in staged for h in hs]
    all_avals = [get_aval(h) for h in hoisted] + avals
    unified, offset = [], 0
    for closed, hs, _ in staged:
        if len(hs) == len(hoisted):
            unified.append(closed)
        else:     # each branch reads its own hoisted values, then the operands
            picks = list(range(offset, offset + len(hs))) + list(
                range(len(hoisted), len(all_avals)))
            unified.append(select_inputs(closed, all_avals, picks))
        offset += len(hs)
    return tuple(unified), hoisted, leaves, staged[0][2]


def _noting_scalars(out, record: list):
    """``out``, noting which of its leaves are Python numbers (weakly typed)."""
    record.append([type(x) in (int, float, complex) for x in tree_flatten(out)[0]])
    return out


def _weak_literal_outputs(closed: ClosedJaxpr, scalar_flags) -> ClosedJaxpr:
    """``closed`` whose outputs that were Python numbers keep their weak type,
    so that a Python int returned through cond can still take a loop's carry
    dtype afterwards (JAX's weak typing; staging made them 0-d arrays)."""
    outvars = list(closed.jaxpr.outvars)
    changed = False
    for i, (v, is_scalar) in enumerate(zip(outvars, scalar_flags)):
        if is_scalar and isinstance(v, Literal) and not v.aval.weak_type:
            outvars[i] = Literal(v.val, ShapedArray(v.aval.shape, v.aval.dtype, weak_type=True))
            changed = True
    if not changed:
        return closed
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns, outvars), closed.consts)


def _common_widths(staged):
    """The common output dtypes when the branches differ only in the width of a
    number kind (int32 vs int64, float32 vs float64), else None.

    NumPy's promotion (fungrad's) can give two branches such widths where
    JAX's weak types give one dtype: ``(1 - flag) * step_int32`` is int64 here,
    int32 in JAX. Widening loses nothing, so the outputs are promoted; any
    other difference is an error, as in JAX."""
    trees = {tree for _, _, tree in staged}
    per_branch = [closed.out_avals for closed, _, _ in staged]
    if len(trees) != 1 or len({len(avals) for avals in per_branch}) != 1:
        return None
    widths, differs = [], False
    for column in zip(*per_branch):
        if len({a.shape for a in column}) != 1:
            return None
        dtypes = {a.dtype for a in column}
        common = np.result_type(*dtypes)
        kinds = {dtype_kind(d) for d in dtypes}
        if len(dtypes) > 1 and not (kinds <= {"i", "u"} and is_integer(common)
                                    or len(kinds) == 1 and kinds <= {"f", "c"}):
            return None
        differs |= len(dtypes) > 1
        widths.append(common)
    return widths if differs else None


def _cast_leaves(tree, dtypes):
    from fungrad import lax
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [lax.convert_element_type(x, d)
                                    for x, d in zip(leaves, dtypes)])


def _check_same_outputs(staged, who, labels):
    tree0, avals0 = staged[0][2], [a.strip_weak_type() for a in staged[0][0].out_avals]
    for i, (closed, _, tree) in enumerate(staged[1:], 1):
        avals = [a.strip_weak_type() for a in closed.out_avals]
        if tree != tree0 or avals != avals0:
            raise TypeError(
                f"{who}: the branches must return the same types, but {labels[0]} returns "
                f"{tree0} with {[a.str_short() for a in avals0]} and {labels[i]} returns "
                f"{tree} with {[a.str_short() for a in avals]}")


_NO_OPERAND = object()


def _keyword_operand(who, operands, operand):
    """JAX's older spelling ``cond(pred, f, g, operand=x)``: one operand by keyword."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"{who}: pass the operands either positionally or as the one "
                        f"`operand=` keyword, not both (got operand= and {len(operands)} "
                        "positional operands)")
    return (operand,)


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """``branches[index](*operands)``, index clamped into range (``jax.lax.switch``)."""
    branches = list(branches)
    operands = _keyword_operand("switch", operands, operand)
    return _switch(index, branches, operands, "switch",
                   [f"branch {i}" for i in range(len(branches))])


def _switch(index, branches, operands, who, labels):
    from fungrad import lax
    if not branches or not all(callable(b) for b in branches):
        raise TypeError("switch: branches must be a non-empty sequence of callables")
    index_aval = get_aval(index)
    if index_aval.shape != () or dtype_kind(index_aval.dtype) not in "iub":
        raise TypeError(f"switch: the index must be an integer scalar, got "
                        f"{index_aval.str_short()}")
    if python_control_flow() and not isinstance(index, Tracer):   # jax_disable_jit
        return branches[int(np.clip(np.asarray(index), 0, len(branches) - 1))](*operands)
    index = lax.convert_element_type(index, np.int32)
    index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    closed, hoisted, leaves, out_tree = _stage_branches(branches, operands, who, labels)
    outs = cond_p.bind(index, *hoisted, *leaves, branches=closed)
    return tree_unflatten(out_tree, outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (``jax.lax.cond``).

    Only the chosen branch runs (also in jit-generated code: an ``if`` block);
    under vmap with a batched predicate both run and lanes select.  JAX's older
    form ``cond(pred, true_operand, true_fun, false_operand, false_fun)``, which
    JAX still accepts (numpyro's HMC uses it), is accepted too.
    """
    from fungrad import lax
    if (not callable(true_fun) and callable(false_fun) and len(operands) == 2
            and callable(operands[1]) and operand is _NO_OPERAND):
        true_operand, true_branch, (false_operand, false_branch) = true_fun, false_fun, operands
        return cond(pred, lambda ops: true_branch(ops[0]), lambda ops: false_branch(ops[1]),
                    (true_operand, false_operand))
    operands = _keyword_operand("cond", operands, operand)
    pred_aval = get_aval(pred)
    if pred_aval.shape != ():
        raise TypeError(f"cond: the predicate must be a scalar, got {pred_aval.str_short()}; "
                        "use fungrad.numpy.where for elementwise selection, or vmap")
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun must be callables")
    if pred_aval.dtype != np.bool_:
        pred = lax.ne(pred, np.zeros((), pred_aval.dtype))
    return _switch(pred, [false_fun, true_fun], operands, "cond", ["false_fun", "true_fun"])
