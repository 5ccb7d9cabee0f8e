"""Large draws are JAX's numbers bit for bit: 100_000 samples from one key
(far beyond kernels/prng.py's EXACT_SAMPLES), replayed against
tests/data/prng_large_reference.json, which tools/gen_prng_large_reference.py
recorded once with real JAX 0.10.2 (see the file's "note": both stream
layouts, float32 and float64; a SHA-256 of the bits and three slices).

Bits are compared, not values: the samplers compute XLA's CPU functions exactly
(fungrad/lax/xla_cpu_numba.py's compiled kernels, the NumPy emulation's
algorithm). numba is imported unconditionally: CI installs it (./run-tests),
and without it large draws are only within ulps of JAX's, so these tests must
fail rather than skip.
"""
import hashlib
import json
import os

import numba  # noqa: F401  (required: see the module docstring)
import numpy as np
import pytest

import fungrad
import fungrad.random as random
from tests.test_random_jax_reference import config_as  # noqa: F401  (a fixture)

_DATA = os.path.join(os.path.dirname(__file__), "data", "prng_large_reference.json")
with open(_DATA) as _f:
    REFERENCE = json.load(_f)
_BITS = {"float32": np.uint32, "float64": np.uint64}


def _draw(case, jit=False):
    fn = getattr(random, case["fn"])

    def draw(key):
        return fn(key, *case["args"], shape=(REFERENCE["size"],), dtype=case["dtype"],
                  **case["kwargs"])
    key = random.PRNGKey(REFERENCE["seed"])
    return np.asarray(fungrad.jit(draw)(key) if jit else draw(key))


def _case_id(case):
    layout = "partitionable" if case["partitionable"] else "original"
    return f"{case['name']}-{case['dtype']}-{layout}"


def _assert_jax_bits(values, case):
    bits = values.view(_BITS[case["dtype"]])
    for start, words in case["slices"].items():
        start = int(start)
        got = [f"{int(w):x}" for w in bits[start:start + len(words)]]
        assert got == words, f"samples {start}..: got {got}, JAX {words}"
    digest = hashlib.sha256(bits.astype(bits.dtype.newbyteorder("<")).tobytes()).hexdigest()
    assert digest == case["sha256"], "the slices match but some other sample differs"


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
def test_large_draws_are_jax_bit_for_bit(case, config_as):  # noqa: F811
    config_as(True, case["partitionable"])
    _assert_jax_bits(_draw(case), case)


@pytest.mark.parametrize("case", [c for c in REFERENCE["cases"] if c["partitionable"]
                                  and c["name"] in ("normal", "truncated_normal", "gamma")],
                         ids=_case_id)
def test_large_draws_are_jax_bit_for_bit_under_jit(case, config_as):  # noqa: F811
    config_as(True, case["partitionable"])
    _assert_jax_bits(_draw(case, jit=True), case)
