"""fungrad.lax.xla_cpu_numba: XLA's CPU functions compiled with numba give the
NumPy emulation's numbers (fungrad/lax/kernels/xla_cpu_math.py) bit for bit.

This is one of the few places where ``==`` on floats is right: the compiled
kernels run the same algorithm as the emulation (same constants, same
operations in the same order, a fused multiply-add exactly where the
emulation has one, the same C library calls), so every result must have the
same bits; a difference of one ulp is a bug. NaNs compare equal to any NaN
(their sign and payload are not part of the contract).

numba is imported unconditionally: CI installs it (./run-tests: the ``numba``
extra), and without it these tests must fail, not skip, since large draws
would silently lose their exactness.
"""
import math
import subprocess
import sys
from fractions import Fraction

import numba  # noqa: F401  (required: see the module docstring)
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.random as random
from fungrad.lax import xla_cpu_numba
from fungrad.lax.kernels import prng as prng_kernel
from fungrad.lax.kernels import xla_cpu_math
from tests.test_random_jax_reference import config_as  # noqa: F401  (a fixture)

KERNELS = xla_cpu_numba.load()
_BITS = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    as_bits = np.dtype(f"u{got.dtype.itemsize}")
    same = got.view(as_bits) == want.view(as_bits)
    if got.dtype.kind == "f":
        same |= np.isnan(got) & np.isnan(want)
    assert same.all(), (f"{(~same).sum()} of {same.size} differ; first at "
                        f"{np.flatnonzero(~same)[:5]}: got {got[~same][:5]}, "
                        f"want {want[~same][:5]}")


def emulated(fn, *arrays):
    saved, xla_cpu_math.COMPILED[0] = xla_cpu_math.COMPILED[0], None
    try:
        with np.errstate(all="ignore"):
            return fn(*arrays)
    finally:
        xla_cpu_math.COMPILED[0] = saved


def edge_values(dtype):
    info = np.finfo(dtype)
    one_minus = np.nextafter(dtype(1), dtype(0))
    values = [0.0, -0.0, 1.0, -1.0, one_minus, -one_minus, info.tiny, -info.tiny,
              info.smallest_subnormal, -info.smallest_subnormal, info.tiny / 3, info.max,
              -info.max, np.inf, -np.inf, np.nan, 0.41421356, -0.41421356, 0.5, 2.0, 5.0,
              6.25, 16.0, 88.7, -87.7, 709.7, -745.1, 3.8325, -3.8325]
    return np.array(values, dtype)


def inputs(name, dtype, size):
    """Random inputs over the function's working ranges, the tails of erf_inv
    near +-1, wide magnitudes, and the edge cases."""
    rng = np.random.default_rng(abs(hash((name, np.dtype(dtype).name))) % 2**32)
    digits = 7 if dtype == np.float32 else 16
    quarter = size // 4
    near_one = 1 - 10.0 ** -rng.uniform(0, digits, quarter)
    top = 38 if dtype == np.float32 else 300
    wide = np.exp(rng.uniform(-top, top, quarter) * math.log(10)) * rng.choice([-1, 1], quarter)
    parts = [rng.uniform(-1, 1, quarter), near_one * rng.choice([-1, 1], quarter),
             rng.standard_normal(quarter) * {"exp": 40, "tan": 10}.get(name, 3), wide]
    with np.errstate(all="ignore"):
        x = np.concatenate(parts).astype(dtype)
    return np.concatenate([x, edge_values(dtype)])


UNARY = {"log": xla_cpu_math.log, "log1p": xla_cpu_math.log1p, "exp": xla_cpu_math.exp,
         "erf": xla_cpu_math.erf, "erf_inv": xla_cpu_math.erf_inv,
         "rsqrt": xla_cpu_math.rsqrt, "tan": xla_cpu_math.tan,
         "normal": xla_cpu_math.normal_from_signed}
# elements per function: millions where the emulation is quick enough; the C
# library's tan and pow go through ctypes one element at a time in the emulation
SIZES = {"tan": 1 << 17, "log": 1 << 20, "erf": 1 << 18}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_kernels_match_the_emulation_on_large_arrays(name, dtype):
    x = inputs(name, dtype, SIZES.get(name, 1 << 21))
    assert_same_bits(KERNELS.call(name, x), emulated(UNARY[name], x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_pow_matches_the_emulation(dtype):
    rng = np.random.default_rng(7)
    base = np.concatenate([rng.exponential(2, 1 << 16), edge_values(dtype)])
    exponent = np.concatenate([rng.uniform(-3, 3, 1 << 16), rng.permutation(edge_values(dtype))])
    base, exponent = base.astype(dtype), exponent.astype(dtype)
    assert_same_bits(KERNELS.call("pow", base, exponent),
                     emulated(xla_cpu_math.power, base, exponent))


def _floats(dtype):
    return st.floats(width=32 if dtype == np.float32 else 64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_kernels_match_the_emulation_on_any_floats(name, dtype, data):
    x = data.draw(hnp.arrays(dtype, st.integers(1, 40), elements=_floats(dtype)))
    assert_same_bits(KERNELS.call(name, x), emulated(UNARY[name], x))


# the range where the emulation's fma is exact (its docstring): no overflow,
# no product near float64's subnormals; the compiled one (LLVM's fma) is exact
# everywhere, so there it is checked against exact rationals instead
_MODERATE = {np.float32: st.floats(-1e6, 1e6, width=32, allow_subnormal=False),
             np.float64: st.floats(-1e6, 1e6, allow_subnormal=False)}


def _round_to(value, dtype):
    """The float of ``dtype`` nearest the Fraction ``value``, ties to even."""
    near = dtype(float(value))
    candidates = [np.nextafter(near, dtype(-np.inf)), near, np.nextafter(near, dtype(np.inf))]
    errors = [abs(Fraction(float(v)) - value) for v in candidates]
    ties = [v for v, e in zip(candidates, errors) if e == min(errors)]
    return min(ties, key=lambda v: int(np.array(v).view(_BITS[np.dtype(dtype)])) & 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@given(data=st.data())
def test_fma_rounds_once_and_matches_the_emulation(dtype, data):
    triples = data.draw(st.lists(st.tuples(*[_MODERATE[dtype]] * 3), min_size=1, max_size=30))
    a, b, c = (np.array(column, dtype) for column in zip(*triples))
    got = KERNELS.call("fma", a, b, c)
    exact = [_round_to(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dtype)
             for x, y, z in zip(a, b, c)]
    assert_same_bits(got, np.array(exact, dtype))
    assert_same_bits(got, emulated(xla_cpu_math.fma, a, b, c))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_fma_matches_the_emulation_on_large_arrays(dtype):
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(1 << 20).astype(dtype) * s for s in (1, 1e3, 1e-3))
    c[::7] = -a[::7] * b[::7]                  # cancellations, exact zeros of both signs
    assert_same_bits(KERNELS.call("fma", a, b, c), emulated(xla_cpu_math.fma, a, b, c))


def test_float64_erf_inv_passes_handle_every_branch():
    # the vectorised passes redo elements: near +-1 (the C library's log, the
    # second and third polynomials), exactly +-1, nan; in blocks of any length
    for size in (1, 2047, 2048, 2049, 5000):
        x = inputs("erf_inv", np.float64, size)[:size]
        assert_same_bits(KERNELS.call("erf_inv", x), emulated(xla_cpu_math.erf_inv, x))


# ----------------------------------------------------------------------------
# the policy: kernels/prng.py's exact_draw
# ----------------------------------------------------------------------------

def _emulated_normals(key, shape, dtype):
    signed = prng_kernel.sample(key, shape, dtype, "signed")
    return emulated(xla_cpu_math.normal_from_signed, signed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_large_draws_are_exact_eagerly_under_jit_and_vmap(dtype, config_as):  # noqa: F811
    config_as(True, True)
    shape = (prng_kernel.EXACT_SAMPLES + 5,)
    keys = random.split(random.PRNGKey(11), 3)
    want = [_emulated_normals(np.asarray(k), shape, dtype) for k in keys]
    draw = lambda k: random.normal(k, shape, dtype)       # noqa: E731
    assert_same_bits(draw(keys[0]), want[0])
    assert_same_bits(fungrad.jit(draw)(keys[1]), want[1])
    assert_same_bits(fungrad.vmap(draw)(keys), np.stack(want))
    assert_same_bits(fungrad.jit(fungrad.vmap(draw))(keys), np.stack(want))


def test_large_draws_of_other_samplers_use_xla_functions(config_as):  # noqa: F811
    config_as(True, True)
    key, n = random.PRNGKey(5), prng_kernel.EXACT_SAMPLES + 1
    u = random.uniform(key, (n,), np.float64, minval=np.finfo(np.float64).tiny)
    got = fungrad.jit(lambda k: random.gumbel(k, (n,), np.float64))(key)
    want = -emulated(xla_cpu_math.log, -emulated(xla_cpu_math.log, np.asarray(u)))
    assert_same_bits(got, want)


def test_small_draws_do_not_import_numba():
    # (4096 per key, also under vmap over two keys: 8192 in all)
    code = ("import sys, fungrad, fungrad.random as r\n"
            "r.normal(r.PRNGKey(0), (4096,)); r.gamma(r.PRNGKey(1), 2.0, (4096,))\n"
            "fungrad.vmap(lambda k: r.normal(k, (4096,)))(r.split(r.PRNGKey(0)))\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_numba_large_draws_use_numpy(without_numba):
    assert prng_kernel.exact_draw(prng_kernel.EXACT_SAMPLES)
    assert not prng_kernel.exact_draw(prng_kernel.EXACT_SAMPLES + 1)
    # normals: ErfInvWriter's rational approximation, within ulps of XLA's
    key, shape = np.array([0, 42], np.uint32), (prng_kernel.EXACT_SAMPLES + 3,)
    fast = prng_kernel.sample(key, shape, np.float64, "normal")
    exact = _emulated_normals(key, shape, np.float64)
    assert not np.array_equal(fast, exact)
    np.testing.assert_allclose(fast, exact, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("partitionable", [True, False], ids=["partitionable", "original"])
@pytest.mark.parametrize("dtype, transform", [(np.uint32, "bits"), (np.uint64, "bits"),
                                              (np.float32, "normal"), (np.float64, "normal"),
                                              (np.float16, "unit")])
def test_compiled_threefry_gives_the_numpy_streams(dtype, transform, partitionable):
    # a large draw runs Threefry's rounds compiled; the NumPy rounds must agree
    key, shape = np.array([3, 99], np.uint32), (3 * prng_kernel.CHUNK + 7,)
    compiled = prng_kernel.sample(key, shape, dtype, transform, partitionable)
    numpy = emulated(prng_kernel.sample, key, shape, dtype, transform, partitionable)
    assert_same_bits(compiled, numpy)


def test_compiled_threefry_with_a_key_per_pair_is_the_numpy_one():
    rng = np.random.default_rng(5)
    k0, k1, x0, x1 = (rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32)
                      for _ in range(4))
    k1[:3] = 0xFFFFFFFF                          # sums that wrap
    compiled = prng_kernel.threefry2x32(k0, k1[:300, None], x0, x1)     # (broadcasting too)
    numpy = emulated(prng_kernel.threefry2x32, k0, k1[:300, None], x0, x1)
    for got, want in zip(compiled, numpy):
        assert_same_bits(got, want)


@pytest.mark.parametrize("partitionable", [True, False], ids=["partitionable", "original"])
def test_compiled_threefry_of_many_short_streams(partitionable):
    # many keys with short streams share a tile, a row per key (gamma's per-sample keys)
    keys = np.random.default_rng(9).integers(0, 2**32, (700, 2), dtype=np.uint64).astype(np.uint32)
    for dtype, transform, shape in ((np.uint32, "bits", (33,)), (np.float64, "normal", (5,))):
        compiled = prng_kernel.sample(keys, shape, dtype, transform, partitionable)
        numpy = emulated(prng_kernel.sample, keys, shape, dtype, transform, partitionable)
        assert_same_bits(compiled, numpy)


def test_a_kernel_numba_cannot_compile_leaves_the_emulation(caplog):
    def failing(*args):
        raise numba.core.errors.TypingError("a kernel this numba cannot compile")
    broken = xla_cpu_numba.CompiledMath({"log_f64_array": failing}, lambda ok, name: None)
    saved, xla_cpu_math.COMPILED[0] = xla_cpu_math.COMPILED[0], broken
    try:
        x = np.linspace(0.1, 5.0, 1000)
        got = xla_cpu_math.log(x)
        assert xla_cpu_math.COMPILED[0] is None          # not tried again
    finally:
        xla_cpu_math.COMPILED[0] = saved
    assert "could not compile log_f64_array" in caplog.text
    assert_same_bits(got, emulated(xla_cpu_math.log, x))
