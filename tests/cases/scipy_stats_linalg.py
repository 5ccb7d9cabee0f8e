"""Cases for ``fungrad.scipy.stats`` and ``fungrad.scipy.linalg`` (see
tests/harness.py).  These modules add no primitives (``prims=()``): the cases
check that the compositions keep values, staging, jit, derivatives and vmap.

References are hand-written NumPy (``math.lgamma``/``math.erfc`` per element)
so that the generic suite does not need SciPy.  Inputs stay inside the
support (``low``/``high``), and discrete arguments are drawn as integers and
not differentiated.
"""
import math

import numpy as np

import fungrad.scipy.linalg as fsl
from fungrad.scipy.stats import (beta, binom, cauchy, chi2, dirichlet, expon, gamma, laplace,
                                 logistic, multivariate_normal, norm, poisson, t)
from tests.cases.linalg import RC, lu_friendly, spd, well_conditioned
from tests.harness import Arg, Case

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_LOG_2PI = math.log(2 * math.pi)

_POSITIVE = dict(low=0.5, high=2.0)


def _counts(high):
    def make(rng, shape, dtype):
        return rng.integers(0, high + 1, shape).astype(dtype)
    return make


def _simplex(rng, shape, dtype):
    return rng.dirichlet(np.ones(shape[0]), shape[1:]).T.astype(dtype) if shape[1:] else \
        rng.dirichlet(np.ones(shape[0])).astype(dtype)


def _binom_ref(k, p):
    n = 5.0
    comb = _lgamma(n + 1) - _lgamma(k + 1) - _lgamma(n - k + 1)
    return comb + k * np.log(p) + (n - k) * np.log1p(-p)


def _mvn_ref(x, mean, cov):
    d = x - mean
    sol = np.linalg.solve(cov, d.T).T
    _, logdet = np.linalg.slogdet(cov)
    return -0.5 * np.sum(d * sol, -1) - 0.5 * (len(mean) * _LOG_2PI + logdet)


def _dirichlet_ref(x, alpha):
    log_norm = np.sum(_lgamma(alpha)) - math.lgamma(np.sum(alpha))
    return np.sum((alpha[:, None] - 1) * np.log(x), 0) - log_norm


def _expm_ref(a):
    """Taylor series (40 terms) after scaling by 2^-6, then six squarings."""
    s = a / 64.0
    term, total = np.eye(a.shape[-1], dtype=a.dtype), np.eye(a.shape[-1], dtype=a.dtype)
    for k in range(1, 40):
        term = term @ s / k
        total = total + term
    for _ in range(6):
        total = total @ total
    return total


def _toeplitz_ref(c, r):
    return np.array([[c[i - j] if i >= j else r[j - i] for j in range(len(r))]
                     for i in range(len(c))], dtype=np.result_type(c, r)).reshape(len(c), len(r))


def _hermitian_toeplitz_ref(c):
    """SciPy's default first row: r = conj(c)."""
    return _toeplitz_ref(c, np.conj(c))


CASES = [
    Case("scipy.stats.norm_logpdf", norm.logpdf,
         lambda x, m, s: -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * _LOG_2PI,
         [Arg(), Arg("bcast"), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.norm_cdf", norm.cdf, lambda x: 0.5 * _erfc(-x / math.sqrt(2)),
         [Arg()], rtol=1e-12),
    Case("scipy.stats.expon_logpdf", lambda x, s: expon.logpdf(x, 0.0, s),
         lambda x, s: -x / s - np.log(s), [Arg(low=0.1), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.logistic_logpdf", logistic.logpdf,
         lambda x, m, s: -(x - m) / s - 2 * np.log1p(np.exp(-(x - m) / s)) - np.log(s),
         [Arg(), Arg("bcast"), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.cauchy_logpdf", cauchy.logpdf,
         lambda x, m, s: -math.log(math.pi) - np.log(s) - np.log1p(((x - m) / s) ** 2),
         [Arg(), Arg("bcast"), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.laplace_logpdf", lambda x, s: laplace.logpdf(x, 0.0, s),
         lambda x, s: -np.log(2 * s) - np.abs(x) / s,
         [Arg(avoid=(0.0,), margin=0.05), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.t_logpdf", t.logpdf,
         lambda x, df: (_lgamma((df + 1) / 2) - _lgamma(df / 2) - 0.5 * np.log(df * math.pi)
                        - (df + 1) / 2 * np.log1p(x * x / df)),
         [Arg(), Arg("bcast", low=1.0, high=5.0)]),
    Case("scipy.stats.gamma_logpdf", gamma.logpdf,
         lambda x, a: (a - 1) * np.log(x) - x - _lgamma(a),
         [Arg(low=0.2, high=4.0), Arg("bcast", low=0.5, high=3.0)]),
    Case("scipy.stats.chi2_logpdf", chi2.logpdf,
         lambda x, k: ((k / 2 - 1) * np.log(x) - x / 2 - k / 2 * math.log(2) - _lgamma(k / 2)),
         [Arg(low=0.2, high=4.0), Arg("bcast", low=1.0, high=5.0)]),
    Case("scipy.stats.beta_logpdf", beta.logpdf,
         lambda x, a, b: ((a - 1) * np.log(x) + (b - 1) * np.log1p(-x)
                          - _lgamma(a) - _lgamma(b) + _lgamma(a + b)),
         [Arg(low=0.1, high=0.9), Arg("bcast", low=0.5, high=3.0),
          Arg("bcast", low=0.5, high=3.0)]),
    Case("scipy.stats.poisson_logpmf", poisson.logpmf,
         lambda k, mu: k * np.log(mu) - mu - _lgamma(k + 1),
         [Arg(make=_counts(6), diff=False), Arg("bcast", **_POSITIVE)]),
    Case("scipy.stats.binom_logpmf", lambda k, p: binom.logpmf(k, 5.0, p), _binom_ref,
         [Arg(make=_counts(5), diff=False), Arg("bcast", low=0.1, high=0.9)]),
    Case("scipy.stats.multivariate_normal_logpdf", multivariate_normal.logpdf, _mvn_ref,
         [Arg((4, 3)), Arg((3,)), Arg((3, 3), make=spd)], rtol=1e-10),
    Case("scipy.stats.dirichlet_logpdf", dirichlet.logpdf, _dirichlet_ref,
         [Arg((3, 2), make=_simplex, diff=False), Arg((3,), low=0.5, high=3.0)]),
    Case("scipy_linalg.solve_triangular_lower_T",
         lambda a, b: fsl.solve_triangular(a, b, trans="T", lower=True),
         lambda a, b: np.linalg.solve(np.tril(a).T, b),
         [Arg((3, 3), RC, make=well_conditioned), Arg((3, 2), RC)], rtol=1e-10),
    Case("scipy_linalg.solve_triangular_upper_C",
         lambda a, b: fsl.solve_triangular(a, b, trans=2),
         lambda a, b: np.linalg.solve(np.conj(np.swapaxes(np.triu(a), -1, -2)), b),
         [Arg((2, 3, 3), RC, make=well_conditioned), Arg((2, 3, 2), "same")], rtol=1e-10),
    Case("scipy_linalg.cho_solve",
         lambda a, b: fsl.cho_solve(fsl.cho_factor(a), b), np.linalg.solve,
         [Arg((3, 3), RC, make=spd), Arg((3, 2), "same")], rtol=1e-10),
    Case("scipy_linalg.cho_solve_lower",
         lambda a, b: fsl.cho_solve(fsl.cho_factor(a, lower=True), b), np.linalg.solve,
         [Arg((3, 3), RC, make=spd), Arg((3, 2), "same")], rtol=1e-10),
    Case("scipy_linalg.lu_solve",
         lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=1),
         lambda a, b: np.linalg.solve(a.T, b),
         [Arg((3, 3), RC, make=lu_friendly), Arg((3, 2), RC)], rtol=1e-10),
    Case("scipy_linalg.lu_solve_C",
         lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans="C"),
         lambda a, b: np.linalg.solve(np.conj(a.T), b),
         [Arg((3, 3), RC, make=lu_friendly), Arg((3,), "same")], rtol=1e-10),
    Case("scipy_linalg.solve_pos", lambda a, b: fsl.solve(a, b, assume_a="pos"),
         lambda a, b: np.linalg.solve(a, b[:, None])[:, 0],
         [Arg((3, 3), RC, make=spd), Arg((3,), "same")], rtol=1e-10),
    Case("scipy_linalg.expm", fsl.expm, _expm_ref, [Arg("sqmat", RC, low=-1.0, high=1.0)],
         rtol=1e-11, atol=1e-12),
    Case("scipy_linalg.expm_large_norm", fsl.expm, _expm_ref,
         [Arg((3, 3), RC, low=-3.0, high=3.0)], rtol=1e-9, atol=1e-9, grad_order=1),
    Case("scipy_linalg.toeplitz", fsl.toeplitz, _toeplitz_ref, [Arg("vec", RC), Arg("vec", RC)]),
    Case("scipy_linalg.toeplitz_hermitian", fsl.toeplitz, _hermitian_toeplitz_ref,
         [Arg("vec", RC)]),
    Case("scipy_linalg.block_diag", fsl.block_diag,
         lambda a, b: np.block([[a, np.zeros((a.shape[0], b.shape[1]))],
                                [np.zeros((b.shape[0], a.shape[1])), b]]),
         [Arg("mat", RC), Arg((2, 3))]),
]
