"""flax.nnx programs whose results were recorded once on real JAX 0.10.2 +
flax 0.12.8 (tools/record_nnx_reference.py -> tests/data/nnx_reference.json)
and are rerun on fungrad through the import hook by tests/test_eco_nnx.py.

Parameters come from flax's own initializers and ``nnx.Rngs`` keys (fungrad's
PRNG reproduces JAX's streams), so the initial parameters, dropout masks and
everything after them are compared.  Models use float64 parameters (x64 on)
except ``default_dtype_*``, which keeps flax's float32 default.  ``run_all``
takes the ``jax``/nnx/optax modules as arguments, so this file imports no
``jax`` itself.
"""
from __future__ import annotations

import numpy as np


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 3)), rng.normal(size=(8, 2))


def _flat(jax, prefix: str, tree) -> dict:
    """``{prefix + keystr(path): np.ndarray}`` for the leaves of ``tree``."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {prefix + jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves}


def _mlp_class(nnx):
    class MLP(nnx.Module):
        def __init__(self, din, dhidden, dout, *, rngs, dtype):
            self.linear1 = nnx.Linear(din, dhidden, rngs=rngs, param_dtype=dtype, dtype=dtype)
            self.bn = nnx.BatchNorm(dhidden, rngs=rngs, param_dtype=dtype, dtype=dtype)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.linear2 = nnx.Linear(dhidden, dout, rngs=rngs, param_dtype=dtype, dtype=dtype)

        def __call__(self, x):
            x = nnx.relu(self.bn(self.linear1(x)))
            return self.linear2(self.dropout(x))
    return MLP


def run_mlp(jax, nnx, optax) -> dict:
    """Init from Rngs, eval/train calls (BatchNorm stats, Dropout), an
    Optimizer + nnx.jit/value_and_grad training loop, split/merge."""
    jnp = jax.numpy
    x, y = map(jnp.asarray, _data())
    model = _mlp_class(nnx)(3, 4, 2, rngs=nnx.Rngs(0), dtype=jnp.float64)
    out = _flat(jax, "init", nnx.state(model, nnx.Param))
    model.eval()
    out["eval_out"] = np.asarray(model(x))
    model.train()
    out["train_out"] = np.asarray(model(x))           # dropout mask from the 'default' stream
    out |= _flat(jax, "batch_stats", nnx.state(model, nnx.BatchStat))

    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    out["losses"] = np.array([train_step(model, optimizer, x, y) for _ in range(3)])
    out |= _flat(jax, "trained", nnx.state(model, nnx.Param))
    out["optimizer_step"] = np.asarray(optimizer.step[...])

    graphdef, state = nnx.split(model)
    merged = nnx.merge(graphdef, state)
    merged.eval()
    out["merged_eval_out"] = np.asarray(merged(x))
    return out


def run_grad_vmap_scan(jax, nnx) -> dict:
    """nnx.grad of a Linear, an nnx.vmap ensemble, nnx.scan over stacked layers."""
    jnp = jax.numpy
    x = jnp.asarray(_data()[0])
    f64 = dict(param_dtype=jnp.float64, dtype=jnp.float64)
    linear = nnx.Linear(3, 2, rngs=nnx.Rngs(params=1), **f64)
    grads = nnx.grad(lambda m: jnp.sum(jnp.tanh(m(x))))(linear)
    out = _flat(jax, "linear_grad", nnx.state(grads))

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def create_ensemble(rngs):
        return nnx.Linear(3, 2, rngs=rngs, **f64)

    @nnx.vmap(in_axes=(0, None), out_axes=0)
    def ensemble_forward(model, x):
        return model(x)

    ensemble = create_ensemble(nnx.Rngs(2))
    out["ensemble_kernel"] = np.asarray(ensemble.kernel[...])
    out["ensemble_out"] = np.asarray(ensemble_forward(ensemble, x))

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs, **f64)

        def __call__(self, x):
            return jnp.tanh(self.linear(x))

    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def create_stack(rngs):
        return Block(rngs)

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward_stack(x, block):
        return block(x)

    out["scan_out"] = np.asarray(forward_stack(x, create_stack(nnx.Rngs(3))))
    return out


def run_layers_and_control_flow(jax, nnx) -> dict:
    """Conv, LayerNorm, Embed, MultiHeadAttention; nnx.remat under nnx.grad,
    nnx.cond, nnx.fori_loop; a linen module through nnx.bridge.ToNNX."""
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    image, seq = jnp.asarray(rng.normal(size=(2, 5, 5, 3))), jnp.asarray(rng.normal(size=(2, 4, 8)))
    f64 = dict(param_dtype=jnp.float64, dtype=jnp.float64)
    out = {"conv": nnx.Conv(3, 4, (3, 3), rngs=nnx.Rngs(0), **f64)(image),
           "layer_norm": nnx.LayerNorm(3, rngs=nnx.Rngs(0), **f64)(image),
           "embed": nnx.Embed(10, 4, rngs=nnx.Rngs(0), **f64)(jnp.array([1, 3, 9])),
           "attention": nnx.MultiHeadAttention(num_heads=2, in_features=8, qkv_features=8,
                                               decode=False, rngs=nnx.Rngs(0), **f64)(seq)}
    linear = nnx.Linear(8, 8, rngs=nnx.Rngs(1), **f64)
    loss = nnx.remat(lambda m, x: jnp.sin(m(x)).sum())
    out["remat_grad"] = nnx.grad(loss)(linear, seq).kernel[...]
    out["cond"] = nnx.cond(False, lambda m, x: m(x), lambda m, x: -m(x), linear, seq)
    out["fori_loop"] = nnx.fori_loop(
        0, 3, lambda i, carry: (carry[0], jnp.tanh(carry[0](carry[1]))), (linear, seq))[1]
    import flax.linen as nn
    bridged = nnx.bridge.ToNNX(nn.Dense(3, param_dtype=jnp.float64), rngs=nnx.Rngs(0))
    nnx.bridge.lazy_init(bridged, seq)
    out["bridge"] = bridged(seq)
    return {name: np.asarray(value) for name, value in out.items()}


def run_variable_modes(jax, nnx) -> dict:
    """flax's default float32 parameters, and the eager ref and hijax Variables
    (``nnx.var_defaults(ref=True)`` / ``(hijax=True)``): a call, a write, a call."""
    jnp = jax.numpy
    x = jnp.asarray(_data()[0])
    out = {}
    for mode in ("default", "ref", "hijax"):
        with nnx.var_defaults(**{mode: True} if mode != "default" else {"ref": False}):
            linear = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
        out[f"{mode}_kernel"] = np.asarray(linear.kernel[...])
        out[f"{mode}_out"] = np.asarray(linear(x))
        linear.kernel[...] = jnp.ones((3, 2), jnp.float32)
        linear.bias[1:] = jnp.full((1,), 0.5, jnp.float32)
        out[f"{mode}_out_after_write"] = np.asarray(linear(x))
    return out


def run_all(jax, nnx, optax) -> dict:
    return (run_mlp(jax, nnx, optax) | run_grad_vmap_scan(jax, nnx)
            | run_layers_and_control_flow(jax, nnx) | run_variable_modes(jax, nnx))


def run_tabulate(jax, nn, nnx) -> dict:
    """The summary tables of flax.linen's ``nn.tabulate`` (which sets
    ``jax.check_tracer_leaks(False)``) and ``nnx.tabulate``, as plain text."""
    jnp = jax.numpy
    console = {"width": 100, "force_terminal": False, "color_system": None}

    class LinenMLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(4)(x)))

    class NnxMLP(nnx.Module):
        def __init__(self, rngs):
            self.linear1 = nnx.Linear(3, 4, rngs=rngs)
            self.linear2 = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            return self.linear2(nnx.relu(self.linear1(x)))

    x = jnp.ones((1, 3))
    return {"linen": nn.tabulate(LinenMLP(), jax.random.key(0), console_kwargs=console)(x),
            "nnx": nnx.tabulate(NnxMLP(nnx.Rngs(0)), x, console_kwargs=console)}
