"""Values, special points, derivatives and bad input for the rest of
jax.scipy.special (fungrad/lax/special_functions.py, its kernels and
fungrad/scipy/_special_more.py).

Values are compared with mpmath (30 digits) on chosen points across every
branch of each kernel, to about 1e-13 relative (absolute near a function's
zeros), and with scipy.special on dense random samples.  The generic suite
(tests/cases/special_functions.py) covers jit, vmap and finite differences.
"""
import math

import mpmath
import numpy as np
import pytest
import scipy.special as sc

import fungrad
import fungrad.scipy.special as fsp
from fungrad.lax import special_functions as lsf
from fungrad.test_util import check_grads

mpmath.mp.dps = 30
RNG = np.random.default_rng(2024)


def _rel_err(got, want, floor=1e-300):
    got, want = np.asarray(got), np.asarray(want)
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), floor))


def _mp(fn, *columns):
    return np.array([complex(fn(*v)) if isinstance(fn(*v), mpmath.mpc) else float(fn(*v))
                     for v in zip(*columns)])


# ----------------------------------------------------------------------------
# values against mpmath, on points in every branch of each kernel
# ----------------------------------------------------------------------------

X_ERFCX = np.array([-26.0, -5.0, -1.3, -0.2, 0.0, 0.3, 1.0, 1.49, 1.5, 2.0, 5.0, 30.0, 1e3, 1e9])
X_POS = np.array([1e-8, 0.01, 0.5, 1.0, 1.0001, 2.0, 10.0, 50.0, 300.0])
X_EI = np.array([-50.0, -3.0, -0.1, 1e-8, 0.2, 1.0, 5.0, 39.9, 40.1, 100.0, 700.0])
X_DAWSN = np.array([-8.0, -1.0, 1e-9, 0.1, 0.92, 2.0, 4.0, 6.99, 7.0, 12.0, 100.0, 1e5])
X_SICI = np.array([-10.0, -4.1, -1.0, 1e-6, 0.5, 2.0, 3.99, 4.01, 8.0, 50.0, 1e4])
X_FRESNEL = np.array([-3.0, -0.5, 1e-5, 0.2, 1.0, 1.79, 1.81, 3.3, 10.0, 100.0])
X_SPENCE = np.array([1e-9, 0.1, 0.5, 0.7, 1.5, 2.0, 2.5, 10.0, 1e6])


@pytest.mark.parametrize("name, fun, ref, xs, tol", [
    ("erfcx", fsp.erfcx, lambda v: mpmath.exp(v * v) * mpmath.erfc(v), X_ERFCX, 5e-15),
    ("exp1", fsp.exp1, mpmath.e1, X_POS, 5e-15),
    ("expi", fsp.expi, mpmath.ei, X_EI, 2e-14),
    ("dawsn", fsp.dawsn, lambda v: mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(-v * v) * mpmath.erfi(v),
     X_DAWSN, 2e-15),
    ("si", lambda x: fsp.sici(x)[0], mpmath.si, X_SICI, 5e-15),
    ("ci", lambda x: fsp.sici(x)[1], lambda v: mpmath.ci(abs(v)), X_SICI, 1e-13),
    ("fresnel_s", lambda x: fsp.fresnel(x)[0], mpmath.fresnels, X_FRESNEL, 5e-15),
    ("fresnel_c", lambda x: fsp.fresnel(x)[1], mpmath.fresnelc, X_FRESNEL, 5e-15),
    ("spence", fsp.spence, lambda v: mpmath.polylog(2, 1 - v), X_SPENCE, 2e-15),
])
def test_unary_functions_against_mpmath(name, fun, ref, xs, tol):
    want = _mp(lambda v: ref(mpmath.mpf(v)), xs)
    assert _rel_err(fun(xs), want) < tol


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 20])
def test_expn_against_mpmath(n):
    want = _mp(lambda v: mpmath.expint(n, v), X_POS)
    assert _rel_err(fsp.expn(n, X_POS), want) < 1e-14


def test_owens_t_against_scipy_and_mpmath():
    h = np.array([0.0, 0.3, 1.0, 2.5, 5.0, 9.0, -1.2, 0.5, 3.0, 0.01, 7.0])
    a = np.array([0.5, 1.0, 0.2, 0.99, 0.8, 1.0, 3.0, 10.0, 2.5, 100.0, -4.0])
    assert _rel_err(fsp.owens_t(h, a), sc.owens_t(h, a)) < 5e-15
    # a tiny T at a large h: mpmath needs break points closer than the
    # integrand's width 1/h (and Gauss-Legendre: its tanh-sinh is 4e-14 off here)
    hv, av = mpmath.mpf(20), mpmath.mpf("0.9")
    integrand = lambda t: mpmath.exp(-hv ** 2 * (1 + t * t) / 2) / (1 + t * t)
    want = (mpmath.quad(integrand, mpmath.linspace(0, av, 46), method="gauss-legendre")
            / (2 * mpmath.pi))
    assert abs(fsp.owens_t(20.0, 0.9) / float(want) - 1) < 5e-15


def test_hypergeometric_against_mpmath():
    a = np.array([1.0, 0.5, 2.3, -2.0, 3.0, 10.0, 0.1, -3.0])
    b = np.array([2.0, 1.5, 0.7, 3.0, 5.0, 20.0, 4.0, 2.5])
    x = np.array([-1.0, 3.0, -20.0, 5.0, 40.0, -10.0, 0.5, 7.0])
    assert _rel_err(fsp.hyp1f1(a, b, x), _mp(mpmath.hyp1f1, a, b, x)) < 1e-14
    a = np.array([1.0, 0.5, 2.3, -2.0, 3.0, 1.5, 0.3])
    b = np.array([2.0, 1.5, 0.7, 3.0, 0.5, 2.0, -0.4])
    c = np.array([3.0, 2.5, 4.0, 5.0, 4.5, 3.2, 1.7])
    x = np.array([0.5, -3.0, 0.9, 0.7, -0.5, 0.95, -20.0])
    assert _rel_err(fsp.hyp2f1(a, b, c, x), _mp(mpmath.hyp2f1, a, b, c, x)) < 1e-13


def test_bessel_jn_against_mpmath():
    z = np.array([-7.5, 0.0, 1e-3, 0.5, 3.0, 10.0, 35.0, 120.0])
    table = fsp.bessel_jn(z, v=8)
    assert table.shape == (9, 8)
    want = np.array([[float(mpmath.besselj(n, v)) for v in z] for n in range(9)])
    np.testing.assert_allclose(table, want, rtol=1e-13, atol=2e-16)


def test_wofz_against_mpmath():
    z = np.concatenate([s * RNG.standard_normal(30) + 1j * RNG.uniform(-1.5, 1.5 * s, 30)
                        for s in (0.5, 2.0, 5.0, 9.0, 40.0)])   # (w overflows far below the axis)
    z = np.concatenate([z, [0.0, 1e-3, 3.0, 50.0, 7.9 + 0.1j, 8.1 + 0.1j]])
    want = _mp(lambda v: mpmath.exp(-mpmath.mpc(v) ** 2) * mpmath.erfc(-1j * mpmath.mpc(v)), z)
    got = fsp.wofz(z)
    assert got.dtype == np.complex128
    assert _rel_err(got, want) < 1e-14


def test_sph_harm_y_against_scipy():
    n = np.array([0, 1, 1, 2, 3, 4, 6, 6, 10])
    m = np.array([0, -1, 1, 2, -2, 0, 5, -6, 7])
    theta = RNG.uniform(0, np.pi, n.shape)
    phi = RNG.uniform(0, 2 * np.pi, n.shape)
    got = fsp.sph_harm_y(n, m, theta, phi)
    np.testing.assert_allclose(got, sc.sph_harm_y(n, m, theta, phi), rtol=1e-12, atol=1e-15)
    # orthonormal on the sphere: int |Y|^2 = 1 by Gauss-Legendre in cos(theta)
    nodes, weights = np.polynomial.legendre.leggauss(30)
    y = fsp.sph_harm_y(5, 3, np.arccos(nodes), 0.7)
    assert abs(2 * np.pi * np.sum(weights * np.abs(y) ** 2) - 1) < 1e-13
    jitted = fungrad.jit(lambda t, p: fsp.sph_harm_y(n, m, t, p, n_max=10))
    np.testing.assert_allclose(jitted(theta, phi), got, rtol=1e-14)


# ----------------------------------------------------------------------------
# against scipy on dense random samples
# ----------------------------------------------------------------------------

def test_dense_samples_against_scipy():
    x = RNG.uniform(-26, 30, 3000)          # erfcx overflows below -26.6
    pos = np.exp(RNG.uniform(-8, 6, 3000))
    assert _rel_err(fsp.erfcx(x), sc.erfcx(x)) < 1e-13
    assert _rel_err(fsp.exp1(pos), sc.exp1(pos)) < 1e-13
    assert _rel_err(fsp.dawsn(x), sc.dawsn(x)) < 1e-13
    si, ci = fsp.sici(x)
    assert _rel_err(si, sc.sici(x)[0]) < 1e-13
    s, c = fsp.fresnel(x / 3)
    assert _rel_err(s, sc.fresnel(x / 3)[0]) < 1e-13 and _rel_err(c, sc.fresnel(x / 3)[1]) < 1e-13
    assert _rel_err(fsp.spence(pos), sc.spence(pos), floor=1e-3) < 1e-13
    h, a = RNG.uniform(-6, 6, 3000), RNG.uniform(-6, 6, 3000)
    assert _rel_err(fsp.owens_t(h, a), sc.owens_t(h, a), floor=1e-12) < 1e-12
    n = RNG.integers(0, 8, 3000)
    assert _rel_err(fsp.expn(n, pos), sc.expn(n, pos)) < 1e-13


def test_comb_bernoulli_boxcox_loggamma():
    big_n, k = np.meshgrid(np.arange(0, 30), np.arange(-2, 32))
    np.testing.assert_array_equal(fsp.comb(big_n, k), sc.comb(big_n, k))   # whole counts exact
    np.testing.assert_allclose(fsp.comb(7.5, 2.5), sc.comb(7.5, 2.5), rtol=1e-13)
    np.testing.assert_array_equal(fsp.comb(5, 2, repetition=True), 15.0)
    assert fsp.comb(40, 20, exact=True) == math.comb(40, 20)
    assert fsp.comb(5, 7, exact=True) == 0 and fsp.comb(3, 2, exact=True, repetition=True) == 6
    # exact fractions, rounded once (SciPy's bernoulli is off by ~1e-12 here)
    np.testing.assert_array_equal(fsp.bernoulli(30),
                                  [-0.5 if k == 1 else float(mpmath.bernoulli(k)) for k in range(31)])
    np.testing.assert_allclose(fsp.bernoulli(20), sc.bernoulli(20), rtol=1e-11, atol=1e-300)
    x, lam = RNG.uniform(0.1, 5, 50), RNG.uniform(-2, 2, 50)
    np.testing.assert_allclose(fsp.boxcox(x, lam), sc.boxcox(x, lam), rtol=1e-14)
    np.testing.assert_allclose(fsp.boxcox1p(x - 0.5, lam), sc.boxcox1p(x - 0.5, lam), rtol=1e-14)
    np.testing.assert_array_equal(fsp.boxcox(2.0, 0.0), np.log(2.0))
    np.testing.assert_allclose(fsp.loggamma(np.array([0.5, 3.0, 150.0])),
                               sc.loggamma(np.array([0.5, 3.0, 150.0])), rtol=1e-14)
    assert np.isnan(fsp.loggamma(-0.5)) and fsp.loggamma(0.0) == np.inf


# ----------------------------------------------------------------------------
# special points
# ----------------------------------------------------------------------------

def test_special_points():
    assert fsp.erfcx(np.inf) == 0 and fsp.erfcx(-np.inf) == np.inf and fsp.erfcx(0.0) == 1
    assert fsp.exp1(0.0) == np.inf and np.isnan(fsp.exp1(-1.0)) and fsp.exp1(np.inf) == 0
    assert fsp.expi(0.0) == -np.inf
    np.testing.assert_array_equal(fsp.expn(np.array([0, 1, 2, 3]), 0.0), [np.inf, np.inf, 1.0, 0.5])
    assert np.isnan(fsp.expn(-1, 1.0))
    assert fsp.dawsn(0.0) == 0 and fsp.dawsn(np.inf) == 0
    si, ci = fsp.sici(np.array([0.0, np.inf]))
    np.testing.assert_array_equal(si, [0.0, np.pi / 2])
    np.testing.assert_array_equal(ci, [-np.inf, 0.0])
    np.testing.assert_array_equal(fsp.fresnel(np.inf), (0.5, 0.5))
    np.testing.assert_array_equal(fsp.spence(np.array([0.0, 1.0])), [np.pi ** 2 / 6, 0.0])
    assert np.isnan(fsp.spence(-1.0))
    h = np.array([0.3, 1.7, -2.2])
    phi = 0.5 * sc.erfc(-h / np.sqrt(2))
    np.testing.assert_allclose(fsp.owens_t(h, 1.0), phi * (1 - phi) / 2, rtol=1e-14)
    np.testing.assert_allclose(fsp.owens_t(0.0, np.array([0.5, 3.0])),
                               np.arctan([0.5, 3.0]) / (2 * np.pi), rtol=1e-14)
    np.testing.assert_allclose(fsp.owens_t(h, np.inf), 0.5 * sc.erfc(np.abs(h) / np.sqrt(2)) / 2,
                               rtol=1e-14)
    np.testing.assert_array_equal(fsp.owens_t(h, 0.0), 0.0)
    np.testing.assert_allclose(fsp.hyp1f1(2.5, 2.5, h), np.exp(h), rtol=1e-14)
    np.testing.assert_array_equal(fsp.hyp1f1(0.0, 2.0, h), 1.0)
    x = np.array([-0.9, 0.3, 0.8])
    np.testing.assert_allclose(fsp.hyp2f1(1.0, 1.0, 2.0, x), -np.log1p(-x) / x, rtol=1e-13)
    np.testing.assert_array_equal(fsp.bessel_jn(0.0, v=3), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(fsp.wofz(0.0), 1.0, rtol=1e-15)


def test_float32_is_kept():
    x = np.linspace(0.1, 3, 7, dtype=np.float32)
    for fun in (fsp.erfcx, fsp.exp1, fsp.expi, fsp.dawsn, fsp.spence,
                lambda v: fsp.sici(v)[1], lambda v: fsp.fresnel(v)[0],
                lambda v: fsp.owens_t(v, v), lambda v: fsp.hyp1f1(1.0, 2.0, v),
                lambda v: fsp.bessel_jn(v, v=2)):
        assert fun(x).dtype == np.float32
    assert fsp.wofz(x).dtype == np.complex64


# ----------------------------------------------------------------------------
# derivatives
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("fun, x", [
    (fsp.erfcx, np.array([-1.0, 0.4, 2.0, 7.0])),
    (fsp.dawsn, np.array([-3.0, 0.2, 5.0, 8.0])),
    (fsp.expi, np.array([-2.0, 0.7, 3.0, 45.0])),
    (fsp.exp1, np.array([0.3, 1.0, 4.0])),
    (lambda x: fsp.sici(x)[0], np.array([-5.0, 0.0, 2.0, 6.0])),
    (lambda x: fsp.fresnel(x)[1], np.array([-2.0, 0.5, 1.9])),
    (fsp.spence, np.array([0.3, 1.0, 2.5])),
    (lambda x: fsp.expn(3, x), np.array([0.5, 2.0])),
    (lambda x: fsp.expn(0, x), np.array([0.5, 2.0])),
    (lambda x: fsp.bessel_jn(x, v=4), np.array([0.0, 1.5, 12.0])),
    (lambda x: fsp.hyp1f1(1.5, 2.5, x), np.array([-3.0, 0.5, 4.0])),
    (lambda x: fsp.hyp2f1(0.5, 1.5, 2.5, x), np.array([-1.0, 0.3])),
])
def test_derivatives_to_third_order(fun, x):
    check_grads(fun, (x,), order=3, modes=("fwd", "rev"), rtol=1e-5, atol=1e-7)


def test_derivatives_match_closed_forms_at_special_points():
    np.testing.assert_allclose(fungrad.grad(lambda x: fsp.sici(x)[0])(0.0), 1.0)
    np.testing.assert_allclose(fungrad.grad(fsp.spence)(1.0), -1.0)
    np.testing.assert_allclose(fungrad.grad(fsp.erfcx)(0.0), -2 / np.sqrt(np.pi), rtol=1e-15)
    np.testing.assert_allclose(fungrad.grad(fsp.dawsn)(0.0), 1.0)
    h, a = 0.7, 1.3
    dh, da = fungrad.grad(fsp.owens_t, argnums=(0, 1))(h, a)
    np.testing.assert_allclose(dh, -np.exp(-h * h / 2) / np.sqrt(2 * np.pi)
                               * math.erf(a * h / np.sqrt(2)) / 2, rtol=1e-14)
    np.testing.assert_allclose(da, np.exp(-h * h * (1 + a * a) / 2) / (2 * np.pi * (1 + a * a)),
                               rtol=1e-14)
    check_grads(fsp.owens_t, (np.array([0.2, -1.5]), np.array([0.5, 3.0])), order=2, rtol=1e-5)
    # w'(z) = -2 z w(z) + 2i / sqrt(pi), holomorphic
    z = 0.8 + 0.6j
    np.testing.assert_allclose(fungrad.grad(fsp.wofz, holomorphic=True)(z),
                               -2 * z * sc.wofz(z) + 2j / np.sqrt(np.pi), rtol=1e-13)
    d_theta = fungrad.grad(lambda t: fsp.sph_harm_y(2, 1, t, 0.4).real)(0.9)
    eps = 1e-6
    fd = (sc.sph_harm_y(2, 1, 0.9 + eps, 0.4).real - sc.sph_harm_y(2, 1, 0.9 - eps, 0.4).real) / (2 * eps)
    np.testing.assert_allclose(d_theta, fd, rtol=1e-7)
    # boxcox at lmbda = 0: d/dlmbda = log(x)^2 / 2, no 0/0
    np.testing.assert_allclose(fungrad.grad(fsp.boxcox, argnums=1)(2.0, 0.0), np.log(2.0) ** 2 / 2)


def test_parameters_without_derivatives_raise():
    with pytest.raises(TypeError, match="hyp1f1.*derivative with respect to a"):
        fungrad.grad(lambda a: lsf.hyp1f1(a, 2.0, 1.0))(1.0)
    with pytest.raises(TypeError, match="expn.*the order n"):
        fungrad.grad(lambda n: lsf.expn(n, 1.0))(2.0)
    # the scipy-level functions hold the parameters fixed (zero derivative)
    assert fungrad.grad(lambda a: fsp.hyp1f1(a, 2.0, 1.0))(1.0) == 0.0


def _nth_derivative(fun, n, argnum=0):
    for _ in range(n):
        fun = fungrad.grad(fun, argnum)
    return fun


@pytest.mark.parametrize("a, x", [(0.3, 0.2), (1.7, 2.0), (4.0, 9.0), (12.0, 10.0), (0.7, 3.0)])
def test_gammainc_differentiable_in_a_to_any_order(a, x):
    # series (x <= a + 1) and continued-fraction regions; mpmath differentiates
    # the regularized incomplete gamma numerically at 30 digits
    for order in range(1, 5):
        want = float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a, order))
        got = _nth_derivative(lambda s: fsp.gammainc(s, x), order)(a)
        assert abs(got - want) <= 1e-11 * abs(want) + 1e-14, (order, got, want)
        got_q = _nth_derivative(lambda s: fsp.gammaincc(s, x), order)(a)
        assert abs(got_q + want) <= 1e-11 * abs(want) + 1e-14
    mixed = float(mpmath.diff(lambda s, t: mpmath.gammainc(s, 0, t, regularized=True), (a, x),
                              (2, 1)))
    got = fungrad.grad(fungrad.grad(fungrad.grad(fsp.gammainc), 1))(a, x)
    assert abs(got - mixed) <= 1e-11 * abs(mixed) + 1e-14


def test_gammainc_second_derivative_in_a_transforms():
    a, x = np.array([0.5, 2.0, 7.0]), np.array([1.0, 1.5, 9.0])
    second = lambda a, x: _nth_derivative(fsp.gammainc, 2)(a, x)
    want = np.array([second(ai, xi) for ai, xi in zip(a, x)])
    np.testing.assert_allclose(fungrad.vmap(second)(a, x), want, rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(second))(a, x), want, rtol=1e-13)
    check_grads(lambda a: fsp.gammainc(a, x), (a,), order=3, modes=("fwd", "rev"), rtol=1e-5)


# ----------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------

def test_bad_input():
    with pytest.raises(TypeError, match="erfcx is defined for real inputs only.*complex128"):
        fsp.erfcx(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="`v`.*non-negative Python int"):
        fsp.bessel_jn(1.0, v=2.5)
    with pytest.raises(TypeError, match="`n` must be a non-negative Python int"):
        fsp.bernoulli(-1)
    with pytest.raises(TypeError, match="comb\\(exact=True\\).*concrete integer"):
        fsp.comb(np.array([5, 6]), 2, exact=True)
    with pytest.raises(NotImplementedError, match="diff_n"):
        fsp.sph_harm_y(1, 0, 0.5, 0.5, diff_n=1)
    with pytest.raises(TypeError, match="n_max"):
        fungrad.jit(lambda n: fsp.sph_harm_y(n, 0, 0.5, 0.5))(np.array([2]))
    with pytest.raises(TypeError, match="requires real floating-point"):
        lsf.spence(np.int64(3))           # the primitives check dtypes in their shape rules
