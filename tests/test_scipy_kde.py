"""fungrad.scipy.stats.gaussian_kde against scipy.stats.gaussian_kde (the
reference JAX's follows) on random data, weights and bandwidths; resampled
draws have the KDE's mean and covariance; jit and grad see through it."""
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st

import fungrad
from fungrad.scipy.stats import gaussian_kde


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3), st.sampled_from([None, "silverman", 0.4]),
       st.booleans())
def test_gaussian_kde_matches_scipy(seed, d, bw, weighted):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(d, 12)) * np.arange(1, d + 1)[:, None]
    weights = rng.uniform(0.1, 1.0, size=12) if weighted else None
    points = rng.normal(size=(d, 4))
    ours, ref = gaussian_kde(data, bw, weights), scipy.stats.gaussian_kde(data, bw, weights)
    np.testing.assert_allclose(ours.covariance, ref.covariance, rtol=1e-12)
    np.testing.assert_allclose(ours(points), ref(points), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(ours.logpdf(points), ref.logpdf(points), rtol=1e-10)
    mean, cov = np.full(d, 0.3), np.eye(d) * 1.5
    np.testing.assert_allclose(ours.integrate_gaussian(mean, cov),
                               ref.integrate_gaussian(mean, cov), rtol=1e-10)
    other = rng.normal(size=(d, 7))
    np.testing.assert_allclose(ours.integrate_kde(gaussian_kde(other)),
                               ref.integrate_kde(scipy.stats.gaussian_kde(other)), rtol=1e-10)
    if d == 1:
        np.testing.assert_allclose(ours.integrate_box_1d(-0.5, 1.0),
                                   ref.integrate_box_1d(-0.5, 1.0), rtol=1e-10)


def test_gaussian_kde_resample_moments_jit_grad_and_errors():
    data = np.array([[0.0, 1.0, 3.0, 4.0], [1.0, -1.0, 0.5, 2.0]])
    kde = gaussian_kde(data)
    draws = np.asarray(kde.resample(fungrad.random.PRNGKey(0), (4000,)))
    assert draws.shape == (2, 4000)
    # the mixture's mean is the data mean; its covariance adds the kernel's
    np.testing.assert_allclose(draws.mean(1), data.mean(1), atol=0.15)
    expected_cov = np.cov(data, bias=True) + np.asarray(kde.covariance)
    np.testing.assert_allclose(np.cov(draws), expected_cov, rtol=0.1, atol=0.05)
    point = np.array([[0.5], [0.2]])
    jitted = fungrad.jit(lambda dset, p: gaussian_kde(dset).logpdf(p))(data, point)
    np.testing.assert_allclose(jitted, scipy.stats.gaussian_kde(data).logpdf(point), rtol=1e-12)
    grad = fungrad.grad(lambda p: kde.logpdf(p)[0])(point)
    eps = 1e-6
    fd = [(kde.logpdf(point + eps * e[:, None])[0] - kde.logpdf(point - eps * e[:, None])[0])
          / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(np.asarray(grad)[:, 0], fd, rtol=1e-6)
    with pytest.raises(ValueError, match="bw_method"):
        gaussian_kde(data, bw_method="wide")
    with pytest.raises(ValueError, match="length n = 4"):
        gaussian_kde(data, weights=np.ones(3))
    with pytest.raises(ValueError, match="dimension 3"):
        kde(np.ones((3, 2)))
