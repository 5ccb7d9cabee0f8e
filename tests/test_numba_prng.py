"""The compiled backend on what samplers' loops are made of (numpyro's NUTS):
the PRNG primitives (``threefry2x32``, ``random_sample``), integer shifts,
``population_count`` and ``logistic`` compile, inside loops too, with the
NumPy backend's results: the same words and the same floats, bit for bit,
in both of JAX's stream layouts.  Skipped only without numba.

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
from fungrad.core import ShapedArray  # noqa: E402


@pytest.fixture(autouse=True)
def _in_memory(monkeypatch):
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")


def numba_jit(f):
    return fungrad.jit(f, backend="numba")


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


_INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", _INT_DTYPES)
@settings(max_examples=3)
@given(data=st.data())
def test_shifts_and_population_count_as_numpy(dtype, data):
    """Shift amounts of the bit width or more (undefined in LLVM), negative
    amounts and operands: the NumPy backend's results, exactly."""
    info, width = np.iinfo(dtype), 8 * np.dtype(dtype).itemsize
    values = st.integers(int(info.min), int(info.max))
    x = np.array(data.draw(st.lists(values, min_size=6, max_size=6)) + [info.min, info.max],
                 dtype)
    amounts = st.integers(int(info.min), int(info.max)) if info.min < 0 else st.integers(
        0, 2 * width)
    y = np.array(data.draw(st.lists(amounts, min_size=5, max_size=5))
                 + [0, width - 1, width], dtype)

    def f(a, b):
        return (lax.shift_left(a, b), lax.shift_right_logical(a, b),
                lax.shift_right_arithmetic(a, b), lax.population_count(a ^ b))
    for k, (g, w) in enumerate(zip(numba_jit(f)(x, y), fungrad.jit(f)(x, y))):
        _same_bits(g, w, f"{np.dtype(dtype).name} output {k}")
    assert "# NumPy" not in numba_jit(f).lower(x, y).source()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logistic_compiles_within_ulps(dtype):
    x = np.concatenate([np.linspace(-800, 800, 41),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -30.5]]).astype(dtype)

    def f(a):
        return lax.logistic(a) * 2 + lax.logistic(-a)
    got, want = np.asarray(numba_jit(f)(x)), np.asarray(fungrad.jit(f)(x))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    assert "# NumPy" not in numba_jit(f).lower(x).source()


def test_integer_pow_lowering_under_a_trace_stays_text():
    """The rule compares the exponent with Python's ``abs``, not lax.abs (its
    module's ``abs``), which under an active trace made a tracer and failed
    the compiled backend's whole loop over to NumPy (numpyro's NUTS)."""
    lowering = lax.integer_pow_p.numba_lowering
    scalar = ShapedArray((), np.float64)
    texts = []

    def traced(x):
        texts.append(lowering(["x"], [scalar], [scalar], y=-3))
        return x
    fungrad.make_jaxpr(traced)(1.0)
    assert texts == ["(np.float64(1) / (x * (x * x)))"]
