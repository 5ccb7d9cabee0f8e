"""The compiled backend's integer operations (lax/integer_numba.py) and
``logistic`` against the NumPy backend and eager fungrad: ``div`` and ``rem``
(C's rounding; zero divisors, negative operands, ``INT_MIN / -1``), shifts
by amounts in and out of ``[0, bits)``, ``population_count``, on arrays (in
loop nests) and on scalars in compiled loops, as numpyro's NUTS computes
its tree indices.  Skipped only when numba is not installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

numba = pytest.importorskip("numba")

import fungrad  # noqa: E402
from fungrad import lax  # noqa: E402
from tests.test_numba_scatter import _assert_same, _run_compiled  # noqa: E402


@pytest.fixture(autouse=True)
def _in_memory(monkeypatch):
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")


def _check(f, *args):
    """Exactly the NumPy backend's and eager results, compiled with numba."""
    with np.errstate(all="ignore"):
        got, on_numpy, eager = _run_compiled(f, *args)
    leaves = [fungrad.tree_util.tree_leaves(t) for t in (got, on_numpy, eager)]
    for k, (g, n, e) in enumerate(zip(*leaves)):
        _assert_same(g, n, f"{f.__name__} output {k}: numba vs NumPy backend")
        _assert_same(g, e, f"{f.__name__} output {k}: numba vs eager")


# ----------------------------------------------------------------------------
# Integer div and rem (C's: towards zero, the dividend's sign)
# ----------------------------------------------------------------------------

INT_DTYPES = (np.int64, np.int32, np.int8, np.uint32, np.uint64)


@st.composite
def _integer_operands(draw, n=8):
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    info = np.iinfo(dtype)
    special = [0, 1, info.min, info.max] + ([-1, info.min + 1] if info.min < 0 else [])
    element = st.one_of(st.sampled_from(special), st.integers(max(info.min, -20), 20),
                        st.integers(int(info.min), int(info.max)))
    x = np.array(draw(st.lists(element, min_size=n, max_size=n)), dtype)
    y = np.array(draw(st.lists(element, min_size=n, max_size=n)), dtype)
    return x, y


def _div_rem(x, y):
    return lax.div(x, y), lax.rem(x, y), lax.div(x + x, y) * lax.rem(y, x)


def _div_rem_of_scalars(x, y):
    """Scalar div/rem in a compiled loop (NUTS divides loop counters)."""
    def body(k, acc):
        a, b = x[0] + lax.convert_element_type(k, x.dtype), y[0]
        return acc + lax.div(a, b) + lax.rem(a, b)
    return lax.fori_loop(0, 3, body, lax.rem(x[1], y[1]) + lax.div(x[2], y[2]))


@settings(max_examples=15)
@given(_integer_operands())
def test_integer_div_rem_equal_numpy_backend(operands):
    for f in (_div_rem, _div_rem_of_scalars):
        _check(f, *operands)


def test_integer_division_special_cases():
    """C's rounding towards zero and the dividend's sign; a zero divisor gives 0
    (the NumPy backend's value) and INT_MIN / -1 wraps."""
    lo = np.iinfo(np.int64).min
    x = np.array([7, -7, 7, -7, 5, lo, lo, 3], np.int64)
    y = np.array([2, 2, -2, -2, 0, -1, 0, lo], np.int64)
    q, r, _ = fungrad.jit(_div_rem, backend="numba")(x, y)
    np.testing.assert_array_equal(q, [3, -3, -3, 3, 0, lo, 0, 0])
    np.testing.assert_array_equal(r, [1, -1, 1, -1, 0, 0, 0, 3])


@settings(max_examples=6)
@given(st.sampled_from((np.float64, np.float32)), st.integers(0, 2**32 - 1))
def test_float_div_rem_compile_as_numpy(dtype, seed):
    """Floats: true division, and fmod (within an ulp: exact in IEEE)."""
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=8) * 10).astype(dtype)
    y = (rng.normal(size=8) * 3).astype(dtype)
    x[:3], y[:4] = [np.inf, np.nan, 1.0], [0.0, 2.0, -0.0, np.inf]
    f = lambda x, y: (lax.div(x, y), lax.rem(x, y))
    with np.errstate(all="ignore"):
        got, on_numpy, _ = _run_compiled(f, x, y)
    for g, n in zip(got, on_numpy):
        _assert_same(g, n, f"float {np.dtype(dtype).name}")


def test_int64_sum_that_overflowed_compares_as_wrapped():
    """numba's int64 + carries LLVM's no-signed-wrap flag (a comparison of an
    overflowed sum could see the unwrapped value): the backend writes the ufunc."""
    f = lambda x: ((x + x) < 0, lax.div(x + x, -x))
    x = np.array([np.iinfo(np.int64).max, 3], np.int64)
    got, on_numpy, _ = _run_compiled(f, x)
    for g, n in zip(got, on_numpy):
        _assert_same(g, n, "int64 overflow")
    np.testing.assert_array_equal(got[0], [True, False])


# ----------------------------------------------------------------------------
# Shifts and population_count (NumPy's: 0, or -1, out of range)
# ----------------------------------------------------------------------------

def _shifts(x, y):
    return (lax.shift_left(x, y), lax.shift_right_arithmetic(x, y),
            lax.shift_right_logical(x, y))


def _bits_of_scalars(x, y):
    """numpyro's _leaf_idx_to_ckpt_idxs: bit counts of shifted scalars, in a loop."""
    def body(k, acc):
        n = x[k]
        return acc + lax.population_count(lax.shift_right_arithmetic(n, y[k])) \
            + lax.population_count(lax.shift_right_logical(n, y[k])) + lax.shift_left(n, y[k])
    return lax.fori_loop(0, x.shape[0], body, lax.population_count(x[0]))


@st.composite
def _shift_operands(draw, n=8):
    x, y = draw(_integer_operands(n))
    bits = 8 * x.dtype.itemsize
    lo = 0 if x.dtype.kind == "u" else -3
    amounts = draw(st.lists(st.integers(lo, bits + 3), min_size=n, max_size=n))
    keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))   # (else y's extreme values)
    with np.errstate(over="ignore"):
        y = np.where(keep, np.array(amounts).astype(x.dtype), y)
    return x, y


@settings(max_examples=15)
@given(_shift_operands())
def test_shifts_and_population_count_equal_numpy_backend(operands):
    for f in (_shifts, _bits_of_scalars):
        _check(f, *operands)


# ----------------------------------------------------------------------------
# logistic (NUTS's transition probability): within an ulp or two (exp differs)
# ----------------------------------------------------------------------------

@settings(max_examples=6)
@given(st.sampled_from((np.float64, np.float32)), st.integers(0, 2**32 - 1))
def test_logistic_of_scalars_and_arrays_as_numpy_backend(dtype, seed):
    x = (np.random.default_rng(seed).normal(size=12) * 20).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 800.0]

    def f(x):
        return lax.logistic(x), lax.fori_loop(0, 3, lambda k, a: a + lax.logistic(a), x[7])
    with np.errstate(all="ignore"):
        got, on_numpy, _ = _run_compiled(f, x)
    for g, n in zip(got, on_numpy):
        g, n = np.asarray(g), np.asarray(n)
        assert g.dtype == n.dtype
        np.testing.assert_allclose(g, n, rtol=4 * np.finfo(dtype).eps, atol=0)


def test_rules_run_while_a_trace_is_active():
    """A numba-jitted function called on constants inside a traced loop body
    compiles during that trace (numpyro's NUTS does): no rule may bind a
    primitive (integer_pow's once called lax.abs, a tracer there)."""
    g = fungrad.jit(lambda x: lax.integer_pow(x, 3) + lax.div(x, 2.0), backend="numba")

    def body(i, c):
        return c + g(np.arange(3.0) + 2)
    got = fungrad.jit(lambda c: lax.fori_loop(0, 2, body, c))(np.zeros(3))
    x = np.arange(3.0) + 2
    np.testing.assert_allclose(got, 2 * (x ** 3 + x / 2), rtol=1e-15)
