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

The computation is im2col: a strided ``sliding_window_view`` (no copy), then
one batched ``np.matmul`` over the groups; no Python loop over data.
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


def _dilate(x, dilation):
    """Insert ``d - 1`` zeros between elements along each spatial axis (2, 3, ...)."""
    if all(d == 1 for d in dilation):
        return x
    shape = x.shape[:2] + tuple(dilate_dim(n, d) for n, d in zip(x.shape[2:], dilation))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dilation)] = x
    return out


def _pad(x, padding):
    """Zero-pad the spatial axes by (lo, hi); negative amounts crop."""
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    if any(p != (0, 0) for p in grow):
        x = np.pad(x, grow)
    crop = (slice(None), slice(None)) + tuple(
        slice(max(-lo, 0), x.shape[2 + i] - max(-hi, 0)) for i, (lo, hi) in enumerate(padding))
    return x[crop]


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
    xp = _pad(_dilate(x, lhs_dilation), padding)
    kd = tuple(dilate_dim(kk, r) for kk, r in zip(k, rhs_dilation))
    win = np.lib.stride_tricks.sliding_window_view(xp, kd, axis=tuple(range(2, 2 + nd)))
    win = win[(slice(None), slice(None))
              + tuple(slice(None, None, s) for s in window_strides)
              + tuple(slice(None, None, r) for r in rhs_dilation)]
    win = win[(slice(None), slice(None)) + tuple(slice(0, m) for m in y)]
    sp = tuple(range(2, 2 + nd))
    kp = tuple(range(2 + nd, 2 + 2 * nd))
    if batch_group_count > 1:    # (B, N', I, Y, K) -> (B, N', Y, I, K)
        win = win.reshape((groups, n_out, i) + win.shape[2:])
        win = win.transpose((0, 1) + tuple(a + 1 for a in sp) + (2,) + tuple(a + 1 for a in kp))
    else:                        # (N, G, I, Y, K) -> (G, N, Y, I, K)
        win = win.reshape((n, groups, i) + win.shape[2:])
        win = win.transpose((1, 0) + tuple(a + 1 for a in sp) + (2,) + tuple(a + 1 for a in kp))
    a = win.reshape(groups, n_out * math.prod(y), i * math.prod(k))
    b = w.reshape(groups, o // groups, i * math.prod(k)).transpose(0, 2, 1)
    res = np.matmul(a, b)                                  # (G, N' * Y, O / G)
    res = res.reshape((groups, n_out) + y + (o // groups,))
    res = res.transpose((1, 0, 2 + nd) + tuple(range(2, 2 + nd)))
    return res.reshape((n_out, o) + y).astype(dtype, copy=False)


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
