"""Write tests/data/prng_large_reference.json: JAX's samples for draws of
100_000 samples from one key, far more than fungrad's EXACT_SAMPLES (4096), to
check that large draws are JAX's numbers bit for bit too (with numba).

Run with a real JAX (0.10.2 was used), on the CPU the other references were
recorded on (AMD EPYC, Zen 4: float32 gamma goes through the CPU's rsqrt
estimate): ``python tools/gen_prng_large_reference.py``. Every case is drawn
with jax_enable_x64 on, in float32 and float64, under both
jax_threefry_partitionable settings, from ``PRNGKey(SEED)``. A draw is stored
compactly: the SHA-256 of its bits (the array's little-endian bytes) and three
slices of 8 values as hex bits (the start, the middle, the end), so that a
mismatch shows where it starts. tests/test_random_large_draws.py replays them.
"""
import hashlib
import json
import os

import numpy as np

import jax
import jax.random as jr

jax.config.update("jax_enable_x64", True)

SEED, SIZE = 20261204, 100_000
# name: (jax.random function, args after the key, kwargs besides shape/dtype)
CASES = {
    "normal": ("normal", [], {}),
    "uniform": ("uniform", [], {}),
    "uniform_bounded": ("uniform", [], {"minval": -2.0, "maxval": 3.0}),
    "truncated_normal": ("truncated_normal", [-1.5, 2.5], {}),
    "truncated_normal_initializer": ("truncated_normal", [-2.0, 2.0], {}),  # flax's, haiku's
    "exponential": ("exponential", [], {}),
    "gumbel": ("gumbel", [], {}),
    "laplace": ("laplace", [], {}),
    "cauchy": ("cauchy", [], {}),
    "gamma": ("gamma", [2.5], {}),
    "gamma_small_shape": ("gamma", [0.3], {}),
}
SLICES = (0, SIZE // 2, SIZE - 8)


def bits(values):
    values = np.asarray(values)
    return values.view({4: np.uint32, 8: np.uint64}[values.dtype.itemsize])


def record(fn_name, args, kwargs, dtype):
    fn = getattr(jr, fn_name)
    values = np.asarray(fn(jr.PRNGKey(SEED), *args, shape=(SIZE,), dtype=dtype, **kwargs))
    word_bits = bits(values)
    return {"sha256": hashlib.sha256(word_bits.astype(word_bits.dtype.newbyteorder("<"))
                                      .tobytes()).hexdigest(),
            "slices": {str(s): [f"{int(w):x}" for w in word_bits[s:s + 8]] for s in SLICES}}


def main():
    cases = []
    for partitionable in (True, False):
        jax.config.update("jax_threefry_partitionable", partitionable)
        for name, (fn_name, args, kwargs) in CASES.items():
            for dtype in ("float32", "float64"):
                cases.append({"name": name, "fn": fn_name, "args": args, "kwargs": kwargs,
                              "dtype": dtype, "partitionable": partitionable,
                              **record(fn_name, args, kwargs, dtype)})
                print(name, dtype, partitionable, flush=True)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                        "prng_large_reference.json")
    write(path, {"jax_version": jax.__version__, "seed": SEED, "size": SIZE,
                 "note": __doc__.split("\n\n")[1].replace("\n", " ")}, cases)


def write(path, header, cases):
    """The JSON file, one case a line."""
    with open(path, "w") as fh:
        fh.write(json.dumps(header)[:-1] + ', "cases": [\n')
        fh.write(",\n".join(json.dumps(case) for case in cases) + "\n]}\n")


if __name__ == "__main__":
    main()
