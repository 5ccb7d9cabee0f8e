"""Tensor products: the ``dot_general`` primitive with all of its rules, and
``dot``, ``batch_matmul`` and ``ragged_dot`` built on it.

``dot_general`` takes any dtype.  Its impl and lowering are transposes and
reshapes around one ``np.matmul`` (BLAS), never einsum loops; it is bilinear,
so its JVP and both transposes come from ``defbilinear``; batching folds the
vmapped axis into a batch or free dimension (no data movement).
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from fungrad._dtype_classes import compute_dtype, is_small, is_floating, is_integer
from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters.lowering import Source, call, scalar_type_name
from fungrad.interpreters.ad import defbilinear
from fungrad.lax.elementwise import convert_element_type, convert_weak_type
from fungrad.lax.structural import transpose
from fungrad.lax.utils import as_operand, check_precision, def_lowering

__all__ = ["dot_general", "dot", "batch_matmul", "ragged_dot", "ragged_dot_general",
           "scaled_dot", "RaggedDotDimensionNumbers", "dot_general_p"]

# ============================================================================
# dot_general
# ============================================================================
# dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch));
# the output has the batch dims, then lhs's free dims, then rhs's free dims,
# each group in increasing axis order (as JAX).

def _free_dims(ndim, contract, batch):
    return tuple(i for i in range(ndim) if i not in contract and i not in batch)


def _canonical_dimension_numbers(dimension_numbers, lhs_ndim, rhs_ndim):
    try:
        return _canonical_dimension_numbers_cached(dimension_numbers, lhs_ndim, rhs_ndim)
    except TypeError:  # unhashable (lists): canonicalise without the cache
        return _canonical_dimension_numbers_cached.__wrapped__(
            dimension_numbers, lhs_ndim, rhs_ndim)


@functools.lru_cache(maxsize=512)
def _canonical_dimension_numbers_cached(dimension_numbers, lhs_ndim, rhs_ndim):
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        dims = [tuple(operator.index(i) for i in d) for d in (lc, rc, lb, rb)]
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, "
                        "rhs_contracting), (lhs_batch, rhs_batch)), tuples of ints; got "
                        f"{dimension_numbers!r}") from None
    ndims = (lhs_ndim, rhs_ndim, lhs_ndim, rhs_ndim)
    dims = [tuple(i % n if -n <= i < n else i for i in d) for d, n in zip(dims, ndims)]
    return (dims[0], dims[1]), (dims[2], dims[3])


def _dot_general_shape(lhs, rhs, *, dimension_numbers, preferred_element_type):
    shape = _dot_general_out_shape(lhs.shape, lhs.dtype, rhs.shape, rhs.dtype,
                                   dimension_numbers)
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(shape, dtype)


@functools.lru_cache(maxsize=1024)
def _dot_general_out_shape(lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers):
    """The output shape; raises TypeError naming the shapes on bad input."""
    (lc, rc), (lb, rb) = dimension_numbers
    shapes = f"lhs shape {lhs_shape} and rhs shape {rhs_shape}"
    if lhs_dtype != rhs_dtype:
        raise TypeError(f"dot_general requires operands of the same dtype, got "
                        f"{lhs_dtype.name} and {rhs_dtype.name}. Convert one with "
                        "lax.convert_element_type, or use fungrad.numpy (matmul, dot, "
                        "einsum), which promotes dtypes as NumPy does.")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: lhs and rhs need as many contracting dims and as "
                        f"many batch dims as each other, got {dimension_numbers}")
    for side, shape, dims in (("lhs", lhs_shape, lc + lb), ("rhs", rhs_shape, rc + rb)):
        if any(not 0 <= d < len(shape) for d in dims) or len(set(dims)) != len(dims):
            raise TypeError(f"dot_general: {side} contracting/batch dims {dims} must be "
                            f"distinct axes of its shape {shape} ({shapes})")
    for what, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        if any(lhs_shape[i] != rhs_shape[j] for i, j in zip(ld, rd)):
            raise TypeError(f"dot_general: {what} dims must have equal sizes, got "
                            f"lhs dims {ld} of sizes {tuple(lhs_shape[i] for i in ld)} and "
                            f"rhs dims {rd} of sizes {tuple(rhs_shape[j] for j in rd)} "
                            f"for {shapes}")
    return (tuple(lhs_shape[i] for i in lb)
            + tuple(lhs_shape[i] for i in _free_dims(len(lhs_shape), lc, lb))
            + tuple(rhs_shape[i] for i in _free_dims(len(rhs_shape), rc, rb)))


def _is_matmul_layout(lhs_ndim, rhs_ndim, dimension_numbers):
    """True if np.matmul(lhs, rhs) is exactly this dot_general: a plain (1-D or
    2-D) product, or a stack of matrices with the batch dims leading."""
    (lc, rc), (lb, rb) = dimension_numbers
    if not lb:
        return lhs_ndim in (1, 2) and rhs_ndim in (1, 2) and lc == (lhs_ndim - 1,) and rc == (0,)
    nb = len(lb)
    return (lhs_ndim == rhs_ndim == nb + 2 and lb == rb == tuple(range(nb))
            and lc == (nb + 1,) and rc == (nb,))


def _dot_general_numpy(lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    # Canonical form (batch, free, contract) @ (batch, contract, free), then one
    # BLAS-backed np.matmul on 2-D or 3-D views (no einsum loops).
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if is_small(lhs.dtype):     # bfloat16, int4 ...: XLA's CPU way, in float32 (int8), rounded
        out = _dot_general_numpy(lhs.astype(compute_dtype(lhs.dtype)),
                                 rhs.astype(compute_dtype(rhs.dtype)),
                                 dimension_numbers=dimension_numbers)
        return out.astype(preferred_element_type or lhs.dtype)
    if _is_matmul_layout(lhs.ndim, rhs.ndim, dimension_numbers):
        out = np.matmul(lhs, rhs)
    else:
        out = _dot_general_by_matmul(lhs, rhs, dimension_numbers)
    if preferred_element_type is not None:
        out = out.astype(preferred_element_type, copy=False)
    return out


def _operand_steps(shape, units):
    """Reshape/transpose steps turning an operand of ``shape`` into
    ``(prod(unit) for unit in units)``, each unit a tuple of its axes (possibly
    empty).  When every unit is a run of consecutive axes, the runs are merged
    first (a view of a contiguous operand) and then transposed (a view); only
    otherwise does the transpose come first, and the merge then copies."""
    target = tuple(math.prod(shape[a] for a in u) for u in units)
    steps = []
    if all(u == tuple(range(u[0], u[0] + len(u))) for u in units if u):
        present = sorted((u for u in units if u), key=lambda u: u[0])
        merged = tuple(math.prod(shape[a] for a in u) for u in present)
        perm = tuple(present.index(u) for u in units if u)
        if merged != tuple(shape):
            steps.append(("reshape", merged))
        if perm != tuple(range(len(perm))):
            steps.append(("transpose", perm))
        if len(present) != len(units):               # empty units become size-1 axes
            steps.append(("reshape", target))
        return steps
    perm = tuple(a for u in units for a in u)
    if perm != tuple(range(len(shape))):
        steps.append(("transpose", perm))
    if tuple(shape[a] for a in perm) != target:
        steps.append(("reshape", target))
    return steps


def _matmul_plan(lhs_shape, rhs_shape, dimension_numbers):
    """(lhs steps, rhs steps, contraction size, output shape) of ``dot_general`` as
    one ``np.matmul`` of ``(*batch, m, k) @ (*batch, k, n)``: batch dims stay
    separate axes (matmul broadcasts over them), free and contracting dims merge."""
    (lc, rc), (lb, rb) = dimension_numbers
    if lc:      # pair order is free: sorting it by lhs axis lets runs merge as views
        lc, rc = (tuple(d) for d in zip(*sorted(zip(lc, rc))))
    lf, rf = _free_dims(len(lhs_shape), lc, lb), _free_dims(len(rhs_shape), rc, rb)
    lhs_steps = _operand_steps(lhs_shape, [(b,) for b in lb] + [lf, lc])
    rhs_steps = _operand_steps(rhs_shape, [(b,) for b in rb] + [rc, rf])
    out_shape = tuple(lhs_shape[i] for i in lb + lf) + tuple(rhs_shape[i] for i in rf)
    return lhs_steps, rhs_steps, math.prod(lhs_shape[i] for i in lc), out_shape


def _apply_steps(x, steps):
    for kind, arg in steps:
        x = np.reshape(x, arg) if kind == "reshape" else np.transpose(x, arg)
    return x


def _dot_general_by_matmul(lhs, rhs, dimension_numbers):
    lhs_steps, rhs_steps, k, out_shape = _matmul_plan(lhs.shape, rhs.shape, dimension_numbers)
    a, b = _apply_steps(lhs, lhs_steps), _apply_steps(rhs, rhs_steps)
    out = np.multiply(a, b) if k == 1 and dimension_numbers[1][0] else np.matmul(a, b)
    return out.reshape(out_shape)


def _dot_transpose_lhs(ct, x, y, *, dimension_numbers, preferred_element_type,
                       swap_ans=False):
    """Cotangent of ``x`` in ``dot_general(x, y)``: contract ``ct`` with ``y``
    over y's free dims, then put the result's axes back in x's order."""
    (xc, yc), (xb, yb) = dimension_numbers
    x_ndim, y_aval = x.aval.ndim, get_aval(y)
    x_kept, y_kept = _free_dims(x_ndim, xc, xb), _free_dims(y_aval.ndim, yc, yb)
    nb = len(xb)
    y_start = nb if swap_ans else nb + len(x_kept)
    ans_y = tuple(range(y_start, y_start + len(y_kept)))
    if get_aval(ct).dtype != y_aval.dtype:   # (only the dtype: a weak ct stays weak)
        ct = convert_element_type(ct, y_aval.dtype)
    res = dot_general(ct, y, ((ans_y, y_kept), (tuple(range(nb)), yb)))
    # res axes: x's batch dims, x's free dims, then x's contracting dims in the
    # order of the matching y axes.
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    layout = list(xb) + list(x_kept) + xc_by_y
    res = transpose(res, tuple(int(i) for i in np.argsort(layout)))
    if get_aval(res).dtype == x.aval.dtype:
        return res
    return convert_weak_type(res, x.aval.dtype, x.aval.weak_type)     # (as JAX's)


def _dot_transpose_rhs(ct, x, y, *, dimension_numbers, preferred_element_type):
    (xc, yc), (xb, yb) = dimension_numbers
    swapped = ((yc, xc), (yb, xb))
    return _dot_transpose_lhs(ct, y, x, dimension_numbers=swapped,
                              preferred_element_type=preferred_element_type, swap_ans=True)


def _dot_general_batch(axis_size, vals, dims, *, dimension_numbers, preferred_element_type):
    # No data movement: the vmapped axis becomes a batch dim (both mapped) or a
    # free dim (one side mapped) of a bigger dot_general.
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    up = lambda axes, d: tuple(a + (a >= d) for a in axes) if d is not None else axes
    lc2, lb2, rc2, rb2 = up(lc, ld), up(lb, ld), up(rc, rd), up(rb, rd)
    params = dict(preferred_element_type=preferred_element_type)
    if ld is not None and rd is not None:
        dn = ((lc2, rc2), ((ld,) + lb2, (rd,) + rb2))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc2, rc2), (lb2, rb2)), **params)
    if ld is not None:
        lf = _free_dims(get_aval(lhs).ndim, lc2, lb2)
        return out, len(lb) + lf.index(ld)
    lf_count = get_aval(lhs).ndim - len(lc) - len(lb)
    rf = _free_dims(get_aval(rhs).ndim, rc2, rb2)
    return out, len(lb) + lf_count + rf.index(rd)


def _dot_general_lower(args, in_avals, *, dimension_numbers, preferred_element_type):
    # The impl's plan as one expression: merges of consecutive axes before
    # transposes (views, BLAS reads transposed operands), batch dims left to
    # np.matmul's broadcasting, and one np.matmul.
    lhs, rhs = in_avals
    out_dtype = preferred_element_type
    if is_small(lhs.dtype):     # as the impl: in float32 (int8 for int4), then rounded
        up = scalar_type_name(compute_dtype(lhs.dtype))
        args = [Source(f"np.asarray({{}}).astype({up})", a) for a in args]
        out_dtype = preferred_element_type or lhs.dtype
    cast = (lambda expr: expr) if out_dtype is None else (
        lambda expr: Source(f"{{}}.astype({scalar_type_name(out_dtype)})", expr))
    if _is_matmul_layout(lhs.ndim, rhs.ndim, dimension_numbers):
        return cast(call(np.matmul, args[0], args[1]))
    lhs_steps, rhs_steps, k, out_shape = _matmul_plan(lhs.shape, rhs.shape, dimension_numbers)
    a, b = _emit_steps(args[0], lhs_steps), _emit_steps(args[1], rhs_steps)
    batch = dimension_numbers[1][0]
    # a contraction of size 1 is an outer product: broadcasting multiply beats
    # a batched matmul of (m, 1) x (1, n) blocks (per-example gradients)
    expr = call(np.multiply if k == 1 and batch else np.matmul, a, b)
    nb = len(batch)
    m = math.prod(lhs.shape[i] for i in _free_dims(lhs.ndim, dimension_numbers[0][0], batch))
    n = math.prod(rhs.shape[i] for i in _free_dims(rhs.ndim, dimension_numbers[0][1],
                                                   dimension_numbers[1][1]))
    if out_shape != out_shape[:nb] + (m, n):
        expr = call(np.reshape, expr, out_shape)
    return cast(expr)


def _emit_steps(expr, steps):
    for kind, arg in steps:
        if kind == "reshape":
            expr = call(np.reshape, expr, arg)
        elif tuple(arg) == (1, 0):
            # (the attribute and the method cost a tenth of np.transpose's call,
            # which a backward scan's dots pay at every step)
            expr = Source("{}.T", expr)
        else:
            expr = Source("{}.transpose({perm})", expr, perm=tuple(arg))
    return expr


dot_general_p = Primitive("dot_general")
dot_general_p.def_impl(_dot_general_numpy)
dot_general_p.def_abstract_eval(_dot_general_shape)
defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)
dot_general_p.batch = _dot_general_batch
def_lowering(dot_general_p, _dot_general_lower, typed=True)
# (np.matmul/np.multiply make a new array; reshape and astype keep it unshared)
dot_general_p.fresh_result = True


def _dot_general_numba(args, in_avals, out_avals, *, dimension_numbers,
                       preferred_element_type):
    """np.dot (BLAS, through numba's SciPy binding) for the contractions of one
    axis between matrices and vectors of one floating dtype, no batch axes;
    row-wise dot products of two matrices (one batch axis)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = in_avals
    if (lb == rb == (0,) and lc == rc == (1,) and lhs.ndim == rhs.ndim == 2
            and lhs.dtype == rhs.dtype == out_avals[0].dtype and is_floating(lhs.dtype)):
        # row-wise dot products (vmap of a vector dot: numpyro's vectorized chains)
        return f"np.sum({args[0]} * {args[1]}, axis=1)"
    if not lc and not lb and lhs.dtype == rhs.dtype and is_floating(lhs.dtype):
        if lhs.ndim == rhs.ndim == 1:
            return f"np.outer({args[0]}, {args[1]})"
        if lhs.ndim == 0 or rhs.ndim == 0:    # (a scalar times an array: blackjax's NUTS)
            return f"({args[0]} * {args[1]})"
    if (lb or rb or len(lc) != 1 or lhs.dtype != rhs.dtype or not is_floating(lhs.dtype)
            or out_avals[0].dtype != lhs.dtype or lhs.ndim not in (1, 2)
            or rhs.ndim not in (1, 2) or 0 in lhs.shape or 0 in rhs.shape):
        return None
    # np.dot contracts lhs's last axis with rhs's first (a vector's only one)
    a = f"np.ascontiguousarray({args[0]})" + (".T" if lhs.ndim == 2 and lc[0] == 0 else "")
    b = f"np.ascontiguousarray({args[1]})" + (".T" if rhs.ndim == 2 and rc[0] == 1 else "")
    return f"np.dot({a}, {b})"


dot_general_p.numba_lowering = _dot_general_numba


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General tensor contraction (``jax.lax.dot_general``).

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch,
    rhs_batch))``; the result has the batch dims, then lhs's free dims, then
    rhs's free dims.  ``precision`` and ``out_sharding`` are accepted for JAX
    compatibility (NumPy always computes at the operands' precision, on one
    device).
    """
    check_precision(precision, "lax.dot_general")
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    dn = _canonical_dimension_numbers(dimension_numbers, lhs.ndim, rhs.ndim)
    # the shape rule (cached) runs here too: evaluation skips it
    _dot_general_out_shape(lhs.shape, lhs.dtype, rhs.shape, rhs.dtype, dn)
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    if pet is not None and pet == lhs.dtype:
        pet = None
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product (``jax.lax.dot``): contracts the last axis of
    ``lhs`` with the first axis of ``rhs`` (operands of rank 1 or 2)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
    if ln not in (1, 2) or rn not in (1, 2):
        raise TypeError(f"lax.dot takes operands of rank 1 or 2, got shapes "
                        f"{get_aval(lhs).shape} and {get_aval(rhs).shape}; use "
                        "lax.dot_general or fungrad.numpy.matmul for stacks of matrices.")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: ``lhs`` (..., m, k) @ ``rhs`` (..., k, n) with the
    same leading (batch) shape."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim or la.shape[:-2] != ra.shape[:-2]:
        raise TypeError(f"batch_matmul needs operands of equal rank >= 2 with equal "
                        f"batch dims, got shapes {la.shape} and {ra.shape}")
    batch = tuple(range(la.ndim - 2))
    return dot_general(lhs, rhs, (((la.ndim - 1,), (la.ndim - 2,)), (batch, batch)),
                       precision)




# ============================================================================
# ragged_dot: products of groups of rows with their own matrices
# ============================================================================
# As JAX's reference implementation: the ragged dimension of an operand is
# expanded into a leading group axis that is zero outside each group (a
# select on a mask built from the cumulative group sizes), and one
# dot_general contracts it.  Differentiable in lhs and rhs like the select
# and the product it is made of; the group sizes are integers.

class RaggedDotDimensionNumbers:
    """The dimensions of ``ragged_dot_general`` (``jax.lax.RaggedDotDimensionNumbers``):
    ``dot_dimension_numbers`` as for ``dot_general``, the one ``lhs`` ragged
    dimension and the ``rhs`` group dimensions (one when the ragged dimension is
    a free dimension of lhs, none otherwise)."""

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        self.dot_dimension_numbers = tuple(tuple(tuple(int(d) for d in dims) for dims in pair)
                                           for pair in dot_dimension_numbers)
        self.lhs_ragged_dimensions = tuple(int(d) for d in lhs_ragged_dimensions)
        self.rhs_group_dimensions = tuple(int(d) for d in rhs_group_dimensions)

    def __repr__(self):
        return (f"RaggedDotDimensionNumbers({self.dot_dimension_numbers}, "
                f"{self.lhs_ragged_dimensions}, {self.rhs_group_dimensions})")


_BASIC_RAGGED = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None):
    """Grouped matrix products (``jax.lax.ragged_dot``): ``lhs`` (m, k) has its rows
    in consecutive groups of ``group_sizes`` (g,); group i is multiplied by
    ``rhs[i]`` (rhs is (g, k, n)); rows after the last group give zeros."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_RAGGED, precision,
                              preferred_element_type, group_offset)


def _ragged_mode(lhs_ndim, dims):
    (lc, _), (lb, _) = dims.dot_dimension_numbers
    if len(dims.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension, got "
                        f"{dims.lhs_ragged_dimensions}")
    ragged = dims.lhs_ragged_dimensions[0]
    if not 0 <= ragged < lhs_ndim:
        raise TypeError(f"ragged_dot_general: lhs ragged dimension {ragged} is not an axis "
                        f"of an lhs of rank {lhs_ndim}")
    mode = "contracting" if ragged in lc else "batch" if ragged in lb else "free"
    want = 1 if mode == "free" else 0
    if len(dims.rhs_group_dimensions) != want:
        raise TypeError(f"ragged_dot_general: a {mode} ragged dimension needs {want} rhs "
                        f"group dimension(s), got {dims.rhs_group_dimensions}")
    return mode, ragged


def _prefix_dims(mode, ndim, ragged, batch, contract):
    """The operand axes that group_sizes' leading dimensions stand for (JAX's
    ``[b..., x...]``): the batch axes, then those of the ragged axis's kind before it."""
    batch, contract = list(batch), list(contract)
    free = [d for d in range(ndim) if d not in batch and d not in contract]
    if mode == "free":
        return batch + free[:free.index(ragged)]
    if mode == "contracting":
        return batch + contract[:contract.index(ragged)]
    return batch[:batch.index(ragged)]


def _grouped(x, dim, group_sizes, prefix):
    """``x`` with a leading group axis: entry g keeps the positions of group g
    along axis ``dim`` (and zeros elsewhere); ``group_sizes`` is (prefix..., g)."""
    from fungrad import lax
    shape = get_aval(x).shape
    g = get_aval(group_sizes).shape[-1]
    full = (g,) + shape
    order = sorted(range(len(prefix)), key=lambda i: prefix[i])   # broadcast wants them sorted
    ends = lax.cumsum(group_sizes, axis=len(prefix))
    starts = lax.sub(ends, group_sizes)
    perm = (len(prefix),) + tuple(order)
    out_dims = (0,) + tuple(1 + prefix[i] for i in order)
    starts, ends = (lax.broadcast_in_dim(transpose(v, perm), full, out_dims)
                    for v in (starts, ends))
    position = lax.broadcasted_iota(get_aval(group_sizes).dtype, full, dim + 1)
    inside = lax.bitwise_and(lax.le(starts, position), lax.lt(position, ends))
    return lax.select(inside, lax.broadcast_in_dim(x, full, tuple(range(1, len(full)))),
                      lax.full(full, 0, get_aval(x).dtype))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None):
    """``dot_general`` with one ragged dimension (``jax.lax.ragged_dot_general``), in
    JAX's three modes: the ragged dimension a free dimension of ``lhs`` (each
    group against its slice of ``rhs``'s group dimension), a contracting one (a
    leading output axis per group) or a batch one.  ``group_sizes`` is (g,) or
    JAX's ``[b..., x..., g]``.  ``group_offset`` is not supported (as in JAX)."""
    from fungrad import lax
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (nor in "
                                  "JAX); slice the groups instead")
    lhs, rhs, group_sizes = as_operand(lhs), as_operand(rhs), as_operand(group_sizes)
    dims = ragged_dot_dimension_numbers
    mode, ragged = _ragged_mode(get_aval(lhs).ndim, dims)
    (lc, rc), (lb, rb) = dims.dot_dimension_numbers
    gs = get_aval(group_sizes)
    if not is_integer(gs.dtype) or gs.ndim == 0:
        raise TypeError(f"ragged_dot_general: group_sizes must be an integer array (..., g), "
                        f"got {gs.str_short()}")
    prefix = _prefix_dims(mode, get_aval(lhs).ndim, ragged, lb, lc)
    want = tuple(get_aval(lhs).shape[d] for d in prefix) + gs.shape[-1:]
    if gs.ndim == 1:
        group_sizes = lax.broadcast_in_dim(group_sizes, want, (len(want) - 1,))
    elif gs.shape != want:
        raise TypeError(f"ragged_dot_general: group_sizes must have shape {gs.shape[-1:]} or "
                        f"{want}, got {gs.shape}")
    up = lambda ds: tuple(d + 1 for d in ds)    # noqa: E731 - axes after the new group axis
    out_type = dict(precision=precision, preferred_element_type=preferred_element_type)
    if mode == "batch":
        return dot_general(lhs, rhs, dims.dot_dimension_numbers, **out_type)
    if mode == "free":
        (group_dim,) = dims.rhs_group_dimensions
        if get_aval(rhs).shape[group_dim] != want[-1]:
            raise TypeError(f"ragged_dot_general: rhs group dimension {group_dim} has size "
                            f"{get_aval(rhs).shape[group_dim]}, expected {want[-1]} groups")
        return dot_general(_grouped(lhs, ragged, group_sizes, prefix), rhs,
                           ((up(lc) + (0,), rc + (group_dim,)), (up(lb), rb)), **out_type)
    rhs_ragged = rc[lc.index(ragged)]
    rhs_prefix = _prefix_dims(mode, get_aval(rhs).ndim, rhs_ragged, rb, rc)
    return dot_general(_grouped(lhs, ragged, group_sizes, prefix),
                       _grouped(rhs, rhs_ragged, group_sizes, rhs_prefix),
                       ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb))), **out_type)


# ============================================================================
# scaled_dot: a product of block-scaled operands
# ============================================================================

def _expand_scale(scale, operand_shape, contracting, who):
    """``scale`` repeated along the contracting dims to the operand's shape (each
    scale entry covers a subchannel of consecutive elements)."""
    from fungrad import lax
    shape = get_aval(scale).shape
    if len(shape) != len(operand_shape):
        raise ValueError(f"scaled_dot: {who}_scale must have the rank of {who} "
                         f"({len(operand_shape)}), got shape {shape}")
    for d, (n, k) in enumerate(zip(operand_shape, shape)):
        if (d in contracting and (k == 0 or n % k)) or (d not in contracting and n != k):
            raise ValueError(f"scaled_dot: {who}_scale shape {shape} does not fit {who} shape "
                             f"{operand_shape}: equal free/batch dims, contracting dims "
                             "dividing the operand's")
    wide, dims = [], []
    for d, (n, k) in enumerate(zip(operand_shape, shape)):
        dims.append(len(wide))
        wide += [k, n // k] if d in contracting else [n]
    return lax.reshape(lax.broadcast_in_dim(scale, tuple(wide), tuple(dims)), operand_shape)


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
    """``dot_general(lhs * lhs_scale, rhs * rhs_scale)`` with each scale entry
    covering a subchannel of the contracting dimension (``jax.lax.scaled_dot``).
    NumPy has no 8-bit floats: operands and scales are any float arrays, and the
    result has ``preferred_element_type`` or the operands' promoted dtype (JAX
    defaults to bfloat16).  Differentiable (JAX's is not)."""
    from fungrad import lax
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    if dimension_numbers is None:
        if la.ndim < 2:
            raise TypeError("scaled_dot: operands of rank 0 and 1 need dimension_numbers")
        n = la.ndim
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    dn = _canonical_dimension_numbers(dimension_numbers, la.ndim, ra.ndim)
    dtype = np.dtype(preferred_element_type) if preferred_element_type is not None \
        else np.result_type(la.dtype, ra.dtype)
    lhs, rhs = convert_element_type(lhs, dtype), convert_element_type(rhs, dtype)
    for who, scale, contracting in (("lhs", lhs_scale, dn[0][0]), ("rhs", rhs_scale, dn[0][1])):
        if scale is None:
            continue
        operand = lhs if who == "lhs" else rhs
        scale = convert_element_type(as_operand(scale), dtype)
        expanded = _expand_scale(scale, get_aval(operand).shape, contracting, who)
        if who == "lhs":
            lhs = lax.mul(lhs, expanded)
        else:
            rhs = lax.mul(rhs, expanded)
    return dot_general(lhs, rhs, dn)
