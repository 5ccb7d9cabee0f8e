"""The model workloads of issue 24: a small convolutional network's training step
and a pre-LN transformer block, loss + gradient of every parameter.

Each ``make_*`` returns ``(title, {implementation: thunk})`` like workloads.py;
the first implementation is the hand-written NumPy baseline, written as a
competent NumPy programmer writes it: im2col through ``sliding_window_view``
and one GEMM per convolution (NHWC, so the patch matrix is one reshape), a
mask for the max-pool backward, the projections as 2-D GEMMs over the
flattened (batch, sequence) rows and the attention as ``np.matmul`` stacks.
The fungrad, JAX and autograd versions share one model function written
against a NumPy-like module; PyTorch's is written in torch's spelling.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import fungrad
import fungrad.numpy as fnp
from fungrad import lax as flax

from benchmarks import peers

try:
    import autograd
    import autograd.numpy as anp
except ImportError:  # optional peer
    autograd = anp = None


# ----------------------------------------------------------------------------
# CNN: batch 32, 1x28x28, conv 16 3x3 SAME + ReLU + 2x2 max-pool,
# conv 32 3x3 SAME + ReLU + 2x2 max-pool, dense 10, softmax cross-entropy
# ----------------------------------------------------------------------------

def cnn_setup(seed=0, batch=32):
    rng = np.random.default_rng(seed)
    he = lambda *shape: rng.normal(size=shape) * np.sqrt(2.0 / math.prod(shape[:-1]))
    params = [he(3, 3, 1, 16), np.zeros(16), he(3, 3, 16, 32), np.zeros(32),
              he(7 * 7 * 32, 10), np.zeros(10)]
    x = rng.normal(size=(batch, 28, 28, 1))
    onehot = np.eye(10)[rng.integers(0, 10, size=batch)]
    return params, x, onehot


def _cnn_loss(m, lax, stop_gradient, params, x, onehot):
    """The CNN loss in NHWC / HWIO layout against ``m`` (fnp or jnp) and its lax."""
    w1, b1, w2, b2, w3, b3 = params
    h = x
    for w, b in ((w1, b1), (w2, b2)):
        h = lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = m.maximum(h + b, 0.0)
        h = lax.reduce_window(h, -m.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    logits = m.reshape(h, (h.shape[0], -1)) @ w3 + b3
    z = logits - stop_gradient(m.max(logits, axis=1, keepdims=True))
    logp = z - m.log(m.sum(m.exp(z), axis=1, keepdims=True))
    return -m.sum(onehot * logp) / x.shape[0]


def _im2col(x, k):
    """SAME-padded k x k patches of NHWC ``x`` as a (N*H*W, C*k*k) matrix (one copy)."""
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    win = sliding_window_view(xp, (k, k), axis=(1, 2))       # (N, H, W, C, k, k)
    n, h, w, c = x.shape
    return win.reshape(n * h * w, c * k * k)


def _conv_forward(x, w, b):
    kh, _, c, o = w.shape
    cols = _im2col(x, kh)
    wmat = w.transpose(2, 0, 1, 3).reshape(c * kh * kh, o)
    z = (cols @ wmat).reshape(x.shape[:3] + (o,)) + b
    return z, cols, wmat


def _conv_backward(dz, x, w, cols, wmat, need_input_grad):
    kh, _, c, o = w.shape
    dflat = dz.reshape(-1, o)
    dw = (cols.T @ dflat).reshape(c, kh, kh, o).transpose(1, 2, 0, 3)
    db = dflat.sum(axis=0)
    if not need_input_grad:
        return None, dw, db
    n, h, wd, _ = x.shape
    dcols = (dflat @ wmat.T).reshape(n, h, wd, c, kh, kh)
    p = kh // 2
    dxp = np.zeros((n, h + 2 * p, wd + 2 * p, c))
    for i in range(kh):                                      # col2im: one add per tap
        for j in range(kh):
            dxp[:, i:i + h, j:j + wd, :] += dcols[..., i, j]
    return dxp[:, p:p + h, p:p + wd, :], dw, db


def _pool_forward(a):
    n, h, w, c = a.shape
    r = a.reshape(n, h // 2, 2, w // 2, 2, c)
    pooled = r.max(axis=(2, 4))
    return pooled, r


def _pool_backward(dp, r, pooled):
    mask = r == pooled[:, :, None, :, None, :]
    return (mask * dp[:, :, None, :, None, :]).reshape(r.shape[0], r.shape[1] * 2,
                                                       r.shape[3] * 2, r.shape[5])


def cnn_loss_and_grad_numpy(params, x, onehot):
    w1, b1, w2, b2, w3, b3 = params
    z1, cols1, wm1 = _conv_forward(x, w1, b1)
    a1 = np.maximum(z1, 0.0)
    p1, r1 = _pool_forward(a1)
    z2, cols2, wm2 = _conv_forward(p1, w2, b2)
    a2 = np.maximum(z2, 0.0)
    p2, r2 = _pool_forward(a2)
    flat = p2.reshape(p2.shape[0], -1)
    logits = flat @ w3 + b3
    z = logits - logits.max(axis=1, keepdims=True)
    ez = np.exp(z)
    s = ez.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.sum(onehot * (z - np.log(s))) / n
    dlogits = (ez / s - onehot) / n
    dw3, db3 = flat.T @ dlogits, dlogits.sum(axis=0)
    dp2 = (dlogits @ w3.T).reshape(p2.shape)
    dz2 = _pool_backward(dp2, r2, p2) * (z2 > 0)
    dp1, dw2, db2 = _conv_backward(dz2, p1, w2, cols2, wm2, True)
    dz1 = _pool_backward(dp1, r1, p1) * (z1 > 0)
    _, dw1, db1 = _conv_backward(dz1, x, w1, cols1, wm1, False)
    return loss, [dw1, db1, dw2, db2, dw3, db3]


def _numba_column(impls, fn, params, expected):
    """The compiled backend's column, "fungrad jit (numba)" (workloads.numba_impl)."""
    from benchmarks.workloads import numba_impl     # (workloads imports this module)
    numba_impl(impls, fn, params, expected=expected)


def make_cnn_grad():
    params, x, onehot = cnn_setup()
    loss = lambda p: _cnn_loss(fnp, flax, fungrad.lax.stop_gradient, p, x, onehot)
    expected = cnn_loss_and_grad_numpy(params, x, onehot)
    impls = {
        "numpy (im2col + GEMM)": lambda: cnn_loss_and_grad_numpy(params, x, onehot),
        "fungrad": (lambda g=fungrad.value_and_grad(loss): g(params)),
        "fungrad jit": (lambda g=fungrad.jit(fungrad.value_and_grad(loss)): g(params)),
    }
    impls = {name: peers.verified(name, fn, expected) for name, fn in impls.items()}
    _numba_column(impls, fungrad.value_and_grad(loss), params, expected)
    impls.update(cnn_peer_impls(params, x, onehot, expected))
    return ("CNN step: conv16-pool-conv32-pool-dense10 loss+grad (batch 32, 28x28, NHWC)",
            impls)


def cnn_peer_impls(params, x, onehot, expected) -> dict:
    impls = {}
    if peers.jax_modules():
        jax, jnp = peers.jax_modules()
        pj = [jnp.asarray(p) for p in params]
        loss = lambda p, x, o: _cnn_loss(jnp, jax.lax, jax.lax.stop_gradient, p, x, o)
        vg = jax.jit(jax.value_and_grad(loss))
        impls["jax jit"] = peers.verified("jax jit", peers._jax_thunk(
            jax, vg, pj, jnp.asarray(x), jnp.asarray(onehot)), expected)
    if peers.torch_module():
        impls["torch (eager autograd)"] = peers.verified(
            "torch", _torch_cnn_thunk(peers.torch_module(), params, x, onehot), expected)
    return impls


def _torch_cnn_thunk(torch, params, x, onehot):
    """torch's NCHW convolution; weights converted once, gradients viewed back
    in HWIO so they compare with the baseline (views: no copy in the timing)."""
    F = torch.nn.functional
    w1, b1, w2, b2, w3, b3 = params
    # dense weights reordered from NHWC-flattened rows to NCHW-flattened rows
    w3_nchw = w3.reshape(7, 7, 32, 10).transpose(2, 0, 1, 3).reshape(-1, 10)
    arrays = [w1.transpose(3, 2, 0, 1), b1, w2.transpose(3, 2, 0, 1), b2, w3_nchw, b3]
    flat = peers._torch_tensors(torch, [np.ascontiguousarray(a) for a in arrays],
                                requires_grad=True)
    xt, ot = peers._torch_tensors(torch, [np.ascontiguousarray(x.transpose(0, 3, 1, 2)),
                                          onehot])

    def step():
        t1, c1, t2, c2, t3, c3 = flat
        h = F.max_pool2d(torch.relu(F.conv2d(xt, t1, c1, padding=1)), 2)
        h = F.max_pool2d(torch.relu(F.conv2d(h, t2, c2, padding=1)), 2)
        logp = torch.log_softmax(h.reshape(h.shape[0], -1) @ t3 + c3, dim=1)
        loss = -torch.sum(ot * logp) / xt.shape[0]
        g = torch.autograd.grad(loss, flat)
        g3 = g[4].reshape(32, 7, 7, 10).permute(1, 2, 0, 3).reshape(-1, 10)
        return loss, [g[0].permute(2, 3, 1, 0), g[1], g[2].permute(2, 3, 1, 0), g[3], g3, g[5]]
    return step


# ----------------------------------------------------------------------------
# Pre-LN transformer block: batch 8, sequence 64, width 128, 4 heads, causal
# mask, tanh-GELU MLP 4x; loss 0.5 * mean((block(x) - target)^2)
# ----------------------------------------------------------------------------

HEADS = 4
LN_EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)


def transformer_setup(seed=0, batch=8, seq=64, width=128):
    rng = np.random.default_rng(seed)
    dense = lambda m, n: rng.normal(size=(m, n)) / np.sqrt(m)
    params = [np.ones(width), np.zeros(width), dense(width, 3 * width), dense(width, width),
              np.ones(width), np.zeros(width), dense(width, 4 * width), np.zeros(4 * width),
              dense(4 * width, width), np.zeros(width)]
    x = rng.normal(size=(batch, seq, width))
    target = rng.normal(size=(batch, seq, width))
    return params, x, target


def _layer_norm(m, x, g, b):
    mu = m.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = m.mean(xc * xc, axis=-1, keepdims=True)
    return xc / m.sqrt(var + LN_EPS) * g + b


def _transformer_loss(m, stop_gradient, params, x, target, attend=None):
    """The block against ``m`` (fnp, jnp or autograd.numpy); ``attend(q, k, v)``
    (B, T, H, dh) replaces the written-out causal attention when given."""
    g1, c1, wqkv, wo, g2, c2, w1, b1, w2, b2 = params
    bsz, t, d = x.shape
    dh = d // HEADS
    h = _layer_norm(m, x, g1, c1)
    qkv = m.reshape(h @ wqkv, (bsz, t, 3, HEADS, dh))
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]           # (B, T, H, dh)
    if attend is None:
        q, k, v = (m.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))
        s = (q @ m.swapaxes(k, -1, -2)) / math.sqrt(dh)
        s = m.where(m.tril(m.ones((t, t), dtype=bool)), s, -m.inf)
        e = m.exp(s - stop_gradient(m.max(s, axis=-1, keepdims=True)))
        o = (e / m.sum(e, axis=-1, keepdims=True)) @ v
        o = m.transpose(o, (0, 2, 1, 3))
    else:
        o = attend(q, k, v)
    x1 = x + m.reshape(o, (bsz, t, d)) @ wo
    u = _layer_norm(m, x1, g2, c2) @ w1 + b1
    f = 0.5 * u * (1.0 + m.tanh(GELU_C * (u + 0.044715 * u ** 3)))
    y = x1 + f @ w2 + b2
    r = y - target
    return 0.5 * m.mean(r * r)


def _ln_forward(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    inv = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + LN_EPS)
    xhat = xc * inv
    return xhat * g + b, xhat, inv


def _ln_backward(dout, g, xhat, inv):
    dg = (dout * xhat).sum(axis=0)
    db = dout.sum(axis=0)
    dxhat = dout * g
    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)
          - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)) * inv
    return dx, dg, db


def transformer_loss_and_grad_numpy(params, x, target):
    g1, c1, wqkv, wo, g2, c2, w1, b1, w2, b2 = params
    bsz, t, d = x.shape
    dh = d // HEADS
    rows = x.reshape(bsz * t, d)                                    # 2-D GEMM rows
    h, xhat1, inv1 = _ln_forward(rows, g1, c1)
    qkv = (h @ wqkv).reshape(bsz, t, 3, HEADS, dh).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]                                # (B, H, T, dh)
    scale = 1.0 / math.sqrt(dh)
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    causal = np.tril(np.ones((t, t), dtype=bool))
    s = np.where(causal, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(bsz * t, d)
    x1 = rows + o @ wo
    h2, xhat2, inv2 = _ln_forward(x1, g2, c2)
    u = h2 @ w1 + b1
    # u * u * u, not u ** 3: NumPy's power calls pow() per element (~17 ms
    # here), where JAX and fungrad multiply (lax.integer_pow)
    th = np.tanh(GELU_C * (u + 0.044715 * (u * u * u)))
    f = 0.5 * u * (1.0 + th)
    r = x1 + f @ w2 + b2 - target.reshape(bsz * t, d)
    loss = 0.5 * np.mean(r * r)
    dy = r / r.size
    dw2, db2 = f.T @ dy, dy.sum(axis=0)
    df = dy @ w2.T
    du = df * (0.5 * (1.0 + th) + 0.5 * u * (1.0 - th * th) * GELU_C
               * (1.0 + 3 * 0.044715 * u * u))
    dw1, db1 = h2.T @ du, du.sum(axis=0)
    dx1, dg2, dc2 = _ln_backward(du @ w1.T, g2, xhat2, inv2)
    dx1 += dy
    dwo = o.T @ dx1
    do = (dx1 @ wo.T).reshape(bsz, t, HEADS, dh).transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.transpose(0, 1, 3, 2) @ q
    dqkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(bsz * t, 3 * d)
    dwqkv = h.T @ dqkv
    dx, dg1, dc1 = _ln_backward(dqkv @ wqkv.T, g1, xhat1, inv1)
    dx += dx1
    return loss, [dg1, dc1, dwqkv, dwo, dg2, dc2, dw1, db1, dw2, db2]


def _fungrad_attention(q, k, v):
    return fungrad.nn.dot_product_attention(q, k, v, is_causal=True)


def _transformer_impls(attend_fungrad, attend_of_jax, params, x, target, expected):
    loss = lambda p: _transformer_loss(fnp, fungrad.lax.stop_gradient, p, x, target,
                                       attend_fungrad)
    impls = {
        "fungrad": (lambda g=fungrad.value_and_grad(loss): g(params)),
        "fungrad jit": (lambda g=fungrad.jit(fungrad.value_and_grad(loss)): g(params)),
    }
    impls = {name: peers.verified(name, fn, expected) for name, fn in impls.items()}
    _numba_column(impls, fungrad.value_and_grad(loss), params, expected)
    if autograd and attend_fungrad is None:
        aloss = lambda p: _transformer_loss(anp, lambda a: a, p, x, target)
        impls["autograd"] = peers.verified(
            "autograd", lambda g=autograd.value_and_grad(aloss): g(params), expected)
    if peers.jax_modules():
        jax, jnp = peers.jax_modules()
        attend = attend_of_jax(jax) if attend_of_jax else None
        jloss = lambda p, x, tg: _transformer_loss(jnp, jax.lax.stop_gradient, p, x, tg,
                                                   attend)
        vg = jax.jit(jax.value_and_grad(jloss))
        # jax.nn.dot_product_attention takes its softmax in float32 (even with
        # x64), so that variant agrees with the float64 baseline to ~1e-6 only
        tol = dict(rtol=1e-5, atol=1e-9) if attend else {}
        impls["jax jit"] = peers.verified("jax jit", peers._jax_thunk(
            jax, vg, [jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(target)),
            expected, **tol)
    if peers.torch_module():
        impls["torch (eager autograd)"] = peers.verified(
            "torch", _torch_transformer_thunk(peers.torch_module(), params, x, target,
                                              sdpa=attend_fungrad is not None), expected)
    return impls


def make_transformer_grad():
    params, x, target = transformer_setup()
    expected = transformer_loss_and_grad_numpy(params, x, target)
    impls = {"numpy (2-D GEMMs, matmul stacks)":
             lambda: transformer_loss_and_grad_numpy(params, x, target)}
    impls.update(_transformer_impls(None, None, params, x, target, expected))
    return ("pre-LN transformer block loss+grad (batch 8, seq 64, width 128, 4 heads, "
            "causal, tanh-GELU MLP 4x)", impls)


def make_transformer_sdpa_grad():
    """The same block with the attention as (jax|fungrad).nn.dot_product_attention."""
    params, x, target = transformer_setup()
    expected = transformer_loss_and_grad_numpy(params, x, target)
    impls = {"numpy (2-D GEMMs, matmul stacks)":
             lambda: transformer_loss_and_grad_numpy(params, x, target)}
    jax_attend = lambda jax: (lambda q, k, v: jax.nn.dot_product_attention(
        q, k, v, is_causal=True))
    impls.update(_transformer_impls(_fungrad_attention, jax_attend, params, x, target,
                                    expected))
    return ("pre-LN transformer block loss+grad, attention by nn.dot_product_attention "
            "(batch 8, seq 64, width 128)", impls)


def _torch_transformer_thunk(torch, params, x, target, sdpa=False):
    F = torch.nn.functional
    flat = peers._torch_tensors(torch, params, requires_grad=True)
    xt, tt = peers._torch_tensors(torch, [x, target])
    bsz, t, d = x.shape
    dh = d // HEADS
    causal = torch.tril(torch.ones((t, t), dtype=torch.bool))

    def step():
        g1, c1, wqkv, wo, g2, c2, w1, b1, w2, b2 = flat
        h = F.layer_norm(xt, (d,), g1, c1, eps=LN_EPS)
        qkv = (h @ wqkv).reshape(bsz, t, 3, HEADS, dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if sdpa:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
            o = torch.softmax(s.masked_fill(~causal, -math.inf), dim=-1) @ v
        x1 = xt + o.transpose(1, 2).reshape(bsz, t, d) @ wo
        u = F.layer_norm(x1, (d,), g2, c2, eps=LN_EPS) @ w1 + b1
        y = x1 + F.gelu(u, approximate="tanh") @ w2 + b2
        loss = 0.5 * torch.mean((y - tt) ** 2)
        return loss, torch.autograd.grad(loss, flat)
    return step


WORKLOADS = [make_cnn_grad, make_transformer_grad, make_transformer_sdpa_grad]
