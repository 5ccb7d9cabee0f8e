"""``custom_vmap``: functions with a hand-written batching rule
(``jax.custom_batching.custom_vmap``), and ``sequential_vmap``.

    @custom_vmap
    def f(x, y):
        return x + y

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        # batched arguments carry the batch axis first; in_batched says which
        return xs * ys, True                 # (output, which outputs are batched)

Outside ``vmap`` the function is simply called (its staged jaxpr is
evaluated); under ``vmap`` the rule runs instead.  Both are one primitive,
``custom_vmap_call_p``, whose params carry the function's jaxpr and a *flat
rule* ``rule(axis_size, batched_flags, flat_args) -> (flat_outs, out_flags)``:

* eval and ``jit``: the function's jaxpr (``jit`` splices it in);
* vmap: the flat rule, on the arguments with their batch axes moved first;
* jvp: the JVP of the function's jaxpr, bound again as ``custom_vmap_call``
  whose rule is the JVP of the rule (JAX's construction): the rule runs on
  the primals and tangents batched together, and ``vmap`` maps over those
  batched only as a primal or only as a tangent;
* reverse mode: none, as in JAX (its linear part is not a linear primitive);
  wrap the function in ``custom_vjp`` (outside the ``custom_vmap``) for that.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from fungrad._dtype_classes import is_inexact

from fungrad.core import Primitive, get_aval, eval_jaxpr
from fungrad.custom_derivatives import _being_linearized, _derived_rule
from fungrad.interpreters import ad, batching
from fungrad.interpreters import partial_eval as pe
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.partial_eval import as_value, trace_to_jaxpr
from fungrad.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["custom_vmap", "sequential_vmap", "custom_vmap_call_p"]

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.inline = True        # jit splices the function's jaxpr


def _impl(*args, jaxpr, rule):
    return list(eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))


custom_vmap_call_p.def_impl(_impl)
custom_vmap_call_p.def_abstract_eval(lambda *avals, jaxpr, rule: list(jaxpr.out_avals))


def _batch(axis_size, vals, dims, jaxpr, rule):
    vals, _ = batching.bdims_to_front(vals, dims)
    outs, out_flags = rule(axis_size, [d is not None for d in dims], vals)
    return list(outs), [0 if b else None for b in out_flags]


custom_vmap_call_p.batch = _batch


def _differentiable(aval) -> bool:
    return is_inexact(aval.dtype)


def _jvp(primals, tangents, jaxpr, rule):
    if any(_being_linearized(t) for t in tangents):
        raise TypeError(
            "custom_vmap functions have no reverse-mode derivative (grad, vjp, linearize), "
            "as in JAX: their derivative is the JVP of a batching rule, which is not a "
            "linear map fungrad can transpose. Wrap the custom_vmap function in "
            "custom_vjp (custom_vjp outside, custom_vmap inside) to define one.")
    nonzeros = tuple(_differentiable(a) for a in jaxpr.in_avals)
    t_in = [ad.instantiate_zeros(t) for t, nz in zip(tangents, nonzeros) if nz]
    jvp_call, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=True)
    jvp_rule = _derived_rule(rule, ("jvp", nonzeros, tuple(out_nonzeros)),
                             lambda: _jvp_of_rule(rule, nonzeros, tuple(out_nonzeros),
                                                  list(jaxpr.out_avals)))
    outs = custom_vmap_call_p.bind(*primals, *t_in, jaxpr=jvp_call, rule=jvp_rule)
    n_out = len(jaxpr.out_avals)
    t_outs = iter(outs[n_out:])
    return (outs[:n_out], [next(t_outs) if nz else Zero(aval)
                           for nz, aval in zip(out_nonzeros, jaxpr.out_avals)])


custom_vmap_call_p.jvp = _jvp


def _jvp_of_rule(rule, nonzeros, out_nonzeros, out_avals):
    """The flat rule of the JVP call: inputs are the primals, then the tangents
    of the differentiable ones; outputs the primals, then the nonzero tangents.

    Arguments batched both as primal and as tangent reach ``rule`` batched;
    the others are mapped over by ``vmap``, which composes with the rule's
    own (per-lane unbatched) evaluation."""
    n = len(nonzeros)

    def jvp_rule(axis_size, flags, flat):
        primals, tangents = list(flat[:n]), list(flat[n:])
        p_flags, it = flags[:n], iter(flags[n:])
        t_flags = [next(it) if nz else False for nz in nonzeros]
        both = [p and t for p, t in zip(p_flags, t_flags)]
        rule_flags = []

        def call_rule(*ps):
            outs, out_flags = rule(axis_size, both, list(ps))
            rule_flags[:] = out_flags
            return outs

        def jvp_outputs(*ps_ts):
            ps = ps_ts[:n]
            ts = ad.tangents_from(nonzeros, ps_ts[n:], [get_aval(p) for p in ps])
            outs, t_outs = ad.jvp_flat(call_rule, list(ps), ts)
            kept = [_instantiate(t, aval) for t, aval, nz in zip(t_outs, out_avals, out_nonzeros)
                    if nz]
            return list(outs) + kept
        extra = ([0 if p and not t else None for p, t in zip(p_flags, t_flags)]
                 + [0 if t and not p else None
                    for p, t, nz in zip(p_flags, t_flags, nonzeros) if nz])
        outs, dims = batching.vmap_keeping_dims(jvp_outputs, primals + tangents, extra,
                                                axis_size)
        outs = [o if d is None else batching.moveaxis(o, d, 0) for o, d in zip(outs, dims)]
        mapped = [d is not None for d in dims]
        t_rule_flags = [f for f, nz in zip(rule_flags, out_nonzeros) if nz]
        flags_out = ([r or m for r, m in zip(rule_flags, mapped[:len(out_avals)])]
                     + [r or m for r, m in zip(t_rule_flags, mapped[len(out_avals):])])
        return outs, flags_out
    return jvp_rule


def _instantiate(t, aval):
    if type(t) is Zero:
        return ad.instantiate_zeros(Zero(aval))
    return t


custom_vmap_call_p.transpose = None


class custom_vmap:
    """A function whose batching under ``vmap`` is given by ``def_vmap``.

    The rule is ``rule(axis_size, in_batched, *args) -> (out, out_batched)``:
    ``in_batched`` is a list with one pytree of bools per argument (``True``:
    that leaf has the batch axis, of size ``axis_size``, first); ``out_batched``
    has the structure of ``out``.  Not differentiable in reverse mode (as
    JAX): put ``custom_vjp`` outside it for that."""

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise TypeError(f"custom_vmap: expected a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        if not callable(vmap_rule):
            raise TypeError(f"custom_vmap.def_vmap: expected a callable rule "
                            f"rule(axis_size, in_batched, *args), got {type(vmap_rule).__name__}")
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "<function>")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        if kwargs:
            import inspect
            try:
                bound = inspect.signature(self.fun).bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"custom_vmap function {name}: the arguments could not be "
                                f"resolved to positional ones: {e}") from None
            args = bound.args + tuple(bound.kwargs.values()) if bound.kwargs else bound.args
        leaves, in_tree = tree_flatten(tuple(args))
        leaves = [as_value(x) for x in leaves]
        out_tree = []

        def flat(*xs):
            out_leaves, tree = tree_flatten(self.fun(*tree_unflatten(in_tree, list(xs))))
            out_tree.append(tree)
            return [as_value(x) for x in out_leaves]
        jaxpr, consts = trace_to_jaxpr(flat, [get_aval(x).strip_weak_type() for x in leaves],
                                       name=f"custom_vmap({name})")
        closed, hoisted = pe.closure_convert(jaxpr, consts)
        rule = _user_rule(self.vmap_rule, name, len(hoisted), in_tree, out_tree[0],
                          list(closed.out_avals))
        outs = custom_vmap_call_p.bind(*hoisted, *leaves, jaxpr=closed, rule=rule)
        return tree_unflatten(out_tree[0], outs)


def _user_rule(vmap_rule, name, num_consts, in_tree, out_tree, out_avals):
    """The user's pytree rule as a flat rule; checks what it returns."""
    def rule(axis_size, flags, flat):
        if any(flags[:num_consts]):
            raise TypeError(f"custom_vmap function {name} closes over a value that is being "
                            "vmapped; pass it as an argument so that its batching rule sees it")
        args = tree_unflatten(in_tree, list(flat[num_consts:]))
        in_batched = list(tree_unflatten(in_tree, list(flags[num_consts:])))
        out, out_batched = vmap_rule(axis_size, in_batched, *args)
        return _check_rule_output(name, axis_size, out, out_batched, out_tree, out_avals)
    return rule


def _check_rule_output(name, axis_size, out, out_batched, out_tree, out_avals):
    outs, tree = tree_flatten(out)
    flags, flag_tree = tree_flatten(out_batched)
    if tree != flag_tree:
        raise ValueError(f"custom_vmap rule of {name}: the output and the batching "
                         f"specification it returned differ in structure: {tree} vs {flag_tree}")
    if tree != out_tree:
        raise ValueError(f"custom_vmap rule of {name}: its output's structure {tree} is not "
                         f"the function's, {out_tree}")
    for i, (o, b, aval) in enumerate(zip(outs, flags, out_avals)):
        shape = tuple(get_aval(o).shape)
        want = ((axis_size,) if b else ()) + tuple(aval.shape)
        if shape != want:
            raise ValueError(f"custom_vmap rule of {name}: output {i} has shape {shape}; "
                             f"with out_batched={bool(b)} it must be {want} (the function's "
                             f"output {tuple(aval.shape)}, batch axis first when batched)")
    return outs, [bool(b) for b in flags]


def sequential_vmap(f: Callable) -> custom_vmap:
    """``custom_vmap`` whose rule calls ``f`` once per lane (``lax.map``): for
    functions with no batched form (a callback, a solver written for one
    problem)."""
    from fungrad import lax
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        mapped = tree_map(lambda b, x: x if b else None, list(in_batched), list(args))

        def one_lane(lane_args):
            merged = tree_map(lambda b, m, x: m if b else x, list(in_batched), lane_args,
                              list(args), is_leaf=lambda x: x is None)
            return f(*merged)
        out = lax.map(one_lane, mapped)
        return out, tree_map(lambda _: True, out)
    return f
