"""Tests of fungrad.scipy.stats and fungrad.scipy.linalg beyond the generic
cases (tests/cases/scipy_stats_linalg.py): values against SciPy where it is
installed, closed-form gradients, the matrix exponential against independent
references, edges of the supports, transformations and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
import fungrad.scipy.linalg as fsl
import fungrad.scipy.stats as fss
from fungrad.test_util import check_grads

import scipy.linalg as sp_linalg     # a test dependency (the "test" extra)
import scipy.stats as sp_stats
RNG = np.random.default_rng(1234)


def _digamma(x, h=1e-5):
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


# ----------------------------------------------------------------------------
# stats: values against SciPy
# ----------------------------------------------------------------------------

_LOC_SCALE = ["norm", "expon", "laplace", "logistic", "cauchy", "uniform"]


@pytest.mark.parametrize("name", _LOC_SCALE)
def test_loc_scale_families_match_scipy(name):
    mine, ref = getattr(fss, name), getattr(sp_stats, name)
    x = np.linspace(-4, 6, 21)
    for fn in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        if hasattr(mine, fn):
            with np.errstate(all="ignore"):
                want = getattr(ref, fn)(x, 0.5, 1.5)
            np.testing.assert_allclose(getattr(mine, fn)(x, 0.5, 1.5), want, rtol=1e-10,
                                       atol=1e-15, err_msg=f"{name}.{fn}")
    q = np.array([0.0, 1e-6, 0.1, 0.5, 0.9, 1 - 1e-6, 1.0])
    for fn in ("ppf", "isf"):
        if hasattr(mine, fn):
            np.testing.assert_allclose(getattr(mine, fn)(q, 0.5, 1.5), getattr(ref, fn)(q, 0.5, 1.5),
                                       rtol=1e-9, err_msg=f"{name}.{fn}")


def test_shape_families_match_scipy():
    x = np.linspace(-1, 8, 19)
    np.testing.assert_allclose(fss.t.logpdf(x, 2.5, 0.3, 1.7), sp_stats.t.logpdf(x, 2.5, 0.3, 1.7))
    for a in (0.5, 1.0, 3.5, 20.0):
        np.testing.assert_allclose(fss.gamma.logpdf(x, a, 0.1, 1.3),
                                   sp_stats.gamma.logpdf(x, a, 0.1, 1.3))
        np.testing.assert_allclose(fss.gamma.cdf(x, a, 0.1, 1.3), sp_stats.gamma.cdf(x, a, 0.1, 1.3),
                                   rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(fss.chi2.logpdf(x, 2 * a), sp_stats.chi2.logpdf(x, 2 * a))
        np.testing.assert_allclose(fss.chi2.sf(x, 2 * a), sp_stats.chi2.sf(x, 2 * a),
                                   rtol=1e-8, atol=1e-15)
    xb = np.linspace(-0.2, 1.2, 15)
    np.testing.assert_allclose(fss.beta.logpdf(xb, 2.5, 0.7), sp_stats.beta.logpdf(xb, 2.5, 0.7))
    np.testing.assert_allclose(fss.beta.pdf(xb, 1.0, 1.0), sp_stats.beta.pdf(xb, 1.0, 1.0))


def test_discrete_match_scipy():
    k = np.arange(-2, 12.0)
    np.testing.assert_allclose(fss.poisson.logpmf(k, 3.3), sp_stats.poisson.logpmf(k, 3.3))
    np.testing.assert_allclose(fss.poisson.cdf(k + 0.5, 3.3), sp_stats.poisson.cdf(k + 0.5, 3.3),
                               rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(fss.bernoulli.pmf(k, 0.3), sp_stats.bernoulli.pmf(k, 0.3))
    np.testing.assert_allclose(fss.bernoulli.cdf(k, 0.3), sp_stats.bernoulli.cdf(k, 0.3))
    np.testing.assert_allclose(fss.binom.logpmf(k, 9, 0.3), sp_stats.binom.logpmf(k, 9, 0.3))
    np.testing.assert_allclose(fss.geom.logpmf(k, 0.3), sp_stats.geom.logpmf(k, 0.3))
    np.testing.assert_allclose(fss.nbinom.logpmf(k, 2.5, 0.3), sp_stats.nbinom.logpmf(k, 2.5, 0.3))
    # loc shifts the support; non-integer k has probability 0
    np.testing.assert_allclose(fss.poisson.pmf(k, 3.3, loc=2), sp_stats.poisson.pmf(k, 3.3, loc=2))
    assert fss.poisson.pmf(2.5, 3.3) == 0 and fss.binom.pmf(1.5, 4, 0.5) == 0


def test_multivariate_normal_and_dirichlet_match_scipy():
    a = RNG.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    mean, x = RNG.standard_normal(3), RNG.standard_normal((5, 3))
    np.testing.assert_allclose(fss.multivariate_normal.logpdf(x, mean, cov),
                               sp_stats.multivariate_normal.logpdf(x, mean, cov))
    np.testing.assert_allclose(fss.multivariate_normal.pdf(x[0], mean, cov),
                               sp_stats.multivariate_normal.pdf(x[0], mean, cov))
    covs = np.stack([cov, 2 * cov])   # a stack of covariances broadcasts against x
    want = [sp_stats.multivariate_normal.logpdf(x[i], mean, covs[i]) for i in range(2)]
    np.testing.assert_allclose(fss.multivariate_normal.logpdf(x[:2], mean, covs), want)
    alpha = np.array([0.8, 2.0, 3.5])
    xs = RNG.dirichlet(alpha, 4).T
    np.testing.assert_allclose(fss.dirichlet.logpdf(xs, alpha), sp_stats.dirichlet.logpdf(xs, alpha))
    np.testing.assert_allclose(fss.dirichlet.logpdf(xs[:2], alpha),
                               sp_stats.dirichlet.logpdf(xs, alpha))


# ----------------------------------------------------------------------------
# stats: closed forms (no SciPy needed)
# ----------------------------------------------------------------------------

def test_closed_form_values():
    np.testing.assert_allclose(fss.norm.pdf(0.0), 1 / math.sqrt(2 * math.pi))
    np.testing.assert_allclose(fss.norm.cdf(1.0) + fss.norm.sf(1.0), 1.0)
    np.testing.assert_allclose(fss.norm.ppf(fss.norm.cdf(np.array([-2.0, 0.3, 1.7]))),
                               [-2.0, 0.3, 1.7], rtol=1e-12)
    np.testing.assert_allclose(fss.norm.logcdf(-30.0), math.log(0.5 * math.erfc(30 / math.sqrt(2))),
                               rtol=1e-12)
    np.testing.assert_allclose(fss.expon.cdf(2.0, scale=0.5), 1 - math.exp(-4.0))
    np.testing.assert_allclose(fss.cauchy.cdf(-1e10), 1 / (math.pi * 1e10), rtol=1e-12)
    np.testing.assert_allclose(fss.logistic.ppf(fss.logistic.cdf(1.3, 0.2, 2.0), 0.2, 2.0), 1.3)
    np.testing.assert_allclose(fss.laplace.ppf(fss.laplace.cdf(np.array([-3.0, 2.0]))), [-3.0, 2.0])
    np.testing.assert_allclose(fss.gamma.cdf(2.0, 1.0), 1 - math.exp(-2.0), rtol=1e-13)
    np.testing.assert_allclose(fss.chi2.cdf(3.0, 2.0), 1 - math.exp(-1.5), rtol=1e-13)
    np.testing.assert_allclose(fss.poisson.cdf(2.0, 1.5), math.exp(-1.5) * (1 + 1.5 + 1.125),
                               rtol=1e-12)
    np.testing.assert_allclose(fss.t.pdf(0.0, 1.0), 1 / math.pi)      # t(1) is Cauchy
    np.testing.assert_allclose(fss.uniform.pdf(np.array([-1, 0.5, 2]), 0, 1.5), [0, 1 / 1.5, 0])


def test_out_of_support_values():
    assert fss.expon.logpdf(-1.0) == -np.inf and fss.expon.cdf(-1.0) == 0
    assert fss.gamma.logpdf(-0.5, 2.0) == -np.inf and fss.gamma.cdf(-1.0, 2.0) == 0
    assert fss.beta.pdf(1.5, 2.0, 2.0) == 0
    assert fss.poisson.logpmf(-1.0, 2.0) == -np.inf and fss.poisson.cdf(-1.0, 2.0) == 0
    assert fss.binom.pmf(6.0, 5, 0.5) == 0
    assert fss.dirichlet.logpdf(np.array([0.5, 0.7, -0.2]), np.ones(3)) == -np.inf
    assert np.isnan(fss.norm.ppf(1.5)) and np.isnan(fss.expon.ppf(-0.1))
    np.testing.assert_array_equal(fss.norm.ppf(np.array([0.0, 1.0])), [-np.inf, np.inf])


def test_logpdf_gradients_match_closed_forms():
    x, m, s = 0.7, -0.2, 1.3
    g = fungrad.grad(fss.norm.logpdf, argnums=(0, 1, 2))(x, m, s)
    np.testing.assert_allclose(g, [-(x - m) / s**2, (x - m) / s**2, -1 / s + (x - m) ** 2 / s**3])
    ga = fungrad.grad(fss.gamma.logpdf, argnums=1)(1.7, 2.5)
    np.testing.assert_allclose(ga, math.log(1.7) - _digamma(2.5), rtol=1e-8)
    gab = fungrad.grad(fss.beta.logpdf, argnums=(1, 2))(0.3, 2.0, 1.5)
    np.testing.assert_allclose(gab, [math.log(0.3) - _digamma(2.0) + _digamma(3.5),
                                     math.log(0.7) - _digamma(1.5) + _digamma(3.5)], rtol=1e-8)
    np.testing.assert_allclose(fungrad.grad(fss.poisson.logpmf, argnums=1)(4.0, 2.5), 4 / 2.5 - 1)
    np.testing.assert_allclose(fungrad.grad(fss.bernoulli.logpmf, argnums=1)(1.0, 0.3), 1 / 0.3)
    np.testing.assert_allclose(fungrad.grad(fss.binom.logpmf, argnums=2)(2.0, 5.0, 0.4),
                               2 / 0.4 - 3 / 0.6)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    xv, mean = np.array([0.4, -1.0]), np.array([0.1, 0.2])
    g_mean = fungrad.grad(fss.multivariate_normal.logpdf, argnums=1)(xv, mean, cov)
    np.testing.assert_allclose(g_mean, np.linalg.solve(cov, xv - mean))
    g_cov = fungrad.grad(fss.multivariate_normal.logpdf, argnums=2)(xv, mean, cov)
    inv, d = np.linalg.inv(cov), xv - mean
    np.testing.assert_allclose(g_cov, 0.5 * (inv @ np.outer(d, d) @ inv - inv))


def test_cdf_gradient_is_pdf():
    for mod, args in ((fss.norm, ()), (fss.gamma, (2.5,)), (fss.chi2, (3.0,)),
                      (fss.cauchy, ()), (fss.logistic, ()), (fss.expon, ())):
        g = fungrad.grad(lambda v: mod.cdf(v, *args))(1.3)
        np.testing.assert_allclose(g, mod.pdf(1.3, *args), rtol=1e-10, err_msg=mod.__name__)


def test_gradients_finite_outside_support():
    assert fungrad.grad(fss.gamma.logpdf, argnums=1)(-1.0, 2.0) == 0
    assert fungrad.grad(fss.expon.cdf)(-1.0) == 0
    assert fungrad.grad(fss.beta.logpdf, argnums=1)(1.5, 2.0, 2.0) == 0
    assert fungrad.grad(fss.gamma.cdf)(0.0, 2.0) == 0
    assert np.isfinite(fungrad.grad(fss.gamma.cdf, argnums=1)(0.0, 2.0))
    assert fungrad.grad(fss.poisson.logpmf, argnums=1)(-1.0, 2.0) == 0


def test_stats_check_grads_second_order():
    check_grads(lambda x, a: fss.t.logpdf(x, a, 0.1, 1.5), (0.4, 3.0), order=2)
    check_grads(lambda m, s: fss.logistic.logcdf(0.3, m, s), (0.2, 1.1), order=2)
    check_grads(lambda x: fss.norm.logsf(x), (np.array([-3.0, 0.5, 4.0]),), order=2)
    check_grads(lambda p: fss.nbinom.logpmf(3.0, 2.5, p), (0.4,), order=2)
    check_grads(lambda a: fss.gamma.cdf(1.7, a), (2.2,), order=1)


def test_stats_jit_and_vmap():
    x = np.linspace(0.1, 3, 6)
    f = fungrad.jit(lambda x, a: fss.gamma.logpdf(x, a) + fss.norm.logcdf(x))
    np.testing.assert_allclose(f(x, 2.0), fss.gamma.logpdf(x, 2.0) + fss.norm.logcdf(x))
    np.testing.assert_allclose(fungrad.jit(fss.chi2.cdf)(x, 3.0), fss.chi2.cdf(x, 3.0))
    a = RNG.standard_normal((3, 2, 2))
    covs = a @ np.swapaxes(a, -1, -2) + np.eye(2)
    xs = RNG.standard_normal((3, 2))
    got = fungrad.vmap(fss.multivariate_normal.logpdf, in_axes=(0, None, 0))(xs, np.zeros(2), covs)
    want = [fss.multivariate_normal.logpdf(xs[i], np.zeros(2), covs[i]) for i in range(3)]
    np.testing.assert_allclose(got, want)
    per_a = fungrad.vmap(fungrad.grad(fss.gamma.logpdf, argnums=1), in_axes=(None, 0))(1.5, x)
    np.testing.assert_allclose(per_a, [fungrad.grad(fss.gamma.logpdf, argnums=1)(1.5, ai) for ai in x])


def test_stats_bad_input():
    with pytest.raises(ValueError, match="cov must be"):
        fss.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="last axis"):
        fss.multivariate_normal.logpdf(np.zeros(2), np.zeros(3), np.eye(3))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        fss.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2), allow_singular=True)
    with pytest.raises(ValueError, match="one-dimensional"):
        fss.dirichlet.logpdf(np.ones((2, 2)) / 2, np.ones((2, 2)))
    with pytest.raises(ValueError, match="first axis"):
        fss.dirichlet.logpdf(np.ones(5) / 5, np.ones(3))


# ----------------------------------------------------------------------------
# linalg
# ----------------------------------------------------------------------------

def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _expm_taylor(a, terms=60, squarings=8):
    s = a / 2.0**squarings
    term = total = np.eye(a.shape[-1])
    for k in range(1, terms):
        term = term @ s / k
        total = total + term
    for _ in range(squarings):
        total = total @ total
    return total


@pytest.mark.parametrize("scale", [1e-3, 0.5, 3.0, 40.0])
def test_expm_symmetric_matches_eigendecomposition(scale):
    a = _spd(4) / 4 - np.eye(4)
    a = scale * (a / np.linalg.norm(a, 1))
    w, v = np.linalg.eigh(a)
    want = (v * np.exp(w)) @ v.T
    np.testing.assert_allclose(fsl.expm(a), want, rtol=1e-12 * max(1, scale), atol=1e-14)


def test_expm_general_matrices():
    for scale in (0.01, 1.0, 6.0):
        a = scale * RNG.standard_normal((4, 4))
        np.testing.assert_allclose(fsl.expm(a), _expm_taylor(a), rtol=1e-10, atol=1e-13)
        if sp_linalg is not None:
            np.testing.assert_allclose(fsl.expm(a), sp_linalg.expm(a), rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(fsl.expm(np.zeros((3, 3))), np.eye(3))
    np.testing.assert_allclose(fsl.expm(np.diag([1.0, -2.0])), np.diag(np.exp([1.0, -2.0])))
    nilpotent = np.array([[0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(fsl.expm(nilpotent), [[1.0, 1.0], [0.0, 1.0]])
    batch = RNG.standard_normal((2, 3, 3))
    np.testing.assert_allclose(fsl.expm(batch), [_expm_taylor(b) for b in batch], rtol=1e-11)


def test_expm_derivatives_and_frechet():
    a = RNG.standard_normal((3, 3))
    e = RNG.standard_normal((3, 3))
    check_grads(fsl.expm, (a,), order=2)
    check_grads(fsl.expm, (4 * a,), order=1)    # with squarings
    exp_a, frechet = fsl.expm_frechet(a, e)
    h = 1e-6
    fd = (_expm_taylor(a + h * e) - _expm_taylor(a - h * e)) / (2 * h)
    np.testing.assert_allclose(exp_a, _expm_taylor(a), rtol=1e-11)
    np.testing.assert_allclose(frechet, fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(fsl.expm_frechet(a, e, compute_expm=False), frechet)
    if sp_linalg is not None:
        np.testing.assert_allclose(frechet, sp_linalg.expm_frechet(a, e)[1], rtol=1e-10)
    # d/dt tr(expm(t a)) at t=1 = tr(a expm(a))
    g = fungrad.grad(lambda t: fnp.trace(fsl.expm(t * a)))(1.0)
    np.testing.assert_allclose(g, np.trace(a @ _expm_taylor(a)), rtol=1e-10)


def test_expm_jit_and_vmap():
    batch = RNG.standard_normal((3, 3, 3)) * np.array([0.1, 1.0, 10.0])[:, None, None]
    np.testing.assert_allclose(fungrad.jit(fsl.expm)(batch[2]), fsl.expm(batch[2]), rtol=1e-13)
    np.testing.assert_allclose(fungrad.vmap(fsl.expm)(batch), [fsl.expm(b) for b in batch],
                               rtol=1e-13)


def test_triangular_and_cholesky_solves_match_scipy():
    a = RNG.standard_normal((4, 4)) + 5 * np.eye(4)
    b, bm = RNG.standard_normal(4), RNG.standard_normal((4, 2))
    for lower in (True, False):
        for trans in (0, 1, 2, "N", "T"):
            for unit in (False, True):
                kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
                np.testing.assert_allclose(fsl.solve_triangular(a, bm, **kw),
                                           sp_linalg.solve_triangular(a, bm, **kw), rtol=1e-10)
        np.testing.assert_allclose(fsl.solve_triangular(a, b, lower=lower),
                                   sp_linalg.solve_triangular(a, b, lower=lower), rtol=1e-10)
        s = _spd(4)
        np.testing.assert_allclose(fsl.cholesky(s, lower=lower), sp_linalg.cholesky(s, lower=lower))
        np.testing.assert_allclose(fsl.cho_solve(fsl.cho_factor(s, lower=lower), bm),
                                   sp_linalg.cho_solve(sp_linalg.cho_factor(s, lower=lower), bm))
        np.testing.assert_allclose(fsl.solve(s, b, assume_a="pos", lower=lower),
                                   sp_linalg.solve(s, b, assume_a="pos"))


def test_lu_family_matches_scipy():
    a = RNG.standard_normal((4, 4))
    b = RNG.standard_normal((4, 3))
    lu, piv = fsl.lu_factor(a)
    lu_ref, piv_ref = sp_linalg.lu_factor(a)
    np.testing.assert_allclose(lu, lu_ref)
    np.testing.assert_array_equal(piv, piv_ref)
    for trans in (0, 1):
        np.testing.assert_allclose(fsl.lu_solve((lu, piv), b, trans=trans),
                                   sp_linalg.lu_solve((lu_ref, piv_ref), b, trans=trans))
    for m in (a, RNG.standard_normal((3, 5)), RNG.standard_normal((5, 3))):
        for got, want in zip(fsl.lu(m), sp_linalg.lu(m)):
            np.testing.assert_allclose(got, want, atol=1e-14)
        for got, want in zip(fsl.lu(m, permute_l=True), sp_linalg.lu(m, permute_l=True)):
            np.testing.assert_allclose(got, want, atol=1e-14)


def test_other_functions_match_scipy():
    a, r = RNG.standard_normal((4, 4)), RNG.standard_normal((5, 3))
    s = _spd(4)
    for mode in ("full", "economic", "r"):
        for got, want in zip(fsl.qr(r, mode=mode), sp_linalg.qr(r, mode=mode)):
            np.testing.assert_allclose(np.abs(got), np.abs(want), atol=1e-12)
    np.testing.assert_allclose(fsl.svd(r, compute_uv=False), sp_linalg.svd(r, compute_uv=False))
    np.testing.assert_allclose(fsl.eigh(s, eigvals_only=True), sp_linalg.eigh(s, eigvals_only=True))
    np.testing.assert_allclose(fsl.eigh(np.triu(s), lower=False)[0], sp_linalg.eigh(s)[0])
    w, v = fsl.eigh(a + a.T, s)
    w_ref, v_ref = sp_linalg.eigh(a + a.T, s)
    np.testing.assert_allclose(w, w_ref)
    np.testing.assert_allclose(np.abs(v), np.abs(v_ref), atol=1e-12)
    np.testing.assert_allclose(fsl.inv(a), sp_linalg.inv(a))
    np.testing.assert_allclose(fsl.det(a), sp_linalg.det(a))
    for assume_a in ("gen", "sym", "pos"):
        np.testing.assert_allclose(fsl.solve(s, r[:4], assume_a=assume_a),
                                   sp_linalg.solve(s, r[:4], assume_a=assume_a))
    for side in ("right", "left"):
        for got, want in zip(fsl.polar(r, side=side), sp_linalg.polar(r, side=side)):
            np.testing.assert_allclose(got, want, atol=1e-12)
    c, row = np.arange(1.0, 4.0), np.arange(4.0, 9.0)
    np.testing.assert_allclose(fsl.toeplitz(c, row), sp_linalg.toeplitz(c, row))
    np.testing.assert_allclose(fsl.toeplitz(c), sp_linalg.toeplitz(c))
    np.testing.assert_allclose(fsl.circulant(c), sp_linalg.circulant(c))
    np.testing.assert_allclose(fsl.hilbert(4), sp_linalg.hilbert(4))
    parts = (np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((1, 0)))
    np.testing.assert_allclose(fsl.block_diag(*parts), sp_linalg.block_diag(*parts))


def test_linalg_identities_without_scipy():
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 2))
    p, l, u = fsl.lu(a)
    np.testing.assert_allclose(p @ l @ u, a, atol=1e-13)
    np.testing.assert_allclose(a @ fsl.lu_solve(fsl.lu_factor(a), b), b, atol=1e-12)
    np.testing.assert_allclose(a.T @ fsl.lu_solve(fsl.lu_factor(a), b, trans="T"), b, atol=1e-12)
    np.testing.assert_allclose(np.triu(a).T @ fsl.solve_triangular(a, b, trans=1), b, atol=1e-12)
    s = _spd(4)
    c = fsl.cholesky(s)
    np.testing.assert_allclose(c.T @ c, s, atol=1e-12)
    np.testing.assert_allclose(s @ fsl.solve(s, b, assume_a="pos"), b, atol=1e-12)
    u_, p_ = fsl.polar(a)
    np.testing.assert_allclose(u_ @ p_, a, atol=1e-12)
    np.testing.assert_allclose(fsl.block_diag(np.eye(2), 2 * np.eye(1)), np.diag([1.0, 1, 2]))
    batch = _spd(3, (2,))   # batched a with a shared right-hand side
    np.testing.assert_allclose(fsl.cho_solve(fsl.cho_factor(batch), b[:3]),
                               np.linalg.solve(batch, b[:3]), atol=1e-12)


def test_linalg_gradients_and_transforms():
    a = RNG.standard_normal((3, 3)) + 4 * np.eye(3)
    b = RNG.standard_normal((3, 2))
    check_grads(lambda a, b: fsl.solve_triangular(a, b, lower=True, unit_diagonal=True),
                (a, b), order=2)
    check_grads(lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b), (a, b), order=1)
    check_grads(lambda s: fsl.cho_solve(fsl.cho_factor(s, lower=True), b), (_spd(3),), order=2)
    check_grads(lambda c, r: fsl.toeplitz(c, r) @ b[:, 0], (b[:, 0], b[:, 1]), order=1)
    check_grads(lambda x, y: fsl.block_diag(x, y), (a, b), order=1)
    f = fungrad.jit(lambda a, b: fsl.solve(a, b) + fsl.lu_solve(fsl.lu_factor(a), b))
    np.testing.assert_allclose(f(a, b), 2 * np.linalg.solve(a, b), rtol=1e-12)
    many = RNG.standard_normal((4, 3, 3)) + 4 * np.eye(3)
    got = fungrad.vmap(lambda m: fsl.solve_triangular(m, b, lower=True))(many)
    np.testing.assert_allclose(got, [np.linalg.solve(np.tril(m), b) for m in many], rtol=1e-12)


def test_linalg_bad_input():
    a, b = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="trans must be"):
        fsl.solve_triangular(a, b, trans=3)
    with pytest.raises(ValueError, match="square matrix"):
        fsl.expm(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"needs b of shape \(3,\)"):
        fsl.solve(a, np.ones(4))
    with pytest.raises(ValueError, match="assume_a"):
        fsl.solve(a, b, assume_a="banded")
    with pytest.raises(ValueError, match="mode must be"):
        fsl.qr(a, mode="raw")
    with pytest.raises(NotImplementedError, match="pivoting"):
        fsl.qr(a, pivoting=True)
    with pytest.raises(TypeError, match=r"\(lu, piv\)"):
        fsl.lu_solve(a, b)
    with pytest.raises(TypeError, match=r"\(c, lower\)"):
        fsl.cho_solve(a, b)
    with pytest.raises(ValueError, match="at most 2-D"):
        fsl.block_diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="same shape"):
        fsl.expm_frechet(a, np.ones((2, 2)))


def test_eigh_generalized_types_and_eigvals_match_scipy():
    a = RNG.normal(size=(4, 4))
    a = a + a.T
    m = RNG.normal(size=(4, 4))
    b = m @ m.T + 4 * np.eye(4)
    residual = {1: lambda v, w: a @ v - b @ v * w, 2: lambda v, w: a @ b @ v - v * w,
                3: lambda v, w: b @ a @ v - v * w}
    for problem_type in (1, 2, 3):
        w, v = fsl.eigh(a, b, type=problem_type)
        np.testing.assert_allclose(w, sp_linalg.eigh(a, b, type=problem_type, eigvals_only=True),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(residual[problem_type](np.asarray(v), np.asarray(w)), 0,
                                   atol=1e-10)
    np.testing.assert_allclose(fsl.eigh(a, eigvals=(1, 2), eigvals_only=True),
                               sp_linalg.eigh(a, subset_by_index=(1, 2), eigvals_only=True),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="type must be 1, 2 or 3"):
        fsl.eigh(a, b, type=4)
