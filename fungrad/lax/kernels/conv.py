"""The NumPy computation of ``lax.conv_general_dilated`` (NumPy-only module).

Shared by the primitive's impl, its ``jit`` lowering and ``fungrad.export``
(which copies this module's source into exported code), so it imports nothing
but NumPy.

Canonical layout: lhs ``(N, C, *S)``, rhs ``(O, I, *K)``, out ``(N', O, *Y)``.
``dimension_numbers = (lhs_perm, rhs_perm, out_perm)``: ``lhs_perm[0]`` is the
axis of lhs holding N, ``lhs_perm[1]`` the one holding C, then the spatial
axes; likewise rhs (O, I, spatial) and out (N, O, spatial).

Per spatial dimension: the lhs is dilated (``ld - 1`` zeros between
elements), padded by ``(lo, hi)`` (negative values crop), and a window of the
dilated kernel (size ``(K - 1) * rd + 1``) slides over it with stride ``s``:
``out[n, o, y] = sum_{i, k} lhs_padded[n, g(o) * I + i, y * s + k * rd] * rhs[o, i, k]``.

Feature groups (G): C = G * I, output feature o belongs to group o // (O / G).
Batch groups (B): N = B * N' (group-major), output feature o uses lhs batch
entries ``b(o) * N' + n`` with b(o) = o // (O / B).  At most one of G, B is > 1.

The computation works in channels-last layout (NHWC whatever the operands'
layout): the input padded/dilated once into ``(N, *S, C)`` (or viewed, when
nothing is padded).  Then, by shape: with many input features and a small
window, one GEMM per window tap over a strided view of it, summed; otherwise
im2col, a strided ``sliding_window_view`` copied once into the patch matrix
``(N * Y, K * C)`` whose rows are contiguous runs of the input, and one BLAS
GEMM (one batched ``np.matmul`` over the groups); depthwise convolutions one
broadcast multiply-add per tap.  The result is channels-last and is returned
as a transposed view.  The transposes of the convolution (input and kernel
gradients, fungrad/lax/convolution.py) are convolutions again, so they run
through the same GEMM.  No Python loop over data.
"""
import math

import numpy as np

__all__ = ["conv_general_dilated", "conv_output_spatial", "dilate_dim"]


def dilate_dim(size, dilation):
    """Length of a dimension of ``size`` after inserting ``dilation - 1`` zeros
    between its elements (0 stays 0)."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def conv_output_spatial(in_spatial, k_spatial, window_strides, padding,
                        lhs_dilation, rhs_dilation):
    """Output spatial sizes (0 where the window does not fit)."""
    out = []
    for s, k, st, (lo, hi), ld, rd in zip(in_spatial, k_spatial, window_strides, padding,
                                          lhs_dilation, rhs_dilation):
        padded = dilate_dim(s, ld) + lo + hi
        kd = dilate_dim(k, rd)
        out.append(max(0, (padded - kd) // st + 1) if padded >= kd else 0)
    return tuple(out)


def _channels_last(x, padding, lhs_dilation, taps, batch_last=False):
    """``x`` (N, C, *S) as ``(N, *S_padded, C)`` (``batch_last``: ``(C,
    *S_padded, N)``): dilated (zeros between elements), zero-padded (negative
    amounts crop).  Channels last makes every window's (taps, channels) run
    contiguous for the patch copy; a view of ``x`` when nothing is padded or
    dilated and the layout already fits."""
    nd = x.ndim - 2
    xl = np.moveaxis(x, (0, 1), (-1, 0)) if batch_last else np.moveaxis(x, 1, -1)
    if all(p == (0, 0) for p in padding) and all(d == 1 for d in lhs_dilation):
        # a 1-tap window reads each element once: no layout pays for a copy
        return xl if taps == 1 or xl.flags.c_contiguous else np.ascontiguousarray(xl)
    grown = tuple(dilate_dim(n, d) + max(lo, 0) + max(hi, 0)
                  for n, (lo, hi), d in zip(x.shape[2:], padding, lhs_dilation))
    out = np.zeros(xl.shape[:1] + grown + xl.shape[-1:], x.dtype)
    place = tuple(slice(max(lo, 0), max(lo, 0) + dilate_dim(n, d), d)
                  for n, (lo, _), d in zip(x.shape[2:], padding, lhs_dilation))
    out[(slice(None),) + place] = xl
    crop = tuple(slice(max(-lo, 0), g - max(-hi, 0)) for g, (lo, hi) in zip(grown, padding))
    return out[(slice(None),) + crop + (slice(None),)] if nd else out


def _batch_inside_features(x):
    """True when ``x``'s batch axis lies inside its feature axis in memory (a
    kernel gradient: the batch and feature axes of an NHWC input swapped)."""
    return x.shape[0] > 1 and x.shape[1] > 1 and abs(x.strides[0]) < abs(x.strides[1])


def _conv_feature_major(x, w, k, y, window_strides, padding, lhs_dilation, rhs_dilation):
    """An ungrouped convolution whose input has its batch axis inside its
    feature axis: the kernel gradient of an NHWC convolution, whose input is
    the forward input with batch and features swapped and whose kernel is the
    cotangent.  Both are read in their own memory order: the patches
    ``(C * K, Y * N)`` from the input laid out ``(C, *S, N)`` (an NHWC input's
    order), the kernel as the view ``(C * K, O)`` of the cotangent (no copy;
    im2col would transpose it); one GEMM ``(kernel.T @ patches).T`` (both
    operands row-major: ~15% faster than BLAS's transposed-operand kernel on
    the ``patches.T @ kernel`` form)."""
    nd = len(k)
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    xb = _channels_last(x, padding, lhs_dilation, math.prod(k), batch_last=True)
    kd = tuple(dilate_dim(kk, r) for kk, r in zip(k, rhs_dilation))
    win = np.lib.stride_tricks.sliding_window_view(xb, kd, axis=tuple(range(1, 1 + nd)))
    win = win[(slice(None),) + tuple(slice(0, m * s, s) for m, s in zip(y, window_strides))
              + (slice(None),) + tuple(slice(None, None, r) for r in rhs_dilation)]
    # (C, Y, N, K) -> (C, K, Y, N)
    order = (0,) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(1, 1 + nd)) + (1 + nd,)
    patches = win.transpose(order).reshape(c * math.prod(k), math.prod(y) * n)
    res = (np.reshape(w, (o, c * math.prod(k))) @ patches).T        # (Y * N, O)
    res = res.reshape(y + (n, o))
    return res.transpose((nd, nd + 1) + tuple(range(nd)))


def _patches(xl, groups, batch_groups, k, y, window_strides, rhs_dilation):
    """The im2col matrix ``(G, N' * Y, K * I)``: rows are output positions,
    columns (window tap, input feature), one copy from the strided window view."""
    nd = len(k)
    sp = tuple(range(1, 1 + nd))
    kd = tuple(dilate_dim(kk, r) for kk, r in zip(k, rhs_dilation))
    win = np.lib.stride_tricks.sliding_window_view(xl, kd, axis=sp)   # (N, Y, C, Kd)
    win = win[(slice(None),) + tuple(slice(0, m * s, s) for m, s in zip(y, window_strides))
              + (slice(None),) + tuple(slice(None, None, r) for r in rhs_dilation)]
    n, c = xl.shape[0], xl.shape[-1]
    ys = tuple(range(1, 1 + nd))
    ks = tuple(range(2 + nd, 2 + 2 * nd))
    if batch_groups > 1:          # (B, N', Y, C, K) -> (B, N', Y, K, C)
        win = win.reshape((batch_groups, n // batch_groups) + win.shape[1:])
        win = win.transpose((0, 1) + tuple(a + 1 for a in ys) + tuple(a + 1 for a in ks)
                            + (2 + nd,))
        return win.reshape(batch_groups, -1, math.prod(k) * c)
    i = c // groups               # (N, Y, G, I, K) -> (G, N, Y, K, I)
    win = win.reshape(win.shape[:1 + nd] + (groups, i) + win.shape[2 + nd:])
    win = win.transpose((1 + nd, 0) + ys + tuple(a + 1 for a in ks) + (2 + nd,))
    return win.reshape(groups, -1, math.prod(k) * i)


def _depthwise(xl, w, k, y, window_strides, rhs_dilation, dtype):
    """A convolution with one input feature per group (depthwise): per window
    tap, one broadcast multiply-add over the channels-last input; a GEMM per
    group would multiply by a vector and copy the patches group-major."""
    n, groups = xl.shape[0], xl.shape[-1]
    o = w.shape[0]
    wk = w.reshape((groups, o // groups) + k)                   # (G, M, K)
    out = np.zeros((n,) + y + (groups, o // groups), dtype)
    term = np.empty_like(out)
    for tap in np.ndindex(*k):
        rows = tuple(slice(t * r, t * r + (m - 1) * s + 1, s)
                     for t, r, m, s in zip(tap, rhs_dilation, y, window_strides))
        np.multiply(xl[(slice(None),) + rows][..., None], wk[(Ellipsis,) + tap], out=term)
        out += term
    return out.reshape((n,) + y + (o,))


# With at least this many input features, a small window is cheaper as one
# GEMM per tap than as im2col: the patch matrix (taps times the input) is never
# written, and each tap's GEMM reads the channels-last input in place (measured
# 1.5-2.5x on 3x3 windows over 16-32 features; with 1 feature the per-tap GEMMs
# are matrix-vector products and im2col wins 10x).  Large windows (the kernel
# gradient's window is the output) keep im2col.
_TAP_GEMM_MIN_FEATURES = 8
_TAP_GEMM_MAX_TAPS = 27


def _tap_gemms(xl, w, k, y, window_strides, rhs_dilation):
    """An ungrouped convolution as one GEMM per window tap, summed: for tap t,
    ``x[:, y * s + t * rd, :] @ w[:, :, t].T`` over the channels-last input
    ``(N, *S, C)`` (a strided view, which BLAS reads in place); channels-last
    result ``(N, *Y, O)``."""
    out = None
    for tap in np.ndindex(*k):
        rows = tuple(slice(t * r, t * r + (m - 1) * s + 1, s)
                     for t, r, m, s in zip(tap, rhs_dilation, y, window_strides))
        term = np.matmul(xl[(slice(None),) + rows], w[(slice(None), slice(None)) + tap].T)
        out = term if out is None else np.add(out, term, out=out)
    return out


def _conv_canonical(x, w, window_strides, padding, lhs_dilation, rhs_dilation,
                    feature_group_count, batch_group_count):
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    k = w.shape[2:]
    nd = len(k)
    groups = max(feature_group_count, batch_group_count)
    n_out = n // batch_group_count
    y = conv_output_spatial(x.shape[2:], k, window_strides, padding, lhs_dilation, rhs_dilation)
    dtype = np.result_type(x, w)
    if 0 in y or n_out == 0 or o == 0 or i * math.prod(k) == 0:
        return np.zeros((n_out, o) + y, dtype)
    if groups == 1 and _batch_inside_features(x):
        return _conv_feature_major(x, w, k, y, window_strides, padding, lhs_dilation,
                                   rhs_dilation).astype(dtype, copy=False)
    xl = _channels_last(x, padding, lhs_dilation, math.prod(k))
    if feature_group_count > 1 and i == 1:
        res = _depthwise(xl, w, k, y, window_strides, rhs_dilation, dtype)
        return np.moveaxis(res, -1, 1)
    if groups == 1 and i >= _TAP_GEMM_MIN_FEATURES and math.prod(k) <= _TAP_GEMM_MAX_TAPS:
        return np.moveaxis(_tap_gemms(xl, w, k, y, window_strides, rhs_dilation), -1, 1)
    a = _patches(xl, feature_group_count, batch_group_count, k, y, window_strides,
                 rhs_dilation)                                   # (G, N' * Y, K * I)
    # kernel (O, I, K) -> (G, K * I, O / G), columns in the patches' order
    b = w.reshape((groups, o // groups, i) + k)
    b = b.transpose((0,) + tuple(range(3, 3 + nd)) + (2, 1)).reshape(groups, -1, o // groups)
    if groups == 1:
        res = (a[0] @ b[0]).reshape((n_out,) + y + (o,))         # channels last
    else:                        # (G, N' * Y, O / G) -> (N', Y, G, O / G)
        res = np.matmul(a, b).reshape((groups, n_out) + y + (o // groups,))
        res = res.transpose(tuple(range(1, 2 + nd)) + (0, 2 + nd)).reshape((n_out,) + y + (o,))
    return np.moveaxis(res, -1, 1).astype(dtype, copy=False)


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count=1, batch_group_count=1,
                         preferred_element_type=None):
    """The convolution with all parameters in canonical form (see module doc)."""
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    x = np.transpose(np.asarray(lhs), lhs_perm)
    w = np.transpose(np.asarray(rhs), rhs_perm)
    out = _conv_canonical(x, w, window_strides, padding, lhs_dilation, rhs_dilation,
                          feature_group_count, batch_group_count)
    out = np.transpose(out, tuple(int(a) for a in np.argsort(out_perm)))
    if preferred_element_type is not None:
        out = out.astype(preferred_element_type)
    return out
