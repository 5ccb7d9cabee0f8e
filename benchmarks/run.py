"""``python -m benchmarks [--quick] [--only NAME]``: run every workload, interleaving
implementations, and write benchmarks/results.md (the README quotes it).

Runs with one BLAS thread (set before NumPy loads) so ratios are stable. The
optional peers (benchmarks/peers.py: JAX, and PyTorch installed separately with
exactly ``pip install torch==2.13.0``) are timed too when installed, also on one
thread: XLA_FLAGS below is set before JAX loads, torch.set_num_threads(1), and
the process is pinned to one core (XLA:CPU uses threads of its own anyway).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# These machines set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which force an old
# OpenBLAS kernel (NumPy's matmul ~1.7x slower). The benchmarks measure what a
# user gets, so this process drops them before NumPy (and OpenBLAS) loads;
# tests and CI keep the machine's settings.
DROPPED_BLAS_SETTINGS = {v: os.environ.pop(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                         if v in os.environ}
# XLA rejects unknown --flags fatally; --xla_cpu_multi_thread_eigen=false is the
# one that keeps XLA's CPU matmuls/convolutions on the calling thread.
# "intra_op_parallelism_threads=1" (no dashes) is the commonly quoted companion;
# XLA ignores it, it is kept only so the setting matches the usual recipe.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
# That flag no longer keeps JAX on one core: XLA:CPU (JAX 0.10) runs parts of
# a program on a thread pool of its own (measured: the transformer step used
# 21.6 ms of CPU in 12.3 ms of wall time, the CNN 13.1 in 8.3).  So the
# process, and the programs it starts, are pinned to one core: every peer
# then has the one core that NumPy's single BLAS thread has.
PINNED_CPU = None
if hasattr(os, "sched_setaffinity"):
    PINNED_CPU = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {PINNED_CPU})

import numpy as np  # noqa: E402

from benchmarks.harness import compare, fmt_time  # noqa: E402
from benchmarks import compile_scaling, peers, workloads  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.md")
COMPILE_PLOT = os.path.join(os.path.dirname(RESULTS), "compile_scaling.png")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer rounds (smoke run)")
    ap.add_argument("--only", default=None, help="run workloads whose name contains this")
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--compile-sizes", default=",".join(map(str, compile_scaling.DEFAULT_SIZES)),
                    help="chain lengths of the compile-scaling rows (200000 takes a "
                         "minute or two; the log-log plot goes to benchmarks/compile_scaling.png)")
    args = ap.parse_args(argv)
    rounds, target = (3, 0.02) if args.quick else (9, 0.1)
    print(f"benchmarks: {blas_note()}", file=sys.stderr)
    rows = []
    makers = [m for m in all_workloads() if not args.only or args.only in m.__name__]
    started = time.perf_counter()
    for i, make in enumerate(makers):
        # Building a workload verifies (and for JAX compiles) every peer once.
        print(f"[{i + 1}/{len(makers)}] preparing {make.__name__} "
              f"({time.perf_counter() - started:.0f} s elapsed)", file=sys.stderr)
        title, impls = make()
        print(f"[{i + 1}/{len(makers)}] {title}", file=sys.stderr)
        medians = compare(title, impls, rounds=rounds, target=target)
        base_name = next(iter(impls))
        base = medians[base_name]
        for name, t in medians.items():
            rows.append((title, name, t, t / base))
            print(f"    {name:28s} {fmt_time(t):>12s}  {t / base:7.2f}x", file=sys.stderr)
    sizes = [int(n) for n in args.compile_sizes.split(",")]
    extras = [] if args.only else one_shot_measurements(sizes)
    write_table(rows, args.out, extras)
    print(f"wrote {args.out}", file=sys.stderr)


def all_workloads() -> list:
    """The one-process workloads, and the cluster ones when Dask is installed
    (the ``distributed`` extra): those start a 2-worker LocalCluster."""
    import importlib.util
    if importlib.util.find_spec("distributed") is None:
        return list(workloads.WORKLOADS)
    from benchmarks import cluster_workloads
    return list(workloads.WORKLOADS) + cluster_workloads.WORKLOADS


def one_shot_measurements(compile_sizes=compile_scaling.DEFAULT_SIZES) -> list:
    """Cold-jit times, peak memory and compile scaling, as (what, value) rows."""
    print("[extra] cold jit and peak memory", file=sys.stderr)
    extras = [("fungrad: cold trace + compile + first call of jit(grad(MLP loss))",
               fmt_time(workloads.cold_jit_seconds()))]
    jax_cold = peers.jax_cold_jit_seconds(*workloads.mlp_setup())
    if jax_cold is not None:
        extras.append(("JAX: cold trace + compile + first call of jax.jit(jax.grad(MLP loss))",
                       fmt_time(jax_cold)))
    peaks = workloads.peak_memory_bytes()
    for name, peak in peaks.items():
        extras.append((f"peak memory of MLP loss+grad, {name}",
                       f"{peak / 2**20:.1f} MiB ({peak / peaks['numpy']:.2f}x numpy)"))
    ck = workloads.checkpoint_peak_memory_bytes()
    for name, peak in ck.items():
        base = ck["jit, no checkpoint" if name.startswith("jit") else "no checkpoint"]
        extras.append((f"peak memory of a 100-layer tanh MLP's input gradient, {name}",
                       f"{peak / 2**20:.1f} MiB ({peak / base:.2f}x without checkpoint)"))
    if peers.versions():
        # tracemalloc only sees memory allocated through Python/NumPy's hooks;
        # XLA's and PyTorch's C++ allocators bypass it, so a number would be wrong.
        extras.append((f"peak memory of MLP loss+grad, {' / '.join(peers.versions())}",
                       "not measured (tracemalloc cannot see their allocators)"))
    print("[extra] compile scaling", file=sys.stderr)
    extras += compile_scaling.rows_for_table(compile_sizes, plot=COMPILE_PLOT,
                                             log=lambda line: print(line, file=sys.stderr))
    for what, value in extras:
        print(f"    {what}: {value}", file=sys.stderr)
    return extras


def blas_kernel() -> str:
    """The OpenBLAS kernel NumPy's BLAS chose (its core name), or "unknown"."""
    import ctypes
    import glob
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*.so*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                       "openblas_get_corename"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "unknown"


def blas_note() -> str:
    dropped = ", ".join(f"{k}={v}" for k, v in DROPPED_BLAS_SETTINGS.items())
    return f"OpenBLAS kernel {blas_kernel()}" + (f" (dropped {dropped})" if dropped else "")


def write_table(rows, path, extras=()):
    peer_versions = "".join(f", {name} {v}" for name, v in peers.versions().items())
    lines = [
        "# Benchmark results", "",
        f"Generated by `python -m benchmarks` on {time.strftime('%Y-%m-%d')}, "
        f"Python {platform.python_version()}, NumPy {np.__version__}{_autograd_version()}"
        f"{peer_versions}, {os.cpu_count()} cores, one BLAS thread, {blas_note()} "
        f"(XLA_FLAGS=`{os.environ.get('XLA_FLAGS', '')}`, torch.set_num_threads(1)"
        f"{'' if PINNED_CPU is None else ', the process pinned to one core'}), "
        "float64. Medians of interleaved rounds; "
        "ratio = time / the first (baseline) row of the workload. Peer (JAX, PyTorch) "
        "results were checked against the NumPy baseline before timing; JAX times "
        "include dispatch and `block_until_ready`, and exclude compilation.", "",
        "| workload | implementation | median per call | ratio |",
        "|---|---|---:|---:|",
    ]
    for title, name, t, ratio in rows:
        lines.append(f"| {title} | {name} | {fmt_time(t)} | {ratio:.2f}x |")
    if extras:
        lines += ["", "| one-shot measurement | value |", "|---|---:|"]
        lines += [f"| {what} | {value} |" for what, value in extras]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _autograd_version() -> str:
    try:
        from importlib.metadata import version
        return f", autograd {version('autograd')}"
    except Exception:        # not installed
        return ""


if __name__ == "__main__":
    main()
