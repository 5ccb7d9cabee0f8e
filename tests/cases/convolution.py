"""Cases for fungrad.lax.convolution and fungrad.numpy's convolve/correlate
(see tests/harness.py).

The reference ``ref_conv`` is written independently of the implementation:
explicit Python loops over output positions, kernel taps and channels of a
zero-dilated lhs, in NCHW / OIHW layout (other layouts are transposed to it).
Shapes are small so that check_grads at order 2 stays fast.
"""
import itertools

import numpy as np

from fungrad.lax.convolution import conv_general_dilated, conv_transpose
from fungrad.numpy._convolve import convolve, correlate
from tests.harness import Arg, Case


def _dilated_len(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def ref_conv(lhs, rhs, strides, pads, lhs_dil=None, rhs_dil=None, groups=1, batch_groups=1):
    """NCHW x OIHW -> NCHW convolution by loops over output positions (reference only)."""
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    s_in, k = lhs.shape[2:], rhs.shape[2:]
    nd = len(s_in)
    lhs_dil = lhs_dil or (1,) * nd
    rhs_dil = rhs_dil or (1,) * nd
    sd = [_dilated_len(s, d) for s, d in zip(s_in, lhs_dil)]
    xd = np.zeros((n, c) + tuple(sd), np.result_type(lhs, rhs))
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = lhs
    kd = [_dilated_len(kk, r) for kk, r in zip(k, rhs_dil)]
    y = [(s + lo + hi - kk) // st + 1 if s + lo + hi >= kk else 0
         for s, (lo, hi), kk, st in zip(sd, pads, kd, strides)]
    n_out = n // batch_groups
    out = np.zeros((n_out, o) + tuple(y), xd.dtype)
    per_group = o // max(groups, batch_groups)
    for pos in itertools.product(*map(range, y)):
        for oc in range(o):
            g = oc // per_group
            rows = slice(g * n_out, (g + 1) * n_out) if batch_groups > 1 else slice(None)
            for tap in itertools.product(*map(range, k)):
                src = [p * st + t * r - lo for p, st, t, r, (lo, _) in
                       zip(pos, strides, tap, rhs_dil, pads)]
                if any(q < 0 or q >= s for q, s in zip(src, sd)):
                    continue
                for ic in range(i):
                    chan = g * i + ic if groups > 1 else ic
                    out[(slice(None), oc) + pos] += xd[(rows, chan) + tuple(src)] * rhs[(oc, ic) + tap]
    return out


def _nhwc(f):
    """Reference in NHWC / HWIO / NHWC layout from the NCHW one."""
    def ref(lhs, rhs, *a, **kw):
        out = f(np.moveaxis(lhs, -1, 1), np.transpose(rhs, (3, 2, 0, 1)), *a, **kw)
        return np.moveaxis(out, 1, -1)
    return ref


RC = ("float64", "complex128")   # convolutions are bilinear: complex operands too

CASES = [
    Case("conv_1d", lambda x, w: conv_general_dilated(x, w, (1,), "VALID"),
         lambda x, w: ref_conv(x, w, (1,), [(0, 0)]),
         [Arg((2, 2, 5), RC), Arg((3, 2, 3), "same")], prims=("conv_general_dilated",)),
    Case("conv_2d_stride_pad",
         lambda x, w: conv_general_dilated(x, w, (2, 1), [(1, 0), (1, 2)]),
         lambda x, w: ref_conv(x, w, (2, 1), [(1, 0), (1, 2)]),
         [Arg((1, 2, 5, 4), RC), Arg((2, 2, 3, 2), "same")], prims=("conv_general_dilated",)),
    # SAME on the undilated lhs (4, 3) and dilated kernel (2, 3): pads (0, 1), (1, 1)
    Case("conv_2d_dilated_nhwc",
         lambda x, w: conv_general_dilated(x, w, (1, 1), "SAME", (2, 1), (1, 2),
                                           ("NHWC", "HWIO", "NHWC")),
         lambda x, w: _nhwc(ref_conv)(x, w, (1, 1), [(0, 1), (1, 1)], (2, 1), (1, 2)),
         [Arg((1, 4, 3, 2), RC), Arg((2, 2, 2, 2), "same")], prims=("conv_general_dilated",)),
    Case("conv_feature_groups",
         lambda x, w: conv_general_dilated(x, w, (2,), [(1, 1)], feature_group_count=2),
         lambda x, w: ref_conv(x, w, (2,), [(1, 1)], groups=2),
         [Arg((2, 4, 5), RC), Arg((4, 2, 2), "same")], prims=("conv_general_dilated",)),
    Case("conv_batch_groups",
         lambda x, w: conv_general_dilated(x, w, (1,), [(0, 1)], batch_group_count=2),
         lambda x, w: ref_conv(x, w, (1,), [(0, 1)], batch_groups=2),
         [Arg((4, 2, 4), RC), Arg((4, 2, 2), "same")], prims=("conv_general_dilated",)),
    Case("conv_3d", lambda x, w: conv_general_dilated(x, w, (1, 2, 1), "VALID"),
         lambda x, w: ref_conv(x, w, (1, 2, 1), [(0, 0)] * 3),
         [Arg((1, 1, 3, 3, 3), RC), Arg((2, 1, 2, 2, 2), "same")], prims=("conv_general_dilated",),
         grad_order=1),
    # conv_transpose = conv with lhs_dilation=strides; 'VALID', k=2, s=2: pads (1, 1)
    Case("conv_transpose_nhc", lambda x, w: conv_transpose(x, w, (2,), "VALID"),
         lambda x, w: np.moveaxis(ref_conv(np.moveaxis(x, -1, 1), np.transpose(w, (2, 1, 0)),
                                           (1,), [(1, 1)], (2,)), 1, -1),
         [Arg((1, 3, 2), RC), Arg((2, 2, 3), "same")], prims=("conv_general_dilated",)),
    Case("np_convolve_full", lambda a, v: convolve(a, v), lambda a, v: np.convolve(a, v),
         [Arg((5,), RC), Arg((3,), "same")], prims=("conv_general_dilated",)),
    Case("np_convolve_same_swapped", lambda a, v: convolve(a, v, "same"),
         lambda a, v: np.convolve(a, v, "same"), [Arg((2,), RC), Arg((4,), "same")],
         prims=("conv_general_dilated",)),
    Case("np_correlate_valid", lambda a, v: correlate(a, v),
         lambda a, v: np.correlate(a, v), [Arg((5,), RC), Arg((2,), "same")],
         prims=("conv_general_dilated",)),
    Case("np_correlate_same_swapped", lambda a, v: correlate(a, v, "same"),
         lambda a, v: np.correlate(a, v, "same"), [Arg((3,), RC), Arg((4,), "same")],
         prims=("conv_general_dilated",)),
]
