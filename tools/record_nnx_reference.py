"""Record tests/data/nnx_reference.json on real JAX (run once, by hand)::

    /path/to/jax-venv/bin/python tools/record_nnx_reference.py

with JAX 0.10.2, flax 0.12.8 and optax 0.2.8 installed in that environment
(``pip install flax==0.12.8`` brings them), float64 (jax_enable_x64).  The
programs are tests/nnx_reference_programs.py; tests/test_eco_nnx.py reruns
them on fungrad through the import hook and compares.
"""
import json
import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import flax  # noqa: E402
import flax.linen as nn  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from nnx_reference_programs import run_all, run_tabulate  # noqa: E402


def as_json(value: np.ndarray) -> dict:
    return {"dtype": value.dtype.name, "shape": list(value.shape),
            "value": value.ravel().tolist()}     # floats: repr round-trips exactly


if __name__ == "__main__":
    results = run_all(jax, nnx, optax)
    path = os.path.join(HERE, "..", "tests", "data", "nnx_reference.json")
    with open(path, "w") as f:
        json.dump({"made_by": "tools/record_nnx_reference.py", "jax_version": jax.__version__,
                   "flax_version": flax.__version__, "optax_version": optax.__version__,
                   "results": {k: as_json(np.asarray(v)) for k, v in sorted(results.items())},
                   "tables": run_tabulate(jax, nn, nnx)},
                  f, indent=0)
    print(f"wrote {path}: {sorted(results)} (jax {jax.__version__}, flax {flax.__version__})")
