"""``python -m benchmarks.ecosystem [--jax-python PATH] [--steps N]``: the
ecosystem's workloads (issue 21 item 5) on fungrad and on JAX, side by side.

Each workload is a program written for JAX (``benchmarks/flax_loop.py``: a
flax.linen training loop; ``benchmarks/numpyro_nuts.py``: a numpyro NUTS fit) that prints one JSON line with its time per step
and its losses.  It runs twice, in separate processes (a process holds one
``jax``): with fungrad standing in for JAX (``python -m fungrad run``), and
with real JAX when an interpreter that has JAX and the library is given
(``--jax-python``, default: this interpreter if it can import them).  Both
run on one thread (BLAS, XLA).  The losses must agree (rtol 1e-9) before a
ratio is reported; the table goes to stdout and benchmarks/ecosystem.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

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


def _run(cmd: list[str]) -> dict:
    env = dict(os.environ, **ONE_THREAD)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    rows = ["| workload | fungrad per step | JAX per step | fungrad / JAX |", "|---|---|---|---|"]
    for title, program, library in WORKLOADS:
        ours = _run([sys.executable, "-m", "fungrad", "run", program, str(args.steps)])
        theirs = None
        if _has_real(args.jax_python, library):
            theirs = _run([args.jax_python, program, str(args.steps)])
            np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-9,
                                       err_msg=f"{title}: fungrad and JAX disagree")
        jax_cell = f"{theirs['step_seconds'] * 1e3:.2f} ms" if theirs else "(JAX not installed)"
        ratio = f"{ours['step_seconds'] / theirs['step_seconds']:.1f}x" if theirs else ""
        rows.append(f"| {title} | {ours['step_seconds'] * 1e3:.2f} ms | {jax_cell} | {ratio} |")
        print(rows[-1], flush=True)
    text = ("# Ecosystem workloads: fungrad vs JAX\n\n"
            "`python -m benchmarks.ecosystem --jax-python PATH` (one thread each, float64, "
            "best of 5 rounds over the batches, the same losses checked first).\n\n"
            + "\n".join(rows) + "\n")
    with open(args.out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
