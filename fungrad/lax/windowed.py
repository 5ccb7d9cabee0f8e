"""Windowed reductions: ``lax.reduce_window`` and the primitives
``reduce_window_sum``, ``reduce_window_max``, ``reduce_window_min`` (JAX's
internal names), plus the helper ``window_select_index``.

Parameters, canonical and hashable, one entry per operand dimension (as JAX:
the window spans every axis, use 1 for axes that are not pooled):
``window_dimensions``, ``window_strides``, ``base_dilation``,
``window_dilation`` as tuples of positive ints, ``padding`` as a tuple of
``(lo, hi)`` pairs (negative values crop).  Holes from base dilation and
padding hold the monoid's identity (see ``kernels/window.py``)::

    out[y] = reduce_k padded[y * stride + k * window_dilation]

Rules, all next to the primitives:

* impl and jit lowering: one kernel function of ``fungrad.lax.kernels.window``
  (NumPy only, so ``fungrad.export`` can embed it);
* ``reduce_window_sum`` is linear.  Its transpose is another windowed sum
  (a convolution with a ones kernel, whose flip is itself): the cotangent,
  dilated by the strides and padded by ``kd - 1 - lo`` in front, summed over
  windows of the same size and window dilation at stride ``base_dilation``;
* ``reduce_window_max``/``min``: the tangent of each output is the tangent at
  the *first* arg-max/arg-min of its window (XLA's select-and-gather with
  ``ge``/``le``; so a max-pool gradient goes to one element on ties, unlike
  ``reduce_max`` which splits it).  ``window_select_index`` (JVP zero) finds
  that window position (given the pool's result, it does not take the max
  again); ``window_gather`` reads the tangent there (zero in
  padding), and its transpose ``window_scatter_add`` adds the cotangent
  there (the max-pool gradient, XLA's select_and_scatter_add): both loop over
  the few window taps with one vectorised pass each (kernels/window.py), so
  the rule is linear in the tangent and differentiable again (second
  derivatives are zero away from ties);
* batching: the vmapped axis goes first with a window of 1 over it.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from fungrad._dtype_classes import is_inexact, is_integer, kind as dtype_kind
from fungrad.core import Primitive, ShapedArray, Tracer, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import (Zero, deflinear, defjvp_zero, instantiate_zeros,
                                     is_undefined_primal, tangent_aval)
from fungrad.lax.kernels import window as _wn
from fungrad.lax.convolution import canonical_padding, positive_ints
from fungrad.lax.reductions import monoid_of
from fungrad.lax.utils import as_operand, call_lowering, checked_bind, def_kernel, def_lowering

__all__ = ["reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
           "reduce_window_shape_tuple",
           "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p",
           "window_select_index_p", "window_gather_p", "window_scatter_add_p"]

_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")
_KINDS_OF_DTYPE = {"sum": "iufc", "max": "biuf", "min": "biuf"}


def _lax():
    from fungrad import lax  # late: the package imports this module
    return lax


# ============================================================================
# Shape rule and parameter checks
# ============================================================================

def _check_params(name, x, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    """Params reach the shape rule unchecked when ``bind`` is called directly."""
    nd = x.ndim
    for pname in ("window_dimensions", "window_strides", "base_dilation", "window_dilation"):
        val = locals()[pname]
        if (not isinstance(val, tuple) or len(val) != nd
                or any(not isinstance(v, (int, np.integer)) or v < 1 for v in val)):
            raise ValueError(f"{name}: {pname} must be a tuple of {nd} positive ints (one "
                             f"per operand dimension, operand shape {x.shape}), got {val!r}")
    if (not isinstance(padding, tuple) or len(padding) != nd
            or any(not isinstance(p, tuple) or len(p) != 2 for p in padding)):
        raise ValueError(f"{name}: padding must be a tuple of {nd} (low, high) pairs for an "
                         f"operand of shape {x.shape}, got {padding!r}")


def _window_shape_rule(kind, name, out_dtype=None):
    def rule(x, **params):
        params = {k: params[k] for k in _WINDOW_PARAMS}
        _check_params(name, x, **params)
        if dtype_kind(x.dtype) not in _KINDS_OF_DTYPE[kind]:
            raise TypeError(f"{name} does not support operands of dtype {x.dtype.name}")
        shape = _wn.window_output_shape(x.shape, *params.values())
        return ShapedArray(shape, x.dtype if out_dtype is None else out_dtype)
    return rule


def _window_batcher(prim):
    """The vmapped axis goes first; the window has size 1 along it."""
    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        x = batching.moveaxis(x, d, 0)
        new = dict(params, window_dimensions=(1,) + params["window_dimensions"],
                   window_strides=(1,) + params["window_strides"],
                   padding=((0, 0),) + params["padding"],
                   base_dilation=(1,) + params["base_dilation"],
                   window_dilation=(1,) + params["window_dilation"])
        return prim.bind(x, **new), 0
    prim.batch = rule
    return rule


def _def_reduce_window_kernel(prim, kind):
    """Impl and lowering: ``kernels.window.reduce_window`` with the monoid
    ``kind`` as one more keyword (the generated code calls it; export embeds it)."""
    prim.def_impl(lambda x, **params: _wn.reduce_window(x, kind=kind, **params))
    lower = call_lowering(_wn.reduce_window)
    def_lowering(prim, lambda args, **params: lower(args, kind=kind, **params))


# ============================================================================
# window_select_index: position of the first max/min inside each window
# ============================================================================

def _select_index_shape(x, *extremum, kind, **params):
    """``window_select_index(x)`` or ``(x, extremum)``: the windows' max/min
    given (a max-pool's result: the kernel does not compute it again)."""
    out = _window_shape_rule(kind, "window_select_index", np.dtype(np.int64))(x, **params)
    if len(extremum) > 1 or extremum and (extremum[0].shape != out.shape
                                          or extremum[0].dtype != x.dtype):
        got = ", ".join(f"{e.dtype.name}{list(e.shape)}" for e in extremum)
        raise TypeError(f"window_select_index: the optional second operand is the windows' "
                        f"{kind} ({x.dtype.name}{list(out.shape)}), got {got}")
    return out


window_select_index_p = Primitive("window_select_index", differentiable=False)
window_select_index_p.keeps_finite = True
def_kernel(window_select_index_p, _wn.select_index)
window_select_index_p.def_abstract_eval(_select_index_shape)
defjvp_zero(window_select_index_p)


# ============================================================================
# reduce_window_sum: linear
# ============================================================================

def _dilated(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def _sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    # d x[i] = sum_{y, k: y*s + k*wd = i*bd + lo} ct[y].  With ct dilated by s
    # and padded by kd - 1 - lo in front, this is a windowed sum (window k,
    # dilation wd, flipped: a ones window is its own flip) at stride bd.
    in_shape = x.aval.shape
    pads = []
    for n, k, s, (lo, _), bd, wd, m in zip(in_shape, window_dimensions, window_strides,
                                           padding, base_dilation, window_dilation,
                                           get_aval(ct).shape):
        kd = _dilated(k, wd)
        front = kd - 1 - lo
        pads.append((front, (n - 1) * bd + kd - _dilated(m, s) - front))
    out = reduce_window_sum_p.bind(ct, window_dimensions=window_dimensions,
                                   window_strides=base_dilation, padding=tuple(pads),
                                   base_dilation=window_strides,
                                   window_dilation=window_dilation)
    return [out]


reduce_window_sum_p = Primitive("reduce_window_sum")
_def_reduce_window_kernel(reduce_window_sum_p, "sum")
reduce_window_sum_p.def_abstract_eval(_window_shape_rule("sum", "reduce_window_sum"))
deflinear(reduce_window_sum_p, _sum_transpose)
_window_batcher(reduce_window_sum_p)


# ============================================================================
# reduce_window_max, reduce_window_min: tangent at the first arg-max / arg-min
# ============================================================================

def _tap_pair_batcher(prim, result_shape_param=None):
    """vmap of ``prim(values, index)``: both mapped axes go first (an unmapped
    one is broadcast) and the window gets size 1 along the new axis."""
    def rule(axis_size, vals, dims, **params):
        lax = _lax()
        moved = []
        for x, d in zip(vals, dims):
            if d is None:
                shape = get_aval(x).shape
                x = lax.broadcast_in_dim(x, (axis_size,) + shape, tuple(range(1, len(shape) + 1)))
            else:
                x = batching.moveaxis(x, d, 0)
            moved.append(x)
        new = dict(params, window_dimensions=(1,) + params["window_dimensions"],
                   window_strides=(1,) + params["window_strides"],
                   padding=((0, 0),) + params["padding"],
                   base_dilation=(1,) + params["base_dilation"],
                   window_dilation=(1,) + params["window_dilation"])
        if result_shape_param:
            new[result_shape_param] = (axis_size,) + params[result_shape_param]
        return prim.bind(*moved, **new), 0
    prim.batch = rule


def _linear_in_first(prim):
    """JVP of ``prim(values, index)``, linear in ``values`` (index: no tangent)."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if type(tangents[0]) is Zero:
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, prim.bind(tangents[0], primals[1], **params)
    prim.jvp = jvp
    prim.linear = True


def _gather_taps_transpose(ct, t, idx, **params):
    assert is_undefined_primal(t) and not is_undefined_primal(idx)
    ct = instantiate_zeros(ct)
    return [window_scatter_add_p.bind(ct, idx, operand_shape=t.aval.shape, **params), None]


def _scatter_taps_transpose(ct, c, idx, *, operand_shape, **params):
    assert is_undefined_primal(c) and not is_undefined_primal(idx)
    return [window_gather_p.bind(instantiate_zeros(ct), idx, **params), None]


def _check_tap_operands(name, values, idx):
    if not is_integer(idx.dtype):
        raise TypeError(f"{name}: the window index must be an integer array, got dtype "
                        f"{idx.dtype.name}")


def _gather_taps_shape(t, idx, **params):
    _check_tap_operands("window_gather", t, idx)
    _check_params("window_gather", t, **params)
    want = _wn.window_output_shape(t.shape, **params)
    if idx.shape != want:
        raise TypeError(f"window_gather: the window index has shape {idx.shape}, the windows "
                        f"of an operand of shape {t.shape} form shape {want}")
    return ShapedArray(idx.shape, t.dtype)


def _scatter_taps_shape(c, idx, *, operand_shape, **params):
    _check_tap_operands("window_scatter_add", c, idx)
    operand = ShapedArray(tuple(operand_shape), c.dtype)
    _check_params("window_scatter_add", operand, **params)
    want = _wn.window_output_shape(operand.shape, **params)
    if idx.shape != want or c.shape != want:
        raise TypeError(f"window_scatter_add: the cotangent (shape {c.shape}) and the window "
                        f"index (shape {idx.shape}) must have the shape {want} of the windows "
                        f"of an operand of shape {operand.shape}")
    return operand


_tap_pair_batcher(window_select_index_p)     # (operand[, extremum]): both batched alike

# window_gather(t, idx): t read at window position idx of every window (the
# tangent of a max/min pool); window_scatter_add(ct, idx): its transpose, the
# pool's gradient (XLA's select_and_scatter_add).  Linear in their first operand.
window_gather_p = Primitive("window_gather")
def_kernel(window_gather_p, _wn.gather_taps)
window_gather_p.def_abstract_eval(_gather_taps_shape)
_linear_in_first(window_gather_p)
window_gather_p.transpose = _gather_taps_transpose
_tap_pair_batcher(window_gather_p)

window_scatter_add_p = Primitive("window_scatter_add")
def_kernel(window_scatter_add_p, _wn.scatter_add_taps)
window_scatter_add_p.def_abstract_eval(_scatter_taps_shape)
_linear_in_first(window_scatter_add_p)
window_scatter_add_p.transpose = _scatter_taps_transpose
_tap_pair_batcher(window_scatter_add_p, "operand_shape")


def _chooser_jvp(prim, kind):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **params)
        if type(t) is Zero:
            return ans, Zero(tangent_aval(get_aval(ans)))
        idx = window_select_index_p.bind(x, ans, kind=kind, **params)
        return ans, window_gather_p.bind(t, idx, **params)
    prim.jvp = jvp


def _chooser(kind):
    name = f"reduce_window_{kind}"
    p = Primitive(name)
    _def_reduce_window_kernel(p, kind)
    p.def_abstract_eval(_window_shape_rule(kind, name))
    _chooser_jvp(p, kind)
    _window_batcher(p)
    return p


reduce_window_max_p = _chooser("max")
reduce_window_max_p.keeps_finite = True
reduce_window_min_p = _chooser("min")
reduce_window_min_p.keeps_finite = True
_PRIMS = {"sum": reduce_window_sum_p, "max": reduce_window_max_p, "min": reduce_window_min_p}


# ============================================================================
# Public functions
# ============================================================================

def _window_params(who, shape, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    nd = len(shape)
    _ints = functools.partial(positive_ints, who=who, dims="operand dimension")
    window = _ints("window_dimensions", window_dimensions, nd)
    strides = _ints("window_strides", window_strides, nd, 1)
    base = _ints("base_dilation", base_dilation, nd, 1)
    wdil = _ints("window_dilation", window_dilation, nd, 1)
    pads = canonical_padding(padding, shape, [_dilated(k, d) for k, d in zip(window, wdil)],
                             strides, who, "operand dimension")
    return dict(window_dimensions=window, window_strides=strides, padding=pads,
                base_dilation=base, window_dilation=wdil)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of ``reduce_window`` on an operand of this shape
    (``jax.lax.reduce_window_shape_tuple``); ``padding`` as there."""
    shape = tuple(operator.index(d) for d in operand_shape)
    params = _window_params("reduce_window_shape_tuple", shape, window_dimensions,
                            window_strides, padding, base_dilation, window_dilation)
    return _wn.window_output_shape(shape, **params)


def _reduce_window_kind(kind, operand, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
    operand = as_operand(operand)
    params = _window_params(f"reduce_window_{kind}", get_aval(operand).shape,
                            window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    return checked_bind(_PRIMS[kind], operand, **params)


def reduce_window_sum(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Sum over windows (``reduce_window`` with ``lax.add`` and 0)."""
    return _reduce_window_kind("sum", operand, window_dimensions, window_strides, padding,
                               base_dilation, window_dilation)


def reduce_window_max(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Max over windows (max pooling; the gradient goes to each window's first max)."""
    return _reduce_window_kind("max", operand, window_dimensions, window_strides, padding,
                               base_dilation, window_dilation)


def reduce_window_min(operand, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Min over windows (the gradient goes to each window's first min)."""
    return _reduce_window_kind("min", operand, window_dimensions, window_strides, padding,
                               base_dilation, window_dilation)


# --- reduce_window: recognise the monoid ------------------------------------------

_WINDOW_KINDS = {"add": "sum", "max": "max", "min": "min"}   # monoid -> primitive suffix


def _monoid_kind(computation, dtype):
    """'sum' / 'max' / 'min' for computations that are one add / max / min of
    their two arguments (``lax.add``, ``jnp.maximum``, ``lambda a, b: a + b``...),
    recognised as ``lax.reduce`` recognises monoids."""
    kind = _WINDOW_KINDS.get(monoid_of(computation, dtype))
    if kind is not None:
        return kind
    raise NotImplementedError(
        f"reduce_window: computation {getattr(computation, '__name__', computation)!r} is "
        "not supported; fungrad supports the monoids add, max and min (lax.add / lax.max / "
        "lax.min, jnp.add / jnp.maximum / jnp.minimum, or a function computing one of "
        "them of its two arguments)")


def _combine_init(kind, out, init, operand_dtype):
    """Fold a non-identity ``init_value`` into the result (max / min only)."""
    lax = _lax()
    init_aval = get_aval(init)
    if init_aval.ndim != 0:
        raise TypeError(f"reduce_window: init_value must be a scalar, got shape "
                        f"{init_aval.shape}")
    if init_aval.dtype != operand_dtype and not init_aval.weak_type:
        raise TypeError(f"reduce_window: init_value dtype {init_aval.dtype.name} differs "
                        f"from the operand dtype {operand_dtype.name}; convert one of them")
    if not isinstance(init, Tracer):
        value = np.asarray(init)
        if dtype_kind(operand_dtype) in "biu" and is_inexact(value.dtype) and not (
                np.isfinite(value) and value == np.round(value)):
            raise TypeError(f"reduce_window: init_value {init!r} is not a value of the "
                            f"operand dtype {operand_dtype.name}; for max / min of "
                            "integers use np.iinfo(dtype).min / .max")
        init = as_operand(init, like=out)
    if not isinstance(init, Tracer) and np.asarray(init) == _wn.identity(kind, operand_dtype):
        return out
    if kind == "sum":
        raise NotImplementedError(
            "reduce_window with add needs init_value 0 (the monoid's identity), given as a "
            "concrete value; add a constant to the result instead")
    init = lax.convert_element_type(init, operand_dtype)
    shape = get_aval(out).shape
    init = lax.broadcast_in_dim(init, shape, ())
    return (lax.max if kind == "max" else lax.min)(out, init)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduction over (padded, dilated, strided) windows (``jax.lax.reduce_window``).

    Supported computations: the monoids add, max and min (see ``_monoid_kind``),
    with one operand array.  ``init_value`` must be the monoid's identity for
    add (0); for max / min any scalar works and is folded in as
    ``max(result, init_value)`` (so -inf / +inf, or the integer extremes, cost
    nothing).  ``padding``: 'SAME', 'SAME_LOWER', 'VALID' (computed on the
    undilated operand and the dilated window, as JAX) or (low, high) pairs.
    """
    if isinstance(operand, (tuple, list, dict)):
        raise NotImplementedError("reduce_window: fungrad supports one operand array, not "
                                  "a pytree of operands; call it once per array")
    operand = as_operand(operand)
    dtype = get_aval(operand).dtype
    kind = _monoid_kind(computation, dtype)
    out = _reduce_window_kind(kind, operand, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation)
    return _combine_init(kind, out, init_value, dtype)
