"""fungrad.lax.kernels.xla_cpu_math: XLA's CPU arithmetic, bit for bit.

tests/data/xla_cpu_math_reference.json was written by
tools/gen_xla_cpu_math_reference.py with real JAX 0.10.2 (jax.jit of each
function alone, on an x86-64 CPU with FMA). Float32 results come from XLA's own
polynomials, which the kernels emulate with IEEE arithmetic alone: they must
match bit for bit. Float64 log and erf (and what passes through them: log1p
beyond sqrt(2) - 1, erf_inv) and tan are the C library's, which another
machine may round differently: within an ulp there; float64 exp is XLA's own:
exact.
"""
import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.random as random
from fungrad.lax.kernels import prng as prng_kernel
from fungrad.lax.kernels import xla_cpu_math

_DATA = os.path.join(os.path.dirname(__file__), "data", "xla_cpu_math_reference.json")
with open(_DATA) as _f:
    REFERENCE = json.load(_f)["cases"]

_BITS = {"float32": np.uint32, "float64": np.uint64}
# float64 functions that pass through the C library (see the module docstring)
_THROUGH_LIBM = {"log", "log1p", "erf", "erf_inv"}
_LIBM_IN_BOTH = {"tan"}           # the C library's in float32 too (tanf)


def _decode(words, dtype):
    return np.array([int(w, 16) for w in words], _BITS[dtype]).view(dtype)


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"{c['fn']}-{c['dtype']}")
def test_matches_xla(case):
    x, want = _decode(case["x"], case["dtype"]), _decode(case["y"], case["dtype"])
    with np.errstate(all="ignore"):
        got = getattr(xla_cpu_math, case["fn"])(x)
    assert got.dtype == want.dtype
    both_nan = np.isnan(got) & np.isnan(want)
    if (case["dtype"] == "float32" and case["fn"] not in _LIBM_IN_BOTH
            or case["fn"] not in _THROUGH_LIBM | _LIBM_IN_BOTH):
        same_bits = got.view(_BITS[case["dtype"]]) == want.view(_BITS[case["dtype"]])
        assert (same_bits | both_nan).all(), (x[~(same_bits | both_nan)], got[~same_bits])
    else:
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
        assert ulps.max(initial=0) <= 1


def test_float16_is_computed_in_float32():
    x = np.linspace(0.01, 3, 50).astype(np.float16)
    for name in ("log", "log1p", "exp", "erf"):
        got = getattr(xla_cpu_math, name)(x)
        assert got.dtype == np.float16
        want = getattr(xla_cpu_math, name)(x.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(got, want)


def _exact_fma(a, b, c):
    return Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))


_FLOATS64 = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
_FLOATS32 = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False, width=32)


@given(st.lists(st.tuples(_FLOATS64, _FLOATS64, _FLOATS64), min_size=1, max_size=20))
def test_fused_multiply_add_float64_rounds_once(triples):
    a, b, c = (np.array(column) for column in zip(*triples))
    want = [float(_exact_fma(*t)) for t in zip(a, b, c)]
    np.testing.assert_array_equal(xla_cpu_math.fma(a, b, c), want)
    # the Horner step's form, the factor split once
    split = (b, *xla_cpu_math._veltkamp(b))
    np.testing.assert_array_equal(xla_cpu_math._fma64_by(a, split, c), want)


@given(st.lists(st.tuples(_FLOATS32, _FLOATS32, _FLOATS32), min_size=1, max_size=20))
def test_fused_multiply_add_float32_rounds_once(triples):
    a, b, c = (np.array(column, np.float32) for column in zip(*triples))
    # float32(Fraction) rounds once: via float64 it might round twice
    want = np.array([_round_to_float32(_exact_fma(*t)) for t in zip(a, b, c)], np.float32)
    np.testing.assert_array_equal(xla_cpu_math.fma32(a, b, c), want)


def _round_to_float32(value):
    """The float32 nearest the Fraction ``value`` (ties to even)."""
    near = np.float32(float(value))           # within an ulp; pick the nearest neighbour
    candidates = [np.nextafter(near, np.float32(-np.inf)), near,
                  np.nextafter(near, np.float32(np.inf))]
    errors = [abs(Fraction(float(v)) - value) for v in candidates]
    best = min(errors)
    ties = [v for v, e in zip(candidates, errors) if e == best]
    return min(ties, key=lambda v: int(np.array(v).view(np.uint32)) & 1)


def test_halfway_sums_are_rounded_once():
    # a * b + c lands exactly halfway between two float32s in float64 only
    # after float64's rounding: fma32 must not round the tie a second time
    a, b = np.float32(1 + 2**-12), np.float32(1 + 2**-12)      # a b = 1 + 2**-11 + 2**-24
    c = np.float32(2**-80)           # just above the tie; float64 rounds it onto the tie
    want = _round_to_float32(_exact_fma(a, b, c))
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert naive != want                  # the case this test is about
    assert xla_cpu_math.fma32(np.array([a]), np.array([b]), np.array([c]))[0] == want


def test_signed_zeros_survive_the_fused_multiply_add():
    zeros = np.array([-0.0, -0.0])
    got = xla_cpu_math.fma(zeros, np.array([1.0, 2.0]), zeros)
    assert np.signbit(got).all()
    split = (np.array([1.0, 2.0]), *xla_cpu_math._veltkamp(np.array([1.0, 2.0])))
    assert np.signbit(xla_cpu_math._fma64_by(zeros, split, zeros)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_draws_stay_within_ulps_of_the_emulation(dtype, without_numba):
    # beyond EXACT_SAMPLES per key without numba (exact_draw), normals take
    # the fast rational kernel: close to XLA's, which is the less accurate in
    # the far tails (its 1 - u**2 cancels: ~1e-5 relative at |z| = 4 in
    # float32, 2e-13 in float64)
    key = np.array([0, 42], np.uint32)
    shape = (prng_kernel.EXACT_SAMPLES + 3,)
    fast = prng_kernel.sample(key, shape, dtype, "normal")
    assert not np.array_equal(fast, xla_cpu_math.normal_from_signed(
        prng_kernel.sample(key, shape, dtype, "signed")))      # (the fast kernel ran)
    exact = xla_cpu_math.normal_from_signed(prng_kernel.sample(key, shape, dtype, "signed"))
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fast, exact, rtol=tolerance, atol=tolerance)


def test_exactness_depends_on_the_draw_not_on_vmap():
    keys = random.split(random.PRNGKey(3), 3)
    size = prng_kernel.EXACT_SAMPLES // 2          # 3 keys: more than EXACT_SAMPLES in all
    batched = np.asarray(fungrad.vmap(lambda k: random.normal(k, (size,)))(keys))
    for key, row in zip(keys, batched):
        np.testing.assert_array_equal(row, random.normal(key, (size,)))


def test_erf_inv_keeps_jax_edges():
    x = np.array([1.0, -1.0, 0.0, -0.0, math.nan, 1.5])
    with np.errstate(invalid="ignore"):
        got = xla_cpu_math.erf_inv(x)
    assert got[0] == np.inf and got[1] == -np.inf
    assert got[2] == 0 and np.signbit(got[3])
    assert np.isnan(got[4]) and np.isnan(got[5])


# ----------------------------------------------------------------------------
# rsqrt: the CPU's estimates (measured tables) within their specified error
# ----------------------------------------------------------------------------

_POSITIVE32 = st.floats(float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max),
                        width=32)
_POSITIVE64 = st.floats(np.finfo(np.float64).tiny, 1e308)


@given(st.lists(_POSITIVE32, min_size=1, max_size=50))
def test_rsqrt_estimate_float32_within_the_instructions_bound(values):
    x = np.array(values, np.float32)
    estimate = xla_cpu_math.rsqrt_estimate_float32(x).astype(np.float64)
    relative = np.abs(estimate * np.sqrt(x.astype(np.float64)) - 1)
    assert (relative < 1.5 * 2.0**-12).all()       # vrsqrtps' specified bound
    refined = xla_cpu_math.rsqrt_float32(x).astype(np.float64)
    assert (np.abs(refined * np.sqrt(x.astype(np.float64)) - 1) < 4 * 2.0**-24).all()


@given(st.lists(_POSITIVE64, min_size=1, max_size=50))
def test_rsqrt14_estimate_float64_within_the_instructions_bound(values):
    x = np.array(values)
    estimate = xla_cpu_math.rsqrt14_estimate_float64(x)
    mantissa = estimate.view(np.uint64) & np.uint64((1 << 36) - 1)
    assert not mantissa.any()                        # 16 fraction bits
    relative = [abs(Fraction(float(e)) ** 2 * Fraction(float(v)) - 1) for e, v in zip(estimate, x)]
    assert max(relative) < 2 * 2.0**-14              # (of the square: twice vrsqrt14pd's bound)
    refined = xla_cpu_math.rsqrt_float64(x)
    np.testing.assert_allclose(refined, 1 / np.sqrt(x), rtol=4e-16)


def test_rsqrt_estimates_scale_by_powers_of_four_and_handle_special_values():
    x32 = np.array([1.5, 6.0, 24.0, 0.375], np.float32)   # 1.5 * 4**k: one table entry
    e32 = xla_cpu_math.rsqrt_estimate_float32(x32)
    np.testing.assert_array_equal(e32 * np.array([1, 2, 4, 0.5], np.float32), np.full(4, e32[0]))
    specials = [0.0, -0.0, 1e-45, np.inf, -1.0, -np.inf, np.nan]
    want = [np.inf, -np.inf, np.inf, 0.0, np.nan, np.nan, np.nan]   # subnormals as zero (DAZ)
    for fn, dtype in ((xla_cpu_math.rsqrt_float32, np.float32),
                      (xla_cpu_math.rsqrt_float64, np.float64)):
        x = np.array(specials, dtype)
        if dtype == np.float64:
            x[2] = 5e-324
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(fn(x), np.array(want, dtype))
