"""Record jax.experimental.jet.jet results as test data.

Run once with real JAX (float64), not by the tests:
    python tools/gen_jet_reference.py > tests/data/jet_reference.json
Made with JAX 0.10.2 (jax_enable_x64=True) on CPU.
"""
import json

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.jet import jet

jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -0.8, 1.4])
SERIES = [np.array([1.0, 0.5, -0.2]), np.array([0.1, -0.3, 0.7]), np.array([-0.4, 0.2, 0.05])]
FUNCTIONS = {
    "composite": lambda x: jnp.sum(jnp.exp(jnp.sin(x) * x) / (1.0 + x ** 2)),
    "tanh_log": lambda x: jnp.log(jnp.tanh(x) ** 2 + 1.0) * jnp.sqrt(x ** 2 + 0.5),
    "logistic_dot": lambda x: jax.nn.sigmoid(jnp.outer(x, x) @ x),
    "cos_div": lambda x: jnp.cos(x) / (2.0 + jnp.sin(3.0 * x)),
}


def record():
    out = {}
    for name, f in FUNCTIONS.items():
        primal, series = jet(f, (X,), (SERIES,))
        out[name] = {"primal": np.asarray(primal).tolist(),
                     "series": [np.asarray(s).tolist() for s in series]}
    return out


if __name__ == "__main__":
    print(json.dumps({"jax_version": jax.__version__, "x": X.tolist(),
                      "series": [s.tolist() for s in SERIES], "results": record()}, indent=1))
