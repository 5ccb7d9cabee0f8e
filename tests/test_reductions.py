"""Focused tests for reductions, cumulative ops and sorting: JAX's values at
non-differentiable points, NumPy's dtype and edge-case semantics, error
messages, and the NumPy lowerings of the primitives."""
import re
import warnings

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import core, lax
from fungrad.interpreters import codegen
from fungrad.test_util import check_grads


# ----------------------------------------------------------------------------
# Derivatives at ties and zeros
# ----------------------------------------------------------------------------

def test_max_min_ties_split_the_gradient_equally():
    np.testing.assert_allclose(fungrad.grad(fnp.max)(np.array([1.0, 1.0])), [0.5, 0.5])
    np.testing.assert_allclose(fungrad.grad(fnp.min)(np.array([1.0, 3.0, 1.0, 1.0])),
                               [1 / 3, 0, 1 / 3, 1 / 3])
    x = np.array([[2.0, 5.0, 5.0], [7.0, 1.0, 7.0]])
    g = fungrad.grad(lambda x: lax.reduce_max(x, (1,)).sum())(x)
    np.testing.assert_allclose(g, [[0, 0.5, 0.5], [0.5, 0, 0.5]])
    # forward mode agrees
    t = np.arange(6.0).reshape(2, 3)
    _, tan = fungrad.jvp(lambda x: fnp.max(x, axis=1), (x,), (t,))
    np.testing.assert_allclose(tan, [(1 + 2) / 2, (3 + 5) / 2])


def test_max_with_initial_tie_shares_with_initial():
    g = fungrad.grad(lambda x: fnp.max(x, initial=2.0))(np.array([2.0, 1.0]))
    np.testing.assert_allclose(g, [0.5, 0.0])


@pytest.mark.parametrize("x, want", [
    ([2.0, 0.0, 3.0], [0.0, 6.0, 0.0]),       # one zero: only its own slot
    ([2.0, 0.0, 0.0], [0.0, 0.0, 0.0]),       # two zeros: all zero
    ([2.0, 4.0, 3.0], [12.0, 6.0, 8.0]),
])
def test_prod_gradient_with_zeros(x, want):
    x = np.array(x)
    np.testing.assert_allclose(fungrad.grad(fnp.prod)(x), want)
    np.testing.assert_allclose(fungrad.jacfwd(fnp.prod)(x), want)
    check_grads(fnp.prod, (x,), order=2)


def test_prod_hessian_with_zeros():
    h = fungrad.hessian(fnp.prod)(np.array([2.0, 0.0, 0.0]))
    np.testing.assert_allclose(h, [[0, 0, 0], [0, 0, 2], [0, 2, 0]])
    h = fungrad.hessian(fnp.prod)(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_allclose(h, [[0, 3, 0], [3, 0, 2], [0, 2, 0]])


def test_cumprod_jacobian_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    jac = fungrad.jacrev(lambda x: fnp.cumprod(x))(x)
    want = np.zeros((5, 5))
    for k in range(5):
        for i in range(k + 1):
            want[k, i] = np.prod(np.delete(x[:k + 1], i))
    np.testing.assert_allclose(jac, want)
    np.testing.assert_allclose(fungrad.jacfwd(lambda x: fnp.cumprod(x))(x), want)
    check_grads(lambda x: lax.cumprod(x, reverse=True), (x,), order=2)


def test_cumlogsumexp_is_stable():
    x = np.array([-1000.0, 0.0, 1000.0, 1000.0])
    np.testing.assert_allclose(lax.cumlogsumexp(x), [-1000, 0, 1000, 1000 + np.log(2)])
    jac = fungrad.jacfwd(lax.cumlogsumexp)(x)
    assert np.isfinite(jac).all()
    np.testing.assert_allclose(jac, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                     [0, 0, 0.5, 0.5]], atol=1e-300)
    np.testing.assert_allclose(fungrad.jacrev(lambda x: lax.cumlogsumexp(x, reverse=True))(x)[0],
                               [0, 0, 0.5, 0.5])


def test_cummax_gradient_follows_the_running_maximum():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    jac = fungrad.jacfwd(lax.cummax)(x)
    want = np.zeros((5, 5))
    for k, i in enumerate([0, 1, 1, 3, 3]):
        want[k, i] = 1
    np.testing.assert_allclose(jac, want)


def test_sort_and_top_k_gradients_follow_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_allclose(fungrad.jacrev(fnp.sort)(x), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    vals_jac = fungrad.jacfwd(lambda x: lax.top_k(x, 2)[0])(x)
    np.testing.assert_allclose(vals_jac, [[1, 0, 0], [0, 0, 1]])


def test_quantile_gradient_in_q():
    x = np.array([0.0, 10.0, 30.0])
    # linear between sorted neighbours: d/dq = (x[hi] - x[lo]) * (n - 1)
    np.testing.assert_allclose(fungrad.grad(lambda q: fnp.quantile(x, q))(0.25), 20.0)
    np.testing.assert_allclose(fungrad.grad(lambda q: fnp.quantile(x, q))(0.75), 40.0)


# ----------------------------------------------------------------------------
# NumPy semantics: dtypes, where, initial, keepdims, empties
# ----------------------------------------------------------------------------

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]


# where JAX 0.10.2's dtype (x64 on) differs from NumPy's, recorded with real
# JAX: mean/var/std/median of bool and integers up to 32 bits are float32 (NumPy:
# float64) and cumsum/cumprod keep integer dtypes (NumPy widens them)
_JAX_DTYPES = {**{(n, d): "float32" for n in ("mean", "var", "std", "median")
                  for d in ("bool", "int8", "uint8", "int32")},
               **{(n, d): d for n in ("cumsum", "cumprod") for d in ("int8", "uint8", "int32")}}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "max", "min", "cumsum",
                                  "cumprod", "median", "all", "any", "argmax", "count_nonzero"])
def test_result_dtypes_are_jaxs(name, dtype):
    x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(np, name)(x, axis=0)
    got = getattr(fnp, name)(x, axis=0)
    assert got.dtype == np.dtype(_JAX_DTYPES.get((name, dtype), want.dtype))
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-3)


def test_where_initial_keepdims_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4))
    m = rng.random((3, 4)) < 0.6
    m[0] = True
    row = np.array([True, False, True, True])
    for kw in [dict(where=m), dict(where=row), dict(where=m, initial=2.0),
               dict(axis=1, keepdims=True, where=m), dict(axis=(0, 1), keepdims=True)]:
        np.testing.assert_allclose(fnp.sum(x, **kw), np.sum(x, **kw))
        np.testing.assert_allclose(fnp.prod(x, **kw), np.prod(x, **kw))
    for kw in [dict(where=m, initial=-5.0), dict(axis=0, where=row, initial=0.0, keepdims=True)]:
        np.testing.assert_allclose(fnp.max(x, **kw), np.max(x, **kw))
        np.testing.assert_allclose(fnp.min(x, **{**kw, "initial": 5.0}),
                                   np.min(x, **{**kw, "initial": 5.0}))
    for kw in [dict(where=m), dict(axis=0, where=m, keepdims=True), dict(axis=1, ddof=1)]:
        for name in ["var", "std"]:
            np.testing.assert_allclose(getattr(fnp, name)(x, **kw), getattr(np, name)(x, **kw))
    kw = dict(axis=1, where=m)
    np.testing.assert_allclose(fnp.mean(x, **kw), np.mean(x, **kw))
    np.testing.assert_array_equal(fnp.all(x > 0, where=m, axis=0), np.all(x > 0, where=m, axis=0))
    np.testing.assert_array_equal(fnp.any(x > 0, where=m, axis=1, keepdims=True),
                                  np.any(x > 0, where=m, axis=1, keepdims=True))


def test_empty_reductions():
    e = np.zeros((0, 3))
    assert fnp.sum(e) == 0 and fnp.prod(e) == 1
    np.testing.assert_array_equal(fnp.sum(e, axis=0), np.zeros(3))
    assert fnp.sum(e, axis=1).shape == (0,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no crash and no NumPy warning
        assert np.isnan(fnp.mean(e))
        assert np.isnan(fnp.mean(e, axis=0)).all()
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        fnp.max(e)
    with pytest.raises(ValueError, match="minimum which has no identity"):
        fnp.min(e, axis=0)
    assert fnp.max(e, initial=-1.0) == -1.0
    assert fnp.max(e, axis=1).shape == (0,)   # nothing reduced to an empty result: fine
    with pytest.raises(ValueError, match="empty sequence"):
        fnp.argmax(e)
    np.testing.assert_array_equal(lax.reduce_max(e, (0,)), np.full(3, -np.inf))
    assert fnp.all(e) and not fnp.any(e)


def test_where_on_max_requires_initial():
    with pytest.raises(ValueError, match="initial"):
        fnp.max(np.ones(3), where=np.array([True, False, True]))


def test_mean_and_median_dtypes_like_jax():
    assert fnp.mean(np.arange(4, dtype=np.int8)).dtype == np.float32     # NumPy: float64
    assert fnp.mean(np.arange(4, dtype=np.int64)).dtype == np.float64
    assert fnp.mean(np.ones(4, np.float16)).dtype == np.float16
    assert fnp.median(np.arange(5, dtype=np.int8)).dtype == np.float32
    assert fnp.var(np.array([1j, 2.0])).dtype == np.float64
    np.testing.assert_allclose(fnp.var(np.array([1j, 2.0, 1 + 1j])), np.var(np.array([1j, 2.0, 1 + 1j])))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_quantile_methods_match_numpy(method, dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-20, 20, size=(4, 6)).astype(dtype)
    for q in [0.5, 0.0, 1.0, np.array([0.1, 0.25, 0.5, 0.8, 0.9999])]:
        for axis in [None, 0, 1, (0, 1)]:
            got = fnp.quantile(x, q, axis=axis, method=method, keepdims=axis == 1)
            want = np.quantile(x, q, axis=axis, method=method, keepdims=axis == 1)
            # JAX's dtype (recorded with JAX 0.10.2): x's inexact counterpart,
            # whatever the method and q (NumPy: int32 for 'lower', float64 ...)
            assert got.dtype == (np.float64 if dtype == "float64" else np.float32)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(fnp.percentile(x, [10, 90], method=method),
                               np.percentile(x, [10, 90], method=method), rtol=1e-6)


def test_median_nan_and_nan_functions():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(fnp.median(x, axis=1), np.median(x, axis=1))
    np.testing.assert_array_equal(fnp.nanmedian(x, axis=1), np.nanmedian(x, axis=1))
    all_nan = np.array([[np.nan, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(fnp.nanmax(all_nan, axis=1), np.nanmax(all_nan, axis=1))
        np.testing.assert_array_equal(fnp.nanmean(all_nan, axis=1), np.nanmean(all_nan, axis=1))
    np.testing.assert_array_equal(fnp.nanargmax(all_nan, axis=1), [-1, 1])   # JAX's value


def test_average_like_numpy():
    x = np.arange(6.0).reshape(2, 3)
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(fnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w))
    avg, scl = fnp.average(x, axis=0, returned=True)
    np.testing.assert_allclose(avg, np.average(x, axis=0))
    np.testing.assert_allclose(scl, [2.0, 2.0, 2.0])
    with pytest.raises(ZeroDivisionError):
        fnp.average(x, axis=1, weights=np.zeros(3))
    with pytest.raises(TypeError, match="axis must be specified"):
        fnp.average(x, weights=w)


def test_cumulative_and_diff_like_numpy():
    x = np.arange(1, 7, dtype=np.int8).reshape(2, 3)
    np.testing.assert_array_equal(fnp.cumsum(x), np.cumsum(x))
    assert fnp.cumsum(x).dtype == np.int8          # JAX keeps it (NumPy: int64)
    assert fnp.cumulative_sum(x, axis=0).dtype == np.int64     # JAX widens here
    np.testing.assert_array_equal(fnp.cumulative_sum(x, axis=0, include_initial=True),
                                  np.cumulative_sum(x, axis=0, include_initial=True))
    with pytest.raises(ValueError, match="axis must be specified"):
        fnp.cumulative_sum(x)
    np.testing.assert_array_equal(fnp.diff(x, prepend=np.zeros((2, 1))),
                                  np.diff(x, prepend=np.zeros((2, 1))))
    np.testing.assert_array_equal(fnp.diff(np.arange(3.0), n=5), np.diff(np.arange(3.0), n=5))
    with pytest.raises(ValueError, match="order must be non-negative"):
        fnp.diff(x, n=-1)
    np.testing.assert_array_equal(fnp.ediff1d(x, to_begin=0), np.ediff1d(x, to_begin=0))


# ----------------------------------------------------------------------------
# Sorting
# ----------------------------------------------------------------------------

def test_argsort_is_stable():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, size=(4, 50))
    np.testing.assert_array_equal(fnp.argsort(x), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(fnp.argsort(x, axis=0), np.argsort(x, axis=0, kind="stable"))
    # descending keeps equal elements in their original order too (as JAX)
    desc = np.asarray(fnp.argsort(x, descending=True))
    for row, perm in zip(x, desc):
        keys = list(zip(-row[perm], perm))
        assert keys == sorted(keys)


def test_sort_nans_last_and_multi_key():
    x = np.array([3.0, np.nan, 1.0, -np.inf])
    np.testing.assert_array_equal(fnp.sort(x), np.sort(x))
    a, b = np.array([1, 0, 1, 0]), np.array([4, 3, 2, 1])
    np.testing.assert_array_equal(fnp.lexsort((b, a)), np.lexsort((b, a)))
    k1, k2, v = lax.sort((a, b, np.arange(4.0)), num_keys=2)
    np.testing.assert_array_equal(v, [3.0, 1.0, 2.0, 0.0])


def test_top_k_ties_in_index_order():
    vals, idx = lax.top_k(np.array([1.0, 3.0, 3.0, 2.0]), 3)
    np.testing.assert_array_equal(vals, [3.0, 3.0, 2.0])
    np.testing.assert_array_equal(idx, [1, 2, 3])
    assert idx.dtype == np.int32


def test_searchsorted_batched_sorted_array():
    rng = np.random.default_rng(4)
    a = np.sort(rng.normal(size=(3, 6)), axis=1)
    v = rng.normal(size=(3, 4))
    for side in ["left", "right"]:
        got = fungrad.vmap(lambda a, v: fnp.searchsorted(a, v, side=side))(a, v)
        want = [np.searchsorted(ai, vi, side=side) for ai, vi in zip(a, v)]
        np.testing.assert_array_equal(got, want)
    # integer valued: no derivative of its own, so d(count * v)/dv = count
    g = fungrad.grad(lambda v: fnp.searchsorted(a[0], v) * v)(0.3)
    assert g == np.searchsorted(a[0], 0.3)


def test_unique_concrete_and_traced():
    x = np.array([3, 1, 3, 2, 1])
    for kw in [{}, dict(return_index=True, return_inverse=True, return_counts=True)]:
        got, want = fnp.unique(x, **kw), np.unique(x, **kw)
        for g, w in zip(got if kw else [got], want if kw else [want]):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(core.ConcretizationTypeError, match="size="):
        fungrad.jit(fnp.unique)(x)
    np.testing.assert_array_equal(fungrad.jit(lambda x: fnp.unique(x, size=5, fill_value=0))(x),
                                  [1, 2, 3, 0, 0])
    np.testing.assert_array_equal(fnp.unique(x, size=2), [1, 2])
    np.testing.assert_array_equal(fnp.unique(x, size=4), [1, 2, 3, 1])


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

def test_bad_axes_raise_clear_errors():
    x = np.ones((2, 3))
    with pytest.raises(np.exceptions.AxisError, match="sum.*axis 2 is out of bounds"):
        fnp.sum(x, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        fnp.mean(x, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be"):
        fnp.max(x, axis=1.0)
    with pytest.raises(ValueError, match="reduce_sum: axis 3 is out of bounds"):
        lax.reduce_sum(x, (3,))
    with pytest.raises(ValueError, match="reduce_max: axes must be"):
        fungrad.make_jaxpr(lambda x: lax.reduce_max_p.bind(x, axes=(0, 0)))(x)
    with pytest.raises(ValueError, match="cumsum: axis -3 is out of bounds"):
        lax.cumsum(x, -3)
    with pytest.raises(ValueError, match="cumprod: operand is 0-d"):
        lax.cumprod(np.float64(1.0))
    with pytest.raises(ValueError, match="argmax: axis 2 is out of bounds"):
        lax.argmax(x, 2, np.int32)
    with pytest.raises(ValueError, match="sort: dimension 2 is out of bounds"):
        lax.sort(x, dimension=2)
    with pytest.raises(ValueError, match="sorting needs at least 1-d"):
        lax.sort(np.float64(1.0))
    with pytest.raises(ValueError, match="top_k: k=4"):
        lax.top_k(x, 4)
    with pytest.raises(TypeError, match="cumlogsumexp requires a floating-point"):
        lax.cumlogsumexp(np.arange(3))
    with pytest.raises(TypeError, match="reduce_and requires a boolean or integer"):
        lax.reduce_and(x, (0,))


def test_out_argument_and_ddof_conflict_rejected():
    with pytest.raises(TypeError, match="immutable"):
        fnp.sum(np.ones(3), out=np.zeros(()))
    with pytest.raises(ValueError, match="ddof and correction"):
        fnp.var(np.ones(3), ddof=1, correction=1)
    with pytest.raises(ValueError, match=re.escape("range [0, 1]")):
        fnp.quantile(np.ones(3), 1.5)


# ----------------------------------------------------------------------------
# Lowerings: each primitive's NumPy source computes what its impl computes
# ----------------------------------------------------------------------------

def _lowered(prim, args, **params):
    names = [f"a{i}" for i in range(len(args))]
    src, modules = codegen.lowered_source(prim, names, [core.get_aval(a) for a in args],
                                          **params)
    return eval(src, {"np": np, **modules, **dict(zip(names, args))})


X = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
LOWERING_CALLS = [
    ("reduce_sum", (X,), dict(axes=(1,))),
    ("reduce_sum", (X.astype(np.int8),), dict(axes=(0, 1))),
    ("reduce_sum", (np.arange(4000.0).reshape(250, 2, 8),), dict(axes=(0, 1))),   # folded
    ("reduce_max", (X,), dict(axes=(0,))),
    ("reduce_max", (np.zeros((0, 2), np.int32),), dict(axes=(0,))),
    ("reduce_min", (np.zeros((2, 0)),), dict(axes=(1,))),
    ("reduce_prod", (X,), dict(axes=(0, 1))),
    ("reduce_and", (X > 0,), dict(axes=(1,))),
    ("reduce_or", (X > 0,), dict(axes=(0,))),
    ("reduce_xor", (np.arange(6).reshape(2, 3),), dict(axes=(1,))),
    ("argmax", (X,), dict(axis=1, index_dtype=np.dtype(np.int32))),
    ("argmin", (X,), dict(axis=0, index_dtype=np.dtype(np.int64))),
    ("cumsum", (X,), dict(axis=1, reverse=True)),
    ("cumprod", (X.astype(np.int8),), dict(axis=0, reverse=False)),
    ("cummax", (X,), dict(axis=1, reverse=False)),
    ("cummin", (X,), dict(axis=1, reverse=True)),
    ("cumlogsumexp", (X,), dict(axis=0, reverse=True)),
    ("sort", (X, np.arange(6).reshape(2, 3)), dict(dimension=1, is_stable=True, num_keys=1)),
    ("sort", (X > 0, X), dict(dimension=0, is_stable=True, num_keys=2)),
    ("top_k", (X,), dict(k=2)),
    ("take_along_axis", (X, np.array([[2, 0], [1, 1]])), dict(axis=1)),
    ("put_along_axis_add", (np.ones((2, 2)), np.array([[2, 2], [0, 1]])),
     dict(axis=1, operand_shape=(2, 3))),
    ("searchsorted", (np.array([1.0, 2.0, 3.0]), X), dict(side="right")),
]


@pytest.mark.parametrize("name, args, params", LOWERING_CALLS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOWERING_CALLS)])
def test_lowering_matches_impl(name, args, params):
    prim = core.primitives[name]
    want = prim.impl(*args, **params)
    got = _lowered(prim, args, **params)
    wants = want if prim.multiple_results else [want]
    gots = list(got) if prim.multiple_results else [got]
    for g, w in zip(gots, wants):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# ----------------------------------------------------------------------------
# Sums over leading axes with a narrow remainder (fungrad/lax/kernels/sums.py)
# ----------------------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402
from fungrad.lax.kernels import sums as sum_kernels  # noqa: E402


@given(st.lists(st.integers(0, 40), min_size=1, max_size=4), st.integers(0, 4),
       st.sampled_from(["float64", "float32", "complex128", "int8", "int64", "bool"]),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_sum_leading_matches_np_sum(shape, count, dtype, transposed, seed):
    shape, count = tuple(shape) + (3,), min(count, len(shape))
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    x = x.T.copy().T if transposed else x           # an F-ordered operand: no folding
    got = sum_kernels.sum_leading(x, count=count)
    want = np.sum(x, axis=tuple(range(count)), dtype=x.dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    if x.dtype.kind in "iub":                       # wraps (or ors) like np.sum
        np.testing.assert_array_equal(got, want)
    else:                                           # only the order of additions differs
        scale = np.sum(np.abs(x), axis=tuple(range(count)))
        np.testing.assert_allclose(got, want, atol=float(np.max(scale, initial=0)) * 1e-5
                                   if x.dtype == np.float32 else 1e-10 * (1 + scale.max(
                                       initial=0)), rtol=0)


def test_bias_gradient_sum_folds_narrow_rows():
    # (25088, 16) summed over the rows: viewed as (784, 512) rows (one ufunc pass)
    x = np.random.default_rng(0).standard_normal((32, 28, 28, 16))
    assert sum_kernels.folds(x.shape, 3) and not sum_kernels.folds(x.shape, 4)
    assert not sum_kernels.folds((8, 64, 512), 2)       # wide rows already
    src = fungrad.jit(lambda x: lax.reduce_sum(x, (0, 1, 2))).lower(x).source()
    assert "_sums.sum_leading" in src
    np.testing.assert_allclose(fungrad.jit(lambda x: lax.reduce_sum(x, (0, 1, 2)))(x),
                               x.sum(axis=(0, 1, 2)), rtol=1e-12, atol=1e-12)
    g = fungrad.grad(lambda b: fnp.sum((x + b) ** 2))(np.ones(16))
    np.testing.assert_allclose(g, 2 * (x + 1).sum(axis=(0, 1, 2)), rtol=1e-12)


@pytest.mark.parametrize("values, expected", [
    ([np.inf, -np.inf, 1.0], 1.0), ([np.inf, 1.0], np.inf), ([-np.inf, -np.inf], -np.inf),
    ([4.0, 1.0, 2.0, 3.0], 2.5), ([np.nan, 1.0], np.nan)])
def test_median_is_the_midpoint_of_the_middle_values_with_infinities_too(values, expected):
    # JAX's (low + high) / 2 (numbers checked on JAX 0.10.2): an infinity in
    # the middle gives it, never the NaN of an interpolation (inf - inf) * 0
    x = np.array(values)
    np.testing.assert_array_equal(fnp.median(x), expected)
    np.testing.assert_array_equal(fnp.nanmedian(x), np.nanmedian(x))
    np.testing.assert_array_equal(fnp.quantile(x, 0.5, method="midpoint"), expected)
