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
    """JAX's legacy stream: the counts 0..n-1 (padded to even), halves paired."""
    counts = np.concatenate([np.arange(n), np.zeros(n % 2)]).astype(np.uint32)
    half = counts.size // 2
    y0, y1 = _threefry_ref(key[0], key[1], counts[:half], counts[half:])
    return np.concatenate([y0, y1])[:n]


def _sample_ref(key, shape, dtype, transform):
    dtype, size = np.dtype(dtype), math.prod(shape)
    if dtype.itemsize == 8:
        words = _stream_ref(key, 2 * size).astype(np.uint64)
        high, low = words[:size], words[size:]
        if transform == "bits":
            return ((high << np.uint64(32)) | low).reshape(shape)
        unit = ((high >> np.uint64(5)) * 2.0**26 + (low >> np.uint64(6))) * 2.0**-53
    else:
        words = _stream_ref(key, size)
        if transform == "bits":
            return words.astype(dtype).reshape(shape)
        bits = np.finfo(dtype).nmant + 1
        unit = (words >> np.uint32(32 - bits)) * 2.0**-bits
    signed = 2 * unit - 1 + np.finfo(dtype).epsneg      # -1 + ulp + 2 unit, exactly
    value = {"unit": unit, "signed": signed,
             "normal": math.sqrt(2) * scipy.special.erfinv(signed)}[transform]
    return value.astype(dtype).reshape(shape)


_WORD = dict(dtype="uint32", low=0, high=2**32 - 1, diff=False)
_KEY = Arg((2,), **_WORD)


def _sample_case(shape, dtype, transform, rtol=1e-7):
    dims = "x".join(map(str, shape)) or "scalar"
    return Case(f"lax.random_sample_{transform}_{np.dtype(dtype).name}_{dims}",
                lambda k: prng.random_sample(k, shape, dtype, transform),
                lambda k: _sample_ref(k, shape, dtype, transform), [_KEY],
                prims=("random_sample",), grad_order=0, rtol=rtol, atol=0)


CASES = [
    Case("lax.threefry2x32", lambda *a: prng.threefry2x32(*a), _threefry_ref,
         [Arg("any", **_WORD), Arg("bcast", **_WORD), Arg("bcast", **_WORD),
          Arg("bcast", **_WORD)], prims=("threefry2x32",), grad_order=0),
    _sample_case((7,), np.uint32, "bits"),                # odd count: the pad word
    _sample_case((2, 3), np.uint64, "bits"),
    _sample_case((), np.uint8, "bits"),
    _sample_case((4, 2), np.float64, "unit"),
    _sample_case((5,), np.float32, "unit"),
    _sample_case((3,), np.float64, "signed"),
    _sample_case((2, 3), np.float64, "normal", rtol=1e-14),
    _sample_case((5,), np.float32, "normal", rtol=1e-6),
    _sample_case((0, 3), np.float64, "normal"),
]
