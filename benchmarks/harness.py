"""Side-by-side timing: implementations of one workload are interleaved round by
round (so machine noise hits them alike) and summarised by their medians."""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable


def _calls_per_round(fn: Callable, target: float) -> int:
    fn()                                    # warm up (and first-call costs)
    n, elapsed = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= target or n >= 1 << 20:
            return n
        n = max(n * 2, int(n * target / max(elapsed, 1e-9)))


def compare(name: str, impls: dict[str, Callable], rounds: int = 7,
            target: float = 0.05, progress=True) -> dict[str, float]:
    """Median seconds per call of each implementation, measured interleaved."""
    counts = {k: _calls_per_round(f, target) for k, f in impls.items()}
    samples: dict[str, list[float]] = {k: [] for k in impls}
    for r in range(rounds):
        for k, f in impls.items():
            n = counts[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[k].append((time.perf_counter() - t0) / n)
        if progress:
            sys.stderr.write(f"\r  {name}: round {r + 1}/{rounds}")
            sys.stderr.flush()
    if progress:
        sys.stderr.write("\r" + " " * 60 + "\r")
    return {k: statistics.median(v) for k, v in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
