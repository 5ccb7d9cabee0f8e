"""Record tests/data/flax_reference.npz on real JAX (run once, by hand)::

    /path/to/jax-venv/bin/python tools/record_flax_reference.py

with JAX 0.10.2 and flax 0.12.8 (plus optax 0.2.8) installed in that
environment, float64 (jax_enable_x64).  The programs are
tests/flax_reference_programs.py; tests/test_eco_flax.py reruns them on
fungrad through the import hook and compares.
"""
import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import flax  # noqa: E402
import flax.linen as nn  # noqa: E402
import optax  # noqa: E402
from flax.training import train_state  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from flax_reference_programs import run_all  # noqa: E402

if __name__ == "__main__":
    results = run_all(jax, nn, optax, train_state)
    path = os.path.join(HERE, "..", "tests", "data", "flax_reference.npz")
    np.savez(path, jax_version=jax.__version__, flax_version=flax.__version__, **results)
    print(f"wrote {path}: {sorted(results)} (jax {jax.__version__}, flax {flax.__version__})")
