"""fungrad.random gives the same numbers for the same key, release after release.

``PINNED`` holds values computed by the implementation that predates the
vectorised Threefry and samplers (commit 7279d28, where every Threefry round
and every sampler step was a separate ``fungrad.lax`` operation): for each case
the result's shape, dtype and its values at a few flat positions (all of them
for small results; for large ones positions around chunk-sized boundaries).

Bits, keys, integer samplers and uniform floats (an exact bits-to-float
step) must match exactly. Samplers that apply a transcendental function are
compared within a few ulps: ``erf_inv`` (normal and everything that draws
normals: truncated_normal, multivariate_normal, the gamma family via
Marsaglia-Tsang) was reimplemented, and NumPy's ``log`` (gumbel, exponential,
laplace, logistic) may round its last bit differently on another machine.
"""
import numpy as np
import pytest

import fungrad
import fungrad.random as random
from fungrad.lax import prng
from fungrad.lax.kernels import prng as _prng_numpy

K0 = random.PRNGKey(0)
K42 = random.PRNGKey(42)
KBIG = random.PRNGKey(2**40 + 3)
KSPLIT = random.split(random.PRNGKey(7))[1]
KFOLD = random.fold_in(random.PRNGKey(1), 5)
LARGE = 300_001        # several chunks of the vectorised kernels, odd size

EXACT, ULPS = "exact", "ulps"

CASES = {
    # keys and Threefry
    "PRNGKey(2**40+3)": (EXACT, lambda: KBIG),
    "split(K0, 3)": (EXACT, lambda: random.split(K0, 3)),
    "split(K42, (2, 2))": (EXACT, lambda: random.split(K42, (2, 2))),
    "split(KBIG, 1)": (EXACT, lambda: random.split(KBIG, 1)),
    "fold_in(K0, 0)": (EXACT, lambda: random.fold_in(K0, 0)),
    "fold_in(K42, 2**31+5)": (EXACT, lambda: random.fold_in(K42, 2**31 + 5)),
    "fold_in(KSPLIT, 17)": (EXACT, lambda: random.fold_in(KSPLIT, 17)),
    "threefry(K42, 0-d)": (EXACT, lambda: random.threefry_2x32(K42, np.uint32(9))),
    "threefry(K42, (5,))": (EXACT, lambda: random.threefry_2x32(
        K42, np.arange(5, dtype=np.uint32) * np.uint32(77))),
    "threefry(KBIG, (2, 3))": (EXACT, lambda: random.threefry_2x32(
        KBIG, np.arange(6, dtype=np.uint32).reshape(2, 3) + np.uint32(2**32 - 3))),
    # bits and integers
    "bits(K0, ())": (EXACT, lambda: random.bits(K0)),
    "bits(K42, (0,))": (EXACT, lambda: random.bits(K42, (0,))),
    "bits(K42, (7,))": (EXACT, lambda: random.bits(K42, (7,))),
    "bits(KBIG, (3, 5))": (EXACT, lambda: random.bits(KBIG, (3, 5))),
    "bits(KFOLD, LARGE)": (EXACT, lambda: random.bits(KFOLD, (LARGE,))),
    "bits(K42, (5,), uint8)": (EXACT, lambda: random.bits(K42, (5,), np.uint8)),
    "bits(K42, (4,), uint16)": (EXACT, lambda: random.bits(K42, (4,), np.uint16)),
    "bits(K0, (), uint64)": (EXACT, lambda: random.bits(K0, (), np.uint64)),
    "bits(KSPLIT, (7,), uint64)": (EXACT, lambda: random.bits(KSPLIT, (7,), np.uint64)),
    "bits(K42, LARGE, uint64)": (EXACT, lambda: random.bits(K42, (LARGE,), np.uint64)),
    "randint(K42, (7,), 0, 10)": (EXACT, lambda: random.randint(K42, (7,), 0, 10)),
    "randint(KBIG, (3, 5), -5, 5, int32)": (EXACT, lambda: random.randint(
        KBIG, (3, 5), -5, 5, np.int32)),
    "randint(K0, (), 0, 256, uint8)": (EXACT, lambda: random.randint(K0, (), 0, 256, np.uint8)),
    "randint(K42, (6,), wide)": (EXACT, lambda: random.randint(K42, (6,), -2**62, 2**62)),
    "randint(K42, (2, 3), array bounds)": (EXACT, lambda: random.randint(
        K42, (2, 3), np.array([0, 10, 100]), np.array([5, 20, 90]))),
    "randint(KSPLIT, (0,), 0, 3)": (EXACT, lambda: random.randint(KSPLIT, (0,), 0, 3)),
    "bernoulli(K42, 0.3, (11,))": (EXACT, lambda: random.bernoulli(K42, 0.3, (11,))),
    "bernoulli(KBIG, p)": (EXACT, lambda: random.bernoulli(KBIG, np.array([0.1, 0.5, 0.9]))),
    "rademacher(K0, (9,))": (EXACT, lambda: random.rademacher(K0, (9,))),
    "categorical(K42, (3, 4))": (EXACT, lambda: random.categorical(
        K42, np.log(np.array([[0.1, 0.2, 0.3, 0.4]] * 3)))),
    "categorical(KBIG, shape (2, 3))": (EXACT, lambda: random.categorical(
        KBIG, np.zeros((5, 3)), axis=0, shape=(2, 3))),
    "permutation(K42, 10)": (EXACT, lambda: random.permutation(K42, 10)),
    "permutation(KBIG, (3, 4), axis=1)": (EXACT, lambda: random.permutation(
        KBIG, np.arange(12.0).reshape(3, 4), axis=1)),
    "permutation(K0, independent)": (EXACT, lambda: random.permutation(
        K0, np.arange(12.0).reshape(3, 4), independent=True)),
    "choice(K42, 10, (5,))": (EXACT, lambda: random.choice(K42, 10, (5,))),
    "choice(KBIG, 10, (4,), no replace)": (EXACT, lambda: random.choice(
        KBIG, 10, (4,), replace=False)),
    "choice(K0, 4, (6,), p)": (EXACT, lambda: random.choice(
        K0, 4, (6,), p=np.array([0.1, 0.2, 0.3, 0.4]))),
    "choice(KSPLIT, 4, (3,), p, no replace)": (EXACT, lambda: random.choice(
        KSPLIT, 4, (3,), replace=False, p=np.array([0.1, 0.0, 0.6, 0.3]))),
    "choice(K42, array, (2,), axis=1)": (EXACT, lambda: random.choice(
        K42, np.arange(20.0).reshape(4, 5), (2,), axis=1)),
    "poisson(K42, lam)": (EXACT, lambda: random.poisson(
        K42, np.array([0.0, 2.5, 9.0, 30.0, 2000.0]), (2, 5))),
    "binomial(KBIG, n, p)": (EXACT, lambda: random.binomial(
        KBIG, np.array([3.0, 40.0, 200.0, 1000.0]), np.array([0.5, 0.9, 0.2, 0.01]), (2, 4))),
    # floats from the exact bits-to-float step
    "uniform(K0, ())": (EXACT, lambda: random.uniform(K0)),
    "uniform(K42, (0,))": (EXACT, lambda: random.uniform(K42, (0,))),
    "uniform(K42, (7,))": (EXACT, lambda: random.uniform(K42, (7,))),
    "uniform(KBIG, (3, 5), -1, 2)": (EXACT, lambda: random.uniform(KBIG, (3, 5), minval=-1.0,
                                                                  maxval=2.0)),
    "uniform(KFOLD, LARGE)": (EXACT, lambda: random.uniform(KFOLD, (LARGE,))),
    "uniform(K42, (5,), float32)": (EXACT, lambda: random.uniform(K42, (5,), np.float32)),
    "uniform(KSPLIT, (2, 3), float32, bounds)": (EXACT, lambda: random.uniform(
        KSPLIT, (2, 3), np.float32, minval=np.array([0.0, 1.0, 2.0], np.float32), maxval=4.0)),
    "uniform(K0, (5,), float16)": (EXACT, lambda: random.uniform(K0, (5,), np.float16)),
    "uniform(K42, LARGE, float32)": (EXACT, lambda: random.uniform(K42, (LARGE,), np.float32)),
    # ... and NumPy's log of them (whose last bit depends on the machine)
    "gumbel(K42, (7,))": (ULPS, lambda: random.gumbel(K42, (7,))),
    "gumbel(KBIG, (5,), float32)": (ULPS, lambda: random.gumbel(KBIG, (5,), np.float32)),
    "exponential(K42, (7,))": (ULPS, lambda: random.exponential(K42, (7,))),
    "laplace(K0, (3, 3))": (ULPS, lambda: random.laplace(K0, (3, 3))),
    "logistic(KSPLIT, (7,))": (ULPS, lambda: random.logistic(KSPLIT, (7,))),
    "logistic(K42, (3,), float32)": (ULPS, lambda: random.logistic(K42, (3,), np.float32)),
    # normals (erf_inv) and what is built on them
    "normal(K0, ())": (ULPS, lambda: random.normal(K0)),
    "normal(K42, (0,))": (ULPS, lambda: random.normal(K42, (0,))),
    "normal(K42, (1,))": (ULPS, lambda: random.normal(K42, (1,))),
    "normal(K42, (7,))": (ULPS, lambda: random.normal(K42, (7,))),
    "normal(KBIG, (3, 5))": (ULPS, lambda: random.normal(KBIG, (3, 5))),
    "normal(KFOLD, LARGE)": (ULPS, lambda: random.normal(KFOLD, (LARGE,))),
    "normal(K42, (7,), float32)": (ULPS, lambda: random.normal(K42, (7,), np.float32)),
    "normal(KSPLIT, (5,), float32)": (ULPS, lambda: random.normal(KSPLIT, (5,), np.float32)),
    "normal(K0, (3,), float16)": (ULPS, lambda: random.normal(K0, (3,), np.float16)),
    "normal(K42, LARGE, float32)": (ULPS, lambda: random.normal(K42, (LARGE,), np.float32)),
    "truncated_normal(K42, -1, 2, (7,))": (ULPS, lambda: random.truncated_normal(
        K42, -1.0, 2.0, (7,))),
    "truncated_normal(KBIG, bounds)": (ULPS, lambda: random.truncated_normal(
        KBIG, 0.5, np.array([1.0, 3.0]), (3, 2))),
    "multivariate_normal(K42, cholesky)": (ULPS, lambda: random.multivariate_normal(
        K42, np.array([1.0, -2.0]), np.array([[2.0, 0.5], [0.5, 1.0]]), (3,))),
    "gamma(K42, a)": (ULPS, lambda: random.gamma(K42, np.array([0.4, 1.0, 3.0, 80.0]), (3, 4))),
    "gamma(KBIG, 2.5, (5,), float32)": (ULPS, lambda: random.gamma(KBIG, 2.5, (5,), np.float32)),
    "loggamma(K0, 0.05, (4,))": (ULPS, lambda: random.loggamma(K0, 0.05, (4,))),
    "beta(K42, a, 3)": (ULPS, lambda: random.beta(K42, np.array([0.5, 2.0]), 3.0, (3, 2))),
    "dirichlet(KSPLIT, alpha)": (ULPS, lambda: random.dirichlet(
        KSPLIT, np.array([0.3, 1.0, 4.0]), (3,))),
}


def pinned_positions(size):
    """Every flat index of a small result; for a large one the ends, the middle
    and both sides of every power-of-two boundary from 2**12 (chunk edges)."""
    if size <= 16:
        return list(range(size))
    picks = {0, 1, 2, size // 3, size // 2, size // 2 + 1, size - 3, size - 2, size - 1}
    for p in range(12, 19):
        picks |= {2**p - 1, 2**p, 2**p + 1}
    return sorted(i for i in picks if i < size)


PINNED = {
    'PRNGKey(2**40+3)': ((2,), 'uint32',
        [0, 1],
        [256, 3]),
    'split(K0, 3)': ((3, 2), 'uint32',
        [0, 1, 2, 3, 4, 5],
        [2467461003, 428148500, 3186719485, 3840466878, 2562233961, 1946702221]),
    'split(K42, (2, 2))': ((2, 2, 2), 'uint32',
        [0, 1, 2, 3, 4, 5, 6, 7],
        [2954079971, 2575172198, 1139032965, 1035738655, 3276725750, 1223413151, 173471767,
         13772463]),
    'split(KBIG, 1)': ((1, 2), 'uint32',
        [0, 1],
        [1898048313, 2094402391]),
    'fold_in(K0, 0)': ((2,), 'uint32',
        [0, 1],
        [1797259609, 2579123966]),
    'fold_in(K42, 2**31+5)': ((2,), 'uint32',
        [0, 1],
        [4006827317, 911798682]),
    'fold_in(KSPLIT, 17)': ((2,), 'uint32',
        [0, 1],
        [2261519030, 247216533]),
    'threefry(K42, 0-d)': ((), 'uint32',
        [0],
        [1305942608]),
    'threefry(K42, (5,))': ((5,), 'uint32',
        [0, 1, 2, 3, 4],
        [961056047, 4262401830, 4289623691, 3492021646, 3247337554]),
    'threefry(KBIG, (2, 3))': ((2, 3), 'uint32',
        [0, 1, 2, 3, 4, 5],
        [2676200645, 3565503348, 1950745980, 3214600052, 470024660, 2751950305]),
    'bits(K0, ())': ((), 'uint32',
        [0],
        [1797259609]),
    'bits(K42, (0,))': ((0,), 'uint32',
        [],
        []),
    'bits(K42, (7,))': ((7,), 'uint32',
        [0, 1, 2, 3, 4, 5, 6],
        [2954079971, 2575172198, 1139032965, 1681094280, 3276725750, 1223413151, 173471767]),
    'bits(KBIG, (3, 5))': ((3, 5), 'uint32',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [3386373746, 426430677, 3490835510, 676734146, 413917677, 350435481, 816240424,
         2151176870, 370034024, 299773147, 1962965519, 3772036403, 3827689768, 1033356913,
         3030923359]),
    'bits(KFOLD, LARGE)': ((300001,), 'uint32',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [1358871581, 3051653485, 1376842754, 3389880795, 3756048218, 4007898490, 4090444368,
         263898683, 3411684861, 3594277643, 262914039, 3822942014, 4141887882, 4132584596,
         1258157520, 2464519674, 3344446418, 3833813502, 747605355, 2788039407, 89564582,
         719361186, 260339240, 115708716, 3288649314, 2812976210, 18158696, 1989339033,
         42046107, 1838006273]),
    'bits(K42, (5,), uint8)': ((5,), 'uint8',
        [0, 1, 2, 3, 4],
        [70, 137, 116, 145, 98]),
    'bits(K42, (4,), uint16)': ((4,), 'uint16',
        [0, 1, 2, 3],
        [8426, 39131, 55571, 35161]),
    'bits(K0, (), uint64)': ((), 'uint64',
        [0],
        [3989946895414531357]),
    'bits(KSPLIT, (7,), uint64)': ((7,), 'uint64',
        [0, 1, 2, 3, 4, 5, 6],
        [12763766894633723657, 12025189403404124155, 7481491993997026142, 15759858570116870061,
         1716006991721594472, 7351671514206525998, 3833576205116779985]),
    'bits(K42, LARGE, uint64)': ((300001,), 'uint64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [3262542299058798224, 15979852161064795709, 652601580413023288, 10918782647507767608,
         5181010835763234961, 13457266267730836675, 17502081007820950526, 1484418782024243303,
         9203155427844002700, 16880586934073846195, 5990272185219300165, 13501308665404692514,
         10831066687742048743, 7270010638515097015, 12505563381345422590, 2028761056751975266,
         260688669901172661, 10546032352238905984, 5203844496680844208, 8865885811017436634,
         16298412096539463866, 1221407744540451218, 14556991916905389505, 12287906480818747163,
         9471880735866563481, 9145010499914212036, 15796676172897778144, 17324044220978409680,
         13383494086696826038, 4452432656498969551]),
    'randint(K42, (7,), 0, 10)': ((7,), 'int64',
        [0, 1, 2, 3, 4, 5, 6],
        [5, 1, 5, 9, 9, 8, 3]),
    'randint(KBIG, (3, 5), -5, 5, int32)': ((3, 5), 'int32',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [2, -2, -1, -4, 1, 2, -4, 0, -3, -5, 1, -3, 1, -3, 3]),
    'randint(K0, (), 0, 256, uint8)': ((), 'uint8',
        [0],
        [29]),
    'randint(K42, (6,), wide)': ((6,), 'int64',
        [0, 1, 2, 3, 4, 5],
        [-1943649547957800303, -2399082902890749496, 987035132473842980, 4136995320884681797,
         -2820857827824572704, 384271154649109358]),
    'randint(K42, (2, 3), array bounds)': ((2, 3), 'int64',
        [0, 1, 2, 3, 4, 5],
        [4, 18, 100, 4, 10, 100]),
    'randint(KSPLIT, (0,), 0, 3)': ((0,), 'int64',
        [],
        []),
    'bernoulli(K42, 0.3, (11,))': ((11,), 'bool',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        [True, False, False, False, False, False, False, False, False, False, False]),
    'bernoulli(KBIG, p)': ((3,), 'bool',
        [0, 1, 2],
        [False, False, True]),
    'rademacher(K0, (9,))': ((9,), 'int64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [1, 1, 1, -1, 1, 1, -1, 1, 1]),
    'categorical(K42, (3, 4))': ((3,), 'int64',
        [0, 1, 2],
        [2, 3, 3]),
    'categorical(KBIG, shape (2, 3))': ((2, 3), 'int64',
        [0, 1, 2, 3, 4, 5],
        [4, 1, 3, 1, 2, 4]),
    'permutation(K42, 10)': ((10,), 'int64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [3, 0, 8, 7, 4, 2, 9, 1, 6, 5]),
    'permutation(KBIG, (3, 4), axis=1)': ((3, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        [2.0, 1.0, 3.0, 0.0, 6.0, 5.0, 7.0, 4.0, 10.0, 9.0, 11.0, 8.0]),
    'permutation(K0, independent)': ((3, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        [8.0, 5.0, 2.0, 7.0, 4.0, 1.0, 6.0, 11.0, 0.0, 9.0, 10.0, 3.0]),
    'choice(K42, 10, (5,))': ((5,), 'int64',
        [0, 1, 2, 3, 4],
        [2, 8, 5, 1, 1]),
    'choice(KBIG, 10, (4,), no replace)': ((4,), 'int64',
        [0, 1, 2, 3],
        [7, 3, 0, 2]),
    'choice(K0, 4, (6,), p)': ((6,), 'int64',
        [0, 1, 2, 3, 4, 5],
        [1, 3, 2, 1, 3, 1]),
    'choice(KSPLIT, 4, (3,), p, no replace)': ((3,), 'int64',
        [0, 1, 2],
        [3, 2, 0]),
    'choice(K42, array, (2,), axis=1)': ((4, 2), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7],
        [0.0, 3.0, 5.0, 8.0, 10.0, 13.0, 15.0, 18.0]),
    'poisson(K42, lam)': ((2, 5), 'int64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [0, 1, 8, 30, 1989, 0, 4, 10, 28, 2029]),
    'binomial(KBIG, n, p)': ((2, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7],
        [2.0, 36.0, 38.0, 5.0, 1.0, 38.0, 41.0, 14.0]),
    'uniform(K0, ())': ((), 'float64',
        [0],
        [0.216295456917019]),
    'uniform(K42, (0,))': ((0,), 'float64',
        [],
        []),
    'uniform(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.5930226543495614, 0.9609561249064259, 0.046195713690607265, 0.6506814912190737,
         0.8909160225863135, 0.8591944884901226, 0.04046238484376774]),
    'uniform(KBIG, (3, 5), -1, 2)': ((3, 5), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [1.5878949650991592, 1.5760478974440009, 0.9052337633181251, -0.06553950243368112,
         1.788560717225924, -0.7518295923265729, 1.949038765291299, 0.06481300174650673,
         0.9375620594289291, -0.5612918152232753, 1.9608230682474108, 1.074191198677548,
         1.8815641566670118, 1.2609055762534038, -0.3346161767014194]),
    'uniform(KFOLD, LARGE)': ((300001,), 'float64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [0.13960820150085385, 0.05544809241756887, 0.5938577414127395, 0.6624195485126616,
         0.45332816103460083, 0.08783332675774058, 0.16112916334337168, 0.6101619461657198,
         0.47339638351123037, 0.3182443833792289, 0.08980345584265081, 0.45566860006640897,
         0.6008700581543466, 0.48572929160010514, 0.689521049967336, 0.2580570544995807,
         0.09443064540785917, 0.12225879962837749, 0.5204304264467462, 0.5603402838826806,
         0.1401647609034833, 0.10165053992162232, 0.47999973522557393, 0.8060699712073797,
         0.010079996827432325, 0.11394399031856672, 0.5839986797639196, 0.6528726572503132,
         0.8464567275845112, 0.08576230483999592]),
    'uniform(K42, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [0.7298188805580139, 0.8691937923431396, 0.1964380145072937, 0.20818567276000977,
         0.18662422895431519]),
    'uniform(KSPLIT, (2, 3), float32, bounds)': ((2, 3), 'float32',
        [0, 1, 2, 3, 4, 5],
        [2.4850122928619385, 1.8100876808166504, 3.65120267868042, 3.245234966278076,
         2.2241854667663574, 2.386556625366211]),
    'uniform(K0, (5,), float16)': ((5,), 'float16',
        [0, 1, 2, 3, 4],
        [0.57421875, 0.099609375, 0.39306640625, 0.89404296875, 0.59619140625]),
    'uniform(K42, LARGE, float32)': ((300001,), 'float32',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [0.8092907667160034, 0.6156452298164368, 0.28235310316085815, 0.4965741038322449,
         0.24419313669204712, 0.8062872886657715, 0.7958753108978271, 0.37403762340545654,
         0.19344562292099, 0.14516663551330566, 0.5769899487495422, 0.2210150957107544,
         0.03981548547744751, 0.18020403385162354, 0.7193912267684937, 0.6326899528503418,
         0.04430800676345825, 0.5057266354560852, 0.5497890710830688, 0.1943071484565735,
         0.4421672224998474, 0.8599950075149536, 0.6965771913528442, 0.7554545998573303,
         0.4307955503463745, 0.3884660005569458, 0.36145859956741333, 0.08034312725067139,
         0.12389373779296875, 0.3604411482810974]),
    'gumbel(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.6490868936663315, 3.2232220882375713, -1.1232620588637192, 0.8445864990828832,
         2.1584405361614447, 1.885455151380641, -1.16545518573236]),
    'gumbel(KBIG, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [-0.46753817796707153, 1.346714735031128, 0.2955659329891205, -0.2719617784023285,
         -0.11601421236991882]),
    'exponential(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.8989977568812512, 3.2430692627941418, 0.04729677919920245, 1.051771140365543,
         2.2156372583977317, 1.9603756917780226, 0.04130376143022357]),
    'laplace(K0, (3, 3))': ((3, 3), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [0.9589170705471248, 0.11438733830345793, 2.5579407418139413, -0.19658362120301473,
         1.688907719764263, 0.654900228432643, -1.0845357671653983, 0.029484681748295688,
         2.7155164711432622]),
    'logistic(KSPLIT, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.8091351849877948, 0.627343332660222, -0.38229914029247114, 1.7690833817066576,
         -2.2772474731109495, -0.411573384045553, -1.338124957716938]),
    'logistic(K42, (3,), float32)': ((3,), 'float32',
        [0, 1, 2],
        [0.2987804412841797, -2.195467948913574, -2.761129140853882]),
    'normal(K0, ())': ((), 'float64',
        [0],
        [-0.7847657685632792]),
    'normal(K42, (0,))': ((0,), 'float64',
        [],
        []),
    'normal(K42, (1,))': ((1,), 'float64',
        [0],
        [-2.1698245109474135]),
    'normal(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.23532732109227877, 1.7618907948557567, -1.6829156197377435, 0.38716100399020725,
         1.2314142905968983, 1.0767073605170485, -1.7453453653987319]),
    'normal(KBIG, (3, 5))': ((3, 5), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [1.0922193713567778, 1.0744194364516961, 0.3453328439016248, -0.4916402770661514,
         1.472227247360529, -1.3869830270252488, 2.120378285006776, -0.37202352437108815,
         0.37415102240832077, -1.0527139281864961, 2.2244533995841076, 0.4998142617093351,
         1.756768778041934, 0.6859738227489106, -0.7661463687387141]),
    'normal(KFOLD, LARGE)': ((300001,), 'float64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [-1.082081302840121, -1.5941779451482154, 0.2374798916920576, 0.41907557176170346,
         -0.11725709699486969, -1.3542185784100822, -0.9898277336137753, 0.27974114660100613,
         -0.06673487867859236, -0.47261375572666126, -1.3419663341867596, -0.11135202722013259,
         0.25559978596051613, -0.03577899337369169, 0.4944932106191868, -0.6493470062113375,
         -1.3139551705211734, -1.163769096093245, 0.051233889842533846, 0.15183201285685294,
         -1.0795793933426385, -1.2722027808580894, -0.05015424799105071, 0.8635046615005962,
         -2.3233567843525673, -1.2058172036080272, 0.21213381366977388, 0.39308773099163496,
         1.0213544349853994, -1.3673213271872382]),
    'normal(K42, (7,), float32)': ((7,), 'float32',
        [0, 1, 2, 3, 4, 5, 6],
        [0.48962485790252686, 0.2522575557231903, -0.6273900866508484, -0.27564528584480286,
         0.7157338261604309, -0.5684990882873535, -1.7461830377578735]),
    'normal(KSPLIT, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [0.30877354741096497, -0.6127244234085083, -0.21951617300510406, 0.8827294707298279,
         -0.23253335058689117]),
    'normal(K0, (3,), float16)': ((3,), 'float16',
        [0, 1, 2],
        [1.8134765625, -0.482666015625, 0.33984375]),
    'normal(K42, LARGE, float32)': ((300001,), 'float32',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
         65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144,
         262145, 299998, 299999, 300000],
        [0.8752858638763428, 0.29406335949897766, -0.5758652091026306, -0.008587478660047054,
         -0.6928776502609253, 0.8642958998680115, 0.8269783854484558, -0.32117825746536255,
         -0.8652687072753906, -1.0573906898498535, 0.19419902563095093, -0.7687692642211914,
         -1.752830982208252, -0.914587676525116, 0.5810340642929077, 0.3389863073825836,
         -1.702743411064148, 0.014355113729834557, 0.12512852251529694, -0.8621329069137573,
         -0.14547669887542725, 1.0802969932556152, 0.5145813822746277, 0.6917557120323181,
         -0.17434903979301453, -0.2833193242549896, -0.3545626401901245, -1.4027670621871948,
         -1.1557400226593018, -0.35727980732917786]),
    'truncated_normal(K42, -1, 2, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.36944080159861276, 1.6007943490795, -0.8542948631301702, 0.49953751679328945,
         1.2157205931817683, 1.089291112782345, -0.8713646361936559]),
    'truncated_normal(KBIG, bounds)': ((3, 2), 'float64',
        [0, 1, 2, 3, 4, 5],
        [0.9519602089830401, 1.3269042538749647, 0.8723668187568248, 0.686292564136857,
         0.5820816578739239, 0.6633507357353932]),
    'multivariate_normal(K42, cholesky)': ((3, 2), 'float64',
        [0, 1, 2, 3, 4, 5],
        [1.5244959551232833, -2.9682306107828222, 0.27261391118413847, -0.36005875947999133,
         -0.8361652045222132, -3.0299251574344606]),
    'gamma(K42, a)': ((3, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        [0.23161500601202226, 2.074501805596635, 1.3681275982546526, 67.9734050972995,
         1.6626008559518963, 0.01555970565995521, 1.428855370385688, 76.71930920134977,
         0.517598483503757, 0.12192023574850615, 2.5307888549854183, 94.40638388903518]),
    'gamma(KBIG, 2.5, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [4.337270736694336, 1.4482684135437012, 7.612464904785156, 0.9489197731018066,
         2.1776373386383057]),
    'loggamma(K0, 0.05, (4,))': ((4,), 'float64',
        [0, 1, 2, 3],
        [-13.367751452481702, -24.812206486059928, -8.144273002041587, -4.461554260063915]),
    'beta(K42, a, 3)': ((3, 2), 'float64',
        [0, 1, 2, 3, 4, 5],
        [0.004174483767294219, 0.6829382979264067, 0.08416860200823194, 0.7168058213206443,
         0.32811240776553036, 0.251900918995251]),
    'dirichlet(KSPLIT, alpha)': ((3, 3), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [0.06547380832494282, 0.06048530510727526, 0.8740408865677819, 0.015035688914444902,
         0.26570031939142613, 0.7192639916941289, 0.00015890809036333802, 0.37381189628082595,
         0.6260291956288107]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_pinned(name):
    kind, call = CASES[name]
    shape, dtype, positions, values = PINNED[name]
    out = np.asarray(call())
    assert out.shape == shape and out.dtype == np.dtype(dtype)
    got = out.ravel()[positions]
    want = np.array(values, dtype=dtype)
    if kind == EXACT:
        np.testing.assert_array_equal(got, want)
    else:
        # a few ulps: 1e-13 in float64, 4 ulps of float32/float16 (where the
        # float64 erf_inv is rounded to the sampler's dtype); absolutely for
        # values near 0 (gumbel's -log(-log u) cancels there)
        eps = float(np.finfo(dtype).eps)
        np.testing.assert_allclose(got, want, rtol=max(1e-13, 4 * eps), atol=4 * eps)


# ----------------------------------------------------------------------------
# the same values through every transform, and the primitives' errors
# ----------------------------------------------------------------------------

CHUNK = _prng_numpy.CHUNK
# Sizes around the kernels' chunk edges: several chunks of one key's stream, an
# odd word count (the pad word), and samples of one and of two words.
KEYED = {
    "normal": lambda k: random.normal(k, (CHUNK + 7,)),
    "normal float32": lambda k: random.normal(k, (3, 5), np.float32),
    "uniform": lambda k: random.uniform(k, (2 * CHUNK + 1,)),
    "bits": lambda k: random.bits(k, (2 * CHUNK + 3,)),
    "bits uint64": lambda k: random.bits(k, (5,), np.uint64),
    "laplace": lambda k: random.laplace(k, (7,)),
    "split": lambda k: random.split(k, 5),
    "fold_in": lambda k: random.fold_in(k, 3),
}


@pytest.mark.parametrize("name", sorted(KEYED))
def test_jit_and_vmap_give_the_eager_values(name):
    sampler = KEYED[name]
    keys = random.split(random.PRNGKey(8), 3)
    looped = np.stack([np.asarray(sampler(k)) for k in keys])
    np.testing.assert_array_equal(fungrad.jit(sampler)(keys[0]), looped[0])
    np.testing.assert_array_equal(fungrad.vmap(sampler)(keys), looped)
    # keys along axis 1, results along the last axis
    np.testing.assert_array_equal(
        fungrad.vmap(sampler, in_axes=1, out_axes=-1)(keys.T), np.moveaxis(looped, 0, -1))


def test_vmap_over_many_keys_and_nested_vmap():
    keys = random.split(random.PRNGKey(9), (40, 300))       # several keys per chunk
    sampler = lambda k: random.normal(k, (5,))              # noqa: E731
    looped = np.array([[np.asarray(sampler(k)) for k in row] for row in keys[:2]])
    batched = np.asarray(fungrad.vmap(fungrad.vmap(sampler))(keys))
    assert batched.shape == (40, 300, 5)
    np.testing.assert_array_equal(batched[:2], looped)
    np.testing.assert_array_equal(batched[-1, -1], sampler(keys[-1, -1]))
    # fold_in batched in the key and in the data at once
    data = np.arange(300)
    folded = fungrad.vmap(random.fold_in)(keys[0], data)
    np.testing.assert_array_equal(folded[7], random.fold_in(keys[0, 7], 7))


def test_export_gives_the_same_samples(tmp_path):
    from tests.export_check import check_exported

    def draw(k):
        return random.normal(k, (4,)), random.bits(k, (3,), np.uint64), random.fold_in(k, 2)
    check_exported(draw, K42, tmp_path=tmp_path, name="draw", rtol=0, atol=0,
                   calls=[(np.asarray(K42),)])      # a NumPy-only module, bit for bit
    for got, want in zip(fungrad.jit(draw)(K42), draw(K42)):
        np.testing.assert_array_equal(got, want)


def test_primitive_errors_name_the_problem():
    with pytest.raises(ValueError, match="split the key"):
        random.normal(K0, (2**31 + 1,))               # more words than one key's stream
    with pytest.raises(TypeError, match="uint32"):
        prng.threefry2x32(np.uint32(1), np.uint32(2), np.int32(3), np.uint32(4))
    with pytest.raises(TypeError, match="transform"):
        prng.random_sample(K0, (3,), np.float64, "bits")
    with pytest.raises(TypeError, match=r"\(\.\.\., 2\)"):
        prng.random_sample(np.zeros(3, np.uint32), (3,), np.float64, "unit")


def test_large_draws_allocate_little_beyond_their_result():
    import tracemalloc
    key = random.PRNGKey(3)
    random.normal(key, (10,))                   # imports and caches outside the measurement
    for draw in (lambda: random.normal(key, (3000, 3000)),
                 lambda: random.uniform(key, (3000, 3000)),
                 lambda: random.bits(key, (3000, 3000), np.uint64)):
        tracemalloc.start()
        try:
            result = draw()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # 72 MB of samples; chunk-sized buffers only (a few MB, whatever the
        # size), no full-size uint32/uint64/float temporaries (36-72 MB each)
        assert peak < result.nbytes + 8 * 2**20, (peak, result.nbytes)


@pytest.mark.parametrize("key", [[0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFF0, 5], [3, 0xFFFFFFFE]])
def test_kernels_match_the_slow_reference_across_chunks_and_wrapping_keys(key):
    # counts plus key words wrap mod 2**32; sizes span several chunks, odd word counts
    from tests.cases.prng import _sample_ref
    key = np.array(key, np.uint32)
    for shape, dtype, transform in [((2 * CHUNK + 1,), np.uint32, "bits"),
                                    ((CHUNK + 3,), np.uint64, "bits"),
                                    ((CHUNK + 5,), np.float64, "normal")]:
        got = np.asarray(prng.random_sample(key, shape, dtype, transform))
        want = _sample_ref(key, shape, dtype, transform)
        np.testing.assert_allclose(got, want, rtol=1e-14 if transform == "normal" else 0, atol=0)
