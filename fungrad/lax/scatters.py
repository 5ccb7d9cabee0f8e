"""The scatter primitives: ``x[index] = u``, ``x[index] += u`` (``np.add.at``),
``*=``, min and max, with NumPy index tuples described by indexers
(lax/indexing.py's module docstring: the indexer format, out-of-bounds modes,
repeated indices, derivatives and batching of gather and the scatters)."""
from __future__ import annotations

import numpy as np

from fungrad.core import Primitive, ShapedArray, Tracer, get_aval, operand_weak_type
from fungrad.interpreters import batching
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal, tangent_aval
from fungrad.interpreters.lowering import Source, call
from fungrad.lax.kernels import scatter as _scatter_kernels
from fungrad.lax.utils import checked_bind, def_lowering, as_operand
from fungrad.lax import indexing_numba, structural
from fungrad.lax.indexing import (_array_dims, _batched_index, _check_indexer, _clip_src,
                                  _index_src, _valid_src, _wrap_src, _zeros, build_indexer,
                                  flat_positions, gather, gather_p, output_layout)
from fungrad.lax.xla_scatter import mode_name, numpy_index

__all__ = [
    "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
    "scatter_apply", "scatter_p", "scatter_add_p", "scatter_mul_p", "scatter_min_p",
    "scatter_max_p",
]


# ----------------------------------------------------------------------------
# scatters: x[index] = u, x[index] += u (np.add.at), *=, min, max
# ----------------------------------------------------------------------------

def _scatter_shape_rule(name):
    def rule(operand, *args, indexer, mode, unique_indices):
        *indices, updates = args
        if mode not in ("clip", "drop"):
            raise ValueError(f"{name}: mode must be 'clip' or 'drop', got {mode!r}")
        _, shape = _check_indexer(name, operand, indexer, indices)
        if updates.shape != shape:
            raise TypeError(f"{name}: updates of shape {updates.shape} do not match the "
                            f"shape {shape} of the indexed operand (broadcast them first)")
        if updates.dtype != operand.dtype and not updates.weak_type:
            raise TypeError(f"{name}: updates dtype {updates.dtype.name} differs from the "
                            f"operand dtype {operand.dtype.name}; convert the updates")
        return ShapedArray(operand.shape, operand.dtype)
    return rule


def _scatter_impl_for(ufunc):
    """NumPy impl: ``ufunc.at`` (or assignment) at the flat operand positions."""
    def impl(operand, *args, indexer, mode, unique_indices):
        *indices, updates = args
        out = np.array(operand, copy=True, order="C")   # C order: reshape(-1) is a view
        if out.size == 0:
            return out
        positions, valid = flat_positions(out.shape, indexer, indices, mode)
        updates = np.broadcast_to(np.asarray(updates, out.dtype), positions.shape)
        if valid is not None:
            valid = np.broadcast_to(valid, positions.shape)
            positions, updates = positions[valid], updates[valid]
        flat = out.reshape(-1)
        if ufunc is None:
            flat[positions] = updates
        elif ufunc is np.add:
            _scatter_kernels.add_at_flat(flat, positions, updates)
        else:
            ufunc.at(flat, positions, updates)
        return out
    return impl


def _scatter_batch_for(prim):
    def rule(axis_size, vals, dims, indexer, **params):
        operand, *indices, updates = vals
        odim, *idims, udim = dims
        operand = batching.bdim_at_front(operand, odim, axis_size)
        new = _batched_index(axis_size, operand, 0, indices, idims, indexer)
        updates = batching.bdim_at_front(updates, udim, axis_size)
        updates = structural.transpose(updates, new.to_new)
        return prim.bind(new.operand, *new.indices, updates, indexer=new.indexer, **params), 0
    prim.batch = rule


def _gather_like(ct, indices, indexer, mode):
    """``ct[index]`` as the scatter with this ``mode`` addressed it (dropped
    updates read 0)."""
    return gather_p.bind(ct, *indices, indexer=indexer,
                         mode="fill" if mode == "drop" else "clip", fill_value=0)


def _define_scatter(name, ufunc):
    p = Primitive(name)
    p.weak_type_rule = operand_weak_type
    p.def_impl(_scatter_impl_for(ufunc))
    p.def_abstract_eval(_scatter_shape_rule(name))
    _scatter_batch_for(p)
    return p


# --- scatter_add: linear in the operand and the updates together ------------------

scatter_add_p = _define_scatter("scatter_add", np.add)


def _scatter_jvp(prim, tangent_of):
    """A scatter's JVP: the result, and a zero tangent when neither the operand's
    nor the updates' is nonzero, else ``tangent_of(out, primals, t_operand,
    t_updates, params)``."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        t_op, t_upd = tangents[0], tangents[-1]
        if type(t_op) is Zero and type(t_upd) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        return out, tangent_of(out, primals, t_op, t_upd, params)
    return jvp


def _linear_scatter_jvp(prim):
    """scatter_add and scatter (set) are linear in (operand, updates) together:
    the tangent is the same scatter of the tangents."""
    def tangent_of(out, primals, t_op, t_upd, params):
        return prim.bind(instantiate_zeros(t_op), *primals[1:-1], instantiate_zeros(t_upd),
                         **params)
    return _scatter_jvp(prim, tangent_of)


def _scatter_add_transpose(ct, operand, *args, indexer, mode, unique_indices):
    *indices, updates = args
    ct_op = ct if is_undefined_primal(operand) else None
    ct_upd = (_gather_like(ct, indices, indexer, mode)
              if is_undefined_primal(updates) else None)
    return [ct_op] + [None] * len(indices) + [ct_upd]


scatter_add_p.jvp = _linear_scatter_jvp(scatter_add_p)
scatter_add_p.transpose = _scatter_add_transpose
scatter_add_p.linear = True


# --- scatter (set): linear too; only the winning duplicate gets a cotangent ------

scatter_p = _define_scatter("scatter", None)
scatter_p.keeps_finite = True


def _winning_updates(operand_shape, indices, updates_shape, indexer, mode):
    """1 where an update is the one that landed (duplicates: one wins), else 0.

    Each update scatters its own id; reading the ids back shows who won."""
    from fungrad import lax
    ids = np.arange(1, int(np.prod(updates_shape, dtype=np.int64)) + 1).reshape(updates_shape)
    landed = scatter_p.bind(np.zeros(operand_shape, ids.dtype), *indices, ids,
                            indexer=indexer, mode=mode, unique_indices=False)
    return lax.eq(_gather_like(landed, indices, indexer, mode), ids)


def _aval(x):
    """The aval of a transpose rule's argument: the linear one (an UndefinedPrimal)
    or a constant (an array or tracer: the other side may be a constant)."""
    return x.aval if is_undefined_primal(x) else get_aval(x)


def _scatter_transpose(ct, operand, *args, indexer, mode, unique_indices):
    from fungrad import lax
    *indices, updates = args
    params = dict(indexer=indexer, mode=mode, unique_indices=unique_indices)
    ct_op = ct_upd = None
    if is_undefined_primal(operand):
        ct_op = scatter_p.bind(ct, *indices, _zeros(_aval(updates)), **params)
    if is_undefined_primal(updates):
        ct_upd = _gather_like(ct, indices, indexer, mode)
        if not unique_indices:
            won = _winning_updates(_aval(operand).shape, indices, updates.aval.shape,
                                   indexer, mode)
            ct_upd = lax.mul(ct_upd, lax.convert_element_type(won, updates.aval.dtype))
    return [ct_op] + [None] * len(indices) + [ct_upd]


scatter_p.jvp = _linear_scatter_jvp(scatter_p)
scatter_p.transpose = _scatter_transpose
scatter_p.linear = True


# --- scatter_mul: linear in the operand; differentiable in the updates ---------------

scatter_mul_p = _define_scatter("scatter_mul", np.multiply)


def _indices_unique(operand_shape, indices, indexer, mode) -> bool:
    """Whether the (concrete) indices address distinct operand elements."""
    if any(isinstance(i, Tracer) for i in indices):
        return False
    if int(np.prod(operand_shape, dtype=np.int64)) == 0:
        return True
    positions, valid = flat_positions(operand_shape, indexer, indices, mode)
    if valid is not None:
        positions = positions[np.broadcast_to(valid, positions.shape)]
    return np.unique(positions).size == np.size(positions)


def _scatter_mul_jvp(primals, tangents, indexer, mode, unique_indices):
    from fungrad import lax
    operand, *indices, updates = primals
    params = dict(indexer=indexer, mode=mode, unique_indices=unique_indices)
    out = scatter_mul_p.bind(*primals, **params)
    t_op, t_upd = tangents[0], tangents[-1]
    parts = []
    if type(t_op) is not Zero:
        parts.append(scatter_mul_p.bind(t_op, *indices, updates, **params))
    if type(t_upd) is not Zero:
        if not (unique_indices or _indices_unique(get_aval(operand).shape, indices, indexer, mode)):
            t_upd = lax.mul(t_upd, _product_of_others(get_aval(operand).shape, indices, updates,
                                                      params))
        zeros = structural.full(get_aval(operand).shape, 0, get_aval(t_upd).dtype)
        spread = scatter_add_p.bind(zeros, *indices, t_upd, **params)
        parts.append(lax.mul(operand, spread))
    if not parts:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, parts[0] if len(parts) == 1 else lax.add(*parts)


def _product_of_others(operand_shape, indices, updates, params):
    """For each update u_j, the product of the other updates landing where it lands.

    With repeated indices, d/du_j of x[p] * prod_k u_k is x[p] * prod_{k != j} u_k.
    Without dividing by zero: for u_j != 0 it is prod_k u_k / u_j; for u_j == 0
    it is the product of the nonzero updates at p times that of the other zero
    ones (1 if there are none; the other zero itself if there is one, so that
    its derivative is right; else 0).  Written with primitives, so derivatives
    of every order are exact wherever at most two updates at a position are
    exactly zero (and of orders 1 and 2 everywhere)."""
    from fungrad import lax
    aval = get_aval(updates)
    const = lambda v: structural.full(aval.shape, v, aval.dtype)
    at_position = lambda prim, init, vals: _gather_like(
        prim.bind(structural.full(operand_shape, init, aval.dtype), *indices, vals, **params),
        indices, params["indexer"], params["mode"])
    is_zero = lax.eq(updates, const(0))
    safe = lax.select(is_zero, const(1), updates)
    total = at_position(scatter_mul_p, 1, updates)
    nonzero_product = at_position(scatter_mul_p, 1, safe)
    n_zero = at_position(scatter_add_p, 0, lax.convert_element_type(is_zero, aval.dtype))
    zero_sum = at_position(scatter_add_p, 0, lax.select(is_zero, updates, const(0)))
    other_zeros = lax.select(lax.eq(n_zero, const(1)), const(1),
                             lax.select(lax.eq(n_zero, const(2)),
                                        lax.sub(zero_sum, updates), const(0)))
    return lax.select(is_zero, lax.mul(nonzero_product, other_zeros), lax.div(total, safe))


def _scatter_mul_transpose(ct, operand, *args, indexer, mode, unique_indices):
    *indices, updates = args
    if is_undefined_primal(updates):
        raise TypeError("scatter_mul is linear only in its operand, not its updates")
    ct_op = scatter_mul_p.bind(ct, *indices, updates, indexer=indexer, mode=mode,
                               unique_indices=unique_indices)
    return [ct_op] + [None] * (len(indices) + 1)


scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose
scatter_mul_p.linear = True


# --- scatter_min / scatter_max: the tangent of a tie is the mean of the winners ----

def _scatter_extremal_jvp(prim):
    def tangent_of(out, primals, t_op, t_upd, params):
        from fungrad import lax
        operand, *indices, updates = primals
        dtype = get_aval(out).dtype
        as_float = lambda m: lax.convert_element_type(m, dtype)
        won_upd = as_float(lax.eq(updates, _gather_like(out, indices, params["indexer"],
                                                         params["mode"])))
        won_op = as_float(lax.eq(operand, out))
        zeros = structural.full(get_aval(out).shape, 0, dtype)
        count = lax.add(won_op, scatter_add_p.bind(zeros, *indices, won_upd, **params))
        total = lax.add(lax.mul(won_op, instantiate_zeros(t_op)),
                        scatter_add_p.bind(zeros, *indices,
                                           lax.mul(won_upd, instantiate_zeros(t_upd)), **params))
        return lax.div(total, count)
    prim.jvp = _scatter_jvp(prim, tangent_of)


scatter_min_p = _define_scatter("scatter_min", np.minimum)
scatter_min_p.keeps_finite = True
scatter_max_p = _define_scatter("scatter_max", np.maximum)
scatter_max_p.keeps_finite = True
_scatter_extremal_jvp(scatter_min_p)
_scatter_extremal_jvp(scatter_max_p)


# --- public scatter functions -------------------------------------------------------

def _scatter_mode(mode):
    mode = mode_name(mode, "scatter")
    if mode in (None, "drop", "fill", "promise_in_bounds"):
        return "drop"
    if mode == "clip":
        return "clip"
    raise ValueError(f"scatter: unknown mode {mode!r}; use 'drop', 'clip', 'fill' or "
                     "'promise_in_bounds'")


def _broadcast_updates(updates, shape, who):
    """Broadcast ``updates`` to ``shape`` as NumPy assignment does (leading
    size-1 dimensions of the updates may be dropped)."""
    ushape = get_aval(updates).shape
    while len(ushape) > len(shape) and ushape[0] == 1:
        ushape = ushape[1:]
    try:
        if np.broadcast_shapes(ushape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"{who}: updates of shape {get_aval(updates).shape} cannot be "
                         f"broadcast to the indexed shape {tuple(shape)}") from None
    updates = structural.reshape(updates, ushape)
    lead = len(shape) - len(ushape)
    return structural.broadcast_in_dim(updates, tuple(shape),
                                       tuple(range(lead, len(shape))))


def _scatter_public(prim, who):
    def fn(operand, index, updates, dimension_numbers=None, *, indices_are_sorted=False,
           mode=None, unique_indices=False):
        from fungrad import lax
        operand = as_operand(operand)
        aval = get_aval(operand)
        if dimension_numbers is not None:      # JAX's XLA-style call (xla_scatter.py)
            index = numpy_index(aval.shape, as_operand(index), np.shape(updates),
                                dimension_numbers, f"lax.{who}")
        indexer, arrays = build_indexer(aval.shape, index, f"lax.{who}")
        _, shape = output_layout(indexer, [get_aval(a).shape for a in arrays], aval.shape)
        updates = as_operand(updates, like=operand)
        if get_aval(updates).dtype != aval.dtype:
            updates = lax.convert_element_type(updates, aval.dtype)
        updates = _broadcast_updates(updates, shape, f"lax.{who}")
        return checked_bind(prim, operand, *arrays, updates, indexer=indexer,
                                       mode=_scatter_mode(mode),
                                       unique_indices=bool(unique_indices))
    fn.__name__ = who
    fn.__doc__ = (f"``{who}`` at the NumPy index ``index`` (see the module docstring). "
                  "Updates broadcast to ``x[index]``; mode: 'drop' (default) drops "
                  "out-of-bounds updates, 'clip' clamps. JAX's XLA-style call, "
                  "``(operand, scatter_indices, updates, ScatterDimensionNumbers(...))``, "
                  "is accepted too (lax/xla_scatter.py).")
    return fn


scatter = _scatter_public(scatter_p, "scatter")
scatter_add = _scatter_public(scatter_add_p, "scatter_add")
scatter_mul = _scatter_public(scatter_mul_p, "scatter_mul")
scatter_min = _scatter_public(scatter_min_p, "scatter_min")
scatter_max = _scatter_public(scatter_max_p, "scatter_max")


def scatter_sub(operand, index, updates, dimension_numbers=None, *, indices_are_sorted=False,
                mode=None, unique_indices=False):
    """``x[index] -= updates`` (a scatter_add of the negated updates)."""
    from fungrad import lax
    return scatter_add(operand, index, lax.neg(as_operand(updates, like=operand)),
                       dimension_numbers, mode=mode, unique_indices=unique_indices)



def scatter_apply(operand, index, func, *, indices_are_sorted=False, unique_indices=False,
                  mode=None):
    """``operand`` with ``func`` applied to the elements at the NumPy index
    ``index`` (``jax.lax.scatter_apply`` with a NumPy index, like fungrad's other
    scatters); an element indexed k times gets ``func`` applied k times, as in
    JAX.  ``func`` is a function of one scalar (applied elementwise through
    vmap).  mode: 'drop' (default) ignores out-of-bounds entries, 'clip' clamps
    them.  Differentiable (JAX's is not)."""
    from fungrad import lax
    operand = as_operand(operand)
    aval = get_aval(operand)
    values = gather(operand, index, mode="clip")
    scatter_mode = _scatter_mode(mode)
    if unique_indices:
        return scatter(operand, index, _elementwise(func, values), mode=scatter_mode)
    indexer, arrays = build_indexer(aval.shape, index, "lax.scatter_apply")
    times = _times_indexed(aval.shape, indexer, arrays, scatter_mode)
    rounds = None if isinstance(times, Tracer) else int(np.max(times, initial=0))
    if rounds is not None:                     # known multiplicities: unrolled rounds
        for k in range(rounds):
            applied = _elementwise(func, values)
            values = applied if k == 0 else lax.select(times > k, applied, values)
    else:
        def body(k, vals):
            more = lax.gt(times, lax.convert_element_type(k, np.int32))
            return lax.select(more, _elementwise(func, vals), vals)
        values = lax.fori_loop(0, lax.reduce_max(times, tuple(range(times.ndim))), body,
                               values)
    # every entry of a repeated position holds the same value: any may win the scatter
    return scatter(operand, index, values, mode=scatter_mode)


def _times_indexed(shape, indexer, arrays, mode):
    """How many entries of the index hit each indexed element, in the layout of
    ``x[index]`` (int32): NumPy's scatter-add of ones, then a gather, directly
    from the impls when the index arrays are concrete."""
    if not any(isinstance(a, Tracer) for a in arrays):
        arrays = [np.asarray(a) for a in arrays]
        _, out_shape = output_layout(indexer, [a.shape for a in arrays], shape)
        counts = scatter_add_p.impl(np.zeros(shape, np.int32), *arrays,
                                    np.ones(out_shape, np.int32), indexer=indexer, mode=mode,
                                    unique_indices=False)
        return gather_p.impl(counts, *arrays, indexer=indexer, mode="clip", fill_value=None)
    _, out_shape = output_layout(indexer, [get_aval(a).shape for a in arrays], shape)
    counts = scatter_add_p.bind(structural.full(shape, 0, np.int32), *arrays,
                                structural.full(out_shape, 1, np.int32), indexer=indexer,
                                mode=mode, unique_indices=False)
    return gather_p.bind(counts, *arrays, indexer=indexer, mode="clip", fill_value=None)


def _elementwise(func, x):
    """The scalar function ``func`` on every element of ``x`` (vmapped)."""
    shape = get_aval(x).shape
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return x
    flat = structural.reshape(x, (size,))
    (out,) = batching.vmap_flat(lambda v: [as_operand(func(v), like=v)], [flat], [0], size, [0])
    if get_aval(out).shape != (size,) or get_aval(out).dtype != get_aval(x).dtype:
        raise TypeError(f"scatter_apply: func must map a {get_aval(x).dtype.name} scalar to "
                        f"a scalar of the same dtype, got {get_aval(out).dtype.name}"
                        f"{list(get_aval(out).shape[1:])}")
    return structural.reshape(out, shape)


# ----------------------------------------------------------------------------
# Lowerings of the scatters (NumPy source for jit)
# ----------------------------------------------------------------------------

def _positions_src(x, arrays, indexer, mode):
    """Source of (flat positions, in-bounds mask) of ``x[index]`` (see flat_positions)."""
    dims, nd = _array_dims(indexer), sum(e[0] != "none" for e in indexer)
    drop = mode == "drop"
    ext = "(" + "".join(f"{x}.shape[{d}]{' + 1' if drop and d in dims else ''}, "
                        for d in range(nd)) + ")"

    def fixed(a, d):
        w = _wrap_src(a, x, d)
        if drop:
            return f"np.where(({w} < 0) | ({w} >= {x}.shape[{d}]), {x}.shape[{d}], {w})"
        return f"np.clip({w}, 0, {x}.shape[{d}] - 1)"
    index = _index_src(x, arrays, indexer, fixed)
    coords = [f"np.broadcast_to(np.arange(_E[{d}]).reshape({tuple(-1 if k == d else 1 for k in range(nd))}), _E)[_I]"
              for d in range(nd)]
    pos = " + ".join(f"np.minimum({c}, {x}.shape[{d}] - 1) * int(np.prod({x}.shape[{d + 1}:]))"
                     for d, c in enumerate(coords)) or "np.zeros((), np.int64)"
    valid = " & ".join(f"({coords[d]} < {x}.shape[{d}])" for d in dims) if drop and dims else "True"
    return f"(lambda _E, _I: ({pos}, {valid}))({ext}, {index})"


# the value an out-of-bounds (dropped) update is replaced by: it changes nothing
# (for floats -0.0: x + 0.0 would turn a -0.0 at the clamped position into +0.0)
_IDENTITY_SRC = {
    "add": "(np.negative(np.zeros((), {x}.dtype)) if {x}.dtype.kind in 'fc' else 0)",
    "multiply": "1",
    "minimum": "(np.iinfo({x}.dtype).max if {x}.dtype.kind in 'iu' else "
               "True if {x}.dtype.kind == 'b' else np.inf)",
    "maximum": "(np.iinfo({x}.dtype).min if {x}.dtype.kind in 'iu' else "
               "False if {x}.dtype.kind == 'b' else -np.inf)",
}


def _scatter_lowering_for(ufunc_name):
    """``np.<ufunc>.at`` on a copy at the clamped index; dropped updates are
    replaced by the ufunc's identity.  A dropping ``set`` has no identity, so
    it writes through the flat positions of the in-bounds elements."""
    def lower(args, indexer, mode, unique_indices):
        x, arrays, u = args[0], args[1:-1], args[-1]
        copy = f"np.array({x}, copy=True, order='C')"
        if ufunc_name is None and mode == "drop" and arrays:
            sel = "np.broadcast_to(_pv[1], _pv[0].shape)"
            vals = f"np.broadcast_to({u}, _pv[0].shape)[{sel}]"
            apply = f"_o.reshape(-1).__setitem__(_pv[0][{sel}], {vals})"
            return Source(f"(lambda _o, _pv: ({apply}, _o)[1])({copy}, "
                          f"{_positions_src(x, arrays, indexer, mode)}) if np.size({x}) "
                          f"else {copy}")
        index = _index_src(x, arrays, indexer, _clip_src(x))
        if ufunc_name is None:
            return Source(f"(lambda _o: (_o.__setitem__({index}, {u}), _o)[1])({copy}) "
                          f"if np.size({x}) else {copy}")
        vals = u
        if mode == "drop" and arrays:
            identity = _IDENTITY_SRC[ufunc_name].format(x=x)
            vals = f"np.where({_valid_src(x, arrays, indexer)}, {u}, {identity})"
        if ufunc_name == "add":     # np.add.at, or bincount for many repeats
            return Source(f"{{}} if np.size({x}) else {copy}",
                          call(_scatter_kernels.add_at, Source(copy), Source(index), Source(vals)))
        return Source(f"(lambda _o: (np.{ufunc_name}.at(_o, {index}, {vals}), _o)[1])({copy}) "
                      f"if np.size({x}) else {copy}")
    return lower


def_lowering(scatter_p, _scatter_lowering_for(None))
def_lowering(scatter_add_p, _scatter_lowering_for("add"))
def_lowering(scatter_mul_p, _scatter_lowering_for("multiply"))
def_lowering(scatter_min_p, _scatter_lowering_for("minimum"))
def_lowering(scatter_max_p, _scatter_lowering_for("maximum"))

# the compiled backend's scatters: a copy, then loops over the updates
for _prim in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    _prim.numba_block = indexing_numba.scatter_numba
