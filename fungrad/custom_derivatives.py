"""``custom_jvp``: functions with a hand-written JVP rule (``jax.custom_jvp``).

    @fungrad.custom_jvp
    def log1pexp(x):
        return fnp.log1p(fnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * fungrad.nn.sigmoid(x)

**Concrete values first** (as JAX): outside transformations the function is
simply called; under eager ``grad``/``jvp``/``vjp`` (JVP traces and
linearize's partial evaluation, whose primal values are concrete) the rule
runs on the concrete primals, so Python control flow on them works in both
the function and its rule.  See ``_run_concretely``.

Otherwise (``jit``, ``vmap``, ``make_jaxpr``, or primals that are themselves
traced) the function is staged into a jaxpr and bound as
``custom_jvp_call_p``, whose params carry the jaxpr and the (hashable) Python
JVP rule:

* eval and jit: the function's own jaxpr (jit inlines it like a nested call);
* jvp: the user's rule runs on the parent trace, so reverse mode (linearize +
  transpose) and higher orders differentiate what the rule returns;
* vmap: the function's jaxpr is batched and the rule is wrapped in a vmap with
  the same axes, giving another ``custom_jvp_call``.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Any, Callable

import numpy as np

from fungrad import core
from fungrad.lax import state as _refs
from fungrad.core import Primitive, Tracer, UnexpectedTracerError, get_aval, eval_jaxpr
from fungrad.interpreters import ad, batching, tape
from fungrad.interpreters.ad import JVPTrace, Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters import partial_eval as pe
from fungrad.interpreters.partial_eval import StagingTrace, StagingTracer, as_value, trace_to_jaxpr
from fungrad.lax.utils import def_lowering
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp", "SymbolicZero", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values", "custom_jvp_call_p", "custom_vjp_call_p",
           "custom_lin_p", "custom_gradient", "closure_convert"]

#: What a ``defjvp(..., symbolic_zeros=True)`` rule receives as the tangent of an
#: input that is not being differentiated (it has ``shape``, ``dtype`` and
#: ``aval``, and is not an array); the rule may also return one as an output
#: tangent.  The rule can then skip work for inputs that are not perturbed.
SymbolicZero = Zero


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """What a ``custom_vjp`` fwd defined with ``symbolic_zeros=True`` gets in
    place of each argument leaf: the ``value`` and whether it is ``perturbed``
    (being differentiated; if not, its Jacobian column is zero)."""
    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """``tree`` with each ``CustomVJPPrimal`` leaf replaced by its value."""
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [x.value if type(x) is CustomVJPPrimal else x
                                    for x in leaves])


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.inline = True        # codegen splices the function's jaxpr


def _impl(*args, jaxpr, jvp, num_consts, symbolic_zeros):
    comp = compiled(jaxpr)
    return list(comp.fn(*comp.consts, *args))


custom_jvp_call_p.def_impl(_impl)
custom_jvp_call_p.def_abstract_eval(lambda *avals, jaxpr, jvp, num_consts, symbolic_zeros:
                                    list(jaxpr.out_avals))


def _jvp(primals, tangents, jaxpr, jvp, num_consts, symbolic_zeros):
    """Run the user's rule on the primals (the consts, closed-over values, have
    no say in the rule and are fed through the function only)."""
    consts, args = primals[:num_consts], primals[num_consts:]
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError("custom_jvp: the function closes over a value being differentiated; "
                        "pass it as an argument instead so that the JVP rule sees it")
    t_args = [t if symbolic_zeros else ad.instantiate_zeros(t) for t in tangents[num_consts:]]
    out, t_out = jvp(list(consts), list(args), t_args)
    return out, t_out


custom_jvp_call_p.jvp = _jvp


def _batch(axis_size, vals, dims, jaxpr, jvp, num_consts, symbolic_zeros):
    vals, in_dims = batching.bdims_to_front(vals, dims)
    b_jaxpr = batching.batch_jaxpr(jaxpr, axis_size, in_dims)
    b_jvp = _batched_rule(jvp, in_dims, num_consts, axis_size, len(jaxpr.out_avals))
    outs = custom_jvp_call_p.bind(*vals, jaxpr=b_jaxpr, jvp=b_jvp, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


def _derived_rule(rule, key, build):
    """``build()`` once per ``key`` for the Python callable ``rule`` (a custom
    rule and the batched versions made from it), kept on ``rule`` itself so that
    it dies with it; a callable without a ``__dict__`` gets no cache.  (The same
    rule batched the same way is then the same object: equations that carry it
    stay equal for CSE and the caches of derived jaxprs.)"""
    try:
        cache = rule.__dict__.setdefault("_fungrad_derived", {})
    except AttributeError:
        return build()
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = build()
    return hit


def _batched_rule(jvp, in_dims, num_consts, axis_size, n_out):
    """The rule, vmapped with the primals' batch axes (tangents share them)."""
    return _derived_rule(jvp, ("batched_jvp", in_dims, num_consts, axis_size, n_out),
                         lambda: _make_batched_rule(jvp, in_dims, num_consts, axis_size, n_out))


def _make_batched_rule(jvp, in_dims, num_consts, axis_size, n_out):
    from fungrad.interpreters.batching import vmap_flat

    def rule(consts, args, tangents):
        n = len(args)
        arg_dims = list(in_dims[num_consts:])

        def flat(*xs):
            out, t_out = jvp(list(consts), list(xs[:n]), list(xs[n:]))
            return list(out) + [ad.instantiate_zeros(t) for t in t_out]
        outs = vmap_flat(flat, list(args) + [ad.instantiate_zeros(t) for t in tangents],
                         arg_dims + arg_dims, axis_size, [0] * (2 * n_out))
        return outs[:n_out], outs[n_out:]
    return rule


custom_jvp_call_p.batch = _batch


# ----------------------------------------------------------------------------
# Running a custom rule on concrete values
# ----------------------------------------------------------------------------
# Walk down from the current trace: a JVP trace whose tangents are all zero,
# linearize's partial evaluation (fold_known) or a batch trace owning none of
# the values has nothing to do with the call, so it goes to the trace below.
# The call runs concretely at evaluation (call the function) or at the first
# JVP trace with a nonzero tangent whose primals are concrete (call the rule
# on them, with the trace below current).  Anything else stages.  While the function
# or rule runs, the traces it skipped are marked inactive: if it closes over
# one of their tracers, that use raises UnexpectedTracerError and the call is
# staged instead (which hoists closed-over values, and reports closing over
# a differentiated value).

_STAGE = object()
_ON_TAPE = object()


def _is_concrete(x) -> bool:
    return not isinstance(x, Tracer) or x._concrete_value() is not None


def _concrete_level(leaves):
    """``(trace, primals, tangents)``: where the call runs concretely (tangents
    None: evaluation); or None if it must be staged."""
    trace = core.current_trace()
    while trace.parent is not None:
        kind = type(trace)
        if kind is StagingTrace and trace.fold_known and not any(map(trace.owns, leaves)):
            trace = trace.parent
            continue
        if kind is batching.BatchTrace and not any(
                isinstance(x, batching.BatchTracer) and x._trace is trace for x in leaves):
            trace = trace.parent          # nothing batched (jacfwd's tangents are, not these)
            continue
        if kind is tape.TapeTrace:       # eager grad: the tape's general path runs it
            if any(map(trace.owns, leaves)):
                return trace, leaves, _ON_TAPE
            trace = trace.parent
            continue
        if kind is not JVPTrace:
            return None
        pairs = [trace.lift(x) for x in leaves]
        leaves = [p for p, _ in pairs]
        if any(type(t) is not Zero for _, t in pairs):
            if not all(map(_is_concrete, leaves)):
                return None
            return trace, leaves, [t for _, t in pairs]
        trace = trace.parent
    return trace, leaves, None


def _run_concretely(leaves, on_values, on_jvp, recall):
    """``on_values(values)`` at evaluation, or ``on_jvp(trace, primals,
    tangents) -> (outs, out_tangents)`` at a JVP trace (results are that
    trace's values); ``_STAGE`` if neither applies (see above).  Under eager
    grad (interpreters/tape.py) the call, ``recall(*leaves) -> output leaves``,
    is linearized by the tape's general path, whose JVP trace then runs it."""
    found = _concrete_level(leaves)
    if found is None:
        return _STAGE
    level, primals, tangents = found
    on_tape = tangents is _ON_TAPE
    skipped, t = [], core.current_trace()
    while t is not level:
        skipped.append(t)
        t = t.parent
    if tangents is not None and not on_tape:
        skipped.append(level)
    for t in skipped:
        t.active = False
    try:
        if on_tape:
            with core.set_current_trace(level):
                return level.call_generally(recall, primals)
        with core.set_current_trace(level if tangents is None else level.parent):
            result = on_values(primals) if tangents is None else on_jvp(level, primals, tangents)
    except UnexpectedTracerError:
        return _STAGE
    finally:
        for t in skipped:
            t.active = True
    if tangents is None:
        return result
    outs, out_tangents = result
    return [level.pure(o, dt) for o, dt in zip(outs, out_tangents)]


def _recall(custom_fn, args, static, in_tree, out_tree: list, put_refs=list):
    """The call ``custom_fn(*args)`` as a function of its differentiable leaves,
    returning output leaves (and recording the output structure)."""
    def recall(*leaves):
        it = iter(tree_unflatten(in_tree, put_refs(leaves)))
        full = [static[i] if i in static else next(it) for i in range(len(args))]
        out_leaves, tree = tree_flatten(custom_fn(*full))
        out_tree.append(tree)
        return [as_value(x) for x in out_leaves]
    return recall


def _refs_as_values(leaves):
    """``(leaves, put_refs)``: Ref arguments (plumbing for the rules, as in JAX's
    array_refs guide) enter the primitive as their values, which nothing
    reads; ``put_refs(xs)`` gives the rules the Refs themselves back."""
    at = {i: x for i, x in enumerate(leaves) if type(x) is _refs.Ref}
    if not at:
        return leaves, list
    values = [x._contents() if i in at else x for i, x in enumerate(leaves)]
    return values, lambda xs: [at.get(i, x) for i, x in enumerate(xs)]


def _merge_args(nondiff_argnums, nondiff, dyn):
    nd, it = dict(zip(sorted(nondiff_argnums), nondiff)), iter(dyn)
    return [nd[i] if i in nd else next(it) for i in range(len(nondiff) + len(dyn))]


def _require_callable(fun, who: str):
    """TypeError at definition time, naming the decorator (not at the first call)."""
    if not callable(fun):
        raise TypeError(f"{who}: expected a callable, got {type(fun).__name__} {fun!r:.60}")


def _forward_attr(self, name):
    """Attributes the decorator lacks are the wrapped function's (as JAX): a
    ``custom_vjp`` around a ``custom_vmap`` still takes ``f.def_vmap(rule)``."""
    fun = self.__dict__.get("fun")
    if fun is None or name.startswith("__"):
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    return getattr(fun, name)


class custom_jvp:
    """A function whose JVP (and so gradient) is given by ``defjvp``/``defjvps``."""

    __getattr__ = _forward_attr

    def __init__(self, fun: Callable, nondiff_argnums=()):
        _require_callable(fun, "custom_jvp")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp_rule = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False):
        """``jvp(primals, tangents) -> (primal_out, tangent_out)`` (tuples of args).

        With ``symbolic_zeros=True`` the tangent of an input that is not being
        differentiated arrives as a ``SymbolicZero`` instead of an array of zeros
        (under vmap, zeros are instantiated)."""
        _require_callable(jvp, "custom_jvp.defjvp")
        self.jvp_rule = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *per_arg: Callable | None):
        """One rule per argument: ``rule(g, ans, *primals) -> tangent contribution``."""
        def jvp(*nondiff_and_pt):
            *nondiff, primals, tangents = nondiff_and_pt
            ans = self(*_merge_args(self.nondiff_argnums, nondiff, primals))
            total = None
            for rule, t in zip(per_arg, tangents):
                if rule is not None:
                    part = rule(t, ans, *_merge_args(self.nondiff_argnums, nondiff, primals))
                    total = part if total is None else total + part
            return ans, total if total is not None else ans * 0
        self.defjvp(jvp)

    def __call__(self, *args):
        if self.jvp_rule is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no JVP rule: "
                            "define one with @f.defjvp")
        static = {i: args[i] for i in self.nondiff_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        raw_leaves, in_tree = tree_flatten(tuple(dyn))

        def merge(dyn_args):
            it = iter(dyn_args)
            return [static[i] if i in static else next(it) for i in range(len(args))]

        out_tree = []
        rule = _flat_rule(self.jvp_rule, in_tree, static=static, out_tree=out_tree)
        result = _run_concretely(
            raw_leaves, lambda xs: self.fun(*merge(tree_unflatten(in_tree, list(xs)))),
            lambda trace, primals, tangents: rule(
                [], primals, tangents if self.symbolic_zeros else
                [ad.instantiate_zeros(t) for t in tangents]),
            _recall(self, args, static, in_tree, out_tree))
        if result is not _STAGE:
            return result if not out_tree else tree_unflatten(out_tree[0], result)
        del out_tree[:]
        leaves = [as_value(x) for x in raw_leaves]

        def flat(*xs):
            out_leaves, tree = tree_flatten(self.fun(*merge(tree_unflatten(in_tree, list(xs)))))
            out_tree.append(tree)
            return [as_value(x) for x in out_leaves]
        # (weak inputs stay weak inside, as JAX stages them)
        jaxpr, consts = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                                       name="custom_jvp function")
        closed, hoisted = pe.closure_convert(jaxpr, consts)
        outs = custom_jvp_call_p.bind(*hoisted, *leaves, jaxpr=closed, jvp=rule,
                                      num_consts=len(hoisted), symbolic_zeros=self.symbolic_zeros)
        return tree_unflatten(out_tree[0], outs)


def _flat_rule(user_jvp, in_tree, static, out_tree: list):
    """The user's pytree rule as ``rule(consts, leaves, tangent leaves)``; as in JAX,
    non-differentiable arguments come first: ``jvp(*nondiff, primals, tangents)``.
    ``out_tree`` holds the function's output structure once known (staging);
    else the first structure the rule returns is recorded there."""
    nondiff = [static[i] for i in sorted(static)]

    def rule(consts, leaves, tangents):
        primals = tree_unflatten(in_tree, list(leaves))
        tangent_args = tree_unflatten(in_tree, list(tangents))
        out, t_out = user_jvp(*nondiff, tuple(primals), tuple(tangent_args))
        out_leaves, tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        if not out_tree:
            out_tree.append(tree)
        if tree != out_tree[0] or t_tree != out_tree[0]:
            raise TypeError(f"custom_jvp rule must return (primal_out, tangent_out) with the "
                            f"function's output structure {out_tree[0]}; got {tree} and {t_tree}")
        return out_leaves, t_leaves
    rule.__name__ = getattr(user_jvp, "__name__", "jvp")
    return rule


# ----------------------------------------------------------------------------
# custom_vjp
# ----------------------------------------------------------------------------
# custom_vjp_call_p(*consts, *args, fun, fwd, bwd, num_consts, num_res)
#   fun: the function's jaxpr; fwd: (args) -> (outputs, residuals) jaxpr;
#   bwd: a Python callable (residual leaves, output cotangents) -> arg cotangents.
# JVP: run fwd for outputs and residuals, and produce the output tangents with
# custom_lin_p, a primitive linear in the tangents whose transpose calls bwd.
# So reverse mode uses bwd.  Beyond JAX: evaluated in forward mode (jvp,
# jacfwd, hessian), custom_lin_p computes the JVP of ``fun`` itself.
# As for custom_jvp, a call on concrete values (no transformation, or eager
# grad/vjp) does not stage: the function, or fwd, runs on the values, and bwd
# runs on the concrete residuals and cotangents of the backward pass.

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.inline = True      # (param "jaxpr"): codegen splices the function
custom_lin_p = Primitive("custom_lin", multiple_results=True)


def _vjp_call_impl(*args, jaxpr, fwd, bwd, num_consts, num_res):
    comp = compiled(jaxpr)
    return list(comp.fn(*comp.consts, *args))


custom_vjp_call_p.def_impl(_vjp_call_impl)
custom_vjp_call_p.def_abstract_eval(lambda *a, jaxpr, fwd, bwd, num_consts, num_res:
                                    list(jaxpr.out_avals))


def _vjp_call_jvp(primals, tangents, jaxpr, fwd, bwd, num_consts, num_res):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError("custom_vjp: the function closes over a value being differentiated; "
                        "pass it as an argument instead so that bwd can return its cotangent")
    consts, args = list(primals[:num_consts]), list(primals[num_consts:])
    perturbed = tuple(type(t) is not Zero for t in tangents[num_consts:])
    outs_res = fwd(*args, perturbed=perturbed)     # the user's fwd, on the parent trace
    n_out = len(jaxpr.out_avals)
    outs, res = list(outs_res[:n_out]), list(outs_res[n_out:])
    return outs, _vjp_tangents(_jaxpr_fun(jaxpr), tuple(jaxpr.out_avals), bwd, consts, args, res,
                               tangents[num_consts:])


def _vjp_tangents(fun, out_avals, bwd, consts, args, res, tangents):
    """Output tangents of a custom_vjp call whose fwd gave residuals ``res``:
    under linearize a ``custom_lin`` (transposed by ``bwd``), in plain forward
    mode the JVP of ``fun(*consts, *args)`` itself."""
    t_args = [ad.instantiate_zeros(t) for t in tangents]
    if not any(isinstance(t, StagingTracer) for t in t_args):
        # forward mode on values (jvp, jacfwd): the function's own JVP
        return _forward_tangents(fun, consts, args, t_args)
    # staged tangents: linearize's, or a JVP staged into a jaxpr that may be
    # transposed later (jit's JVP rule under grad): custom_lin keeps bwd for
    # that transpose; left untransposed, it generates the forward formula
    return custom_lin_p.bind(*consts, *args, *res, *t_args, fun=fun, out_avals=out_avals,
                             bwd=bwd, num_consts=len(consts), num_args=len(args),
                             num_res=len(res))


def _being_linearized(t) -> bool:
    """A tangent staged by linearize's partial evaluation (so a transpose may
    follow; custom_batching refuses those)."""
    return isinstance(t, StagingTracer) and t._trace.fold_known


def _jaxpr_fun(closed):
    """A staged function as a Python callable (custom_lin's ``fun`` param)."""
    def fun(*xs):
        return eval_jaxpr(closed.jaxpr, closed.consts, *xs)
    return fun


custom_vjp_call_p.jvp = _vjp_call_jvp


# custom_lin_p(*consts, *args, *res, *tangents, fun, out_avals, bwd, num_consts, num_args,
#              num_res): linear in the tangents; ``fun`` is the custom_vjp function on flat
# leaves (a Python callable: with concrete arguments its Python control flow works).

def _lin_split(vals, num_consts, num_args, num_res):
    c, a = vals[:num_consts], vals[num_consts:num_consts + num_args]
    r = vals[num_consts + num_args:num_consts + num_args + num_res]
    return list(c), list(a), list(r), list(vals[num_consts + num_args + num_res:])


def _forward_tangents(fun, consts, args, t_args):
    """Forward mode through a custom_vjp function: the JVP of the function itself."""
    zeros = [Zero(ad.tangent_aval(get_aval(c))) for c in consts]
    _, t_out = ad.jvp_flat(lambda *xs: list(fun(*xs)), consts + args, zeros + list(t_args))
    return [ad.instantiate_zeros(t) for t in t_out]


def _lin_impl(*vals, fun, out_avals, bwd, num_consts, num_args, num_res):
    consts, args, _, t_args = _lin_split(vals, num_consts, num_args, num_res)
    return _forward_tangents(fun, consts, args, t_args)


custom_lin_p.def_impl(_lin_impl)
custom_lin_p.def_abstract_eval(lambda *a, fun, out_avals, bwd, num_consts, num_args, num_res:
                               [ad.tangent_aval(o) for o in out_avals])


def _lin_jvp(primals, tangents, fun, out_avals, bwd, num_consts, num_args, num_res):
    # differentiate the forward-mode formula (used only by forward-over-forward)
    consts, args, _, t_args = _lin_split(primals, num_consts, num_args, num_res)
    dc, da, _, dt = _lin_split(tangents, num_consts, num_args, num_res)
    out, t_out = ad.jvp_flat(
        lambda *xs: _forward_tangents(fun, list(xs[:num_consts]),
                                      list(xs[num_consts:num_consts + num_args]),
                                      list(xs[num_consts + num_args:])),
        consts + args + t_args, dc + da + dt)
    return out, t_out


custom_lin_p.jvp = _lin_jvp


def _lin_transpose(cts, *vals, fun, out_avals, bwd, num_consts, num_args, num_res):
    consts, args, res, t_args = _lin_split(vals, num_consts, num_args, num_res)
    if not getattr(bwd, "symbolic_zeros", False):      # (a batched bwd takes arrays)
        cts = [ad.instantiate_zeros(c) for c in cts]
    ct_args = bwd(res, cts)
    if len(ct_args) != num_args:
        raise TypeError(f"custom_vjp: bwd returned {len(ct_args)} cotangent leaves, expected "
                        f"{num_args} (one per leaf of the function's arguments)")
    return [None] * (num_consts + num_args + num_res) + list(ct_args)


custom_lin_p.transpose = _lin_transpose
custom_lin_p.linear = True


def _lin_batch(axis_size, vals, dims, fun, out_avals, bwd, num_consts, num_args, num_res):
    # batched evaluation of the forward-mode formula (bwd is batched by its own ops
    # when transposed under vmap: residuals are batch tracers then)
    from fungrad.interpreters.batching import vmap_flat
    n_out = len(out_avals)
    outs = vmap_flat(lambda *xs: _lin_impl(*xs, fun=fun, out_avals=out_avals, bwd=bwd,
                                           num_consts=num_consts, num_args=num_args,
                                           num_res=num_res),
                     list(vals), list(dims), axis_size, [0] * n_out)
    return outs, [0] * n_out


custom_lin_p.batch = _lin_batch


def _lin_emit(block, eqn, args, out_names):
    """Generated code for a custom_lin left untransposed in a program (a
    custom_vjp function's JVP staged in forward mode, e.g. ``jit(jvp(f))``):
    the function's own JVP, traced at the equation's types and emitted in place."""
    def flat(*xs):
        return list(_lin_impl(*xs, **eqn.params))
    jaxpr, consts = trace_to_jaxpr(flat, [v.aval for v in eqn.invars], name="custom_lin")
    outs = block.body(core.ClosedJaxpr(jaxpr, consts), list(args), extra_indent="")
    for name, value in zip(out_names, outs):
        block.line(f"{name} = {value}")


custom_lin_p.emit_block = _lin_emit


def _vjp_call_batch(axis_size, vals, dims, jaxpr, fwd, bwd, num_consts, num_res):
    vals, in_dims = batching.bdims_to_front(vals, dims)
    b_fun = batching.batch_jaxpr(jaxpr, axis_size, in_dims)
    b_fwd = _batched_fwd(fwd, in_dims[num_consts:], axis_size)
    b_bwd = _batched_bwd(bwd, axis_size, len(in_dims) - num_consts)
    outs = custom_vjp_call_p.bind(*vals, jaxpr=b_fun, fwd=b_fwd, bwd=b_bwd,
                                  num_consts=num_consts, num_res=num_res)
    return outs, [0] * len(outs)


def _batched_fwd(fwd, arg_dims, axis_size):
    return _derived_rule(fwd, ("batched_fwd", arg_dims, axis_size),
                         lambda: _make_batched_fwd(fwd, arg_dims, axis_size))


def _make_batched_fwd(fwd, arg_dims, axis_size):
    from fungrad.interpreters.batching import vmap_flat

    def batched(*args, perturbed):
        return vmap_flat(lambda *xs: list(fwd(*xs, perturbed=perturbed)), list(args),
                         list(arg_dims), axis_size, itertools.repeat(0))
    return batched


def _batched_bwd(bwd, axis_size, num_args):
    return _derived_rule(bwd, ("batched_bwd", axis_size, num_args),
                         lambda: _make_batched_bwd(bwd, axis_size, num_args))


def _make_batched_bwd(bwd, axis_size, num_args):
    from fungrad.interpreters.batching import vmap_flat

    def batched(res, cts):
        n = len(res)
        flat = lambda *xs: list(bwd(list(xs[:n]), list(xs[n:])))
        return vmap_flat(flat, list(res) + list(cts), [0] * (len(res) + len(cts)), axis_size,
                         [0] * num_args)
    batched.__name__ = getattr(bwd, "__name__", "bwd")
    return batched


custom_vjp_call_p.batch = _vjp_call_batch


class custom_vjp:
    """A function whose reverse-mode derivative is given by ``defvjp(fwd, bwd)``.

    ``fwd(*args) -> (output, residuals)``, ``bwd(residuals, output_cotangent) ->
    tuple of cotangents, one per argument`` (pytrees as in JAX).  Beyond JAX,
    forward mode (``jvp``, ``jacfwd``, ``hessian``) also works: it
    differentiates the function itself.
    """

    __getattr__ = _forward_attr

    def __init__(self, fun: Callable, nondiff_argnums=()):
        _require_callable(fun, "custom_vjp")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False):
        """With ``symbolic_zeros=True`` (as JAX): each leaf of fwd's arguments is
        a ``CustomVJPPrimal(value, perturbed)``, ``perturbed`` saying whether it
        is being differentiated, and bwd gets a ``SymbolicZero`` as the
        cotangent of each output that does not reach the differentiated result
        (zeros instead when the call was batched before being differentiated);
        bwd may return ``None`` or a ``SymbolicZero`` for a zero cotangent.
        ``optimize_remat`` is accepted (fwd runs once per differentiation here)."""
        _require_callable(fwd, "custom_vjp.defvjp (fwd)")
        _require_callable(bwd, "custom_vjp.defvjp (bwd)")
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    def _fwd_args(self, in_tree, leaves, perturbed):
        """fwd's arguments: the leaves, or CustomVJPPrimals with symbolic_zeros."""
        if self.symbolic_zeros:
            leaves = [CustomVJPPrimal(x, bool(p)) for x, p in zip(leaves, perturbed)]
        return tree_unflatten(in_tree, list(leaves))

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__} has no rules: define them "
                            "with f.defvjp(fwd, bwd)")
        static = {i: args[i] for i in self.nondiff_argnums}
        nondiff = [static[i] for i in sorted(static)]
        dyn = tuple(a for i, a in enumerate(args) if i not in static)
        raw_leaves, in_tree = tree_flatten(dyn)
        raw_leaves, put_refs = _refs_as_values(raw_leaves)
        leaves = [as_value(x) for x in raw_leaves]
        avals = [get_aval(x).strip_weak_type() for x in leaves]
        merge = lambda d: _merge_args(self.nondiff_argnums, nondiff, list(d))
        out_tree, res_tree = [], []

        def fun_flat(*xs):
            out_leaves, tree = tree_flatten(self.fun(*merge(tree_unflatten(in_tree, put_refs(xs)))))
            out_tree.append(tree)
            return [as_value(x) for x in out_leaves]

        def concrete_jvp(trace, primals, tangents):
            perturbed = [type(t) is not Zero for t in tangents]
            out, res = self.fwd(*merge(self._fwd_args(in_tree, put_refs(primals), perturbed)))
            out_leaves, tree = tree_flatten(out)
            r_spec, res_leaves = _split_residuals(res)
            out_tree.append(tree)
            res_tree.append(r_spec)
            bwd = _flat_bwd(self.bwd, nondiff, res_tree, tree, in_tree, avals,
                            self.symbolic_zeros)
            out_avals = tuple(get_aval(o).strip_weak_type() for o in out_leaves)
            return out_leaves, _vjp_tangents(fun_flat, out_avals, bwd, [], list(primals),
                                             res_leaves, tangents)
        result = _run_concretely(
            raw_leaves, lambda xs: self.fun(*merge(tree_unflatten(in_tree, put_refs(xs)))),
            concrete_jvp, _recall(self, args, static, in_tree, out_tree, put_refs))
        if result is not _STAGE:
            return result if not out_tree else tree_unflatten(out_tree[0], result)
        del out_tree[:], res_tree[:]

        def fwd_flat(*xs, perturbed):
            out, res = self.fwd(*merge(self._fwd_args(in_tree, put_refs(xs), perturbed)))
            out_leaves, _ = tree_flatten(out)
            r_spec, res_leaves = _split_residuals(res)
            res_tree.append(r_spec)
            return [as_value(x) for x in out_leaves] + [as_value(x) for x in res_leaves]
        # (weak inputs stay weak inside, as JAX stages them; bwd's cotangents are strong)
        fun_j, fun_c = trace_to_jaxpr(fun_flat, [get_aval(x) for x in leaves],
                                      name="custom_vjp function")
        fun_closed, fun_h = pe.closure_convert(fun_j, fun_c)
        if fun_h:
            raise TypeError("custom_vjp: the function closes over a traced value; pass it as "
                            "an argument so that bwd can return its cotangent")
        # fwd runs only when the call is differentiated (it may call the function itself)
        fwd_flat.__name__ = getattr(self.fwd, "__name__", "fwd")
        bwd = _flat_bwd(self.bwd, nondiff, res_tree, out_tree[0], in_tree, avals,
                        self.symbolic_zeros)
        outs = custom_vjp_call_p.bind(*leaves, jaxpr=fun_closed, fwd=fwd_flat, bwd=bwd,
                                      num_consts=0, num_res=0)
        return tree_unflatten(out_tree[0], outs)


_PY_SCALARS = (bool, int, float, complex)


def _split_residuals(res):
    """``(spec, array leaves)`` of fwd's residuals: leaves that are Python
    scalars stay Python values, as in JAX (a bwd may branch on a bool it
    saved); the others pass through the primitive as arrays."""
    leaves, tree = tree_flatten(res)
    # (a Ref, which a fwd returns to share it with bwd, stays itself too)
    static = {i: x for i, x in enumerate(leaves) if type(x) in _PY_SCALARS
              or type(x) is _refs.Ref}
    return (tree, static), [x for i, x in enumerate(leaves) if i not in static]


def _join_residuals(spec, arrays):
    tree, static = spec
    it = iter(arrays)
    return tree_unflatten(tree, [static[i] if i in static else next(it)
                                 for i in range(tree.num_leaves)])


def _flat_bwd(user_bwd, nondiff, res_tree, out_tree, in_tree, arg_avals, symbolic_zeros=False):
    """``res_tree`` is a list that fwd fills with its residuals' structure
    (``_split_residuals``'s spec).
    Cotangents that are ``Zero`` reach the user's bwd as such only with
    ``symbolic_zeros``; a ``SymbolicZero`` it returns becomes zeros."""
    def bwd(res_leaves, ct_leaves):
        if not symbolic_zeros:
            ct_leaves = [ad.instantiate_zeros(c) for c in ct_leaves]
        cts = user_bwd(*nondiff, _join_residuals(res_tree[-1], res_leaves),
                       tree_unflatten(out_tree, list(ct_leaves)))
        if not isinstance(cts, tuple):
            raise TypeError(f"custom_vjp: bwd must return a tuple with one cotangent per "
                            f"differentiable argument (structure {in_tree}), got "
                            f"{type(cts).__name__}")
        cts = _none_as_zeros(cts, in_tree, arg_avals)
        leaves, tree = tree_flatten(cts)
        if tree != in_tree:
            raise TypeError(f"custom_vjp: bwd returned cotangents with structure {tree}; "
                            f"expected {in_tree} (one per differentiable argument)")
        return [ad.instantiate_zeros(c) for c in leaves]
    bwd.__name__ = getattr(user_bwd, "__name__", "bwd")
    bwd.symbolic_zeros = symbolic_zeros
    return bwd


def _none_as_zeros(cts: tuple, in_tree, arg_avals) -> tuple:
    """As in JAX, ``None`` in bwd's result stands for a zero cotangent of that argument."""
    per_arg = tree_unflatten(in_tree, list(arg_avals))
    if not any(c is None for c in cts) or len(cts) != len(per_arg):
        return cts
    def zeros(avals):
        leaves, tree = tree_flatten(avals)
        return tree_unflatten(tree, [ad.zeros_like_aval(ad.tangent_aval(a)) for a in leaves])
    return tuple(zeros(a) if c is None else c for c, a in zip(cts, per_arg))


# ----------------------------------------------------------------------------
# custom_gradient and closure_convert (JAX's conveniences over custom_vjp)
# ----------------------------------------------------------------------------

from fungrad.tree_util import register_pytree_node  # noqa: E402


class _GradRule:
    """custom_gradient's residuals: the staged gradient rule (a jaxpr of the
    output cotangents) and the values it closes over (its consts, the leaves)."""
    __slots__ = ("consts", "jaxpr", "ct_tree", "in_tree")

    def __init__(self, consts, jaxpr, ct_tree, in_tree):
        self.consts, self.jaxpr, self.ct_tree, self.in_tree = list(consts), jaxpr, ct_tree, in_tree


register_pytree_node(_GradRule, lambda r: (r.consts, (r.jaxpr, r.ct_tree, r.in_tree)),
                     lambda aux, consts: _GradRule(consts, *aux))


def custom_gradient(fun: Callable) -> custom_vjp:
    """``fun(*args) -> (output, vjp)`` with ``vjp(output_cotangent) -> tuple of
    argument cotangents`` becomes a function with that gradient (as
    ``jax.custom_gradient``)::

        @fungrad.custom_gradient
        def f(x):
            return x ** 2, lambda g: (g * x,)
    """
    def primal(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, rule = fun(*args)
        if not callable(rule):
            raise TypeError(f"custom_gradient: {getattr(fun, '__name__', 'the function')} "
                            f"must return (output, vjp function), got a second element of "
                            f"type {type(rule).__name__}")
        out_leaves, ct_tree = tree_flatten(out)
        ct_avals = [ad.tangent_aval(get_aval(x)) for x in out_leaves]
        in_tree = []

        def flat_rule(*cts):
            leaves, tree = tree_flatten(rule(tree_unflatten(ct_tree, list(cts))))
            in_tree.append(tree)
            return [as_value(x) for x in leaves]
        jaxpr, consts = trace_to_jaxpr(flat_rule, ct_avals)
        return out, _GradRule(consts, jaxpr, ct_tree, in_tree[0])

    def bwd(res, ct):
        ct_leaves, tree = tree_flatten(ct)
        if tree != res.ct_tree:
            raise TypeError(f"custom_gradient: cotangent structure {tree} differs from the "
                            f"output's {res.ct_tree}")
        cts = tree_unflatten(res.in_tree, eval_jaxpr(res.jaxpr, res.consts, *ct_leaves))
        return cts if isinstance(cts, tuple) else (cts,)

    wrapped = custom_vjp(primal)
    functools.update_wrapper(wrapped, fun)
    wrapped.defvjp(fwd, bwd)
    return wrapped


def closure_convert(fun: Callable, *example_args):
    """``(converted, consts)``: ``converted(*args, *consts)`` computes ``fun(*args)``
    with the floating-point values ``fun`` closes over (arrays, tracers of
    enclosing transformations) passed explicitly, so that a custom_vjp's bwd
    can return their cotangents (as ``jax.closure_convert``).  Other closed-over
    values (integers, booleans) stay inside."""
    leaves, in_tree = tree_flatten(example_args)
    leaves = [as_value(x) for x in leaves]
    out_tree = []

    def flat(*xs):
        out_leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, list(xs))))
        out_tree.append(tree)
        return [as_value(x) for x in out_leaves]
    jaxpr, consts = trace_to_jaxpr(flat, [get_aval(x).strip_weak_type() for x in leaves])
    hoist = [ad.is_float(get_aval(c).dtype) for c in consts]
    kept = [c for c, h in zip(consts, hoist) if not h]
    hoisted = [c for c, h in zip(consts, hoist) if h]

    def converted(*args):
        args, extra = args[:len(example_args)], list(args[len(example_args):])
        if len(extra) != len(hoisted):
            raise TypeError(f"closure_convert: the converted function takes the "
                            f"{len(example_args)} arguments and then {len(hoisted)} hoisted "
                            f"constants, got {len(extra)} constants")
        k, h = iter(kept), iter(extra)
        all_consts = [next(h) if f else next(k) for f in hoist]
        xs, tree = tree_flatten(args)
        if tree != in_tree:
            raise TypeError(f"closure_convert: arguments have structure {tree}, expected "
                            f"{in_tree} (as the example arguments)")
        return tree_unflatten(out_tree[0], eval_jaxpr(jaxpr, all_consts, *xs))
    converted.__name__ = getattr(fun, "__name__", "converted")
    return converted, hoisted
