"""fungrad.random: determinism, independence, distributions, transformations, errors.

Statistical tests use fixed keys, so they are deterministic; tolerances are
several standard errors wide (or the 1% critical value for Kolmogorov–Smirnov).
"""
import math

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
import fungrad.random as random

N = 20000
# Kolmogorov–Smirnov 1% critical value for large n: 1.628 / sqrt(n).
KS_CRITICAL_1PCT = 1.628 / math.sqrt(N)


def ks_statistic(samples, cdf):
    """sup |F_empirical - F| over the sample points (both one-sided gaps)."""
    x = np.sort(np.asarray(samples))
    model = np.array([cdf(v) for v in x])
    n = len(x)
    above = np.arange(1, n + 1) / n - model
    below = model - np.arange(0, n) / n
    return max(above.max(), below.max())


def normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


# ----------------------------------------------------------------------------
# keys and Threefry
# ----------------------------------------------------------------------------

def test_threefry_known_answers():
    # Random123's known-answer vectors for Threefry-2x32, 20 rounds.
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, count, expected in cases:
        out = random.threefry_2x32(np.array(key, np.uint32), np.array(count, np.uint32))
        assert out.dtype == np.uint32
        np.testing.assert_array_equal(out, np.array(expected, np.uint32))


def test_prng_key_and_split_match_jax_keys():
    np.testing.assert_array_equal(random.PRNGKey(0), np.array([0, 0], np.uint32))
    np.testing.assert_array_equal(random.PRNGKey(42), np.array([0, 42], np.uint32))
    np.testing.assert_array_equal(random.PRNGKey(2**40 + 3), [256, 3])
    np.testing.assert_array_equal(random.PRNGKey(-1), [2**32 - 1, 2**32 - 1])
    np.testing.assert_array_equal(random.PRNGKey(np.int64(2**40 + 3)), [256, 3])
    np.testing.assert_array_equal(random.key_data(random.key(7)), random.PRNGKey(7))
    # jax.random.split(jax.random.PRNGKey(0)) in JAX 0.10.2 (partitionable Threefry)
    np.testing.assert_array_equal(random.split(random.PRNGKey(0)),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
    # ... and with jax_threefry_partitionable=False (JAX before 0.5)
    with fungrad.threefry_partitionable(False):
        np.testing.assert_array_equal(random.split(random.PRNGKey(0)),
                                      [[4146024105, 967050713], [2718843009, 1272950319]])
    assert random.split(random.PRNGKey(0), (2, 3)).shape == (2, 3, 2)


def test_same_key_same_numbers():
    key = random.PRNGKey(123)
    for sampler in (lambda k: random.uniform(k, (100,)), lambda k: random.normal(k, (100,)),
                    lambda k: random.randint(k, (100,), 0, 1000), lambda k: random.split(k, 4),
                    lambda k: random.permutation(k, 50)):
        np.testing.assert_array_equal(sampler(key), sampler(random.PRNGKey(123)))


def test_split_and_fold_in_give_distinct_uncorrelated_streams():
    keys = list(random.split(random.PRNGKey(0), 4))
    keys += [random.PRNGKey(1), random.fold_in(random.PRNGKey(0), 7),
             random.fold_in(random.PRNGKey(1), 1)]
    # JAX's partitionable split is "fold-like": split(k, n)[i] == fold_in(k, i)
    np.testing.assert_array_equal(random.fold_in(random.PRNGKey(0), 1), keys[1])
    streams = np.stack([np.asarray(random.normal(k, (N,))) for k in keys])
    assert len({tuple(np.asarray(k)) for k in keys}) == len(keys)
    correlation = np.corrcoef(streams)
    off_diagonal = correlation[~np.eye(len(keys), dtype=bool)]
    # the standard error of a correlation of independent streams is 1/sqrt(N)
    assert np.abs(off_diagonal).max() < 4 / math.sqrt(N)
    # neighbouring elements within one stream are uncorrelated too
    assert abs(np.corrcoef(streams[0, :-1], streams[0, 1:])[0, 1]) < 4 / math.sqrt(N)


def test_bits_shapes_and_dtypes():
    key = random.PRNGKey(5)
    assert random.bits(key, (3, 4)).dtype == np.uint64      # JAX's default unsigned type
    assert random.bits(key, (3, 4), np.uint32).dtype == np.uint32
    words = np.asarray(random.bits(key, (N,), np.uint64))
    assert words.dtype == np.uint64 and words.shape == (N,)
    # each of the 64 bits is set about half of the time
    bit_freq = ((words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(0)
    assert np.all(np.abs(bit_freq - 0.5) < 5 * 0.5 / math.sqrt(N))


# ----------------------------------------------------------------------------
# distributions
# ----------------------------------------------------------------------------

def test_uniform_moments_bounds_and_ks():
    u = np.asarray(random.uniform(random.PRNGKey(1), (N,)))
    assert u.dtype == np.float64 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 0.004
    assert ks_statistic(u, lambda x: x) < KS_CRITICAL_1PCT
    # float64 samples use 53 bits: far more distinct values than one uint32 word could give
    assert len(np.unique(u * 2.0**53 % 2**21)) > N // 2
    scaled = np.asarray(random.uniform(random.PRNGKey(2), (N,), minval=-3.0, maxval=5.0))
    assert scaled.min() >= -3 and scaled.max() < 5 and abs(scaled.mean() - 1) < 0.1
    small = random.uniform(random.PRNGKey(3), (4,), np.float32)
    assert small.dtype == np.float32 and small.shape == (4,)


def test_uniform_bounds_broadcast():
    out = random.uniform(random.PRNGKey(0), (1000, 2), minval=np.array([0.0, 10.0]),
                         maxval=np.array([1.0, 11.0]))
    assert np.all(out[:, 0] < 1) and np.all(out[:, 1] >= 10)
    with pytest.raises(ValueError, match="broadcast"):
        random.uniform(random.PRNGKey(0), (3,), minval=np.zeros(4))


def test_normal_moments_and_ks():
    z = np.asarray(random.normal(random.PRNGKey(11), (N,)))
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 4 / math.sqrt(N)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / N)
    assert ks_statistic(z, normal_cdf) < KS_CRITICAL_1PCT
    assert random.normal(random.PRNGKey(0), (2, 3), np.float32).dtype == np.float32


def test_bernoulli_frequency_and_shape():
    draws = np.asarray(random.bernoulli(random.PRNGKey(4), 0.3, (N,)))
    assert draws.dtype == np.bool_
    assert abs(draws.mean() - 0.3) < 4 * math.sqrt(0.3 * 0.7 / N)
    per_entry = random.bernoulli(random.PRNGKey(5), np.array([0.0, 1.0, 0.5]))
    assert per_entry.shape == (3,) and not per_entry[0] and per_entry[1]


def test_randint_moments_and_range():
    draws = np.asarray(random.randint(random.PRNGKey(6), (N,), -5, 7))
    assert draws.dtype == np.int64 and draws.min() == -5 and draws.max() == 6
    counts = np.bincount(draws + 5, minlength=12)
    expected = N / 12
    assert np.all(np.abs(counts - expected) < 5 * math.sqrt(expected))
    assert abs(draws.var() - (12**2 - 1) / 12) < 0.4
    wide = np.asarray(random.randint(random.PRNGKey(7), (1000,), -2**62, 2**62))
    assert wide.min() < -2**60 and wide.max() > 2**60
    assert random.randint(random.PRNGKey(8), (3,), 0, 10, np.int32).dtype == np.int32
    np.testing.assert_array_equal(random.randint(random.PRNGKey(8), (3,), 4, 4), [4, 4, 4])


def test_categorical_frequencies_match_softmax():
    logits = np.array([1.0, -0.5, 2.0, 0.0])
    probs = np.exp(logits) / np.exp(logits).sum()
    draws = np.asarray(random.categorical(random.PRNGKey(9), logits, shape=(N,)))
    freq = np.bincount(draws, minlength=4) / N
    assert np.all(np.abs(freq - probs) < 4 * np.sqrt(probs * (1 - probs) / N))
    batched = random.categorical(random.PRNGKey(9), np.zeros((3, 5)), axis=1)
    assert batched.shape == (3,)
    batched = random.categorical(random.PRNGKey(9), np.zeros((5, 3)), axis=0, shape=(2, 3))
    assert batched.shape == (2, 3) and np.asarray(batched).max() < 5


def test_permutation_is_a_permutation():
    perm = np.asarray(random.permutation(random.PRNGKey(10), 1000))
    np.testing.assert_array_equal(np.sort(perm), np.arange(1000))
    assert not np.array_equal(perm, np.arange(1000))
    x = np.arange(12.0).reshape(3, 4)
    cols = np.asarray(random.permutation(random.PRNGKey(10), x, axis=1))
    np.testing.assert_array_equal(np.sort(cols, axis=1), x)
    column_order = cols[0].astype(int)  # x[0] is 0..3, so row 0 names the columns
    np.testing.assert_array_equal(cols, x[:, column_order])
    rows = np.asarray(random.permutation(random.PRNGKey(10), x, independent=True))
    np.testing.assert_array_equal(np.sort(rows, axis=0), x)


def test_permutation_positions_are_uniform():
    # every element is equally likely at position 0, over many keys
    keys = random.split(random.PRNGKey(12), 3000)
    firsts = np.asarray(fungrad.vmap(lambda k: random.permutation(k, 5)[0])(keys))
    counts = np.bincount(firsts, minlength=5)
    assert np.all(np.abs(counts - 600) < 5 * math.sqrt(600))


def test_choice():
    key = random.PRNGKey(13)
    distinct = np.asarray(random.choice(key, 100, (50,), replace=False))
    assert len(np.unique(distinct)) == 50 and distinct.max() < 100
    weights = np.array([0.1, 0.0, 0.6, 0.3])
    distinct_p = np.asarray(random.choice(key, 4, (3,), replace=False, p=weights))
    assert len(np.unique(distinct_p)) == 3
    draws = np.asarray(random.choice(key, 4, (N,), p=weights))
    freq = np.bincount(draws, minlength=4) / N
    assert freq[1] == 0 and np.all(np.abs(freq - weights) < 0.015)
    a = np.arange(20.0).reshape(4, 5)
    picked = random.choice(key, a, (2, 3), axis=1)
    assert picked.shape == (4, 2, 3)
    assert set(np.asarray(picked[0]).ravel()) <= set(a[0])
    with pytest.raises(ValueError, match="without replacement"):
        random.choice(key, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="`p` must have shape"):
        random.choice(key, 3, (2,), p=np.ones(4) / 4)


def test_truncated_normal_within_bounds_and_distribution():
    lower, upper = -0.5, 1.5
    x = np.asarray(random.truncated_normal(random.PRNGKey(14), lower, upper, (N,)))
    assert x.min() > lower and x.max() < upper
    mass = normal_cdf(upper) - normal_cdf(lower)
    cdf = lambda v: (normal_cdf(v) - normal_cdf(lower)) / mass  # noqa: E731
    assert ks_statistic(x, cdf) < KS_CRITICAL_1PCT
    per_entry = random.truncated_normal(random.PRNGKey(0), np.array([0.0, -3.0]),
                                        np.array([1.0, -2.0]))
    assert per_entry.shape == (2,)
    assert 0 < per_entry[0] < 1 and -3 < per_entry[1] < -2


def test_gumbel_exponential_laplace_logistic_means():
    key = random.PRNGKey(15)
    g = np.asarray(random.gumbel(key, (N,)))
    assert abs(g.mean() - np.euler_gamma) < 4 * math.sqrt(math.pi**2 / 6 / N)
    e = np.asarray(random.exponential(key, (N,)))
    assert e.min() >= 0 and abs(e.mean() - 1) < 4 / math.sqrt(N)
    lap = np.asarray(random.laplace(key, (N,)))
    assert abs(lap.mean()) < 4 * math.sqrt(2 / N) and abs(lap.var() - 2) < 0.15
    logi = np.asarray(random.logistic(key, (N,)))
    assert abs(logi.var() - math.pi**2 / 3) < 0.25
    signs = np.asarray(random.rademacher(key, (N,)))
    assert set(np.unique(signs)) == {-1, 1} and abs(signs.mean()) < 4 / math.sqrt(N)


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_covariance(method):
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[2.0, 0.3, 0.0], [0.1, 1.0, -0.4], [0.0, 0.5, 0.7]])
    cov = a @ a.T
    x = np.asarray(random.multivariate_normal(random.PRNGKey(16), mean, cov, (N,),
                                              method=method))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), mean, atol=0.06)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.1)
    batch = random.multivariate_normal(random.PRNGKey(0), np.zeros((4, 3)), cov)
    assert batch.shape == (4, 3)
    with pytest.raises(ValueError, match="mean"):
        random.multivariate_normal(random.PRNGKey(0), np.zeros(2), cov)


# ----------------------------------------------------------------------------
# transformations
# ----------------------------------------------------------------------------

SAMPLERS = {
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 17),
    "uniform": lambda k: random.uniform(k, (7,), minval=-1.0, maxval=2.0),
    "normal": lambda k: random.normal(k, (2, 3)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (6,)),
    "randint": lambda k: random.randint(k, (5,), -10, 10),
    "categorical": lambda k: random.categorical(k, fnp.log(fnp.array([0.2, 0.3, 0.5])), shape=(4,)),
    "permutation": lambda k: random.permutation(k, 9),
    "choice": lambda k: random.choice(k, 10, (4,), replace=False),
    "choice_p": lambda k: random.choice(k, 4, (5,), p=fnp.array([0.1, 0.2, 0.3, 0.4])),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 2.0, (5,)),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, fnp.zeros(2), fnp.array([[2.0, 0.5], [0.5, 1.0]]), (3,)),
}




def test_traced_seed_and_parameters_under_jit():
    make = fungrad.jit(lambda seed, lo: random.uniform(random.PRNGKey(seed), (4,), minval=lo))
    np.testing.assert_array_equal(make(np.int64(3), 0.5),
                                  random.uniform(random.PRNGKey(3), (4,), minval=0.5))


def test_gradient_flows_through_parameters():
    # reparameterised samples are differentiable in their parameters
    d_mean = fungrad.grad(lambda mu: fnp.sum(mu + random.normal(random.PRNGKey(0), (3,))))(1.0)
    assert d_mean == 3.0
    d_max = fungrad.grad(
        lambda hi: fnp.sum(random.uniform(random.PRNGKey(0), (4,), maxval=hi)))(2.0)
    np.testing.assert_allclose(d_max, np.sum(random.uniform(random.PRNGKey(0), (4,))))


# ----------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("not_a_key", [0, 1.5, np.array([1, 2]), np.zeros(2), None])
def test_non_key_raises_type_error_with_fix(not_a_key):
    with pytest.raises(TypeError, match=r"`key`.*fungrad\.random\.PRNGKey\(0\)"):
        random.uniform(not_a_key, (3,))


def test_batch_of_keys_points_to_vmap():
    with pytest.raises(TypeError, match="vmap"):
        random.normal(random.split(random.PRNGKey(0), 3))


def test_bad_arguments():
    with pytest.raises(TypeError, match="seed"):
        random.PRNGKey(1.5)
    with pytest.raises(TypeError, match="dtype"):
        random.uniform(random.PRNGKey(0), (2,), np.int32)
    with pytest.raises(TypeError, match="dtype"):
        random.randint(random.PRNGKey(0), (2,), 0, 3, np.float64)
    with pytest.raises(TypeError, match="shape"):
        random.uniform(random.PRNGKey(0), 2.5)


def test_vmap_over_seeds_and_fold_in_data():
    seeds = np.arange(4)
    np.testing.assert_array_equal(fungrad.vmap(random.PRNGKey)(seeds),
                                  np.stack([random.PRNGKey(int(s)) for s in seeds]))
    folded = fungrad.vmap(lambda d: random.fold_in(random.PRNGKey(0), d))(seeds)
    np.testing.assert_array_equal(folded,
                                  np.stack([random.fold_in(random.PRNGKey(0), int(s)) for s in seeds]))


# ----------------------------------------------------------------------------
# gamma, loggamma, beta, dirichlet, poisson, binomial
# ----------------------------------------------------------------------------

def reference_gamma_cdf(a, x):
    """Regularized lower incomplete gamma P(a, x) by its power series, all terms
    positive (no cancellation); 600 terms cover x up to ~150."""
    x = np.asarray(x, np.float64)
    safe_x = np.where(x > 0, x, 1.0)
    term, total = np.ones_like(safe_x), np.ones_like(safe_x)
    for n in range(1, 600):
        term = term * safe_x / (a + n)
        total += term
    cdf = np.exp(a * np.log(safe_x) - safe_x - math.lgamma(a + 1)) * total
    return np.where(x > 0, cdf, 0.0)


def ks_vectorized(samples, cdf):
    """Kolmogorov–Smirnov distance for a vectorized CDF."""
    x = np.sort(np.asarray(samples, np.float64))
    model, n = cdf(x), len(x)
    return max((np.arange(1, n + 1) / n - model).max(), (model - np.arange(n) / n).max())


def chi_square_critical(df, z=3.09):
    """Wilson–Hilferty approximation of the chi-square upper quantile (z=3.09: 0.1%)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def assert_counts_match_pmf(samples, pmf):
    """Chi-square test of integer samples against ``pmf(k)``, pooling the tails
    (and any sparse cells) so every cell expects at least 5 counts."""
    samples = np.asarray(samples).astype(np.int64)
    n = len(samples)
    ks = np.arange(samples.max() + 1)
    expected = n * np.array([pmf(int(k)) for k in ks])
    observed = np.bincount(samples, minlength=len(ks)).astype(float)
    expected[-1] += n - expected.sum()           # the upper tail beyond the largest sample
    cells_obs, cells_exp, acc_obs, acc_exp = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_obs, acc_exp = acc_obs + o, acc_exp + e
        if acc_exp >= 5:
            cells_obs.append(acc_obs), cells_exp.append(acc_exp)
            acc_obs = acc_exp = 0.0
    cells_obs[-1] += acc_obs
    cells_exp[-1] += acc_exp
    cells_obs, cells_exp = np.array(cells_obs), np.array(cells_exp)
    statistic = ((cells_obs - cells_exp) ** 2 / cells_exp).sum()
    assert statistic < chi_square_critical(len(cells_obs) - 1), (statistic, len(cells_obs))


@pytest.mark.parametrize("a", [0.3, 1.0, 4.5, 60.0])
def test_gamma_moments_and_ks(a):
    x = np.asarray(random.gamma(random.PRNGKey(31), a, (N,)))
    assert x.dtype == np.float64 and x.shape == (N,) and x.min() > 0
    assert abs(x.mean() - a) < 5 * math.sqrt(a / N)
    assert abs(x.var() / a - 1) < 5 * math.sqrt((6 / a + 2) / N)   # var of a sample variance
    assert ks_vectorized(x, lambda v: reference_gamma_cdf(a, v)) < KS_CRITICAL_1PCT


def test_gamma_gradient_is_implicit_reparameterisation():
    # d x / d a = -(dF/da) / (dF/dx) at the sample, F the CDF: central differences
    a = np.array([0.2, 0.9, 3.0, 30.0])
    key = random.PRNGKey(32)
    x = np.asarray(random.gamma(key, a))
    h = 1e-5
    dF_da = np.array([(reference_gamma_cdf(ai + h, xi) - reference_gamma_cdf(ai - h, xi)) / (2 * h)
                      for ai, xi in zip(a, x)])
    dF_dx = np.exp((a - 1) * np.log(x) - x - np.array([math.lgamma(ai) for ai in a]))
    expected = -dF_da / dF_dx
    got = fungrad.grad(lambda a: fnp.sum(random.gamma(key, a)))(a)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(np.diag(fungrad.jacfwd(lambda a: random.gamma(key, a))(a)),
                               expected, rtol=1e-6)
    # loggamma: d log x / d a = (d x / d a) / x
    got_log = fungrad.grad(lambda a: fnp.sum(random.loggamma(key, a)))(a)
    np.testing.assert_allclose(got_log, expected / x, rtol=1e-6)


def test_gamma_gradient_of_mean_is_one():
    # E[x] = a, so the average of d x / d a over many samples is about 1
    mean_of = lambda a: fnp.mean(random.gamma(random.PRNGKey(33), a, (4000,)))
    for a in (0.5, 5.0):
        assert abs(fungrad.grad(mean_of)(a) - 1.0) < 0.05


def test_loggamma_is_log_of_gamma_and_finite_for_tiny_a():
    key = random.PRNGKey(34)
    a = np.array([0.5, 2.0, 7.0])
    np.testing.assert_allclose(random.loggamma(key, a), np.log(random.gamma(key, a)), rtol=1e-12)
    tiny = np.asarray(random.loggamma(key, 1e-3, (N,)))
    assert np.all(np.isfinite(tiny))
    # P(log x < t) = P(a, e^t) ~ e^(a t) / Gamma(a + 1) for tiny a
    assert abs(np.exp(tiny).mean() - 1e-3) < 5 * math.sqrt(1e-3 / N)


@pytest.mark.parametrize("a, b, cdf", [
    (2.0, 3.0, lambda x: sum(math.comb(4, j) * x**j * (1 - x) ** (4 - j) for j in (2, 3, 4))),
    (0.5, 0.5, lambda x: 2 / np.pi * np.arcsin(np.sqrt(x))),
])
def test_beta_moments_and_ks(a, b, cdf):
    x = np.asarray(random.beta(random.PRNGKey(35), a, b, (N,)))
    assert x.shape == (N,) and x.min() >= 0 and x.max() <= 1
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    assert ks_vectorized(x, cdf) < KS_CRITICAL_1PCT


def test_dirichlet_moments_and_marginal_ks():
    alpha = np.array([1.0, 2.0, 3.0])
    x = np.asarray(random.dirichlet(random.PRNGKey(36), alpha, (N,)))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    total = alpha.sum()
    var = alpha * (total - alpha) / (total**2 * (total + 1))
    assert np.all(np.abs(x.mean(0) - alpha / total) < 5 * np.sqrt(var / N))
    # the first marginal is Beta(1, 5): CDF 1 - (1 - x)^5
    assert ks_vectorized(x[:, 0], lambda v: 1 - (1 - v) ** 5) < KS_CRITICAL_1PCT
    assert random.dirichlet(random.PRNGKey(0), np.ones((4, 2))).shape == (4, 2)
    assert random.dirichlet(random.PRNGKey(0), np.ones(2), (5, 3)).shape == (5, 3, 2)


@pytest.mark.parametrize("lam", [0.7, 6.0, 25.0, 400.0])   # Knuth below 10, PTRS above
def test_poisson_moments_and_chi_square(lam):
    x = np.asarray(random.poisson(random.PRNGKey(37), lam, (N,)))
    assert x.dtype == np.int64 and x.min() >= 0
    assert abs(x.mean() - lam) < 5 * math.sqrt(lam / N)
    assert abs(x.var() / lam - 1) < 5 * math.sqrt((1 / lam + 2) / N)
    assert_counts_match_pmf(x, lambda k: math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)))


@pytest.mark.parametrize("n, p", [(8, 0.3), (30, 0.95), (60, 0.25), (500, 0.7)])
def test_binomial_moments_and_chi_square(n, p):
    # (8, 0.3), (30, 0.95): waiting times (the latter flipped); others: BTRS
    x = np.asarray(random.binomial(random.PRNGKey(38), n, p, (N,)))
    assert x.dtype == np.float64 and x.min() >= 0 and x.max() <= n
    assert np.all(x == np.floor(x))
    assert abs(x.mean() - n * p) < 5 * math.sqrt(n * p * (1 - p) / N)
    assert_counts_match_pmf(x, lambda k: math.comb(n, k) * p**k * (1 - p) ** (n - k))


def test_binomial_and_poisson_edge_parameters():
    key = random.PRNGKey(39)
    np.testing.assert_array_equal(random.poisson(key, 0.0, (5,)), np.zeros(5))
    np.testing.assert_array_equal(random.binomial(key, 7, 0.0, (3,)), np.zeros(3))
    np.testing.assert_array_equal(random.binomial(key, 7, 1.0, (3,)), np.full(3, 7.0))
    np.testing.assert_array_equal(random.binomial(key, 0, 0.4, (3,)), np.zeros(3))


def test_invalid_parameters_give_what_jax_gives():
    # JAX 0.10.2's results for these parameters (its algorithms' natural outcomes)
    key = random.PRNGKey(40)
    g = np.asarray(random.gamma(key, np.array([-1.0, 0.0, np.nan, np.inf, 2.0])))
    assert np.isnan(g[0]) and g[1] == 0 and np.isnan(g[2]) and g[3] == np.inf
    assert np.isfinite(g[4])
    b = np.asarray(random.beta(key, np.array([-1.0, 2.0]), 2.0))
    assert np.isnan(b[0]) and 0 < b[1] < 1
    np.testing.assert_array_equal(random.poisson(key, np.array([-1.0, np.nan, 3.0]))[:2], -1)
    binom = np.asarray(random.binomial(key, np.array([-1.0, 2.5, 5.0, 5.0]),
                                       np.array([0.5, 0.5, 1.5, 0.5])))
    assert np.isnan(binom[0]) and np.isnan(binom[2]) and 0 <= binom[1] <= 2   # n is floored
    assert 0 <= binom[3] <= 5


def test_new_samplers_shapes_dtypes_and_broadcasting():
    key = random.PRNGKey(41)
    assert random.gamma(key, np.array([1.0, 2.0, 3.0])).shape == (3,)
    assert random.gamma(key, np.array([1.0, 2.0, 3.0]), (4, 3)).shape == (4, 3)
    assert random.gamma(key, 2.0, (2, 2), np.float32).dtype == np.float32
    assert random.beta(key, np.ones((3, 1)), np.ones((1, 2))).shape == (3, 2)
    assert random.beta(key, 1.0, 2.0, (5,), np.float32).dtype == np.float32
    assert random.poisson(key, np.array([1.0, 20.0]), (3, 2), np.int32).dtype == np.int32
    assert random.binomial(key, np.array([5.0, 50.0]), 0.4, (3, 2)).shape == (3, 2)
    assert random.binomial(key, 5, 0.4, (2,), np.float32).dtype == np.float32
    # a parameter broadcast to the shape gives its own distribution to each column
    lam = np.array([1.0, 50.0])
    means = np.asarray(random.poisson(key, lam, (4000, 2))).mean(0)
    assert np.all(np.abs(means - lam) < 5 * np.sqrt(lam / 4000))
    with pytest.raises(ValueError, match="broadcast"):
        random.gamma(key, np.ones(3), (2,))
    with pytest.raises(ValueError, match="broadcast"):
        random.binomial(key, np.ones(3), 0.5, (4,))


def test_new_samplers_deterministic_and_split_keys_differ():
    key = random.PRNGKey(42)
    k1, k2 = random.split(key)
    for sampler in NEW_SAMPLERS.values():
        np.testing.assert_array_equal(sampler(key), sampler(random.PRNGKey(42)))
        assert not np.array_equal(sampler(k1), sampler(k2))


# Parameters mix the regimes so both methods run (and lanes finish at different rounds).
NEW_SAMPLERS = {
    "gamma": lambda k: random.gamma(k, fnp.array([0.4, 1.0, 3.0, 80.0]), (3, 4)),
    "loggamma": lambda k: random.loggamma(k, 0.05, (4,)),
    "beta": lambda k: random.beta(k, fnp.array([0.5, 2.0]), 3.0, (3, 2)),
    "dirichlet": lambda k: random.dirichlet(k, fnp.array([0.3, 1.0, 4.0]), (3,)),
    "poisson": lambda k: random.poisson(k, fnp.array([0.0, 2.5, 9.0, 30.0, 2000.0]), (2, 5)),
    "binomial": lambda k: random.binomial(
        k, fnp.array([3.0, 40.0, 200.0, 1000.0]), fnp.array([0.5, 0.9, 0.2, 0.01]), (2, 4)),
}


ALL_SAMPLERS = {**SAMPLERS, **NEW_SAMPLERS}


@pytest.mark.parametrize("name", sorted(ALL_SAMPLERS))
def test_jit_matches_eager(name):
    key = random.PRNGKey(21)
    np.testing.assert_array_equal(fungrad.jit(ALL_SAMPLERS[name])(key), ALL_SAMPLERS[name](key))


@pytest.mark.parametrize("name", sorted(ALL_SAMPLERS))
def test_vmap_over_keys_matches_loop(name):
    sampler = ALL_SAMPLERS[name]
    keys = random.split(random.PRNGKey(22), 3)
    looped = np.stack([np.asarray(sampler(k)) for k in keys])
    np.testing.assert_array_equal(fungrad.vmap(sampler)(keys), looped)
    np.testing.assert_array_equal(fungrad.jit(fungrad.vmap(sampler))(keys), looped)


def test_gamma_gradient_under_vmap_and_jit():
    a = np.array([0.5, 2.0, 10.0])
    per_key = lambda k: fungrad.grad(lambda a: fnp.sum(random.gamma(k, a)))(a)
    keys = random.split(random.PRNGKey(45), 2)
    looped = np.stack([np.asarray(per_key(k)) for k in keys])
    np.testing.assert_allclose(fungrad.vmap(per_key)(keys), looped, rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(per_key)(keys[0]), looped[0], rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda k: random.gamma(k, 1.0), lambda k: random.loggamma(k, 1.0),
    lambda k: random.beta(k, 1.0, 1.0), lambda k: random.dirichlet(k, [1.0, 1.0]),
    lambda k: random.poisson(k, 1.0), lambda k: random.binomial(k, 3, 0.5)])
def test_new_samplers_reject_non_keys(call):
    with pytest.raises(TypeError, match=r"`key`.*fungrad\.random\.PRNGKey\(0\)"):
        call(np.zeros(2))


def test_new_samplers_bad_arguments():
    key = random.PRNGKey(0)
    with pytest.raises(TypeError, match="dtype"):
        random.gamma(key, 1.0, dtype=np.int32)
    with pytest.raises(TypeError, match="dtype"):
        random.poisson(key, 1.0, dtype=np.float64)
    with pytest.raises(TypeError, match="dtype"):
        random.binomial(key, 3, 0.5, dtype=np.int64)
    with pytest.raises(ValueError, match="alpha"):
        random.dirichlet(key, 1.0)


def test_binomial_edges_and_multinomial_do_not_warn_eagerly():
    """JAX's inversion divides log(u) by log1p(-p) = 0 for p = 0 or 1 and
    selects the result away: eager calls keep NumPy's warnings quiet (inside
    a user's jit they are not: its generated code runs later)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        edges = random.binomial(random.PRNGKey(0), 10.0, np.array([0.0, 1.0]))
        counts = random.multinomial(random.PRNGKey(1), 10.0, np.array([0.2, 0.3, 0.5]))
    np.testing.assert_array_equal(edges, [0.0, 10.0])
    assert float(np.sum(counts)) == 10.0
