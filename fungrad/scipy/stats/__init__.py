"""``fungrad.scipy.stats``: the ``jax.scipy.stats`` distributions, built on
``fungrad.numpy`` / ``fungrad.lax`` / ``fungrad.scipy.special`` (so every
function is differentiable, vmappable and jittable).

Each distribution is a submodule with SciPy's function names and JAX's
signatures (``loc``/``scale`` keywords, ``loc`` for the discrete ones):

========================  ==================================================
``norm``                  pdf, logpdf, cdf, logcdf, sf, logsf, ppf, isf
``multivariate_normal``   pdf, logpdf (mean, cov)
``uniform``               pdf, logpdf, cdf, sf, ppf
``expon``                 pdf, logpdf, cdf, logcdf, sf, logsf, ppf, isf
``laplace``               pdf, logpdf, cdf, sf, ppf
``logistic``              pdf, logpdf, cdf, logcdf, sf, logsf, ppf, isf
``cauchy``                pdf, logpdf, cdf, logcdf, sf, logsf, ppf, isf
``t``                     pdf, logpdf
``gamma``, ``chi2``       pdf, logpdf, cdf, logcdf, sf, logsf
``beta``                  pdf, logpdf
``dirichlet``             pdf, logpdf (components along the first axis)
``poisson``               pmf, logpmf, cdf
``bernoulli``             pmf, logpmf, cdf, ppf
``binom``, ``geom``, ``nbinom``  pmf, logpmf
========================  ==================================================

``gaussian_kde`` is SciPy's kernel density estimate (evaluate, logpdf,
resample, integrate_gaussian/box_1d/kde).

Outside the support densities are 0 (log: -inf); pmfs are 0 at non-integer k.
"""
from fungrad.scipy.stats import (  # noqa: F401
    bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, geom, laplace,
    logistic, multivariate_normal, nbinom, norm, poisson, t, uniform)
from fungrad.scipy.stats._kde import gaussian_kde  # noqa: F401

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
           "geom", "laplace", "logistic", "multivariate_normal", "nbinom", "norm", "poisson",
           "t", "uniform", "gaussian_kde"]
