"""Reductions over axes and cumulative ops, each with all of its rules.

Parameters, as in JAX:
* reductions (``reduce_sum``, ``reduce_max``, ...): ``axes``, a sorted tuple of
  distinct non-negative ints; the reduced dimensions disappear;
* ``argmax``/``argmin``: one ``axis`` and an integer ``index_dtype``;
* cumulative ops (``cumsum``, ``cumprod``, ...): ``axis`` and ``reverse``; the
  output has the operand's shape.

``reduce`` (a reduction with a computation of the user's) is built on these
and on a pairwise fold; see its section at the end.

Public functions accept negative axes and raise ``ValueError`` naming the op
for axes out of range.  Derivatives at non-differentiable points follow JAX:
ties in ``reduce_max``/``reduce_min`` share the tangent equally, and
``reduce_prod``/``cumprod`` are exact when the operand contains zeros.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from fungrad._dtype_classes import iinfo as dtype_iinfo, is_floating, is_inexact, is_integer, kind as dtype_kind
from fungrad.core import Primitive, ShapedArray, Tracer, get_aval, strip_weak_type_rule
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero, deflinear, defjvp_zero, tangent_aval
from fungrad.interpreters.lowering import Source, call
from fungrad.lax.kernels import sums as sum_kernels
from fungrad.lax.utils import checked_bind, def_lowering, as_operand, canonical_axes

__all__ = ["reduce", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
           "reduce_or", "reduce_xor", "argmax", "argmin", "cumsum", "cumprod",
           "cummax", "cummin", "cumlogsumexp",
           "reduce_sum_p", "reduce_max_p", "reduce_min_p", "reduce_prod_p", "reduce_and_p",
           "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p", "cumsum_p", "cumprod_p",
           "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _lax():
    from fungrad import lax  # late: the package imports this module
    return lax


# ----------------------------------------------------------------------------
# Shared shape and batching rules
# ----------------------------------------------------------------------------

def _check_axes(name: str, axes, ndim: int) -> None:
    """Params reach shape rules unchecked when ``bind`` is called directly."""
    if (not isinstance(axes, tuple) or any(not isinstance(a, (int, np.integer)) for a in axes)
            or any(not 0 <= a < ndim for a in axes) or len(set(axes)) != len(axes)):
        raise ValueError(f"{name}: axes must be a tuple of distinct ints in [0, {ndim}) "
                         f"for an operand of rank {ndim}, got {axes!r}")


def _check_axis(name: str, axis, ndim: int) -> None:
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < ndim:
        raise ValueError(f"{name}: axis {axis!r} is out of bounds for an operand of "
                         f"rank {ndim} (valid: 0..{ndim - 1}, or negative from the end)")


def _reduce_shape(name: str, kinds: str | None = None):
    """Shape rule of a reduction; ``kinds`` restricts the dtype kinds (e.g. 'bui')."""
    def rule(x, axes):
        _check_axes(name, axes, x.ndim)
        if kinds is not None and dtype_kind(x.dtype) not in kinds:
            raise TypeError(f"{name} requires a boolean or integer operand, got "
                            f"{x.dtype.name}")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)
    return rule


def _axis_batcher(prim):
    """Batching for ops with one ``axis`` param: batch axis first, axis shifted."""
    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        x = batching.moveaxis(x, d, 0)
        return prim.bind(x, **dict(params, axis=params["axis"] + 1)), 0
    prim.batch = rule
    return rule


def _dtype_literal(value) -> str:
    """Python source for an identity value used in a lowering."""
    if isinstance(value, float) and np.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(value)


# --- reduce_sum -----------------------------------------------------------------
# lax's reductions (and cumulative ops) keep a weakly typed operand's weak type,
# as JAX's primitives do; jax.numpy's reductions return strong results, which
# fungrad.numpy's do by converting (numpy/_reductions.py: _keep, _cumulative).

def _reduce_sum_transpose(ct, x, axes):
    from fungrad.lax.structural import broadcast_in_dim
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


def _leading(axes) -> bool:
    return axes == tuple(range(len(axes)))


def _reduce_sum_impl(x, axes):
    # dtype=x.dtype: NumPy would promote small integers to int64, lax keeps the dtype
    if _leading(axes) and sum_kernels.folds(np.shape(x), len(axes)):
        return sum_kernels.sum_leading(x, count=len(axes))    # e.g. a bias gradient
    return np.sum(x, axis=axes, dtype=x.dtype)


def _reduce_sum_lowering(a, in_avals, axes):
    if _leading(axes) and sum_kernels.folds(in_avals[0].shape, len(axes)):
        return call(sum_kernels.sum_leading, a[0], count=len(axes))
    return call(np.sum, a[0], axis=axes, dtype=Source(f"{a[0]}.dtype"))


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.def_impl(_reduce_sum_impl)
reduce_sum_p.def_abstract_eval(_reduce_shape("reduce_sum"))
deflinear(reduce_sum_p, _reduce_sum_transpose)
batching.reducer_batcher(reduce_sum_p)
def_lowering(reduce_sum_p, _reduce_sum_lowering, typed=True)
reduce_sum_p.forwards_when = lambda params: not params["axes"]


def _reduce_numba(fn, nonempty=False):
    """A reduction numba compiles: ``np.<fn>`` over all axes, or over the given
    axes one at a time (sum only), of floating arrays (numba sums small ints in int64)."""
    def rule(args, in_avals, out_avals, axes, **_):
        aval = in_avals[0]
        if not is_floating(aval.dtype) or (nonempty and aval.size == 0):
            return None
        if aval.shape == () or not axes:
            return args[0]
        if len(axes) == aval.ndim:
            return f"np.{fn}({args[0]})"
        if nonempty:
            return None
        expr = args[0]
        for axis in sorted(axes, reverse=True):
            expr = f"np.{fn}({expr}, axis={int(axis)})"
        return expr
    return rule


reduce_sum_p.numba_lowering = _reduce_numba("sum")
# in a fused loop nest (interpreters/numba_fusion.py, floats): an accumulator's
# identity and its update by one element
reduce_sum_p.numba_reduction = ("0", "{acc} + {x}")


def reduce_sum(operand, axes):
    operand = as_operand(operand)
    axes = canonical_axes("reduce_sum", axes, get_aval(operand).ndim)
    return checked_bind(reduce_sum_p, operand, axes=axes)


# --- reduce_max, reduce_min --------------------------------------------------------
# The reduction of an empty axis gives the identity (-inf / +inf, the integer
# extremes, False / True), as in JAX; NumPy's own max raises there.

def _max_identity(dtype):
    if dtype == np.bool_:
        return False
    if is_integer(dtype):
        return int(dtype_iinfo(dtype).min)
    return -np.inf


def _min_identity(dtype):
    if dtype == np.bool_:
        return True
    if is_integer(dtype):
        return int(dtype_iinfo(dtype).max)
    return np.inf


def _chooser_impl(np_fn, identity):
    def impl(x, axes):
        if x.size == 0:
            return np_fn(x, axis=axes, initial=identity(x.dtype))
        return np_fn(x, axis=axes)
    return impl


def _chooser_lowering(np_name, identity):
    def lower(args, axes):
        a, extreme = args[0], "min" if np_name == "max" else "max"
        ident = (f"({_dtype_literal(identity(np.dtype('f8')))} if {a}.dtype.kind in 'fc' else "
                 f"np.iinfo({a}.dtype).{extreme} if {a}.dtype.kind in 'iu' else "
                 f"{identity(np.dtype(bool))!r})")
        return Source(f"(np.{np_name}({a}, axis={axes!r}) if {a}.size else "
                      f"np.{np_name}({a}, axis={axes!r}, initial={ident}))")
    return lower


def _chooser_jvp(prim):
    """JAX's rule: the tangent is the mean of the tangents at the positions
    where the operand equals the result, so ties share it equally."""
    def jvp(primals, tangents, axes):
        (x,), (t,) = primals, tangents
        lax = _lax()
        ans = prim.bind(x, axes=axes)
        shape = get_aval(x).shape
        if any(shape[a] == 0 for a in axes):
            return ans, Zero(tangent_aval(get_aval(ans)))
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        hits = lax.eq(x, lax.broadcast_in_dim(ans, shape, kept))
        location = lax.convert_element_type(hits, get_aval(t).dtype)
        counts = reduce_sum(location, axes)
        return ans, lax.div(reduce_sum(lax.mul(t, location), axes), counts)
    prim.jvp = jvp
    prim.recompute_residuals = True


reduce_max_p = Primitive("reduce_max")
reduce_max_p.keeps_finite = True
reduce_max_p.def_impl(_chooser_impl(np.max, _max_identity))
reduce_max_p.def_abstract_eval(_reduce_shape("reduce_max"))
_chooser_jvp(reduce_max_p)
batching.reducer_batcher(reduce_max_p)
def_lowering(reduce_max_p, _chooser_lowering("max", _max_identity))
reduce_max_p.numba_lowering = _reduce_numba("max", nonempty=True)
# (NaN wins, as in np.max: once the accumulator is NaN no comparison replaces it)
reduce_max_p.numba_reduction = ("-np.inf", "({x} if {x} > {acc} or {x} != {x} else {acc})")

reduce_min_p = Primitive("reduce_min")
reduce_min_p.keeps_finite = True
reduce_min_p.def_impl(_chooser_impl(np.min, _min_identity))
reduce_min_p.def_abstract_eval(_reduce_shape("reduce_min"))
_chooser_jvp(reduce_min_p)
batching.reducer_batcher(reduce_min_p)
def_lowering(reduce_min_p, _chooser_lowering("min", _min_identity))
reduce_min_p.numba_lowering = _reduce_numba("min", nonempty=True)
reduce_min_p.numba_reduction = ("np.inf", "({x} if {x} < {acc} or {x} != {x} else {acc})")


def reduce_max(operand, axes):
    operand = as_operand(operand)
    axes = canonical_axes("reduce_max", axes, get_aval(operand).ndim)
    return checked_bind(reduce_max_p, operand, axes=axes)


def reduce_min(operand, axes):
    operand = as_operand(operand)
    axes = canonical_axes("reduce_min", axes, get_aval(operand).ndim)
    return checked_bind(reduce_min_p, operand, axes=axes)


# --- reduce_prod ---------------------------------------------------------------------
# d prod(x) = sum_i t_i * prod_{j != i} x_j, where the product over j != i is
# (exclusive cumprod from the left) * (exclusive cumprod from the right); no
# division, so zeros in x are exact, and cumprod's own JVP makes it twice
# (any number of times) differentiable.

def _reduce_prod_jvp(primals, tangents, axes):
    (x,), (t,) = primals, tangents
    lax = _lax()
    ans = reduce_prod_p.bind(x, axes=axes)
    shape = get_aval(x).shape
    n = math.prod([shape[a] for a in axes])
    if n == 0 or not axes:
        return ans, (Zero(tangent_aval(get_aval(ans))) if n == 0 else t)
    x_flat, t_flat = _reduced_axes_last(x, axes), _reduced_axes_last(t, axes)
    last = len(shape) - len(axes)
    if n == 1:       # (the product of no other factors is 1: t itself, of its type)
        return ans, reduce_sum(t_flat, (last,))
    left = _shift(cumprod(x_flat, last), last, 1, 1)
    right = _shift(cumprod(x_flat, last, reverse=True), last, -1, 1)
    others = lax.mul(left, right)
    t_out = reduce_sum(lax.mul(t_flat, others), (last,))
    return _as_pairwise_tree_types(ans, t_out, get_aval(x), get_aval(t), n)


def _as_pairwise_tree_types(ans, t_out, x_aval, t_aval, n):
    """``ans`` and ``t_out`` of the weak types JAX's reduce_prod JVP gives them:
    it multiplies pairwise in a tree whose odd halves are padded with a strong
    ``_const(x, 1)``, so the value is weak when ``x`` is and ``n`` is a power of
    two (no padding), and the tangent then when ``t`` is weak too."""
    from fungrad.lax.selection import convert_weak_type     # (late: selection imports lax)
    weak = x_aval.weak_type and n & (n - 1) == 0
    return (convert_weak_type(ans, x_aval.dtype, weak),
            convert_weak_type(t_out, get_aval(t_out).dtype, weak and t_aval.weak_type))


def _reduced_axes_last(x, axes):
    """Transpose the reduced axes to the end and merge them into one axis."""
    lax = _lax()
    shape = get_aval(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    moved = lax.transpose(x, kept + tuple(axes))
    n = math.prod([shape[a] for a in axes])
    return lax.reshape(moved, tuple(shape[i] for i in kept) + (n,))


reduce_prod_p = Primitive("reduce_prod")
reduce_prod_p.def_impl(lambda x, axes: np.prod(x, axis=axes, dtype=x.dtype))
reduce_prod_p.def_abstract_eval(_reduce_shape("reduce_prod"))
reduce_prod_p.jvp = _reduce_prod_jvp
batching.reducer_batcher(reduce_prod_p)
def_lowering(reduce_prod_p,
             lambda a, axes: call(np.prod, a[0], axis=axes, dtype=Source(f"{a[0]}.dtype")))


def reduce_prod(operand, axes):
    operand = as_operand(operand)
    axes = canonical_axes("reduce_prod", axes, get_aval(operand).ndim)
    return checked_bind(reduce_prod_p, operand, axes=axes)


# --- reduce_and, reduce_or, reduce_xor (booleans and integers, bitwise) -------------

def _bitwise_reducer(name, ufunc):
    p = Primitive(name, differentiable=False)
    p.def_impl(lambda x, axes: ufunc.reduce(x, axis=axes))
    p.def_abstract_eval(_reduce_shape(name, kinds="bui"))
    defjvp_zero(p)
    batching.reducer_batcher(p)
    def_lowering(p, lambda a, axes: call(ufunc.reduce, a[0], axis=axes))
    return p


def _bool_reduce_numba(fn):
    """np.all / np.any of a boolean array over all its axes (numba compiles
    it); over some axes (a test under vmap) as a count of the True values
    (numba has no ``axis`` for all/any, but sums over one axis at a time)."""
    def rule(args, in_avals, out_avals, axes):
        aval = in_avals[0]
        if dtype_kind(aval.dtype) != "b":
            return None
        if not aval.shape:
            return args[0]
        if len(axes) == aval.ndim:
            return f"np.{fn}({args[0]})"
        count = args[0]
        for axis in sorted(axes, reverse=True):
            count = f"np.sum({count}, axis={int(axis)})"
        reduced = math.prod(aval.shape[a] for a in axes)
        return f"({count} == {reduced})" if fn == "all" else f"({count} > 0)"
    return rule


reduce_and_p = _bitwise_reducer("reduce_and", np.bitwise_and)
reduce_or_p = _bitwise_reducer("reduce_or", np.bitwise_or)
reduce_and_p.numba_lowering = _bool_reduce_numba("all")
reduce_or_p.numba_lowering = _bool_reduce_numba("any")
reduce_xor_p = _bitwise_reducer("reduce_xor", np.bitwise_xor)


def reduce_and(operand, axes):
    operand = as_operand(operand)
    return checked_bind(reduce_and_p, operand, axes=canonical_axes("reduce_and", axes, get_aval(operand).ndim))


def reduce_or(operand, axes):
    operand = as_operand(operand)
    return checked_bind(reduce_or_p, operand, axes=canonical_axes("reduce_or", axes, get_aval(operand).ndim))


def reduce_xor(operand, axes):
    operand = as_operand(operand)
    return checked_bind(reduce_xor_p, operand, axes=canonical_axes("reduce_xor", axes, get_aval(operand).ndim))


# --- argmax, argmin --------------------------------------------------------------------
# NaN counts as the largest and the smallest value (the first NaN wins), as in
# NumPy and JAX; ties give the first index.

def _arg_shape(name):
    def rule(x, axis, index_dtype):
        _check_axis(name, axis, x.ndim)
        if not is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        if x.shape[axis] == 0:
            raise ValueError(f"{name}: attempt to get the {name} of an empty sequence "
                             f"(axis {axis} of shape {x.shape} has size 0)")
        return ShapedArray(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return rule


def _arg_reducer(name, np_fn):
    p = Primitive(name, differentiable=False)
    p.weak_type_rule = strip_weak_type_rule
    p.def_impl(lambda x, axis, index_dtype: np_fn(x, axis=axis).astype(index_dtype))
    p.def_abstract_eval(_arg_shape(name))
    defjvp_zero(p)
    _axis_batcher(p)
    def_lowering(p, lambda a, axis, index_dtype: Source(
        f"np.{np_fn.__name__}({a[0]}, axis={axis}).astype(np.{np.dtype(index_dtype).name})"))
    return p


argmax_p = _arg_reducer("argmax", np.argmax)
argmin_p = _arg_reducer("argmin", np.argmin)


def _arg_params(name, operand, axis, index_dtype):
    ndim = get_aval(operand).ndim
    axis = canonical_axes(name, int(axis), ndim)[0] if ndim else _bad_scalar_axis(name, axis)
    return dict(axis=axis, index_dtype=np.dtype(index_dtype))


def _bad_scalar_axis(name, axis):
    raise ValueError(f"{name}: axis {axis} is out of bounds for a 0-d operand; "
                     "reshape it to 1-d first")


def argmax(operand, axis, index_dtype):
    """Index of the largest element along ``axis`` (``jax.lax.argmax``)."""
    operand = as_operand(operand)
    return checked_bind(argmax_p, operand, **_arg_params("argmax", operand, axis, index_dtype))


def argmin(operand, axis, index_dtype):
    """Index of the smallest element along ``axis`` (``jax.lax.argmin``)."""
    operand = as_operand(operand)
    return checked_bind(argmin_p, operand, **_arg_params("argmin", operand, axis, index_dtype))


# ----------------------------------------------------------------------------
# Cumulative ops
# ----------------------------------------------------------------------------

def _cumulative_shape(name, float_only=False):
    def rule(x, axis, reverse):
        _check_axis(name, axis, x.ndim)
        if float_only and not is_inexact(x.dtype):
            raise TypeError(f"{name} requires a floating-point operand, got {x.dtype.name}; "
                            "convert it first (e.g. x.astype(float))")
        if x.dtype == np.bool_ and name != "cummax" and name != "cummin":
            raise TypeError(f"{name} does not accept booleans; convert to an integer dtype")
        return ShapedArray(x.shape, x.dtype)
    return rule


def _cumulative_impl(accumulate):
    def impl(x, axis, reverse):
        if reverse:
            return np.flip(accumulate(np.flip(x, axis), axis), axis)
        return accumulate(x, axis)
    return impl


def _cumulative_lowering(template):
    """``template`` is a format string over the operand ``{x}`` and ``{axis}``."""
    def lower(args, axis, reverse):
        if not reverse:
            return Source(template.format(x=args[0], axis=axis))
        inner = template.format(x=f"np.flip({args[0]}, {axis})", axis=axis)
        return Source(f"np.flip({inner}, {axis})")
    return lower


def _cumulative(name, accumulate, template, float_only=False):
    p = Primitive(name)
    p.def_impl(_cumulative_impl(accumulate))
    p.def_abstract_eval(_cumulative_shape(name, float_only))
    _axis_batcher(p)
    def_lowering(p, _cumulative_lowering(template))
    return p


def _shift(x, axis: int, offset: int, fill):
    """``x`` moved by ``offset`` positions along ``axis`` (right if positive),
    the vacated positions filled with ``fill``: ``shift([a,b,c], 1) = [f,a,b]``.
    One ``pad`` whose negative padding at the other end drops what falls off."""
    aval = get_aval(x)
    s = min(abs(offset), aval.shape[axis])
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (s, -s, 0) if offset > 0 else (-s, s, 0)
    return _lax().pad(x, np.asarray(fill, aval.dtype), tuple(config))


def _prefix_scan(combine, x, axis: int, reverse: bool, fill):
    """Inclusive scan by doubling (Hillis-Steele): log2(n) rounds of
    ``y = combine(shift(y, s), y)``.  Built from differentiable primitives, so
    its JVP gives the JVP of a cumulative op, exact at zeros and ties."""
    lax = _lax()
    if reverse:
        x = lax.rev(x, (axis,))
    n, s = get_aval(x).shape[axis], 1
    while s < n:
        x = combine(_shift(x, axis, s, fill), x)
        s *= 2
    return lax.rev(x, (axis,)) if reverse else x


def _scan_jvp(prim, combine, fill):
    def jvp(primals, tangents, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        scan = lambda y: [_prefix_scan(combine(), y, axis, reverse, fill)]
        _, (t_out,) = ad.jvp_flat(scan, [x], [t])
        if get_aval(x).shape[axis] > 1:
            # (JAX's value under JVP is its associative scan's, whose padding
            # constants are strong: a weak operand's value is strong there too)
            ans = _lax().convert_element_type(ans, get_aval(ans).dtype)
        return ans, t_out
    prim.jvp = jvp


def _logaddexp(a, b):
    """log(exp(a) + exp(b)), stable; the shift m cancels mathematically, so it
    carries no derivative (and -inf fill values give exact zeros)."""
    lax = _lax()
    m = lax.stop_gradient(lax.max(a, b))
    return lax.add(m, lax.log(lax.add(lax.exp(lax.sub(a, m)), lax.exp(lax.sub(b, m)))))


# --- cumsum (linear: its transpose is the cumsum in the other direction) -----------
cumsum_p = _cumulative("cumsum", lambda x, axis: np.cumsum(x, axis, dtype=x.dtype),
                       "np.cumsum({x}, axis={axis}, dtype={x}.dtype)")
deflinear(cumsum_p, lambda ct, x, axis, reverse: [cumsum(ct, axis, not reverse)])


def _cumsum_numba(block, eqn, args, out_names):
    """A running sum along ``axis`` as a loop (in NumPy's order, so equal to
    np.cumsum): the axis moved last, rows of the flattened rest summed."""
    from fungrad.interpreters.numba_backend import NotCompilable
    from fungrad.core import Var
    aval, axis, reverse = eqn.inputs[0].aval, eqn.params["axis"], eqn.params["reverse"]
    if not is_floating(aval.dtype) or aval.shape == ():
        raise NotCompilable("cumsum of a scalar or of integers")
    perm = tuple(d for d in range(aval.ndim) if d != axis) + (axis,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    n = int(aval.shape[axis])
    moved = tuple(int(aval.shape[d]) for d in perm)
    m = math.prod(moved[:-1])
    t, o, r, k, acc = (block.names.new(Var(ShapedArray((), np.int64))) for _ in range(5))
    (x,), (out,) = args, out_names
    block.line(f"{t} = np.ascontiguousarray({x}.transpose({perm!r})).reshape(({m}, {n}))")
    block.line(f"{o} = np.empty(({m}, {n}), np.{aval.dtype.name})")
    block.line(f"for {r} in range({m}):")
    block.line(f"{acc} = np.{aval.dtype.name}(0)", "    ")
    block.line(f"for {k} in " + (f"range({n} - 1, -1, -1):" if reverse else f"range({n}):"),
               "    ")
    block.line(f"{acc} = np.add({acc}, {t}[{r}, {k}])", "        ")  # (keeps float32)
    block.line(f"{o}[{r}, {k}] = {acc}", "        ")
    block.line(f"{out} = np.ascontiguousarray({o}.reshape({moved!r}).transpose({inverse!r}))")


cumsum_p.numba_block = _cumsum_numba

cumprod_p = _cumulative("cumprod", lambda x, axis: np.cumprod(x, axis, dtype=x.dtype),
                        "np.cumprod({x}, axis={axis}, dtype={x}.dtype)")
_scan_jvp(cumprod_p, lambda: _lax().mul, 1)

cummax_p = _cumulative("cummax", lambda x, axis: np.maximum.accumulate(x, axis),
                       "np.maximum.accumulate({x}, axis={axis})")
cummax_p.keeps_finite = True
_scan_jvp(cummax_p, lambda: _lax().max, -np.inf)

cummin_p = _cumulative("cummin", lambda x, axis: np.minimum.accumulate(x, axis),
                       "np.minimum.accumulate({x}, axis={axis})")
cummin_p.keeps_finite = True
_scan_jvp(cummin_p, lambda: _lax().min, np.inf)

cumlogsumexp_p = _cumulative("cumlogsumexp", lambda x, axis: np.logaddexp.accumulate(x, axis),
                             "np.logaddexp.accumulate({x}, axis={axis})", float_only=True)
_scan_jvp(cumlogsumexp_p, lambda: _logaddexp, -np.inf)


def _cumulative_params(name, operand, axis, reverse):
    ndim = get_aval(operand).ndim
    if ndim == 0:
        raise ValueError(f"{name}: operand is 0-d, it has no axis {axis} to accumulate "
                         "along; reshape it to 1-d first")
    return dict(axis=canonical_axes(name, int(axis), ndim)[0], reverse=bool(reverse))


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Cumulative sum along ``axis`` (``jax.lax.cumsum``)."""
    operand = as_operand(operand)
    return checked_bind(cumsum_p, operand, **_cumulative_params("cumsum", operand, axis, reverse))


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Cumulative product along ``axis`` (``jax.lax.cumprod``)."""
    operand = as_operand(operand)
    return checked_bind(cumprod_p, operand, **_cumulative_params("cumprod", operand, axis, reverse))


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Running maximum along ``axis`` (``jax.lax.cummax``)."""
    operand = as_operand(operand)
    return checked_bind(cummax_p, operand, **_cumulative_params("cummax", operand, axis, reverse))


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Running minimum along ``axis`` (``jax.lax.cummin``)."""
    operand = as_operand(operand)
    return checked_bind(cummin_p, operand, **_cumulative_params("cummin", operand, axis, reverse))


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Running log(sum(exp(x))) along ``axis``, computed stably (``jax.lax.cumlogsumexp``)."""
    operand = as_operand(operand)
    return checked_bind(cumlogsumexp_p, operand, **_cumulative_params("cumlogsumexp", operand, axis, reverse))


# ============================================================================
# reduce: a reduction with a computation of the user's
# ============================================================================
# A computation that is one of the monoids (add, mul, max, min, and, or, xor
# of its two arguments: lax.add, jnp.maximum, ``lambda a, b: a + b``, ...) is
# recognised by staging it on two scalars, and becomes the reduction primitive
# above.  Any other computation is folded pairwise: the reduced axes are
# flattened (row-major), neighbours are combined level by level (log2 n
# applications of the computation, each vmapped over all pairs at once) and
# the initial value is combined in front.  For an associative computation the
# result is ``init ⊕ x_1 ⊕ … ⊕ x_n`` in that order (commutativity is not
# needed, and init need not be an identity).  Being made of slices and the
# computation's own operations, the fold is differentiable (in the operands
# and the initial values), vmappable and jittable like any function.

_MONOID_PRIMS = ("add", "mul", "max", "min", "and", "or", "xor")   # primitive names


@functools.lru_cache(maxsize=None)
def _known_monoids():
    lax = _lax()
    return {lax.add: "add", lax.mul: "mul", lax.max: "max", lax.min: "min",
            lax.bitwise_and: "and", lax.bitwise_or: "or", lax.bitwise_xor: "xor",
            np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


def monoid_of(computation, dtype) -> str | None:
    """'add', 'mul', 'max', 'min', 'and', 'or' or 'xor' if ``computation(a, b)``
    is exactly that operation of its two (scalar, ``dtype``) arguments, else None."""
    from fungrad.interpreters.partial_eval import trace_to_jaxpr
    try:
        kind = _known_monoids().get(computation)
    except TypeError:          # unhashable callable
        kind = None
    if kind is not None or not callable(computation):
        return kind
    scalar = ShapedArray((), np.dtype(dtype))
    try:
        jaxpr, _ = trace_to_jaxpr(lambda a, b: [computation(a, b)], [scalar, scalar])
    except Exception:          # noqa: BLE001 - not a monoid; the general path reports errors
        return None
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return None
    eqn = jaxpr.eqns[0]
    if eqn.outvars != jaxpr.outvars or set(eqn.inputs) != set(jaxpr.invars):
        return None
    return eqn.primitive.name if eqn.primitive.name in _MONOID_PRIMS else None


_MONOID_REDUCERS = {"add": "reduce_sum", "mul": "reduce_prod", "max": "reduce_max",
                    "min": "reduce_min", "and": "reduce_and", "or": "reduce_or",
                    "xor": "reduce_xor"}
_MONOID_BINARY = {"add": "add", "mul": "mul", "max": "max", "min": "min",
                  "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}
_MONOID_KINDS = {"add": "biufc", "mul": "biufc", "max": "biuf", "min": "biuf",
                 "and": "biu", "or": "biu", "xor": "biu"}


def _reduce_operands(operands, init_values):
    """Flat operands and initial values (Python scalars take the operand's dtype),
    checked: one tree, one shape, scalar initial values of the operands' dtypes."""
    from fungrad.tree_util import tree_flatten
    flat_ops, tree = tree_flatten(operands)
    flat_init, init_tree = tree_flatten(init_values)
    if tree != init_tree or len(flat_ops) != len(flat_init) or not flat_ops:
        raise ValueError(f"reduce: operands and init_values must have the same tree "
                         f"structure, got {tree} and {init_tree}")
    flat_ops = [as_operand(x) for x in flat_ops]
    flat_init = [as_operand(i, like=x) for i, x in zip(flat_init, flat_ops)]
    shapes = {get_aval(x).shape for x in flat_ops}
    if len(shapes) != 1:
        raise ValueError(f"reduce: all operands must have one shape, got "
                         f"{[get_aval(x).shape for x in flat_ops]}")
    for i, (x, init) in enumerate(zip(flat_ops, flat_init)):
        xa, ia = get_aval(x), get_aval(init)
        if ia.ndim != 0:
            raise ValueError(f"reduce: init_values must be scalars, got shape {ia.shape} "
                             f"for operand {i}")
        if ia.dtype != xa.dtype:
            raise TypeError(f"reduce: init value {i} has dtype {ia.dtype.name} but its "
                            f"operand {xa.dtype.name}; convert one of them")
    return flat_ops, flat_init, tree


def reduce(operands, init_values, computation, dimensions):
    """Reduce ``operands`` over ``dimensions`` with ``computation``
    (``jax.lax.reduce``).

    ``operands`` and ``init_values`` are pytrees of the same structure (scalar
    initial values); ``computation(accumulated, new)`` takes and returns that
    structure.  The monoids add, mul, max, min, and, or, xor become the
    reduction primitives (``reduce_sum``, ...); any other associative
    computation is folded pairwise, in order, so the result is
    ``init ⊕ x_1 ⊕ … ⊕ x_n`` (JAX requires ``init`` to be the identity; here any
    value works).  Differentiable in the operands and the initial values.
    """
    from fungrad.tree_util import tree_unflatten
    flat_ops, flat_init, tree = _reduce_operands(operands, init_values)
    aval = get_aval(flat_ops[0])
    dims = canonical_axes("reduce", dimensions, aval.ndim)
    if len(flat_ops) == 1:
        kind = monoid_of(computation, aval.dtype)
        if kind is not None and dtype_kind(aval.dtype) in _MONOID_KINDS[kind]:
            return tree_unflatten(tree, [_monoid_reduce(kind, flat_ops[0], flat_init[0], dims)])
    return tree_unflatten(tree, _fold(flat_ops, flat_init, computation, tree, dims))


def _monoid_reduce(kind, x, init, dims):
    lax = _lax()
    out = getattr(lax, _MONOID_REDUCERS[kind])(x, dims)
    # (the reduction primitives are strong, as jax.numpy's reductions; lax.reduce
    # is weak when the operand and the initial value are, as JAX's)
    weak = get_aval(x).weak_type and get_aval(init).weak_type
    identity = _reduce_identity(kind, get_aval(x).dtype)
    if not (not isinstance(init, Tracer) and identity is not None
            and np.asarray(init) == identity):
        init = lax.broadcast_in_dim(init, get_aval(out).shape, ())
        out = getattr(lax, _MONOID_BINARY[kind])(init, out)
    from fungrad.lax.elementwise import convert_weak_type
    return convert_weak_type(out, get_aval(out).dtype, weak) if weak else out


def _reduce_identity(kind, dtype):
    if kind in ("add", "or", "xor"):
        return np.zeros((), dtype)
    if kind == "mul":
        return np.ones((), dtype)
    if kind == "and":
        return np.asarray(-1).astype(dtype) if dtype != np.bool_ else np.asarray(True)
    return np.asarray(_max_identity(dtype) if kind == "max" else _min_identity(dtype), dtype)


def _combiner(computation, tree, init_avals):
    """``combine(xs, ys)``: ``computation`` applied elementwise to flat lists of
    equal-shape 1-d arrays, vmapped over their length; its result is checked
    against the initial values' avals when it is staged."""
    from fungrad.core import eval_jaxpr
    from fungrad.interpreters.partial_eval import closure_convert, trace_to_jaxpr
    from fungrad.tree_util import tree_flatten, tree_unflatten
    n = len(init_avals)

    def flat_computation(*args):
        out = computation(tree_unflatten(tree, list(args[:n])),
                          tree_unflatten(tree, list(args[n:])))
        leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"reduce: the computation must return the structure of the "
                            f"initial values ({tree}), got {out_tree}")
        return [as_operand(v) for v in leaves]
    jaxpr, consts = trace_to_jaxpr(flat_computation, list(init_avals) * 2)
    closed, hoisted = closure_convert(jaxpr, consts)
    for i, (got, want) in enumerate(zip(closed.out_avals, init_avals)):
        if got.shape != () or got.dtype != want.dtype:
            raise TypeError(f"reduce: the computation must return scalars of the initial "
                            f"values' dtypes; output {i} is {got.str_short()}, expected "
                            f"{want.dtype.name}[]")

    def combine(xs, ys):
        size = get_aval(xs[0]).shape[0]
        if size == 0:
            return list(xs)
        return batching.vmap_flat(
            lambda *a: eval_jaxpr(closed.jaxpr, closed.consts, *hoisted, *a),
            list(xs) + list(ys), [0] * (2 * n), size, [0] * n)
    return combine


def _fold(flat_ops, flat_init, computation, tree, dims):
    """The pairwise fold of the general ``reduce`` (see above)."""
    lax = _lax()
    shape = get_aval(flat_ops[0]).shape
    kept = tuple(d for d in range(len(shape)) if d not in dims)
    out_shape = tuple(shape[d] for d in kept)
    n = math.prod([shape[d] for d in dims])
    width = math.prod(out_shape)
    combine = _combiner(computation, tree, [get_aval(i) for i in flat_init])
    # (n, width) rows of the values to fold, flattened to 1-d runs of `width`
    xs = [lax.reshape(lax.transpose(x, dims + kept), (n * width,)) for x in flat_ops]
    while n > 1:
        half = n // 2
        evens = [lax.slice(x, (0,), (2 * half * width,)) for x in xs]
        pairs = [lax.reshape(x, (half, 2, width)) for x in evens]
        left = [lax.reshape(lax.slice(p, (0, 0, 0), (half, 1, width)), (half * width,))
                for p in pairs]
        right = [lax.reshape(lax.slice(p, (0, 1, 0), (half, 2, width)), (half * width,))
                 for p in pairs]
        combined = combine(left, right)
        if n % 2:        # the last value has no partner: it moves up a level as it is
            combined = [lax.concatenate([c, lax.slice(x, ((n - 1) * width,), (n * width,))], 0)
                        for c, x in zip(combined, xs)]
        xs, n = combined, half + n % 2
    inits = [lax.broadcast_in_dim(i, (width,), ()) for i in flat_init]
    result = inits if n == 0 else combine(inits, xs)
    return [lax.reshape(r, out_shape) for r in result]
