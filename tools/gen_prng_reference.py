"""Write tests/data/prng_reference.json: JAX's random streams, recorded once.

Run with a real JAX (0.10.2 was used): ``python tools/gen_prng_reference.py``.
fungrad's tests (tests/test_random_jax_reference.py) replay every case with
fungrad.random and compare: integers and booleans exactly, floats within a few
ulps where a transcendental (log, erf_inv, ...) lies between the bits and the
value.  A case is ``[fn, args, kwargs]``; arrays are written ``{"array": list,
"dtype": name}``, keys are ``PRNGKey(seed)``.  Every case is recorded four
times: jax_enable_x64 on/off times jax_threefry_partitionable on/off.
"""
import json
import math
import os
import sys
import warnings

import numpy as np

import jax
import jax.numpy as jnp

warnings.simplefilter("ignore")


def A(values, dtype):
    return {"array": values, "dtype": dtype}


# [fn, args after the key, kwargs]; small shapes, several dtypes
CASES = [
    ["split", [], {}], ["split", [3], {}], ["split", [(2, 3)], {}],
    ["fold_in", [0], {}], ["fold_in", [1], {}], ["fold_in", [123456789], {}],
    ["fold_in", [2**32 - 1], {}],
    ["bits", [(5,)], {"dtype": "uint32"}], ["bits", [(2, 3)], {"dtype": "uint64"}],
    ["bits", [(5,)], {"dtype": "uint8"}], ["bits", [(3,)], {"dtype": "uint16"}],
    ["bits", [()], {"dtype": "uint32"}],
    ["uniform", [(7,)], {}], ["uniform", [(2, 3)], {"dtype": "float32"}],
    ["uniform", [(5,)], {"dtype": "float16"}],
    ["uniform", [(5,)], {"minval": -2.0, "maxval": 3.0}],
    ["uniform", [(3,)], {"minval": A([0.0, 1.0, 2.0], "float64"), "maxval": 5.0}],
    ["normal", [(7,)], {}], ["normal", [(2, 3)], {"dtype": "float32"}],
    ["normal", [(4,)], {"dtype": "complex128"}], ["normal", [()], {}],
    ["truncated_normal", [-1.0, 2.0, (6,)], {}],
    ["truncated_normal", [-3.0, -2.0, (4,)], {"dtype": "float32"}],
    ["bernoulli", [0.3, (8,)], {}], ["bernoulli", [A([0.1, 0.5, 0.9], "float32")], {}],
    ["bernoulli", [], {"shape": (6,)}],
    ["categorical", [A([0.1, 2.0, -1.0, 0.5], "float64")], {"shape": (6,)}],
    ["categorical", [A([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], "float32")], {}],
    ["categorical", [A([[0.0, 1.0], [2.0, 1.0], [0.3, 0.3]], "float64")], {"axis": 0}],
    ["randint", [(6,), 0, 10], {}], ["randint", [(5,), -5, 5], {"dtype": "int32"}],
    ["randint", [(4,), 0, 256], {"dtype": "uint8"}],
    ["randint", [(3,), -2**40, 2**40], {}],
    ["permutation", [10], {}], ["permutation", [A([[1, 2], [3, 4], [5, 6]], "int32")], {}],
    ["permutation", [A([[1, 2, 3], [4, 5, 6]], "int32")], {"axis": 1, "independent": True}],
    ["choice", [10, (4,)], {}], ["choice", [10, (4,)], {"replace": False}],
    ["choice", [5, (6,)], {"p": A([0.1, 0.2, 0.3, 0.2, 0.2], "float64")}],
    ["choice", [5, (3,)], {"replace": False, "p": A([0.1, 0.2, 0.3, 0.2, 0.2], "float64")}],
    ["gumbel", [(5,)], {}], ["exponential", [(5,)], {}], ["laplace", [(5,)], {}],
    ["logistic", [(5,)], {}], ["cauchy", [(5,)], {}],
    ["rademacher", [(6,)], {"dtype": "int32"}], ["maxwell", [(3,)], {}],
    ["double_sided_maxwell", [0.5, 2.0, (3,)], {}],
    ["pareto", [3.0, (4,)], {}], ["rayleigh", [2.0, (4,)], {}],
    ["weibull_min", [2.0, 1.5, (4,)], {}], ["lognormal", [0.5, (4,)], {}],
    ["geometric", [0.3, (5,)], {}], ["triangular", [0.0, 0.3, 1.0, (5,)], {}],
    ["wald", [1.5, (4,)], {}],
    ["multivariate_normal", [A([1.0, -1.0], "float64"), A([[2.0, 0.5], [0.5, 1.0]], "float64"), (3,)], {}],
    ["orthogonal", [3], {}],
    ["gamma", [A([0.5, 1.0, 3.0, 20.0], "float64")], {}], ["gamma", [2.0, (3,)], {"dtype": "float32"}],
    ["loggamma", [A([0.01, 0.5, 3.0], "float64")], {}],
    ["beta", [2.0, 3.0, (4,)], {}], ["dirichlet", [A([0.5, 1.0, 2.0], "float64")], {"shape": (2,)}],
    ["t", [4.0, (4,)], {}], ["chisquare", [3.0, (4,)], {}], ["f", [3.0, 5.0, (3,)], {}],
    ["generalized_normal", [1.5, (4,)], {}], ["ball", [3], {"shape": (2,)}],
    ["poisson", [3.0, (6,)], {}], ["poisson", [A([0.5, 25.0, 100.0], "float64")], {}],
    ["binomial", [10.0, 0.3, (4,)], {}], ["binomial", [200.0, 0.4, (3,)], {}],
    ["multinomial", [10.0, A([0.2, 0.3, 0.5], "float64")], {}],
    ["bernoulli", [A([1e-9, 0.5], "float64")], {"mode": "high"}],
    ["gumbel", [(4,)], {"mode": "high"}],
    ["categorical", [A([[0.0, 1.0, 2.0, 0.5], [2.0, 1.0, 0.0, 0.1]], "float64")],
     {"shape": (3, 2), "replace": False}],
    ["choice", [A([[1, 2, 3], [4, 5, 6]], "int32"), (2,)], {"axis": 1}],
    ["randint", [(2, 3), A([0, 10, 100], "int32"), A([5, 20, 90], "int32")], {}],
    ["uniform", [(2, 2)], {"dtype": "float32", "minval": A([[-1.0], [2.0]], "float32"), "maxval": 7.5}],
]
SEEDS = [0, 1, 42, -1, 2**31, 2**32 + 5, 2**63 - 1, -2**63, 2**64, -2**63 - 1]


def decode(value):
    if isinstance(value, dict):
        return jnp.asarray(np.asarray(value["array"], value["dtype"]))
    if isinstance(value, list):
        return tuple(value)
    return value


def encode(out):
    out = np.asarray(out)
    if out.dtype.kind == "c":
        return {"dtype": out.dtype.name, "shape": list(out.shape),
                "real": out.real.ravel().tolist(), "imag": out.imag.ravel().tolist()}
    return {"dtype": out.dtype.name, "shape": list(out.shape), "values": out.ravel().tolist()}


def run_case(fn, args, kwargs, seed):
    key = jax.random.PRNGKey(seed)
    args = [decode(a) for a in args]
    kwargs = {k: decode(v) for k, v in kwargs.items()}
    return encode(getattr(jax.random, fn)(key, *args, **kwargs))


def record():
    out = {"jax_version": jax.__version__, "seeds": [], "cases": []}
    for x64 in (True, False):
        jax.config.update("jax_enable_x64", x64)
        for seed in SEEDS:
            try:
                words = np.asarray(jax.random.PRNGKey(seed)).tolist()
            except Exception as e:       # recorded: fungrad must raise the same type
                words = type(e).__name__
            out["seeds"].append({"x64": x64, "seed": str(seed), "key": words})
        for part in (True, False):
            jax.config.update("jax_threefry_partitionable", part)
            for fn, args, kwargs in CASES:
                for seed in (0, 7):
                    try:
                        result = run_case(fn, args, kwargs, seed)
                    except Exception as e:     # fungrad must raise the same type
                        result = {"error": type(e).__name__}
                    out["cases"].append({"x64": x64, "partitionable": part, "seed": seed,
                                         "fn": fn, "args": args, "kwargs": kwargs, "out": result})
    return out


if __name__ == "__main__":
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "prng_reference.json")
    data = record()
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print(len(data["cases"]), "cases,", os.path.getsize(path), "bytes ->", path)
