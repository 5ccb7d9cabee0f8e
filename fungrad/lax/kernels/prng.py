"""The NumPy computation of Threefry-2x32 and of the samples drawn from it
(NumPy-only module).

Shared by the impls of ``threefry2x32_p`` and ``random_sample_p``
(``fungrad.lax.prng``), their ``jit`` lowerings and ``fungrad.export`` (which
copies this module's source into exported code), so it imports nothing but
NumPy.

Speed comes from four things. The 20 rounds run on uint32 arrays in place
(additions wrap mod 2**32, a rotation is two shifts and an or), so a round is
five NumPy calls over a whole array instead of five per element. The arrays
are cut into chunks of ``CHUNK`` blocks that stay in the CPU cache during the
~170 calls of a chunk. A sample is finished inside its chunk (bits to float,
inverse CDF) and written once into the result, so drawing 25 million float64
normals allocates the 200 MB result and a few chunk-sized buffers, not a
dozen full-size temporaries. And every call gets arrays only (constants are
0-d arrays, a single key's chunks are 1-d): NumPy converts a Python or NumPy
scalar, or broadcasts a (1, 1) array, at a cost per call that is a good
fraction of the arithmetic on a chunk.

The streams of a key are JAX's two Threefry layouts. Partitionable
(``jax_threefry_partitionable=True``, JAX's default): sample ``i`` comes from
the block of counts ``(i >> 32, i & 0xFFFFFFFF)``: a 64-bit sample is its
pair ``y0:y1``, a narrower one the low bits of ``y0 ^ y1``.  Original: ``n``
words are the encryption of the counts ``0 .. n-1`` (padded with one 0 to even
length), whose first half and second half form the word pairs of the blocks,
``(j, half + j)`` for ``j < half = ceil(n / 2)``; the first words of the blocks
give words ``0 .. half-1``, the second words the rest.  Samples of 8 bytes
take two words each from a stream of ``2 * size``: sample ``i`` is block
``i``'s pair; 8- and 16-bit samples are packed 4 or 2 to a word, low bits first.
"""
import math

import numpy as np

from fungrad.lax.kernels.special import ErfInvWriter
from fungrad.lax.kernels import xla_cpu_math
from fungrad.lax.kernels.xla_cpu_math import fma, normal_from_signed

__all__ = ["threefry2x32", "sample", "fma", "exact_draw"]   # (and CHUNK, MAX_WORDS, EXACT_SAMPLES)

CHUNK = 1 << 15          # blocks per chunk: 2 x 128 KiB of uint32, in L2
MAX_WORDS = 1 << 32      # one key's stream: the counts are uint32
# Samplers draw JAX's floats bit for bit (XLA's CPU erf_inv, log, ... with
# their fused multiply-adds) in draws of up to this many samples per key by
# xla_cpu_math's NumPy emulation, whose exact float64 fused multiply-adds cost
# ~25 NumPy operations each (4096 float64 normals: ~8 ms); larger draws see
# ``exact_draw``.
EXACT_SAMPLES = 1 << 12


def exact_draw(samples_per_key: int) -> bool:
    """Whether a draw of ``samples_per_key`` samples from each key gets JAX's
    numbers bit for bit: the one place this is decided (the samplers of
    fungrad.random and ``sample`` ask it).

    * Up to EXACT_SAMPLES: always, by the NumPy emulation (numba is not imported).
    * Beyond, when numba can be imported (fungrad's ``numba`` extra): the first
      such draw loads fungrad/lax/xla_cpu_numba.py's compiled kernels (numba's
      import, ~0.4 s, then machine code from the disk cache), which compute the
      same numbers as the emulation 20-100x faster; xla_cpu_math uses them for
      every large array from then on.
    * Beyond, without numba (or in exported code, which is NumPy-only):
      NumPy's functions and, for normals, ErfInvWriter's rational
      approximation: within a few ulps of JAX's (closer to the true values in
      the far tails).

    Per key, so that the numbers depend on the key and the shape only, not on
    a vmap around them."""
    if samples_per_key <= EXACT_SAMPLES:
        return True
    loader = xla_cpu_math.COMPILED_LOADER[0]
    if loader is None or not loader.available():
        return False
    loader.load()     # (if numba fails to load, the emulation computes: still exact)
    return True

# Rotation distances of Threefry-2x32 (Salmon et al. 2011, Table 4); rounds
# use the first group of four, then the second, alternating.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA   # the third key word is k0 ^ k1 ^ this
_U32 = np.dtype(np.uint32)


def _constant(value, dtype):
    """A 0-d array (see the module docstring: cheaper per call than a scalar)."""
    return np.asarray(value, dtype)


def _injections(k0, k1):
    """The 12 words added to (x0, x1): the first key injection, then one pair
    after every four rounds (the key schedule plus the injection number).
    ``k0``/``k1`` are uint32 arrays (0-d, or shaped to broadcast against the data)."""
    k2 = k0 ^ k1 ^ _constant(_KEY_PARITY, _U32)
    schedule = (k0, k1, k2)
    words = [k0, k1]
    for injection in range(1, 6):
        words.append(schedule[injection % 3])
        words.append(schedule[(injection + 1) % 3] + _constant(injection, _U32))
    return [np.asarray(w) for w in words]


_SHIFTS = tuple((_constant(d, _U32), _constant(32 - d, _U32))
                for d in _ROTATIONS[0] + _ROTATIONS[1])


def _encrypt(x0, x1, injections, scratch, injected=False):
    """Threefry-2x32, 20 rounds, in place on the uint32 arrays ``x0``, ``x1``
    (``scratch`` is a uint32 buffer of their shape): 112 NumPy calls, 110 when
    the first key injection is already ``injected`` (see ``_counts``). The
    output array is passed positionally: NumPy parses ``out=`` more slowly."""
    add, xor, left, right, bit_or = (np.add, np.bitwise_xor, np.left_shift, np.right_shift,
                                     np.bitwise_or)
    if not injected:
        add(x0, injections[0], x0)
        add(x1, injections[1], x1)
    for group in range(5):
        for left_by, right_by in _SHIFTS[4 * (group % 2):4 * (group % 2) + 4]:
            add(x0, x1, x0)
            right(x1, right_by, scratch)            # x1 = rotl(x1) ^ x0
            left(x1, left_by, x1)
            bit_or(x1, scratch, x1)
            xor(x1, x0, x1)
        add(x0, injections[2 + 2 * group], x0)
        add(x1, injections[3 + 2 * group], x1)


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 of the word pairs ``(x0, x1)`` under keys ``(k0, k1)``:
    uint32 arrays broadcasting together; returns ``(y0, y1)`` of the broadcast shape."""
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(a, _U32) for a in (k0, k1, x0, x1)))
    shape = x0.shape
    y0, y1 = x0.ravel().copy(), x1.ravel().copy()
    k0, k1 = k0.ravel(), k1.ravel()
    kernels = xla_cpu_math.compiled_kernels(y0.size)      # (once loaded: see exact_draw)
    if kernels is not None and kernels.threefry_keyed(np.ascontiguousarray(k0),
                                                      np.ascontiguousarray(k1), y0, y1):
        return y0.reshape(shape), y1.reshape(shape)
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
    """(rows, first block, last block + 1) tiles of about CHUNK blocks: chunks
    of one key's blocks (``rows`` an int: the tile is 1-d), or several whole
    keys when their streams are short (``rows`` a slice: 2-d)."""
    if blocks == 0:
        return
    if blocks >= CHUNK:
        for row in range(rows):
            for start in range(0, blocks, CHUNK):
                yield row, start, min(blocks, start + CHUNK)
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


def _unit_float64(high, low, out, scale=None, offset=None):
    """JAX's float64 on [0, 1) from a 64-bit word ``high:low``: its top 52 bits
    as the mantissa of a float in [1, 2), minus 1, which is exactly
    ``(high * 2**20 + (low >> 12)) * 2**-52``. With ``scale=2**-51,
    offset=-1 + 2**-53`` it is JAX's ``uniform(lo, 1)`` of normal (``_signed``
    of it, exact as well) in two calls fewer."""
    scale = _UNIT_SCALE if scale is None else scale
    np.right_shift(low, _TWELVE, low)
    np.copyto(out, high)                  # a conversion, then float64-only calls:
    np.multiply(out, _TWO_20, out)        # mixed uint32/float64 calls are slower
    np.add(out, low, out)
    np.multiply(out, scale, out)
    if offset is not None:
        np.add(out, offset, out)
    return out


_TWELVE = _constant(12, _U32)
_TWO_20 = _constant(2.0**20, np.float64)
_UNIT_SCALE = _constant(2.0**-52, np.float64)
_SIGNED_SCALE = _constant(2.0**-51, np.float64)
_LOWEST = _constant(np.nextafter(-1.0, 0.0), np.float64)   # -1 + 2**-53


_NUMPY_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _mantissa_bits(dtype) -> int:
    """``finfo(dtype).nmant``, for ml_dtypes' floats too with NumPy alone (a
    kernel imports nothing else): the spacing of the floats just above 1."""
    if dtype in _NUMPY_FLOATS:
        return int(np.finfo(dtype).nmant)
    one = np.ones((), dtype)
    return int(round(-math.log2(float(np.nextafter(one, one + one)) - 1.0)))


def _stream_bits(dtype) -> int:
    """The width of the random words JAX draws for a float of ``dtype``: its
    own, except 8 for floats of fewer than 8 mantissa bits (bfloat16 draws the
    8-bit stream, as the float8 types do)."""
    nbits = dtype.itemsize * 8
    return nbits if _mantissa_bits(dtype) >= 8 else 8


def _unit_narrow(words, dtype):
    """JAX's float32/float16/bfloat16/float8 on [0, 1): the top ``nmant`` bits
    of the stream's word (the low bits of ``words``) times 2**-nmant, exact."""
    nbits, nmant = _stream_bits(dtype), _mantissa_bits(dtype)
    if words.dtype.itemsize * 8 != nbits:
        words = words.astype(np.dtype(f"u{nbits // 8}"))     # keeps the low bits
    unit = (words >> (nbits - nmant)).astype(np.float32)
    unit *= np.float32(2.0**-nmant)
    return unit.astype(dtype, copy=False)


def _signed(unit, dtype):
    """Uniform on the open (-1, 1): lowest + 2 unit with lowest = -1 + ulp.
    Exact: the results are the odd multiples of the spacing just below 1, all
    representable, so no rounding can reach -1 or 1."""
    lowest = np.nextafter(dtype.type(-1), dtype.type(0))
    unit *= dtype.type(1) - lowest          # 2 (1 - lowest rounds to it)
    unit += lowest
    return unit


def _finish_pairs(transform, dtype, out, erf_inv_writer):
    """``(write(high, low, start, work), finish())`` for samples made of two
    words: sample ``start + i`` of the flat ``out`` from ``high[i]``, ``low[i]``."""
    def bits64(high, low, start, work):
        piece = out[start:start + high.size].reshape(high.shape)
        np.copyto(piece, high, casting="unsafe")
        piece <<= _constant(32, np.uint64)
        piece |= low

    def unit(high, low, start, work):
        _unit_float64(high, low, out[start:start + high.size].reshape(high.shape))

    def signed(high, low, start, work):
        _unit_float64(high, low, out[start:start + high.size].reshape(high.shape),
                      _SIGNED_SCALE, _LOWEST)

    normals = (erf_inv_writer(out, math.sqrt(2)) if transform == "normal" and erf_inv_writer
               else None)

    def normal(high, low, start, work):
        u = _unit_float64(high, low, work.get("u", dtype, high.shape), _SIGNED_SCALE, _LOWEST)
        if normals is None:             # XLA's erf_inv: JAX's normals exactly
            normal_from_signed(u.reshape(-1), out=out[start:start + u.size])
        else:
            normals.write(u, start, overwrite_x=True)

    write = {"bits": bits64, "unit": unit, "signed": signed, "normal": normal}[transform]
    return write, (normals.finish if normals else lambda: None)


def _finish_words(transform, dtype, erf_inv_writer):
    """``write(words, piece)`` for samples made of one word each (``piece``: the
    view of the result they go to)."""
    def bits(words, piece):
        np.copyto(piece, words, casting="unsafe")      # keeps the low bits (uint8/16)

    def unit(words, piece):
        piece[...] = _unit_narrow(words, dtype)

    def signed(words, piece):
        piece[...] = _signed(_unit_narrow(words, dtype), dtype)

    def normal(words, piece):
        u = _signed(_unit_narrow(words, dtype), dtype)
        if erf_inv_writer is None:      # XLA's erf_inv: JAX's normals exactly
            if piece.ndim == 1 and piece.flags.c_contiguous:
                normal_from_signed(u, out=piece)
            else:
                piece[...] = normal_from_signed(u)
            return
        # as erf_inv of a narrow float: computed in float64, rounded back
        u = u.astype(np.float64)
        writer = erf_inv_writer(np.empty(u.size))
        writer.write(u, 0)
        z = writer.finish().reshape(u.shape)
        piece[...] = z.astype(dtype) * dtype.type(math.sqrt(2))

    return {"bits": bits, "unit": unit, "signed": signed, "normal": normal}[transform]


def sample(keys, shape, dtype, transform, partitionable=True, erf_inv_writer=ErfInvWriter):
    """Samples of ``shape`` from every key of ``keys`` (uint32, ``(..., 2)``):
    an array of shape ``keys.shape[:-1] + shape``, JAX's bit for bit.

    ``transform``: "bits" (JAX's ``random_bits`` of the dtype's width), "unit"
    (JAX's ``uniform`` on [0, 1): the top mantissa bits of those bits),
    "signed" (JAX's ``uniform(lo, 1)`` with lo = -1 + ulp, exactly lo + 2 unit)
    or "normal" (sqrt(2) erf_inv(signed): XLA's erf_inv where ``exact_draw``
    says so, else by ``erf_inv_writer(out, scale)``: the special-function
    kernel's ErfInvWriter). ``partitionable`` picks JAX's stream layout
    (``jax_threefry_partitionable``, see the module docstring).
    """
    dtype = np.dtype(dtype)
    keys = np.asarray(keys, _U32)
    batch, size = keys.shape[:-1], math.prod(shape)
    flat_keys = keys.reshape(-1, 2)
    if exact_draw(size):
        erf_inv_writer = None           # per key: vmap changes nothing
    if not partitionable and dtype.itemsize < 4:
        return _packed_narrow(flat_keys, size, dtype, transform, erf_inv_writer).reshape(
            batch + tuple(shape))
    out = np.empty(flat_keys.shape[0] * size, dtype)
    pairs = dtype.itemsize == 8
    blocks = size if (pairs or partitionable) else (size + 1) // 2
    if pairs:
        write, done = _finish_pairs(transform, dtype, out, erf_inv_writer)
    else:
        write, done = _finish_words(transform, dtype, erf_inv_writer), (lambda: None)
        rows_of_out = out.reshape(flat_keys.shape[0], size)
    work = _Workspace()
    injections = {}            # of the last rows: a long stream reuses its key's schedule
    for rows, start, stop in _tiles(flat_keys.shape[0], blocks):
        if isinstance(rows, int):                   # one key: 1-d, its words 0-d
            tile, first_row = (stop - start,), rows
            key_words = flat_keys[rows, 0:1].reshape(()), flat_keys[rows, 1:2].reshape(())
        else:
            tile, first_row = (rows.stop - rows.start, stop - start), rows.start
            key_words = flat_keys[rows, 0:1], flat_keys[rows, 1:2]
        if injections.get("rows") != rows:
            injections = {"rows": rows, "words": _injections(*key_words)}
        x0, x1 = work.get("x0", _U32, tile), work.get("x1", _U32, tile)
        if partitionable:
            _counts_partitionable(x0, x1, start, *key_words)
        else:
            _counts(x0, x1, start, blocks, 2 * blocks if pairs else size, *key_words)
        _encrypt_tile(x0, x1, injections, work)
        if pairs:                                   # a tile is contiguous in the flat result
            write(x0, x1, first_row * size + start, work)
        elif partitionable:                         # a word is the xor of its block's pair
            np.bitwise_xor(x0, x1, x0)
            write(x0, rows_of_out[rows, start:stop])
        else:
            write(x0, rows_of_out[rows, start:stop])
            second = min(stop, size - blocks)          # the pad word of an odd size is dropped
            if second > start:
                write(x1[..., :second - start], rows_of_out[rows, blocks + start:blocks + second])
    done()
    return out.reshape(batch + tuple(shape))


def _encrypt_tile(x0, x1, injections, work):
    """``_encrypt`` of a tile (1-d, or a row per key) whose counts hold the
    first key injection: by xla_cpu_math's compiled kernels once loaded, else
    in NumPy."""
    kernels = xla_cpu_math.compiled_kernels(x0.size)
    if kernels is not None:
        rows = 1 if x0.ndim == 1 else x0.shape[0]
        if "array" not in injections:           # (rows, 12): each key's words
            injections["array"] = np.stack([np.broadcast_to(w, (rows, 1))[:, 0]
                                            for w in injections["words"]], axis=1)
        if kernels.threefry(x0.reshape(rows, -1), x1.reshape(rows, -1), injections["array"]):
            return
    _encrypt(x0, x1, injections["words"], work.get("scratch", _U32, x0.shape), injected=True)


def _packed_narrow(flat_keys, size, dtype, transform, erf_inv_writer):
    """JAX's original (non-partitionable) 8/16-bit stream: 32 / width values
    per word of the 32-bit stream, low bits first; then ``transform``."""
    width = _stream_bits(dtype) if transform != "bits" else dtype.itemsize * 8
    per_word = 32 // width
    words = sample(flat_keys, (-(-size * width // 32),), _U32, "bits", False)
    shifts = (np.arange(per_word, dtype=_U32) * _U32.type(width))
    values = (words[..., None] >> shifts).reshape(flat_keys.shape[0], -1)[:, :size]
    values = values.astype(np.dtype(f"u{width // 8}"))
    if transform == "bits":
        return values.astype(dtype)
    out = np.empty(values.shape, dtype)
    _finish_words(transform, dtype, erf_inv_writer)(values, out)
    return out


def _counts_partitionable(x0, x1, start, k0, k1):
    """The partitionable scheme's blocks ``(i >> 32, i & 0xFFFFFFFF)`` for
    ``i = start, start + 1, ...`` (below 2**32: MAX_WORDS), plus the key words."""
    iota = _iota(x0.shape[-1])
    x0[...] = k0
    np.add(iota, k1 + _constant(start, _U32), out=x1)


_IOTA = np.arange(CHUNK, dtype=_U32)


def _iota(n):
    return _IOTA[:n] if n <= _IOTA.size else np.arange(n, dtype=_U32)


def _counts(x0, x1, start, half, words, k0, k1):
    """Fill ``x0``, ``x1`` (1-d, or one row per key) with the counts of blocks
    ``start, start + 1, ...`` of a stream of ``words`` words, ``(j, half + j)``
    (0 past the end: the pad of an odd length), plus the key words ``k0``,
    ``k1``: the cipher's first key injection, in the same two calls."""
    iota = _iota(x0.shape[-1])
    np.add(iota, k0 + _constant(start, _U32), out=x0)        # uint32: wraps
    np.add(iota, k1 + _constant(half + start, _U32), out=x1)
    if half + start + x0.shape[-1] > words:
        x1[..., words - half - start:] = k1
