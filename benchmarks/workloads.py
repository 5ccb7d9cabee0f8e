"""The workloads of the issues, each as implementations of the same computation.

Every ``make_*`` returns ``(title, {implementation: thunk})``; the first
implementation is the hand-written NumPy baseline that ratios refer to.
fungrad's implementations are called with fungrad Arrays, as users call them
(parameters made with ``jnp.asarray``/``jnp.zeros`` and results of earlier
steps are Arrays); the NumPy baseline and the peers get their own arrays.  A
row marked "(ndarray input)" shows the same call with NumPy arrays.
Implementations whose library is not installed are left out: HIPS autograd
(``bench`` extra) and the JAX / PyTorch peers of peers.py (see its docstring;
PyTorch is installed separately with exactly ``pip install torch==2.13.0``).
"""
from __future__ import annotations

import importlib.util

import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad.examples import ARM_FRACTIONS, ARM_LENGTHS, robot_arm

from benchmarks import model_workloads, peers

try:
    import autograd
    import autograd.numpy as anp
except ImportError:  # optional peer
    autograd = anp = None


def as_fungrad(tree):
    """``tree`` with its NumPy arrays as fungrad Arrays (what users pass)."""
    return fungrad.tree_util.tree_map(
        lambda v: fnp.asarray(v) if isinstance(v, np.ndarray) else v, tree)


# the compiled backend's column (jit(..., backend="numba")) when numba is installed
NUMBA = importlib.util.find_spec("numba") is not None
NUMBA_COLUMN = "fungrad jit (numba)"


def numba_impl(impls: dict, fn, *args, expected=None):
    """Add the compiled backend's column: ``jit(fn, backend="numba")(*args)``,
    checked against ``expected`` (default: the baseline's result)."""
    if not NUMBA:
        return
    jitted = fungrad.jit(fn, backend="numba")
    thunk = lambda: jitted(*args)
    if expected is None:
        expected = next(iter(impls.values()))()
    impls[NUMBA_COLUMN] = peers.verified(NUMBA_COLUMN, thunk, expected)


# ----------------------------------------------------------------------------
# Dispatch overhead of eager fungrad.numpy on tiny arrays
# ----------------------------------------------------------------------------

def make_dispatch_sin():
    x = np.linspace(0.0, 1.0, 10)
    xf = as_fungrad(x)
    impls = {"numpy": lambda: np.sin(x), "fungrad": lambda: fnp.sin(xf),
             "fungrad (ndarray input)": lambda: fnp.sin(x)}
    impls.update(peers.dispatch_sin_impls(x, np.sin(x)))
    return "fnp.sin on a length-10 array", impls


def make_dispatch_add():
    impls = {"numpy": lambda: np.add(1.0, 2.0), "fungrad": lambda: fnp.add(1.0, 2.0)}
    impls.update(peers.dispatch_add_impls(np.add(1.0, 2.0)))
    return "fnp.add of two Python floats", impls


# ----------------------------------------------------------------------------
# The seed scalar function
# ----------------------------------------------------------------------------

def _seed_value_and_grad_numpy(x):
    s = x * x
    e = np.exp(s)
    u = s + e
    r = np.sqrt(u)
    val = r + np.cos(u)
    du = 0.5 / r - np.sin(u)
    return val, du * (2 * x + 2 * x * e)


def make_seed_grad():
    def seed(m):
        def f(x):
            u = x * x + m.exp(x * x)
            return m.sqrt(u) + m.cos(u)
        return f
    impls = {"numpy": lambda: _seed_value_and_grad_numpy(0.7),
             "fungrad": (lambda g=fungrad.value_and_grad(seed(fnp)): g(0.7)),
             "fungrad jit": (lambda g=fungrad.jit(fungrad.value_and_grad(seed(fnp))): g(0.7))}
    numba_impl(impls, fungrad.value_and_grad(seed(fnp)), 0.7)
    if autograd:
        impls["autograd"] = (lambda g=autograd.value_and_grad(seed(anp)): g(0.7))
    impls.update(peers.value_and_grad_impls(seed, 0.7, _seed_value_and_grad_numpy(0.7)))
    return "value and grad of the seed scalar function", impls


# ----------------------------------------------------------------------------
# A 200-op elementwise chain on a length-10 vector
# ----------------------------------------------------------------------------

def _chain(m, x):
    for i in range(50):
        x = m.sin(x) * 0.9 + x * 0.1        # 4 ops per step: sin, mul, mul, add
    return m.sum(x)


def _chain_numpy(x):
    saved = []
    for i in range(50):
        saved.append(x)
        x = np.sin(x) * 0.9 + x * 0.1
    g = np.ones_like(x)
    for xi in reversed(saved):
        g = g * (np.cos(xi) * 0.9 + 0.1)
    return x.sum(), g


def make_chain_grad():
    x = np.linspace(-1.0, 1.0, 10)
    xf = as_fungrad(x)
    jitted = fungrad.jit(fungrad.value_and_grad(lambda v: _chain(fnp, v)))
    impls = {"numpy": lambda: _chain_numpy(x),
             "fungrad": (lambda g=fungrad.value_and_grad(lambda v: _chain(fnp, v)): g(xf)),
             "fungrad jit": lambda: jitted(xf),
             "fungrad jit (ndarray input)": lambda: jitted(x)}
    numba_impl(impls, fungrad.value_and_grad(lambda v: _chain(fnp, v)), xf)
    if autograd:
        impls["autograd"] = (lambda g=autograd.value_and_grad(lambda v: _chain(anp, v)): g(x))
    impls.update(peers.value_and_grad_impls(lambda m: (lambda v: _chain(m, v)), x,
                                            _chain_numpy(x)))
    return "value and grad of a 200-op elementwise chain (length 10)", impls


# ----------------------------------------------------------------------------
# MLP 784-512-512-10, tanh, softmax cross-entropy, batch 128
# ----------------------------------------------------------------------------

def _mlp_params(rng, sizes=(784, 512, 512, 10)):
    return [(rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def _mlp_loss(m, params, x, onehot):
    h = x
    for w, b in params[:-1]:
        h = m.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    top = m.max(logits, axis=1, keepdims=True)
    if m is fnp:
        top = fungrad.stop_gradient(top)
    z = logits - top
    logp = z - m.log(m.sum(m.exp(z), axis=1, keepdims=True))
    return -m.sum(onehot * logp) / x.shape[0]


def _mlp_loss_and_grad_numpy(params, x, onehot):
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w, b = params[-1]
    logits = hs[-1] @ w + b
    z = logits - logits.max(axis=1, keepdims=True)
    ez = np.exp(z)
    s = ez.sum(axis=1, keepdims=True)
    logp = z - np.log(s)
    n = x.shape[0]
    loss = -np.sum(onehot * logp) / n
    delta = (ez / s - onehot) / n
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((hs[i].T @ delta, delta.sum(axis=0)))
        if i:
            delta = (delta @ w.T) * (1 - hs[i] ** 2)
    return loss, grads[::-1]


def mlp_setup(seed=0, batch=128):
    rng = np.random.default_rng(seed)
    params = _mlp_params(rng)
    x = rng.normal(size=(batch, 784))
    onehot = np.eye(10)[rng.integers(0, 10, size=batch)]
    return params, x, onehot


def make_mlp_grad():
    params, x, onehot = mlp_setup()
    pf, xf, of = as_fungrad((params, x, onehot))
    impls = {
        "numpy": lambda: _mlp_loss_and_grad_numpy(params, x, onehot),
        "fungrad": (lambda g=fungrad.value_and_grad(lambda p: _mlp_loss(fnp, p, xf, of)):
                    g(pf)),
        "fungrad jit": (lambda g=fungrad.jit(fungrad.value_and_grad(
            lambda p: _mlp_loss(fnp, p, xf, of))): g(pf)),
    }
    if autograd:
        impls["autograd"] = (lambda g=autograd.value_and_grad(
            lambda p: _mlp_loss(anp, p, x, onehot)): g(params))
    impls.update(peers.mlp_grad_impls(params, x, onehot,
                                      _mlp_loss_and_grad_numpy(params, x, onehot)))
    return "MLP 784-512-512-10 loss+grad (tanh, softmax CE, batch 128)", impls


def make_mlp_eval_vs_grad():
    params, x, onehot = as_fungrad(mlp_setup())
    loss = lambda p: _mlp_loss(fnp, p, x, onehot)
    return "MLP: fungrad grad time / eval time (Baur-Strassen bound 5)", {
        "fungrad eval": lambda: loss(params),
        "fungrad value_and_grad": (lambda g=fungrad.value_and_grad(loss): g(params)),
    }


# ----------------------------------------------------------------------------
# Per-example gradients: MLP 100 -> 64 (tanh) -> 1, logistic loss, batch 256
# ----------------------------------------------------------------------------

def _pe_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = fnp.tanh(x @ w1 + b1)
    logit = h @ w2 + b2
    return fnp.log1p(fnp.exp(-y * logit))


def _pe_numpy(params, xs, ys):
    w1, b1, w2, b2 = params
    h = np.tanh(xs @ w1 + b1)
    logit = h @ w2 + b2
    dlogit = -ys / (1 + np.exp(ys * logit))
    dh = dlogit[:, None] * w2[None, :]
    dz = dh * (1 - h ** 2)
    return (xs[:, :, None] * dz[:, None, :], dz, dlogit[:, None] * h, dlogit)


def pe_setup(seed=0, batch=256):
    rng = np.random.default_rng(seed)
    params = (rng.normal(size=(100, 64)) / 10, np.zeros(64), rng.normal(size=64) / 8, 0.0)
    xs = rng.normal(size=(batch, 100))
    ys = np.where(rng.random(batch) < 0.5, -1.0, 1.0)
    return params, xs, ys


def make_per_example():
    params, xs, ys = pe_setup()
    pf, xf, yf = as_fungrad((params, xs, ys))
    per_ex = fungrad.vmap(fungrad.grad(_pe_loss), in_axes=(None, 0, 0))
    loop_grad = fungrad.grad(_pe_loss)
    impls = {
        "numpy": lambda: _pe_numpy(params, xs, ys),
        "fungrad vmap(grad)": lambda: per_ex(pf, xf, yf),
        "fungrad jit(vmap(grad))": (lambda j=fungrad.jit(per_ex): j(pf, xf, yf)),
        "fungrad loop of grad": lambda: [loop_grad(pf, x, y) for x, y in zip(xf, yf)],
    }
    impls.update(peers.per_example_impls(params, xs, ys, _pe_numpy(params, xs, ys)))
    return "per-example grads, MLP 100-64-1, batch 256", impls


# ----------------------------------------------------------------------------
# Jacobian of the 3-joint robot arm (150 x 3)
# ----------------------------------------------------------------------------

def arm_jacobian_numpy(theta):
    a = np.cumsum(theta)
    dx = -ARM_LENGTHS * np.sin(a)            # d(link_i x)/d(angle_i)
    dy = ARM_LENGTHS * np.cos(a)
    jac = np.zeros((3, 25, 2, 3))
    for i in range(3):                    # point block i
        for j in range(3):                # joint j moves links >= j
            bx = sum(dx[l] for l in range(j, i))
            by = sum(dy[l] for l in range(j, i))
            if j <= i:
                jac[i, :, 0, j] = bx + ARM_FRACTIONS * dx[i]
                jac[i, :, 1, j] = by + ARM_FRACTIONS * dy[i]
    return jac.reshape(150, 3)


def make_arm_jacobian():
    theta = np.array([0.3, -0.5, 1.1])
    tf = as_fungrad(theta)
    f = robot_arm
    impls = {
        "numpy (analytic)": lambda: arm_jacobian_numpy(theta),
        "fungrad jacfwd": (lambda j=fungrad.jacfwd(f): j(tf)),
        "fungrad jacrev": (lambda j=fungrad.jacrev(f): j(tf)),
        "fungrad jit(jacfwd)": (lambda j=fungrad.jit(fungrad.jacfwd(f)): j(tf)),
        "fungrad jit(jacrev)": (lambda j=fungrad.jit(fungrad.jacrev(f)): j(tf)),
    }
    if NUMBA:
        for name, jac in (("jacfwd", fungrad.jacfwd(f)), ("jacrev", fungrad.jacrev(f))):
            jitted = fungrad.jit(jac, backend="numba")
            impls[f"fungrad jit({name}) (numba)"] = peers.verified(
                name, lambda j=jitted: j(theta), arm_jacobian_numpy(theta))
    impls.update(peers.arm_jacobian_impls(robot_arm, ARM_LENGTHS, ARM_FRACTIONS, theta,
                                          arm_jacobian_numpy(theta)))
    return "Jacobian of the 3-joint arm (150 x 3)", impls


def make_hvp():
    """Hessian-vector product of the MLP loss w.r.t. the last layer (fwd-over-rev)."""
    params, x, onehot = mlp_setup()
    w3 = params[-1][0]
    v = np.random.default_rng(1).normal(size=w3.shape)
    pf, xf, of, w3f, vf = as_fungrad((params, x, onehot, w3, v))
    loss = lambda w: _mlp_loss(fnp, pf[:-1] + [(w, pf[-1][1])], xf, of)
    hvp = lambda w, v: fungrad.jvp(fungrad.grad(loss), (w,), (v,))[1]

    def hvp_numpy(w, v):
        h = x
        for wi, bi in params[:-1]:
            h = np.tanh(h @ wi + bi)
        logits = h @ w + params[-1][1]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        dlogits = h @ v
        dp = p * (dlogits - np.sum(p * dlogits, axis=1, keepdims=True))
        return h.T @ dp / x.shape[0]
    impls = {
        "numpy (hand-written HVP)": lambda: hvp_numpy(w3, v),
        "fungrad eval of loss": lambda: loss(w3f),
        "fungrad hvp": lambda: hvp(w3f, vf),
        "fungrad jit(hvp)": (lambda j=fungrad.jit(hvp): j(w3f, vf)),
    }
    impls.update(peers.mlp_hvp_impls(params, x, onehot, v, hvp_numpy(w3, v)))
    return "HVP of the MLP loss w.r.t. W3 (forward-over-reverse)", impls


def _rnn_setup(seed=0, hidden=64, inputs=32, batch=32, steps=100):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)
    U = rng.normal(size=(inputs, hidden)) / np.sqrt(inputs)
    xs = rng.normal(size=(steps, batch, inputs))
    return W, U, xs


def _rnn_loss(W, U, xs):
    from fungrad import lax
    h0 = fnp.zeros((xs.shape[1], W.shape[0]))
    h, _ = lax.scan(lambda h, x: (fnp.tanh(h @ W + x @ U), None), h0, xs)
    return fnp.sum(h ** 2)


def _rnn_grad_numpy(W, U, xs):
    """Hand-written backpropagation through time."""
    hs = [np.zeros((xs.shape[1], W.shape[0]))]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ W + x @ U))
    dh = 2 * hs[-1]
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    for t in range(len(xs) - 1, -1, -1):
        dz = dh * (1 - hs[t + 1] ** 2)
        dW += hs[t].T @ dz
        dU += xs[t].T @ dz
        dh = dz @ W.T
    return dW, dU


def make_rnn():
    W, U, xs = _rnn_setup()
    Wf, Uf, xsf = as_fungrad((W, U, xs))
    g = fungrad.jit(fungrad.grad(_rnn_loss, argnums=(0, 1)))
    impls = {
        "numpy (hand-written BPTT)": lambda: _rnn_grad_numpy(W, U, xs),
        "fungrad grad (eager)": (lambda e=fungrad.grad(_rnn_loss, argnums=(0, 1)):
                                 e(Wf, Uf, xsf)),
        "fungrad jit(grad)": lambda: g(Wf, Uf, xsf),
    }
    numba_impl(impls, fungrad.grad(_rnn_loss, argnums=(0, 1)), W, U, xs)
    impls.update(peers.rnn_grad_impls(W, U, xs, _rnn_grad_numpy(W, U, xs)))
    return "RNN (hidden 64, input 32, batch 32, 100 steps): grad via lax.scan", impls


def _rnn_loop_loss(W, U, xs):
    h = fnp.zeros((xs.shape[1], W.shape[0]))
    for x in xs:                                   # a Python loop: 100 steps traced
        h = fnp.tanh(h @ W + x @ U)
    return fnp.sum(h ** 2)


def make_rnn_loop():
    W, U, xs = _rnn_setup()
    Wf, Uf, xsf = as_fungrad((W, U, xs))
    g = fungrad.jit(fungrad.grad(_rnn_loop_loss, argnums=(0, 1)))
    impls = {
        "numpy (hand-written BPTT)": lambda: _rnn_grad_numpy(W, U, xs),
        "fungrad grad (eager)": (lambda e=fungrad.grad(_rnn_loop_loss, argnums=(0, 1)):
                                 e(Wf, Uf, xsf)),
        "fungrad jit(grad)": lambda: g(Wf, Uf, xsf),
    }
    numba_impl(impls, fungrad.grad(_rnn_loop_loss, argnums=(0, 1)), W, U, xs)
    if autograd:
        impls["autograd"] = (lambda e=autograd.grad(_rnn_loop_loss_of(anp), argnum=(0, 1)):
                             e(W, U, xs))
    impls.update(peers.rnn_grad_impls(W, U, xs, _rnn_grad_numpy(W, U, xs)))
    return "RNN (hidden 64, input 32, batch 32, 100 steps): grad of a Python loop", impls


def _rnn_loop_loss_of(m):
    def loss(W, U, xs):
        h = m.zeros((xs.shape[1], W.shape[0]))
        for x in xs:
            h = m.tanh(m.dot(h, W) + m.dot(x, U))
        return m.sum(h ** 2)
    return loss


def _hvp_rr_setup(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=n), rng.normal(size=n)


def _hvp_rr_numpy(A, x, v):
    """H v of f(x) = sum(tanh(A x)): A^T (-2 t (1 - t^2) * (A v)), t = tanh(A x)."""
    t = np.tanh(A @ x)
    return A.T @ (-2 * t * (1 - t * t) * (A @ v))


def make_hvp_reverse_over_reverse():
    A, x, v = _hvp_rr_setup()
    Af, xf, vf = as_fungrad((A, x, v))

    def hvp_of(m, grad, A=A, v=v):
        f = lambda y: m.sum(m.tanh(m.dot(A, y)))
        return grad(lambda y: m.dot(grad(f)(y), v))
    impls = {
        "numpy (hand-written HVP)": lambda: _hvp_rr_numpy(A, x, v),
        "fungrad grad(grad) (eager)": (lambda h=hvp_of(fnp, fungrad.grad, Af, vf): h(xf)),
        "fungrad jit(grad(grad))": (lambda h=fungrad.jit(hvp_of(fnp, fungrad.grad, Af, vf)):
                                    h(xf)),
    }
    if autograd:
        impls["autograd"] = (lambda h=hvp_of(anp, autograd.grad): h(x))
    impls.update(peers.hvp_rr_impls(A, x, v, _hvp_rr_numpy(A, x, v)))
    return "HVP of sum(tanh(A x)), A 1000 x 1000 (reverse-over-reverse)", impls


def _deep_setup(seed=0, layers=100, width=256, batch=64):
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(width, width)) / np.sqrt(width) for _ in range(layers)]
    return Ws, rng.normal(size=(batch, width))


def _deep_loss(x, Ws, layer):
    h = x
    for W in Ws:
        h = layer(W, h)
    return fnp.sum(h ** 2)


def _deep_segmented_loss(x, Ws, segment, size=10):
    h = x
    for i in range(0, len(Ws), size):
        h = segment(Ws[i:i + size], h)
    return fnp.sum(h ** 2)


def _tanh_layer(W, h):
    return fnp.tanh(h @ W)


def _tanh_segment(Ws, h):
    for W in Ws:
        h = fnp.tanh(h @ W)
    return h


def checkpoint_variants():
    """grad w.r.t. the input of a 100-layer tanh MLP (width 256, batch 64): without
    checkpoint, checkpoint per layer, checkpoint per 10-layer segment (eager and jit)."""
    Ws, x = as_fungrad(_deep_setup())
    per_layer, per_segment = fungrad.checkpoint(_tanh_layer), fungrad.checkpoint(_tanh_segment)
    eager = {"no checkpoint": lambda: fungrad.grad(_deep_loss)(x, Ws, _tanh_layer),
             "checkpoint per layer": lambda: fungrad.grad(_deep_loss)(x, Ws, per_layer),
             "checkpoint per 10 layers": lambda: fungrad.grad(_deep_segmented_loss)(
                 x, Ws, per_segment)}
    jitted = {
        "jit, no checkpoint": fungrad.jit(lambda x, Ws: fungrad.grad(_deep_loss)(x, Ws, _tanh_layer)),
        "jit, checkpoint per layer": fungrad.jit(
            lambda x, Ws: fungrad.grad(_deep_loss)(x, Ws, per_layer)),
        "jit, checkpoint per 10 layers": fungrad.jit(
            lambda x, Ws: fungrad.grad(_deep_segmented_loss)(x, Ws, per_segment))}
    impls = dict(eager)
    impls.update({name: (lambda f=f: f(x, Ws)) for name, f in jitted.items()})
    want = impls["no checkpoint"]()
    for name, fn in impls.items():
        np.testing.assert_allclose(fn(), want, rtol=1e-10, atol=1e-12, err_msg=name)
    return impls


def make_checkpoint():
    return ("100-layer tanh MLP (width 256, batch 64), grad w.r.t. the input: checkpoint",
            checkpoint_variants())


# ----------------------------------------------------------------------------
# Random numbers: 25 million float64 normals
# ----------------------------------------------------------------------------

RANDOM_SHAPE = (5000, 5000)


def _check_standard_normal(name, z):
    """Different generators give different numbers: check the shape and moments."""
    z = np.asarray(z)
    assert z.shape == RANDOM_SHAPE and z.dtype == np.float64, name
    assert abs(z.mean()) < 1e-3 and abs(z.std() - 1) < 1e-3, name


def make_random_normal():
    key = fungrad.random.PRNGKey(0)
    rng = np.random.default_rng(0)
    jitted = fungrad.jit(lambda k: fungrad.random.normal(k, RANDOM_SHAPE))
    impls = {"numpy (default_rng().standard_normal)": lambda: rng.standard_normal(RANDOM_SHAPE),
             "fungrad": lambda: fungrad.random.normal(key, RANDOM_SHAPE),
             "fungrad jit": lambda: jitted(key)}
    impls.update(peers.random_normal_impls(RANDOM_SHAPE))
    for name, fn in impls.items():
        _check_standard_normal(name, fn())
    np.testing.assert_array_equal(impls["fungrad jit"](), impls["fungrad"]())
    return "random.normal(key, (5000, 5000)): 25 million float64 normals", impls


# ----------------------------------------------------------------------------
# HMC: 200 leapfrog steps on a logistic-regression posterior, in a fori_loop
# ----------------------------------------------------------------------------

HMC_STEPS, HMC_EPS = 200, 0.01


def hmc_setup(seed=0, n=100, d=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=d)))).astype(np.float64)
    return X, y, np.zeros(d), rng.normal(size=d)


def hmc_of(m, grad, fori_loop, X, y):
    """The trajectory ``(w, p) -> (w, p)`` written against a NumPy-like module
    ``m``, its ``grad`` and ``fori_loop`` (fungrad's or JAX's)."""
    def log_posterior(w):
        z = X @ w
        return m.sum(y * z - m.logaddexp(0.0, z)) - 0.5 * m.sum(w * w)
    g = grad(log_posterior)

    def trajectory(w, p):
        def leapfrog(i, state):
            w, p = state
            p = p + 0.5 * HMC_EPS * g(w)
            w = w + HMC_EPS * p
            return w, p + 0.5 * HMC_EPS * g(w)
        return fori_loop(0, HMC_STEPS, leapfrog, (w, p))
    return trajectory


def hmc_numpy(X, y, w, p):
    """Hand-written: the log posterior's gradient X^T (y - sigmoid(X w)) - w."""
    def g(w):
        return X.T @ (y - 1 / (1 + np.exp(-(X @ w)))) - w
    for _ in range(HMC_STEPS):
        p = p + 0.5 * HMC_EPS * g(w)
        w = w + HMC_EPS * p
        p = p + 0.5 * HMC_EPS * g(w)
    return w, p


def make_hmc():
    X, y, w, p = hmc_setup()
    traj = hmc_of(fnp, fungrad.grad, fungrad.lax.fori_loop, X, y)
    wf, pf = as_fungrad((w, p))
    impls = {"numpy (hand-written)": lambda: hmc_numpy(X, y, w, p),
             "fungrad jit": (lambda j=fungrad.jit(traj): j(wf, pf))}
    numba_impl(impls, traj, wf, pf)
    impls.update(peers.hmc_impls(hmc_of, X, y, w, p, hmc_numpy(X, y, w, p)))
    return ("HMC: 200 leapfrog steps, 10-d logistic regression posterior (100 points), "
            "grad in a fori_loop"), impls


WORKLOADS = [make_dispatch_sin, make_dispatch_add, make_seed_grad, make_chain_grad,
             make_mlp_grad, make_mlp_eval_vs_grad, make_hvp, make_per_example, make_arm_jacobian,
             make_rnn, make_rnn_loop, make_hvp_reverse_over_reverse, make_checkpoint,
             make_random_normal, make_hmc]
WORKLOADS += model_workloads.WORKLOADS      # the CNN and transformer of issue 24


# ----------------------------------------------------------------------------
# One-shot measurements: cold jit and peak memory
# ----------------------------------------------------------------------------

def cold_jit_seconds(repeats: int = 5) -> float:
    """Median time of trace + compile + first call of jit(grad(MLP loss))."""
    import statistics
    import time
    params, x, onehot = as_fungrad(mlp_setup())
    times = []
    for _ in range(repeats):
        loss = lambda p: _mlp_loss(fnp, p, x, onehot)    # a new function: nothing cached
        t0 = time.perf_counter()
        fungrad.jit(fungrad.grad(loss))(params)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_memory_bytes() -> dict:
    """Peak traced allocation (tracemalloc) of one MLP loss+grad per implementation."""
    params, x, onehot = mlp_setup()
    pf, xf, of = as_fungrad((params, x, onehot))
    jitted = fungrad.jit(fungrad.value_and_grad(lambda p: _mlp_loss(fnp, p, xf, of)))
    jitted(pf)
    impls = {"numpy": lambda: _mlp_loss_and_grad_numpy(params, x, onehot),
             "fungrad": lambda: fungrad.value_and_grad(
                 lambda p: _mlp_loss(fnp, p, xf, of))(pf),
             "fungrad jit": lambda: jitted(pf)}
    if autograd:
        impls["autograd"] = lambda: autograd.value_and_grad(
            lambda p: _mlp_loss(anp, p, x, onehot))(params)
    return _peaks(impls)


def _peaks(impls: dict) -> dict:
    """Peak traced allocation of a second call of each (the first one traces/compiles)."""
    import tracemalloc
    peaks = {}
    for name, fn in impls.items():
        fn()
        tracemalloc.start()
        fn()
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peaks


def checkpoint_peak_memory_bytes() -> dict:
    return _peaks(checkpoint_variants())
