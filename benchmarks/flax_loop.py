"""A flax.linen training loop written for JAX (issue 21 item 5), timed on
whichever ``jax`` runs it::

    python -m fungrad run benchmarks/flax_loop.py        # fungrad, through the hook
    /path/to/jax-venv/bin/python benchmarks/flax_loop.py  # real JAX (float64, 1 thread)

``python -m benchmarks.ecosystem`` runs both and checks they compute the same
losses.  The model: an MLP 64-128-128-10 (Dense, LayerNorm, relu) with a
softmax cross-entropy loss, ``TrainState`` + ``optax.adam``, one jitted
step per batch of 128.  Parameters and data come from NumPy's generator, so
both frameworks start from the same numbers.  Prints one JSON line:
``{"jax": version, "step_seconds": best-of-rounds time per step, "losses": [...]}``.
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import numpy as np  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import flax.linen as nn  # noqa: E402
import optax  # noqa: E402
from flax.training import train_state  # noqa: E402

SIZES = (64, 128, 128, 10)
BATCH = 128


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        for i, width in enumerate(SIZES[1:-1]):
            x = nn.relu(nn.LayerNorm(name=f"norm{i}")(
                nn.Dense(width, name=f"dense{i}", param_dtype=jnp.float64)(x)))
        return nn.Dense(SIZES[-1], name="logits", param_dtype=jnp.float64)(x)


def initial_params(seed: int = 0) -> dict:
    """Glorot-scaled parameters from NumPy (the same in every framework)."""
    rng = np.random.default_rng(seed)
    params = {}
    names = [f"dense{i}" for i in range(len(SIZES) - 2)] + ["logits"]
    for name, (n_in, n_out) in zip(names, zip(SIZES[:-1], SIZES[1:])):
        params[name] = {"kernel": rng.normal(size=(n_in, n_out)) * np.sqrt(2 / (n_in + n_out)),
                        "bias": np.zeros(n_out)}
    for i, width in enumerate(SIZES[1:-1]):
        params[f"norm{i}"] = {"scale": np.ones(width), "bias": np.zeros(width)}
    return params


def batches(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(SIZES[-1], SIZES[0]))
    for _ in range(n):
        labels = rng.integers(0, SIZES[-1], size=BATCH)
        yield centers[labels] + 0.5 * rng.normal(size=(BATCH, SIZES[0])), labels


def make_step(model):
    @jax.jit
    def step(state, x, labels):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss
    return step


def train(steps: int):
    model = MLP()
    params = jax.tree.map(jnp.asarray, initial_params())
    state = train_state.TrainState.create(apply_fn=model.apply, params=params,
                                          tx=optax.adam(1e-3))
    step = make_step(model)
    data = [(jnp.asarray(x), jnp.asarray(y)) for x, y in batches(steps)]
    losses = []
    start = time.perf_counter()
    for x, y in data:
        state, loss = step(state, x, y)
        losses.append(float(loss))
        if len(losses) == 1:
            first = time.perf_counter() - start      # (trace and compile included)
    return step, state, data, losses, first


def time_steps(step, state, data, rounds: int = 5) -> float:
    """Best-of-``rounds`` seconds per step over the batches (compiled already)."""
    best = float("inf")
    for _ in range(rounds):
        s = state
        start = time.perf_counter()
        for x, y in data:
            s, loss = step(s, x, y)
        jax.block_until_ready(loss)
        best = min(best, (time.perf_counter() - start) / len(data))
    return best


def main(argv=None):
    steps = int((argv or sys.argv[1:] or ["20"])[0])
    step, state, data, losses, first = train(steps)
    print(json.dumps({"jax": jax.__version__, "step_seconds": time_steps(step, state, data),
                      "first_seconds": first, "losses": losses}))


if __name__ == "__main__":
    main()
