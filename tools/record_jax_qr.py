"""Record JAX's single-precision QR (``jnp.linalg.qr`` of float32 and
complex64 matrices: tall, wide, square, batched, both modes) into
tests/data/jax_qr_single.json, for tests/test_qr_single.py.  Run once with
real JAX (this script imports jax; fungrad never does):

    python tools/record_jax_qr.py        # with JAX 0.10.2 (x64 off) installed

The matrices come from NumPy's default_rng(0); the values are stored as
float32 bit patterns (hex), real and imaginary parts.
"""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "jax_qr_single.json")
SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 4), (1, 1), (6, 2)]


def _bits(x):
    x = np.asarray(x)
    parts = [x.real, x.imag] if np.iscomplexobj(x) else [x]
    return [np.ascontiguousarray(p, np.float32).view(np.uint32).ravel().tolist() for p in parts]


def main():
    rng = np.random.default_rng(0)
    cases = []
    for shape in SHAPES:
        for dtype in ("float32", "complex64"):
            a = rng.normal(size=shape).astype(np.float32)
            if dtype == "complex64":
                a = (a + 1j * rng.normal(size=shape).astype(np.float32)).astype(np.complex64)
            for mode in ("reduced", "complete"):
                q, r = jnp.linalg.qr(a, mode=mode)
                cases.append({"shape": list(shape), "dtype": dtype, "mode": mode,
                              "a": _bits(a), "q": _bits(q), "q_shape": list(q.shape),
                              "r": _bits(r), "r_shape": list(r.shape)})
    with open(OUT, "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": cases}, fh)
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
