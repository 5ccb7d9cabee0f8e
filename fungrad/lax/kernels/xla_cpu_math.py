"""XLA's CPU arithmetic, bit for bit, in NumPy (NumPy-only module): what the
code JAX 0.10.2 compiles for its samplers computes, so that ``fungrad.random``
draws JAX's numbers exactly (not only the bits: the floats made from them).

What XLA's CPU backend emits, found from the HLO and LLVM IR that
``XLA_FLAGS=--xla_dump_to`` writes, and checked against jax.jit on millions of
inputs (tests/test_xla_cpu_math.py keeps a recorded sample):

* LLVM contracts every ``a * b + c`` whose product has no other use into one
  fused multiply-add (``fma`` below: NumPy has none, so it is emulated exactly).
* ``log`` in float32 is Eigen's ``plog_float`` (a polynomial after a split
  into exponent and mantissa: ``log_float32``); in float64 it is a call to the
  C library's ``log`` (glibc's: ``libm_log``).
* ``log1p`` is XLA's own intrinsic: Cephes' rational approximation for
  |x| < sqrt(2) - 1, ``log(1 + x)`` beyond (``log1p``).
* ``exp`` in float32 is Eigen's ``pexp_float``, in float64 XLA's own intrinsic
  (a Pade form); both flush subnormal results to zero.
* ``erf`` in float32 is XLA's rational in x**2; ``tan``, ``pow`` and float64
  ``erf`` are calls to the C library's.
* ``erf_inv`` is StableHLO's CHLO decomposition: Giles' polynomials in
  ``w = -log1p(-x * x)`` (one of two in float32, three in float64), Horner's
  rule with the coefficients selected per element (``erf_inv``).
* ``rsqrt`` is the CPU's estimate instruction refined by Newton steps:
  ``vrsqrtps``/``vrsqrtss`` and one step in float32, AVX-512's ``vrsqrt14pd``
  and two in float64. The float32 estimate is implementation-defined (Intel's
  and AMD's differ), so here it is a table measured on the AMD EPYC (Zen 4)
  CPU that JAX's reference vectors were recorded on; on another CPU model JAX
  itself draws other float32 gamma variates (``rsqrt``).

Constants are the ones in the dumped IR (float32 ones written by their bits).
The emulated fused multiply-adds make these functions 10-50x slower than
NumPy's. fungrad/lax/xla_cpu_numba.py compiles the same algorithms with numba;
once it is loaded (``prng.exact_draw``: a draw of more than
``prng.EXACT_SAMPLES`` per key, numba installed) the functions below use it
for large arrays (``COMPILED``), with the same results.
"""
import base64
import ctypes
import ctypes.util
import math

import numpy as np

__all__ = ["fma", "fma32", "log_float32", "libm_log", "erf_float32", "libm_erf", "exp_float32",
           "exp_float64", "rsqrt_estimate_float32", "rsqrt_float32",
           "rsqrt14_estimate_float64", "rsqrt_float64", "log", "log1p", "exp", "erf",
           "erf_inv", "rsqrt", "tan", "power", "c_log", "short_loop_tail",
           "loop_log",
           "normal_from_signed"]

_F32, _F64 = np.float32, np.float64


# ----------------------------------------------------------------------------
# fused multiply-add: a * b + c rounded once
# ----------------------------------------------------------------------------

_NUMPY_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def fma(a, b, c):
    """``a * b + c`` with one rounding, for float16/32/64 arrays of one dtype
    (ml_dtypes' floats: two roundings, as XLA's CPU code computes them)
    (broadcasting). float64 by error-free transformations and Boldo and
    Melquiond's round-to-odd (2008); narrower floats by an exact float64
    product, a round-to-odd float64 sum, then one rounding to the dtype.
    Exact while a * b neither overflows nor comes near float64's subnormals;
    beyond that (and for inf/nan) it returns the plainly rounded a * b + c.
    (Large float32/float64 arrays, once the compiled kernels are loaded: LLVM's
    fma, exact everywhere, so those edge cases can differ.)"""
    a, b, c = np.broadcast_arrays(*(np.asarray(x) for x in (a, b, c)))
    dtype = a.dtype
    compiled = _call_compiled("fma", a, b, c)     # (LLVM's fma: exact everywhere)
    if compiled is not None:
        return compiled.reshape(a.shape)
    with np.errstate(all="ignore"):
        plain = a * b + c
        if dtype not in _NUMPY_FLOATS:   # bfloat16, float8: XLA rounds the product, then the sum
            return plain
        if dtype != np.float64:
            product = a.astype(np.float64) * b.astype(np.float64)      # exact
            wide = _round_to_odd(*_two_sum(product, c.astype(np.float64)))
            fused = wide.astype(dtype)
        else:
            high, low = _two_product(a, b)
            sum_high, sum_low = _two_sum(c, high)
            tail = _round_to_odd(*_two_sum(sum_low, low))
            fused = np.where(tail == 0, sum_high, sum_high + tail)     # keeps -0
        exact = np.isfinite(fused)
        if dtype == np.float64:
            exact &= np.abs(plain) < 2.0**900
    return np.where(exact, fused, plain)


def _two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def _two_product(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker, Veltkamp's split)."""
    p = a * b
    a_high, a_low = _veltkamp(a)
    b_high, b_low = _veltkamp(b)
    return p, ((a_high * b_high - p) + a_high * b_low + a_low * b_high) + a_low * b_low


def _veltkamp(a):
    t = a * 134217729.0           # 2**27 + 1
    high = t - (t - a)
    return high, a - high


def _round_to_odd(high, low):
    """``high + low`` (``high`` its rounding, ``low`` the exact error) rounded to
    odd: exact sums stay, others go to the neighbour with an odd last bit."""
    inexact = low != 0
    toward_zero = inexact & (np.signbit(low) != np.signbit(high))
    truncated = np.where(toward_zero, np.nextafter(high, 0.0), high)
    even = (truncated.view(np.int64) & 1) == 0
    away = np.nextafter(truncated, np.copysign(np.inf, truncated))
    return np.where(inexact & even, away, truncated)


def _fma64_by(a, b_split, c):
    """float64 ``a * b + c`` rounded once, ``b`` given as ``(b, high, low)`` (its
    Veltkamp split, made once for a Horner loop): the error-free product and sum
    give ``a b + c = s + e + f`` exactly, and ``s + fl(e + f)`` is the fused
    result unless fl(e + f) is a power of two (it may then be the rounded tie
    of a sum that is not one): those few elements are redone by ``fma``. For
    finite a, b, c whose product neither overflows nor nears the subnormals."""
    b, b_high, b_low = b_split
    product = a * b
    a_high, a_low = _veltkamp(a)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total, sum_error = _two_sum(c, product)
    tail = sum_error + product_error
    nonzero = tail != 0
    out = total.copy()
    np.add(total, tail, out=out, where=nonzero)      # (not where 0: -0 + 0 is +0)
    power_of_two = (tail.view(np.uint64) & _MANTISSA64) == 0
    power_of_two &= nonzero
    if power_of_two.any():
        a, b, c = (np.broadcast_to(x, out.shape)[power_of_two] for x in (a, b, c))
        out[power_of_two] = fma(a, b, c)
    return out


_MANTISSA64 = np.uint64((1 << 52) - 1)


# float64 bits below float32's last place: a float64 whose low 29 bits are
# exactly 1000...0 lies halfway between two float32s
_LOW29, _HALF29 = np.uint64((1 << 29) - 1), np.uint64(1 << 28)


def fma32(a, b, c):
    """float32 ``a * b + c`` rounded once (float32 arrays or scalars,
    broadcasting), faster than ``fma``: the float64 product is exact, the
    float64 sum rounds once more, which can only change the float32 result
    when that sum lands exactly halfway between two float32s; those few
    elements are redone by ``fma``."""
    wide = np.multiply(a, b, dtype=_F64)
    wide += c
    out = wide.astype(_F32)
    halfway = (wide.view(np.uint64) & _LOW29) == _HALF29
    if halfway.any():
        a, b, c = (np.broadcast_to(np.asarray(x, _F32), out.shape)[halfway] for x in (a, b, c))
        out[halfway] = fma(a, b, c)
    return out


# ----------------------------------------------------------------------------
# log: Eigen's plog_float (float32), the C library's (float64)
# ----------------------------------------------------------------------------

def _f32(bits):
    return np.array(bits, np.uint32).view(_F32)


# plog_float's polynomial (Cephes' logf): three Horner pieces joined in x**3
_LOG_P = tuple(_f32(b) for b in (0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
                                 0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA))
_SQRT_HALF, _LN2_LOW, _LN2_HIGH = _f32(0x3F3504F3), _f32(0xB95E8083), _f32(0x3F318000)


def log_float32(x):
    """float32 natural log as XLA's CPU code computes it (Eigen's ``plog_float``):
    x = m 2**e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial in m - 1,
    plus e log(2) in two parts. Subnormal x count as the smallest normal, as
    there; x < 0 or nan give nan, 0 gives -inf, inf gives inf."""
    x = np.asarray(x, _F32)
    with np.errstate(all="ignore"):
        bits = np.maximum(x, _F32(np.finfo(_F32).tiny)).view(np.uint32)
        exponent = (bits >> np.uint32(23)).astype(np.int32).astype(_F32) - _F32(126)
        m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)   # [1/2, 1)
        below = m < _SQRT_HALF                          # then use 2m - 1 and e - 1
        t = (m - _F32(1)) + np.where(below, m, _F32(0))
        exponent -= below.astype(_F32)
        t2 = t * t
        t3 = t2 * t
        y = fma32(fma32(t, _LOG_P[0], _LOG_P[1]), t, _LOG_P[2])
        y1 = fma32(fma32(t, _LOG_P[3], _LOG_P[4]), t, _LOG_P[5])
        y2 = fma32(fma32(t, _LOG_P[6], _LOG_P[7]), t, _LOG_P[8])
        y = fma32(fma32(y, t3, y1), t3, y2)
        y = fma32(y, t3, exponent * _LN2_LOW)
        result = fma32(exponent, _LN2_HIGH, fma32(_F32(-0.5), t2, t) + y)
        result = np.where(x == 0, _F32(-np.inf), result)
        result = np.where(x == np.inf, x, result)
        return np.where((x < 0) | np.isnan(x), _F32(np.nan), result)


_libm_log_scalar = np.frompyfunc(math.log, 1, 1)


def libm_log(x):
    """float64 natural log by the C library's ``log`` (what XLA's CPU code calls;
    NumPy's own vectorised log differs from glibc's in the last bit of ~0.2% of
    results), one element at a time: for small arrays."""
    x = np.asarray(x, _F64)
    positive = (x > 0) & (x < np.inf)
    out = np.log(np.where(positive, 1.0, x)) if not positive.all() else np.empty(x.shape)
    if positive.any():
        out[positive] = _libm_log_scalar(x[positive]).astype(_F64)
    return out


# ----------------------------------------------------------------------------
# log1p: XLA's intrinsic
# ----------------------------------------------------------------------------

# Cephes' log1p: log1p(x) = x - x**2/2 + x**3 P(x) / Q(x) for |x| < sqrt(2) - 1
_LOG1P_P = (4.5270000862445199635215E-5, 4.9854102823193375972212E-1, 6.5787325942061044846969E0,
            2.9911919328553073277375E1, 6.0949667980987787057556E1, 5.7112963590585538103336E1,
            2.0039553499201281259648E1)
_LOG1P_Q = (1., 1.5062909083469192043167E1, 8.3047565967967209469434E1, 2.2176239823732856465394E2,
            3.0909872225312059774938E2, 2.1642788614495947685003E2, 6.0118660497603843919306E1)
_LOG1P_SMALL = 0.41421356237309504880


def _fma_by(x):
    """``fma_by(a, c) = a x + c`` rounded once, for the float32 or float64 ``x``
    of a Horner loop (in float64, x's split is made once)."""
    if x.dtype == _F32:
        return lambda a, c: fma32(a, x, c)
    x_split = (x, *_veltkamp(x))
    return lambda a, c: _fma64_by(a, x_split, c)


def _horner(coefficients, fma_by, like):
    """``sum c_k x**(n-k)`` by Horner's rule with fused steps (highest first);
    ``fma_by`` from ``_fma_by(x)``, ``like`` an array of x's shape and dtype."""
    dtype = like.dtype.type
    p = np.full(like.shape, dtype(coefficients[0]))
    for c in coefficients[1:]:
        p = fma_by(p, np.asarray(c, dtype))
    return p


def _log1p(x, log=None):
    """``log(1 + x)`` as XLA's CPU code computes it, float32 or float64: the
    rational approximation for |x| < sqrt(2) - 1, else ``log(1 + x)`` by
    ``log`` (default: ``log_float32``, or ``libm_log`` for float64)."""
    x = np.asarray(x)
    dtype, fma_by_x = x.dtype.type, _fma_by(x)
    if log is None:
        log = log_float32 if dtype == _F32 else libm_log
    with np.errstate(all="ignore"):
        x2 = x * x
        ratio = _horner(_LOG1P_P, fma_by_x, x) / _horner(_LOG1P_Q, fma_by_x, x)
        fused = fma32 if dtype == _F32 else fma
        out = x + fused(np.asarray(-0.5, dtype), x2, (x * x2) * ratio)
        large = ~(np.abs(x) < dtype(_LOG1P_SMALL))      # (nan too)
        if large.any():              # the C library's log is slow: only where needed
            out[large] = log(x[large] + dtype(1))
    return out


# ----------------------------------------------------------------------------
# erf_inv: CHLO's decomposition (Giles, "Approximating the erfinv function", 2010)
# ----------------------------------------------------------------------------

# float32: w < 5 and w >= 5, polynomials in w - 2.5 and sqrt(w) - 3
_ERF_INV_32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
               (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
# float64: w < 6.25, w < 16, w >= 16, in w - 3.125, sqrt(w) - 3.25, sqrt(w) - 5
# (23, 19 and 17 coefficients: one Horner loop, the shorter ones stop early)
_ERF_INV_64 = (
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221))


def _erf_inv(x, log=None):
    """erf_inv as XLA's CPU code computes it (float32 or float64 ``x``);
    ``log`` as for ``log1p``."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        w = -_log1p(x * -x, log)
        p = _erf_inv_32(w) if x.dtype == _F32 else _erf_inv_64(w)
        return np.where(np.abs(x) == 1, x * x.dtype.type(np.inf), p * x)


def _erf_inv_32(w):
    low = w < _F32(5)
    v = np.where(low, w - _F32(2.5), np.sqrt(w) - _F32(3))
    small, large = _ERF_INV_32
    p = np.where(low, _F32(small[0]), _F32(large[0]))
    for a, b in zip(small[1:], large[1:]):
        p = fma32(p, v, np.where(low, _F32(a), _F32(b)))
    return p


def _erf_inv_64(w):
    low, middle = w < 6.25, w < 16
    v = np.where(low, w - 3.125, np.sqrt(w) - np.where(middle, 3.25, 5.0))
    first, second, third = _ERF_INV_64
    p = np.where(low, first[0], np.where(middle, second[0], third[0]))
    fma_by_v = _fma_by(v)
    for i in range(1, len(first)):
        if i < len(third):                   # all three polynomials take this step
            p = fma_by_v(p, np.where(low, first[i], np.where(middle, second[i], third[i])))
        elif i < len(second):                # w >= 16 has finished
            p = np.where(middle, fma_by_v(p, np.where(low, first[i], second[i])), p)
        else:                                # only w < 6.25 runs on
            p = np.where(low, fma_by_v(p, np.asarray(first[i])), p)
    return p


# ----------------------------------------------------------------------------
# erf: XLA's float32 intrinsic (a rational in x**2), the C library's in float64
# ----------------------------------------------------------------------------

_ERF_P = tuple(_f32(b) for b in (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA))
_ERF_Q = tuple(_f32(b) for b in (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21,
                                 0x3EFEB44A, 0x3F800000))
_ERF_SATURATED = _f32(0x407547CB)          # |x| >= 3.8325: erf is +-1 in float32


def erf_float32(x):
    """float32 erf as XLA's CPU code computes it: x P(x**2) / Q(x**2), +-1 beyond 3.83."""
    x = np.asarray(x, _F32)
    with np.errstate(all="ignore"):
        x2 = x * x
        fma_by = _fma_by(x2)
        numerator = x * _fold(_ERF_P, lambda p, c: fma_by(p, c))
        ratio = numerator / _fold(_ERF_Q, lambda q, c: fma_by(q, c))
        return np.where(np.abs(x) >= _ERF_SATURATED, np.copysign(_F32(1), x), ratio)


def _fold(coefficients, step):
    """Horner's rule from the first (highest) coefficient: step(p, c) = p x + c."""
    p = coefficients[0]
    for c in coefficients[1:]:
        p = step(p, c)
    return p


_libm_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def libm_erf(x):
    """float64 erf by the C library's ``erf`` (what XLA's CPU code calls)."""
    x = np.asarray(x, _F64)
    return np.asarray(_libm_erf_scalar(x), _F64) if x.size else x.copy()


# ----------------------------------------------------------------------------
# exp: Eigen's pexp_float (float32), XLA's own intrinsic (float64)
# ----------------------------------------------------------------------------

_EXP32_P = tuple(_f32(b) for b in (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA,
                                   0x3F000000))
_LOG2E32 = _f32(0x3FB8AA3B)


def exp_float32(x):
    """float32 exp as XLA's CPU code computes it (Eigen's ``pexp_float``):
    x = n log(2) + r, |r| <= log(2)/2, exp(r) by a polynomial, times 2**n."""
    x = np.asarray(x, _F32)
    with np.errstate(all="ignore"):
        clamped = np.clip(x, _F32(-87.8), _F32(88.8))
        n = np.clip(np.floor(fma32(clamped, _LOG2E32, _F32(0.5))), _F32(-127), _F32(127))
        r = fma32(-_LN2_LOW, n, fma32(-_LN2_HIGH, n, clamped))
        fma_by_r = _fma_by(r)
        p = _fold(_EXP32_P, lambda q, c: fma_by_r(q, c))
        y = fma32(p, r * r, r) + _F32(1)
        scale = ((n.astype(np.int32) + 127) << 23).astype(np.uint32).view(_F32)
        return np.where(np.isnan(x), x, _flush_subnormals(y * scale))


_EXP64_LOG2E, _EXP64_C1, _EXP64_C2 = (np.array(b, np.uint64).view(_F64) for b in (
    0x3FF71547652B82FE, 0x3FE62E4000000000, 0x3EB7F7D1CF79ABCA))
_EXP64_P = tuple(np.array(b, np.uint64).view(_F64) for b in (0x3F2089CDD5E44BE8,
                                                            0x3F9F06D10CCA2C7E))
_EXP64_Q = tuple(np.array(b, np.uint64).view(_F64) for b in (0x3EC92EB6BC365FA0,
                                                            0x3F64AE39B508B6C0,
                                                            0x3FCD17099887E074))
_EXP64_LO, _EXP64_HI = (np.array(b, np.uint64).view(_F64) for b in (0xC086232BDD7ABCD2,
                                                                   0x40862E42FEFA39EF))


def exp_float64(x):
    """float64 exp as XLA's CPU code computes it (its own intrinsic, Cephes'
    Pade form): x = n log(2) + g, exp(g) = 1 + 2 g P(g**2) / (Q(g**2) - g P(g**2)),
    times 2**n in four exact steps; 0 below, inf above the representable range."""
    x = np.asarray(x, _F64)
    with np.errstate(all="ignore"):
        clamped = np.maximum(np.minimum(x, _EXP64_HI), _EXP64_LO)
        n = np.floor(_fma64(clamped, _EXP64_LOG2E, 0.5))
        g = _fma64(-_EXP64_C2, n, _fma64(-_EXP64_C1, n, clamped))
        g2 = g * g
        fma_by_g2 = _fma_by(g2)
        p = fma_by_g2(fma_by_g2(np.full(g.shape, _EXP64_P[0]), _EXP64_P[1]), np.asarray(1.0)) * g
        q = _fold(_EXP64_Q + (np.asarray(2.0),), lambda a, c: fma_by_g2(a, c))
        y = fma(p / (q - p), np.asarray(2.0), np.asarray(1.0))
        k = np.clip(n, -2099, 2099).astype(np.int64)
        quarter = k >> 2
        step = ((quarter << 52) + 0x3FF0000000000000).view(_F64)
        y = y * step * step * step
        y = y * (((k - 3 * quarter) << 52) + 0x3FF0000000000000).view(_F64)
        y = np.where(x < _EXP64_LO, 0.0, _flush_subnormals(y))
        return np.where(x > _EXP64_HI, np.inf, np.where(np.isnan(x), x, y))


def _flush_subnormals(y):
    """Subnormal results as 0: XLA's CPU code runs with flush-to-zero."""
    return np.where(np.abs(y) < np.finfo(y.dtype).tiny, y.dtype.type(0), y)


def _fma64(a, b, c):
    a, b, c = np.broadcast_arrays(*(np.asarray(v, _F64) for v in (a, b, c)))
    return fma(a, b, c)


# ----------------------------------------------------------------------------
# tan and pow: calls to the C library's (tanf/tan, powf/pow)
# ----------------------------------------------------------------------------

def _libm_functions():
    """The C math library's tan, pow and log (double and float: tanf, ...; by
    ctypes), or None where
    it cannot be loaded (then NumPy's functions stand in)."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        functions = {}
        for name, ctype, arity in (("tan", ctypes.c_double, 1), ("tanf", ctypes.c_float, 1),
                                   ("pow", ctypes.c_double, 2), ("powf", ctypes.c_float, 2),
                                   ("log", ctypes.c_double, 1), ("logf", ctypes.c_float, 1)):
            function = getattr(libm, name)
            function.restype, function.argtypes = ctype, [ctype] * arity
            functions[name] = function
        return functions
    except (OSError, AttributeError):
        return None


_LIBM = _libm_functions()


def _elementwise_libm(name, fallback, dtype, *arrays):
    """The C library's ``name`` on each element (Python floats through ctypes:
    slow, for small arrays), or NumPy's ``fallback`` without a C library."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype) for a in arrays))
    if _LIBM is None:
        return fallback(*arrays).astype(dtype)
    function = _LIBM[name]
    values = [function(*args) for args in zip(*(a.ravel().tolist() for a in arrays))]
    return np.array(values, dtype).reshape(arrays[0].shape)


def tan(x):
    """XLA's CPU ``tan`` of a float array: the C library's tanf / tan."""
    x = np.asarray(x)
    compiled = _call_compiled("tan", x)
    if compiled is not None:
        return compiled.reshape(x.shape)
    if x.dtype == _F64:
        return _elementwise_libm("tan", np.tan, _F64, x)
    return _elementwise_libm("tanf", np.tan, _F32, x).astype(x.dtype)


def c_log(x):
    """The C library's ``logf`` / ``log`` of a float array: what XLA's CPU code
    computes the last elements of some short float32 loops with (``loop_log``).
    Element by element: for small arrays."""
    x = np.asarray(x)
    if x.dtype == _F64:
        return _elementwise_libm("log", np.log, _F64, x)
    return _elementwise_libm("logf", np.log, _F32, x).astype(x.dtype)


def short_loop_tail(n):
    """Where XLA's CPU loop of a float32 ``log``/``exp`` of its own over ``n``
    elements leaves elements to the C library: the start of its last n % 8
    when n < 16 and n % 8 is 3, 5, 6 or 7 (LLVM's scalar remainder calls
    ``logf``/``expf``; its vector loops use XLA's polynomial; measured on JAX
    0.10.2 for n = 1-1000), else ``n`` (none)."""
    return n - n % 8 if n < 16 and n % 8 in (3, 5, 6, 7) else n


def loop_log(x, alone=True, alone_if_batched=True):
    """XLA's CPU float32 ``log`` of ``x``, computed in a loop of its own over all
    of x's elements (row-major) if ``alone`` (the short loops' last elements by
    ``logf``), else fused with other work (XLA's polynomial throughout).
    ``alone_if_batched`` is what ``alone`` becomes under vmap (fungrad/lax/prng.py)."""
    x = np.asarray(x)
    out = log(x)
    start = short_loop_tail(x.size)
    if alone and x.dtype == _F32 and start < x.size:
        flat = out.reshape(-1)
        flat[start:] = c_log(x.reshape(-1)[start:])
    return out


def power(x, y):
    """XLA's CPU ``pow`` of float arrays of one dtype (broadcasting): the C
    library's powf / pow."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == y.dtype:
        compiled = _call_compiled("pow", *np.broadcast_arrays(x, y))
        if compiled is not None:
            return compiled.reshape(np.broadcast_shapes(x.shape, y.shape))
    if x.dtype == _F64:
        return _elementwise_libm("pow", np.power, _F64, x, y)
    return _elementwise_libm("powf", np.power, _F32, x, y).astype(x.dtype)


# ----------------------------------------------------------------------------
# rsqrt: the CPU's estimate and one Newton step (float32), 1 / sqrt (float64)
# ----------------------------------------------------------------------------
# XLA's float32 rsqrt (also JAX's ``c / sqrt(x)``, which XLA rewrites to
# ``c * rsqrt(x)``: Marsaglia-Tsang's constant in ``random.gamma``) is
# ``vrsqrtss``/``vrsqrtps`` (not AVX-512's vrsqrt14ps, even where the CPU has
# it: XLA emits LLVM's x86.sse/avx rsqrt intrinsics) refined by one Newton
# step. The estimate's bits are implementation-defined, and differ between
# Intel's and AMD's CPUs, so JAX's float32 gamma family itself draws other
# numbers on another CPU. This table was measured with
# tools/gen_x86_rsqrt_table.py on an AMD EPYC (Zen 4) CPU, the one the JAX
# reference vectors (tests/data) were recorded on: for a positive normal
# x = m 2**e the estimate is entry (e & 1, top 12 bits of m) times 2**-(e >> 1),
# and the 8192 entries, from 1.0 down to 0.5, fall by 0, 1 or 2 of their
# 13-bit last places: 2 bits each, packed four to a byte, low bits first.
_RSQRT_ESTIMATE_STEPS = (
    "VVVUVVZVVFVWVVRVVVVUVVZVVFVWVVRVVVVUVVVVVFVWVVRVVVVUVVVVVFVVVVRVVVVUVVVVVFVVVVRVVFVUVVVU"
    "VVRWVFVUVVRVVFZUVVRVVFVUVVRVVFVUVVRVVFVUVVRVVFVUVVRVVFVUVVRVVFVUVVRUVFVUVVRVVFRUVVQVVVRF"
    "FVVURRZVVEUVVVRFFVVURRVVVEUVVVRFFVVURRVVVEUVVVRFFFVURRVVVEUVVVRFFFVURRVVVEUUVVRFFUVFRRVF"
    "RUUWRUVFFUVFRRVFRUUVRUVFFUVFRRVFRUUVRUVFFUVFRRRFRUUVRUVFFUVFRRRFRUUVRUVFFEVFRVJUFEVRVBRF"
    "UVQURVJUFEVRVBRFUVQURVFUFEVRVBRFUVQURVFUFEVRVBRFUVQURVFUFEVRVBRFUFQURVFUFEVFUURRRFFEUUVR"
    "RFFEUURRRVFEUURRRFFFUURRRFFEUURRRFFEUURRRVFEUURRRFFEUURRRFFEUURRRFFEUURRUEQURVFEFEVRRBRF"
    "UUQURVFEFEVQRBRFUUQURVFEFEVQRBRFUUQURVBEFEVRRBRFUEQURVFEFEVQRBRFUEQURRFRRBQRUUQUEVFEFBJR"
    "RBQRUUQUEVFEFBFRRBQRUUQUEVFEFBFRRBQRUUQUEVFEFBFRRBQQUUQUEVFEFBFRRBRERERERUREREVERERERERE"
    "RURERERERERFREREREREREVERERERERERURERERERERERERERUREREREREREREREERERERERERERERERERERERER"
    "ERERERERERERERERERERERERERERERERERERERERERERERARERERERERERERERERREQREUREEBFERBERREQREURE"
    "EBFERBERREQQEUREERFERBARREQREUREEBFERBERREQQEUREEBFERBERREREEBFBRBARQUQQEUFEEBFBRRARQUQQ"
    "EUFEEBFBRBARQUQQEUFEEBFBRBARQUQQEUFEEBFBRBARQUQQEUFEEBFBEUQQERFEEBERRBAREEQQERFEEBERRBAR"
    "EUQQERFEEBEQRBAREUQQERFEEBEQRBAREUQQERFEEBEQRBAREUQQERBBBEERQQRBEEEEQRFBBEEQQQRBEUEEQRBB"
    "BEERQQRBEEEEQRBBBEERQQRBEEEEQRBBBEERQQRBEEEEQRBBBEERRBBBEEQQQRBEEEEQRBBBEEQQQRBEEEEQRBBB"
    "EUQQQRBEEEEQRBBBEEQQQRBEEEEQRBBBEEQQQRBEEEEQRBBBQBBBEEEQQRBBEEEQQRBBEEEQQRBAEEEQQRBBEEEQ"
    "QRBBEEEQQRBBEEAQQRBBEEEQQRBBEEEQQRBAEEEQQRBBEEVRFEVFURRFRVEURUZRFEVFURRFRFEURUVRFEVFURRF"
    "RVEURUVRFEVEURRFRVEURUVRFEVEURRFRVEURURRFEVRRFEUUURRFFFEURRSRFEUUURRFFFEURRRRFEUUURRFFFE"
    "URRQRFEUUURRFFFEURRRRFEUUERRFFFEURRQRFEUUUQUEVJEFBFRRBQRUUQUEVJEFBFRRBQRUUQUEVFEFBFRRBQR"
    "UUQUEVFEFBFRRBQRUUQUEVFEFBFRRBQRUUQUEVFERERQREREUURERFFERERQREREUURERFBERERRREREUERERFBE"
    "RERRREREUERERFBERERRREREUERERFBEREQQERERERERERERERERERERERERERERERERERERERERERERERERERER"
    "EBEREREREREREREREBEREREREREQERERBRERQQQREUEFERFBBBERQQUREUEEERFBBBERQQUREUEEERFBBBERQQQR"
    "EUEFERFBBBERQQQREUEEERFBBBERQRBBRBARQUQQEUFEEBFBRBARQUQQEUFEEBFBRBARQUQQEEFEEBFBRBARQUQQ"
    "EUFEEBBBRBARQUQQEUFEEBBBRBARQQQREEEEERFBBBEQQQQREUEEERBBBBERQQQREEEEERBBBBERQQQREEEEERBB"
    "BBERQQQREEEEERBBBBEQQQQRQQRBBEEEQQRBBEEEQQRBBEEEQQRBBEEEQQRBBEEEQQRBBEEEQQRBBEEEQQRBBEEE"
    "QQRBBEEEQQRBBEEEQARBBBEEQRARBEEQEQRBEBAEQRARBEEQEQRBEBEEQRAQBEEQEQRBEBAEQRARBEEQEQRBEBAE"
    "QRARBEEQEARBEBEEQRAQBEEQEARBEBEEQRAQBEEQEQRBEBAEQRAQBEEQEQRBEBAEQRAQBEEQEQRBEBAEQRAQBEEQ"
    "EARBEBAEQRARBEEQBEEQEARBEBAEQRAQBEEQEARBEBAEQRAQBEEQEARBEBAEQRAQBEEQEARBEBAEQRAQBEEQEARB"
    "EBAEQRAQBEEQEEEQEARAEBAEQRAQBEEQEARBEBAEQRAQBEEQEARAEBAEQRAQBEEQEARBEBAEQBAQBEEQEARBEBAE"
    "QBAQBEEQEARBEBAEQBAQBEEQEARAEBAEQRAQBEEQEARAEBAEQRAQBEAQEARBEBAEQBAQBEEQEARAEBAEQRAQBEAQ"
    "EARAEBAEERAQEBAQEBAREBAQEBAQEBAQEBAREBAQEBAQEBAQEBAREBAQEBAQEBAQEBAQEBAQERAQEBAQEBAQEBAQ"
    "EBAQEBEQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAREBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ"
    "EBA=")
_RSQRT_TABLE = []           # filled on first use: the entries' float32 bits


def _rsqrt_table():
    if not _RSQRT_TABLE:
        packed = np.frombuffer(base64.b64decode("".join(_RSQRT_ESTIMATE_STEPS)), np.uint8)
        steps = (packed[:, None] >> np.array([0, 2, 4, 6], np.uint8)) & np.uint8(3)
        places = (0x3F800000 >> 11) - np.cumsum(steps.ravel(), dtype=np.int64)
        _RSQRT_TABLE.append((places << 11).astype(np.uint32))
    return _RSQRT_TABLE[0]


def rsqrt_estimate_float32(x):
    """The CPU's ``vrsqrtps`` of float32 ``x`` (the table above): positive normal x
    by the table; +-0 and subnormals give +-inf, +inf 0, negative x and nan nan."""
    x = np.asarray(x, _F32)
    bits = x.view(np.uint32).astype(np.int64)
    biased = (bits >> 23) & 0xFF
    exponent = biased - 127
    entry = _rsqrt_table()[((exponent & 1) << 12) | ((bits >> 11) & 0xFFF)]
    normal = (bits >> 31 == 0) & (biased > 0) & (biased < 255)
    scaled = (entry.astype(np.int64) - ((exponent >> 1) << 23)).astype(np.uint32).view(_F32)
    with np.errstate(all="ignore"):
        special = np.where((biased == 0), np.copysign(_F32(np.inf), x),
                           np.where(x == np.inf, _F32(0), _F32(np.nan)))
        special = np.where(np.isnan(x), x, special)
    return np.where(normal, scaled, special)


def rsqrt_float32(x):
    """float32 rsqrt as XLA's CPU code computes it: the estimate y, then for
    positive normal x one Newton step, ``y + (-y/2) (x y * y - 1)`` with its two
    fused multiply-adds; the estimate itself elsewhere."""
    x = np.asarray(x, _F32)
    y = rsqrt_estimate_float32(x)
    with np.errstate(all="ignore"):
        error = fma32(x * y, y, _F32(-1))
        refined = fma32(y * _F32(-0.5), error, y)
    positive_normal = (x >= np.finfo(_F32).tiny) & (x < np.inf)
    return np.where(positive_normal, refined, y)


# XLA's float64 rsqrt is AVX-512's ``vrsqrt14pd`` refined by two Newton steps.
# Unlike vrsqrtps, its result is specified bit for bit (Intel's "Reference
# Implementations for IA Approximation Instructions VRCP14, VRSQRT14, ..."):
# 1/sqrt of the input's significand, cut to 15 fraction bits, by a straight
# line on each of 32 segments of [1, 2) and of [2, 4) (value ``c`` at the
# segment's centre and slope ``d``, integers in units of 2**-19, the slope
# scaled by 256 or 128), truncated to 16 fraction bits. The (d, c) pairs
# below were derived from this CPU's (AMD Zen 4) outputs by
# tools/gen_x86_rsqrt_table.py: for each segment, the only integer pair that
# reproduces all of its 1024 inputs.
_RSQRT14_EVEN = ((1001, 520261), (955, 512437), (915, 504953), (877, 497790), (841, 490922),
                 (807, 484331), (775, 478001), (747, 471909), (719, 466046), (693, 460397),
                 (669, 454947), (647, 449688), (625, 444606), (603, 439694), (585, 434939),
                 (567, 430335), (549, 425875), (533, 421551), (517, 417355), (501, 413284),
                 (487, 409329), (473, 405487), (461, 401748), (449, 398111), (437, 394571),
                 (425, 391127), (415, 387770), (403, 384498), (393, 381307), (385, 378194),
                 (375, 375155), (367, 372190))
_RSQRT14_ODD = ((707, 367881), (675, 362349), (647, 357056), (619, 351992), (595, 347136),
                (571, 342475), (549, 337997), (527, 333693), (509, 329545), (491, 325551),
                (473, 321697), (457, 317977), (441, 314385), (427, 310910), (413, 307549),
                (401, 304295), (389, 301139), (377, 298079), (365, 295115), (355, 292237),
                (345, 289439), (335, 286722), (325, 284080), (317, 281508), (309, 279006),
                (301, 276569), (293, 274195), (285, 271882), (279, 269625), (271, 267425),
                (265, 265276), (259, 263178))
_RSQRT14_SLOPE, _RSQRT14_VALUE = (np.array([[pair[k] for pair in table] for table in
                                            (_RSQRT14_EVEN, _RSQRT14_ODD)], _F64) for k in (0, 1))


def rsqrt14_estimate_float64(x):
    """AVX-512's ``vrsqrt14pd`` of float64 ``x`` under XLA's denormals-are-zero:
    positive normal x by the segments above; +-0 and subnormals give +-inf, +inf
    0, other negative x and nan nan."""
    x = np.asarray(x, _F64)
    bits = x.view(np.uint64).astype(np.int64)          # (the sign bit makes it negative)
    biased = (bits >> 52) & 0x7FF
    fraction = bits & ((1 << 52) - 1)
    exponent = biased - 1023
    odd = exponent & 1
    segment = (fraction >> 47) & 31
    significand = 1 + (fraction >> 37).astype(_F64) * 2.0**-15        # 15 fraction bits
    centre = np.where(odd == 1, 2 + 1 / 32 + segment / 16, 1 + 1 / 64 + segment / 32)
    significand = np.where(odd == 1, 2 * significand, significand)
    slope = np.where(odd == 1, 128.0, 256.0) * _RSQRT14_SLOPE[odd, segment]
    line = _RSQRT14_VALUE[odd, segment] - slope * (significand - centre)     # exact
    estimate = (line * 2.0**-19).view(np.int64) & ~np.int64((1 << 36) - 1)   # exact, then cut
    estimate = np.where((fraction == 0) & (odd == 0), np.int64(0x3FF0000000000000), estimate)
    scaled = (estimate - (((exponent - odd) >> 1) << 52)).view(_F64)
    normal = (bits >= 0) & (biased > 0) & (biased < 0x7FF)
    with np.errstate(all="ignore"):
        special = np.where(biased == 0, np.copysign(_F64(np.inf), x),
                           np.where(x == np.inf, _F64(0), _F64(np.nan)))
        special = np.where(np.isnan(x), x, special)
    return np.where(normal, scaled, special)


def rsqrt_float64(x):
    """float64 rsqrt as XLA's CPU code computes it (on a CPU with AVX-512): the
    estimate, then for positive normal x two Newton steps as in ``rsqrt_float32``."""
    x = np.asarray(x, _F64)
    estimate = y = rsqrt14_estimate_float64(x)
    positive_normal = (x >= np.finfo(_F64).tiny) & (x < np.inf)
    y = np.where(positive_normal, y, 1.0)
    xs = np.where(positive_normal, x, 1.0)
    with np.errstate(all="ignore"):
        for _ in range(2):
            error = fma(xs * y, y, np.asarray(-1.0))
            y = fma(y * -0.5, error, y)
    return np.where(positive_normal, y, estimate)


# ----------------------------------------------------------------------------
# the functions by dtype, as the samplers' primitives call them
# ----------------------------------------------------------------------------
# The same functions compiled with numba (fungrad/lax/xla_cpu_numba.py), once
# loaded: it puts them here (a kernel imports nothing but NumPy; exported code,
# a copy of this module, has none), and arrays of ``COMPILED_MIN_SIZE``
# elements or more use them: the same numbers, 10-50x faster.
COMPILED = [None]
COMPILED_MIN_SIZE = 256
# ... and that module (set by fungrad.lax.prng), for prng.exact_draw to load them
COMPILED_LOADER = [None]


def compiled_kernels(size):
    """The loaded numba kernels for arrays of ``size`` elements, or None."""
    kernels = COMPILED[0]
    return kernels if kernels is not None and size >= COMPILED_MIN_SIZE else None


def _call_compiled(name, *arrays, out=None):
    """The compiled kernel ``name`` of float32/float64 arrays of one shape (a
    flat result, or the flat ``out`` filled), or None: not loaded, too small,
    another dtype, or numba could not compile it (then it is never tried again)."""
    kernels = compiled_kernels(arrays[0].size)
    if kernels is None or arrays[0].dtype not in (_F32, _F64):
        return None
    return kernels.call(name, *arrays, out=out)


def _by_dtype(x, name, float32_fn, float64_fn):
    """``fn(x)`` computed as XLA does: float32 and float64 by the given
    functions (or their compiled kernel ``name``), float16 (which XLA computes
    in float32) by the float32 one, rounded back."""
    x = np.asarray(x)
    flat = x.reshape(-1)                # (the functions index their arrays: not 0-d)
    wide = flat if x.dtype in (_F32, _F64) else flat.astype(_F32)
    out = _call_compiled(name, wide)
    if out is None:
        out = _in_pieces(float64_fn if wide.dtype == _F64 else float32_fn, wide)
    return out.astype(x.dtype, copy=False).reshape(x.shape)


_PIECE = 4096      # elements: a function's dozens of temporaries stay in cache


def _in_pieces(fn, flat):
    """``fn`` of the 1-d ``flat``, evaluated a cache-sized piece at a time."""
    if flat.size <= _PIECE:
        return fn(flat)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _PIECE):
        out[start:start + _PIECE] = fn(flat[start:start + _PIECE])
    return out


def log(x):
    """XLA's CPU ``log`` of a float array."""
    return _by_dtype(x, "log", log_float32, libm_log)


def log1p(x):
    """XLA's CPU ``log1p`` of a float array."""
    return _by_dtype(x, "log1p", _log1p, _log1p)


def exp(x):
    """XLA's CPU ``exp`` of a float array."""
    return _by_dtype(x, "exp", exp_float32, exp_float64)


def erf(x):
    """XLA's CPU ``erf`` of a float array."""
    return _by_dtype(x, "erf", erf_float32, libm_erf)


def erf_inv(x):
    """XLA's CPU ``erf_inv`` of a float array."""
    return _by_dtype(x, "erf_inv", _erf_inv, _erf_inv)


def rsqrt(x):
    """XLA's CPU ``rsqrt`` of a float array (float32: this CPU model's estimate)."""
    return _by_dtype(x, "rsqrt", rsqrt_float32, rsqrt_float64)


def normal_from_signed(u, out=None):
    """JAX's normal from its uniform ``u`` on (-1, 1): sqrt(2) erf_inv(u)
    (into the flat ``out`` of u's size and dtype, if given)."""
    u = np.asarray(u)
    z = _call_compiled("normal", u, out=out)
    if z is not None:
        return z if out is not None else z.reshape(u.shape)
    z = u.dtype.type(math.sqrt(2)) * erf_inv(u)
    if out is None:
        return z
    out[...] = z.reshape(-1)
    return out
