"""fungrad.random: the samplers built on the basic ones (cauchy, chisquare, f,
t, generalized_normal, ball, geometric, lognormal, maxwell,
double_sided_maxwell, pareto, rayleigh, triangular, wald, weibull_min,
orthogonal, multinomial) and the key utilities (clone, key_impl, key_dtype).

Distributions are checked against SciPy's CDFs (Kolmogorov–Smirnov at the 1%
level) or pmfs (chi-square at 0.1%), with fixed keys, so the tests are
deterministic; moments are checked to five standard errors.
"""
import math

import numpy as np
import pytest
from scipy import stats

import fungrad
import fungrad.numpy as fnp
import fungrad.random as random
from tests.test_random import assert_counts_match_pmf, ks_vectorized

N = 20000
KS_CRITICAL_1PCT = 1.628 / math.sqrt(N)


def _double_sided_maxwell_cdf(loc, scale):
    def cdf(x):
        z = (x - loc) / scale
        return 0.5 + 0.5 * np.sign(z) * stats.maxwell.cdf(np.abs(z))
    return cdf


# name -> (draw N samples from a key, the CDF they should follow)
CONTINUOUS = {
    "cauchy": (lambda k: random.cauchy(k, (N,)), stats.cauchy.cdf),
    "chisquare_3": (lambda k: random.chisquare(k, 3.0, (N,)), stats.chi2(3.0).cdf),
    "chisquare_0.7": (lambda k: random.chisquare(k, 0.7, (N,)), stats.chi2(0.7).cdf),
    "f_3_7": (lambda k: random.f(k, 3.0, 7.0, (N,)), stats.f(3.0, 7.0).cdf),
    "t_2.5": (lambda k: random.t(k, 2.5, (N,)), stats.t(2.5).cdf),
    "t_40": (lambda k: random.t(k, 40.0, (N,)), stats.t(40.0).cdf),
    "generalized_normal_1": (lambda k: random.generalized_normal(k, 1.0, (N,)),
                             stats.gennorm(1.0).cdf),
    "generalized_normal_3.5": (lambda k: random.generalized_normal(k, 3.5, (N,)),
                               stats.gennorm(3.5).cdf),
    "lognormal": (lambda k: random.lognormal(k, 0.6, (N,)), stats.lognorm(0.6).cdf),
    "maxwell": (lambda k: random.maxwell(k, (N,)), stats.maxwell.cdf),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)),
                             _double_sided_maxwell_cdf(1.0, 2.0)),
    "pareto": (lambda k: random.pareto(k, 3.0, (N,)), stats.pareto(3.0).cdf),
    "rayleigh": (lambda k: random.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0).cdf),
    "triangular": (lambda k: random.triangular(k, -1.0, 0.5, 2.0, (N,)),
                   stats.triang(0.5, loc=-1.0, scale=3.0).cdf),
    # Wald with scale 1 is SciPy's invgauss(mu=mean)
    "wald_0.7": (lambda k: random.wald(k, 0.7, (N,)), stats.invgauss(0.7).cdf),
    "wald_3": (lambda k: random.wald(k, 3.0, (N,)), stats.invgauss(3.0).cdf),
    "weibull_min": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
                    stats.weibull_min(1.5, scale=2.0).cdf),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_samplers_follow_their_distribution(name):
    draw, cdf = CONTINUOUS[name]
    x = np.asarray(draw(random.PRNGKey(51)))
    assert x.shape == (N,) and x.dtype == np.float64 and np.all(np.isfinite(x))
    assert ks_vectorized(x, cdf) < KS_CRITICAL_1PCT


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_geometric_chi_square_and_support(p):
    x = np.asarray(random.geometric(random.PRNGKey(52), p, (N,)))
    assert x.dtype == np.int64 and x.min() >= 1
    assert abs(x.mean() - 1 / p) < 5 * math.sqrt((1 - p) / p**2 / N)
    assert_counts_match_pmf(x, lambda k: 0.0 if k == 0 else p * (1 - p) ** (k - 1))


def test_multinomial_counts_sum_to_n_with_binomial_marginals():
    p = np.array([0.1, 0.25, 0.05, 0.6])
    n = 30.0
    x = np.asarray(random.multinomial(random.PRNGKey(53), n, p, shape=(N, 4)))
    assert x.shape == (N, 4) and x.dtype == np.float64
    np.testing.assert_array_equal(x.sum(-1), n)
    assert np.all(x == np.floor(x)) and x.min() >= 0
    assert np.all(np.abs(x.mean(0) - n * p) < 5 * np.sqrt(n * p * (1 - p) / N))
    # covariance -n p_i p_j off the diagonal
    cov = np.cov(x.T)
    expected = n * (np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(cov, expected, atol=0.15)
    for i in (0, 3):
        assert_counts_match_pmf(x[:, i], lambda k: stats.binom.pmf(k, n, p[i]))


def test_multinomial_shapes_and_batched_parameters():
    key = random.PRNGKey(54)
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    assert random.multinomial(key, 5, p).shape == (2, 3)
    # shape is the result's, outcomes last (JAX's)
    assert random.multinomial(key, np.array([5.0, 7.0]), p, shape=(4, 2, 3)).shape == (4, 2, 3)
    x = np.asarray(random.multinomial(key, np.array([5.0, 7.0]), p, shape=(200, 2, 3)))
    np.testing.assert_array_equal(x.sum(-1), np.broadcast_to([5.0, 7.0], (200, 2)))
    assert np.all(x[:, 0, 2] == 0)                    # an outcome of probability 0 never occurs
    assert random.multinomial(key, 3, [0.5, 0.5], dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="outcomes"):
        random.multinomial(key, 3, 0.5)
    with pytest.raises(ValueError, match="broadcast"):
        random.multinomial(key, 3, p, shape=(3,))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.7])
def test_ball_is_uniform_in_the_lp_ball(p):
    d = 3
    x = np.asarray(random.ball(random.PRNGKey(55), d, p, (N,)))
    assert x.shape == (N, d)
    radius = (np.abs(x) ** p).sum(-1) ** (1 / p)
    assert radius.max() <= 1.0
    # uniform in a d-dimensional ball: P(radius <= r) = r**d, for every p
    assert ks_vectorized(radius, lambda r: np.clip(r, 0, 1) ** d) < KS_CRITICAL_1PCT
    # symmetric in each coordinate
    assert np.all(np.abs(x.mean(0)) < 5 * x.std(0) / math.sqrt(N))


def test_orthogonal_is_haar_distributed():
    n = 3
    q = np.asarray(random.orthogonal(random.PRNGKey(56), n, (N // 4,)))
    assert q.shape == (N // 4, n, n)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(n), q.shape),
                               atol=1e-13)
    # under Haar measure on O(3) an entry is a coordinate of a uniform point on
    # the 2-sphere: uniform on [-1, 1]; and det = +1 or -1 equally often
    entry = q[:, 1, 2]
    assert ks_vectorized(entry, lambda v: (v + 1) / 2) < 1.628 / math.sqrt(N // 4)
    det_positive = (np.linalg.det(q) > 0).mean()
    assert abs(det_positive - 0.5) < 5 * 0.5 / math.sqrt(N // 4)


def test_orthogonal_rectangular():
    key = random.PRNGKey(57)
    tall = np.asarray(random.orthogonal(key, 5, m=2))
    wide = np.asarray(random.orthogonal(key, 2, (3,), m=5))
    assert tall.shape == (5, 2) and wide.shape == (3, 2, 5)
    np.testing.assert_allclose(tall.T @ tall, np.eye(2), atol=1e-13)
    np.testing.assert_allclose(wide @ np.swapaxes(wide, -1, -2), np.broadcast_to(np.eye(2), (3, 2, 2)),
                               atol=1e-13)


def test_moments_of_parameterised_samplers():
    key = random.PRNGKey(58)
    for sample, mean, var in [
            (random.chisquare(key, 5.0, (N,)), 5.0, 10.0),
            (random.t(key, 8.0, (N,)), 0.0, 8.0 / 6.0),
            (random.pareto(key, 5.0, (N,)), 5.0 / 4.0, 5.0 / (16 * 3)),
            (random.wald(key, 2.0, (N,)), 2.0, 8.0),
            (random.triangular(key, 0.0, 1.0, 4.0, (N,)), 5.0 / 3.0, (16 + 1 - 4) / 18)]:
        sample = np.asarray(sample)
        assert abs(sample.mean() - mean) < 5 * math.sqrt(var / N), (sample.mean(), mean)


def test_parameter_broadcasting_and_default_shapes():
    key = random.PRNGKey(59)
    df = np.array([1.0, 4.0, 9.0])
    assert random.chisquare(key, df).shape == (3,)
    assert random.t(key, df, (2, 3)).shape == (2, 3)
    assert random.f(key, df, np.ones((2, 1))).shape == (2, 3)
    assert random.lognormal(key).shape == ()
    assert random.lognormal(key, df).shape == (3,)
    assert random.pareto(key, df, (4, 3)).shape == (4, 3)
    assert random.rayleigh(key, df).shape == (3,)
    assert random.wald(key, df).shape == (3,)
    assert random.geometric(key, np.array([0.5, 0.1])).shape == (2,)
    assert random.triangular(key, 0.0, np.array([0.5, 1.0]), 2.0).shape == (2,)
    assert random.weibull_min(key, df, 1.0).shape == (3,)
    assert random.weibull_min(key, 1.0, 2.0, (5,)).shape == (5,)
    assert random.generalized_normal(key, 2.0, (4,)).shape == (4,)
    # shape is prepended to the parameters' broadcast shape (JAX's convention)
    assert random.double_sided_maxwell(key, np.zeros(3), 1.0, (4,)).shape == (4, 3)
    assert random.double_sided_maxwell(key, 0.0, 1.0).shape == ()
    assert random.ball(key, 4, shape=(2, 3)).shape == (2, 3, 4)
    assert random.maxwell(key, (2, 2)).shape == (2, 2)
    # per-column parameters give per-column distributions
    means = np.asarray(random.pareto(key, np.array([3.0, 9.0]), (8000, 2))).mean(0)
    np.testing.assert_allclose(means, [1.5, 9 / 8], rtol=0.03)
    with pytest.raises(ValueError, match="broadcast"):
        random.chisquare(key, df, (2,))
    with pytest.raises(ValueError, match="broadcast"):
        random.weibull_min(key, df, 1.0, (2,))


def test_float32_and_dtype_errors():
    key = random.PRNGKey(60)
    for sampler in (lambda dt: random.cauchy(key, (3,), dt),
                    lambda dt: random.t(key, 3.0, (3,), dt),
                    lambda dt: random.maxwell(key, (3,), dt),
                    lambda dt: random.orthogonal(key, 3, (), dt),
                    lambda dt: random.ball(key, 3, 2, (), dt)):
        assert sampler(np.float32).dtype == np.float32
        # JAX raises ValueError, fungrad's older samplers TypeError: both work
        with pytest.raises(ValueError, match="dtype"):
            sampler(np.int32)
        with pytest.raises(TypeError, match="dtype"):
            sampler(np.int32)
    assert random.geometric(key, 0.5, (3,), np.int32).dtype == np.int32
    with pytest.raises(ValueError, match="dtype"):
        random.geometric(key, 0.5, (3,), np.float64)


def test_static_sizes_and_keys_are_checked():
    key = random.PRNGKey(0)
    with pytest.raises(TypeError, match="`d` must be a non-negative Python int"):
        random.ball(key, 2.5)
    with pytest.raises(TypeError, match="`n` must be a non-negative Python int"):
        random.orthogonal(key, -1)
    with pytest.raises(TypeError, match=r"`key`.*PRNGKey\(0\)"):
        random.cauchy(np.zeros(2))
    with pytest.raises(TypeError, match=r"`key`.*PRNGKey\(0\)"):
        random.multinomial(np.zeros(2), 3, [0.5, 0.5])


def test_gradients_through_parameters():
    key = random.PRNGKey(61)
    sigma = np.array([0.3, 1.2])
    x = np.asarray(random.lognormal(key, sigma))
    # x = exp(sigma z): dx/dsigma = x log(x) / sigma
    got = fungrad.grad(lambda s: fnp.sum(random.lognormal(key, s)))(sigma)
    np.testing.assert_allclose(got, x * np.log(x) / sigma, rtol=1e-12)
    b = np.array([1.5, 4.0])
    x = np.asarray(random.pareto(key, b))
    got = fungrad.grad(lambda b: fnp.sum(random.pareto(key, b)))(b)
    np.testing.assert_allclose(got, -x * np.log(x) / b, rtol=1e-12)
    scale = np.array([0.5, 2.0])
    x = np.asarray(random.rayleigh(key, scale))
    got = fungrad.grad(lambda s: fnp.sum(random.rayleigh(key, s)))(scale)
    np.testing.assert_allclose(got, x / scale, rtol=1e-12)
    # chisquare through gamma's implicit reparameterisation: E[x] = df, so the
    # average derivative of the samples in df is 1
    mean_of = lambda df: fnp.mean(random.chisquare(random.PRNGKey(62), df, (4000,)))
    assert abs(fungrad.grad(mean_of)(3.0) - 1.0) < 0.05


# samplers with mixed parameters, for the transformation tests
NEW_SAMPLERS = {
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "chisquare": lambda k: random.chisquare(k, fnp.array([0.5, 3.0])),
    "f": lambda k: random.f(k, 2.0, fnp.array([3.0, 9.0])),
    "t": lambda k: random.t(k, fnp.array([1.5, 20.0])),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (3,)),
    "ball": lambda k: random.ball(k, 3, 1.5, (2,)),
    "geometric": lambda k: random.geometric(k, fnp.array([0.2, 0.7]), (4, 2)),
    "lognormal": lambda k: random.lognormal(k, 0.5, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 1.0, fnp.array([1.0, 2.0])),
    "pareto": lambda k: random.pareto(k, fnp.array([1.0, 3.0])),
    "rayleigh": lambda k: random.rayleigh(k, 2.0, (3,)),
    "triangular": lambda k: random.triangular(k, 0.0, 0.3, 1.0, (3,)),
    "wald": lambda k: random.wald(k, fnp.array([0.5, 4.0])),
    "weibull_min": lambda k: random.weibull_min(k, 1.0, fnp.array([0.5, 2.0])),
    "orthogonal": lambda k: random.orthogonal(k, 3),
    "multinomial": lambda k: random.multinomial(k, 12.0, fnp.array([0.2, 0.3, 0.5]), shape=(2, 3)),
}


@pytest.mark.parametrize("name", sorted(NEW_SAMPLERS))
def test_jit_matches_eager_and_keys_matter(name):
    sampler = NEW_SAMPLERS[name]
    key = random.PRNGKey(63)
    np.testing.assert_allclose(fungrad.jit(sampler)(key), sampler(key), rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(sampler(key), sampler(random.PRNGKey(63)))
    k1, k2 = random.split(key)
    assert not np.array_equal(sampler(k1), sampler(k2))


@pytest.mark.parametrize("name", sorted(NEW_SAMPLERS))
def test_vmap_over_keys_matches_loop(name):
    sampler = NEW_SAMPLERS[name]
    keys = random.split(random.PRNGKey(64), 3)
    looped = np.stack([np.asarray(sampler(k)) for k in keys])
    np.testing.assert_allclose(fungrad.vmap(sampler)(keys), looped, rtol=1e-14, atol=1e-15)


def test_clone_key_impl_key_dtype():
    key = random.PRNGKey(65)
    np.testing.assert_array_equal(random.clone(key), key)
    np.testing.assert_array_equal(random.uniform(random.clone(key)), random.uniform(key))
    impl = random.key_impl(key)
    assert str(impl) == "threefry2x32" and impl == random.key_impl(random.split(key, 4))
    assert hash(impl) == hash(random.key_impl(key)) and "threefry2x32" in repr(impl)
    # the dtype of typed keys (random.key), as JAX's key_dtype
    assert str(random.key_dtype()) == "key<fry>" == str(random.key_dtype("threefry2x32"))
    assert random.key_dtype(impl) == random.key(0).dtype
    with pytest.raises(ValueError, match="threefry2x32"):
        random.key_dtype("rbg")
    with pytest.raises(TypeError, match="key_data"):
        random.key_impl(np.zeros(3))
    with pytest.raises(TypeError, match="`key`"):
        random.clone(1.0)
    np.testing.assert_array_equal(fungrad.jit(random.clone)(key), key)


def test_normal_with_a_complex_dtype():
    # JAX's convention: real and imaginary parts independent N(0, 1/2), so E|z|^2 = 1
    key = random.PRNGKey(66)
    z = np.asarray(random.normal(key, (N,), np.complex128))
    assert z.dtype == np.complex128 and z.shape == (N,)
    for part in (z.real, z.imag):
        assert ks_vectorized(part, stats.norm(scale=math.sqrt(0.5)).cdf) < KS_CRITICAL_1PCT
    assert abs(np.mean(z.real * z.imag)) < 5 * 0.5 / math.sqrt(N)
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 5 * 1.0 / math.sqrt(N)
    assert random.normal(key, (2,), np.complex64).dtype == np.complex64
    sampler = lambda k: random.normal(k, (3,), np.complex128)
    np.testing.assert_array_equal(fungrad.jit(sampler)(key), sampler(key))
    keys = random.split(key, 2)
    np.testing.assert_array_equal(fungrad.vmap(sampler)(keys), np.stack([sampler(k) for k in keys]))
    with pytest.raises(TypeError, match="dtype"):
        random.normal(key, (2,), np.int32)
