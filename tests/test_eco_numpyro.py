"""numpyro 0.22.0, unmodified, on fungrad through the jax import hook
(fungrad.jax_compat): distributions' log densities against scipy.stats,
samples against their moments, effect handlers, ``log_density``, NUTS and HMC
on a conjugate normal model against its closed-form posterior, a logistic
regression whose posterior mean is near its mode, the eight schools,
``Predictive``, and SVI with ``AutoDelta`` (the MAP, in closed form) and
``AutoNormal`` (the posterior's mean and sd).  Samplers are judged by
statistics a correct sampler meets with fixed keys, never by fungrad's
current random streams.

numpyro is installed without its dependencies (``pip install --no-deps
numpyro==0.22.0 multipledispatch==1.0.0 tqdm==4.70.1``; its jax/jaxlib
requirement is what the hook replaces).
"""
import importlib.util

import numpy as np
import pytest
import scipy.stats as st

if importlib.util.find_spec("numpyro") is None:     # (importing it needs the hook: see npr)
    pytest.skip("numpyro is not installed", allow_module_level=True)

from fungrad.jax_compat import installed  # noqa: E402

# the conjugate model: x_i ~ N(mu, 1), mu ~ N(0, 2^2), n = 8
DATA = np.array([0.8, 1.9, 1.1, 0.4, 1.6, 2.3, 0.9, 1.2])
POST_PREC = 1 / 4 + len(DATA)
POST_MEAN, POST_SD = DATA.sum() / POST_PREC, POST_PREC ** -0.5


@pytest.fixture(scope="module")
def npr():
    """(jax, numpyro) with jax = fungrad, for this module only."""
    with installed(forget=("numpyro",)) as jax:
        import numpyro
        import numpyro.distributions  # noqa: F401
        import numpyro.infer  # noqa: F401
        import numpyro.infer.autoguide  # noqa: F401
        yield jax, numpyro


def conjugate_model(numpyro, x=None):
    dist = numpyro.distributions
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("n", len(DATA)):
        numpyro.sample("x", dist.Normal(mu, 1.0), obs=x)


def test_log_prob_matches_scipy(npr):
    _, numpyro = npr
    dist = numpyro.distributions
    x = np.array([0.3, 1.7, 2.5])
    cases = [
        (dist.Normal(0.5, 2.0), st.norm(0.5, 2.0).logpdf(x)),
        (dist.HalfCauchy(5.0), st.halfcauchy(scale=5.0).logpdf(x)),
        (dist.Gamma(2.0, 3.0), st.gamma(2.0, scale=1 / 3.0).logpdf(x)),
        (dist.Exponential(1.5), st.expon(scale=1 / 1.5).logpdf(x)),
        (dist.StudentT(4.0, 1.0, 2.0), st.t(4.0, 1.0, 2.0).logpdf(x)),
        (dist.LogNormal(0.2, 0.7), st.lognorm(0.7, scale=np.exp(0.2)).logpdf(x)),
        (dist.Beta(2.0, 3.0), st.beta(2.0, 3.0).logpdf(x / 3)),
    ]
    for d, expected in cases:
        value = x / 3 if isinstance(d, dist.Beta) else x
        np.testing.assert_allclose(d.log_prob(value), expected, rtol=1e-12)
    k = np.array([0, 2, 5])
    np.testing.assert_allclose(dist.Poisson(2.5).log_prob(k), st.poisson(2.5).logpmf(k), rtol=1e-12)
    np.testing.assert_allclose(dist.Bernoulli(logits=0.4).log_prob(np.array([0, 1])),
                               st.bernoulli(1 / (1 + np.exp(-0.4))).logpmf([0, 1]), rtol=1e-12)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    v = np.array([[0.5, -1.0], [1.0, 2.0]])
    np.testing.assert_allclose(dist.MultivariateNormal(np.ones(2), cov).log_prob(v),
                               st.multivariate_normal(np.ones(2), cov).logpdf(v), rtol=1e-12)
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(dist.Dirichlet(np.array([1.5, 2.0, 3.0])).log_prob(p),
                               st.dirichlet([1.5, 2.0, 3.0]).logpdf(p), rtol=1e-12)


def test_samples_have_their_distributions_moments(npr):
    jax, numpyro = npr
    dist = numpyro.distributions
    key = jax.random.PRNGKey(0)
    n = 4000
    for d, mean, var in [(dist.Normal(1.0, 2.0), 1.0, 4.0),
                         (dist.Gamma(3.0, 2.0), 1.5, 0.75),
                         (dist.Beta(2.0, 5.0), 2 / 7, 10 / (49 * 8))]:
        draws = np.asarray(d.sample(key, (n,)))
        assert draws.shape == (n,)
        np.testing.assert_allclose(draws.mean(), mean, atol=5 * np.sqrt(var / n))
        np.testing.assert_allclose(draws.var(), var, rtol=0.1)
    lkj = dist.LKJCholesky(3, concentration=2.0).sample(key, (5,))
    corr = np.einsum("nij,nkj->nik", lkj, lkj)           # L L^T: unit-diagonal correlations
    np.testing.assert_allclose(np.diagonal(corr, axis1=1, axis2=2), 1.0, rtol=1e-12)
    assert np.all(np.triu(np.asarray(lkj), 1) == 0)


def test_cholesky_transforms_round_trip(npr):
    jax, numpyro = npr
    transforms = numpyro.distributions.transforms
    x = np.linspace(-1.0, 1.0, 6)
    for t in (transforms.LowerCholeskyTransform(), transforms.CorrCholeskyTransform()):
        y = t(x[: 6 if isinstance(t, transforms.LowerCholeskyTransform) else 3])
        assert np.all(np.triu(np.asarray(y), 1) == 0)
        np.testing.assert_allclose(t.inv(y), x[: len(t.inv(y))], atol=1e-12)
    # the log |det J| of CorrCholesky against autodiff's Jacobian of the map
    t = transforms.CorrCholeskyTransform()
    u = np.array([0.3, -0.5, 0.8])
    jac = jax.jacfwd(lambda v: t(v)[np.tril_indices(3, -1)])(u)
    np.testing.assert_allclose(t.log_abs_det_jacobian(u, t(u)),
                               np.log(abs(np.linalg.det(np.asarray(jac)))), rtol=1e-10)


def test_handlers_and_log_density(npr):
    jax, numpyro = npr
    handlers = numpyro.handlers
    tr = handlers.trace(handlers.seed(conjugate_model, 0)).get_trace(numpyro, DATA)
    assert set(tr) == {"mu", "n", "x"} and tr["x"]["is_observed"]
    mu = float(tr["mu"]["value"])
    np.testing.assert_allclose(tr["x"]["fn"].log_prob(DATA).sum(), st.norm(mu, 1).logpdf(DATA).sum())
    fixed = handlers.trace(handlers.seed(handlers.condition(conjugate_model, {"mu": 0.7}), 1))
    assert float(fixed.get_trace(numpyro)["mu"]["value"]) == 0.7
    subst = handlers.trace(handlers.seed(handlers.substitute(conjugate_model, {"mu": -0.2}), 2))
    tr = subst.get_trace(numpyro)
    assert float(tr["mu"]["value"]) == -0.2 and tr["x"]["value"].shape == (len(DATA),)
    log_joint, _ = numpyro.infer.util.log_density(conjugate_model, (numpyro, DATA), {},
                                                  {"mu": 0.7})
    expected = st.norm(0, 2).logpdf(0.7) + st.norm(0.7, 1).logpdf(DATA).sum()
    np.testing.assert_allclose(log_joint, expected, rtol=1e-12)
    grad = jax.grad(lambda m: numpyro.infer.util.log_density(
        conjugate_model, (numpyro, DATA), {}, {"mu": m})[0])(0.7)
    np.testing.assert_allclose(grad, -0.7 / 4 + (DATA - 0.7).sum(), rtol=1e-12)


def _mc_se(draws):
    """A conservative Monte Carlo standard error of the mean (batch means)."""
    batches = np.asarray(draws).reshape(10, -1).mean(1)
    return batches.std(ddof=1) / np.sqrt(10)


@pytest.mark.parametrize("kernel", ["NUTS", "HMC"])
def test_mcmc_conjugate_posterior(npr, kernel):
    jax, numpyro = npr
    infer = numpyro.infer
    # HMC's default trajectory (2 pi) is one whole period of the dynamics once
    # the mass matrix fits a Gaussian posterior, so draws would barely move;
    # about a quarter period gives nearly independent draws
    sampler = (infer.NUTS(conjugate_model) if kernel == "NUTS"
               else infer.HMC(conjugate_model, trajectory_length=1.5))
    mcmc = infer.MCMC(sampler, num_warmup=150, num_samples=400, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(3), numpyro, DATA, extra_fields=("potential_energy",))
    mu = np.asarray(mcmc.get_samples()["mu"])
    assert mu.shape == (400,)
    assert abs(mu.mean() - POST_MEAN) < 4 * _mc_se(mu) + 0.02
    np.testing.assert_allclose(mu.std(), POST_SD, rtol=0.2)
    # the potential energy the sampler reports is minus the log joint at its draws
    pe = np.asarray(mcmc.get_extra_fields()["potential_energy"])
    logp = st.norm(0, 2).logpdf(mu) + st.norm(mu[:, None], 1).logpdf(DATA).sum(1)
    np.testing.assert_allclose(pe, -logp, rtol=1e-10)


def test_nuts_logistic_regression_and_predictive(npr):
    jax, numpyro = npr
    dist, infer = numpyro.distributions, numpyro.infer
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = (rng.uniform(size=200) < 1 / (1 + np.exp(-(X @ [1.5, -1.0] + 0.5)))).astype(float)

    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(np.zeros(2), 5.0).to_event(1))
        b = numpyro.sample("b", dist.Normal(0.0, 5.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("y", dist.Bernoulli(logits=X @ w + b), obs=y)
    mcmc = infer.MCMC(infer.NUTS(model), num_warmup=100, num_samples=150, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(4), X, y)
    w = np.asarray(mcmc.get_samples()["w"])
    # with 200 points the posterior is near-Gaussian about its mode (the MAP,
    # found here by Newton's method in NumPy): its mean lies within a few
    # posterior sds of it
    theta = np.zeros(3)
    Z = np.hstack([X, np.ones((200, 1))])
    for _ in range(25):
        p = 1 / (1 + np.exp(-Z @ theta))
        g = Z.T @ (y - p) - theta / 25
        H = -(Z.T * (p * (1 - p))) @ Z - np.eye(3) / 25
        theta = theta - np.linalg.solve(H, g)
    sd = np.sqrt(np.diag(np.linalg.inv(-H)))[:2]
    assert np.all(np.abs(w.mean(0) - theta[:2]) < 0.5 * sd + 4 * w.std(0) / np.sqrt(30))
    np.testing.assert_allclose(w.std(0), sd, rtol=0.35)
    # posterior predictive: each draw's y has mean sigmoid(X w + b) given that draw
    pred = infer.Predictive(model, mcmc.get_samples())(jax.random.PRNGKey(5), X)["y"]
    assert pred.shape == (150, 200) and set(np.unique(np.asarray(pred))) <= {0.0, 1.0}
    samples = mcmc.get_samples()
    probs = 1 / (1 + np.exp(-(np.asarray(samples["w"]) @ X.T + np.asarray(samples["b"])[:, None])))
    assert abs(np.asarray(pred).mean() - probs.mean()) < 4 * np.sqrt(0.25 / pred.size)


def test_nuts_eight_schools(npr):
    jax, numpyro = npr
    dist, infer = numpyro.distributions, numpyro.infer
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])

    def eight_schools(J, sigma, y=None):
        mu = numpyro.sample("mu", dist.Normal(0, 5))
        tau = numpyro.sample("tau", dist.HalfCauchy(5))
        with numpyro.plate("J", J):
            theta = numpyro.sample("theta", dist.Normal(mu, tau))
            numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)
    # short and shallow (fungrad's per-iteration cost is high): the exact check
    # is the potential energy below; the posterior check is loose
    mcmc = infer.MCMC(infer.NUTS(eight_schools, max_tree_depth=5), num_warmup=40,
                      num_samples=100, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), 8, sigma, y=y, extra_fields=("potential_energy",))
    s = mcmc.get_samples()
    assert s["theta"].shape == (100, 8) and np.all(np.asarray(s["tau"]) > 0)
    # the posterior of mu (long runs: mean 4.4, sd 3.3) and tau (mean 3.6)
    assert abs(float(s["mu"].mean()) - 4.4) < 3.5 and 0.5 < float(s["tau"].mean()) < 8.0
    # the reported potential energy is minus the log joint in unconstrained
    # space: the log density plus log |d tau / d log tau| = log tau
    logp = [numpyro.infer.util.log_density(eight_schools, (8, sigma), {"y": y},
                                           {k: v[i] for k, v in s.items()})[0]
            for i in range(0, 100, 25)]
    pe = np.asarray(mcmc.get_extra_fields()["potential_energy"])[::25]
    np.testing.assert_allclose(pe, -(np.asarray(logp) + np.log(np.asarray(s["tau"])[::25])),
                               rtol=1e-9)


def test_svi_autodelta_is_the_map_and_autonormal_the_posterior(npr):
    jax, numpyro = npr
    infer, optim = numpyro.infer, numpyro.optim
    guide = infer.autoguide.AutoDelta(conjugate_model)
    svi = infer.SVI(conjugate_model, guide, optim.Adam(0.1), infer.Trace_ELBO())
    result = svi.run(jax.random.PRNGKey(2), 300, numpyro, DATA, progress_bar=False)
    np.testing.assert_allclose(result.params["mu_auto_loc"], POST_MEAN, rtol=1e-5)
    assert result.losses.shape == (300,) and result.losses[-1] < result.losses[0]
    guide = infer.autoguide.AutoNormal(conjugate_model)
    svi = infer.SVI(conjugate_model, guide, optim.Adam(0.05), infer.Trace_ELBO(num_particles=4))
    result = svi.run(jax.random.PRNGKey(2), 500, numpyro, DATA, progress_bar=False)
    np.testing.assert_allclose(result.params["mu_auto_loc"], POST_MEAN, atol=0.06)
    np.testing.assert_allclose(result.params["mu_auto_scale"], POST_SD, rtol=0.2)
    draws = guide.sample_posterior(jax.random.PRNGKey(6), result.params, sample_shape=(2000,))
    np.testing.assert_allclose(np.asarray(draws["mu"]).std(), result.params["mu_auto_scale"],
                               rtol=0.1)
