"""numba source of fungrad.lax.xla_cpu_numba: XLA's CPU arithmetic, one element
at a time, the same algorithms, constants and tables as the NumPy emulation in
fungrad/lax/kernels/xla_cpu_math.py (read its docstring for what XLA computes).

Not imported as a module: ``xla_cpu_numba`` compiles this file's text through
fungrad's numba disk cache (fungrad/interpreters/numba_cache.py), appending one
array loop per scalar function. The scalar functions are ``numba.njit``'d here
(not cached themselves: their code is part of each cached loop).

Differences from NumPy that matter for the bits, and how they are handled:

* ``fma`` is LLVM's ``llvm.fma`` intrinsic: one rounding on every target (the
  instruction where the CPU has one, else the C library's ``fma``), where the
  NumPy module needs error-free transformations.
* float32 stays float32 only if every operand is float32: constants are
  float32 globals (a Python float would make the expression float64).
* The C library's ``log``, ``erf``, ``tan``, ``pow`` (and the float forms
  ``logf``, ``tanf``, ``powf``) are called by name (``_libm``): the functions XLA's CPU
  code calls, and no vector library can stand in for them.
* No fast-math: LLVM neither contracts ``a * b + c`` nor reassociates, so a
  fused multiply-add happens exactly where ``_fma`` is written.
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from fungrad.lax.kernels import xla_cpu_math as _np_math

_scalar = numba.njit(error_model="numpy")
_inline = numba.njit(error_model="numpy", inline="always")    # (for the vectorised loops)


# ----------------------------------------------------------------------------
# intrinsics: fused multiply-add, bit casts, the C library's functions
# ----------------------------------------------------------------------------

@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (three floats of one type)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


def _bitcast_intrinsic(from_type, to_type):
    @intrinsic
    def bitcast(typingctx, x):
        if x != from_type:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(to_type))
        return to_type(from_type), codegen
    return bitcast


_bits32 = _bitcast_intrinsic(types.float32, types.uint32)
_from_bits32 = _bitcast_intrinsic(types.uint32, types.float32)
_bits64 = _bitcast_intrinsic(types.float64, types.int64)
_from_bits64 = _bitcast_intrinsic(types.int64, types.float64)


def _libm(name, float_type, arity):
    """The C library's function ``name`` (called by its symbol)."""
    def codegen(context, builder, signature, values):
        llvm_type = context.get_value_type(float_type)
        fnty = ir.FunctionType(llvm_type, [llvm_type] * arity)
        return builder.call(cgutils.get_or_insert_function(builder.module, fnty, name), values)

    if arity == 1:
        @intrinsic
        def call(typingctx, x):
            return (float_type(x), codegen) if x == float_type else None
    else:
        @intrinsic
        def call(typingctx, x, y):
            return (float_type(x, y), codegen) if x == y == float_type else None
    return call


_libm_log = _libm("log", types.float64, 1)
_libm_erf = _libm("erf", types.float64, 1)
_libm_tan = _libm("tan", types.float64, 1)
_libm_tanf = _libm("tanf", types.float32, 1)
_libm_pow = _libm("pow", types.float64, 2)
_libm_powf = _libm("powf", types.float32, 2)
_libm_logf = _libm("logf", types.float32, 1)


# ----------------------------------------------------------------------------
# constants: the NumPy module's, as float32 / float64 arrays (numba freezes
# global arrays into the code)
# ----------------------------------------------------------------------------

_F32, _F64 = np.float32, np.float64
_LOG_P = np.array(_np_math._LOG_P, _F32)
_SQRT_HALF, _LN2_LOW, _LN2_HIGH = (_F32(v) for v in (_np_math._SQRT_HALF, _np_math._LN2_LOW,
                                                      _np_math._LN2_HIGH))
_TINY32 = _F32(np.finfo(_F32).tiny)
_TINY64 = np.finfo(_F64).tiny
_LOG1P_P32, _LOG1P_Q32 = (np.array(c, _F32) for c in (_np_math._LOG1P_P, _np_math._LOG1P_Q))
_LOG1P_P64, _LOG1P_Q64 = (np.array(c, _F64) for c in (_np_math._LOG1P_P, _np_math._LOG1P_Q))
_LOG1P_SMALL32, _LOG1P_SMALL64 = _F32(_np_math._LOG1P_SMALL), _np_math._LOG1P_SMALL
_ERF_INV_32_LOW, _ERF_INV_32_HIGH = (np.array(c, _F32) for c in _np_math._ERF_INV_32)
_ERF_INV_64_LOW, _ERF_INV_64_MIDDLE, _ERF_INV_64_HIGH = (np.array(c, _F64)
                                                         for c in _np_math._ERF_INV_64)
_ERF_P, _ERF_Q = (np.array(c, _F32) for c in (_np_math._ERF_P, _np_math._ERF_Q))
_ERF_SATURATED = _F32(_np_math._ERF_SATURATED)
_EXP32_P = np.array(_np_math._EXP32_P, _F32)
_LOG2E32 = _F32(_np_math._LOG2E32)
_EXP64_LOG2E, _EXP64_C1, _EXP64_C2 = (float(v) for v in (_np_math._EXP64_LOG2E,
                                                        _np_math._EXP64_C1, _np_math._EXP64_C2))
_EXP64_P = np.array(_np_math._EXP64_P, _F64)
_EXP64_Q = np.array(_np_math._EXP64_Q + (2.0,), _F64)
_EXP64_LO, _EXP64_HI = float(_np_math._EXP64_LO), float(_np_math._EXP64_HI)
_RSQRT_TABLE = _np_math._rsqrt_table().copy()
_RSQRT14_SLOPE, _RSQRT14_VALUE = _np_math._RSQRT14_SLOPE.copy(), _np_math._RSQRT14_VALUE.copy()
_ONE32, _HALF32, _ZERO32 = _F32(1), _F32(0.5), _F32(0)
_INF32, _NAN32 = _F32(np.inf), _F32(np.nan)
_SQRT2_32, _SQRT2_64 = _F32(math.sqrt(2)), math.sqrt(2)


# ----------------------------------------------------------------------------
# log
# ----------------------------------------------------------------------------

@_scalar
def log_f32(x):
    """Eigen's plog_float (xla_cpu_math.log_float32)."""
    if x != x or x < 0:
        return _NAN32
    if x == 0:
        return -_INF32
    if x == _INF32:
        return x
    bits = np.int64(_bits32(max(x, _TINY32)))
    exponent = np.float32(bits >> 23) - _F32(126)
    m = _from_bits32(np.uint32((bits & 0x807FFFFF) | 0x3F000000))
    below = m < _SQRT_HALF
    t = (m - _ONE32) + (m if below else _ZERO32)
    if below:
        exponent -= _ONE32
    t2 = t * t
    t3 = t2 * t
    p = _LOG_P
    y = _fma(_fma(t, p[0], p[1]), t, p[2])
    y1 = _fma(_fma(t, p[3], p[4]), t, p[5])
    y2 = _fma(_fma(t, p[6], p[7]), t, p[8])
    y = _fma(_fma(y, t3, y1), t3, y2)
    y = _fma(y, t3, exponent * _LN2_LOW)
    return _fma(exponent, _LN2_HIGH, _fma(_F32(-0.5), t2, t) + y)


@_scalar
def log_f64(x):
    """The C library's log."""
    return _libm_log(x)


# ----------------------------------------------------------------------------
# log1p, erf_inv
# ----------------------------------------------------------------------------

@_inline
def _horner(coefficients, x):
    p = coefficients[0]
    for k in range(1, coefficients.size):
        p = _fma(p, x, coefficients[k])
    return p


@_scalar
def log1p_f32(x):
    """XLA's log1p (xla_cpu_math._log1p), float32."""
    if not abs(x) < _LOG1P_SMALL32:
        return log_f32(x + _ONE32)
    return _log1p_rational_f32(x)


@_inline
def _log1p_rational_f32(x):
    x2 = x * x
    ratio = _horner(_LOG1P_P32, x) / _horner(_LOG1P_Q32, x)
    return x + _fma(_F32(-0.5), x2, (x * x2) * ratio)


@_scalar
def log1p_f64(x):
    """XLA's log1p (xla_cpu_math._log1p), float64."""
    if not abs(x) < _LOG1P_SMALL64:
        return _libm_log(x + 1.0)
    return _log1p_rational_f64(x)


@_inline
def _log1p_rational_f64(x):
    """log1p's rational form, for |x| < sqrt(2) - 1."""
    x2 = x * x
    ratio = _horner(_LOG1P_P64, x) / _horner(_LOG1P_Q64, x)
    return x + _fma(-0.5, x2, (x * x2) * ratio)


@_scalar
def erf_inv_f32(x):
    """CHLO's erf_inv (xla_cpu_math._erf_inv and _erf_inv_32), float32."""
    return _erf_inv_f32_of(-log1p_f32(x * -x), x)


@_scalar
def _erf_inv_f32_of(w, x):
    if w < _F32(5):
        p = _horner(_ERF_INV_32_LOW, w - _F32(2.5))
    else:
        p = _horner(_ERF_INV_32_HIGH, np.sqrt(w) - _F32(3))
    return x * _INF32 if abs(x) == _ONE32 else p * x


@_scalar
def erf_inv_f64(x):
    """CHLO's erf_inv (xla_cpu_math._erf_inv and _erf_inv_64), float64."""
    return _erf_inv_f64_of(-log1p_f64(x * -x), x)


@_scalar
def _erf_inv_f64_of(w, x):
    """erf_inv(x) from w = -log1p(-x**2): one of three polynomials by w (nan
    w: the last, as np.where picks it)."""
    if w < 6.25:
        p = _horner(_ERF_INV_64_LOW, w - 3.125)
    elif w < 16:
        p = _horner(_ERF_INV_64_MIDDLE, np.sqrt(w) - 3.25)
    else:
        p = _horner(_ERF_INV_64_HIGH, np.sqrt(w) - 5.0)
    return x * np.inf if abs(x) == 1 else p * x


_BLOCK = 2048      # elements: erf_inv_f64_into's passes work on a block in cache


@_scalar
def erf_inv_f64_into(x, out, scale):
    """``scale * erf_inv_f64(x[i])`` into ``out[i]`` (1-d arrays), the same
    operations per element in four passes over a block: the two that do most
    of the work (log1p's rational form, the first polynomial) have no branch,
    so LLVM vectorises them (8 lanes on AVX-512: ~4x a scalar loop); the others
    redo the elements that need the C library's log (|x**2| >= sqrt(2) - 1,
    about a third) or another polynomial (w >= 6.25, about 0.2%)."""
    w = np.empty(_BLOCK)
    for start in range(0, x.size, _BLOCK):
        n = min(_BLOCK, x.size - start)
        _log1p_rational_pass(x[start:start + n], w)
        for i in range(n):
            t = x[start + i] * -x[start + i]
            if not abs(t) < _LOG1P_SMALL64:
                w[i] = -_libm_log(t + 1.0)
        _first_polynomial_pass(x[start:start + n], w, out[start:start + n], scale)
        for i in range(n):
            if not w[i] < 6.25:
                out[start + i] = scale * _erf_inv_f64_of(w[i], x[start + i])


@_scalar
def _log1p_rational_pass(x, w):
    for i in range(x.size):
        w[i] = -_log1p_rational_f64(x[i] * -x[i])


@_scalar
def _first_polynomial_pass(x, w, out, scale):
    for i in range(x.size):
        out[i] = scale * (_horner(_ERF_INV_64_LOW, w[i] - 3.125) * x[i])


@_scalar
def erf_inv_f32_into(x, out, scale):
    """float32 ``erf_inv_f64_into``: the C library's log is Eigen's here, the
    second polynomial is for w >= 5 (about 0.3%)."""
    w = np.empty(_BLOCK, np.float32)
    for start in range(0, x.size, _BLOCK):
        n = min(_BLOCK, x.size - start)
        _log1p_rational_pass_f32(x[start:start + n], w)
        for i in range(n):
            t = x[start + i] * -x[start + i]
            if not abs(t) < _LOG1P_SMALL32:
                w[i] = -log_f32(t + _ONE32)
        _first_polynomial_pass_f32(x[start:start + n], w, out[start:start + n], scale)
        for i in range(n):
            if not w[i] < _F32(5):
                out[start + i] = scale * _erf_inv_f32_of(w[i], x[start + i])


@_scalar
def _log1p_rational_pass_f32(x, w):
    for i in range(x.size):
        w[i] = -_log1p_rational_f32(x[i] * -x[i])


@_scalar
def _first_polynomial_pass_f32(x, w, out, scale):
    for i in range(x.size):
        out[i] = scale * (_horner(_ERF_INV_32_LOW, w[i] - _F32(2.5)) * x[i])


@_scalar
def normal_f32(u):
    """JAX's normal from its uniform on (-1, 1) (xla_cpu_math.normal_from_signed)."""
    return _SQRT2_32 * erf_inv_f32(u)


@_scalar
def normal_f64(u):
    return _SQRT2_64 * erf_inv_f64(u)


# ----------------------------------------------------------------------------
# erf, exp
# ----------------------------------------------------------------------------

@_scalar
def erf_f32(x):
    """XLA's float32 erf (xla_cpu_math.erf_float32)."""
    x2 = x * x
    ratio = (x * _horner(_ERF_P, x2)) / _horner(_ERF_Q, x2)
    return np.float32(math.copysign(1.0, x)) if abs(x) >= _ERF_SATURATED else ratio


@_scalar
def erf_f64(x):
    """The C library's erf."""
    return _libm_erf(x)


@_scalar
def _flush32(y):
    return _ZERO32 if abs(y) < _TINY32 else y


@_scalar
def exp_f32(x):
    """Eigen's pexp_float (xla_cpu_math.exp_float32)."""
    if x != x:
        return x
    clamped = min(max(x, _F32(-87.8)), _F32(88.8))
    n = min(max(np.floor(_fma(clamped, _LOG2E32, _HALF32)), _F32(-127)), _F32(127))
    r = _fma(-_LN2_LOW, n, _fma(-_LN2_HIGH, n, clamped))
    p = _horner(_EXP32_P, r)
    y = _fma(p, r * r, r) + _ONE32
    scale = _from_bits32(np.uint32((np.int64(n) + 127) << 23))
    return _flush32(y * scale)


@_scalar
def exp_f64(x):
    """XLA's float64 exp (xla_cpu_math.exp_float64)."""
    if x != x:
        return x
    if x > _EXP64_HI:
        return np.inf
    if x < _EXP64_LO:
        return 0.0
    n = np.floor(_fma(x, _EXP64_LOG2E, 0.5))
    g = _fma(-_EXP64_C2, n, _fma(-_EXP64_C1, n, x))
    g2 = g * g
    p = _fma(_fma(_EXP64_P[0], g2, _EXP64_P[1]), g2, 1.0) * g
    q = _horner(_EXP64_Q, g2)
    y = _fma(p / (q - p), 2.0, 1.0)
    k = np.int64(min(max(n, -2099.0), 2099.0))
    quarter = k >> 2
    step = _from_bits64((quarter << 52) + 0x3FF0000000000000)
    y = y * step * step * step
    y = y * _from_bits64(((k - 3 * quarter) << 52) + 0x3FF0000000000000)
    return 0.0 if abs(y) < _TINY64 else y


# ----------------------------------------------------------------------------
# rsqrt: the CPU's estimates (the NumPy module's tables), Newton steps
# ----------------------------------------------------------------------------

@_scalar
def _rsqrt_special32(x, biased):
    if x != x:
        return x
    if biased == 0:
        return _F32(math.copysign(math.inf, x))
    return _ZERO32 if x == _INF32 else _NAN32


@_scalar
def rsqrt_f32(x):
    """vrsqrtps's estimate refined by one Newton step (xla_cpu_math.rsqrt_float32)."""
    bits = np.int64(_bits32(x))
    biased = (bits >> 23) & 0xFF
    if not ((bits >> 31) == 0 and biased > 0 and biased < 255):
        return _rsqrt_special32(x, biased)
    exponent = biased - 127
    entry = np.int64(_RSQRT_TABLE[((exponent & 1) << 12) | ((bits >> 11) & 0xFFF)])
    y = _from_bits32(np.uint32((entry - ((exponent >> 1) << 23)) & 0xFFFFFFFF))
    error = _fma(x * y, y, _F32(-1))
    return _fma(y * _F32(-0.5), error, y)


@_scalar
def _rsqrt14_estimate(bits, biased):
    """vrsqrt14pd of a positive normal float64 (xla_cpu_math.rsqrt14_estimate_float64)."""
    fraction = bits & ((1 << 52) - 1)
    exponent = biased - 1023
    odd = exponent & 1
    segment = (fraction >> 47) & 31
    significand = 1 + np.float64(fraction >> 37) * 2.0**-15
    if odd == 1:
        centre = 2 + 1 / 32 + segment / 16
        significand = 2 * significand
        slope = 128.0 * _RSQRT14_SLOPE[odd, segment]
    else:
        centre = 1 + 1 / 64 + segment / 32
        slope = 256.0 * _RSQRT14_SLOPE[odd, segment]
    line = _RSQRT14_VALUE[odd, segment] - slope * (significand - centre)
    estimate = _bits64(line * 2.0**-19) & ~np.int64((1 << 36) - 1)
    if fraction == 0 and odd == 0:
        estimate = np.int64(0x3FF0000000000000)
    return _from_bits64(estimate - (((exponent - odd) >> 1) << 52))


@_scalar
def rsqrt_f64(x):
    """vrsqrt14pd's estimate refined by two Newton steps (xla_cpu_math.rsqrt_float64)."""
    bits = _bits64(x)
    biased = (bits >> 52) & 0x7FF
    if not (bits >= 0 and biased > 0 and biased < 0x7FF):
        if x != x:
            return x
        if biased == 0:
            return math.copysign(math.inf, x)
        return 0.0 if x == math.inf else math.nan
    y = _rsqrt14_estimate(bits, biased)
    for _ in range(2):
        error = _fma(x * y, y, -1.0)
        y = _fma(y * -0.5, error, y)
    return y


# ----------------------------------------------------------------------------
# tan, pow: the C library's
# ----------------------------------------------------------------------------

@_scalar
def tan_f32(x):
    return _libm_tanf(x)


@_scalar
def tan_f64(x):
    return _libm_tan(x)


@_scalar
def pow_f32(x, y):
    return _libm_powf(x, y)


@_scalar
def pow_f64(x, y):
    return _libm_pow(x, y)


@_scalar
def fma_f32(a, b, c):
    return _fma(a, b, c)


@_scalar
def fma_f64(a, b, c):
    return _fma(a, b, c)


# ----------------------------------------------------------------------------
# Threefry-2x32 (kernels/prng.py's _encrypt): integers, exact anywhere; here so
# that a large draw does not spend half its time on 110 NumPy calls a chunk
# ----------------------------------------------------------------------------

_MASK32 = np.uint64(0xFFFFFFFF)
_THIRTY_TWO = np.uint64(32)
_ROTATIONS = np.array([13, 15, 26, 6, 17, 29, 16, 24], np.uint64)


@_inline
def _rotate_left(b, r):
    return ((b << r) & _MASK32) | (b >> (_THIRTY_TWO - r))


@_inline
def _four_rounds(a, b, group):
    """Threefry-2x32's rounds 4 group .. 4 group + 3 (words held in uint64)."""
    for k in range(4):
        a = (a + b) & _MASK32
        b = _rotate_left(b, _ROTATIONS[4 * (group % 2) + k]) ^ a
    return a, b


def threefry_array(x0, x1, injections):
    """Threefry-2x32's 20 rounds on each word pair ``(x0[r, i], x1[r, i])``
    (uint32, in place) after the first key injection, which the counts already
    hold; ``injections[r]``: row r's 12 words of kernels/prng.py's
    ``_injections``. In uint64 arithmetic masked to 32 bits (numba widens
    uint32 sums anyway)."""
    words = injections.astype(np.uint64)
    for row in range(x0.shape[0]):
        for i in range(x0.shape[1]):
            a, b = np.uint64(x0[row, i]), np.uint64(x1[row, i])
            for group in range(5):
                a, b = _four_rounds(a, b, group)
                a = (a + words[row, 2 + 2 * group]) & _MASK32
                b = (b + words[row, 3 + 2 * group]) & _MASK32
            x0[row, i], x1[row, i] = a, b


_KEY_PARITY = np.uint64(0x1BD11BDA)


@_inline
def threefry_pair(k0, k1, x0, x1):
    """Threefry-2x32 of one word pair ``(x0, x1)`` under the key ``(k0, k1)``
    (32-bit words held in uint64): key schedule, injections, 20 rounds."""
    schedule = (k0, k1, k0 ^ k1 ^ _KEY_PARITY)
    a = (x0 + k0) & _MASK32
    b = (x1 + k1) & _MASK32
    for group in range(5):
        a, b = _four_rounds(a, b, group)
        a = (a + schedule[(group + 1) % 3]) & _MASK32
        b = (b + schedule[(group + 2) % 3] + np.uint64(group + 1)) & _MASK32
    return a, b


@_scalar
def threefry_u32(k0, k1, x0, x1):
    """``threefry_pair`` of uint32 scalars, as uint32 (the threefry2x32
    primitive on shape () in the compiled jit backend)."""
    a, b = threefry_pair(np.uint64(k0), np.uint64(k1), np.uint64(x0), np.uint64(x1))
    return np.uint32(a), np.uint32(b)


@_scalar
def threefry_into(k0, k1, x0, x1, y0, y1):
    """The threefry2x32 primitive on arrays of ``y0``'s shape (the operands
    broadcast to it) in the compiled jit backend: results into ``y0``, ``y1``."""
    for idx in np.ndindex(y0.shape):
        y0[idx], y1[idx] = threefry_u32(k0[idx], k1[idx], x0[idx], x1[idx])


def threefry_keyed_array(k0, k1, x0, x1):
    """Threefry-2x32 of each pair ``(x0[i], x1[i])`` under its own key
    ``(k0[i], k1[i])`` (uint32, in place): kernels/prng.py's ``threefry2x32``,
    key schedule and injections included."""
    for i in range(x0.size):
        x0[i], x1[i] = threefry_pair(np.uint64(k0[i]), np.uint64(k1[i]),
                                     np.uint64(x0[i]), np.uint64(x1[i]))


# ----------------------------------------------------------------------------
# random_sample (kernels/prng.py's ``sample``) for the compiled jit backend:
# keys (n, 2) uint32 -> out (n * size,), the same words and the same floats
# ----------------------------------------------------------------------------
# transform codes (fungrad.lax.prng.TRANSFORMS' order)
_BITS, _UNIT, _SIGNED, _NORMAL = 0, 1, 2, 3
_TWO_20 = 2.0**20
_UNIT_SCALE_64, _SIGNED_SCALE_64 = 2.0**-52, 2.0**-51
_LOWEST_64 = np.nextafter(-1.0, 0.0)
_UNIT_SCALE_32 = np.float32(2.0**-23)
_LOWEST_32 = np.nextafter(np.float32(-1.0), np.float32(0.0))
_TWO_32 = np.float32(1.0) - _LOWEST_32      # (rounds to 2)


@_inline
def _block(k0, k1, j, half, words, partitionable):
    """The encrypted block ``j`` of a key's stream of ``words`` words: counts
    ``(j >> 32, j & mask)`` (partitionable) or ``(j, half + j)``, the count past
    the end 0 (the pad of an odd length)."""
    if partitionable:
        return threefry_pair(k0, k1, np.uint64(j) >> _THIRTY_TWO, np.uint64(j) & _MASK32)
    second = np.uint64(half + j) if half + j < words else np.uint64(0)
    return threefry_pair(k0, k1, np.uint64(j) & _MASK32, second & _MASK32)


@_scalar
def sample64(keys, size, transform, partitionable, out):
    """64-bit samples (uint64 bits, float64): sample j of a key is its block
    j's pair ``high:low`` (the original layout's stream has 2 size words)."""
    for r in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[r, 0]), np.uint64(keys[r, 1])
        for j in range(size):
            high, low = _block(k0, k1, j, size, 2 * size, partitionable)
            if transform == _BITS:
                out[r * size + j] = (high << _THIRTY_TWO) | low
                continue
            # (kernels/prng.py's _unit_float64, operation for operation)
            x = np.float64(high) * _TWO_20 + np.float64(low >> np.uint64(12))
            if transform == _UNIT:
                out[r * size + j] = x * _UNIT_SCALE_64
                continue
            u = x * _SIGNED_SCALE_64 + _LOWEST_64
            out[r * size + j] = u if transform == _SIGNED else normal_f64(u)
    return out


@_inline
def _finish32(word, transform):
    """A 32-bit word as the sample of ``transform``: float32 from its top 23
    bits (kernels/prng.py's _unit_narrow, _signed), or the word itself."""
    if transform == _BITS:
        return np.float32(0.0), word
    unit = np.float32(word >> np.uint64(9)) * _UNIT_SCALE_32
    if transform == _UNIT:
        return unit, word
    u = unit * _TWO_32 + _LOWEST_32
    return (u if transform == _SIGNED else normal_f32(u)), word


@_scalar
def sample32(keys, size, transform, partitionable, out):
    """32-bit samples (uint32 bits, float32): partitionable, sample j is the
    xor of block j's pair; original, blocks ``(j, half + j)`` give samples j
    and half + j."""
    half = size if partitionable else (size + 1) // 2
    for r in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[r, 0]), np.uint64(keys[r, 1])
        for j in range(half):
            y0, y1 = _block(k0, k1, j, half, size, partitionable)
            first = y0 ^ y1 if partitionable else y0
            _store32(out, r * size + j, first, transform)
            if not partitionable and half + j < size:
                _store32(out, r * size + half + j, y1, transform)
    return out


@_inline
def _store32(out, i, word, transform):
    value, bits = _finish32(word, transform)
    if transform == _BITS:
        out[i] = bits
    else:
        out[i] = value


# ----------------------------------------------------------------------------
# loop_log: a float32 log loop of its own (short loops end in the C library's)
# ----------------------------------------------------------------------------

@_scalar
def loop_log_f32(x, alone):
    """xla_cpu_math.loop_log of the flat float32 array ``x`` (a new array):
    XLA's polynomial, if ``alone`` the last elements of a short loop by ``logf``."""
    n = x.size
    start = n
    if alone and n < 16 and (n % 8 == 3 or n % 8 == 5 or n % 8 == 6 or n % 8 == 7):
        start = n - n % 8
    out = np.empty(n, np.float32)
    for i in range(n):
        out[i] = log_f32(x[i]) if i < start else _libm_logf(x[i])
    return out
