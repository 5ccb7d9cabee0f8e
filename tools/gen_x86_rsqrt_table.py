"""Print the table of this CPU's float32 reciprocal-square-root estimate
(``vrsqrtps``/``vrsqrtss``), encoded for fungrad/lax/kernels/xla_cpu_math.py.

Why: XLA's CPU code computes float32 ``rsqrt`` (and JAX's ``c / sqrt(x)``,
which XLA rewrites to ``c * rsqrt(x)``: Marsaglia-Tsang's constant in
``jax.random.gamma``) as the SSE/AVX estimate ``y = rsqrt_estimate(x)`` refined
by one Newton step. The estimate is implementation-defined (only its error,
below 1.5 * 2**-12, is specified), and it differs between Intel and AMD CPUs;
no vendor publishes it. So it is measured: this script compiles a small C
program (needs gcc and an x86-64 CPU with AVX), runs the instruction on every
float32 in [1, 4), and checks what xla_cpu_math relies on: the estimate of a
positive normal x = m 2**e depends only on the parity of e and the top 12
mantissa bits of m, and is ``table[e & 1][top12] * 2**-(e >> 1)`` with a
13-bit significand; the 8192 entries fall by 0, 1 or 2 of their last places
from one to the next (from 1.0 down to 0.5), which packs them into 2 bits each.

It also derives the float64 estimate's coefficients (AVX-512's ``vrsqrt14pd``,
needs AVX-512): on each of the 32 segments of [1, 2) and of [2, 4) the estimate
of the significand cut to 15 fraction bits is ``(c - s d (x - centre)) 2**-19``
(s = 256 or 128) truncated to 16 fraction bits; for every segment the script
finds the only integers (d, c) that give the CPU's outputs on all its 1024
inputs, which are ``_RSQRT14_EVEN`` / ``_RSQRT14_ODD``.

Run: ``python tools/gen_x86_rsqrt_table.py`` (plain NumPy, no JAX). It prints
the CPU's name, the base64 string that is ``_RSQRT_ESTIMATE_STEPS`` and the
(d, c) pairs. The
table in xla_cpu_math was measured on an "AMD EPYC" (Zen 4, AVX-512) CPU, the
one tests/data/prng_reference.json was recorded on with JAX 0.10.2.
"""
import base64
import os
import subprocess
import sys
import tempfile

import numpy as np

PROBE = r"""
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    for (uint32_t i = 0; i < (1u << 24); i += 8) {
        uint32_t in[8], out[8];
        for (int j = 0; j < 8; j++) {
            uint32_t k = i + j;
            in[j] = ((127u + (k >> 23)) << 23) | (k & 0x7FFFFFu);   /* [1, 2) then [2, 4) */
        }
        __m256 v, r;
        memcpy(&v, in, 32);
        r = _mm256_rsqrt_ps(v);
        memcpy(out, &r, 32);
        fwrite(out, 4, 8, stdout);
    }
    return 0;
}
"""


PROBE14 = r"""
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(void) {           /* every float64 in [1, 4) with 15 fraction bits */
    for (uint64_t k = 0; k < (1u << 16); k += 2) {
        uint64_t in[2], out[2];
        for (int j = 0; j < 2; j++)
            in[j] = ((1023ull + ((k + j) >> 15)) << 52) | (((k + j) & 0x7FFFull) << 37);
        __m128d v, r;
        memcpy(&v, in, 16);
        r = _mm_rsqrt14_pd(v);
        memcpy(out, &r, 16);
        fwrite(out, 8, 2, stdout);
    }
    return 0;
}
"""


def _run_c(program, flags, dtype):
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(source, "w") as f:
            f.write(program)
        subprocess.run(["gcc", "-O2", *flags, source, "-o", binary], check=True)
        return np.frombuffer(subprocess.run([binary], capture_output=True, check=True).stdout,
                             dtype)


def fit_rsqrt14():
    """(d, c) per segment, even exponents then odd, from the CPU's vrsqrt14pd."""
    out = _run_c(PROBE14, ["-mavx512f", "-mavx512vl"], np.uint64).view(np.float64)
    tables = []
    for odd in (0, 1):
        x = (1 + np.arange(1 << 15) * 2.0**-15) * (1 + odd)
        pairs = []
        for segment in range(32):
            inputs = slice(segment * 1024, (segment + 1) * 1024)
            centre = 2 + 1 / 32 + segment / 16 if odd else 1 + 1 / 64 + segment / 32
            scale = 128 if odd else 256
            units = out[odd * (1 << 15):][inputs] * 2.0**19
            offset = x[inputs] - centre
            if not odd and segment == 0:           # x = 1 exactly gives 1.0
                units, offset = units[1:], offset[1:]
            step = np.where(units < 2.0**19, 4.0, 8.0)       # the cut, in units of 2**-19
            found = []
            for d in range(100, 1500):
                shifted = units + scale * d * offset
                low, high = shifted.max(), (shifted + step).min()
                if np.ceil(low) < high:
                    found.append((d, int(np.ceil(low))))
            assert len(found) == 1, (odd, segment, found[:3])
            pairs.append(found[0])
        tables.append(pairs)
    return tables


def measure():
    """The estimate's bits for every float32 in [1, 4), by the C probe."""
    return _run_c(PROBE, ["-mavx"], np.uint32)


def encode(estimates):
    """The packed steps, after checking the structure xla_cpu_math assumes."""
    by_top12 = estimates.reshape(2 * 4096, 2048)
    assert (by_top12 == by_top12[:, :1]).all(), "the estimate depends on more than 12 bits"
    table = by_top12[:, 0]
    assert not (table & 0x7FF).any(), "the estimate has more than 13 significant bits"
    places = np.concatenate([[0x3F800000 >> 11], table >> 11]).astype(np.int64)
    steps = -np.diff(places)
    assert set(np.unique(steps)) <= {0, 1, 2} and places[-1] == 0x3F000000 >> 11
    packed = (steps.reshape(-1, 4) << np.array([0, 2, 4, 6])).sum(axis=1).astype(np.uint8)
    return base64.b64encode(packed.tobytes()).decode()


def main():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown CPU")
    print("#", cpu, file=sys.stderr)
    text = encode(measure())
    print("\n".join(text[i:i + 88] for i in range(0, len(text), 88)))
    even, odd = fit_rsqrt14()
    print("_RSQRT14_EVEN =", tuple(even))
    print("_RSQRT14_ODD =", tuple(odd))


if __name__ == "__main__":
    main()
