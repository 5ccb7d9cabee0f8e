"""Values, identities, derivatives, transformations and bad input for
fungrad/lax/special.py and fungrad/scipy/_special_extra.py.

Values are compared with scipy.special and mpmath when they are importable;
the identities (P + Q = 1, beta symmetry, zeta(2) = pi^2/6, ndtri o ndtr = id,
...) need neither.
"""
import math

import numpy as np
import pytest

import fungrad
from fungrad.lax import special as ls
from fungrad.lax.kernels import gamma_zeta as sm2
from fungrad.scipy import _special_extra as sx
from fungrad.scipy import special as fsp
from fungrad.test_util import check_grads

import mpmath                  # test dependencies (the "test" extra)
import scipy.special as sc
RNG = np.random.default_rng(1234)


def _rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300))


# ----------------------------------------------------------------------------
# Values against scipy / mpmath
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi", [(1e-3, 1.0), (0.1, 10.0), (1.0, 100.0)])
def test_incomplete_gamma_vs_scipy(lo, hi):
    a = np.exp(RNG.uniform(np.log(lo), np.log(hi), 2000))
    x = a * np.exp(RNG.uniform(-1.5, 1.5, 2000))
    assert _rel_err(sx.gammainc(a, x), sc.gammainc(a, x)) < 1e-12
    assert _rel_err(sx.gammaincc(a, x), sc.gammaincc(a, x)) < 1e-12


def test_incomplete_gamma_and_grad_a_vs_mpmath():
    mpmath.mp.dps = 30
    a = np.exp(RNG.uniform(np.log(0.01), np.log(50), 40))
    x = a * np.exp(RNG.uniform(-1, 1, 40))
    p, q, g = ls.igamma(a, x), ls.igammac(a, x), ls.igamma_grad_a(a, x)
    for ai, xi, pi, qi, gi in zip(a, x, p, q, g):
        tp = mpmath.gammainc(ai, 0, xi, regularized=True)
        tq = mpmath.gammainc(ai, xi, mpmath.inf, regularized=True)
        tg = mpmath.diff(lambda s: mpmath.gammainc(s, 0, xi, regularized=True), ai)
        assert abs((pi - tp) / tp) < 1e-13 and abs((qi - tq) / tq) < 1e-13
        assert abs((gi - tg) / tg) < 1e-12


def test_betainc_zeta_bessel_ndtri_vs_scipy():
    a, b = np.exp(RNG.uniform(-2, 4, 2000)), np.exp(RNG.uniform(-2, 4, 2000))
    x = RNG.uniform(0, 1, 2000)
    want = sc.betainc(a, b, x)
    keep = want > 1e-280
    assert _rel_err(np.asarray(sx.betainc(a, b, x))[keep], want[keep]) < 1e-12
    s, q = RNG.uniform(1.01, 60, 2000), np.exp(RNG.uniform(-4, 5, 2000))
    assert _rel_err(sx.zeta(s, q), sc.zeta(s, q)) < 1e-13
    t = np.concatenate([RNG.uniform(-40, 40, 2000), RNG.uniform(-800, 800, 100)])
    assert _rel_err(sx.i0e(t), sc.i0e(t)) < 1e-14
    assert _rel_err(sx.i1e(t), sc.i1e(t)) < 1e-14
    small = RNG.uniform(-30, 30, 500)
    assert _rel_err(sx.i0(small), sc.i0(small)) < 1e-13
    assert _rel_err(sx.i1(small), sc.i1(small)) < 1e-13
    p = np.concatenate([RNG.uniform(0, 1, 2000), np.exp(RNG.uniform(-700, 0, 500))])
    np.testing.assert_allclose(sx.ndtri(p), sc.ndtri(p), rtol=1e-13, atol=1e-14)


def test_gamma_family_vs_scipy():
    x = np.concatenate([RNG.uniform(0.05, 20, 200), -RNG.integers(0, 5, 100) - RNG.uniform(0.1, 0.9, 100)])
    np.testing.assert_allclose(sx.gamma(x), sc.gamma(x), rtol=1e-12)
    np.testing.assert_array_equal(sx.gammasgn(x), np.sign(sc.gamma(x)))
    a, b = RNG.uniform(0.1, 10, 100), RNG.uniform(0.1, 10, 100)
    np.testing.assert_allclose(sx.betaln(a, b), sc.betaln(a, b), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(sx.beta(a, b), sc.beta(a, b), rtol=1e-12)
    np.testing.assert_allclose(sx.multigammaln(a + 3, 4), sc.multigammaln(a + 3, 4), rtol=1e-12)
    np.testing.assert_allclose(sx.poch(a, b), sc.poch(a, b), rtol=1e-11)
    n = np.arange(-2, 15.0)
    np.testing.assert_allclose(sx.factorial(n), sc.factorial(n), rtol=1e-12)
    np.testing.assert_allclose(sx.polygamma(2, a), sc.polygamma(2, a), rtol=1e-12)
    p, q = np.array([0.0, 0.0, 0.5, 2.0, 1.0, -1.0]), np.array([0.0, 2.0, 0.25, 3.0, -1.0, 1.0])
    np.testing.assert_allclose(sx.rel_entr(p, q), sc.rel_entr(p, q))
    np.testing.assert_allclose(sx.kl_div(p, q), sc.kl_div(p, q))


# ----------------------------------------------------------------------------
# Identities (no reference library needed)
# ----------------------------------------------------------------------------

def test_identities():
    a = np.exp(RNG.uniform(-3, 4, 500))
    x = a * np.exp(RNG.uniform(-2, 2, 500))
    np.testing.assert_allclose(sx.gammainc(a, x) + sx.gammaincc(a, x), 1.0, rtol=0, atol=3e-15)
    b, t = np.exp(RNG.uniform(-2, 3, 500)), RNG.uniform(0, 1, 500)
    np.testing.assert_allclose(sx.betainc(a, b, t), 1 - np.asarray(sx.betainc(b, a, 1 - t)),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sx.gammainc(1.0, x), -np.expm1(-x), rtol=1e-14)
    np.testing.assert_allclose(sx.betainc(1.0, 1.0, t), t, rtol=1e-14)
    np.testing.assert_allclose(sx.zeta(2.0, 1.0), math.pi ** 2 / 6, rtol=1e-15)
    np.testing.assert_allclose(sx.zeta(4.0, 1.0), math.pi ** 4 / 90, rtol=1e-15)
    np.testing.assert_allclose(sx.zeta(2.0, 0.5), math.pi ** 2 / 2, rtol=1e-15)
    v = RNG.uniform(-25, 25, 300)
    np.testing.assert_allclose(sx.i0e(v), np.exp(-np.abs(v)) * np.asarray(sx.i0(v)), rtol=1e-15)
    np.testing.assert_allclose(sx.i1e(v), np.exp(-np.abs(v)) * np.asarray(sx.i1(v)), rtol=1e-15)
    grid = np.linspace(-30, 3, 331)     # above 3, ndtr rounds away the digits
    np.testing.assert_allclose(sx.ndtri(fsp.ndtr(grid)), grid, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(sx.gamma(np.array([5.0, 0.5, -0.5])),
                               [24.0, math.sqrt(math.pi), -2 * math.sqrt(math.pi)], rtol=1e-14)
    # polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x)
    np.testing.assert_allclose(sx.polygamma(3, 1.25), 6 * np.asarray(sx.zeta(4.0, 1.25)), rtol=1e-13)


def test_special_values_and_dtypes():
    assert float(ls.igamma(2.0, 0.0)) == 0.0 and float(ls.igammac(2.0, 0.0)) == 1.0
    assert float(ls.igamma(2.0, np.inf)) == 1.0
    assert float(ls.betainc(2.0, 3.0, 0.0)) == 0.0 and float(ls.betainc(2.0, 3.0, 1.0)) == 1.0
    assert float(ls.bessel_i0e(0.0)) == 1.0 and float(ls.bessel_i1e(0.0)) == 0.0
    assert float(ls.zeta(1.0, 2.0)) == np.inf
    assert float(sx.ndtri(0.0)) == -np.inf and float(sx.ndtri(1.0)) == np.inf
    x32 = np.array([0.5, 2.0], np.float32)
    for out in (ls.igamma(x32, x32), ls.betainc(x32, x32, x32 / 4), ls.bessel_i0e(x32),
                ls.zeta(x32 + 1, x32), sx.ndtri(x32 / 4), sx.gammainc(x32, 1.0)):
        assert np.asarray(out).dtype == np.float32
    assert np.asarray(sx.gammainc(2, 3)).dtype == np.float64    # ints promote


# ----------------------------------------------------------------------------
# Derivatives
# ----------------------------------------------------------------------------

def test_grads_scipy_functions():
    check_grads(lambda a, x: sx.gammainc(a, x), (np.array([0.7, 3.0]), np.array([1.1, 2.5])),
                order=1)
    check_grads(lambda x: sx.gammaincc(2.5, x), (np.array([0.4, 3.0]),), order=2)
    check_grads(lambda x: sx.betainc(2.0, 3.5, x), (np.array([0.2, 0.7]),), order=2)
    check_grads(lambda q: sx.zeta(3.0, q), (np.array([0.6, 2.0]),), order=2)
    check_grads(sx.i0, (np.array([-2.0, 0.5, 4.0]),), order=2)
    check_grads(sx.i1, (np.array([-2.0, 0.5, 4.0]),), order=2)
    check_grads(sx.ndtri, (np.array([0.1, 0.5, 0.93]),), order=2)
    check_grads(lambda a, b: sx.beta(a, b), (np.array([0.5, 2.0]), np.array([1.5, 3.0])), order=2)
    check_grads(lambda p, q: sx.kl_div(p, q), (np.array([0.3, 2.0]), np.array([1.5, 0.5])), order=2)


def test_grad_values():
    g = fungrad.grad(lambda x: ls.bessel_i1e(x))(0.0)
    assert float(g) == 0.5
    a, x = 2.5, 1.7
    dens = math.exp((a - 1) * math.log(x) - x - math.lgamma(a))
    assert abs(float(fungrad.grad(ls.igamma, 1)(a, x)) - dens) < 1e-15
    h = 1e-6
    fd = (float(ls.igamma(a + h, x)) - float(ls.igamma(a - h, x))) / (2 * h)
    assert abs(float(fungrad.grad(ls.igamma)(a, x)) - fd) < 1e-8
    assert abs(float(ls.random_gamma_grad(a, x)) + fd / dens) < 1e-7
    dq = float(fungrad.grad(ls.zeta, 1)(3.0, 2.0))
    assert abs(dq + 3 * float(ls.zeta(4.0, 2.0))) < 1e-14


def test_undefined_derivatives_raise():
    with pytest.raises(TypeError, match="betainc"):
        fungrad.grad(sx.betainc)(2.0, 3.0, 0.5)
    with pytest.raises(TypeError, match="zeta"):
        fungrad.grad(sx.zeta)(3.0, 2.0)
    with pytest.raises(TypeError, match="random_gamma_grad"):
        fungrad.grad(ls.random_gamma_grad)(2.0, 1.0)
    # igamma is differentiable in a to any order (tests/test_special_functions.py)
    fungrad.grad(fungrad.grad(ls.igamma))(2.0, 1.0)
    fungrad.grad(fungrad.grad(ls.igamma, 1))(2.0, 1.0)
    fungrad.grad(fungrad.grad(ls.igamma), 1)(2.0, 1.0)


# ----------------------------------------------------------------------------
# Transformations and bad input
# ----------------------------------------------------------------------------

def test_jit_vmap_and_lowering():
    a, x = np.array([0.5, 2.0, 7.0]), np.array([0.3, 2.5, 9.0])
    f = lambda a, x: sx.gammainc(a, x) * sx.i0e(x) + sx.zeta(a + 1.5, x) + sx.betainc(a, a, x / 10)
    np.testing.assert_allclose(fungrad.jit(f)(a, x), f(a, x), rtol=1e-15)
    np.testing.assert_allclose(fungrad.vmap(f, in_axes=(0, None))(a, x),
                               np.stack([f(ai, x) for ai in a]), rtol=1e-15)
    g = fungrad.jit(fungrad.vmap(fungrad.grad(lambda x: sx.ndtri(x) + sx.gammaincc(2.0, x))))
    assert np.all(np.isfinite(g(np.array([0.2, 0.6]))))


def test_bad_input():
    assert np.isnan(ls.igamma(-1.0, 2.0)) and np.isnan(ls.igamma(0.0, 2.0))
    assert np.isnan(ls.igammac(2.0, -1.0)) and np.isnan(ls.igamma(np.nan, 1.0))
    assert np.isnan(ls.betainc(2.0, 3.0, 1.5)) and np.isnan(ls.betainc(-2.0, 3.0, 0.5))
    assert np.isnan(ls.zeta(0.5, 2.0)) and np.isnan(ls.zeta(2.0, -1.0))
    assert np.isnan(sx.ndtri(1.5)) and np.isnan(sx.ndtri(-0.1))
    assert np.isnan(ls.bessel_i0e(np.nan)) and float(ls.bessel_i0e(np.inf)) == 0.0
    assert np.isnan(sx.gammasgn(-2.0))
    with pytest.raises(TypeError, match="floating"):
        ls.igamma(np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(TypeError):
        ls.igamma(np.float32(1.0), np.float64(1.0))
    with pytest.raises(NotImplementedError, match="q=1"):
        sx.zeta(2.0)
    with pytest.raises(NotImplementedError):
        sx.factorial(3, exact=True)
    with pytest.raises(ValueError):
        sx.multigammaln(2.0, 0)


def test_helper_module_is_numpy_only(tmp_path):
    import ast
    from tests.export_check import check_exported
    import inspect
    tree = ast.parse(inspect.getsource(sm2))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "math", "numpy", "fungrad.lax.kernels.special"}
    # export embeds it, and the kernel it imports, as NumPy-only code
    check_exported(ls.igamma, np.float64(2.0), np.float64(1.0), tmp_path=tmp_path,
                   name="igamma", rtol=1e-15)
    np.testing.assert_allclose(ls.igamma(2.0, 1.0), 1 - 2 / math.e, rtol=1e-15)
