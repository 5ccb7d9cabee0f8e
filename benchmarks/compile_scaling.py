"""How the first call of ``jit(grad(f))`` grows with the program (issue 17 item 5).

``f`` is a chain of ``n`` elementwise operations on a length-8 vector
(alternately ``cos(x) + 0.5`` and ``sin(x) * 0.999``, then a sum), so its
gradient program has about 2.5 n equations.  For each size this measures
the first call of ``jit(grad(f))`` (trace, optimise, generate and compile
the NumPy source, run) and the eager gradient ``grad(f)(x)``: wall time and
the growth of the peak resident memory, each in a fresh process (tracemalloc
would slow a 100k-op compile by an order of magnitude).  The slope is the least-squares
exponent b of ``time ~ n**b`` over the sizes (1 = linear).

    python -m benchmarks.compile_scaling               # 1k, 10k, 100k, 200k
    python -m benchmarks.compile_scaling --sizes 1000,10000 --plot scaling.png
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import fungrad
import fungrad.numpy as fnp

DEFAULT_SIZES = (1_000, 10_000, 100_000, 200_000)


def chain(n: int):
    def f(x):
        for i in range(n // 2):
            x = fnp.sin(x) * 0.999 if i % 2 else fnp.cos(x) + 0.5
        return fnp.sum(x)
    return f


def _child(n: int, kind: str):
    """In a fresh process: one call, then print its wall and CPU seconds and the
    peak RSS growth (CPU time too: on a loaded machine the wall time of the two
    processes measures the load as much as the work)."""
    x = fnp.asarray(np.linspace(0.1, 1.0, 8))    # a fungrad Array, as users pass
    g = fungrad.grad(chain(n))
    g = fungrad.jit(g) if kind == "jit" else g
    before = _peak_rss_bytes()
    start, cpu_start = time.perf_counter(), time.process_time()
    g(x)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(seconds, _peak_rss_bytes() - before, cpu)


def _peak_rss_bytes() -> int:
    """This process's peak resident memory: VmHWM, which starts afresh at exec
    (getrusage's ru_maxrss does not on Linux: a child of a large benchmark
    process inherits its peak and would report no growth)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024    # (bytes there, KiB elsewhere)


def _measure(n: int, kind: str):
    """(seconds, peak resident-memory growth in bytes, CPU seconds) of the first call, each
    size and kind in its own process (no caches, no tracing of allocations)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"from benchmarks.compile_scaling import _child; _child({n}, {kind!r})"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]), float(out[2])


def measure(n: int) -> dict:
    jit_s, jit_peak, jit_cpu = _measure(n, "jit")
    eager_s, eager_peak, eager_cpu = _measure(n, "eager")
    # (at least a byte: a size whose peak grew by nothing still has a log)
    return {"n": n, "jit_s": jit_s, "jit_peak": max(jit_peak, 1), "eager_s": eager_s,
            "eager_peak": max(eager_peak, 1), "jit_cpu": jit_cpu, "eager_cpu": eager_cpu}


def slope(rows, key="jit_s") -> float:
    """Least-squares exponent b of ``rows[key] ~ n**b``."""
    xs = [math.log(r["n"]) for r in rows]
    ys = [math.log(r[key]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def rows_for_table(sizes=DEFAULT_SIZES, log=print, plot=None) -> list:
    """(what, value) rows for benchmarks/results.md's one-shot table; with
    ``plot`` (a .png path) and matplotlib installed, also the log-log plot."""
    rows = []
    for n in sizes:
        rows.append(measure(n))
        r = rows[-1]
        log(f"    compile scaling n={n}: jit first call {r['jit_s']:.2f} s, "
            f"{r['jit_peak'] / 2**20:.0f} MiB; eager grad {r['eager_s']:.2f} s, "
            f"{r['eager_peak'] / 2**20:.0f} MiB; CPU {r['jit_cpu']:.2f} / {r['eager_cpu']:.2f} s")
    out = [(f"jit(grad(f)) first call, {r['n']:,}-op chain (eager grad(f))",
            f"{r['jit_s']:.2f} s, {r['jit_peak'] / 2**20:.0f} MiB "
            f"({r['eager_s']:.2f} s, {r['eager_peak'] / 2**20:.0f} MiB: "
            f"{r['jit_s'] / r['eager_s']:.1f}x time, {r['jit_peak'] / r['eager_peak']:.1f}x memory; "
            f"CPU {r['jit_cpu']:.2f} s against {r['eager_cpu']:.2f} s: "
            f"{r['jit_cpu'] / r['eager_cpu']:.1f}x)")
           for r in rows]
    if plot and len(rows) > 1:
        write_plot(rows, plot, log)
    if len(rows) > 1:
        sizes_text = ", ".join(f"{r['n']:,}" for r in rows)
        out.append((f"compile scaling: slope of log(first-call time) vs log(ops), "
                    f"{sizes_text} ops (1 = linear)",
                    f"{slope(rows):.2f} (eager grad {slope(rows, 'eager_s'):.2f}; memory "
                    f"{slope(rows, 'jit_peak'):.2f})"))
    return out


def write_plot(rows, path, log=print):
    """First-call time and peak memory of jit(grad(f)) and eager grad(f)
    against the program size, log-log, with a slope-1 guide line."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(f"    (matplotlib not installed: no plot written to {path})")
        return
    ns = [r["n"] for r in rows]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, keys, unit, scale in ((ax_t, ("_s", "_cpu"), "seconds", 1),
                                  (ax_m, ("_peak",), "MiB", 2**20)):
        for key in keys:
            for kind, label in (("jit", "jit(grad(f)) first call"), ("eager", "eager grad(f)")):
                ys = [r[kind + key] / scale for r in rows]
                style = "o-" if key != "_cpu" else "s--"
                label = label + (", CPU" if key == "_cpu" else "")
                ax.loglog(ns, ys, style, label=f"{label} (slope {slope(rows, kind + key):.2f})")
        key = keys[0]
        first = rows[0]["jit" + key] / scale
        ax.loglog(ns, [first * n / ns[0] for n in ns], ":", color="gray", label="slope 1")
        ax.set_xlabel("operations in f")
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    ax_t.set_title("time (wall; CPU dashed)", fontsize=9)
    ax_m.set_title("peak resident memory growth", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    log(f"    wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                    help="comma-separated chain lengths (200000 takes minutes)")
    ap.add_argument("--plot", default=None, help="also write a log-log plot to this .png")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    for what, value in rows_for_table(sizes, plot=args.plot):
        print(f"| {what} | {value} |")


if __name__ == "__main__":
    main()
