"""Write tests/data/prng_small_float32.json: JAX's float32 gamma-family draws
of 1-16 values in all, and ``ball``/``dirichlet`` rows of 8-300 values,
recorded once.

Run with a real JAX (0.10.2 was used, on the AMD Zen 4 CPU the other PRNG
vectors were recorded on): ``python tools/gen_prng_small_float32.py``.

Why these sizes: XLA's CPU loop of a lone float32 ``log`` (a fusion holding
nothing else) over n < 16 elements with n % 8 in {3, 5, 6, 7} computes its
last n % 8 elements with the C library's ``logf`` instead of XLA's polynomial.
In JAX's Marsaglia-Tsang loop the acceptance test's two logs are such loops,
and in ``dirichlet`` with a batch shape the logs of the final draws are too
(found in the optimised HLO: ``jax.jit(f).lower(key).compile().as_text()``).
XLA adds a row of up to 32 values from left to right, a longer one by windows
of 32 (its tree reduction rewrite: the ``reduce-window`` in the HLO).
tests/test_random_small_float32.py replays every case with fungrad.random and
compares bit for bit. A case is ``[fn, args, kwargs, seed, partitionable]``
(with a sixth entry ``keys``: vmapped over that many keys split from the seed);
arrays are written ``{"array": list, "dtype": name}``.
"""
import json
import os
import platform

import numpy as np

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", False)


def A(values):
    return {"array": [float(v) for v in values], "dtype": "float32"}


def decode(value):
    return jnp.asarray(value["array"], value["dtype"]) if isinstance(value, dict) else value


def alphas(k):
    return A(np.linspace(0.3, 2.5, k).astype(np.float32))


def cases():
    out = []
    for seed in range(4):
        for partitionable in (True, False):
            for k in range(1, 14):
                for batch in ((), (1,), (2,)):
                    if len(batch) and batch[0] * k > 16:
                        continue
                    out.append(["dirichlet", [alphas(k)], {"shape": batch}, seed, partitionable])
            for n in (3, 5, 6, 7, 11, 13, 14, 15):
                out.append(["gamma", [alphas(n)], {}, seed, partitionable])
                out.append(["loggamma", [alphas(n)], {}, seed, partitionable])
                out.append(["beta", [0.4, 1.7, (n,)], {"dtype": "float32"}, seed, partitionable])
            # rows XLA adds from left to right (NumPy's sum pairs from 8 values
            # on), longer ones by windows of 32
            for d in (8, 10, 20, 32, 33, 40, 100, 300):
                out.append(["ball", [d, 2, (3,)], {"dtype": "float32"}, seed, partitionable])
                out.append(["dirichlet", [alphas(d)], {"shape": ()}, seed, partitionable])
    # vmap over keys: JAX's batched loop runs over all keys' draws at once
    for seed in range(4):
        for keys in (2, 3):
            for k, batch in ((3, (2,)), (5, (1,)), (6, (1,)), (7, (2,)), (3, ())):
                out.append(["dirichlet", [alphas(k)], {"shape": batch}, seed, True, keys])
            for n in (3, 5, 6):
                out.append(["gamma", [alphas(n)], {}, seed, True, keys])
    return out


def draw(fn, args, kwargs, seed, keys):
    """The draw from PRNGKey(seed), or (keys > 0) vmapped over split(PRNGKey(seed), keys)."""
    def sample(key):
        return getattr(jax.random, fn)(key, *map(decode, args), **kwargs)
    if not keys:
        return sample(jax.random.PRNGKey(seed))
    return jax.vmap(sample)(jax.random.split(jax.random.PRNGKey(seed), keys))


def record(case):
    fn, args, kwargs, seed, partitionable, *keys = case
    jax.config.update("jax_threefry_partitionable", partitionable)
    value = np.asarray(draw(fn, args, kwargs, seed, keys[0] if keys else 0))
    return {"shape": list(value.shape), "dtype": value.dtype.name,
            "bits": value.view(np.uint32).reshape(-1).tolist()}


def main():
    recorded = [{"case": case, "out": record(case)} for case in cases()]
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                        "prng_small_float32.json")
    with open(path, "w") as f:
        json.dump({"jax_version": jax.__version__, "libc": list(platform.libc_ver()),
                   "cases": recorded}, f, separators=(",", ":"))
    print(f"{len(recorded)} cases -> {path}")


if __name__ == "__main__":
    main()
