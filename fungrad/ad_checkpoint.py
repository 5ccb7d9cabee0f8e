"""``checkpoint`` / ``remat``: trade computation for memory in reverse mode.

``checkpoint(f)`` stages ``f`` into a jaxpr carried by ``remat_p``.  Evaluating
it, differentiating it forward or batching it behaves like ``f``.  What
changes is reverse mode (linearize): the forward pass keeps only the values a
*policy* calls saveable (by default none, besides ``f``'s inputs, which are kept
anyway); every other residual is *recomputed* from them in the backward pass,
inside the transposed ``remat_p``.  So a chain of checkpointed layers holds one
activation per layer between the passes instead of all of their residuals.

Policies have JAX's signature ``policy(prim, *avals, **params) -> bool`` (is
the output of this equation saveable?); ``checkpoint_policies`` holds JAX's
named ones.  ``checkpoint_name(x, name)`` tags a value for
``save_only_these_names`` / ``save_any_names_but_these``.

In jit-generated code a ``remat_p`` equation is emitted as its own block, so the
recomputation in the backward pass is not merged with the forward pass by
common-subexpression elimination (``prevent_cse`` is accepted for
compatibility; the blocks are never merged).
"""
from __future__ import annotations

import functools
import inspect
import weakref
from types import SimpleNamespace
from typing import Callable


from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr, Literal, Primitive, bind_on, eval_jaxpr, get_aval
from fungrad.interpreters import ad, batching
from fungrad.interpreters.codegen import compiled
from fungrad.interpreters.lowering import Source
from fungrad.interpreters.partial_eval import (StagingTrace, as_value, dce_jaxpr,
                                               partial_eval_jaxpr, stage_pytree, trace_closed)
from fungrad.lax.dot import dot_general_p
from fungrad.lax.utils import def_lowering
from fungrad.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "remat_p", "name_p",
           "saved_residuals", "print_saved_residuals"]


# ----------------------------------------------------------------------------
# checkpoint_name: an identity that tags a value for name-based policies
# ----------------------------------------------------------------------------

name_p = Primitive("name")
name_p.def_impl(lambda x, name: x)
name_p.def_abstract_eval(lambda x, name: x)
name_p.jvp = lambda primals, tangents, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.transpose = lambda ct, x, name: [ct]
name_p.linear = True
name_p.batch = lambda axis_size, vals, dims, name: (name_p.bind(vals[0], name=name), dims[0])
def_lowering(name_p, lambda args, name: Source(args[0]))
name_p.opaque_params = ("name",)      # a name is compared, never written into source


def checkpoint_name(x, name: str):
    """Tag ``x`` (any pytree) with ``name`` for ``save_only_these_names`` policies."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a string, got {type(name).__name__}")
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [name_p.bind(as_value(v),
                                             name=name) for v in leaves])


# ----------------------------------------------------------------------------
# Policies (JAX's names)
# ----------------------------------------------------------------------------

def _everything_saveable(prim, *avals, **params):
    return True


def _nothing_saveable(prim, *avals, **params):
    return False


def _dots_saveable(prim, *avals, **params):
    return prim is dot_general_p


def _dots_with_no_batch_dims_saveable(prim, *avals, **params):
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, _) = params["dimension_numbers"]
    return not lhs_batch


def _save_only_these_names(*names):
    names = frozenset(names)

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] in names
    policy.__name__ = f"save_only_these_names{tuple(sorted(names))}"
    return policy


def _save_any_names_but_these(*names):
    names = frozenset(names)

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] not in names
    policy.__name__ = f"save_any_names_but_these{tuple(sorted(names))}"
    return policy


def _save_from_both_policies(policy_1, policy_2):
    def policy(prim, *avals, **params):
        return policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params)
    return policy


checkpoint_policies = SimpleNamespace(
    everything_saveable=_everything_saveable,
    nothing_saveable=_nothing_saveable,
    dots_saveable=_dots_saveable,
    checkpoint_dots=_dots_saveable,
    dots_with_no_batch_dims_saveable=_dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=_dots_with_no_batch_dims_saveable,
    save_only_these_names=_save_only_these_names,
    save_any_names_but_these=_save_any_names_but_these,
    save_from_both_policies=_save_from_both_policies,
)


# ----------------------------------------------------------------------------
# The primitive
# ----------------------------------------------------------------------------

remat_p = Primitive("checkpoint", multiple_results=True)
remat_p.remat = True         # recomputing is its purpose: CSE must not merge it


def _remat_impl(*args, jaxpr, policy, prevent_cse):
    comp = compiled(jaxpr)
    return list(comp.fn(*comp.consts, *args))


remat_p.def_impl(_remat_impl)
remat_p.def_abstract_eval(lambda *avals, jaxpr, policy, prevent_cse: list(jaxpr.out_avals))
# its jaxpr may make weak outputs of strong operands (a Python constant, a
# transpose's conversion back to a weak operand's type): evaluated eagerly too,
# its outputs take the abstract rule's weak types
remat_p.weak_from_params = True


def _remat_jvp(primals, tangents, jaxpr, policy, prevent_cse):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    jvp_jaxpr, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    nz = [t for t in tangents if type(t) is not ad.Zero]
    outs = remat_p.bind(*primals, *nz, jaxpr=jvp_jaxpr, policy=policy, prevent_cse=prevent_cse)
    n = len(jaxpr.out_avals)
    return outs[:n], ad.tangents_from(out_nonzeros, outs[n:], jaxpr.out_avals)


remat_p.jvp = _remat_jvp


def _remat_partial_eval(trace, args, jaxpr, policy, prevent_cse):
    """Known part now, saving only what ``policy`` allows; the unknown part is a
    ``remat_p`` that first recomputes the other residuals from the known inputs."""
    unknowns = tuple(trace.owns(a) for a in args)
    known, recompute_and_apply, out_unknowns, n_saved = jaxpr.derived(
        ("remat_pe", unknowns, policy), lambda: _split_remat(jaxpr, unknowns, policy))
    known_args = [a for a, u in zip(args, unknowns) if not u]
    params = dict(policy=policy, prevent_cse=prevent_cse)
    known_outs = bind_on(trace.parent, remat_p, known_args, dict(jaxpr=known, **params))
    n_out = len(known_outs) - n_saved
    saved, known_outs = known_outs[n_out:], known_outs[:n_out]
    staged = trace.stage(remat_p, known_args + list(saved) + [a for a, u in zip(args, unknowns) if u],
                         dict(jaxpr=recompute_and_apply, **params))
    k, s = iter(known_outs), iter(staged)
    return [next(s) if u else next(k) for u in out_unknowns]


def _split_remat(closed: ClosedJaxpr, unknowns, policy):
    """(known: known ins -> known outs + saved residuals,
    recompute_and_apply: known ins + saved + unknown ins -> unknown outs,
    out_unknowns, number of saved residuals)."""
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, list(unknowns))
    kj = known.jaxpr
    n_out = len(kj.outvars) - num_res
    residuals = kj.outvars[n_out:]
    # any value the policy allows may be saved, if the recomputation needs it
    candidates = [v for e in kj.eqns if _saveable(policy, e) for v in e.outvars]
    saved = _needed(kj, candidates, residuals)
    saved_set = set(saved)
    eqns = [e for e in kj.eqns if not all(v in saved_set for v in e.outvars)]
    recompute = ClosedJaxpr(dce_jaxpr(Jaxpr(kj.constvars, kj.invars + saved, eqns,
                                            list(residuals)))[0], known.consts)
    # unsaved residuals are not computed in the forward pass at all
    known_saving = ClosedJaxpr(dce_jaxpr(Jaxpr(kj.constvars, kj.invars, kj.eqns,
                                               kj.outvars[:n_out] + saved))[0], known.consts)
    n_known_in = len(kj.invars)

    def recompute_and_apply(*xs):
        res = eval_jaxpr(recompute.jaxpr, recompute.consts, *xs[:n_known_in + len(saved)])
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[n_known_in + len(saved):])
    avals = (list(known.in_avals) + [v.aval for v in saved]
             + list(unknown.in_avals[num_res:]))
    return (known_saving, trace_closed(recompute_and_apply, avals), out_unknowns, len(saved))


def _saveable(policy, eqn) -> bool:
    avals = [get_aval(a.val) if type(a) is Literal else a.aval for a in eqn.inputs]
    return bool(policy(eqn.primitive, *avals, **eqn.params))


def _needed(jaxpr: Jaxpr, candidates, residuals) -> list:
    """The candidates that computing ``residuals`` reads, when every candidate
    is taken as given (so is not recomputed)."""
    given = set(candidates)
    eqns = [e for e in jaxpr.eqns if not all(v in given for v in e.outvars)]
    _, used = dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars + list(candidates), eqns,
                              list(residuals)))
    return [v for v, u in zip(candidates, used[len(jaxpr.invars):]) if u]


remat_p.partial_eval = _remat_partial_eval


def _remat_transpose(cts, *args, jaxpr, policy, prevent_cse):
    """The transposed body recomputes what the forward pass did not save: the
    equations that depend only on the nonlinear inputs run first inside it
    (``ad.transpose_jaxpr``), then the backward pass."""
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    nonlinear = [a for a in args if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = [get_aval(c).weak_type for c in cts]     # (the transpose follows them)
    outs = iter(remat_p.bind(*nonlinear, *cts, jaxpr=ad.transpose_jaxpr(jaxpr, linear, ct_weak),
                             policy=policy, prevent_cse=prevent_cse))
    return [next(outs) if lin else None for lin in linear]


remat_p.transpose = _remat_transpose
remat_p.linear = True


def _remat_batch(axis_size, vals, dims, jaxpr, policy, prevent_cse):
    vals, in_dims = batching.bdims_to_front(vals, dims)
    outs = remat_p.bind(*vals, jaxpr=batching.batch_jaxpr(jaxpr, axis_size, in_dims),
                        policy=policy, prevent_cse=prevent_cse)
    return outs, [0] * len(outs)


remat_p.batch = _remat_batch


def _remat_emit(block, eqn, args, out_names):
    # its own block: the passes never merge it with the forward computation
    outs = block.body(eqn.params["jaxpr"], list(args), extra_indent="")
    for o, n in zip(out_names, outs):
        block.line(f"{o} = {n}")
    # the body's own output names would keep its results alive past their last use
    inner = sorted({n for n in outs if n.isidentifier() and n not in args and n not in out_names})
    if inner:
        block.line(f"del {', '.join(inner)}")


remat_p.emit_block = _remat_emit


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------

_TRACE_CACHE_SIZE = 256     # signatures kept per checkpointed function

# The traces of a checkpointed function, per function (held weakly) and shared
# by every checkpoint() of it, as JAX caches them: checkpoint(f, policy=a) and
# checkpoint(f, policy=b) trace f once per signature, so a global f reads that
# changed in between is not seen (JAX's autodiff_remat notebook shows it).
_TRACES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _trace_cache(fun) -> dict:
    """(tree, avals, statics) -> (ClosedJaxpr, out tree) for ``fun``, oldest first."""
    try:
        cache = _TRACES.get(fun)
        if cache is None:
            cache = _TRACES[fun] = {}
        return cache
    except TypeError:           # not weakly referenceable or not hashable: per wrapper
        return {}


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True, policy=None,
               static_argnums: int | tuple = ()):
    """``jax.checkpoint``: ``fun`` whose residuals are recomputed in the backward
    pass unless ``policy`` (default ``nothing_saveable``) says to save them."""
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums)
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a callable, got {type(fun).__name__}")
    policy = _nothing_saveable if policy is None else policy
    if not callable(policy):
        raise TypeError("checkpoint: policy must be a callable such as "
                        "fungrad.checkpoint_policies.dots_saveable")
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    traced = _trace_cache(fun)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        # keyword arguments are traced like positional ones, as in JAX (haiku's
        # hk.remat passes its module's keyword arguments through)
        static = {i % len(args): args[i] for i in statics} if args else {}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten((tuple(dyn), kwargs))
        leaves = [as_value(x) for x in leaves]
        avals = [get_aval(x) for x in leaves]
        try:
            key = (in_tree, tuple(avals), tuple(sorted(static.items())))
            hit = traced.get(key)
        except TypeError:          # an unhashable static argument: no caching
            key, hit = None, None
        if hit is None:
            closed, hoisted, out_tree = _trace(fun, args, static, in_tree, avals)
            if key is not None and not hoisted:
                # like jit: a function closing over no tracers is traced once per
                # signature (closed-over arrays are baked in as constants)
                if len(traced) >= _TRACE_CACHE_SIZE:     # bounded, as jit's cache
                    traced.pop(next(iter(traced)), None)
                traced[key] = closed, out_tree
        else:
            (closed, out_tree), hoisted = hit, []
        outs = remat_p.bind(*hoisted, *leaves, jaxpr=closed, policy=policy,
                            prevent_cse=bool(prevent_cse))
        return tree_unflatten(out_tree, outs)
    return wrapped


def _trace(fun, args, static, in_tree, avals):
    def with_statics(dyn_and_kwargs):
        dyn, kwargs = dyn_and_kwargs
        it = iter(dyn)
        return fun(*[static[i] if i in static else next(it) for i in range(len(args))],
                   **kwargs)
    return stage_pytree(with_statics, in_tree, avals)


remat = checkpoint


# ----------------------------------------------------------------------------
# What the forward pass keeps: saved_residuals / print_saved_residuals
# ----------------------------------------------------------------------------

class _SourceTrace(StagingTrace):
    """A staging trace that remembers where in the user's code each equation
    was recorded (``file:line (function)``)."""
    __slots__ = ("sources",)

    def __init__(self, parent):
        super().__init__(parent)
        self.sources = {}

    def stage(self, prim, args, params):
        out = super().stage(prim, args, params)
        self.sources[self.eqns[-1]] = core._user_frame()
        return out


def saved_residuals(f: Callable, *args, **kwargs) -> list:
    """``[(aval, source), ...]``: the values reverse mode keeps from ``f``'s
    forward pass at these arguments (the residuals of ``linearize``), with
    where each comes from, as ``jax.ad_checkpoint.saved_residuals``.  Under
    ``checkpoint`` this shows what its policy saves."""
    leaves, in_tree = tree_flatten((args, kwargs))
    names = _argument_names(f, args, kwargs)

    def flat(*xs):
        a, kw = tree_unflatten(in_tree, list(xs))
        return [as_value(o) for o in tree_flatten(f(*a, **kw))[0]]
    trace = _SourceTrace(core.current_trace())
    with core.new_trace_context(trace):
        ins = [trace.new_arg(get_aval(as_value(x))) for x in leaves]
        residuals = ad.linearize_flat(flat, ins)[2]
        jaxpr, _ = trace.build(residuals)
    producers = {v: (e, i) for e in jaxpr.eqns for i, v in enumerate(e.outvars)}
    order = {e: k for k, e in enumerate(jaxpr.eqns)}
    found = {}
    for v in jaxpr.outvars:
        atom, eqn, i = _computed_at(v, producers)
        if id(atom) not in found:
            found[id(atom)] = (_rank(atom, eqn, jaxpr, order), atom.aval.strip_weak_type(),
                               _describe(atom, eqn, i, jaxpr, names, trace.sources))
    return [(aval, what) for _, aval, what in sorted(found.values(), key=lambda r: r[0])]


def _argument_names(f, args, kwargs) -> list[str]:
    """JAX's names of the flat arguments: ``argument W1``, ``argument params['w']``."""
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for path, _ in tree_flatten_with_path((args, kwargs))[0]:
        kind, key = path[0].idx, path[1]
        label = key.key if kind == 1 else params[key.idx] if key.idx < len(params) \
            else f"at position {key.idx}"
        names.append(f"argument {label}{keystr(path[2:])}")
    return names


_CALLS = ("jit", "checkpoint")          # calls whose outputs may be inputs passed through


def _computed_at(v, producers):
    """``(atom, eqn, output index)`` where ``v`` is really computed: through
    jit and checkpoint calls that only pass an input through (eqn None: ``v``
    is an argument, a constant or a literal)."""
    while type(v) is not Literal and v in producers:
        eqn, i = producers[v]
        inner = eqn.params["jaxpr"].jaxpr if eqn.primitive.name in _CALLS else None
        if inner is None or inner.outvars[i] not in inner.invars:
            return v, eqn, i
        v = eqn.inputs[inner.invars.index(inner.outvars[i])]
    return v, None, None


def _rank(atom, eqn, jaxpr, order):
    """JAX's order: literals, constants, arguments, then outputs in program order."""
    if eqn is not None:
        return (3, order[eqn])
    if type(atom) is Literal:
        return (0, 0)
    if atom in jaxpr.constvars:
        return (1, jaxpr.constvars.index(atom))
    return (2, jaxpr.invars.index(atom))


def _describe(atom, eqn, i, jaxpr, names, sources) -> str:
    if eqn is None:
        if type(atom) is Literal:
            return "from a literal"
        if atom in jaxpr.constvars:
            return "from a constant"
        return f"from the {names[jaxpr.invars.index(atom)]}"
    where = sources.get(eqn, "<unknown>")
    if eqn.primitive.name == "jit":
        return f"output of jitted function '{_user_name(eqn.params['name'])}' from {where}"
    prim, name = _inner_producer(eqn, i)
    if prim is name_p:
        return f"named '{name}' from {where}"
    return f"output of {prim.name} from {where}"


def _user_name(call_name: str) -> str:
    """The jitted function's own name, without the prefixes transformations add."""
    for prefix in ("known_", "unknown_", "jvp_", "vmap_", "transpose_"):
        while call_name.startswith(prefix):
            call_name = call_name[len(prefix):]
    return call_name


def _inner_producer(eqn, i):
    """(primitive, checkpoint name) that computed output ``i`` of ``eqn``,
    looking inside checkpoints (whose known part computes what they save)."""
    while eqn.primitive is remat_p:
        inner = eqn.params["jaxpr"].jaxpr
        v = inner.outvars[i]
        found = next(((e, k) for e in inner.eqns for k, o in enumerate(e.outvars) if o is v),
                     None)
        if found is None:
            break
        eqn, i = found
    return eqn.primitive, eqn.params.get("name") if eqn.primitive is name_p else None


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print ``saved_residuals(f, *args, **kwargs)``, one line per residual:
    ``f64[5] output of sin from file.py:3 (g)``."""
    for aval, source in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {source}")
