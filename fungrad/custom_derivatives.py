"""``custom_jvp``: functions with a hand-written JVP rule (``jax.custom_jvp``).

    @fungrad.custom_jvp
    def log1pexp(x):
        return fnp.log1p(fnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * fungrad.nn.sigmoid(x)

The function is staged into a jaxpr and bound as ``custom_jvp_call_p``, whose
params carry the jaxpr and the (hashable) Python JVP rule:

* eval and jit: the function's own jaxpr (jit inlines it like a nested call);
* jvp: the user's rule runs on the parent trace, so reverse mode (linearize +
  transpose) and higher orders differentiate what the rule returns;
* vmap: the function's jaxpr is batched and the rule is wrapped in a vmap with
  the same axes, giving another ``custom_jvp_call``.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from fungrad import core
from fungrad.core import ClosedJaxpr, Primitive, Tracer, get_aval, eval_jaxpr
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["custom_jvp", "custom_jvp_call_p"]


def _jit_module():
    import sys
    import fungrad.jit  # noqa: F401
    return sys.modules["fungrad.jit"]


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.inline = True        # codegen splices the function's jaxpr


def _impl(*args, jaxpr, jvp, num_consts, symbolic_zeros):
    comp = _jit_module().compiled(jaxpr)
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
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    in_dims = tuple(None if d is None else 0 for d in dims)
    jit = _jit_module()
    b_jaxpr = jit._cached("custom_jvp_batch", jaxpr, (in_dims, axis_size),
                          lambda: jit._batch_jaxpr(jaxpr, in_dims, axis_size))
    b_jvp = _batched_rule(jvp, in_dims, num_consts, axis_size, len(jaxpr.out_avals))
    outs = custom_jvp_call_p.bind(*vals, jaxpr=b_jaxpr, jvp=b_jvp, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


@functools.lru_cache(maxsize=None)
def _batched_rule(jvp, in_dims, num_consts, axis_size, n_out):
    """The rule, vmapped with the primals' batch axes (tangents share them)."""
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


def _merge_args(nondiff_argnums, nondiff, dyn):
    nd, it = dict(zip(sorted(nondiff_argnums), nondiff)), iter(dyn)
    return [nd[i] if i in nd else next(it) for i in range(len(nondiff) + len(dyn))]


class custom_jvp:
    """A function whose JVP (and so gradient) is given by ``defjvp``/``defjvps``."""

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp_rule = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False):
        """``jvp(primals, tangents) -> (primal_out, tangent_out)`` (tuples of args)."""
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
        leaves, in_tree = tree_flatten(tuple(dyn))
        leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
        out_tree = []

        def merge(dyn_args):
            it = iter(dyn_args)
            return [static[i] if i in static else next(it) for i in range(len(args))]

        def flat(*xs):
            out_leaves, tree = tree_flatten(self.fun(*merge(tree_unflatten(in_tree, list(xs)))))
            out_tree.append(tree)
            return [x if isinstance(x, Tracer) else np.asarray(x) for x in out_leaves]
        jit = _jit_module()
        jaxpr, consts = core.trace_to_jaxpr(flat, [get_aval(x).strip_weak_type() for x in leaves])
        closed, hoisted = jit._closure_convert(jaxpr, consts)
        rule = _flat_rule(self.jvp_rule, in_tree, merge_key=tuple(sorted(static.items(), key=repr)),
                          static=static, nargs=len(args), out_tree=out_tree[0])
        outs = custom_jvp_call_p.bind(*hoisted, *leaves, jaxpr=closed, jvp=rule,
                                      num_consts=len(hoisted), symbolic_zeros=self.symbolic_zeros)
        return tree_unflatten(out_tree[0], outs)


def _flat_rule(user_jvp, in_tree, merge_key, static, nargs, out_tree):
    """The user's pytree rule as ``rule(consts, leaves, tangent leaves)``; as in JAX,
    non-differentiable arguments come first: ``jvp(*nondiff, primals, tangents)``."""
    nondiff = [static[i] for i in sorted(static)]

    def rule(consts, leaves, tangents):
        primals = tree_unflatten(in_tree, list(leaves))
        tangent_args = tree_unflatten(in_tree, list(tangents))
        out, t_out = user_jvp(*nondiff, tuple(primals), tuple(tangent_args))
        out_leaves, tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        if tree != out_tree or t_tree != out_tree:
            raise TypeError(f"custom_jvp rule must return (primal_out, tangent_out) with the "
                            f"function's output structure {out_tree}; got {tree} and {t_tree}")
        return out_leaves, t_leaves
    rule.__name__ = getattr(user_jvp, "__name__", "jvp")
    return rule
