"""fungrad.numpy's composite functions against NumPy: set operations, histograms, polynomials,
statistics, convolution, vectorize and the small helpers; their behaviour under
jit/vmap/grad (static size= as JAX) and their errors on bad input."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad.core import ConcretizationTypeError
import fungrad.numpy as E
from fungrad.test_util import check_grads

RNG = np.random.default_rng(1)
A = np.array([3.0, 1, 2, 3, 5, 1, 7])
B = np.array([1.0, 5, 9, 3, 3])
WITH_NAN = np.array([np.nan, 1.0, np.nan, 2.0])
X50 = RNG.normal(size=50)
Y50 = RNG.normal(size=50)
W50 = RNG.random(50)
INTS = RNG.integers(0, 6, size=20)
M = RNG.normal(size=(3, 6))


def assert_same(got, want):
    """Same structure, shapes, dtypes and values (NaNs equal)."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


# ----------------------------------------------------------------------------
# Sets
# ----------------------------------------------------------------------------

SET_INPUTS = [(A, B), (A, np.array([])), (np.array([], float), B), (WITH_NAN, [2.0, 3.0]),
              (np.array([4, 2, 2, 9]), np.array([2, 9, 11])), ([[1, 2], [3, 4]], [4, 0, 1]),
              (np.array([1, 2, 3]), np.array([1.5, 2.0]))]


@pytest.mark.parametrize("a,b", SET_INPUTS)
@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations_match_numpy(name, a, b):
    assert_same(getattr(E, name)(a, b), getattr(np, name)(a, b))


@pytest.mark.parametrize("a,b", SET_INPUTS)
def test_isin_in1d_and_intersect_indices(a, b):
    for invert in (False, True):
        assert_same(E.isin(a, b, invert=invert), np.isin(a, b, invert=invert))
    assert_same(E.in1d(a, b), np.isin(np.ravel(a), b))
    assert_same(E.intersect1d(a, b, return_indices=True),
                np.intersect1d(a, b, return_indices=True))


def test_assume_unique_options():
    a, b = np.array([5, 1, 3, 8]), np.array([3, 9, 8])
    for name in ("intersect1d", "setdiff1d", "setxor1d"):
        assert_same(getattr(E, name)(a, b, assume_unique=True),
                    getattr(np, name)(a, b, assume_unique=True))
    assert_same(E.isin(a, b, assume_unique=True), np.isin(a, b, assume_unique=True))


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_sets_need_size_under_jit(name):
    fun = getattr(E, name)
    with pytest.raises(ConcretizationTypeError, match=f"{name}.*size="):
        fungrad.jit(fun)(A, B)
    want = getattr(np, name)(A, B)
    for size in (len(want), len(want) + 3, 1):
        got = fungrad.jit(lambda a, b: fun(a, b, size=size, fill_value=-1.0))(A, B)
        padded = np.concatenate([want, np.full(max(size - len(want), 0), -1.0)])[:size]
        assert_same(got, padded)
    # the default fill value is the smallest value of the result
    got = fungrad.jit(lambda a, b: fun(a, b, size=len(want) + 2))(A, B)
    assert_same(got, np.concatenate([want, np.full(2, want[0])]))


def test_intersect1d_indices_with_size_and_vmap():
    fun = lambda a, b: E.intersect1d(a, b, return_indices=True, size=5)  # noqa: E731
    values, i1, i2 = fungrad.jit(fun)(A, B)
    want_values, want_i1, want_i2 = np.intersect1d(A, B, return_indices=True)
    k = len(want_values)
    assert_same(values[:k], want_values)
    assert_same(i1, np.concatenate([want_i1, np.full(5 - k, A.size)]))
    assert_same(i2, np.concatenate([want_i2, np.full(5 - k, B.size)]))
    batch = np.stack([A, A[::-1]])
    got = fungrad.vmap(lambda a: E.union1d(a, B, size=8, fill_value=0.0))(batch)
    for row, a in zip(np.asarray(got), batch):
        want = np.union1d(a, B)
        assert_same(row, np.concatenate([want, np.zeros(8 - len(want))]))


def test_isin_under_jit_and_vmap():
    got = fungrad.jit(E.isin)(A, B)
    assert_same(got, np.isin(A, B))
    assert_same(fungrad.vmap(E.isin, in_axes=(0, None))(np.stack([A, B[:1].repeat(7)]), B),
                np.stack([np.isin(A, B), np.isin(B[:1].repeat(7), B)]))
    with pytest.raises(ValueError, match="method"):
        E.isin(A, B, method="hash")


# ----------------------------------------------------------------------------
# Histograms and counting
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"bins": 5}, {"bins": [-1, 0, 0.5, 2.0]},
                                    {"bins": 4, "range": (-1, 1)}, {"weights": W50},
                                    {"bins": 7, "weights": W50, "density": True},
                                    {"density": True, "range": (0, 3)}])
def test_histogram_matches_numpy(kwargs):
    assert_same(E.histogram(X50, **kwargs), np.histogram(X50, **kwargs))
    kwargs.pop("density", None)
    assert_same(E.histogram_bin_edges(X50, **kwargs), np.histogram_bin_edges(X50, **kwargs))


def test_histogram_edge_cases():
    assert_same(E.histogram(INTS, 4), np.histogram(INTS, 4))              # int data
    assert_same(E.histogram(np.full(5, 2.0)), np.histogram(np.full(5, 2.0)))  # min == max
    assert_same(E.histogram(np.array([]), 3), np.histogram(np.array([]), 3))
    assert_same(E.histogram(np.arange(5.0), [0, 2, 4]), np.histogram(np.arange(5.0), [0, 2, 4]))
    assert_same(E.histogram(X50.reshape(5, 10), 3), np.histogram(X50, 3))


def test_histogram_under_jit_vmap_grad():
    fun = lambda x, w: E.histogram(x, 6, weights=w)  # noqa: E731
    assert_same(fungrad.jit(fun)(X50, W50), np.histogram(X50, 6, weights=W50))
    batch = np.stack([X50, Y50])
    got = fungrad.vmap(lambda x: E.histogram(x, 4, range=(-2, 2))[0])(batch)
    assert_same(got, np.stack([np.histogram(x, 4, range=(-2, 2))[0] for x in batch]))
    # counts are linear in the weights: d(sum of counts in bin 0)/dw = indicator
    grad = fungrad.grad(lambda w: E.histogram(X50, 4, weights=w)[0][0])(W50)
    edges = np.histogram_bin_edges(X50, 4)
    assert_same(grad, ((X50 >= edges[0]) & (X50 < edges[1])).astype(float))


@pytest.mark.parametrize("kwargs", [{}, {"bins": (3, 4)}, {"bins": 3, "density": True},
                                    {"bins": [np.linspace(-2, 2, 5), np.linspace(-1, 1, 3)]},
                                    {"bins": np.linspace(-2, 2, 4)},
                                    {"weights": W50, "range": [(-1, 1), (-2, 2)]}])
def test_histogram2d_matches_numpy(kwargs):
    assert_same(E.histogram2d(X50, Y50, **kwargs), np.histogram2d(X50, Y50, **kwargs))


def test_histogramdd_matches_numpy():
    sample = RNG.normal(size=(30, 3))
    for kwargs in ({}, {"bins": (2, 3, 4), "range": [(-1, 1), None, (-2, 2)]},
                   {"bins": 3, "weights": W50[:30], "density": True}):
        got, got_edges = E.histogramdd(sample, **kwargs)
        want, want_edges = np.histogramdd(sample, **kwargs)
        assert_same(got, want)
        assert_same(list(got_edges), list(want_edges))
    got, _ = fungrad.jit(lambda s: E.histogramdd(s, bins=3, range=[(-1, 1)] * 3))(sample)
    assert_same(got, np.histogramdd(sample, bins=3, range=[(-1, 1)] * 3)[0])


def test_histogram_errors():
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        E.histogram(X50, 0)
    with pytest.raises(ValueError, match="increase monotonically"):
        E.histogram(X50, [0, 2, 1])
    with pytest.raises(NotImplementedError, match="string bin rules"):
        E.histogram(X50, "auto")
    with pytest.raises(ValueError, match="max must be larger than min"):
        E.histogram(X50, 3, range=(1, 0))
    with pytest.raises(ValueError, match="weights must have the same number"):
        E.histogram(X50, 3, weights=W50[:3])
    with pytest.raises(ValueError, match="one entry per dimension"):
        E.histogramdd(RNG.normal(size=(5, 2)), bins=(2, 3, 4))


def test_bincount_matches_numpy_and_jax_length():
    assert_same(E.bincount(INTS), np.bincount(INTS))
    assert_same(E.bincount(INTS, minlength=10), np.bincount(INTS, minlength=10))
    assert_same(E.bincount(INTS, weights=W50[:20]), np.bincount(INTS, weights=W50[:20]))
    assert_same(E.bincount(np.array([], int)), np.bincount(np.array([], int)))
    with pytest.raises(ConcretizationTypeError, match="length="):
        fungrad.jit(E.bincount)(INTS)
    got = fungrad.jit(lambda x: E.bincount(x, length=4))(INTS)
    assert_same(got, np.bincount(INTS)[:4])                 # as JAX: larger values dropped
    assert_same(E.bincount(np.array([-2, 0, 1]), length=3), np.array([2, 1, 0]))  # JAX clips
    got = fungrad.vmap(lambda x: E.bincount(x, length=6))(INTS.reshape(2, 10))
    assert_same(got, np.stack([np.bincount(r, minlength=6) for r in INTS.reshape(2, 10)]))
    with pytest.raises(TypeError, match="integer array"):
        E.bincount(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-d"):
        E.bincount(np.zeros((2, 2), int))


@pytest.mark.parametrize("bins", [[-1.0, 0.0, 1.0], [1.0, 0.0, -1.0], [0.0, 0.0, 1.0]])
@pytest.mark.parametrize("right", [False, True])
def test_digitize_matches_numpy(bins, right):
    x = np.concatenate([X50, bins])
    assert_same(E.digitize(x, bins, right=right), np.digitize(x, bins, right=right))
    assert_same(fungrad.jit(lambda x, b: E.digitize(x, b, right=right))(x, np.array(bins)),
                np.digitize(x, bins, right=right))


# ----------------------------------------------------------------------------
# Polynomials
# ----------------------------------------------------------------------------

P = np.array([1.0, -2.0, 3.0, 0.5])
Q = np.array([2.0, 1.0])


def test_polynomial_arithmetic_matches_numpy():
    assert_same(E.polyval(P, X50), np.polyval(P, X50))
    assert_same(E.polyval([1, 2, 3], np.arange(4)), np.polyval([1, 2, 3], np.arange(4)))
    assert_same(E.polyval(P, 2.0), np.polyval(P, 2.0))
    for a, b in ((P, Q), (Q, P), ([1, 2], [3]), (P, 2.0)):
        assert_same(E.polyadd(a, b), np.polyadd(a, b))
        assert_same(E.polysub(a, b), np.polysub(a, b))
        assert_same(E.polymul(a, b), np.polymul(a, b))
    assert_same(E.polymul([0, 0, 1, 2], [3, 4], trim_leading_zeros=True), np.polymul([1, 2], [3, 4]))
    for m in range(6):
        assert_same(E.polyder(P, m), np.polyder(P, m))
    assert_same(E.polyder([1, 2, 3]), np.polyder([1, 2, 3]))
    for m, k in ((1, None), (2, [1.0, 2.0]), (3, 3.0), (0, None)):
        assert_same(E.polyint(P, m, k), np.polyint(P, m, k))


def test_polydiv():
    quotient, remainder = E.polydiv(P, Q)
    want_q, want_r = np.polydiv(P, Q)
    assert_same(quotient, want_q)
    assert_same(remainder[-len(want_r):], want_r)     # JAX keeps u's length
    np.testing.assert_allclose(remainder[:-len(want_r)], 0, atol=1e-12)
    assert_same(E.polydiv([1.0, 3.0, 2.0], [1.0, 1.0], trim_leading_zeros=True),
                np.polydiv([1.0, 3.0, 2.0], [1.0, 1.0]))


def test_polyfit_matches_numpy():
    x = np.linspace(0, 1, 12)
    y = np.sin(3 * x)
    assert_same(E.polyfit(x, y, 3), np.polyfit(x, y, 3))
    assert_same(E.polyfit(x, y, 3, w=x + 1), np.polyfit(x, y, 3, w=x + 1))
    y2 = np.stack([y, y ** 2], 1)
    assert_same(E.polyfit(x, y2, 2), np.polyfit(x, y2, 2))
    got, want = E.polyfit(x, y, 3, full=True), np.polyfit(x, y, 3, full=True)
    assert_same(got[:2], want[:2])
    assert int(got[2]) == want[2]
    assert_same(got[3], want[3])
    assert_same(E.polyfit(x, y, 3, cov=True), np.polyfit(x, y, 3, cov=True))
    assert_same(E.polyfit(x, y2, 2, cov="unscaled"), np.polyfit(x, y2, 2, cov="unscaled"))
    jitted = fungrad.jit(lambda x, y: E.polyfit(x, y, 3))(x, y)
    assert_same(jitted, np.polyfit(x, y, 3))
    check_grads(lambda y: E.polyfit(x, y, 2), (y,), order=2)
    with pytest.raises(ValueError, match="deg must be non-negative"):
        E.polyfit(x, y, -1)
    with pytest.raises(ValueError, match="y must be 1-d or 2-d"):
        E.polyfit(x, y[:3], 1)
    with pytest.raises(ValueError, match="w must have the shape of x"):
        E.polyfit(x, y, 1, w=y[:3])


def test_roots_poly_vander():
    # roots are always complex, as in JAX (NumPy drops a zero imaginary part)
    close = lambda got, want: np.testing.assert_allclose(np.sort_complex(got),
                                                         np.sort_complex(want), atol=1e-12)
    close(E.roots(P), np.roots(P))
    close(E.roots([0.0, 1.0, -3.0, 2.0]), np.roots([0.0, 1.0, -3.0, 2.0]))
    close(E.roots([1.0, -3.0, 2.0, 0.0]), np.roots([1.0, -3.0, 2.0, 0.0]))
    assert E.roots(P).dtype == np.complex128
    # under jit the zeros cannot be stripped: strip_zeros=False, as JAX
    close(fungrad.jit(lambda p: E.roots(p, strip_zeros=False))(P), np.roots(P))
    with pytest.raises(ConcretizationTypeError, match="strip_zeros=False"):
        fungrad.jit(E.roots)(P)
    # differentiable: d(sum of roots)/dp = d(-p1/p0)/dp
    g = fungrad.grad(lambda p: fnp.real(fnp.sum(E.roots(p))))(np.array([2.0, -3.0, 1.0]))
    np.testing.assert_allclose(g, [-3.0 / 4.0, -0.5, 0.0], atol=1e-12)
    for zeros in ([1.0, 2.0, 3.0], np.roots(P), [], [2.0], [1, 2]):
        assert_same(E.poly(zeros), np.poly(zeros))
    square = RNG.normal(size=(3, 3))
    np.testing.assert_allclose(E.poly(square), np.poly(square), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fungrad.jit(E.poly)(square), np.poly(square), rtol=1e-12,
                               atol=1e-12)
    assert_same(fungrad.jit(E.poly)(np.array([1.0, 2.0])), np.poly([1.0, 2.0]))
    x = RNG.normal(size=4)
    for kwargs in ({}, {"N": 6}, {"N": 2, "increasing": True}, {"N": 0}):
        assert_same(E.vander(x, **kwargs), np.vander(x, **kwargs))
    assert_same(E.vander(np.arange(3)), np.vander(np.arange(3)))
    with pytest.raises(ValueError, match="x must be 1-d"):
        E.vander(np.ones((2, 2)))


def test_polynomials_under_transformations():
    got = fungrad.vmap(E.polyval, in_axes=(0, None))(np.stack([P, -P]), X50[:5])
    assert_same(got, np.stack([np.polyval(P, X50[:5]), np.polyval(-P, X50[:5])]))
    dp = fungrad.grad(lambda x: E.polyval(P, x))(0.7)
    assert_same(dp, np.polyval(np.polyder(P), 0.7))
    assert_same(fungrad.jit(E.polymul)(P, Q), np.polymul(P, Q))
    with pytest.raises(ConcretizationTypeError):
        fungrad.jit(lambda a: E.polymul(a, Q, trim_leading_zeros=True))(P)
    with pytest.raises(ValueError, match="non-negative"):
        E.polyder(P, -1)
    with pytest.raises(ValueError, match="k must be a scalar or have m=2"):
        E.polyint(P, 2, k=[1.0])


# ----------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------

FW = RNG.integers(1, 4, 6)
AW = RNG.random(6)


@pytest.mark.parametrize("kwargs", [{}, {"bias": True}, {"ddof": 2}, {"fweights": FW},
                                    {"aweights": AW}, {"fweights": FW, "aweights": AW},
                                    {"fweights": FW, "aweights": AW, "ddof": 0},
                                    {"aweights": AW, "bias": True}])
def test_cov_matches_numpy(kwargs):
    assert_same(E.cov(M, **kwargs), np.cov(M, **kwargs))
    assert_same(E.cov(M.T, rowvar=False, **kwargs), np.cov(M.T, rowvar=False, **kwargs))


def test_cov_corrcoef_shapes_and_dtypes():
    for args in ((M[0],), (M[0], M[1]), (M[:2], M[2]), (M.astype(np.float32),),
                 (np.arange(6),), (M[:, :1].T,)):
        assert_same(E.cov(*args), np.cov(*args))
        with np.errstate(all="ignore"):
            assert_same(E.corrcoef(*args), np.corrcoef(*args))
    c = M[0] + 1j * M[1]
    assert_same(E.cov(c), np.cov(c))
    assert_same(E.corrcoef(np.stack([c, M[2]])), np.corrcoef(np.stack([c, M[2]])))
    assert_same(E.corrcoef(M.T, rowvar=False), np.corrcoef(M.T, rowvar=False))
    assert_same(fungrad.jit(E.cov)(M), np.cov(M))
    got = fungrad.vmap(E.corrcoef)(np.stack([M, 2 * M + 1]))
    assert_same(got, np.stack([np.corrcoef(M), np.corrcoef(M)]))
    check_grads(lambda m, w: E.cov(m, aweights=w), (M, AW + 0.5), order=2)
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        E.cov(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="fweights must be integers"):
        E.cov(M, fweights=AW)
    with pytest.raises(ValueError, match="aweights cannot be negative"):
        E.cov(M, aweights=-AW)
    with pytest.raises(ValueError, match="one weight per observation"):
        E.cov(M, aweights=AW[:2])


# ----------------------------------------------------------------------------
# Convolution, interpolation, integration, windows
# ----------------------------------------------------------------------------

def test_interp_and_trapezoid_match_numpy():
    xp, fp = np.array([-1.0, 0.0, 0.0, 2.0]), np.array([1.0, 3.0, 4.0, 2.0])
    x = np.concatenate([X50, xp, [-5.0, 5.0]])
    assert_same(E.interp(x, xp, fp), np.interp(x, xp, fp))
    assert_same(E.interp(x, xp, fp, left=-5, right=7), np.interp(x, xp, fp, left=-5, right=7))
    assert_same(E.interp(x, [-1.0, 0.5, 2.0], fp[:3], period=3),
                np.interp(x, [-1.0, 0.5, 2.0], fp[:3], period=3))
    assert_same(E.interp(x, [0.5], [2.0]), np.interp(x, [0.5], [2.0]))
    assert_same(E.interp(2, [1, 3], [0, 10]), np.interp(2, [1, 3], [0, 10]))
    assert_same(fungrad.jit(E.interp)(x, xp, fp), np.interp(x, xp, fp))
    assert_same(fungrad.grad(lambda t: E.interp(t, xp, fp))(1.0), -1.0)   # (2 - 4) / 2
    with pytest.raises(ValueError, match="same length"):
        E.interp(x, xp, fp[:2])
    assert_same(E.trapezoid(M), np.trapezoid(M))
    assert_same(E.trapezoid(M, np.linspace(0, 1, 6)), np.trapezoid(M, np.linspace(0, 1, 6)))
    assert_same(E.trapezoid(M, dx=0.5, axis=0), np.trapezoid(M, dx=0.5, axis=0))
    assert_same(E.trapezoid(M, M), np.trapezoid(M, M))


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows_match_numpy(name):
    for size in (0, 1, 2, 5, 6):
        assert_same(getattr(E, name)(size), getattr(np, name)(size))


# ----------------------------------------------------------------------------
# vectorize, apply_along_axis, apply_over_axes
# ----------------------------------------------------------------------------

def test_vectorize_elementwise_and_broadcasting():
    f = E.vectorize(lambda a, b: a * b + fnp.sin(a))
    x, y = RNG.normal(size=(2, 1, 3)), RNG.normal(size=(4, 1))
    assert_same(f(x, y), x * y + np.sin(x))
    assert_same(f(2.0, 3.0), np.asarray(6.0 + np.sin(2.0)))
    assert_same(fungrad.jit(f)(x, y), x * y + np.sin(x))
    calls = []
    g = E.vectorize(lambda a: calls.append(np.shape(a)) or a + 1)
    g(x)
    assert calls == [()]          # called once, on a scalar, under vmap


def test_vectorize_signature_and_excluded():
    matvec = E.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")
    ms, vs = RNG.normal(size=(5, 2, 3)), RNG.normal(size=(4, 1, 3))
    assert_same(matvec(ms, vs), np.einsum("bmn,cbn->cbm", ms, vs[:, 0][:, None].repeat(5, 1)))
    two = E.vectorize(lambda v: (fnp.sum(v), fnp.max(v)), signature="(n)->(),()")
    assert_same(two(ms), (ms.sum(-1), ms.max(-1)))
    scaled = E.vectorize(lambda x, power, *, scale: scale * x ** power, excluded={1, "scale"})
    assert_same(scaled(ms, 2, scale=3.0), 3.0 * ms ** 2)
    kw = E.vectorize(lambda x, *, shift: x + shift)
    assert_same(kw(ms, shift=np.arange(3.0)), ms + np.arange(3.0))
    g = fungrad.grad(lambda x: fnp.sum(matvec(ms, x)))(vs[0, 0])
    assert_same(g, ms.sum(axis=(0, 1)))
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        matvec(ms, np.ones(4))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        E.vectorize(lambda x: x, signature="(n->()")(ms)
    with pytest.raises(ValueError, match="does not match the signature"):
        E.vectorize(lambda v: v, signature="(n)->()")(ms)
    with pytest.raises(TypeError, match="has 2 inputs"):
        matvec(ms)


def test_apply_along_and_over_axes():
    a = RNG.normal(size=(2, 3, 4))
    for axis in (0, 1, 2, -1):
        assert_same(E.apply_along_axis(lambda v: v.sum() * v[0], axis, a),
                    np.apply_along_axis(lambda v: v.sum() * v[0], axis, a))
        assert_same(E.apply_along_axis(lambda v: v[:2], axis, a),
                    np.apply_along_axis(lambda v: v[:2], axis, a))
    assert_same(E.apply_over_axes(fnp.sum, a, [0, 2]), np.apply_over_axes(np.sum, a, [0, 2]))
    assert_same(E.apply_over_axes(fnp.sum, a, 1), np.apply_over_axes(np.sum, a, 1))


# ----------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------

def test_small_helpers():
    c = np.array([1 + 1j, 2, 3j])
    assert_same(E.iscomplex(c), np.iscomplex(c))
    assert_same(E.isreal(c), np.isreal(c))
    assert_same(E.isreal(M), np.isreal(M))
    z = np.zeros((2, 3, 4, 5))
    for axis, start in ((3, 1), (1, 4), (-1, 0), (2, 2), (0, -1)):
        assert E.rollaxis(z, axis, start).shape == np.rollaxis(z, axis, start).shape
    assert_same(E.matvec(M, M[0]), np.matvec(M, M[0]))
    assert_same(E.vecmat(M[:, 0], M), np.vecmat(M[:, 0], M))
    for shape, val, wrap in (((5, 3), [1, 2], True), ((5, 3), 7, False), ((3, 3, 3), 4, False),
                             ((2, 4), [1, 2, 3], False)):
        want = np.zeros(shape)
        np.fill_diagonal(want, val, wrap=wrap)
        assert_same(E.fill_diagonal(np.zeros(shape), val, wrap, inplace=False), want)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        E.fill_diagonal(np.zeros((2, 2)), 1)
    assert E.iterable([1]) and not E.iterable(np.float64(1.0)) and not E.iterable(np.array(1))


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "int8", "int16", "int32",
                                  "int64", "uint8", "uint16", "uint32", "uint64", "complex64",
                                  "complex128", "bool_", "bool"])
def test_scalar_types_are_jaxs(name):
    # as jax.numpy: calling one makes a 0-d array, .dtype is NumPy's dtype, and it
    # compares, hashes and isinstance-checks as NumPy's scalar type
    t = getattr(fnp, name)
    np_type = getattr(np, name)
    x = t(1)
    assert isinstance(x, fungrad.Array) and x.shape == () and x.dtype == np.dtype(np_type)
    assert t.dtype == np.dtype(np_type) and np.dtype(t) == np.dtype(np_type)
    assert t == np_type and np_type == t and {np_type: "v"}[t] == "v"
    assert isinstance(np_type(0), t) and not isinstance("0", t)
    assert fnp.zeros(2, t).dtype == np.dtype(np_type)
    assert np.ones(2).astype(t).dtype == np.dtype(np_type)
    assert fnp.issubdtype(t, fnp.generic) and fnp.issubdtype(t, np_type)
