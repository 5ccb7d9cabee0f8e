"""The compiled backend on the PRNG primitives (``threefry2x32``,
``random_sample``, the XLA arithmetic of the samplers): they compile, inside
loops too (a sampler's loop, numpyro's NUTS), with the NumPy backend's
results: the same words and the same floats, bit for bit, in both of JAX's
stream layouts.  Skipped only without numba.

Cost: each compiled program takes numba a second or two, so each test
compiles one program and feeds it several hypothesis-drawn inputs.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

numba = pytest.importorskip("numba")

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
import fungrad.random as random  # noqa: E402
from fungrad import lax  # noqa: E402
# (compiled in memory: the fixture applies here too)
from tests.test_numba_fusion import _in_memory, numba_jit  # noqa: E402,F401


_COMPILED = {}


def _compiled(f):
    """One compiled program per function for all of a test's examples."""
    if f not in _COMPILED:
        _COMPILED[f] = numba_jit(f)
    return _COMPILED[f]


def _same_bits(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    assert got.tobytes() == want.tobytes(), (what, got, want)


def _draws(key):
    """Every transform and width the compiled kernels take, odd sizes (the
    original layout's padded block), 0-d draws, and keys split in the program."""
    k1, k2 = random.split(key)
    return (random.normal(k1, (7,)), random.normal(k2, ()), random.uniform(k1, (2, 3)),
            random.uniform(k2, (5,), np.float32), random.normal(k1, (3,), np.float32),
            random.bits(k2, (5,), np.uint32), random.bits(k1, (4,), np.uint64),
            random.uniform(k1, (3,), minval=-2.0, maxval=3.0), random.split(k2, 3),
            random.fold_in(k1, 7))


_seeds = st.integers(0, 2**32 - 1)


@pytest.mark.parametrize("partitionable", [True, False])
@settings(max_examples=3)
@given(seeds=st.lists(_seeds, min_size=1, max_size=3))
def test_samplers_compile_to_the_numpy_backends_bits(partitionable, seeds):
    saved = fungrad.config.read("jax_threefry_partitionable")
    fungrad.config.update("jax_threefry_partitionable", partitionable)
    try:
        compiled = _compiled(_draws)
        for seed in seeds:
            key = random.PRNGKey(seed)
            for k, (g, w) in enumerate(zip(compiled(key), fungrad.jit(_draws)(key))):
                _same_bits(g, w, f"draw {k}, seed {seed}, partitionable={partitionable}")
        source = compiled.lower(random.PRNGKey(0)).source()
        assert "sample64(" in source and "sample32(" in source
        assert "threefry" in source and "# NumPy" not in source, source
    finally:
        fungrad.config.update("jax_threefry_partitionable", saved)


def _walk(key, x):
    """A loop drawing a fresh key, a normal step and a uniform test per
    iteration: a sampler's loop in miniature."""
    def body(i, carry):
        key, x, accepted = carry
        key, k_step, k_test = random.split(key, 3)
        proposal = x + 0.3 * random.normal(k_step, x.shape)
        accept = random.uniform(k_test) < fnp.exp(-fnp.sum(proposal**2) + fnp.sum(x**2))
        return key, fnp.where(accept, proposal, x), accepted + accept.astype(np.int64)
    return lax.fori_loop(0, 25, body, (key, x, 0))


@settings(max_examples=4)
@given(seed=_seeds)
def test_a_sampling_loop_compiles_natively(seed):
    key, x = random.PRNGKey(seed), np.linspace(-1.0, 1.0, 4)
    for k, (g, w) in enumerate(zip(_compiled(_walk)(key, x), fungrad.jit(_walk)(key, x))):
        _same_bits(g, w, f"output {k}")
    source = _compiled(_walk).lower(key, x).source()
    assert source.count("@numba.njit") == 1 and "for " in source, source


def test_vmap_over_keys_compiles():
    def draw(key):
        return random.normal(key, (3,)) + random.uniform(key, (3,), np.float64)
    keys = random.split(random.PRNGKey(4), 5)
    f = fungrad.vmap(draw)
    _same_bits(numba_jit(f)(keys), fungrad.jit(f)(keys), "vmap")


def test_short_loop_logs_compile_to_jax_bits():
    """float32 dirichlet/gamma draws whose logs XLA computes partly with the C
    library's logf (short loops: tests/test_random_small_float32.py, vmapped
    over keys too) compile (``random_loop_log``'s rule) and give the bits
    recorded from JAX."""
    from tests.test_random_small_float32 import CASES, _check, _draw
    saved = {n: fungrad.config.read(n) for n in ("jax_enable_x64", "jax_threefry_partitionable")}
    fungrad.config.update("jax_enable_x64", False)
    fungrad.config.update("jax_threefry_partitionable", True)
    try:
        for fn, size, batch, keys in (("dirichlet", 3, [2], []), ("gamma", 6, None, []),
                                      ("dirichlet", 3, [2], [2])):
            entry = next(e for e in CASES if e["case"][0] == fn and e["case"][4]
                         and len(e["case"][1][0]["array"]) == size
                         and e["case"][2].get("shape") == batch and e["case"][5:] == keys)
            compiled = numba_jit(lambda: _draw(entry))
            _check(np.asarray(compiled()), entry)
            source = compiled.lower().source()
            assert "loop_log_f32(" in source and "# NumPy" not in source, source
    finally:
        for name, value in saved.items():
            fungrad.config.update(name, value)
