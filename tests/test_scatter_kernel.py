"""The scatter-add kernel (fungrad/lax/kernels/scatter.py): np.bincount when the
updates outnumber the operand elements, np.add.at otherwise.  Both branches
against np.add.at over random shapes, index forms, repeat ratios and dtypes,
and through scatter_add / put_along_axis_add in eager and jit code."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad.lax.kernels import scatter

_DTYPES = ["float64", "complex128", "float32", "int32"]


def _values(rng, shape, dtype):
    v = rng.standard_normal(shape) * 4
    if dtype == "complex128":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(0, 40), st.sampled_from(_DTYPES),
       st.sampled_from(["rows", "pairs", "flat"]), st.integers(0, 2**31 - 1))
def test_add_at_matches_np_add_at(rows, cols, n, dtype, form, seed):
    # n updates of a (rows, cols) operand: n >= 2 * size takes the bincount branch
    rng = np.random.default_rng(seed)
    out = _values(rng, (rows, cols), dtype)
    if form == "rows":                     # out[i] += u[k] for rows i (slices of width cols)
        index = (rng.integers(-rows, rows, n),)
        upd_shape = (n, cols)
    elif form == "pairs":                  # out[i, j] += u[k]
        index = (rng.integers(0, rows, n), rng.integers(0, cols, n))
        upd_shape = (n,)
    else:                                  # a slice and an index array together
        index = (slice(None), rng.integers(0, cols, n))
        upd_shape = (rows, n)
    updates = _values(rng, upd_shape, dtype)
    want = out.copy()
    np.add.at(want, index, updates)
    got = scatter.add_at(out.copy(), index, updates)
    assert got.dtype == want.dtype
    if dtype in ("int32",):
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_add_at_flat_both_branches(dtype):
    rng = np.random.default_rng(0)
    for n in (3, 500):                     # np.add.at branch, then bincount branch
        flat = _values(rng, (10,), dtype)
        positions = rng.integers(0, 10, (n // 5 + 1, 5))
        updates = _values(rng, positions.shape, dtype)
        want = flat.copy()
        np.add.at(want, positions, updates)
        np.testing.assert_allclose(scatter.add_at_flat(flat.copy(), positions, updates), want,
                                   rtol=1e-12, atol=1e-12)


def test_gather_transposes_with_many_repeats_use_bincount_and_match():
    # an embedding gradient over a small vocabulary: 400 lookups of 8 rows
    rng = np.random.default_rng(1)
    table = rng.standard_normal((8, 3))
    ids = rng.integers(0, 8, (50, 8))
    loss = lambda t: fnp.sum(fnp.tanh(t[ids]))
    want = np.zeros_like(table)
    np.add.at(want, ids, 1 - np.tanh(table[ids]) ** 2)
    for g in (fungrad.grad(loss), fungrad.jit(fungrad.grad(loss))):
        np.testing.assert_allclose(g(table), want, rtol=1e-12)
    src = fungrad.jit(fungrad.grad(loss)).lower(table).source()
    assert "_scatter.add_at" in src and "np.add.at" not in src
    # take_along_axis's transpose (put_along_axis_add) goes through the kernel too
    x = rng.standard_normal((4, 2))
    cols = rng.integers(0, 2, (4, 30))
    f = lambda x: fnp.sum(fnp.take_along_axis(x, cols, axis=1) ** 2)
    want = np.zeros_like(x)
    np.add.at(want, (np.arange(4)[:, None], cols), 2 * np.take_along_axis(x, cols, 1))
    for g in (fungrad.grad(f), fungrad.jit(fungrad.grad(f))):
        np.testing.assert_allclose(g(x), want, rtol=1e-12)
