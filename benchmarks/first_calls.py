"""``python -m benchmarks.first_calls``: the first call of each workload's jitted
function in a new process (trace, compile, run), on the NumPy backend and on
the compiled backend (``backend="numba"``) cold (an empty disk cache) and
warm (a second process finding the first one's cache entry), with the time
``import numba`` takes reported apart (a program pays it once).

Each figure is the median of ``--repeats`` processes; cold runs get a new
cache directory each, warm runs share one filled by a cold run.  The warm
run is also given in process CPU time (on a shared machine wall time
includes waiting for a core).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# per workload: setup lines (module-level names of benchmarks.workloads), the
# function to jit and its arguments
WORKLOADS = {
    "hmc": ("X, y, w, p = W.hmc_setup()\n"
            "fn = W.hmc_of(fnp, fungrad.grad, fungrad.lax.fori_loop, X, y)", "(w, p)"),
    "200-op chain": ("x = np.linspace(-1.0, 1.0, 10)\n"
                     "fn = fungrad.value_and_grad(lambda v: W._chain(fnp, v))", "(x,)"),
    "seed value_and_grad": (
        "fn = fungrad.value_and_grad(lambda x: fnp.sqrt(x * x + fnp.exp(x * x))"
        " + fnp.cos(x * x + fnp.exp(x * x)))", "(0.7,)"),
    "RNN scan grad": ("Wm, U, xs = W._rnn_setup()\n"
                      "fn = fungrad.grad(W._rnn_loss, argnums=(0, 1))", "(Wm, U, xs)"),
    "RNN loop grad": ("Wm, U, xs = W._rnn_setup()\n"
                      "fn = fungrad.grad(W._rnn_loop_loss, argnums=(0, 1))", "(Wm, U, xs)"),
    "arm jacfwd": ("theta = np.array([0.3, -0.5, 1.1])\n"
                   "fn = fungrad.jacfwd(W.robot_arm)", "(theta,)"),
    "arm jacrev": ("theta = np.array([0.3, -0.5, 1.1])\n"
                   "fn = fungrad.jacrev(W.robot_arm)", "(theta,)"),
}

_SCRIPT = """
import json, time
t0 = time.perf_counter()
if {numba!r}:
    import numba
t1 = time.perf_counter()
import numpy as np
import fungrad, fungrad.numpy as fnp
from benchmarks import workloads as W
{setup}
args = {args}
t2, c2 = time.perf_counter(), time.process_time()
jax_free = fungrad.jit(fn, backend={backend!r})(*args)
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({{"import_numba": t1 - t0, "first_call": t3 - t2, "first_call_cpu": c3 - c2}}))
"""


def first_call(name: str, backend: str, cache_dir: str) -> dict:
    setup, args = WORKLOADS[name]
    code = _SCRIPT.format(numba=backend == "numba", setup=setup, args=args, backend=backend)
    env = dict(os.environ, FUNGRAD_NUMBA_CACHE_DIR=cache_dir, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{name} ({backend}): {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, repeats: int) -> dict:
    numpy_times, cold, warm, warm_cpu, numba_import = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        shared = os.path.join(tmp, "shared")
        first_call(name, "numba", shared)                 # fills the shared cache
        for k in range(repeats):
            numpy_times.append(first_call(name, "numpy", "")["first_call"])
            cold.append(first_call(name, "numba", os.path.join(tmp, f"cold{k}"))["first_call"])
            run = first_call(name, "numba", shared)
            warm.append(run["first_call"])
            warm_cpu.append(run["first_call_cpu"])
            numba_import.append(run["import_numba"])
    med = statistics.median
    return {"numpy": med(numpy_times), "numba cold": med(cold), "numba warm": med(warm),
            "numba warm cpu": med(warm_cpu), "import numba": med(numba_import)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=None)
    args = ap.parse_args(argv)
    print("| workload | NumPy backend | numba, cold | numba, warm (2nd process): wall / CPU | "
          "`import numba` (paid once, not included) |")
    print("|---|---:|---:|---:|---:|")
    for name in WORKLOADS:
        if args.only and args.only not in name:
            continue
        r = measure(name, args.repeats)
        print(f"| {name} | {r['numpy'] * 1e3:.0f} ms | {r['numba cold'] * 1e3:.0f} ms | "
              f"{r['numba warm'] * 1e3:.0f} / {r['numba warm cpu'] * 1e3:.0f} ms | "
              f"{r['import numba'] * 1e3:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
