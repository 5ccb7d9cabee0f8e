"""How the first call of ``jit(grad(f))`` grows with the program (issue 17 item 5).

``f`` is a chain of ``n`` elementwise operations on a length-8 vector
(alternately ``cos(x) + 0.5`` and ``sin(x) * 0.999``, then a sum), so its
gradient program has about 2.5 n equations.  For each size this measures
the first call of ``jit(grad(f))`` (trace, optimise, generate and compile
the NumPy source, run) and the eager gradient ``grad(f)(x)``: wall time,
and peak traced memory (tracemalloc, in a second run of a fresh function,
since tracing memory slows the program).  The slope is the least-squares
exponent b of ``time ~ n**b`` over the sizes (1 = linear).

    python -m benchmarks.compile_scaling               # 1k, 10k, 100k
    python -m benchmarks.compile_scaling --sizes 1000,10000,100000,200000
"""
from __future__ import annotations

import argparse
import math
import time
import tracemalloc

import numpy as np

import fungrad
import fungrad.numpy as fnp

DEFAULT_SIZES = (1_000, 10_000, 100_000)


def chain(n: int):
    def f(x):
        for i in range(n // 2):
            x = fnp.sin(x) * 0.999 if i % 2 else fnp.cos(x) + 0.5
        return fnp.sum(x)
    return f


def _measure(make_call):
    """(seconds, peak bytes) of one call of a fresh ``make_call()``."""
    call = make_call()
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    call = make_call()
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak


def measure(n: int) -> dict:
    x = np.linspace(0.1, 1.0, 8)
    jit_s, jit_peak = _measure(lambda: (lambda g=fungrad.jit(fungrad.grad(chain(n))): g(x)))
    eager_s, eager_peak = _measure(lambda: (lambda g=fungrad.grad(chain(n)): g(x)))
    return {"n": n, "jit_s": jit_s, "jit_peak": jit_peak, "eager_s": eager_s,
            "eager_peak": eager_peak}


def slope(rows, key="jit_s") -> float:
    """Least-squares exponent b of ``rows[key] ~ n**b``."""
    xs = [math.log(r["n"]) for r in rows]
    ys = [math.log(r[key]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def rows_for_table(sizes=DEFAULT_SIZES, log=print) -> list:
    """(what, value) rows for benchmarks/results.md's one-shot table."""
    rows = []
    for n in sizes:
        rows.append(measure(n))
        r = rows[-1]
        log(f"    compile scaling n={n}: jit first call {r['jit_s']:.2f} s, "
            f"{r['jit_peak'] / 2**20:.0f} MiB; eager grad {r['eager_s']:.2f} s, "
            f"{r['eager_peak'] / 2**20:.0f} MiB")
    out = [(f"jit(grad(f)) first call, {r['n']:,}-op chain (eager grad(f))",
            f"{r['jit_s']:.2f} s, {r['jit_peak'] / 2**20:.0f} MiB "
            f"({r['eager_s']:.2f} s, {r['eager_peak'] / 2**20:.0f} MiB: "
            f"{r['jit_s'] / r['eager_s']:.1f}x time, {r['jit_peak'] / r['eager_peak']:.1f}x memory)")
           for r in rows]
    if len(rows) > 1:
        sizes_text = ", ".join(f"{r['n']:,}" for r in rows)
        out.append((f"compile scaling: slope of log(first-call time) vs log(ops), "
                    f"{sizes_text} ops (1 = linear)",
                    f"{slope(rows):.2f} (eager grad {slope(rows, 'eager_s'):.2f}; memory "
                    f"{slope(rows, 'jit_peak'):.2f})"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                    help="comma-separated chain lengths (200000 takes minutes)")
    sizes = [int(s) for s in ap.parse_args(argv).sizes.split(",")]
    for what, value in rows_for_table(sizes):
        print(f"| {what} | {value} |")


if __name__ == "__main__":
    main()
