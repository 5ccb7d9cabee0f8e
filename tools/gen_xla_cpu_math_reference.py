"""Write tests/data/xla_cpu_math_reference.json: XLA's CPU log, log1p, exp, erf,
erf_inv, tan and rsqrt, recorded once from real JAX.

Run with a real JAX (0.10.2 was used) on an x86-64 CPU with FMA (float32
rsqrt depends on the CPU model: the recorded one is an AMD EPYC, Zen 4):
``python tools/gen_xla_cpu_math_reference.py``. Each function is jitted alone
(``jax.jit(jnp.log)`` ...) and applied to a fixed set of float32 and float64
inputs: random ones over the ranges the samplers use, and the edge cases
(zeros of both signs, +-1, tiny, huge, inf, nan). Values are stored by their
bits (hex), so that nan payloads and signed zeros survive JSON.
tests/test_xla_cpu_math.py checks fungrad.lax.kernels.xla_cpu_math against them.
"""
import json
import os

import numpy as np

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

FUNCTIONS = {"log": jnp.log, "log1p": jnp.log1p, "exp": jnp.exp, "erf": jax.lax.erf,
             "erf_inv": jax.lax.erf_inv, "tan": jnp.tan, "rsqrt": jax.lax.rsqrt}
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan,
         0.41421356, -0.41421356, 0.99999, -0.99999, 88.5, -87.5, 700.0, -700.0, 3.9, -3.9]


def inputs(name, dtype, rng, n=800):
    """Random inputs where the function is defined, and the edge cases."""
    if name == "log":
        x = np.exp(rng.uniform(-80, 80, n))
    elif name == "log1p":
        x = np.concatenate([rng.uniform(-1, 1, n // 2), np.expm1(rng.uniform(-20, 20, n // 2))])
    elif name == "exp":
        x = rng.uniform(-100, 100, n) if dtype == np.float32 else rng.uniform(-750, 750, n)
    elif name == "erf":
        x = rng.normal(0, 3, n)
    elif name == "tan":
        x = rng.uniform(-1.6, 1.6, n)
    elif name == "rsqrt":          # float32: the CPU's estimate, so every mantissa region
        x = np.concatenate([np.exp(rng.uniform(-80, 80, n)), rng.uniform(0.5, 40, 4 * n)])
    else:
        x = np.concatenate([rng.uniform(-1, 1, n // 2), np.tanh(rng.normal(0, 3, n // 2))])
    return np.concatenate([x, EDGES]).astype(dtype)


def record():
    rng = np.random.default_rng(20261204)
    out = {"jax_version": jax.__version__, "cases": []}
    for name, fn in FUNCTIONS.items():
        for dtype, bits in ((np.float32, np.uint32), (np.float64, np.uint64)):
            x = inputs(name, dtype, rng)
            with np.errstate(all="ignore"):
                y = np.asarray(jax.jit(fn)(x))
            out["cases"].append({"fn": name, "dtype": np.dtype(dtype).name,
                                 "x": [f"{v:x}" for v in x.view(bits)],
                                 "y": [f"{v:x}" for v in y.view(bits)]})
    return out


if __name__ == "__main__":
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                        "xla_cpu_math_reference.json")
    data = record()
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print(sum(len(c["x"]) for c in data["cases"]), "values ->", path)
