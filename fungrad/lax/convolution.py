"""Convolutions: the ``conv_general_dilated`` primitive and its JAX wrappers.

One primitive with all of its rules right after it:

* impl and jit lowering: ``fungrad.lax.kernels.conv.conv_general_dilated``
  (channels-last; im2col with ``sliding_window_view`` and one GEMM, or one
  GEMM per window tap when the input has many features, chosen by shape; a
  NumPy-only module so that ``fungrad.export`` can embed it);
* JVP: bilinear (``defbilinear``);
* transposes: convolutions again (derivations next to the rules);
* batching: the vmapped axis is folded into the batch dimension (lhs mapped),
  the output features (rhs mapped), or into feature / batch groups (both).

Parameters are stored canonically (hashable, with Python-evaluable reprs for
the generated code): ``window_strides``, ``lhs_dilation``, ``rhs_dilation``
as tuples of ints, ``padding`` as a tuple of ``(lo, hi)`` pairs,
``dimension_numbers`` as the three axis permutations ``(lhs_perm, rhs_perm,
out_perm)`` (``ConvDimensionNumbers`` as plain tuples), group counts as ints,
``preferred_element_type`` as a dtype name or None.
"""
from __future__ import annotations

import collections
import math
import operator

import numpy as np

from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters.ad import defbilinear
from fungrad.lax.kernels.conv import (conv_general_dilated as _conv_numpy,
                                     conv_output_spatial, dilate_dim)
from fungrad.lax.elementwise import convert_element_type
from fungrad.lax.structural import reshape, transpose, rev
from fungrad.lax.utils import as_operand, check_precision, def_kernel

__all__ = ["conv_general_dilated", "conv_general_dilated_patches", "conv_general_dilated_local",
           "conv", "conv_with_general_padding", "conv_transpose",
           "conv_dimension_numbers", "ConvDimensionNumbers", "padtype_to_pads",
           "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_dilated_p"]

ConvDimensionNumbers = collections.namedtuple(
    "ConvDimensionNumbers", ["lhs_spec", "rhs_spec", "out_spec"])
ConvDimensionNumbers.__doc__ = """Axis permutations of a convolution's operands:
``lhs_spec = (batch axis, feature axis, spatial axes...)``, ``rhs_spec =
(out-feature axis, in-feature axis, spatial axes...)``, ``out_spec = (batch
axis, feature axis, spatial axes...)``."""


# ============================================================================
# Parameter canonicalisation (the public API accepts what JAX accepts)
# ============================================================================

def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """``ConvDimensionNumbers`` from None (``NC...``, ``OI...``, ``NC...``), a
    ``ConvDimensionNumbers``, or three layout strings like ``('NHWC', 'HWIO', 'NHWC')``."""
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise TypeError(f"conv_general_dilated: lhs and rhs must have the same rank, got "
                        f"lhs shape {tuple(lhs_shape)} and rhs shape {tuple(rhs_shape)}")
    if nd < 2:
        raise TypeError(f"conv_general_dilated: operands need rank >= 2 (batch/feature "
                        f"axes plus spatial axes), got lhs shape {tuple(lhs_shape)}")
    if dimension_numbers is None:
        dn = ConvDimensionNumbers(*(tuple(range(nd)),) * 3)
    elif isinstance(dimension_numbers, ConvDimensionNumbers):
        dn = ConvDimensionNumbers(*(tuple(operator.index(a) for a in spec)
                                    for spec in dimension_numbers))
    elif (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
          and all(isinstance(s, str) for s in dimension_numbers)):
        dn = _perms_from_strings(*dimension_numbers)
    else:
        raise TypeError("conv_general_dilated: dimension_numbers must be None, a "
                        "ConvDimensionNumbers or three layout strings such as "
                        f"('NCHW', 'OIHW', 'NCHW'); got {dimension_numbers!r}")
    for name, spec in zip(("lhs", "rhs", "out"), dn):
        if sorted(spec) != list(range(nd)):
            raise TypeError(f"conv_general_dilated: the {name} spec {spec} must be a "
                            f"permutation of the {nd} axes of operands of rank {nd}")
    return dn


def _perms_from_strings(lhs_spec, rhs_spec, out_spec):
    """Layout strings -> axis permutations; spatial axes ordered as in rhs_spec."""
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    specs = (lhs_spec, rhs_spec, out_spec)
    for spec, (a, b) in zip(specs, pairs):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise TypeError(f"conv_general_dilated: layout string {spec!r} must contain "
                            f"{a!r} and {b!r} once and no repeated letters")
    spatial = [set(s) - set(p) for s, p in zip(specs, pairs)]
    if not spatial[0] == spatial[1] == spatial[2] or len({len(s) for s in specs}) != 1:
        raise TypeError("conv_general_dilated: layout strings must name the same spatial "
                        f"dimensions, got {specs}")

    def perm(spec, pair):
        sp = sorted((i for i, ch in enumerate(spec) if ch not in pair),
                    key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(sp)
    return ConvDimensionNumbers(*(perm(s, p) for s, p in zip(specs, pairs)))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """Explicit ``(lo, hi)`` pairs for 'SAME', 'SAME_LOWER' or 'VALID' padding."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"conv: unknown padding {padding!r}; use 'SAME', 'SAME_LOWER', "
                         "'VALID' or a sequence of (low, high) integer pairs")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return tuple(pads)


def positive_ints(name, value, n, default=None, who="conv_general_dilated",
                  dims="spatial dimension"):
    """``value`` (``default`` repeated if None) as ``n`` positive ints, or a clear
    error naming ``name``; shared by the convolutions and ``reduce_window``."""
    if value is None and default is not None:
        return (default,) * n
    try:
        out = tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(f"{who}: {name} must be a sequence of {n} ints, got "
                        f"{value!r}") from None
    if len(out) != n:
        raise ValueError(f"{who}: {name} must have one entry per {dims} ({n}), got "
                         f"{value!r}")
    if any(v < 1 for v in out):
        raise ValueError(f"{who}: {name} must be positive, got {value!r}")
    return out


def canonical_padding(padding, shape, window_shape, strides, who="conv_general_dilated",
                      dims="spatial dimension"):
    """``padding`` ('SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs) as explicit
    pairs for windows of ``window_shape`` (dilated) over ``shape``; shared by the
    convolutions and ``reduce_window``."""
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "SAME_LOWER", "VALID"):
            raise ValueError(f"{who}: unknown padding {padding!r}; use 'SAME', "
                             "'SAME_LOWER', 'VALID' or a sequence of (low, high) int pairs")
        return padtype_to_pads(shape, window_shape, strides, padding)
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a "
                        f"sequence of (low, high) int pairs, got {padding!r}") from None
    if len(pads) != len(shape):
        raise ValueError(f"{who}: padding needs one (low, high) pair per {dims} "
                         f"({len(shape)}), got {padding!r}")
    return pads


# ============================================================================
# The primitive
# ============================================================================

def _conv_shape(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count,
                preferred_element_type):
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    shapes = f"lhs shape {lhs.shape} and rhs shape {rhs.shape}"
    if lhs.ndim != rhs.ndim or lhs.ndim != len(lhs_perm):
        raise TypeError(f"conv_general_dilated: lhs and rhs must both have rank "
                        f"{len(lhs_perm)} (from dimension_numbers), got {shapes}")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated requires operands of the same dtype, got "
                        f"{lhs.dtype.name} and {rhs.dtype.name}; convert one with "
                        "lax.convert_element_type")
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1 or (g > 1 and b > 1):
        raise ValueError(f"conv_general_dilated: feature_group_count ({g}) and "
                         f"batch_group_count ({b}) must be >= 1 and not both > 1")
    n, c = lhs.shape[lhs_perm[0]], lhs.shape[lhs_perm[1]]
    o, i = rhs.shape[rhs_perm[0]], rhs.shape[rhs_perm[1]]
    if c != i * g:
        raise TypeError(f"conv_general_dilated: the lhs feature dimension ({c}) must equal "
                        f"the rhs input feature dimension ({i}) times feature_group_count "
                        f"({g}), got {shapes}")
    if o % g or o % b or n % b:
        raise TypeError(f"conv_general_dilated: the rhs output feature dimension ({o}) must "
                        f"be a multiple of feature_group_count ({g}) and batch_group_count "
                        f"({b}), and the lhs batch dimension ({n}) a multiple of "
                        f"batch_group_count, got {shapes}")
    y = conv_output_spatial([lhs.shape[a] for a in lhs_perm[2:]],
                            [rhs.shape[a] for a in rhs_perm[2:]],
                            window_strides, padding, lhs_dilation, rhs_dilation)
    canonical = (n // b, o) + y
    shape = tuple(canonical[j] for j in np.argsort(out_perm))
    dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return ShapedArray(shape, dtype)


def _canonical_dn(nd):
    return (tuple(range(nd)),) * 3


def _inverse(perm):
    return tuple(int(a) for a in np.argsort(perm))


def _spatial(nd):
    return tuple(range(2, nd))


def _conv_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, preferred_element_type):
    # d lhs[x] = sum_{y, k: y*s + k*rd = x*ld + lo} ct[y] rhs[k]: the cotangent,
    # dilated by the strides and padded by kd-1-lo in front, convolved with the
    # flipped kernel at stride ld (kd: dilated kernel size).  Features swap roles:
    # kernel (O, I) -> (G*I, O/G) group by group.  Batch groups become feature
    # groups whose outputs are then moved back into the batch dimension.
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    nd = len(lhs_perm)
    rhs_dtype = get_aval(rhs).dtype
    w = transpose(rhs, rhs_perm)
    o, i, *k = get_aval(w).shape
    ct = transpose(convert_element_type(ct, rhs_dtype), out_perm)
    n_out, _, *y = get_aval(ct).shape
    groups = max(feature_group_count, batch_group_count)
    w = reshape(w, (groups, o // groups, i) + tuple(k))
    w = transpose(w, (0, 2, 1) + tuple(range(3, nd + 1)))
    w = rev(reshape(w, (groups * i, o // groups) + tuple(k)), _spatial(nd))
    s_in = [lhs.aval.shape[a] for a in lhs_perm[2:]]
    pads = []
    for sz, kk, yy, st, (lo, _), ld, rd in zip(s_in, k, y, window_strides, padding,
                                               lhs_dilation, rhs_dilation):
        kd = dilate_dim(kk, rd)
        front = kd - 1 - lo
        pads.append((front, (sz - 1) * ld + kd - dilate_dim(yy, st) - front))
    out = conv_general_dilated_p.bind(
        ct, w, window_strides=tuple(lhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=_canonical_dn(nd), feature_group_count=groups,
        batch_group_count=1, preferred_element_type=None)
    if batch_group_count > 1:   # (N', B*I, S) -> (B*N', I, S)
        out = reshape(out, (n_out, groups, i) + tuple(s_in))
        out = transpose(out, (1, 0) + tuple(range(2, nd + 1)))
        out = reshape(out, (groups * n_out, i) + tuple(s_in))
    return convert_element_type(transpose(out, _inverse(lhs_perm)), lhs.aval.dtype)


def _conv_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, preferred_element_type):
    # d rhs[o, i, k] = sum_{n, y} ct[n, o, y] lhs_padded[n, g(o)*I + i, y*s + k*rd]:
    # a convolution of lhs, with its batch and feature axes swapped, by the
    # cotangent as kernel (O, N'); window stride rd, kernel dilation s.  Feature
    # groups become batch groups and vice versa.
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    nd = len(lhs_perm)
    lhs_dtype = get_aval(lhs).dtype
    x = transpose(lhs, (lhs_perm[1], lhs_perm[0]) + tuple(lhs_perm[2:]))   # (C, N, S)
    ct = convert_element_type(ct, lhs_dtype)
    kern = transpose(ct, (out_perm[1], out_perm[0]) + tuple(out_perm[2:]))  # (O, N', Y)
    s_in = [get_aval(lhs).shape[a] for a in lhs_perm[2:]]
    k = [rhs.aval.shape[a] for a in rhs_perm[2:]]
    y = get_aval(kern).shape[2:]
    pads = []
    for sz, kk, yy, st, (lo, _), ld, rd in zip(s_in, k, y, window_strides, padding,
                                               lhs_dilation, rhs_dilation):
        pads.append((lo, (kk - 1) * rd + dilate_dim(yy, st) - dilate_dim(sz, ld) - lo))
    out = conv_general_dilated_p.bind(
        x, kern, window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=_canonical_dn(nd), feature_group_count=batch_group_count,
        batch_group_count=feature_group_count, preferred_element_type=None)
    out = transpose(out, (1, 0) + _spatial(nd))                           # (O, I, K)
    return convert_element_type(transpose(out, _inverse(rhs_perm)), rhs.aval.dtype)


def _to_canonical(x, perm, bdim):
    """Transpose to canonical layout; a batch axis ``bdim`` (or None) goes first."""
    if bdim is None:
        return transpose(x, perm)
    rest = [a for a in range(get_aval(x).ndim) if a != bdim]
    return transpose(x, (bdim,) + tuple(rest[p] for p in perm))


def _conv_batch(axis_size, vals, dims, **params):
    # Work in canonical layout (batch axis first), fold the vmapped axis V into
    # a dimension of one conv, unfold it from the output, transpose back.
    #   lhs only: lhs batch N = (B, N') -> (B, V, N'): output batch (V, N')
    #   rhs only: rhs out-features O = (H, O/H) -> (H, V, O/H), H = max(G, B)
    #   both:     V extra feature groups (B == 1), or V extra batch groups
    (lhs, rhs), (ld, rd) = vals, dims
    lhs_perm, rhs_perm, out_perm = params["dimension_numbers"]
    nd, v = len(lhs_perm), axis_size
    g, b = params["feature_group_count"], params["batch_group_count"]
    groups = max(g, b)
    x, w = _to_canonical(lhs, lhs_perm, ld), _to_canonical(rhs, rhs_perm, rd)
    sp = lambda arr, skip: tuple(get_aval(arr).shape[skip:])
    rest = lambda first: tuple(range(first, first + nd - 2))
    p = dict(params, dimension_numbers=_canonical_dn(nd))
    if rd is None:                                   # x: (V, N, C, S)
        n = get_aval(x).shape[1]
        x = reshape(x, (v, b, n // b) + sp(x, 2))
        x = reshape(transpose(x, (1, 0) + rest(2) + (nd, nd + 1)), (b * v * (n // b),) + sp(x, 3))
        out = conv_general_dilated_p.bind(x, w, **p)  # (V*N', O, Y)
        out = reshape(out, (v, get_aval(out).shape[0] // v) + sp(out, 1))
    elif ld is None:                                 # w: (V, O, I, K)
        o = get_aval(w).shape[1]
        w = reshape(w, (v, groups, o // groups) + sp(w, 2))
        w = reshape(transpose(w, (1, 0) + rest(2) + (nd, nd + 1)), (groups * v * (o // groups),) + sp(w, 3))
        out = conv_general_dilated_p.bind(x, w, **p)  # (N', H*V*O/H, Y)
        n_out, y = get_aval(out).shape[0], sp(out, 2)
        out = reshape(out, (n_out, groups, v, o // groups) + y)
        out = reshape(transpose(out, (2, 0, 1, 3) + tuple(range(4, 4 + nd - 2))), (v, n_out, o) + y)
    else:
        out = _conv_batch_both(x, w, v, p, g, b)
    return transpose(out, (0,) + tuple(1 + a for a in _inverse(out_perm))), 0


def _conv_batch_both(x, w, v, p, g, b):
    """x: (V, N, C, S), w: (V, O, I, K) -> out (V, N', O, Y), one conv."""
    n, c, *s = get_aval(x).shape[1:]
    o, i, *k = get_aval(w).shape[1:]
    nd = len(s) + 2
    w = reshape(w, (v * o, i) + tuple(k))         # out-feature v*O + o: group v*H + h
    if b == 1:                                    # channels (V, G, I): V*G feature groups
        x = transpose(x, (1, 0) + tuple(range(2, nd + 1)))
        x = reshape(x, (n, v * c) + tuple(s))
        p = dict(p, feature_group_count=v * g)
    else:                                         # batch (V, B, N'): V*B batch groups
        x = reshape(x, (v * n, c) + tuple(s))
        p = dict(p, batch_group_count=v * b)
    out = conv_general_dilated_p.bind(x, w, **p)  # (N', V*O, Y)
    n_out, _, *y = get_aval(out).shape
    out = reshape(out, (n_out, v, o) + tuple(y))
    return transpose(out, (1, 0) + tuple(range(2, nd + 1)))


conv_general_dilated_p = Primitive("conv_general_dilated")
def_kernel(conv_general_dilated_p, _conv_numpy)
conv_general_dilated_p.def_abstract_eval(_conv_shape)
defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)
conv_general_dilated_p.batch = _conv_batch


# ============================================================================
# Public functions (jax.lax signatures)
# ============================================================================

def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-d convolution with strides, padding and dilations
    (``jax.lax.conv_general_dilated``).

    ``padding`` is 'SAME', 'SAME_LOWER', 'VALID' or one ``(low, high)`` pair per
    spatial dimension (negative values crop); 'SAME' pads so that the output has
    ``ceil(in / stride)`` positions, computed on the undilated lhs and the
    dilated kernel, as JAX does.  ``dimension_numbers``: None (``NC...``,
    ``OI...``, ``NC...``), a ``ConvDimensionNumbers`` of axis permutations, or
    layout strings such as ``('NHWC', 'HWIO', 'NHWC')``.  ``precision`` and
    ``out_sharding`` are accepted for JAX compatibility (NumPy computes at the
    operands' precision, on one device).
    """
    check_precision(precision, "lax.conv_general_dilated")
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    params = _conv_params(get_aval(lhs), get_aval(rhs), window_strides, padding, lhs_dilation,
                          rhs_dilation, dimension_numbers, feature_group_count,
                          batch_group_count, preferred_element_type)
    return conv_general_dilated_p.bind(lhs, rhs, **params)


def _conv_params(la, ra, window_strides, padding, lhs_dilation, rhs_dilation,
                 dimension_numbers, feature_group_count, batch_group_count,
                 preferred_element_type) -> dict:
    """The canonical params of a convolution of operands typed ``la``, ``ra``,
    checked by the shape rule (clear errors eagerly: evaluation skips the rule)."""
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    n = la.ndim - 2
    strides = positive_ints("window_strides", window_strides, n)
    lhs_dil = positive_ints("lhs_dilation", lhs_dilation, n, 1)
    rhs_dil = positive_ints("rhs_dilation", rhs_dilation, n, 1)
    k_dilated = [dilate_dim(ra.shape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dil)]
    pads = canonical_padding(padding, [la.shape[a] for a in dn.lhs_spec[2:]],
                             k_dilated, strides)
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    params = dict(window_strides=strides, padding=pads, lhs_dilation=lhs_dil,
                  rhs_dilation=rhs_dil, dimension_numbers=tuple(tuple(s) for s in dn),
                  feature_group_count=operator.index(feature_group_count),
                  batch_group_count=operator.index(batch_group_count),
                  preferred_element_type=None if pet is None or pet == la.dtype else pet.name)
    _conv_shape(la, ra, **params)
    return params


def _shapes_as_avals(lhs_shape, rhs_shape):
    as_shape = lambda s: tuple(operator.index(d) for d in s)
    return ShapedArray(as_shape(lhs_shape), np.float64), ShapedArray(as_shape(rhs_shape),
                                                                     np.float64)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    """The output shape of ``conv_general_dilated`` on operands of these shapes
    (``jax.lax.conv_general_shape_tuple``); ``dimension_numbers`` as there."""
    la, ra = _shapes_as_avals(lhs_shape, rhs_shape)
    params = _conv_params(la, ra, window_strides, padding, None, None, dimension_numbers,
                          1, 1, None)
    return _conv_shape(la, ra, **params).shape


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in ``NCHW`` / ``OIHW`` layout without dilation (``jax.lax.conv``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """Convolution in ``NCHW`` / ``OIHW`` layout with dilations
    (``jax.lax.conv_with_general_padding``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_DN = {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                         5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_padding(k, s, padding):
    """(lo, hi) padding of the fractionally strided conv for 'SAME' / 'VALID'."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose: unknown padding {padding!r}; use 'SAME', "
                         "'VALID' or a sequence of (low, high) integer pairs")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """Fractionally strided ("transposed") convolution (``jax.lax.conv_transpose``):
    a convolution with ``lhs_dilation=strides`` and unit window strides.

    ``dimension_numbers`` defaults to TensorFlow's layouts (``NHC``/``HIO``,
    ``NHWC``/``HWIO``, ``NHWDC``/``HWDIO``).  ``transpose_kernel=True`` flips the
    kernel's spatial axes and swaps its in/out feature axes (the gradient of a
    forward conv, as TensorFlow's Conv2DTranspose).  With
    ``use_consistent_padding=True`` explicit ``(lo, hi)`` pairs are the forward
    conv's padding: ``dilated_kernel - 1 - lo`` / ``- hi`` is applied.
    """
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    dn, pads, strides, rhs_dil = _conv_transpose_args(la, ra, strides, padding, rhs_dilation,
                                                      dimension_numbers, use_consistent_padding)
    if transpose_kernel:
        o_ax, i_ax = dn.rhs_spec[0], dn.rhs_spec[1]
        perm = list(range(ra.ndim))
        perm[o_ax], perm[i_ax] = i_ax, o_ax
        rhs = transpose(rev(rhs, dn.rhs_spec[2:]), tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * len(strides), pads, strides, rhs_dil, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_args(la, ra, strides, padding, rhs_dilation, dimension_numbers,
                         use_consistent_padding=False):
    """``(dimension numbers, padding pairs, strides, rhs dilation)`` of the
    fractionally strided convolution ``conv_transpose`` computes."""
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_DEFAULT_DN:
            raise ValueError(f"conv_transpose: no default dimension_numbers for operands of "
                             f"rank {la.ndim}; pass dimension_numbers explicitly")
        dimension_numbers = _TRANSPOSE_DEFAULT_DN[la.ndim]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    n = la.ndim - 2
    rhs_dil = positive_ints("rhs_dilation", rhs_dilation, n, 1)
    strides = positive_ints("strides", strides, n)
    k_dilated = [dilate_dim(ra.shape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dil)]
    if isinstance(padding, str):
        pads = tuple(_conv_transpose_padding(k, s, padding.upper())
                     for k, s in zip(k_dilated, strides))
    else:
        pads = canonical_padding(padding, k_dilated, k_dilated, strides)
        if use_consistent_padding:
            pads = tuple((k - 1 - lo, k - 1 - hi) for k, (lo, hi) in zip(k_dilated, pads))
    return dn, pads, strides, rhs_dil


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of ``conv_transpose`` on operands of these shapes (without
    ``transpose_kernel``; ``jax.lax.conv_transpose_shape_tuple``)."""
    la, ra = _shapes_as_avals(lhs_shape, rhs_shape)
    dn, pads, strides, rhs_dil = _conv_transpose_args(la, ra, window_strides, padding, None,
                                                      dimension_numbers)
    params = _conv_params(la, ra, (1,) * len(strides), pads, strides, rhs_dil, dn, 1, 1, None)
    return _conv_shape(la, ra, **params).shape


# ============================================================================
# Patches and unshared (locally connected) convolutions, built on the above
# ============================================================================

def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a window of ``filter_shape`` reads, flattened
    into the output's feature dimension (``jax.lax.conv_general_dilated_patches``):
    its size is ``C * prod(filter_shape)``, ordered input feature first, then the
    window positions in ``rhs_spec``'s spatial order.  A grouped convolution
    with a 0/1 kernel, so linear and differentiable like the convolution."""
    lhs = as_operand(lhs)
    aval = get_aval(lhs)
    filter_shape = tuple(operator.index(k) for k in filter_shape)
    if len(filter_shape) != aval.ndim - 2:
        raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} needs one "
                         f"size per spatial dimension of lhs (shape {aval.shape})")
    dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    window = math.prod(filter_shape)
    channels = aval.shape[dn.lhs_spec[1]]
    # output feature c * window + k is input feature c at window position k
    kernel = np.broadcast_to(np.eye(window, dtype=aval.dtype), (channels, window, window))
    kernel = kernel.reshape((channels * window, 1) + filter_shape)
    kernel = np.moveaxis(kernel, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(lhs, np.ascontiguousarray(kernel), window_strides, padding,
                                lhs_dilation, rhs_dilation, dn, feature_group_count=channels,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """Unshared convolution (a locally connected layer,
    ``jax.lax.conv_general_dilated_local``): a separate kernel at every output
    position.  ``rhs``'s spatial axes are the output positions and its ``I``
    axis holds the input features times the window positions, in the order of
    ``conv_general_dilated_patches``.  Patches contracted with ``rhs`` by one
    ``dot_general``."""
    from fungrad.lax.dot import dot_general
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers)
    dn = conv_dimension_numbers(get_aval(lhs).shape, (1, 1) + tuple(filter_shape),
                                dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dn
    out_spatial, rhs_spatial = list(out_spec[2:]), list(rhs_spec[2:])
    # pair the spatial axes of the patches and of rhs, in the patches' axis order
    order = sorted(range(len(out_spatial)), key=lambda k: out_spatial[k])
    batch_dims = ((tuple(out_spatial[k] for k in order), tuple(rhs_spatial[k] for k in order)))
    out = dot_general(patches, rhs, (((out_spec[1],), (rhs_spec[1],)), batch_dims))
    # dot_general's layout: spatial positions, then batch N, then features O
    nd = get_aval(out).ndim
    return transpose(out, _moved_to(nd, (nd - 2, nd - 1), (out_spec[0], out_spec[1])))


def _moved_to(ndim, sources, destinations):
    """The permutation ``np.moveaxis`` applies: ``perm[i]`` is the source of axis i."""
    rest = [a for a in range(ndim) if a not in sources]
    perm = [None] * ndim
    for src, dst in sorted(zip(sources, destinations), key=lambda p: p[1]):
        perm[dst] = src
    it = iter(rest)
    return tuple(p if p is not None else next(it) for p in perm)
