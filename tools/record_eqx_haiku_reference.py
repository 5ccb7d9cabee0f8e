"""Record tests/data/eqx_haiku_reference.npz on real JAX (run once, by hand)::

    /path/to/jax-venv/bin/python tools/record_eqx_haiku_reference.py

with JAX 0.10.2, equinox 0.13.8 (jaxtyping 0.3.11, wadler-lindig 0.1.8),
dm-haiku 0.0.17 (jmp 0.0.4, tabulate 0.10.0) and optax 0.2.8 installed in
that environment, float64 (jax_enable_x64).  The programs are
tests/eqx_haiku_reference_programs.py; tests/test_eco_equinox.py and
tests/test_eco_haiku.py rerun them on fungrad through the import hook.
"""
import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import equinox.internal as eqxi  # noqa: E402
import haiku as hk  # noqa: E402
import optax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from eqx_haiku_reference_programs import equinox_programs, haiku_programs  # noqa: E402

if __name__ == "__main__":
    results = {**equinox_programs(jax, eqx, eqxi, optax), **haiku_programs(jax, hk, optax)}
    path = os.path.join(HERE, "..", "tests", "data", "eqx_haiku_reference.npz")
    np.savez(path, jax_version=jax.__version__, equinox_version=eqx.__version__,
             haiku_version=hk.__version__, **results)
    print(f"wrote {path}: {sorted(results)} (jax {jax.__version__}, equinox "
          f"{eqx.__version__}, haiku {hk.__version__})")
