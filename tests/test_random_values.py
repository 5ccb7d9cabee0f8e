"""fungrad.random gives JAX's numbers for the same key, release after release.

``PINNED`` holds real JAX 0.10.2's values (x64 on, partitionable Threefry),
written by tools/gen_prng_pinned.py: for each case the result's shape, dtype
and its values at a few flat positions (all of them for small results; for
large ones positions around chunk-sized boundaries of fungrad's kernels).
(The gamma family, poisson and binomial, whose algorithms are not yet JAX's,
are pinned against JAX in tests/test_random_jax_reference.py once they are.)

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
        [1797259609, 2579123966, 928981903, 3453687069, 4146024105, 2718843009]),
    'split(K42, (2, 2))': ((2, 2, 2), 'uint32',
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1832780943, 270669613, 64467757, 2916123636, 2465931498, 255383827, 3134548294, 894150801]),
    'split(KBIG, 1)': ((1, 2), 'uint32',
        [0, 1],
        [1903400153, 3090744579]),
    'fold_in(K0, 0)': ((2,), 'uint32',
        [0, 1],
        [1797259609, 2579123966]),
    'fold_in(K42, 2**31+5)': ((2,), 'uint32',
        [0, 1],
        [4006827317, 911798682]),
    'fold_in(KSPLIT, 17)': ((2,), 'uint32',
        [0, 1],
        [3993730900, 4267358784]),
    'threefry(K42, 0-d)': ((), 'uint32',
        [0],
        [1305942608]),
    'threefry(K42, (5,))': ((5,), 'uint32',
        [0, 1, 2, 3, 4],
        [961056047, 4262401830, 4289623691, 3492021646, 3247337554]),
    'threefry(KBIG, (2, 3))': ((2, 3), 'uint32',
        [0, 1, 2, 3, 4, 5],
        [2676200645, 3565503348, 1950745980, 3214600052, 470024660, 2751950305]),
    'bits(K0, ())': ((), 'uint64',
        [0],
        [7719171245655871230]),
    'bits(K42, (0,))': ((0,), 'uint64',
        [],
        []),
    'bits(K42, (7,))': ((7,), 'uint64',
        [0, 1, 2, 3, 4, 5, 6],
        [7871734211187709741, 276886910877598708, 10591095138341673235, 13462782411356743825, 12687676868490354166, 11878554724538143822, 11891408507324363409]),
    'bits(KBIG, (3, 5))': ((3, 5), 'uint64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [8175041411427140867, 8152055432657374039, 17553935170961941357, 3739036583016669278, 11386760547789901462, 14020045478222519661, 16981743528049852853, 11495849575187107082, 14544364491473044840, 1855448850185034921, 5147231932934115240, 9783971480263954535, 1499049402235481128, 5982318699087250877, 9891366542964709791]),
    'bits(KFOLD, LARGE)': ((300001,), 'uint64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [2050837800380881296, 13880871727145818104, 5851844250579746382, 4927223426230899599, 10810710897093554821, 8566980055639723081, 17627528467559252460, 18273632578994897250, 7051036990489534022, 10121066794902507924, 11065554987857330845, 6845686912903410140, 10500824794693662268, 12277836865243429089, 15973722432760150509, 11635319063922918680, 3576404673799698651, 17192757193201669987, 18170193776174915041, 10898310785801346191, 14672787356449632714, 7205072560649869925, 13780266212387204823, 5836308999974523692, 10193500652917128659, 4041576355698437727, 7179496717853384976, 10559703831995369632, 7894957722720197378, 14874577326805287833]),
    'bits(K42, (5,), uint8)': ((5,), 'uint8',
        [0, 1, 2, 3, 4],
        [162, 217, 249, 215, 21]),
    'bits(K42, (4,), uint16)': ((4,), 'uint16',
        [0, 1, 2, 3],
        [5026, 12505, 63993, 49623]),
    'bits(K0, (), uint64)': ((), 'uint64',
        [0],
        [7719171245655871230]),
    'bits(KSPLIT, (7,), uint64)': ((7,), 'uint64',
        [0, 1, 2, 3, 4, 5, 6],
        [5557925565873535173, 6916775705619275709, 14092256908980097410, 11361740935073184963, 7741885797687977155, 5414621207172901418, 11893844345203928326]),
    'bits(K42, LARGE, uint64)': ((300001,), 'uint64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [7871734211187709741, 276886910877598708, 10591095138341673235, 3123246966758656700, 14558257908809529935, 11801641073155181433, 9481551919817575524, 3679119197959484310, 10814290583183583953, 7215245689297568317, 16947887246719564953, 16916804627815867514, 10435181794939677170, 4471197829535980595, 16314175920408660672, 3967931901501602159, 7800144232346928114, 17053804443045360644, 17137367178509442345, 12951488597611350503, 1989693315284254049, 8265420596215765203, 6027863137202376528, 14928780641618458894, 9691356284148160845, 7739784778337956670, 12405054651968385363, 607182227870273176, 340953097744162648, 12309910820388831809]),
    'randint(K42, (7,), 0, 10)': ((7,), 'int64',
        [0, 1, 2, 3, 4, 5, 6],
        [5, 8, 3, 1, 5, 6, 4]),
    'randint(KBIG, (3, 5), -5, 5, int32)': ((3, 5), 'int32',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [-3, -5, 4, 4, -2, -2, -5, 4, 3, -3, 1, 2, 4, -5, 3]),
    'randint(K0, (), 0, 256, uint8)': ((), 'uint8',
        [0],
        [101]),
    'randint(K42, (6,), wide)': ((6,), 'int64',
        [0, 1, 2, 3, 4, 5],
        [-145378591231461835, -3741815450302687554, -3506958169482507113, 1329420531636154415, 3780175045237482401, -2791129331754305598]),
    'randint(K42, (2, 3), array bounds)': ((2, 3), 'int64',
        [0, 1, 2, 3, 4, 5],
        [0, 18, 100, 1, 15, 100]),
    'randint(KSPLIT, (0,), 0, 3)': ((0,), 'int64',
        [],
        []),
    'bernoulli(K42, 0.3, (11,))': ((11,), 'bool',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        [False, True, False, False, False, False, False, False, True, True, True]),
    'bernoulli(KBIG, p)': ((3,), 'bool',
        [0, 1, 2],
        [False, True, False]),
    'rademacher(K0, (9,))': ((9,), 'int64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [1, 1, -1, -1, -1, 1, -1, -1, -1]),
    'categorical(K42, (3, 4))': ((3,), 'int64',
        [0, 1, 2],
        [3, 3, 2]),
    'categorical(KBIG, shape (2, 3))': ((2, 3), 'int64',
        [0, 1, 2, 3, 4, 5],
        [2, 2, 0, 0, 1, 3]),
    'permutation(K42, 10)': ((10,), 'int64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [7, 4, 2, 5, 3, 6, 8, 9, 0, 1]),
    'permutation(KBIG, (3, 4), axis=1)': ((3, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        [0.0, 3.0, 2.0, 1.0, 4.0, 7.0, 6.0, 5.0, 8.0, 11.0, 10.0, 9.0]),
    'permutation(K0, independent)': ((3, 4), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        [0.0, 1.0, 6.0, 3.0, 8.0, 5.0, 10.0, 7.0, 4.0, 9.0, 2.0, 11.0]),
    'choice(K42, 10, (5,))': ((5,), 'int64',
        [0, 1, 2, 3, 4],
        [5, 8, 3, 1, 5]),
    'choice(KBIG, 10, (4,), no replace)': ((4,), 'int64',
        [0, 1, 2, 3],
        [9, 6, 0, 3]),
    'choice(K0, 4, (6,), p)': ((6,), 'int64',
        [0, 1, 2, 3, 4, 5],
        [2, 3, 0, 2, 2, 3]),
    'choice(KSPLIT, 4, (3,), p, no replace)': ((3,), 'int64',
        [0, 1, 2],
        [2, 3, 0]),
    'choice(K42, array, (2,), axis=1)': ((4, 2), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7],
        [0.0, 3.0, 5.0, 8.0, 10.0, 13.0, 15.0, 18.0]),
    'uniform(K0, ())': ((), 'float64',
        [0],
        [0.41845711171638644]),
    'uniform(K42, (0,))': ((0,), 'float64',
        [],
        []),
    'uniform(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.4267275666499091, 0.015010069515314584, 0.5741444178995352, 0.7298188969046309, 0.687800341230566, 0.6439377419166104, 0.6446345468776842]),
    'uniform(KBIG, (3, 5), -1, 2)': ((3, 5), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [0.3295096487642404, 0.3257714315464071, 1.854802197203996, -0.3919192620535825, 0.851832578522906, 1.2800845648751638, 1.7617464838554957, 0.8695737625976632, 1.3653547368614154, -0.6982477488540486, -0.16290399340391115, 0.5911704701657594, -0.7562091072149797, -0.027093560492342128, 0.6086361642099154]),
    'uniform(KFOLD, LARGE)': ((300001,), 'float64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [0.1111761399294171, 0.7524835641282055, 0.3172291124762683, 0.26710531715205055, 0.5860498120370774, 0.4644169193982286, 0.9555902330038908, 0.9906156070674079, 0.3822374811682201, 0.54866413034521, 0.5998649378796364, 0.37110543115627315, 0.5692508527648259, 0.665582870135977, 0.8659372282139495, 0.6307519103333616, 0.19387728585104713, 0.9320212349942516, 0.9850081783305715, 0.590798611519401, 0.7954133964140266, 0.3905877661586141, 0.7470297282449399, 0.316386944853454, 0.5525907776562577, 0.2190942932557145, 0.3892012969424594, 0.5724426917726442, 0.4279865157327223, 0.806352452626296]),
    'uniform(K42, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [0.48870956897735596, 0.6797971725463867, 0.6162714958190918, 0.5610160827636719, 0.4506446123123169]),
    'uniform(KSPLIT, (2, 3), float32, bounds)': ((2, 3), 'float32',
        [0, 1, 2, 3, 4, 5],
        [2.7005343437194824, 3.478529214859009, 2.787973403930664, 1.6972804069519043, 1.6286840438842773, 3.0464766025543213]),
    'uniform(K0, (5,), float16)': ((5,), 'float16',
        [0, 1, 2, 3, 4],
        [0.310546875, 0.212890625, 0.0546875, 0.65625, 0.232421875]),
    'uniform(K42, LARGE, float32)': ((300001,), 'float32',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [0.48870956897735596, 0.6797971725463867, 0.6162714958190918, 0.6413465738296509, 0.6604866981506348, 0.6243410110473633, 0.8425817489624023, 0.7646355628967285, 0.697608470916748, 0.569849967956543, 0.8169746398925781, 0.8960373401641846, 0.401636004447937, 0.7029074430465698, 0.8489848375320435, 0.6831295490264893, 0.3511723279953003, 0.828510046005249, 0.35025715827941895, 0.7757781744003296, 0.3706122636795044, 0.055052995681762695, 0.26650679111480713, 0.055798888206481934, 0.008178949356079102, 0.7720650434494019, 0.5069338083267212, 0.8996340036392212, 0.19005298614501953, 0.03451657295227051]),
    'gumbel(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.16062720630382138, -1.4348544993307841, 0.5890136500161952, 1.1553132453508888, 0.9828133938106242, 0.8206323590743421, 0.8230925153553582]),
    'gumbel(KBIG, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [1.4253489971160889, -1.0675995349884033, 0.20048314332962036, 0.26674240827560425, 2.295102834701538]),
    'exponential(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.5563942243855916, 0.015123860720489336, 0.8536549993431988, 1.30866279263241, 1.1641123638884814, 1.0326496811635133, 1.0346085736073045]),
    'laplace(K0, (3, 3))': ((3, 3), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        [0.17803369470862349, 0.8379627799904482, -2.66848707885639, -0.1613444047632622, -0.06662386889907662, 0.3427574424554609, -1.4525108858751223, -0.3080491206096985, -0.06999353643619101]),
    'logistic(KSPLIT, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [-0.8411352141758455, -0.5109998682809875, 1.1744186455929575, 0.47227133673816873, -0.324052381871236, -0.8783143738209569, 0.5961133260418332]),
    'logistic(K42, (3,), float32)': ((3,), 'float32',
        [0, 1, 2],
        [-0.0451694130897522, 0.7528398036956787, 0.47375231981277466]),
    'normal(K0, ())': ((), 'float64',
        [0],
        [-0.2058421394796434]),
    'normal(K42, (0,))': ((0,), 'float64',
        [],
        []),
    'normal(K42, (1,))': ((1,), 'float64',
        [0],
        [-0.18471174528191162]),
    'normal(K42, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [-0.18471174528191162, -2.169824560397754, 0.18693555179382582, 0.6122653570510959, 0.4896249504757018, 0.36900430470828355, 0.3708746377861905]),
    'normal(KBIG, (3, 5))': ((3, 5), 'float64',
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        [-0.1429372164767684, -0.14609344499971036, 1.6605764837596495, -0.8320385972604083, 0.2983383362145969, 0.7063932403093627, 1.4089982776244623, 0.313873008067272, 0.8010601199219903, -1.2782304929379862, -0.5857195347636645, 0.07625065064962207, -1.3966220303949413, -0.4557019869332812, 0.09089516693149241]),
    'normal(KFOLD, LARGE)': ((300001,), 'float64',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [-1.2202970707161296, 0.6823259437044801, -0.47546128032744805, -0.6215913134502543, 0.21739519445275537, -0.08931214944507629, 1.701657808219503, 2.350091713510325, -0.29960959780239466, 0.12228698473902153, 0.2529975269678536, -0.32892700457798885, 0.17446721469875495, 0.4277484663406225, 1.1073895464340584, 0.3338454573615504, -0.8636966185259466, 1.491015101935437, 2.170306383776774, 0.2295997811340991, 0.8253494813402378, -0.2777874412840592, 0.6651719120103206, -0.4778262309436286, 0.13220968014387538, -0.77525569021247, -0.2814013355289632, 0.18259651824191694, -0.1815026778186501, 0.864533119262436]),
    'normal(K42, (7,), float32)': ((7,), 'float32',
        [0, 1, 2, 3, 4, 5, 6],
        [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591, 0.15354591608047485, -0.12403281778097153, 0.21692314743995667, -1.440878987312317]),
    'normal(KSPLIT, (5,), float32)': ((5,), 'float32',
        [0, 1, 2, 3, 4],
        [0.4541335105895996, 0.9391627907752991, -0.2689431309700012, -0.19085364043712616, -0.807944118976593]),
    'normal(K0, (3,), float16)': ((3,), 'float16',
        [0, 1, 2],
        [-0.49365234375, -0.79541015625, -1.5986328125]),
    'normal(K42, LARGE, float32)': ((300001,), 'float32',
        [0, 1, 2, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 100000, 131071, 131072, 131073, 150000, 150001, 262143, 262144, 262145, 299998, 299999, 300000],
        [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591, 0.362060546875, 0.4137918949127197, 0.3169020712375641, 1.0051254034042358, 0.7212937474250793, 0.5175346732139587, 0.17599228024482727, 0.9038957357406616, 1.2592910528182983, -0.24911469221115112, 0.5327812433242798, 1.032089352607727, 0.4764682650566101, -0.3821573257446289, 0.9482938647270203, -0.38462626934051514, 0.7580122947692871, -0.3302321434020996, -1.5977165699005127, -0.6234122514724731, -1.5910520553588867, -2.4008290767669678, 0.7456648945808411, 0.01738142967224121, 1.2794691324234009, -0.877700924873352, -1.818202257156372]),
    'truncated_normal(K42, -1, 2, (7,))': ((7,), 'float64',
        [0, 1, 2, 3, 4, 5, 6],
        [0.01998452592513169, -0.9504476695340623, 0.32827144083703297, 0.693751830608632, 0.587854167389416, 0.4839215336165631, 0.48552955105151013]),
    'truncated_normal(KBIG, bounds)': ((3, 2), 'float64',
        [0, 1, 2, 3, 4, 5],
        [0.6995178715735632, 0.9432207303626197, 0.9704567090917908, 0.6862663687050765, 0.7857104400504216, 1.4390634536597207]),
    'multivariate_normal(K42, cholesky)': ((3, 2), 'float64',
        [0, 1, 2, 3, 4, 5],
        [0.738778144692716, -4.094990487430765, 1.2643667926365265, -1.361186502871864, 1.6924342454389927, -1.481719518024469]),
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

    def draw(k):      # (exponential, truncated_normal: XLA's log1p, erf, erf_inv emulated)
        return (random.normal(k, (4,)), random.bits(k, (3,), np.uint64), random.fold_in(k, 2),
                random.exponential(k, (3,)), random.truncated_normal(k, -1.0, 2.0, (3,)))
    check_exported(draw, K42, tmp_path=tmp_path, name="draw", rtol=0, atol=0,
                   calls=[(np.asarray(K42),)])      # a NumPy-only module, bit for bit
    for got, want in zip(fungrad.jit(draw)(K42), draw(K42)):
        np.testing.assert_array_equal(got, want)


def test_primitive_errors_name_the_problem():
    with pytest.raises(ValueError, match="split the key"):
        random.normal(K0, (2**32 + 1,))               # more blocks than fungrad draws from one key
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
        # normals: scipy's erfinv against XLA's (which fungrad reproduces), whose
        # 1 - u**2 cancels for |u| near 1: ~1e-13 relative in the far tails
        np.testing.assert_allclose(got, want, rtol=1e-12 if transform == "normal" else 0, atol=0)
