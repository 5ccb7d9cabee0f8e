"""Cases for the random-number primitives (fungrad.lax.prng): threefry2x32 and
random_sample in each of its transforms, against a reference written the slow
way (the cipher in uint64 arithmetic with masks, one NumPy op per step, and
the transforms' formulas on its whole stream)."""
import math

import numpy as np
import scipy.special

from fungrad.lax import prng
from tests.harness import Arg, Case

_M = np.uint64(0xFFFFFFFF)
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _threefry_ref(k0, k1, x0, x1):
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(a).astype(np.uint64) for a in (k0, k1, x0, x1)))
    schedule = (k0, k1, k0 ^ k1 ^ np.uint64(0x1BD11BDA))
    x0, x1 = (x0 + k0) & _M, (x1 + k1) & _M
    for group in range(5):
        for r in _ROTATIONS[4 * (group % 2):4 * (group % 2) + 4]:
            x0 = (x0 + x1) & _M
            x1 = (((x1 << np.uint64(r)) | (x1 >> np.uint64(32 - r))) & _M) ^ x0
        x0 = (x0 + schedule[(group + 1) % 3]) & _M
        x1 = (x1 + schedule[(group + 2) % 3] + np.uint64(group + 1)) & _M
    return [x0.astype(np.uint32), x1.astype(np.uint32)]


def _stream_ref(key, n):
    """JAX's original stream: the counts 0..n-1 (padded to even), halves paired."""
    counts = np.concatenate([np.arange(n), np.zeros(n % 2)]).astype(np.uint32)
    half = counts.size // 2
    y0, y1 = _threefry_ref(key[0], key[1], counts[:half], counts[half:])
    return np.concatenate([y0, y1])[:n]


def _words_ref(key, size, width, partitionable):
    """JAX's random bits of ``width`` (as uint64): ``(high, low)`` words for 64."""
    if partitionable:       # block (0, i) for sample i
        y0, y1 = (w.astype(np.uint64) for w in _threefry_ref(
            key[0], key[1], np.zeros(size, np.uint32), np.arange(size, dtype=np.uint32)))
        return (y0, y1) if width == 64 else (y0 ^ y1) & np.uint64(2**width - 1)
    if width == 64:
        words = _stream_ref(key, 2 * size).astype(np.uint64)
        return words[:size], words[size:]
    per = 32 // width                               # narrow values packed, low bits first
    stream = _stream_ref(key, -(-size * width // 32)).astype(np.uint64)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(width)
    return ((stream[:, None] >> shifts) & np.uint64(2**width - 1)).ravel()[:size]


def _sample_ref(key, shape, dtype, transform, partitionable=True):
    dtype, size = np.dtype(dtype), math.prod(shape)
    width = 8 * dtype.itemsize
    words = _words_ref(key, size, width, partitionable)
    if width == 64:
        high, low = words
        if transform == "bits":
            return ((high << np.uint64(32)) | low).reshape(shape)
        unit = (high * 2.0**20 + (low >> np.uint64(12))) * 2.0**-52     # top 52 bits
    else:
        if transform == "bits":
            return words.astype(dtype).reshape(shape)
        nmant = np.finfo(dtype).nmant
        unit = (words >> np.uint64(width - nmant)) * 2.0**-nmant
    signed = 2 * unit - 1 + np.finfo(dtype).epsneg      # -1 + ulp + 2 unit, exactly
    value = {"unit": unit, "signed": signed,
             "normal": math.sqrt(2) * scipy.special.erfinv(signed)}[transform]
    return value.astype(dtype).reshape(shape)


def _fma_ref(a, b, c):
    """a * b + c rounded once: exact rational arithmetic, then one rounding."""
    from fractions import Fraction
    exact = np.vectorize(lambda x, y, z: float(Fraction(x) * Fraction(y) + Fraction(z)),
                         otypes=[np.float64])
    return exact(a, b, c)


_WORD = dict(dtype="uint32", low=0, high=2**32 - 1, diff=False)
_KEY = Arg((2,), **_WORD)


def _sample_case(shape, dtype, transform, rtol=1e-7, partitionable=True):
    dims = "x".join(map(str, shape)) or "scalar"
    layout = "" if partitionable else "_original"
    return Case(f"lax.random_sample_{transform}_{np.dtype(dtype).name}_{dims}{layout}",
                lambda k: prng.random_sample(k, shape, dtype, transform, partitionable),
                lambda k: _sample_ref(k, shape, dtype, transform, partitionable), [_KEY],
                prims=("random_sample",), grad_order=0, rtol=rtol, atol=0)


CASES = [
    Case("lax.threefry2x32", lambda *a: prng.threefry2x32(*a), _threefry_ref,
         [Arg("any", **_WORD), Arg("bcast", **_WORD), Arg("bcast", **_WORD),
          Arg("bcast", **_WORD)], prims=("threefry2x32",), grad_order=0),
    # bit for bit: the emulated fused multiply-add against exact arithmetic
    Case("lax.random_fma", lambda a, b, c: prng.random_fma(a, b, c), _fma_ref,
         [Arg("any", low=-1e3, high=1e3), Arg("bcast", dtype="same"),
          Arg("bcast", dtype="same")], prims=("random_fma",), rtol=0, atol=0,
         np_fun=False),        # NumPy has no fused multiply-add to spell it with
    # XLA's CPU transcendental functions (bit for bit: tests/test_xla_cpu_math.py);
    # here their values against NumPy/SciPy, derivatives, batching and jit
    *[Case(f"lax.random_{name}", fun, ref, [Arg(dtype=("float32", "float64"), low=low, high=high)],
           prims=(f"random_{name}",), rtol=2e-6, np_fun=False)
      for name, fun, ref, low, high in [
          ("log", prng.random_log, np.log, 0.1, 5.0),
          ("log1p", prng.random_log1p, np.log1p, -0.8, 3.0),
          ("exp", prng.random_exp, np.exp, -5.0, 5.0),
          ("erf", prng.random_erf, scipy.special.erf, -3.0, 3.0),
          ("erf_inv", prng.random_erf_inv, scipy.special.erfinv, -0.9, 0.9),
          ("tan", prng.random_tan, np.tan, -1.2, 1.2),
          ("loop_log", prng.random_loop_log, np.log, 0.1, 5.0),
          ("rsqrt", prng.random_rsqrt, lambda x: 1 / np.sqrt(x), 0.3, 40.0)]],
    Case("lax.random_pow", prng.random_pow, np.power,
         [Arg(dtype=("float32", "float64"), low=0.2, high=3.0), Arg("bcast", dtype="same")],
         prims=("random_pow",), rtol=2e-6, np_fun=False),
    _sample_case((7,), np.uint32, "bits"),                # odd count: the pad word
    _sample_case((2, 3), np.uint64, "bits"),
    _sample_case((), np.uint8, "bits"),
    _sample_case((4, 2), np.float64, "unit"),
    _sample_case((5,), np.float32, "unit"),
    _sample_case((3,), np.float64, "signed"),
    _sample_case((2, 3), np.float64, "normal", rtol=1e-14),
    _sample_case((5,), np.float32, "normal", rtol=1e-6),
    _sample_case((0, 3), np.float64, "normal"),
    _sample_case((7,), np.uint32, "bits", partitionable=False),
    _sample_case((2, 3), np.uint64, "bits", partitionable=False),
    _sample_case((5,), np.uint8, "bits", partitionable=False),
    _sample_case((3,), np.uint16, "bits", partitionable=False),
    _sample_case((3,), np.float16, "unit", partitionable=False),
    _sample_case((4,), np.float16, "unit"),
    _sample_case((2, 3), np.float64, "normal", rtol=1e-14, partitionable=False),
]
