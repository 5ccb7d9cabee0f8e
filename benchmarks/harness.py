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


def _status(line: str, previous: str) -> str:
    """Overwrite the previous progress line on stderr; return the new one."""
    sys.stderr.write("\r" + line.ljust(len(previous)))
    sys.stderr.flush()
    return line


def compare(name: str, impls: dict[str, Callable], rounds: int = 7,
            target: float = 0.05, progress=True) -> dict[str, float]:
    """Median seconds per call of each implementation, measured interleaved."""
    shown = ""
    counts = {}
    for k, f in impls.items():
        if progress:
            shown = _status(f"  {name}: calibrating {k}", shown)
        counts[k] = _calls_per_round(f, target)
    samples: dict[str, list[float]] = {k: [] for k in impls}
    for r in range(rounds):
        for k, f in impls.items():
            n = counts[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[k].append((time.perf_counter() - t0) / n)
        if progress:
            shown = _status(f"  {name}: round {r + 1}/{rounds}", shown)
    if progress:
        _status("", shown)
        sys.stderr.write("\r")
    return {k: statistics.median(v) for k, v in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
