"""``jit_p``: a call of a staged jaxpr, compiled to NumPy once.

    jit_p(*args, jaxpr=ClosedJaxpr(args -> outs), name)

What ``fungrad.jit`` binds (``fungrad/jitting.py`` is the user-facing wrapper),
and what other rules bind to run a derived jaxpr as one compiled call (scan's
loop-invariant residuals).  Its rules only ask the interpreters for derived
jaxprs:

* eval: the compiled code of ``jaxpr`` (cached on it);
* jvp: a call of the jaxpr's JVP (per pattern of nonzero tangents);
* partial eval (linearize): a known call evaluated now and an unknown call
  staged, which takes the known call's residuals;
* transpose: a call of the jaxpr's transpose;
* vmap: a call of the batched jaxpr;
* lowering: nested calls are inlined into the enclosing generated code.

``closed_call_p`` (params ``call_jaxpr``: a ClosedJaxpr) and ``call_p``
(``call_jaxpr``: a Jaxpr without constvars) are JAX's plain calls of a jaxpr
(``jax.extend.core.primitives``), for interpreters and jaxprs built by hand:
evaluated equation by equation, and transformed by jit_p's rules, so their
derivatives and batched forms are jit calls (which codegen inlines).
"""
from __future__ import annotations

from fungrad.core import ClosedJaxpr, Primitive, bind_on, eval_jaxpr, get_aval
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.partial_eval import partial_eval_jaxpr
from fungrad.lax.control_flow.common import merge_lists, partition_list

__all__ = ["jit_p", "closed_call_p", "call_p"]

jit_p = Primitive("jit", multiple_results=True)
jit_p.inline = True          # codegen inlines nested calls


def _jit_impl(*args, jaxpr, name):
    comp = compiled(jaxpr)
    return list(comp.fn(*comp.consts, *args))


jit_p.def_impl(_jit_impl)
jit_p.def_abstract_eval(lambda *avals, jaxpr, name: list(jaxpr.out_avals))


def _jit_jvp(primals, tangents, jaxpr, name):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    jvp_jaxpr, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, jaxpr=jvp_jaxpr, name=f"jvp_{name}")
    n = len(jaxpr.out_avals)
    return outs[:n], ad.tangents_from(out_nonzeros, outs[n:], jaxpr.out_avals)


jit_p.jvp = _jit_jvp


def _jit_partial_eval(trace, args, jaxpr, name):
    """Split a call with some unknown inputs into a known call evaluated now and
    an unknown call staged into ``trace`` (which takes residuals + unknowns)."""
    unknowns = tuple(trace.owns(a) for a in args)
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    known_args, unknown_args = partition_list(unknowns, args)
    known_outs = bind_on(trace.parent, jit_p, known_args, dict(jaxpr=known, name=f"known_{name}"))
    n_known = len(known_outs) - num_res
    known_outs, residuals = known_outs[:n_known], known_outs[n_known:]
    staged = trace.stage(jit_p, list(residuals) + unknown_args,
                         dict(jaxpr=unknown, name=f"unknown_{name}"))
    return merge_lists(out_unknowns, known_outs, staged)


jit_p.partial_eval = _jit_partial_eval


def _jit_transpose(cts, *args, jaxpr, name):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    residuals, _ = partition_list(linear, args)
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = [get_aval(c).weak_type for c in cts]     # (the transpose follows them)
    ct_args = jit_p.bind(*residuals, *cts, jaxpr=ad.transpose_jaxpr(jaxpr, linear, ct_weak),
                         name=f"transpose_{name}")
    return merge_lists(linear, [None] * len(residuals), ct_args)


jit_p.transpose = _jit_transpose
jit_p.linear = True


def _jit_batch(axis_size, vals, dims, jaxpr, name):
    vals, in_dims = batching.bdims_to_front(vals, dims)
    outs = jit_p.bind(*vals, jaxpr=batching.batch_jaxpr(jaxpr, axis_size, in_dims),
                      name=f"vmap_{name}")
    return outs, [0] * len(outs)


jit_p.batch = _jit_batch


# ----------------------------------------------------------------------------
# closed_call_p and call_p: JAX's uncompiled calls, transformed as jit calls
# ----------------------------------------------------------------------------

closed_call_p = Primitive("closed_call", multiple_results=True)
call_p = Primitive("call", multiple_results=True)


def _closed(call_jaxpr) -> ClosedJaxpr:
    if isinstance(call_jaxpr, ClosedJaxpr):
        return call_jaxpr
    if call_jaxpr.constvars:
        raise TypeError("call_p takes a Jaxpr without constvars (its constants are "
                        "arguments); use closed_call_p with a ClosedJaxpr")
    return ClosedJaxpr(call_jaxpr, [])


def _as_jit_rule(rule, name):
    """jit_p's rule ``rule`` for a call whose jaxpr is the param ``call_jaxpr``."""
    def adapted(*args, call_jaxpr):
        return rule(*args, jaxpr=_closed(call_jaxpr), name=name)
    return adapted


def _call_emit(block, eqn, args, out_names):
    """Generated code: the called jaxpr's equations, in line."""
    outs = block.body(_closed(eqn.params["call_jaxpr"]), args, extra_indent="")
    for name, value in zip(out_names, outs):
        block.line(f"{name} = {value}")


for _prim in (closed_call_p, call_p):
    _prim.def_impl(lambda *args, call_jaxpr: eval_jaxpr(_closed(call_jaxpr).jaxpr,
                                                        _closed(call_jaxpr).consts, *args))
    _prim.def_abstract_eval(lambda *avals, call_jaxpr: list(_closed(call_jaxpr).out_avals))
    _prim.jvp = _as_jit_rule(_jit_jvp, _prim.name)
    _prim.partial_eval = _as_jit_rule(_jit_partial_eval, _prim.name)
    _prim.transpose = _as_jit_rule(_jit_transpose, _prim.name)
    _prim.linear = True
    _prim.batch = _as_jit_rule(_jit_batch, _prim.name)
    _prim.emit_block = _call_emit
