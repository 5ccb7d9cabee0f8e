"""blackjax 1.7.1, unmodified, on fungrad through the jax import hook
(fungrad.jax_compat): NUTS, HMC, MALA and random-walk Metropolis kernels
stepped with ``lax.scan`` under ``jit``, Stan's window adaptation, adaptive
tempered SMC and mean-field VI on a conjugate normal model, judged against
its closed-form posterior (and, for SMC, its closed-form evidence).  Fixed
keys; tolerances a correct sampler meets whatever its random stream.

blackjax is installed without its dependencies (``pip install --no-deps
blackjax==1.7.1``, plus optax 0.2.8 as for tests/test_optax.py; numpy, scipy
and typing-extensions are already there).
"""
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("blackjax") is None:   # (importing it needs the hook: see bj)
    pytest.skip("blackjax is not installed", allow_module_level=True)

from fungrad.jax_compat import installed  # noqa: E402

# x_i ~ N(mu, 1), mu ~ N(0, 2^2)
DATA = np.array([0.8, 1.9, 1.1, 0.4, 1.6, 2.3, 0.9, 1.2])
POST_PREC = 1 / 4 + len(DATA)
POST_MEAN, POST_SD = DATA.sum() / POST_PREC, POST_PREC ** -0.5


def log_evidence():
    """log p(data) = log N(data; 0, I + 4 11^T)."""
    cov = np.eye(len(DATA)) + 4.0
    _, logdet = np.linalg.slogdet(cov)
    return -0.5 * (DATA @ np.linalg.solve(cov, DATA) + logdet + len(DATA) * np.log(2 * np.pi))


@pytest.fixture(scope="module")
def bj():
    """(jax, blackjax) with jax = fungrad, for this module only."""
    with installed(forget=("blackjax", "optax")) as jax:
        import blackjax
        import optax
        yield jax, blackjax, optax


def logprior(p):
    return -0.5 * p["mu"] ** 2 / 4 - 0.5 * np.log(2 * np.pi * 4)


def loglikelihood(p):
    import jax.numpy as jnp
    return -0.5 * jnp.sum((DATA - p["mu"]) ** 2) - 0.5 * len(DATA) * np.log(2 * np.pi)


def logdensity(p):
    return logprior(p) + loglikelihood(p)


def run_chain(jax, kernel, key, n, position=0.0):
    def one(state, k):
        state, _ = kernel.step(k, state)
        return state, state.position["mu"]

    @jax.jit
    def chain(key):
        return jax.lax.scan(one, kernel.init({"mu": position}), jax.random.split(key, n))[1]
    return np.asarray(chain(key))


def assert_posterior(draws, mean_tol_sds=4.0, sd_rtol=0.2):
    batches = draws.reshape(10, -1).mean(1)
    se = batches.std(ddof=1) / np.sqrt(10)      # batch means: autocorrelation included
    assert abs(draws.mean() - POST_MEAN) < mean_tol_sds * se + 0.02
    np.testing.assert_allclose(draws.std(), POST_SD, rtol=sd_rtol)


@pytest.mark.parametrize("name", ["nuts", "hmc", "mala", "rmh", "rwm"])
def test_kernels_stepped_with_scan_sample_the_posterior(bj, name):
    jax, blackjax, _ = bj
    kernel = {"nuts": lambda: blackjax.nuts(logdensity, 0.3, np.ones(1)),
              "hmc": lambda: blackjax.hmc(logdensity, 0.3, np.ones(1), 5),
              "mala": lambda: blackjax.mala(logdensity, 0.1),
              # rmh takes a proposal of the new position (symmetric here)
              "rmh": lambda: blackjax.rmh(logdensity, lambda key, p: jax.tree.map(
                  lambda x: x + 0.5 * jax.random.normal(key, np.shape(x)), p)),
              "rwm": lambda: blackjax.additive_step_random_walk.normal_random_walk(
                  logdensity, 0.5)}[name]()
    draws = run_chain(jax, kernel, jax.random.PRNGKey(0), 600, position=POST_MEAN)[100:]
    assert_posterior(draws)


def test_window_adaptation_then_nuts(bj):
    jax, blackjax, _ = bj
    warmup = blackjax.window_adaptation(blackjax.nuts, logdensity)
    (state, params), _ = warmup.run(jax.random.PRNGKey(1), {"mu": 0.0}, num_steps=150)
    # the adapted (diagonal) inverse mass matrix estimates the posterior variance
    # (from one slow window of about 25 correlated draws: within a factor 3)
    ratio = float(params["inverse_mass_matrix"][0]) / POST_SD ** 2
    assert 1 / 3 < ratio < 3
    assert 0.1 < float(params["step_size"]) < 5.0
    kernel = blackjax.nuts(logdensity, **params)

    def one(s, k):
        s, _ = kernel.step(k, s)
        return s, s.position["mu"]
    _, draws = jax.jit(lambda key: jax.lax.scan(one, state, jax.random.split(key, 400)))(
        jax.random.PRNGKey(2))
    assert_posterior(np.asarray(draws))


def test_adaptive_tempered_smc_posterior_and_evidence(bj):
    jax, blackjax, _ = bj
    import jax.numpy as jnp
    smc = blackjax.adaptive_tempered_smc(
        logprior, loglikelihood, blackjax.hmc.build_kernel(), blackjax.hmc.init,
        # shared parameters have a leading axis of size 1 (per-particle ones: n)
        {"step_size": jnp.array([0.2]), "inverse_mass_matrix": jnp.ones((1, 1)),
         "num_integration_steps": jnp.array([5])},
        blackjax.smc.resampling.systematic, target_ess=0.5, num_mcmc_steps=5)
    prior_draws = jax.random.normal(jax.random.PRNGKey(3), (1000,)) * 2.0
    state = smc.init({"mu": prior_draws})

    def not_done(carry):
        return carry[0].tempering_param < 1

    def step(carry):
        state, key, log_z, i = carry
        key, sub = jax.random.split(key)
        state, info = smc.step(sub, state)
        return state, key, log_z + info.log_likelihood_increment, i + 1
    state, _, log_z, steps = jax.jit(lambda s: jax.lax.while_loop(
        not_done, step, (s, jax.random.PRNGKey(4), 0.0, 0)))(state)
    mu = np.asarray(state.particles["mu"])
    w = np.asarray(state.weights)
    assert 1 < int(steps) < 30 and float(state.tempering_param) == 1.0
    mean = np.sum(w * mu)
    sd = np.sqrt(np.sum(w * (mu - mean) ** 2))
    assert abs(mean - POST_MEAN) < 0.08 and abs(sd / POST_SD - 1) < 0.2
    assert abs(float(log_z) - log_evidence()) < 0.3


def test_meanfield_vi_fits_the_gaussian_posterior(bj):
    jax, blackjax, optax = bj
    vi = blackjax.meanfield_vi(logdensity, optax.adam(0.05), num_samples=20)
    state = vi.init({"mu": 0.0})

    def one(s, k):
        s, info = vi.step(k, s)
        return s, info.elbo
    state, elbos = jax.jit(lambda key: jax.lax.scan(one, state, jax.random.split(key, 400)))(
        jax.random.PRNGKey(5))
    # the posterior is Gaussian, so the mean-field family holds it exactly
    np.testing.assert_allclose(state.mu["mu"], POST_MEAN, atol=0.05)
    np.testing.assert_allclose(np.exp(state.rho["mu"]), POST_SD, rtol=0.15)
    # blackjax's "elbo" is the objective KL(q || p) up to log Z: E_q[log q - log p],
    # which at the exact fit is -log p(data) for every draw (the STL estimator)
    elbos = np.asarray(elbos)
    assert elbos[-1] < elbos[0]
    np.testing.assert_allclose(elbos[-20:], -log_evidence(), rtol=2e-3)
