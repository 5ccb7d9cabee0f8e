"""``python -m benchmarks.random_draws``: large draws from ``fungrad.random``
(JAX's numbers bit for bit: with numba, fungrad/lax/xla_cpu_numba.py's kernels)
against NumPy's ``Generator`` (other numbers, the speed to compare with), and
the first call of a draw just over EXACT_SAMPLES in a new process (numba's
import and the kernels' disk-cache load; run once before to fill the cache).

Each figure is the median of ``--repeats`` runs (wall time; on a shared
machine it includes waiting for a core).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

import fungrad
import fungrad.random as random


def _median_seconds(fn, repeats):
    fn()                                     # (compiles, loads, warms the allocator)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workloads(n, gamma_n):
    key, rng = random.PRNGKey(0), np.random.default_rng(0)
    cases = {}
    for dtype in (np.float64, np.float32):
        name = np.dtype(dtype).name
        cases[f"{n:,} {name} normals"] = (lambda d=dtype: random.normal(key, (n,), d),
                                          lambda d=dtype: rng.standard_normal(n, d))
        cases[f"{n:,} {name} uniforms"] = (lambda d=dtype: random.uniform(key, (n,), d),
                                           lambda d=dtype: rng.random(n, d))
    cases[f"{gamma_n:,} float64 gamma(2.5)"] = (lambda: random.gamma(key, 2.5, (gamma_n,)),
                                                lambda: rng.standard_gamma(2.5, gamma_n))
    return cases


_FIRST_CALL = """
import time, fungrad, fungrad.random as random
start = time.perf_counter(); cpu = time.process_time()
random.normal(random.PRNGKey(0), (5000,))
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def first_call(repeats):
    """Median wall and CPU seconds of the first 5000-sample draw in a new process."""
    runs = [subprocess.run([sys.executable, "-c", _FIRST_CALL], check=True, capture_output=True,
                           text=True).stdout.split() for _ in range(repeats)]
    return tuple(statistics.median(float(r[k]) for r in runs) for k in (0, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=25_000_000)
    parser.add_argument("--gamma-size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    fungrad.config.update("jax_enable_x64", True)
    print("| draw | fungrad | numpy Generator | ratio |\n|---|---|---|---|")
    for name, (ours, numpy) in workloads(args.size, args.gamma_size).items():
        t_ours, t_numpy = (_median_seconds(f, args.repeats) for f in (ours, numpy))
        print(f"| {name} | {t_ours:.3f} s | {t_numpy:.3f} s | {t_ours / t_numpy:.2f}x |",
              flush=True)
    wall, cpu = first_call(args.repeats)
    print(f"\nfirst random.normal(key, (5000,)) in a new process: {wall:.3f} s wall, "
          f"{cpu:.3f} s CPU (median of {args.repeats})")


if __name__ == "__main__":
    main()
