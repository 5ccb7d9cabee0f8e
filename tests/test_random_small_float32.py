"""float32 gamma-family draws of 1-16 values in all, and rows of 8-300 values
(``ball``, ``dirichlet``: XLA's row sums), bit for bit against JAX.

The vectors (tests/data/prng_small_float32.json) were recorded once with JAX
0.10.2 by tools/gen_prng_small_float32.py. They exercise XLA's short loops: a
lone float32 ``log`` over fewer than 16 elements computes some of them with the
C library's ``logf`` (see that tool's docstring and
fungrad/random/_gamma.py's ``_short_loop_log``), vmapped over keys too.
"""
import json
import os
import platform

import numpy as np
import pytest

import fungrad
import fungrad.random as random

with open(os.path.join(os.path.dirname(__file__), "data", "prng_small_float32.json")) as _f:
    _DATA = json.load(_f)
CASES = _DATA["cases"]
# Bit for bit with the C library the vectors were recorded with (glibc 2.36);
# another C library's logf may round a value the other way: an ulp apart
SAME_LIBC = list(platform.libc_ver()) == _DATA["libc"]


def _decode(value):
    return np.asarray(value["array"], value["dtype"]) if isinstance(value, dict) else value


def _case_id(entry):
    fn, args, kwargs, seed, partitionable, *keys = entry["case"]
    size = len(args[0]["array"]) if isinstance(args[0], dict) else args[0] if fn == "ball" \
        else args[2][0]
    vmapped = f"-vmap{keys[0]}" if keys else ""
    return (f"{fn}-k{size}-{kwargs.get('shape', '')}-s{seed}-{'part' if partitionable else 'orig'}"
            f"{vmapped}")


@pytest.fixture
def float32_config():
    saved = {n: fungrad.config.read(n) for n in ("jax_enable_x64", "jax_threefry_partitionable")}
    fungrad.config.update("jax_enable_x64", False)
    yield lambda partitionable: fungrad.config.update("jax_threefry_partitionable", partitionable)
    for name, value in saved.items():
        fungrad.config.update(name, value)


def _check(got, entry):
    want = entry["out"]
    assert got.dtype.name == want["dtype"] and list(got.shape) == want["shape"]
    bits = np.asarray(want["bits"], np.uint32)
    if SAME_LIBC:
        np.testing.assert_array_equal(got.view(np.uint32).reshape(-1), bits)
    else:
        np.testing.assert_array_max_ulp(got.reshape(-1), bits.view(np.float32), maxulp=1)


def _draw(entry):
    """The case's draw; vmapped over keys split from the seed if it says so
    (JAX's batched loop: the short loops' positions are over all keys' draws)."""
    fn, args, kwargs, seed, _, *keys = entry["case"]

    def sample(key):
        return getattr(random, fn)(key, *map(_decode, args), **kwargs)
    if not keys:
        return sample(random.PRNGKey(seed))
    return fungrad.vmap(sample)(random.split(random.PRNGKey(seed), keys[0]))


@pytest.mark.parametrize("entry", CASES, ids=_case_id)
def test_matches_jax_bit_for_bit(entry, float32_config):
    float32_config(entry["case"][4])
    _check(np.asarray(_draw(entry)), entry)


@pytest.mark.parametrize("entry", [e for e in CASES if e["case"][0] == "dirichlet"
                                   and e["case"][3] == 0][::3], ids=_case_id)
def test_matches_jax_under_jit(entry, float32_config):
    float32_config(entry["case"][4])
    _check(np.asarray(fungrad.jit(lambda: _draw(entry))()), entry)
