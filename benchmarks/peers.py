"""Optional peer frameworks, JAX and PyTorch, implementing the same workloads.

Both are optional: they are imported lazily and every ``*_impls`` function
returns an empty dict when its library is missing, so the default CI (which
installs neither) runs the suite unchanged.

Installing the peers:

* JAX comes with the ``bench`` extra (``pip install -e .[bench]``) or
  ``pip install jax`` (CPU).
* PyTorch is NOT in the extra. Install it separately with exactly
  ``pip install torch==2.13.0`` -- that pin resolves to a CPU wheel on local
  disk, whereas a bare ``torch`` requirement downloads gigabytes of CUDA wheels.

Fairness settings: float64 everywhere (``jax_enable_x64``; float64 tensors),
one thread (``torch.set_num_threads(1)``; ``XLA_FLAGS`` set by run.py before
JAX loads), inputs converted to the peer's array type once outside the timed
call, JAX results blocked with ``block_until_ready`` and compiled by a warm-up
call that is not timed. Every peer implementation is run once and checked
against the NumPy baseline's numbers before it is timed, so a row can never
compare a different computation.
"""
from __future__ import annotations

import numpy as np

_loaded: dict = {}


def jax_modules():
    """(jax, jax.numpy) configured for float64, or None when JAX is missing."""
    if "jax" not in _loaded:
        try:
            import jax
            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp
            _loaded["jax"] = (jax, jnp)
        except ImportError:
            _loaded["jax"] = None
    return _loaded["jax"]


def torch_module():
    """torch restricted to one thread, or None when PyTorch is missing."""
    if "torch" not in _loaded:
        try:
            import torch
            torch.set_num_threads(1)        # match the single BLAS thread of NumPy
            _loaded["torch"] = torch
        except ImportError:
            _loaded["torch"] = None
    return _loaded["torch"]


def versions() -> dict:
    found = {}
    if jax_modules():
        found["JAX"] = jax_modules()[0].__version__
    if torch_module():
        found["PyTorch"] = torch_module().__version__
    return found


# ----------------------------------------------------------------------------
# Verification against the NumPy baseline
# ----------------------------------------------------------------------------

def _leaves(tree) -> list:
    """Flatten nested tuples/lists of arrays (any framework) into NumPy arrays."""
    if isinstance(tree, (tuple, list)):
        return [leaf for sub in tree for leaf in _leaves(sub)]
    if hasattr(tree, "detach"):                       # torch.Tensor
        tree = tree.detach().numpy()
    return [np.asarray(tree, dtype=np.float64)]


def verified(name: str, thunk, expected, rtol=1e-7, atol=1e-10):
    """Return ``thunk`` after checking that its result equals ``expected``."""
    got, want = _leaves(thunk()), _leaves(expected)
    assert len(got) == len(want), f"{name}: {len(got)} outputs, baseline has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{name}: output {i} shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: output {i} differs from NumPy")
    return thunk


def _jax_thunk(jax, fn, *args):
    """A call of ``fn`` that waits for the result (JAX dispatches asynchronously)."""
    return lambda: jax.block_until_ready(fn(*args))


def _torch_tensors(torch, arrays, requires_grad=False):
    return [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)
            for a in arrays]


# ----------------------------------------------------------------------------
# Dispatch overhead
# ----------------------------------------------------------------------------

def dispatch_sin_impls(x, expected) -> dict:
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        xj = jnp.asarray(x)
        impls["jax (eager jnp.sin)"] = verified("jax", _jax_thunk(jax, jnp.sin, xj), expected)
        impls["jax jit"] = verified("jax jit", _jax_thunk(jax, jax.jit(jnp.sin), xj), expected)
    if torch_module():
        torch = torch_module()
        xt = torch.tensor(x)
        impls["torch"] = verified("torch", lambda: torch.sin(xt), expected)
    return impls


def dispatch_add_impls(expected) -> dict:
    # torch.add rejects two Python floats (it needs a tensor), so only JAX here.
    if not jax_modules():
        return {}
    jax, jnp = jax_modules()
    return {"jax (eager jnp.add)": verified(
        "jax", _jax_thunk(jax, jnp.add, 1.0, 2.0), expected)}


# ----------------------------------------------------------------------------
# Scalar function and the 200-op chain: written once against a NumPy-like module
# ----------------------------------------------------------------------------

def value_and_grad_impls(fn_of_module, x, expected) -> dict:
    """Peers for ``value_and_grad(fn_of_module(m))(x)`` where m is jnp or torch."""
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        vg = jax.jit(jax.value_and_grad(fn_of_module(jnp)))
        impls["jax jit"] = verified("jax jit", _jax_thunk(jax, vg, jnp.asarray(x)), expected)
    if torch_module():
        torch = torch_module()
        f = fn_of_module(torch)
        (xt,) = _torch_tensors(torch, [x], requires_grad=True)

        def torch_value_and_grad():
            val = f(xt)
            return val, torch.autograd.grad(val, xt)[0]
        impls["torch (eager autograd)"] = verified("torch", torch_value_and_grad, expected)
    return impls


# ----------------------------------------------------------------------------
# MLP 784-512-512-10 loss+grad, its HVP, and the JAX cold-jit figure
# ----------------------------------------------------------------------------

def _mlp_loss(m, detach, params, x, onehot):
    """The loss of workloads._mlp_loss; ``detach`` stops the gradient of the max
    (as fungrad's version does), ``m`` is jnp or torch."""
    h = x
    for w, b in params[:-1]:
        h = m.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    z = logits - detach(m.max(logits, axis=1, keepdims=True))
    logp = z - m.log(m.sum(m.exp(z), axis=1, keepdims=True))
    return -m.sum(onehot * logp) / x.shape[0]


def _jax_mlp_loss(params, x, onehot):
    jax, jnp = jax_modules()
    return _mlp_loss(jnp, jax.lax.stop_gradient, params, x, onehot)


def _torch_mlp_loss(params, x, onehot):
    if "torch_as_numpy" not in _loaded:
        _loaded["torch_as_numpy"] = _TorchAsNumpy(torch_module())
    return _mlp_loss(_loaded["torch_as_numpy"], lambda t: t.detach(), params, x, onehot)


class _TorchAsNumpy:
    """The few NumPy spellings the MLP loss uses, mapped onto torch."""

    def __init__(self, torch):
        self._torch = torch
        self.tanh, self.log, self.exp = torch.tanh, torch.log, torch.exp

    def max(self, t, axis, keepdims):
        return self._torch.amax(t, dim=axis, keepdim=keepdims)

    def sum(self, t, axis=None, keepdims=False):
        if axis is None:
            return self._torch.sum(t)
        return self._torch.sum(t, dim=axis, keepdim=keepdims)


def mlp_grad_impls(params, x, onehot, expected) -> dict:
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        pj = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        xj, oj = jnp.asarray(x), jnp.asarray(onehot)
        vg = jax.jit(jax.value_and_grad(_jax_mlp_loss))
        impls["jax jit"] = verified("jax jit", _jax_thunk(jax, vg, pj, xj, oj), expected)
    if torch_module():
        torch = torch_module()
        flat = _torch_tensors(torch, [a for wb in params for a in wb], requires_grad=True)
        pt = list(zip(flat[0::2], flat[1::2]))
        xt, ot = _torch_tensors(torch, [x, onehot])

        def torch_value_and_grad():
            loss = _torch_mlp_loss(pt, xt, ot)
            grads = torch.autograd.grad(loss, flat)
            return loss, list(zip(grads[0::2], grads[1::2]))
        impls["torch (eager autograd)"] = verified("torch", torch_value_and_grad, expected)
    return impls


def mlp_hvp_impls(params, x, onehot, v, expected) -> dict:
    """Forward-over-reverse HVP of the MLP loss w.r.t. the last weight matrix."""
    impls = {}
    w3 = params[-1][0]
    if jax_modules():
        jax, jnp = jax_modules()
        front = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params[:-1]]
        data = (front, jnp.asarray(params[-1][1]), jnp.asarray(x), jnp.asarray(onehot))

        # The data are arguments, not closed-over constants: XLA would otherwise
        # constant-fold the w-independent layers at compile time (the NumPy
        # baseline recomputes them on every call).
        def hvp(w, t, data):
            front, b3, xj, oj = data
            loss = lambda w: _jax_mlp_loss(front + [(w, b3)], xj, oj)
            return jax.jvp(jax.grad(loss), (w,), (t,))[1]
        impls["jax jit(hvp)"] = verified("jax jit(hvp)", _jax_thunk(
            jax, jax.jit(hvp), jnp.asarray(w3), jnp.asarray(v), data), expected)
    if torch_module():
        torch = torch_module()
        front = [tuple(_torch_tensors(torch, wb)) for wb in params[:-1]]
        b3, xt, ot, w3t, vt = _torch_tensors(torch, [params[-1][1], x, onehot, w3, v])
        loss = lambda w: _torch_mlp_loss(front + [(w, b3)], xt, ot)
        grad = torch.func.grad(loss)
        impls["torch.func jvp(grad)"] = verified(
            "torch hvp", lambda: torch.func.jvp(grad, (w3t,), (vt,))[1], expected)
    return impls


def jax_cold_jit_seconds(params, x, onehot, repeats: int = 5):
    """Median trace + compile + first call of jax.jit(jax.grad(MLP loss)), or None.

    Caches are cleared before each repeat and the loss is a new function, so
    every repeat traces and compiles from scratch."""
    if not jax_modules():
        return None
    import statistics
    import time
    jax, jnp = jax_modules()
    pj = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
    xj, oj = jnp.asarray(x), jnp.asarray(onehot)
    times = []
    for _ in range(repeats):
        jax.clear_caches()
        loss = lambda p: _jax_mlp_loss(p, xj, oj)
        t0 = time.perf_counter()
        jax.block_until_ready(jax.jit(jax.grad(loss))(pj))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ----------------------------------------------------------------------------
# Per-example gradients, the arm Jacobian, the RNN
# ----------------------------------------------------------------------------

def _pe_loss(m, params, x, y):
    w1, b1, w2, b2 = params
    logit = m.tanh(x @ w1 + b1) @ w2 + b2
    return m.log1p(m.exp(-y * logit))


def per_example_impls(params, xs, ys, expected) -> dict:
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        pj = tuple(jnp.asarray(p) for p in params)
        loss = lambda p, x, y: _pe_loss(jnp, p, x, y)
        per_ex = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
        impls["jax jit(vmap(grad))"] = verified(
            "jax", _jax_thunk(jax, per_ex, pj, jnp.asarray(xs), jnp.asarray(ys)), expected)
    if torch_module():
        torch = torch_module()
        pt = tuple(_torch_tensors(torch, params))
        xt, yt = _torch_tensors(torch, [xs, ys])
        loss = lambda p, x, y: _pe_loss(torch, p, x, y)
        per_ex = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
        impls["torch.func vmap(grad)"] = verified("torch", lambda: per_ex(pt, xt, yt), expected)
    return impls


def _torch_robot_arm(torch, lengths, fractions, theta):
    """fungrad.examples.robot_arm in torch spelling."""
    angles = torch.cumsum(theta, dim=0)
    base_x, base_y, points = 0.0, 0.0, []
    for i in range(3):
        dx, dy = lengths[i] * torch.cos(angles[i]), lengths[i] * torch.sin(angles[i])
        points.append(torch.stack([base_x + fractions * dx, base_y + fractions * dy], dim=1))
        base_x, base_y = base_x + dx, base_y + dy
    return torch.cat(points).reshape(-1)


def arm_jacobian_impls(robot_arm, lengths, fractions, theta, expected) -> dict:
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        jac = jax.jit(jax.jacfwd(lambda t: robot_arm(t, m=jnp)))
        impls["jax jit(jacfwd)"] = verified(
            "jax", _jax_thunk(jax, jac, jnp.asarray(theta)), expected)
    if torch_module():
        torch = torch_module()
        lt, ft, tt = _torch_tensors(torch, [lengths, fractions, theta])
        jac = torch.func.jacfwd(lambda t: _torch_robot_arm(torch, lt, ft, t))
        impls["torch.func jacfwd"] = verified("torch", lambda: jac(tt), expected)
    return impls


def rnn_grad_impls(W, U, xs, expected) -> dict:
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()

        def loss(W, U, xs):
            step = lambda h, x: (jnp.tanh(h @ W + x @ U), None)
            h, _ = jax.lax.scan(step, jnp.zeros((xs.shape[1], W.shape[0])), xs)
            return jnp.sum(h ** 2)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        impls["jax jit(grad) of lax.scan"] = verified(
            "jax", _jax_thunk(jax, g, *(jnp.asarray(a) for a in (W, U, xs))), expected)
    if torch_module():
        torch = torch_module()
        Wt, Ut = _torch_tensors(torch, [W, U], requires_grad=True)
        (xt,) = _torch_tensors(torch, [xs])

        def torch_grad():                 # torch has no scan: a Python loop
            h = torch.zeros((xt.shape[1], Wt.shape[0]), dtype=torch.float64)
            for x in xt:
                h = torch.tanh(h @ Wt + x @ Ut)
            return torch.autograd.grad(torch.sum(h ** 2), (Wt, Ut))
        impls["torch (eager autograd, loop)"] = verified("torch", torch_grad, expected)
    return impls


def hvp_rr_impls(A, x, v, expected) -> dict:
    """Reverse-over-reverse HVP of sum(tanh(A x)) in JAX and PyTorch."""
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        Aj, vj = jnp.asarray(A), jnp.asarray(v)
        f = lambda y: jnp.sum(jnp.tanh(Aj @ y))
        h = jax.jit(jax.grad(lambda y: jnp.dot(jax.grad(f)(y), vj)))
        impls["jax jit(grad(grad))"] = verified("jax", _jax_thunk(jax, h, jnp.asarray(x)),
                                                expected)
    if torch_module():
        torch = torch_module()
        At, vt = _torch_tensors(torch, [A, v])

        def torch_hvp():
            (xt,) = _torch_tensors(torch, [x], requires_grad=True)
            (g,) = torch.autograd.grad(torch.sum(torch.tanh(At @ xt)), xt, create_graph=True)
            return torch.autograd.grad(torch.dot(g, vt), xt)[0]
        impls["torch (eager autograd)"] = verified("torch", torch_hvp, expected)
    return impls


# ----------------------------------------------------------------------------
# Random numbers
# ----------------------------------------------------------------------------

def random_normal_impls(shape) -> dict:
    """Each framework's own normal sampler. Their streams differ from NumPy's,
    so the workload checks shape and moments instead of values."""
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        sampler = jax.jit(lambda k: jax.random.normal(k, shape, dtype=jnp.float64))
        impls["jax jit (jax.random.normal)"] = _jax_thunk(jax, sampler, jax.random.PRNGKey(0))
    if torch_module():
        torch = torch_module()
        generator = torch.Generator().manual_seed(0)
        impls["torch (torch.randn)"] = lambda: torch.randn(
            shape, dtype=torch.float64, generator=generator).numpy()
    return impls


# ----------------------------------------------------------------------------
# HMC: leapfrog steps inside a fori_loop
# ----------------------------------------------------------------------------

def hmc_impls(hmc_of, X, y, w, p, expected) -> dict:
    """``hmc_of(m, grad, fori_loop, X, y)`` is the sampler's trajectory written
    against a NumPy-like module; JAX compiles the whole loop."""
    impls = {}
    if jax_modules():
        jax, jnp = jax_modules()
        run = jax.jit(hmc_of(jnp, jax.grad, jax.lax.fori_loop, jnp.asarray(X), jnp.asarray(y)))
        impls["jax jit"] = verified("jax jit", _jax_thunk(jax, run, jnp.asarray(w),
                                                          jnp.asarray(p)), expected)
    return impls
