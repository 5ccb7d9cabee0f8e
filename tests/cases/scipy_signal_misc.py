"""Cases for ``fungrad.scipy.signal``, ``fungrad.scipy.fft`` (DCT),
``fungrad.scipy.ndimage``, ``fungrad.scipy.integrate`` and
``fungrad.nn._attention`` (see tests/harness.py).  No primitives are added
(``prims=()``): the cases check that the compositions keep values, staging,
jit, derivatives and vmap.  References are hand-written NumPy (SciPy is not a
test dependency; tests/test_scipy_signal_misc.py compares with SciPy).
"""
import math

import numpy as np

import fungrad.scipy.fft as fsf
import fungrad.scipy.integrate as fsi
import fungrad.scipy.ndimage as fsn
import fungrad.scipy.signal as fss
from fungrad.nn import _attention as fna
from tests.harness import Arg, Case

RC = ("float64", "complex128")


def np_convolve_full(a, b):
    """Full 2-d convolution by shifted accumulation."""
    out = np.zeros((a.shape[0] + b.shape[0] - 1, a.shape[1] + b.shape[1] - 1),
                   dtype=np.result_type(a, b, np.float64))
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            out[i:i + a.shape[0], j:j + a.shape[1]] += b[i, j] * a
    return out


def np_convolve(a, b, mode):
    full = np_convolve_full(a, b)
    if mode == "full":
        return full
    if mode == "same":
        r, c = (b.shape[0] - 1) // 2, (b.shape[1] - 1) // 2
        return full[r:r + a.shape[0], c:c + a.shape[1]]
    lo = [min(m, n) - 1 for m, n in zip(a.shape, b.shape)]
    size = [abs(m - n) + 1 for m, n in zip(a.shape, b.shape)]
    return full[lo[0]:lo[0] + size[0], lo[1]:lo[1] + size[1]]


def np_dct2(x, norm=None):
    """DCT-II along the last axis as a matrix product."""
    n = x.shape[-1]
    k, m = np.arange(n)[:, None], np.arange(n)[None, :]
    mat = 2.0 * np.cos(np.pi * k * (2 * m + 1) / (2 * n))
    if norm == "ortho":
        scale = np.full(n, math.sqrt(1 / (2 * n)))
        scale[0] = math.sqrt(1 / (4 * n))
        mat = mat * scale[:, None]
    return x @ mat.T


def np_detrend_linear(x):
    """Residual of a least-squares line along axis 0."""
    t = np.stack([np.arange(x.shape[0], dtype=float), np.ones(x.shape[0])], axis=1)
    coef = np.linalg.lstsq(t, x, rcond=None)[0]
    return x - t @ coef


def np_map_coordinates_reflect(x, c0, c1):
    """Bilinear interpolation with 'reflect' boundaries, one point at a time."""
    def fix(i, n):
        m = i % (2 * n)
        return 2 * n - 1 - m if m >= n else m
    out = np.zeros(c0.shape)
    for p in range(c0.size):
        f0, f1 = math.floor(c0[p]), math.floor(c1[p])
        w0, w1 = c0[p] - f0, c1[p] - f1
        for d0, v0 in ((0, 1 - w0), (1, w0)):
            for d1, v1 in ((0, 1 - w1), (1, w1)):
                out[p] += v0 * v1 * x[fix(f0 + d0, x.shape[0]), fix(f1 + d1, x.shape[1])]
    return out


def np_attention(q, k, v, bias=None, mask=None, is_causal=False):
    """softmax(QK^T / sqrt(H) + bias, masked) V with grouped key/value heads."""
    n_heads, kv_heads = q.shape[2], k.shape[2]
    k = np.repeat(k, n_heads // kv_heads, axis=2)
    v = np.repeat(v, n_heads // kv_heads, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(q.shape[-1])
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, dtype=bool)
    if mask is not None:
        keep &= mask
    if is_causal:
        keep &= np.tril(np.ones(logits.shape[-2:], dtype=bool))
    logits = np.where(keep, logits, -0.7 * np.finfo(logits.dtype).max)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", p, v)


def _off_integers(rng, shape, dtype):
    """Coordinates in [-2, 5] at least 0.1 away from integers (order-1
    interpolation has kinks there)."""
    return (rng.integers(-2, 5, shape) + rng.uniform(0.1, 0.9, shape)).astype(dtype)


_Q = Arg((1, 3, 4, 2))
_KV = Arg((1, 3, 2, 2))

CASES = [
    Case("signal_convolve_full", lambda a, b: fss.convolve(a, b, "full"),
         lambda a, b: np_convolve(a, b, "full"), [Arg("mat", RC), Arg((2, 3), RC)], prims=()),
    Case("signal_correlate_same_fft", lambda a, b: fss.correlate(a, b, "same", method="fft"),
         lambda a, b: np_convolve(a, np.conj(b[::-1, ::-1]), "same"),   # SciPy conjugates b
         [Arg("mat", RC), Arg((2, 2), RC)], prims=()),
    Case("signal_fftconvolve_valid", lambda a, b: fss.fftconvolve(a, b, "valid"),
         lambda a, b: np_convolve(a, b, "valid"), [Arg((4, 4), RC), Arg("mat", RC)], prims=()),
    Case("signal_convolve2d_fill", lambda a, b: fss.convolve2d(a, b, "same", fillvalue=0.5),
         lambda a, b: np_convolve(np.pad(a, 2, constant_values=0.5), b,
                                  "valid")[1:1 + a.shape[0], 1:1 + a.shape[1]],
         [Arg("mat", RC), Arg((3, 3), RC)], prims=()),
    Case("signal_detrend_linear", lambda x: fss.detrend(x, axis=0), np_detrend_linear,
         [Arg((5, 2))], prims=()),
    Case("signal_dct_ortho", lambda x: fsf.dct(x, norm="ortho"),
         lambda x: np_dct2(x, "ortho"), [Arg("mat")], prims=()),
    Case("signal_idctn_roundtrip", lambda x: fsf.idctn(fsf.dctn(x, type=3), type=3),
         lambda x: x, [Arg("mat")], prims=()),
    Case("map_coordinates_linear_reflect",
         lambda x, c0, c1: fsn.map_coordinates(x, [c0, c1], 1, mode="reflect"),
         np_map_coordinates_reflect,
         [Arg((3, 4)), Arg((5,), make=_off_integers), Arg((5,), make=_off_integers)], prims=()),
    Case("attention_gqa_causal_bias",
         lambda q, k, v, b: fna.dot_product_attention(q, k, v, b, is_causal=True),
         lambda q, k, v, b: np_attention(q, k, v, b, is_causal=True),
         [_Q, _KV, _KV, Arg((1, 4, 3, 3))], prims=()),
    Case("sparse_plus", fna.sparse_plus,
         lambda x: np.where(x <= -1, 0.0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
         [Arg(avoid=(-1.0, 1.0))], prims=()),
    Case("signal_integrate_trapezoid", lambda y, x: fsi.trapezoid(y, x, axis=0),
         lambda y, x: np.trapezoid(y, x, axis=0), [Arg((4, 3)), Arg((4,))], prims=()),
]
