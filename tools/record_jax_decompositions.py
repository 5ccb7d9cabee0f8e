"""Record JAX's decompositions that jaxlib computes with LAPACK
(``jnp.linalg.eigh`` of Hermitian and ``jnp.linalg.svd`` of square, tall,
wide and batched float32 and complex64 matrices, full and reduced, and
singular values alone; ``lax.linalg.lu``, ``jnp.linalg.solve`` and
``jnp.linalg.inv`` in all four precisions) into
tests/data/jax_decompositions.json, for tests/test_decompositions_jax.py.
Run once with real JAX (this script imports jax; fungrad never does):

    python tools/record_jax_decompositions.py    # with JAX 0.10.2 installed

The matrices come from NumPy's default_rng(1) (eigh's: (b + b^H) / 2);
values are stored as bit patterns (uint32 words), real and imaginary parts.
"""
import json
import os

import jax.numpy as jnp
import jax
import numpy as np

from record_jax_qr import _bits

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "jax_decompositions.json")


def _words(x):
    """Any float or complex array as its uint32 words, real and imaginary parts."""
    x = np.asarray(x)
    parts = [x.real, x.imag] if np.iscomplexobj(x) else [x]
    return [np.ascontiguousarray(p).view(np.uint32).ravel().tolist() for p in parts]


def _matrix(rng, shape, dtype):
    a = rng.normal(size=shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.normal(size=shape)
    return a


def main():
    rng = np.random.default_rng(1)
    cases = []
    for dtype in ("float32", "complex64"):
        for shape in ((4, 4), (8, 8), (20, 20), (3, 5, 5)):
            a = _matrix(rng, shape, dtype)
            h = ((a + np.swapaxes(a.conj(), -1, -2)) / 2).astype(dtype)
            w, v = jnp.linalg.eigh(h)
            cases.append({"fn": "eigh", "shape": list(shape), "dtype": dtype, "a": _bits(h),
                          "outs": [_bits(v), _bits(w)],
                          "shapes": [list(v.shape), list(w.shape)]})
        for shape in ((4, 4), (6, 3), (3, 6), (2, 5, 4)):
            a = _matrix(rng, shape, dtype).astype(dtype)
            for full in (True, False):
                u, s, vh = jnp.linalg.svd(a, full_matrices=full)
                cases.append({"fn": "svd", "full_matrices": full, "shape": list(shape),
                              "dtype": dtype, "a": _bits(a), "outs": [_bits(u), _bits(s), _bits(vh)],
                              "shapes": [list(u.shape), list(s.shape), list(vh.shape)]})
            s = jnp.linalg.svd(a, compute_uv=False)
            cases.append({"fn": "svdvals", "shape": list(shape), "dtype": dtype, "a": _bits(a),
                          "outs": [_bits(s)], "shapes": [list(s.shape)]})
    jax.config.update("jax_enable_x64", True)
    for dtype in ("float32", "float64", "complex64", "complex128"):
        for shape in ((4, 4), (20, 20), (6, 4), (4, 6), (3, 5, 5)):
            a = _matrix(rng, shape, dtype).astype(dtype)
            lu, pivots, permutation = jax.lax.linalg.lu(a)
            cases.append({"fn": "lu", "shape": list(shape), "dtype": dtype, "a": _words(a),
                          "outs": [_words(lu), np.asarray(pivots).tolist(),
                                   np.asarray(permutation).tolist()]})
    for dtype in ("float32", "float64", "complex64", "complex128"):
        for shape, rhs in (((8, 8), (8,)), ((20, 20), (20, 3)), ((3, 6, 6), (3, 6, 2))):
            a, b = (_matrix(rng, s, dtype).astype(dtype) for s in (shape, rhs))
            cases.append({"fn": "solve", "shape": list(shape), "rhs": list(rhs), "dtype": dtype,
                          "a": _words(a), "b": _words(b),
                          "outs": [_words(jnp.linalg.solve(a, b))]})
            cases.append({"fn": "inv", "shape": list(shape), "dtype": dtype, "a": _words(a),
                          "outs": [_words(jnp.linalg.inv(a))]})
    with open(OUT, "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": cases}, fh)
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
