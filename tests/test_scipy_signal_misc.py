"""Tests of fungrad.scipy.signal / fft (DCT) / ndimage / integrate and of
fungrad.nn._attention beyond the generic cases (tests/cases/scipy_signal_misc.py):
values against SciPy for every mode and option, attention against a NumPy
softmax(QK^T/sqrt(d))V, gradients, jit/vmap, and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fungrad
import fungrad.scipy.fft as fsf
import fungrad.scipy.integrate as fsi
import fungrad.scipy.ndimage as fsn
import fungrad.scipy.signal as fss
from fungrad.nn import _attention as fna
from fungrad.test_util import check_grads
from tests.cases.scipy_signal_misc import np_attention

# scipy is a test dependency (the "test" extra): the references below
import scipy.fft as sp_fft  # noqa: E402
import scipy.integrate as sp_integrate  # noqa: E402
import scipy.ndimage as sp_ndimage  # noqa: E402
import scipy.signal as sp_signal  # noqa: E402

RNG = np.random.default_rng(7)
MODES = ("full", "same", "valid")
SHAPE_PAIRS = [((4, 5), (2, 3)), ((3, 3), (2, 2)), ((2, 2), (3, 4)), ((5, 4), (4, 2)),
               ((1, 1), (1, 1))]


def _draw(shape, complex_=False):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


def _same(got, want, rtol=1e-10, atol=1e-10):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --- signal: values ----------------------------------------------------------------------

@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_signal_convolutions_match_scipy(shapes, mode, complex_):
    a, b = _draw(shapes[0], complex_), _draw(shapes[1], complex_)
    for method in ("auto", "direct", "fft"):
        _same(fss.convolve(a, b, mode, method), sp_signal.convolve(a, b, mode, method))
        _same(fss.correlate(a, b, mode, method), sp_signal.correlate(a, b, mode, method))
    _same(fss.fftconvolve(a, b, mode), sp_signal.fftconvolve(a, b, mode))
    for boundary, fill in (("fill", 0), ("fill", 1.5), ("wrap", 0), ("symm", 0)):
        for mine, ref in ((fss.convolve2d, sp_signal.convolve2d),
                          (fss.correlate2d, sp_signal.correlate2d)):
            _same(mine(a, b, mode, boundary, fill), ref(a, b, mode, boundary, fill))


@pytest.mark.parametrize("mode", MODES)
def test_signal_convolve_1d_3d_and_ints(mode):
    a, b = _draw((7,)), _draw((3,))
    _same(fss.convolve(a, b, mode), sp_signal.convolve(a, b, mode))
    a, b = _draw((3, 4, 5)), _draw((2, 3, 2))
    _same(fss.convolve(a, b, mode), sp_signal.convolve(a, b, mode))
    _same(fss.correlate(a, b, mode, method="fft"), sp_signal.correlate(a, b, mode))
    ai, bi = np.arange(6).reshape(2, 3), np.array([[1, 2], [3, 4]])
    out = fss.convolve(ai, bi, mode)
    assert out.dtype == np.float64
    _same(out, sp_signal.convolve(ai, bi, mode))


def test_signal_fftconvolve_axes_broadcast():
    a, b = _draw((3, 6)), _draw((1, 4))
    for mode in MODES:
        _same(fss.fftconvolve(a, b, mode, axes=1), sp_signal.fftconvolve(a, b, mode, axes=1))
    a, b = _draw((3, 6)), _draw((3, 2))
    _same(fss.fftconvolve(a, b, axes=[-1]), sp_signal.fftconvolve(a, b, axes=[-1]))
    assert fss.fftconvolve(a.astype(np.float32), b.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("type_", ["linear", "constant", "l", "c"])
@pytest.mark.parametrize("axis", [0, -1])
def test_signal_detrend_matches_scipy(type_, axis):
    x = _draw((6, 11))
    for bp in (0, [3], [2, 5]):
        _same(fss.detrend(x, axis=axis, type=type_, bp=bp),
              sp_signal.detrend(x, axis=axis, type=type_, bp=bp))
    _same(fss.detrend(np.arange(5), type=type_), sp_signal.detrend(np.arange(5.0), type=type_))


# --- signal: derivatives and transformations ----------------------------------------------

def test_signal_gradients():
    a, b = _draw((4, 3)), _draw((2, 2))
    for mode in MODES:
        check_grads(lambda x, y: fss.convolve(x, y, mode), (a, b), order=2)
        check_grads(lambda x, y: fss.fftconvolve(x, y, mode), (a, b), order=1)
        check_grads(lambda x, y: fss.correlate2d(x, y, mode, "wrap"), (a, b), order=1)
    check_grads(lambda x: fss.detrend(x, bp=[2]), (a,), order=2)


def test_signal_jit_and_vmap():
    a, b = _draw((3, 6, 5)), _draw((3, 2))
    f = lambda x: fss.correlate2d(x, b, "same", "symm")   # noqa: E731
    want = np.stack([sp_signal.correlate2d(x, b, "same", "symm") for x in a])
    _same(fungrad.vmap(f)(a), want)
    _same(fungrad.jit(fungrad.vmap(f))(a), want)
    g = fungrad.jit(lambda x, y: fss.convolve(x, y, "valid", method="fft"))
    _same(g(a[0], b), sp_signal.convolve(a[0], b, "valid"))
    _same(fungrad.vmap(fss.detrend)(a), sp_signal.detrend(a, axis=-1))


def test_signal_bad_input():
    a = np.ones((3, 3))
    with pytest.raises(ValueError, match="mode must be one of"):
        fss.convolve(a, a, "middle")
    with pytest.raises(ValueError, match="method must be one of"):
        fss.convolve(a, a, method="winograd")
    with pytest.raises(ValueError, match="same number of dimensions"):
        fss.convolve(a, np.ones(3))
    with pytest.raises(ValueError, match="zero-size"):
        fss.correlate(a, np.ones((0, 2)))
    with pytest.raises(ValueError, match="at least as large"):
        fss.convolve(np.ones((2, 4)), np.ones((4, 2)), "valid")
    with pytest.raises(ValueError, match="2-dimensional"):
        fss.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="boundary must be"):
        fss.convolve2d(a, a, boundary="reflect")
    with pytest.raises(ValueError, match="type must be"):
        fss.detrend(a, type="quadratic")
    with pytest.raises(ValueError, match="breakpoints"):
        fss.detrend(a, bp=[7])


# --- fft: DCT --------------------------------------------------------------------------------

@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("type_", [2, 3])
def test_dct_matches_scipy(type_, norm):
    for shape in [(1,), (5,), (6,), (3, 4)]:
        for x in (_draw(shape), _draw(shape, True)):
            for n in (None, 3, 8):
                for axis in (-1, 0):
                    kw = dict(type=type_, n=n, axis=axis, norm=norm)
                    _same(fsf.dct(x, **kw), sp_fft.dct(x, **kw))
                    _same(fsf.idct(x, **kw), sp_fft.idct(x, **kw))
    x = _draw((2, 3, 5))
    for s, axes in ((None, None), (None, (0, 2)), ((4, 2), (1, 2)), ((3,), None)):
        kw = dict(type=type_, s=s, axes=axes, norm=norm)
        _same(fsf.dctn(x, **kw), sp_fft.dctn(x, **kw))
        _same(fsf.idctn(x, **kw), sp_fft.idctn(x, **kw))


def test_dct_dtypes_grads_transforms():
    assert fsf.dct(np.ones(4, np.float32), norm="ortho").dtype == np.float32
    assert fsf.dct(np.arange(4)).dtype == np.float64
    x = _draw((3, 4))
    check_grads(lambda v: fsf.dct(v, norm="ortho"), (x,), order=2)
    check_grads(lambda v: fsf.idctn(v, type=3), (x,), order=1)
    _same(fungrad.jit(fsf.dctn)(x), sp_fft.dctn(x))
    _same(fungrad.vmap(lambda v: fsf.idct(v, axis=0), in_axes=1, out_axes=1)(x),
          sp_fft.idct(x, axis=0))


def test_dct_bad_input():
    with pytest.raises(NotImplementedError, match="types 2 and 3"):
        fsf.dct(np.ones(4), type=1)
    with pytest.raises(ValueError, match="norm must be"):
        fsf.idct(np.ones(4), norm="unitary")
    with pytest.raises(ValueError, match="out of bounds"):
        fsf.dct(np.ones(4), axis=2)
    with pytest.raises(ValueError, match="same length"):
        fsf.dctn(np.ones((2, 2)), s=(2,), axes=(0, 1))


# --- ndimage ----------------------------------------------------------------------------------

_MODE_PAIRS = [("constant", "grid-constant"), ("nearest", "nearest"), ("mirror", "mirror"),
               ("reflect", "reflect"), ("wrap", "grid-wrap")]


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode,sp_mode", _MODE_PAIRS)
def test_map_coordinates_matches_scipy(order, mode, sp_mode):
    for shape in [(5,), (4, 6), (1, 3), (3, 2, 4)]:
        x = _draw(shape)
        coords = [RNG.integers(-4, s + 3, 9) + RNG.uniform(0.1, 0.4, 9)
                  * RNG.choice([-1, 1], 9) for s in shape]
        _same(fsn.map_coordinates(x, coords, order, mode=mode, cval=1.5),
              sp_ndimage.map_coordinates(x, coords, order=order, mode=sp_mode, cval=1.5))
    xi = np.arange(12).reshape(3, 4)
    pts = [[0.5, 1.2, 2.0], [2.5, 0.1, 3.3]]
    out = fsn.map_coordinates(xi, pts, 1, mode=mode)
    assert out.dtype == xi.dtype
    np.testing.assert_array_equal(out, sp_ndimage.map_coordinates(xi, pts, order=1,
                                                                  mode=sp_mode))


def test_map_coordinates_grads_and_transforms():
    x = _draw((4, 5))
    c = [np.array([0.3, 1.6, 2.2, -0.7]), np.array([4.4, 0.5, 2.3, 1.1])]
    check_grads(lambda v, c0, c1: fsn.map_coordinates(v, [c0, c1], 1), (x, *c), order=2)
    check_grads(lambda v: fsn.map_coordinates(v, c, 0, mode="wrap"), (x,), order=1)
    f = lambda v: fsn.map_coordinates(v, c, 1, mode="mirror")   # noqa: E731
    batch = _draw((3, 4, 5))
    want = np.stack([sp_ndimage.map_coordinates(v, c, order=1, mode="mirror") for v in batch])
    _same(fungrad.vmap(f)(batch), want)
    _same(fungrad.jit(f)(batch[0]), want[0])


def test_map_coordinates_bad_input():
    x = np.ones((3, 3))
    with pytest.raises(NotImplementedError, match="order must be 0"):
        fsn.map_coordinates(x, [[0.5], [0.5]], 3)
    with pytest.raises(NotImplementedError, match="mode must be one of"):
        fsn.map_coordinates(x, [[0.5], [0.5]], 1, mode="grid-mirror")
    with pytest.raises(ValueError, match="input.ndim=2"):
        fsn.map_coordinates(x, [[0.5]], 1)


# --- integrate ----------------------------------------------------------------------------------

def test_trapezoid_matches_scipy():
    y, x = _draw((4, 6)), np.sort(_draw(6))
    _same(fsi.trapezoid(y), sp_integrate.trapezoid(y))
    _same(fsi.trapezoid(y, x), sp_integrate.trapezoid(y, x))
    _same(fsi.trapezoid(y, dx=0.3, axis=0), sp_integrate.trapezoid(y, dx=0.3, axis=0))
    check_grads(lambda v, t: fsi.trapezoid(v, t), (y, x), order=2)


# --- attention ---------------------------------------------------------------------------------

def _qkv(B=2, T=4, S=5, N=4, K=2, H=3):
    return _draw((B, T, N, H)), _draw((B, S, K, H)), _draw((B, S, K, H))


def test_attention_plain_and_gqa_match_numpy():
    for n_kv in (4, 2, 1):
        q, k, v = _qkv(K=n_kv)
        _same(fna.dot_product_attention(q, k, v), np_attention(q, k, v))
    q, k, v = _qkv()
    # a hand-written per-head loop: softmax(q k^T / sqrt(d)) v, head n reads kv head n // 2
    want = np.zeros_like(q)
    for b in range(2):
        for n in range(4):
            s = q[b, :, n] @ k[b, :, n // 2].T / math.sqrt(3)
            p = np.exp(s - s.max(-1, keepdims=True))
            want[b, :, n] = (p / p.sum(-1, keepdims=True)) @ v[b, :, n // 2]
    _same(fna.dot_product_attention(q, k, v), want)


def test_attention_bias_mask_causal_scale():
    q, k, v = _qkv(T=5)
    bias = _draw((1, 4, 5, 5))
    mask = RNG.random((2, 1, 5, 5)) < 0.7
    mask[..., 0] = True
    _same(fna.dot_product_attention(q, k, v, bias, mask, is_causal=True),
          np_attention(q, k, v, bias, mask, is_causal=True))
    _same(fna.dot_product_attention(q, k, v, scale=0.2),
          np_attention(q * (0.2 * math.sqrt(3)), k, v))
    _same(fna.dot_product_attention(q, k, v, bias[0, 0]), np_attention(q, k, v, bias[0, 0]))
    # a fully masked query row averages all values (JAX's large finite negative)
    none = np.zeros((5, 5), bool)
    _same(fna.dot_product_attention(q, k, v, mask=none),
          np.broadcast_to(np.repeat(v, 2, axis=2).mean(1, keepdims=True), q.shape))


def test_attention_seq_lengths_window_unbatched():
    q, k, v = _qkv(T=5, S=5)
    ql, kl = np.array([3, 5], np.int32), np.array([2, 4], np.int32)
    pad = (np.arange(5)[None, :, None] < ql[:, None, None]) & \
        (np.arange(5)[None, None, :] < kl[:, None, None])
    want = np_attention(q, k, v, mask=pad[:, None])
    want = want * (np.arange(5)[None, :] < ql[:, None])[:, :, None, None]
    _same(fna.dot_product_attention(q, k, v, query_seq_lengths=ql,
                                    key_value_seq_lengths=kl), want)
    _same(fna.dot_product_attention(q, k, v, key_value_seq_lengths=kl),
          np_attention(q, k, v, mask=(np.arange(5)[None, :] < kl[:, None])[:, None, None]))
    t, s = np.arange(5)[:, None], np.arange(5)[None, :]
    for window, (left, right) in ((1, (1, 1)), ((2, 0), (2, 0))):
        band = (s >= t - left) & (s <= t + right)
        _same(fna.dot_product_attention(q, k, v, local_window_size=window),
              np_attention(q, k, v, mask=band))
    _same(fna.dot_product_attention(q[0], k[0], v[0], is_causal=True, implementation="xla"),
          np_attention(q[:1], k[:1], v[:1], is_causal=True)[0])


def test_attention_grads_jit_vmap():
    q, k, v = _qkv(B=1, T=3, S=3, N=2, K=1, H=2)
    bias = _draw((1, 2, 3, 3))
    check_grads(lambda a, b, c, d: fna.dot_product_attention(a, b, c, d, is_causal=True),
                (q, k, v, bias), order=2)
    f = fungrad.jit(lambda a, b, c: fna.dot_product_attention(a, b, c, is_causal=True))
    _same(f(q, k, v), np_attention(q, k, v, is_causal=True))
    qs, ks, vs = _qkv(B=3)
    got = fungrad.vmap(fna.dot_product_attention)(qs, ks, vs)   # unbatched per example
    _same(got, np_attention(qs, ks, vs))
    lengths = np.array([2, 5, 3], np.int32)
    g = lambda a, b, c, n: fna.dot_product_attention(   # noqa: E731
        a[None], b[None], c[None], key_value_seq_lengths=n[None])[0]
    keep = (np.arange(5)[None, :] < lengths[:, None])[:, None, None]
    want = np_attention(qs, ks, vs, mask=keep)
    _same(fungrad.vmap(g)(qs, ks, vs, lengths), want)


def test_attention_bad_input():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="multiple of the number of key/value heads"):
        fna.dot_product_attention(q, k[:, :, :1].repeat(3, axis=2), v[:, :, :1].repeat(3, 2))
    with pytest.raises(ValueError, match="value must have key's shape"):
        fna.dot_product_attention(q, k, v[:, :4])
    with pytest.raises(ValueError, match="query must have shape"):
        fna.dot_product_attention(q[..., :2], k, v)
    with pytest.raises(TypeError, match="mask must be boolean"):
        fna.dot_product_attention(q, k, v, mask=np.ones((4, 5)))
    with pytest.raises(ValueError, match="does not broadcast"):
        fna.dot_product_attention(q, k, v, bias=np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="integer array of shape"):
        fna.dot_product_attention(q, k, v, query_seq_lengths=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="unsupported implementation"):
        fna.dot_product_attention(q, k, v, implementation="flash")
    with pytest.raises(ValueError, match="must have 3 or 4 dimensions"):
        fna.dot_product_attention(q[0, 0], k[0, 0], v[0, 0])


# --- sparse_plus / sparse_sigmoid ------------------------------------------------------------------

def test_sparse_plus_and_sparse_sigmoid():
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.4, 1.0, 2.5])
    _same(fna.sparse_plus(x), np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)))
    _same(fna.sparse_sigmoid(x), np.clip((x + 1) / 2, 0, 1))
    smooth = np.array([-2.0, -0.5, 0.3, 1.5])
    _same(fungrad.vmap(fungrad.grad(fna.sparse_plus))(smooth), fna.sparse_sigmoid(smooth))
    check_grads(fna.sparse_plus, (smooth,), order=2)
    check_grads(fna.sparse_sigmoid, (smooth,), order=1)
    assert fna.sparse_plus(np.arange(3)).dtype == np.float64
    _same(fungrad.jit(fna.sparse_sigmoid)(x), fna.sparse_sigmoid(x))
