"""Selection, conversions and constants: ``select_n``/``select``, ``clamp``,
``convert_element_type``, ``bitcast_convert_type``, ``iota``,
``broadcasted_iota``, ``zeros_like_array`` and ``stop_gradient``.  Split from
``elementwise.py``, whose rule factories they use; ``elementwise``
re-exports every name here.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import (is_floating, is_inexact, is_integer,
                                    issubdtype as dtype_issubdtype, kind as dtype_kind)
from fungrad.core import Primitive, ShapedArray, get_aval, strip_weak_type_rule
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import (defjvp, defjvp_zero, instantiate_zeros,
                                     is_undefined_primal, unbroadcast, Zero)
from fungrad.interpreters.lowering import Source, call, dtype_source, scalar_type_name
from fungrad.lax.kernels.convert import float_to_int as _float_to_int_kernel
from fungrad.lax.comparisons import bitwise_and, gt, lt
from fungrad.lax.elementwise import (ANY, _brcast, _is_python_scalar, _nary, _operand,
                                     _operands, _rule_checked, _structural, _unary, _zeros,
                                     real)
from fungrad.lax.utils import (as_operand, broadcast_shapes, check_same_dtypes, def_lowering,
                               numba_type)

__all__ = ["select_n", "select", "clamp", "convert_element_type", "bitcast_convert_type",
           "convert_weak_type", "iota", "broadcasted_iota", "zeros_like_array", "stop_gradient",
           "select_n_p", "clamp_p", "convert_element_type_p", "bitcast_convert_type_p",
           "iota_p", "stop_gradient_p"]


# ----------------------------------------------------------------------------
# select_n, clamp
# ----------------------------------------------------------------------------

def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(np.shape(which),
                                                             np.shape(cases[0])))
    if len(cases) == 2:
        return np.where(which, cases[1], cases[0])
    return np.select([which == i for i in range(1, len(cases))], cases[1:], default=cases[0])


def _select_n_lowering(args):
    which, cases = args[0], args[1:]
    if len(cases) == 1:
        return Source(f"np.broadcast_to({cases[0]}, np.broadcast_shapes(np.shape({which}), "
                      f"np.shape({cases[0]}))).copy()")
    if len(cases) == 2:
        return call(np.where, which, cases[1], cases[0])
    conds = ", ".join(f"np.equal({which}, {i})" for i in range(1, len(cases)))
    return Source(f"np.select([{conds}], [{', '.join(cases[1:])}], default={cases[0]})")


def _select_n_rule(which, *cases):
    if not cases:
        raise TypeError("lax.select_n requires at least one case")
    if which.dtype != np.bool_ and not is_integer(which.dtype):
        raise TypeError(f"lax.select_n: `which` must be boolean or integer, got "
                        f"{which.dtype.name}; compare it first (e.g. x > 0).")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError(f"lax.select_n: a boolean `which` selects between at most 2 cases, "
                        f"got {len(cases)}; use an integer `which`.")
    dtype = check_same_dtypes("select_n", *cases)
    shape = broadcast_shapes("select_n", which.shape, *(c.shape for c in cases))
    return ShapedArray(shape, dtype)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    case_ts = tangents[1:]
    if all(type(t) is Zero for t in case_ts):
        return out, Zero(ad.tangent_aval(get_aval(out)))
    return out, select_n_p.bind(which, *[instantiate_zeros(t) for t in case_ts])


def _select_n_transpose(ct, which, *cases):
    if is_undefined_primal(which):
        raise TypeError("select_n is not linear in its predicate `which`")
    zeros = _zeros(ct)
    cts = [None]
    for i, case in enumerate(cases):
        if not is_undefined_primal(case):
            cts.append(None)
            continue
        picked = select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
        cts.append(unbroadcast(picked, case.aval))
    return cts


select_n_p = Primitive("select_n")
select_n_p.def_impl(_rule_checked(_select_n_rule, _select_n_impl))
select_n_p.def_abstract_eval(_select_n_rule)
select_n_p.weak_type_rule = lambda avals, params: all(a.weak_type for a in avals[1:])
select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose
select_n_p.linear = True
select_n_p.keeps_finite = True
batching.broadcasting_batcher(select_n_p)
def_lowering(select_n_p, _select_n_lowering)


def _select_n_numba(args, in_avals, out_avals):
    which, cases = args[0], args[1:]
    if len(cases) != 2:
        return None
    if in_avals[0].shape == () or out_avals[0].shape == ():
        return f"({cases[1]} if {which} else {cases[0]})"
    return f"np.where({which}, {cases[1]}, {cases[0]})"


select_n_p.numba_lowering = _select_n_numba
select_n_p.numba_elementwise = True


def select_n(which, *cases):
    """``cases[which]`` elementwise (``which``: bool for 2 cases, or int).
    As JAX: ``select_n(pred, on_false, on_true)``."""
    which = _operand(which)
    return select_n_p.bind(which, *_operands(*cases))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (``jax.lax.select``)."""
    return select_n(pred, on_false, on_true)


clamp_p = _nary("clamp", None, ANY, num_args=3,
                lowering=lambda a: call(np.minimum, call(np.maximum, a[1], a[0]), a[2]))
clamp_p.keeps_finite = True
clamp_p.numba_lowering = lambda a, in_avals, out_avals: (
    f"np.minimum(np.maximum({a[1]}, {a[0]}), {a[2]})"
    if all(dtype_kind(v.dtype) in "iuf" for v in in_avals) else None)
clamp_p.numba_elementwise = True


def _and(a, b):
    return bitwise_and(a, b)


# JAX's rule: x gets the tangent strictly inside (min, max); min where it is
# above x (and below max); max where it is below x.  At ties nobody does.
defjvp(clamp_p,
       lambda g, lo, x, hi: select_n(_and(gt(lo, x), lt(lo, hi)),
                                     _zeros(_brcast(g, x, hi)), _brcast(g, x, hi)),
       lambda g, lo, x, hi: select_n(_and(gt(x, lo), lt(x, hi)),
                                     _zeros(_brcast(g, lo, hi)), _brcast(g, lo, hi)),
       lambda g, lo, x, hi: select_n(lt(hi, x), _zeros(_brcast(g, lo, x)), _brcast(g, lo, x)))


def clamp(min, x, max):  # noqa: A002 (JAX's argument names)
    """``x`` limited to ``[min, max]`` (JAX's argument order)."""
    # Python-scalar bounds take the operand's dtype
    like = next((v for v in (x, min, max) if not _is_python_scalar(v)), None)
    return clamp_p.bind(*[as_operand(v, like=like) if _is_python_scalar(v) else as_operand(v)
                          for v in (min, x, max)])


# ----------------------------------------------------------------------------
# convert_element_type, bitcast_convert_type
# ----------------------------------------------------------------------------

def _float_to_int(old, new) -> bool:
    """A conversion that saturates as XLA's does (kernels/convert.py)."""
    return np.dtype(old).kind == "f" and np.dtype(new).kind in "iu"


def _convert_impl(x, new_dtype, weak_type=False):
    x = np.asarray(x)
    if _float_to_int(x.dtype, new_dtype):
        return _float_to_int_kernel(x, new_dtype=new_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(new_dtype, copy=False)


def _convert_shape(x, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_params(new_dtype, weak_type):
    """The params of a conversion: ``weak_type`` appears only when True (the
    common strong conversion prints and caches as it always did)."""
    return {"new_dtype": new_dtype, "weak_type": True} if weak_type else {"new_dtype": new_dtype}


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    ans = convert_element_type_p.bind(x, **_convert_params(new_dtype, weak_type))
    if type(t) is Zero or not is_inexact(new_dtype):
        return ans, Zero(ad.tangent_aval(get_aval(ans)))
    return ans, convert_element_type_p.bind(t, **_convert_params(new_dtype, weak_type))


def _convert_transpose(ct, x, new_dtype, weak_type=False):
    old = x.aval.dtype
    if dtype_issubdtype(new_dtype, np.complexfloating) and not dtype_issubdtype(old, np.complexfloating):
        ct = real(ct)          # real -> complex embeds; its transpose takes the real part
    return [convert_element_type_p.bind(ct, **_convert_params(old, x.aval.weak_type))]


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_shape)
convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
convert_element_type_p.linear = True
convert_element_type_p.forwards_when = lambda params: True    # to its own dtype
batching.vectorized_batcher(convert_element_type_p)
# (JAX's rule: the ``weak_type`` param says, whatever the operand's)
convert_element_type_p.weak_type_rule = lambda avals, params: params.get("weak_type", False)
convert_element_type_p.weak_from_params = True
def _convert_lowering(a, in_avals, new_dtype, weak_type=False):
    if _float_to_int(in_avals[0].dtype, new_dtype):
        return call(_float_to_int_kernel, a[0], new_dtype=dtype_source(new_dtype))
    return Source(f"np.asarray({a[0]}).astype({scalar_type_name(new_dtype)})")


def_lowering(convert_element_type_p, _convert_lowering, typed=True)


def _convert_numba(args, in_avals, out_avals, new_dtype, weak_type=False):
    old, new, x = in_avals[0].dtype, np.dtype(new_dtype), args[0]
    if dtype_kind(new) == "b":
        return f"({x} != 0)"
    if is_floating(old) and is_integer(new):
        return None          # NaN and out-of-range values: undefined in LLVM
    if in_avals[0].shape == ():
        return f"{numba_type(new)}({x})"
    return f"{x}.astype({numba_type(new)})"


convert_element_type_p.numba_lowering = _convert_numba
convert_element_type_p.numba_elementwise = True


def convert_element_type(operand, new_dtype):
    """``operand`` as ``new_dtype``, strongly typed (as JAX: a weakly typed
    operand of that dtype is converted to a strong one)."""
    return convert_weak_type(operand, new_dtype, weak_type=False)


def convert_weak_type(operand, new_dtype, weak_type: bool):
    """``operand`` as ``new_dtype``, weakly typed or not (JAX's internal
    ``_convert_element_type(operand, new_dtype, weak_type)``, which dtype
    promotion uses: ``int32_array * 2.5`` is a weak float)."""
    operand = as_operand(operand)
    new_dtype = np.dtype(new_dtype)
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, **_convert_params(new_dtype, weak_type))


def _bitcast_shape(x, new_dtype):
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        return ShapedArray(x.shape, new_dtype)
    if old > new:
        return ShapedArray(x.shape + (old // new,), new_dtype)
    if not x.shape or x.shape[-1] != new // old:
        raise TypeError(f"lax.bitcast_convert_type: {x.dtype.name} -> {new_dtype.name} "
                        f"needs a last dimension of size {new // old}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


def _bitcast_impl(x, new_dtype):
    x = np.asarray(x)
    # ravel: a contiguous 1-d view (or copy), whose dtype can change size
    return np.ravel(x).view(new_dtype).reshape(_bitcast_shape(get_aval(x), new_dtype).shape)


def _bitcast_batch(axis_size, vals, dims, new_dtype):
    x = batching.moveaxis(vals[0], dims[0], 0)   # the last axis may change size
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_impl(_rule_checked(_bitcast_shape, _bitcast_impl))
bitcast_convert_type_p.def_abstract_eval(_bitcast_shape)
bitcast_convert_type_p.weak_type_rule = strip_weak_type_rule
defjvp_zero(bitcast_convert_type_p)
bitcast_convert_type_p.batch = _bitcast_batch
def_lowering(bitcast_convert_type_p, lambda a, new_dtype: Source(
    f"(lambda x: np.ravel(x).view({scalar_type_name(new_dtype)}).reshape("
    f"x.shape + (x.dtype.itemsize // {new_dtype.itemsize},) if x.dtype.itemsize > "
    f"{new_dtype.itemsize} else x.shape[:-1] if x.dtype.itemsize < {new_dtype.itemsize} "
    f"else x.shape))(np.asarray({a[0]}))"))


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (no conversion).
    A narrower type adds a trailing dimension, a wider one consumes it."""
    return bitcast_convert_type_p.bind(_operand(operand), new_dtype=np.dtype(new_dtype))


# ----------------------------------------------------------------------------
# iota, zeros_like_array, stop_gradient
# ----------------------------------------------------------------------------

def _iota_impl(*, dtype, shape, dimension):
    line = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(expanded), shape)


def _iota_rule(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise ValueError(f"lax.broadcasted_iota: dimension {dimension} is out of range "
                         f"for shape {shape}")
    if not (is_integer(dtype) or is_inexact(dtype)):
        raise TypeError(f"lax.iota: dtype must be numeric, got {np.dtype(dtype).name}")
    return ShapedArray(shape, dtype)


def _iota_lowering(args, dtype, shape, dimension):
    expanded = tuple(n if i == dimension else 1 for i, n in enumerate(shape))
    return Source(f"np.broadcast_to(np.arange({shape[dimension]}, dtype={scalar_type_name(dtype)})"
                  f".reshape({expanded}), {shape}).copy()")


iota_p = Primitive("iota")
iota_p.def_impl(_iota_impl)
iota_p.def_abstract_eval(_iota_rule)
defjvp_zero(iota_p)
# iota has no operands, so vmap never maps it; the rule exists for completeness
iota_p.batch = lambda axis_size, vals, dims, **params: (iota_p.bind(**params), None)
def_lowering(iota_p, _iota_lowering)
iota_p.keeps_finite = True


def broadcasted_iota(dtype, shape, dimension):
    """An array of ``shape`` counting 0, 1, ... along ``dimension``."""
    shape = tuple(int(n) for n in shape)
    dimension = int(dimension)
    if dimension < 0:
        dimension += len(shape)
    return iota_p.bind(dtype=np.dtype(dtype), shape=shape, dimension=dimension)


def iota(dtype, size):
    """``[0, 1, ..., size - 1]`` of ``dtype``."""
    return broadcasted_iota(dtype, (int(size),), 0)


def zeros_like_array(x):
    """Zeros with the shape and dtype of ``x``."""
    return _structural().full_like(x, 0)


stop_gradient_p = _unary("stop_gradient", lambda x: x, ANY, lowering=lambda a: Source(a[0]))
defjvp_zero(stop_gradient_p)
stop_gradient_p.keeps_finite = True
stop_gradient_p.numba_lowering = lambda a, in_avals, out_avals: a[0]
stop_gradient_p.numba_elementwise = True


def stop_gradient(x):
    """``x`` with a zero derivative (applied to every leaf of a pytree)."""
    from fungrad.tree_util import tree_map
    return tree_map(lambda leaf: stop_gradient_p.bind(as_operand(leaf)), x)
