"""flax.linen programs whose results were recorded once on real JAX 0.10.2
(tools/record_flax_reference.py -> tests/data/flax_reference.npz) and are
rerun on fungrad by tests/test_eco_flax.py.

Every parameter and input comes from NumPy's generator and is passed to
``apply`` explicitly, so the numbers do not depend on either framework's
random stream.  ``run_all`` takes the ``jax``/flax/optax modules as
arguments, so this file imports no ``jax`` itself.
"""
from __future__ import annotations

import numpy as np


def _params():
    rng = np.random.default_rng(7)
    normal = lambda *shape: rng.normal(size=shape)
    return {
        "mlp": {"Dense_0": {"kernel": normal(3, 5), "bias": normal(5)},
                "LayerNorm_0": {"scale": 1 + 0.1 * normal(5), "bias": normal(5)},
                "BatchNorm_0": {"scale": 1 + 0.1 * normal(5), "bias": normal(5)},
                "Dense_1": {"kernel": normal(5, 2), "bias": normal(2)}},
        "stats": {"mean": (0.1 * normal(5)).astype(np.float32),
                  "var": (1 + 0.1 * rng.random(5)).astype(np.float32)},
        "conv": {"kernel": normal(3, 3, 2, 4), "bias": normal(4)},
        "attention": {name: {"kernel": normal(5, 2, 2), "bias": normal(2, 2)}
                      for name in ("query", "key", "value")}
        | {"out": {"kernel": normal(2, 2, 3), "bias": normal(3)}},
        "cell": {"Dense_0": {"kernel": normal(2, 3), "bias": normal(3)}},
        "x": normal(6, 3), "image": normal(2, 5, 5, 2), "q": normal(2, 3, 5),
        "kv": normal(2, 4, 5), "xs": normal(5, 2), "y": normal(6, 2),
    }


def run_all(jax, nn, optax, train_state) -> dict:
    """Every recorded quantity, as NumPy arrays by name."""
    jnp = jax.numpy
    p = jax.tree.map(jnp.asarray, _params())
    out = {}

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.LayerNorm()(nn.Dense(5)(x))
            x = nn.relu(nn.BatchNorm(use_running_average=not train)(x))
            return nn.Dense(2)(x)
    mlp = MLP()
    variables = {"params": p["mlp"], "batch_stats": {"BatchNorm_0": p["stats"]}}
    out["mlp_eval"] = mlp.apply(variables, p["x"])
    out["mlp_train"], updates = mlp.apply(variables, p["x"], train=True, mutable=["batch_stats"])
    out["bn_mean"] = updates["batch_stats"]["BatchNorm_0"]["mean"]
    out["bn_var"] = updates["batch_stats"]["BatchNorm_0"]["var"]

    out["conv"] = nn.Conv(4, (3, 3)).apply({"params": p["conv"]}, p["image"])
    attention = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4, out_features=3)
    out["attention"] = attention.apply({"params": p["attention"]}, p["q"], p["kv"])

    class Cell(nn.Module):
        @nn.compact
        def __call__(self, carry, x):
            carry = jnp.tanh(nn.Dense(3)(x) + carry)
            return carry, 2.0 * carry
    scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False})()
    out["scan_carry"], out["scan_ys"] = scan.apply({"params": p["cell"]}, jnp.zeros(3), p["xs"])

    state = train_state.TrainState.create(apply_fn=mlp.apply, params=p["mlp"],
                                          tx=optax.adam(0.05))

    @jax.jit
    def step(state, stats):
        def loss_fn(params):
            pred, upd = state.apply_fn({"params": params, "batch_stats": stats}, p["x"],
                                       train=True, mutable=["batch_stats"])
            return jnp.mean((pred - p["y"]) ** 2), upd["batch_stats"]
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        return state.apply_gradients(grads=grads), stats, loss
    stats, losses = {"BatchNorm_0": p["stats"]}, []
    for _ in range(4):
        state, stats, loss = step(state, stats)
        losses.append(loss)
    out["adam_losses"] = jnp.stack(losses)
    out["adam_kernel"] = state.params["Dense_0"]["kernel"]
    out["adam_bn_var"] = stats["BatchNorm_0"]["var"]
    return {name: np.asarray(value) for name, value in out.items()}
