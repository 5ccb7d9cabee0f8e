"""``shard_map``: run a function on the blocks of a mesh (``jax.shard_map``).

``shard_map(f, mesh=mesh, in_specs=..., out_specs=...)(*args)`` splits each
argument into blocks along the mesh axes its ``PartitionSpec`` names, calls
``f`` once per mesh position on that position's blocks, and assembles the
outputs from their blocks by ``out_specs``.  Inside ``f`` the collectives
(``lax.psum``, ``pmean``, ``all_gather``, ``ppermute``, ...) act across the
positions along a mesh axis.  The body is traced once, to a jaxpr on the
block shapes, and bound as the primitive ``shard_map_p``::

    shard_map : (blocks a -> blocks b) -> global a -> global b

Its rules, written with derived jaxprs of the body (as the control-flow
primitives do):

* impl: on a mesh of Dask workers, ``fungrad.distributed.execute`` runs the
  body as stages of generated NumPy code on the workers; on a mesh of this
  process's devices the body runs here as a nested named ``vmap`` over the
  mesh axes — the single-machine reference, with the same collectives;
* jvp: shard_map of the body's JVP (tangents sharded as their primals);
* partial eval (linearize, grad): a known shard_map whose residuals stay
  per position (a leading axis split over every mesh axis) and an unknown one;
* transpose: shard_map of the body's transpose.  Cotangents of outputs that
  are replicated over some mesh axes are divided among the copies, and the
  cotangents of inputs replicated over some axes are summed over them (psum);
  inside the body ``psum`` transposes to ``psum``;
* batch (vmap of a shard_map): shard_map of the batched body, the batch axis
  an unsplit leading axis;
* jit: the generated code calls the shard_map (one line).

``check_vma=True`` (JAX's default) checks statically that an output whose
out_specs leaves a mesh axis out (replicated over it) does not vary along that
axis (it must come from a ``psum``/``pmean``/``all_gather`` over it, or from
values replicated over it).
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from fungrad import core, lax
from fungrad.core import (ClosedJaxpr, Jaxpr, Literal, Primitive, ShapedArray, Tracer, bind_on,
                          eval_jaxpr, get_aval)
from fungrad.interpreters import ad, batching, codegen
from fungrad.interpreters.ad import Zero
from fungrad.interpreters.partial_eval import partial_eval_jaxpr, stage_pytree, trace_closed
from fungrad.interpreters.passes import inline_calls
from fungrad.sharding import (Mesh, PartitionSpec, ShardedArray, block_shape, check_spec,
                              global_shape, merge_blocks, split_blocks)
from fungrad.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["shard_map", "shard_map_p", "smap"]


# ----------------------------------------------------------------------------
# Static analysis of a body: which mesh axes each value varies over
# ----------------------------------------------------------------------------

_REDUCING = frozenset({"psum", "pmax", "pmin", "all_gather"})   # output invariant over the axis


def varying_axes(jaxpr: Jaxpr, in_vma) -> list[frozenset]:
    """The mesh axes each output of ``jaxpr`` varies over, given its inputs'.

    A value varies over an axis if it depends on an input split over it, or on
    ``axis_index``/``ppermute``/``psum_scatter``/``all_to_all`` over it, not
    undone by a ``psum``/``pmax``/``pmin``/``all_gather`` over it.
    """
    env = dict(zip(jaxpr.invars, in_vma))
    read = lambda a: frozenset() if isinstance(a, Literal) else env.get(a, frozenset())
    for eqn in jaxpr.eqns:
        ins = frozenset().union(*[read(a) for a in eqn.inputs])
        prim, name = eqn.primitive, eqn.params.get("axis_name")
        if prim.inline and "jaxpr" in eqn.params:          # a nested jit: look inside
            outs = varying_axes(eqn.params["jaxpr"].jaxpr, [read(a) for a in eqn.inputs])
        elif prim.collective is not None or getattr(prim, "makes_varying", False):
            out = ins - {name} if prim.name in _REDUCING else ins | {name}
            outs = [out] * len(eqn.outvars)
        else:
            outs = [ins] * len(eqn.outvars)
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def _sub_jaxprs(eqn):
    for v in eqn.params.values():
        for sub in (v if isinstance(v, tuple) else (v,)):
            if isinstance(sub, ClosedJaxpr):
                yield sub.jaxpr
            elif isinstance(sub, Jaxpr):
                yield sub


def _collectives_in(jaxpr: Jaxpr) -> list[str]:
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.collective is not None:
            found.append(eqn.primitive.name)
        for sub in _sub_jaxprs(eqn):
            found += _collectives_in(sub)
    return found


def check_supported(jaxpr: Jaxpr) -> None:
    """NotImplementedError naming the construct if a collective sits inside a
    control-flow body (or another sub-jaxpr than a nested jit) or a shard_map
    is nested: stages are split only at top-level collectives."""
    for eqn in jaxpr.eqns:
        if eqn.primitive is shard_map_p:
            raise NotImplementedError("shard_map: a shard_map nested inside a shard_map body "
                                      "is not supported; use one shard_map over a mesh with "
                                      "all the axes")
        if eqn.primitive.inline and "jaxpr" in eqn.params:
            check_supported(eqn.params["jaxpr"].jaxpr)
            continue
        for sub in _sub_jaxprs(eqn):
            inside = _collectives_in(sub)
            if inside:
                name = eqn.primitive.name
                raise NotImplementedError(
                    f"shard_map: the collective {inside[0]} inside a {name} "
                    f"({_CONSTRUCTS.get(name, name)}) body is not supported; compute it outside "
                    f"the {name}, before or after it")


_CONSTRUCTS = {"while": "lax.while_loop / fori_loop", "scan": "lax.scan / fori_loop / map",
               "cond": "lax.cond / switch", "checkpoint": "fungrad.checkpoint",
               "custom_jvp_call": "custom_jvp", "custom_vjp_call": "custom_vjp"}


# ----------------------------------------------------------------------------
# The primitive
# ----------------------------------------------------------------------------

shard_map_p = Primitive("shard_map", multiple_results=True)


def _params(body, mesh, in_specs, out_specs, check_vma):
    return dict(body=body, mesh=mesh, in_specs=tuple(in_specs), out_specs=tuple(out_specs),
                check_vma=check_vma)


def _abstract_eval(*avals, body, mesh, in_specs, out_specs, check_vma):
    # (weakly typed as the body's outputs, as JAX's)
    return [ShapedArray(global_shape(a.shape, s, mesh), a.dtype, a.weak_type)
            for a, s in zip(body.out_avals, out_specs)]


def _impl(*args, body, mesh, in_specs, out_specs, check_vma):
    if mesh.is_distributed:
        from fungrad.distributed import execute
        return execute.run(body, mesh, in_specs, out_specs, args)
    return _run_in_process(body, mesh, in_specs, out_specs, args)


shard_map_p.def_impl(_impl)
shard_map_p.def_abstract_eval(_abstract_eval)
# its body may make weak outputs of strong operands (a Python constant, a
# transpose's conversion back to a weak operand's type): evaluated eagerly
# too, its outputs take the abstract rule's weak types
shard_map_p.weak_from_params = True


def _run_in_process(body, mesh, in_specs, out_specs, args):
    """Every mesh position at once, as nested named vmaps over the mesh axes."""
    blocks = [split_blocks(np.asarray(x), s, mesh) for x, s in zip(args, in_specs)]
    avals = tuple(ShapedArray(b.shape, b.dtype) for b in blocks)
    key = ("shard_map_in_process", mesh.axis_names, mesh.axis_sizes, in_specs, avals)
    comp = body.derived(key, lambda: _compile_in_process(body, mesh, in_specs, avals))
    outs = comp.fn(*comp.consts, *blocks)
    results = []
    for y, s in zip(outs, out_specs):
        # every output comes back with one leading axis per mesh axis; keep one
        # copy along the axes its spec replicates it over
        y = np.asarray(y)[tuple(slice(None) if n in s.mesh_axes() else 0 for n in mesh.axis_names)]
        results.append(core.wrap_array(np.array(merge_blocks(y, s, mesh), order="C")))
    return results


def _compile_in_process(body, mesh, in_specs, avals):
    flat = inline_calls(body)       # (a jit inside a vmap cannot see the mesh axes)
    n_out = len(body.out_avals)
    fun = lambda *xs: eval_jaxpr(flat.jaxpr, flat.consts, *xs)
    for name in reversed(mesh.axis_names):
        in_dims = [0 if name in s.mesh_axes() else None for s in in_specs]
        fun = _vmap_axis(fun, in_dims, mesh.shape[name], n_out, name)
    return codegen.compiled(trace_closed(fun, list(avals)))


def _vmap_axis(fun, in_dims, size, n_out, name):
    return lambda *xs: batching.vmap_flat(fun, xs, in_dims, size, [0] * n_out, axis_name=name)


# --- jvp ----------------------------------------------------------------------

def _jvp(primals, tangents, body, mesh, in_specs, out_specs, check_vma):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    with batching.extend_axis_env(mesh.shape):
        jvp_body, out_nz = ad.jvp_jaxpr(body, nonzeros)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    specs_in = in_specs + tuple(s for s, nz in zip(in_specs, nonzeros) if nz)
    specs_out = out_specs + tuple(s for s, nz in zip(out_specs, out_nz) if nz)
    outs = shard_map_p.bind(*primals, *nz_tangents,
                            **_params(jvp_body, mesh, specs_in, specs_out, check_vma))
    n = len(out_specs)
    it = iter(outs[n:])
    out_avals = _abstract_eval(body=body, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                               check_vma=check_vma)
    t_out = [next(it) if nz else Zero(ad.tangent_aval(a)) for nz, a in zip(out_nz, out_avals)]
    return outs[:n], t_out


shard_map_p.jvp = _jvp


# --- partial evaluation (linearize) ---------------------------------------------

def _residual_spec(mesh: Mesh) -> PartitionSpec:
    # a residual is a per-position value: a leading axis split over every mesh axis
    return PartitionSpec(tuple(mesh.axis_names))


def _split_body(body, unknowns, mesh):
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(body, list(unknowns))
    n_known = len(known.out_avals) - num_res

    def known_fn(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        return outs[:n_known] + [lax.expand_dims(r, (0,)) for r in outs[n_known:]]

    def unknown_fn(*xs):
        res = [lax.squeeze(r, (0,)) for r in xs[:num_res]]
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[num_res:])
    res_avals = known.out_avals[n_known:]
    unknown_avals = [ShapedArray((1,) + a.shape, a.dtype, a.weak_type) for a in res_avals] + \
        list(unknown.in_avals[num_res:])
    return (trace_closed(known_fn, known.in_avals), trace_closed(unknown_fn, unknown_avals),
            tuple(out_unknowns), num_res)


def _partial_eval(trace, args, body, mesh, in_specs, out_specs, check_vma):
    unknowns = tuple(trace.owns(a) for a in args)
    with batching.extend_axis_env(mesh.shape):
        known, unknown, out_unknowns, num_res = body.derived(
            ("shard_map_partial_eval", unknowns), lambda: _split_body(body, unknowns, mesh))
    res_specs = (_residual_spec(mesh),) * num_res
    k_in = tuple(s for s, u in zip(in_specs, unknowns) if not u)
    k_out = tuple(s for s, u in zip(out_specs, out_unknowns) if not u) + res_specs
    known_args = [a for a, u in zip(args, unknowns) if not u]
    known_outs = bind_on(trace.parent, shard_map_p, known_args,
                         _params(known, mesh, k_in, k_out, check_vma))
    n_known = len(known_outs) - num_res
    residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
    u_in = res_specs + tuple(s for s, u in zip(in_specs, unknowns) if u)
    u_out = tuple(s for s, u in zip(out_specs, out_unknowns) if u)
    staged = trace.stage(shard_map_p, list(residuals) + [a for a, u in zip(args, unknowns) if u],
                         _params(unknown, mesh, u_in, u_out, check_vma))
    k, s = iter(known_outs), iter(staged)
    return [next(s) if u else next(k) for u in out_unknowns]


shard_map_p.partial_eval = _partial_eval


# --- transpose ----------------------------------------------------------------

def _replicated_over(spec: PartitionSpec, mesh: Mesh) -> tuple:
    return tuple(n for n in mesh.axis_names if n not in spec.mesh_axes())


def _transpose_body(body, linear, mesh, in_specs, out_specs, ct_weak):
    """ClosedJaxpr(res, T a -o T b) -> ClosedJaxpr(res, T b -o T a), per block: the
    body's transpose, with the copies of replicated values accounted for;
    staged at the cotangents' weak types ``ct_weak`` (as JAX's)."""
    t = ad.transpose_jaxpr(body, linear, ct_weak)
    lin_specs = [s for s, is_lin in zip(in_specs, linear) if is_lin]
    n_res = len(linear) - len(lin_specs)

    def transposed(*args):
        res, cts = args[:n_res], args[n_res:]
        # an output replicated over k positions is one value: its cotangent is
        # shared among the copies (and summed back by psum's transpose, psum)
        scaled = []
        for ct, spec in zip(cts, out_specs):
            k = math.prod(mesh.shape[n] for n in _replicated_over(spec, mesh))
            dtype = get_aval(ct).dtype
            scaled.append(ct if k == 1 or not ad.is_float(dtype) else
                          lax.div(ct, np.asarray(k, dtype)))
        cts_in = eval_jaxpr(t.jaxpr, t.consts, *res, *scaled)
        out = []
        for ct, spec in zip(cts_in, lin_specs):   # an input used by k copies: sum their cts
            axes = _replicated_over(spec, mesh)
            out.append(lax.psum(ct, axes) if axes and ad.is_float(get_aval(ct).dtype) else ct)
        return out
    nonlin_avals = [a for a, is_lin in zip(body.in_avals, linear) if not is_lin]
    ct_avals = ad.with_ct_weak([ad.tangent_aval(a) for a in body.out_avals], ct_weak)
    return trace_closed(transposed, nonlin_avals + ct_avals)


def _transpose(cts, *args, body, mesh, in_specs, out_specs, check_vma):
    linear = tuple(ad.is_undefined_primal(a) for a in args)
    cts = [ad.instantiate_zeros(c) for c in cts]
    ct_weak = tuple(get_aval(c).weak_type for c in cts)     # (the transpose follows them)
    with batching.extend_axis_env(mesh.shape):
        t_body = body.derived(("shard_map_transpose", linear, in_specs, out_specs, ct_weak),
                              lambda: _transpose_body(body, linear, mesh, in_specs, out_specs,
                                                      ct_weak))
    res = [a for a in args if not ad.is_undefined_primal(a)]
    res_specs = tuple(s for s, lin in zip(in_specs, linear) if not lin)
    lin_specs = tuple(s for s, lin in zip(in_specs, linear) if lin)
    outs = iter(shard_map_p.bind(*res, *cts, **_params(t_body, mesh, res_specs + out_specs,
                                                       lin_specs, check_vma)))
    return [next(outs) if lin else None for lin in linear]


shard_map_p.transpose = _transpose
shard_map_p.linear = True


# --- batching (vmap of a shard_map) ----------------------------------------------

def _batch(axis_size, vals, dims, body, mesh, in_specs, out_specs, check_vma):
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    in_dims = tuple(None if d is None else 0 for d in dims)
    with batching.extend_axis_env(mesh.shape):
        b_body = batching.batch_jaxpr(body, axis_size, in_dims)
    b_in = tuple(s if d is None else PartitionSpec(None, *s) for s, d in zip(in_specs, in_dims))
    b_out = tuple(PartitionSpec(None, *s) for s in out_specs)
    outs = shard_map_p.bind(*vals, **_params(b_body, mesh, b_in, b_out, check_vma))
    return outs, [0] * len(outs)


shard_map_p.batch = _batch


# --- jit: the generated code calls the shard_map ------------------------------

class _ShardMapCall:
    """What jit-compiled code calls for a shard_map equation."""
    __slots__ = ("params",)

    def __init__(self, params):
        self.params = params

    def __call__(self, *args):
        return _impl(*args, **self.params)

    def __repr__(self):
        return f"<shard_map over {self.params['mesh']}>"


def _emit(block, eqn, args, out_names):
    fn = block.names.const(_ShardMapCall(eqn.params))
    target = ", ".join(out_names) + "," if out_names else "_"
    block.line(f"{target} = {fn}({', '.join(args)})  # shard_map over {eqn.params['mesh']}")


shard_map_p.emit_block = _emit


# ----------------------------------------------------------------------------
# The user-facing function
# ----------------------------------------------------------------------------

def _spec_leaves(specs, treedef, what: str) -> list[PartitionSpec]:
    """One PartitionSpec per leaf of ``treedef``: ``specs`` is a tree prefix."""
    is_spec = lambda x: isinstance(x, PartitionSpec) or x is None
    leaves, spec_tree = tree_flatten(specs, is_leaf=is_spec)
    for leaf in leaves:
        if not isinstance(leaf, PartitionSpec) and leaf is not None:
            raise TypeError(f"shard_map {what} must be a PartitionSpec (P(...)) or a pytree of "
                            f"them, got {leaf!r}; use P() for a replicated value")
    try:
        subtrees = spec_tree.flatten_up_to(tree_unflatten(treedef, [0] * treedef.num_leaves))
    except (ValueError, TypeError) as err:
        raise ValueError(f"shard_map {what} must be a tree prefix of the {_WHAT[what]}: got "
                         f"{what}={specs!r} for structure {treedef}. ({err})") from None
    out = []
    for spec, sub in zip(leaves, subtrees):
        n = len(tree_flatten(sub)[0])
        if spec is None and n:      # (None: a part with no arrays, e.g. a None output)
            raise TypeError(f"shard_map {what} must be a PartitionSpec (P(...)) or a pytree "
                            f"of them, got None for a part holding {n} array(s); use P() "
                            f"for a replicated value")
        out += [spec.normalized()] * n if n else []
    return out


_TRACE_CACHE_SIZE = 256     # signatures kept per shard_map'd function
_WHAT = {"in_specs": "positional arguments", "out_specs": "outputs"}


class _ShardMapped:
    def __init__(self, f, mesh, in_specs, out_specs, check_vma):
        functools.update_wrapper(self, f)
        self.f, self.mesh, self.in_specs, self.out_specs = f, mesh, in_specs, out_specs
        self.check_vma = check_vma
        self._cache: dict = {}

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"shard_map'd functions take positional arguments only (in_specs "
                            f"matches them), got keyword arguments {sorted(kwargs)}")
        paths, in_tree = tree_flatten_with_path(args)
        leaves = [_as_value(x) for _, x in paths]
        specs = _spec_leaves(self.in_specs, in_tree, "in_specs")
        avals = [get_aval(x) for x in leaves]
        mesh = self._current_mesh()
        key = (in_tree, tuple(specs), tuple((a.shape, a.dtype, a.weak_type) for a in avals),
               mesh)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._trace(paths, in_tree, specs, avals, mesh)
            if not hit[1]:
                if len(self._cache) >= _TRACE_CACHE_SIZE:    # bounded, as jit's cache
                    self._cache.pop(next(iter(self._cache)), None)
                self._cache[key] = hit
        closed, hoisted, out_tree, out_specs = hit
        in_specs = (PartitionSpec(),) * len(hoisted) + tuple(specs)
        outs = shard_map_p.bind(*hoisted, *leaves, **_params(closed, mesh, in_specs,
                                                             out_specs, self.check_vma))
        return tree_unflatten(out_tree, outs)

    def _current_mesh(self) -> Mesh:
        """The mesh given to shard_map, else the one ``set_mesh`` put in context."""
        if self.mesh is not None:
            return self.mesh
        from fungrad.sharding import get_mesh
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("shard_map: no mesh: pass mesh=..., or put one in context with "
                             "jax.set_mesh(mesh)")
        return mesh

    def _trace(self, paths, in_tree, specs, avals, mesh):
        blocks = []
        for (path, _), spec, aval in zip(paths, specs, avals):
            what = f"shard_map argument args{keystr(path)} (in_specs {spec})"
            blocks.append(ShapedArray(block_shape(aval.shape, spec, mesh, what), aval.dtype,
                                      aval.weak_type))
        with batching.extend_axis_env(mesh.shape):
            closed, hoisted, out_tree = stage_pytree(lambda a: self.f(*a), in_tree, blocks)
        check_supported(closed.jaxpr)
        out_specs = _spec_leaves(self.out_specs, out_tree, "out_specs")
        for i, (spec, aval) in enumerate(zip(out_specs, closed.out_avals)):
            check_spec(spec, mesh, f"shard_map out_specs for output {i}", aval.ndim)
        if self.check_vma:
            in_vma = [frozenset()] * len(hoisted) + [frozenset(s.mesh_axes()) for s in specs]
            _check_replication(varying_axes(closed.jaxpr, in_vma), out_specs)
        return closed, hoisted, out_tree, tuple(out_specs)


def _check_replication(out_vma, out_specs):
    for i, (vma, spec) in enumerate(zip(out_vma, out_specs)):
        missing = sorted(vma - set(spec.mesh_axes()))
        if missing:
            raise ValueError(
                f"shard_map out_specs for output {i} is {spec}, which says the output is "
                f"replicated over mesh axis {missing[0]!r}, but it varies over that axis (it "
                f"depends on a block split over {missing[0]!r}). Reduce it with lax.psum/pmean/"
                f"all_gather over {missing[0]!r}, name {missing[0]!r} in its out_specs, or pass "
                "check_vma=False to take any one copy.")


def _as_value(x):
    if isinstance(x, (Tracer, ShardedArray, np.ndarray, np.generic, bool, int, float, complex)):
        return x
    value = np.asarray(x)
    if value.dtype == object:
        raise TypeError(f"shard_map: argument of type {type(x).__name__} is not an array")
    return value


def shard_map(f: Callable | None = None, /, *, mesh: Mesh | None = None, in_specs, out_specs,
              check_vma: bool = True, check_rep: bool | None = None, axis_names=None):
    """Map ``f`` over the blocks of ``mesh`` (see the module docstring); without
    ``mesh``, the one ``jax.set_mesh`` put in context when the function is called.

    ``in_specs``/``out_specs``: PartitionSpecs (pytree prefixes of the
    positional arguments and of the outputs).  ``check_vma``: check that
    outputs claimed replicated are (``check_rep`` is its older name).  Usable
    as a decorator: ``@partial(shard_map, mesh=..., in_specs=..., out_specs=...)``.
    """
    if f is None:
        return lambda g: shard_map(g, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                   check_vma=check_vma, check_rep=check_rep,
                                   axis_names=axis_names)
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be a fungrad.sharding.Mesh, got "
                        f"{type(mesh).__name__}")
    if axis_names is not None and mesh is not None and set(axis_names) != set(mesh.axis_names):
        raise NotImplementedError("shard_map: axis_names (manual over some mesh axes only) is "
                                  "not supported; every mesh axis is manual")
    if check_rep is not None:
        check_vma = check_rep
    return _ShardMapped(f, mesh, in_specs, out_specs, bool(check_vma))


# ----------------------------------------------------------------------------
# smap: a shard_map over one axis of the mesh in context
# ----------------------------------------------------------------------------

class _InferAxes:
    def __repr__(self):
        return "Infer"


Infer = _InferAxes()


def _axis_spec(axis_name, axis):
    if axis is None:
        return PartitionSpec()
    if not isinstance(axis, int) or isinstance(axis, bool) or axis < 0:
        raise TypeError(f"smap: axes must be non-negative ints or None, got {axis!r}")
    return PartitionSpec(*([None] * axis), axis_name)


def smap(f: Callable | None = None, /, *, in_axes=Infer, out_axes, axis_name):
    """``jax.smap``: ``f`` mapped over the mesh axis ``axis_name`` of the mesh
    in context (``jax.set_mesh``), each instance seeing its block of the
    arguments split along ``in_axes`` (an int or None for all, or a tuple per
    positional argument) and producing its block of the outputs, assembled
    along ``out_axes``.  A shard_map whose specs name only ``axis_name``;
    values are replicated over the mesh's other axes."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is Infer:
        raise TypeError("smap: in_axes must be given (fungrad does not infer them from "
                        "explicitly sharded types)")
    if in_axes is not None and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, or a tuple of entries "
                        f"corresponding to the positional arguments, but got {in_axes}.")
    from fungrad.tree_util import tree_map
    to_spec = lambda a: _axis_spec(axis_name, a)            # noqa: E731
    in_specs = to_spec(in_axes) if not isinstance(in_axes, tuple) else \
        tree_map(to_spec, in_axes, is_leaf=lambda a: a is None)
    out_specs = tree_map(to_spec, out_axes, is_leaf=lambda a: a is None)
    return shard_map(f, in_specs=in_specs, out_specs=out_specs)
