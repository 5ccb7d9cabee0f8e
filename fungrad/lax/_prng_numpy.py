"""The NumPy computation of Threefry-2x32 and of the samples drawn from it
(NumPy-only module).

Shared by the impls of ``threefry2x32_p`` and ``random_sample_p``
(``fungrad.lax.prng``), their ``jit`` lowerings and ``fungrad.export`` (which
copies this module's source into exported code), so it imports nothing but
NumPy.

Speed comes from three things. The 20 rounds run on uint32 arrays in place
(additions wrap mod 2**32, a rotation is two shifts and an or), so a round is
five NumPy calls over a whole array instead of five per element. The arrays
are cut into chunks of ``CHUNK`` blocks that stay in the CPU cache during the
~110 calls of a chunk. And a sample is finished inside its chunk (bits to
float, inverse CDF) and written once into the result, so drawing 25 million
float64 normals allocates the 200 MB result and a few chunk-sized buffers,
not a dozen full-size temporaries.

The stream of a key (JAX's legacy scheme): ``n`` words are the encryption of
the counts ``0 .. n-1`` (padded with one 0 to even length), whose first half
and second half form the word pairs of the blocks, ``(j, half + j)`` for
``j < half = ceil(n / 2)``; the first words of the blocks give words
``0 .. half-1``, the second words the rest.  Samples of 8 bytes take two words
each from a stream of ``2 * size``: sample ``i`` is block ``i``'s pair.
"""
import math

import numpy as np

__all__ = ["threefry2x32", "sample", "CHUNK", "MAX_WORDS"]

CHUNK = 1 << 15          # blocks per chunk: 2 x 128 KiB of uint32, in L2
MAX_WORDS = 1 << 32      # one key's stream: the counts are uint32

# Rotation distances of Threefry-2x32 (Salmon et al. 2011, Table 4); rounds
# use the first group of four, then the second, alternating.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA   # the third key word is k0 ^ k1 ^ this
_U32 = np.dtype(np.uint32)


def _injections(k0, k1):
    """The 12 words added to (x0, x1): the first key injection, then one pair
    after every four rounds (the key schedule plus the injection number).
    ``k0``/``k1`` are uint32 arrays (any shape broadcasting against the data)."""
    k2 = k0 ^ k1 ^ np.uint32(_KEY_PARITY)
    schedule = (k0, k1, k2)
    words = [k0, k1]
    for injection in range(1, 6):
        words.append(schedule[injection % 3])
        words.append(schedule[(injection + 1) % 3] + np.uint32(injection))
    return words


_SHIFTS = tuple((np.uint32(d), np.uint32(32 - d)) for d in _ROTATIONS[0] + _ROTATIONS[1])


def _encrypt(x0, x1, injections, scratch):
    """Threefry-2x32, 20 rounds, in place on the uint32 arrays ``x0``, ``x1``
    (``scratch`` is a uint32 buffer of their shape). Ufuncs with ``out=`` and
    uint32 constants: the ~110 calls per chunk are the whole cost."""
    add, xor = np.add, np.bitwise_xor
    add(x0, injections[0], out=x0)
    add(x1, injections[1], out=x1)
    for group in range(5):
        for left, right in _SHIFTS[4 * (group % 2):4 * (group % 2) + 4]:
            add(x0, x1, out=x0)
            np.right_shift(x1, right, out=scratch)      # x1 = rotl(x1) ^ x0
            np.left_shift(x1, left, out=x1)
            np.bitwise_or(x1, scratch, out=x1)
            xor(x1, x0, out=x1)
        add(x0, injections[2 + 2 * group], out=x0)
        add(x1, injections[3 + 2 * group], out=x1)


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 of the word pairs ``(x0, x1)`` under keys ``(k0, k1)``:
    uint32 arrays broadcasting together; returns ``(y0, y1)`` of the broadcast shape."""
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(a, _U32) for a in (k0, k1, x0, x1)))
    shape = x0.shape
    y0, y1 = x0.ravel().copy(), x1.ravel().copy()
    k0, k1 = k0.ravel(), k1.ravel()
    scratch = np.empty(min(y0.size, CHUNK), _U32)
    for start in range(0, y0.size, CHUNK):
        block = slice(start, start + CHUNK)
        x0c = y0[block]
        _encrypt(x0c, y1[block], _injections(k0[block], k1[block]), scratch[:x0c.size])
    return y0.reshape(shape), y1.reshape(shape)


# ----------------------------------------------------------------------------
# samples: a stream per key, finished chunk by chunk
# ----------------------------------------------------------------------------

def _tiles(rows, blocks):
    """(row slice, first block, last block + 1) tiles of about CHUNK blocks:
    chunks of one key's blocks, or several whole keys when their streams are short."""
    if blocks == 0:
        return
    if blocks >= CHUNK:
        for row in range(rows):
            for start in range(0, blocks, CHUNK):
                yield slice(row, row + 1), start, min(blocks, start + CHUNK)
    else:
        per_tile = max(1, CHUNK // blocks)
        for row in range(0, rows, per_tile):
            yield slice(row, min(rows, row + per_tile)), 0, blocks


class _Workspace:
    """Chunk-sized buffers, allocated at the first (largest) tile and reused:
    fresh large allocations would cost page faults on every chunk."""

    def __init__(self):
        self._buffers = {}

    def get(self, name, dtype, shape):
        size = math.prod(shape)
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(size, dtype)
        return buffer[:size].reshape(shape)


def _unit_float64(high, low, out, scale=2.0**-53, offset=None):
    """53 random bits as a float64 on [0, 1): k = (high >> 5) * 2**26 + (low >> 6)
    (27 + 26 bits, as NumPy's Mersenne Twister) times 2**-53. Exact; with
    ``scale=2**-52, offset=lowest`` it is ``_signed`` of that in two calls fewer."""
    high >>= 5
    low >>= 6
    np.multiply(high, 2.0**26, out=out)
    out += low
    out *= scale
    if offset is not None:
        out += offset
    return out


def _unit_narrow(words, dtype):
    """float32/float16 on [0, 1): the top 24 / 11 bits of a word, scaled in float32."""
    kept_bits = np.finfo(dtype).nmant + 1
    unit = (words >> (32 - kept_bits)).astype(np.float32)
    unit *= np.float32(2.0**-kept_bits)
    return unit.astype(dtype, copy=False)


def _signed(unit, dtype):
    """Uniform on the open (-1, 1): lowest + 2 unit with lowest = -1 + ulp.
    Exact: the results are the odd multiples of the spacing just below 1, all
    representable, so no rounding can reach -1 or 1."""
    lowest = np.nextafter(dtype.type(-1), dtype.type(0))
    unit *= dtype.type(1) - lowest          # 2 (1 - lowest rounds to it)
    unit += lowest
    return unit


def _finish_pairs(transform, dtype, erf_inv_into):
    """``write(high, low, out, work)`` for samples made of two words."""
    def bits64(high, low, out, work):
        np.copyto(out, high, casting="unsafe")
        out <<= np.uint64(32)
        out |= low

    def unit(high, low, out, work):
        _unit_float64(high, low, out)

    lowest = np.nextafter(-1.0, 0.0)

    def signed(high, low, out, work):
        _unit_float64(high, low, out, 2.0**-52, lowest)

    def normal(high, low, out, work):
        u = _unit_float64(high, low, work.get("u", dtype, out.shape), 2.0**-52, lowest)
        erf_inv_into(u, out, math.sqrt(2), (work.get("r", dtype, out.shape),
                                            work.get("d", dtype, out.shape)))

    return {"bits": bits64, "unit": unit, "signed": signed, "normal": normal}[transform]


def _finish_words(transform, dtype, erf_inv_into):
    """``write(words, out, work)`` for samples made of one word each."""
    def bits(words, out, work):
        np.copyto(out, words, casting="unsafe")      # keeps the low bits (uint8/16)

    def unit(words, out, work):
        out[...] = _unit_narrow(words, dtype)

    def signed(words, out, work):
        out[...] = _signed(_unit_narrow(words, dtype), dtype)

    def normal(words, out, work):
        # as erf_inv of a narrow float: computed in float64, rounded back
        u = _signed(_unit_narrow(words, dtype), dtype).astype(np.float64)
        z = erf_inv_into(u, np.empty(u.shape), 1.0)
        out[...] = z.astype(dtype) * dtype.type(math.sqrt(2))

    return {"bits": bits, "unit": unit, "signed": signed, "normal": normal}[transform]


def sample(keys, shape, dtype, transform, erf_inv_into=None):
    """Samples of ``shape`` from every key of ``keys`` (uint32, ``(..., 2)``):
    an array of shape ``keys.shape[:-1] + shape``.

    ``transform``: "bits" (the stream's words; uint64 joins a pair, high word
    first), "unit" (floats on [0, 1), every value a multiple of 2**-53 for
    float64, of 2**-24 / 2**-11 for float32 / float16), "signed" (on the open
    interval (-1, 1): -1 + ulp + 2 unit) or "normal" (sqrt(2) erf_inv(signed),
    with ``erf_inv_into(x, out, scale, work)`` writing ``scale * erf_inv(x)``).
    """
    dtype = np.dtype(dtype)
    keys = np.asarray(keys, _U32)
    batch, size = keys.shape[:-1], math.prod(shape)
    flat_keys = keys.reshape(-1, 2)
    out = np.empty((flat_keys.shape[0], size), dtype)
    pairs = dtype.itemsize == 8
    half = size if pairs else (size + 1) // 2
    finish = _finish_pairs if pairs else _finish_words
    write = finish(transform, dtype, erf_inv_into)
    work = _Workspace()
    for rows, start, stop in _tiles(flat_keys.shape[0], half):
        tile = (rows.stop - rows.start, stop - start)
        x0, x1 = work.get("x0", _U32, tile), work.get("x1", _U32, tile)
        _counts(x0, x1, start, half, 2 * half if pairs else size)
        _encrypt(x0, x1, _injections(flat_keys[rows, :1], flat_keys[rows, 1:]),
                 work.get("scratch", _U32, tile))
        if pairs:
            write(x0, x1, out[rows, start:stop], work)
        else:
            write(x0, out[rows, start:stop], work)
            second = min(stop, size - half)          # the pad word of an odd size is dropped
            if second > start:
                write(x1[:, :second - start], out[rows, half + start:half + second], work)
    return out.reshape(batch + tuple(shape))


def _counts(x0, x1, start, half, words):
    """Fill ``x0``, ``x1`` (one row per key) with the counts of blocks
    ``start, start + 1, ...`` of a stream of ``words`` words: ``(j, half + j)``,
    0 past the end (the pad of an odd length)."""
    x0[...] = np.arange(start, start + x0.shape[1], dtype=_U32)
    np.add(x0, np.uint32(half), out=x1)
    if half + start + x0.shape[1] > words:
        x1[:, words - half - start:] = 0
