"""Record JAX's single-precision Cholesky (``jnp.linalg.cholesky`` of float32
and complex64 matrices: positive definite of several sizes, batched, and one
that is not positive definite) into tests/data/jax_cholesky_single.json, for
tests/test_cholesky_single.py.  Run once with real JAX (this script imports
jax; fungrad never does):

    python tools/record_jax_cholesky.py     # with JAX 0.10.2 (x64 off) installed

The matrices are ``b b^H + n I`` with b from NumPy's default_rng(0) (the last
case: ``-I``); values are stored as float32 bit patterns, real and imaginary parts.
"""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from record_jax_qr import _bits

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "jax_cholesky_single.json")
SHAPES = [(1, 1), (3, 3), (8, 8), (20, 20), (64, 64), (3, 5, 5)]


def _positive_definite(rng, shape, dtype):
    b = rng.normal(size=shape)
    if dtype == "complex64":
        b = b + 1j * rng.normal(size=shape)
    a = b @ np.swapaxes(b.conj(), -1, -2) + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def main():
    rng = np.random.default_rng(0)
    cases = []
    for dtype in ("float32", "complex64"):
        matrices = [_positive_definite(rng, shape, dtype) for shape in SHAPES]
        matrices.append(-np.eye(4, dtype=dtype))
        for a in matrices:
            cases.append({"shape": list(a.shape), "dtype": dtype, "a": _bits(a),
                          "l": _bits(jnp.linalg.cholesky(a))})
    with open(OUT, "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": cases}, fh)
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
