"""``python -m benchmarks.ecosystem [--jax-python PATH] [--steps N]``: the
ecosystem's workloads (issue 21 item 5) on fungrad and on JAX, side by side.

Each workload is a program written for JAX (``benchmarks/flax_loop.py``: a
flax.linen training loop; ``benchmarks/numpyro_nuts.py``: a numpyro NUTS
fit) that prints one JSON line with its time per step, its first call's
time and its losses.  It runs in separate processes (a process holds one
``jax``): with fungrad standing in for JAX (``python -m fungrad run``) on the
NumPy backend, and on the compiled backend when numba is installed (twice,
sharing a fresh disk cache: cold, then warm), and with real JAX when an
interpreter that has JAX and the library is given (``--jax-python``,
default: this interpreter if it can import them).  Both
run on one core (one BLAS thread; the processes pinned to one core, as
benchmarks/run.py pins itself: XLA's threads share it).  The losses must agree (rtol 1e-9) before a
ratio is reported; the table goes to stdout and benchmarks/ecosystem.md.
"""
from __future__ import annotations

import argparse
import json
import os
import importlib.util
import subprocess
import sys
import tempfile

# (the benchmarks' process settings, made before NumPy loads and inherited
# by the programs run below: one BLAS thread, the machine's forced old
# OpenBLAS kernel dropped, the process pinned to one core; see benchmarks/run.py)
from benchmarks import run as _process_settings  # noqa: E402,F401
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "ecosystem.md")

# (title, program, the library it needs)
WORKLOADS = [
    ("flax.linen MLP 64-128-128-10 (Dense, LayerNorm), TrainState + adam, jit step, batch 128",
     os.path.join(HERE, "flax_loop.py"), "flax"),
    ("numpyro NUTS, eight schools (centered), one chain, per iteration (CPU time)",
     os.path.join(HERE, "numpyro_nuts.py"), "numpyro"),
]

ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}


def _run(cmd: list[str], **extra_env) -> dict:
    env = dict(os.environ, **ONE_THREAD, **extra_env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _on_numba(program: str, steps: int) -> tuple[dict, float]:
    """The program on the compiled backend, twice, in fresh processes sharing
    a new disk cache: the first compiles (its first call is the cold one), the
    second loads (its first call is the warm one, and its steps are timed)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {"FUNGRAD_JIT_BACKEND": "numba", "FUNGRAD_NUMBA_CACHE_DIR": cache}
        cmd = [sys.executable, "-m", "fungrad", "run", program, str(steps)]
        cold = _run(cmd, **env)
        warm = _run(cmd, **env)
    return warm, cold["first_seconds"]


def _ms(result) -> str:
    return f"{result['step_seconds'] * 1e3:.2f} ms" if result else "-"


def _row(title, ours, numba, numba_cold, theirs) -> str:
    ratio = (f"{numba['step_seconds'] / theirs['step_seconds']:.2f}x"
             if numba and theirs else "")
    numba_first = f"{numba_cold:.1f}, {numba['first_seconds']:.2f}" if numba else "-"
    jax_first = f"{theirs['first_seconds']:.2f}" if theirs else "-"
    jax_step = _ms(theirs) if theirs else "(JAX not installed)"
    return (f"| {title} | {_ms(ours)} / {_ms(numba)} | {jax_step} | {ratio} "
            f"| {ours['first_seconds']:.2f} / {numba_first} / {jax_first} s |")


def _has_real(python: str, library: str) -> bool:
    probe = f"import jax, {library}; assert 'fungrad' not in type(jax).__module__"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jax-python", default=sys.executable,
                    help="an interpreter with real JAX and the libraries installed")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    rows = ["| workload | fungrad per step (NumPy / numba) | JAX per step | numba / JAX "
            "| first call: NumPy / numba cold, warm / JAX |", "|---|---|---|---|---|"]
    for title, program, library in WORKLOADS:
        ours = _run([sys.executable, "-m", "fungrad", "run", program, str(args.steps)])
        numba, numba_cold = (_on_numba(program, args.steps)
                             if importlib.util.find_spec("numba") else (None, None))
        theirs = None
        if _has_real(args.jax_python, library):
            theirs = _run([args.jax_python, program, str(args.steps)])
        for name, result in (("numba", numba), ("JAX", theirs)):
            if result is not None:
                np.testing.assert_allclose(ours["losses"], result["losses"], rtol=1e-9,
                                           err_msg=f"{title}: fungrad and {name} disagree")
        rows.append(_row(title, ours, numba, numba_cold, theirs))
        print(rows[-1], flush=True)
    text = ("# Ecosystem workloads: fungrad vs JAX\n\n"
            "`python -m benchmarks.ecosystem --jax-python PATH` (one core each: one BLAS "
            "thread, and the processes pinned to one core, which XLA's own threads share; "
            "float64, "
            "best of 5 rounds over the batches, the same losses checked first; numba: "
            "`FUNGRAD_JIT_BACKEND=numba`, first calls cold (empty disk cache) and warm "
            "(a second process), wall seconds). The first call is flax's first training "
            "step, numpyro's first `mcmc.run` of `--steps` iterations (tracing and "
            "compiling included); numpyro's step is CPU time per iteration, a run of "
            "2 x steps minus a run of steps.\n\n"
            + "\n".join(rows) + "\n")
    with open(args.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
