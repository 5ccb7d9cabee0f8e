"""Run JAX's own tutorials and notebooks cell by cell, on JAX or on fungrad,
and compare the outcomes: how much of JAX's documentation runs unmodified.

    # each notebook in a fresh process; the outcome of every code cell as JSON
    python tools/run_jax_docs.py run DOCS_DIR --out fungrad.json          # via the import hook
    /path/to/jax-venv/bin/python tools/run_jax_docs.py run DOCS_DIR --out jax.json --real-jax
    python tools/run_jax_docs.py compare jax.json fungrad.json

DOCS_DIR is the ``docs`` directory of a JAX checkout (``git archive HEAD docs``
of jax-ml/jax); notebooks are read from their MyST ``.md`` form. A cell's
outcome is ``ok`` or the exception's type and first line. ``compare`` judges
a cell as JAX's documentation does: where JAX runs a cell, fungrad must run it
too; where JAX raises (the tutorials show errors on purpose), fungrad must
raise as well. Printed values are not compared (fungrad computes in float64 by
default, JAX's tutorials in float32).

IPython syntax is interpreted minimally: ``%timeit stmt`` and ``%%timeit``
cells run their statement once, other ``%``/``!`` lines are skipped (no
``pip install`` runs), and the last expression of a cell is evaluated like
any other statement.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import signal
import subprocess
import sys
import time

# The tutorials (jax-101 and the getting-started pages) and the notebooks the
# docs link from their guides; pages needing accelerators, multiple processes,
# a network or third-party data sets are left out (listed in EXCLUDED with why).
PAGES = [
    "notebooks/thinking_in_jax", "notebooks/Common_Gotchas_in_JAX", "key-concepts",
    "jit-compilation", "automatic-vectorization", "automatic-differentiation", "pytrees",
    "random-numbers", "control-flow", "tracing", "stateful-computations",
    "notebooks/autodiff_cookbook", "notebooks/autodiff_remat",
    "notebooks/Custom_derivative_rules_for_Python_code",
    "notebooks/Writing_custom_interpreters_in_Jax", "notebooks/convolutions",
    "notebooks/vmapped_log_probs", "custom_pytrees", "debugging", "external-callbacks",
    "gradient-checkpointing", "jax-primitives", "jaxpr",
    "complex-differentiation", "higher-order", "jacobian-vector-products",
]
EXCLUDED = {
    "notebooks/Neural_Network_and_Data_Loading": "downloads MNIST through torchvision",
    "notebooks/neural_network_with_tfds_data": "needs tensorflow_datasets and a download",
    "notebooks/host-offloading": "moves arrays to pinned host memory of an accelerator; on "
                                 "JAX's CPU backend it takes gigabytes and minutes",
    "notebooks/colocated-python": "needs colocated Python workers (a TPU/GPU deployment)",
    "ffi": "compiles a C++ extension against XLA's FFI headers",
}

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.S | re.M)
CELL_TIMEOUT = 300


def code_cells(md_text: str) -> list[str]:
    """The code cells of a MyST notebook, without their option header."""
    cells = []
    for body in _CELL.findall(md_text):
        lines = body.split("\n")
        if lines and lines[0].strip() == "---":          # a YAML options block
            end = lines.index("---", 1) if "---" in lines[1:] else 0
            lines = lines[end + 1:]
        while lines and lines[0].startswith(":"):         # ``:tags: [...]`` options
            lines = lines[1:]
        cells.append("\n".join(lines))
    return cells


def strip_ipython(cell: str) -> str:
    """Python source for a cell written for IPython (see the module docstring)."""
    lines = cell.split("\n")
    if lines and lines[0].startswith("%%"):
        return "\n".join(lines[1:]) if lines[0].startswith("%%timeit") else ""
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith("%timeit") or stripped.startswith("%time "):
            stmt = stripped.split(None, 1)[1] if " " in stripped else "pass"
            stmt = re.sub(r"^(-\w+(\s+\d+)?\s+)+", "", stmt)     # %timeit -n 10 -r 3 f()
            out.append(indent + stmt)
        elif stripped.startswith(("%", "!")):
            out.append(indent + "pass")
        else:
            out.append(line)
    return "\n".join(out)


class CellTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CellTimeout(f"cell ran past {CELL_TIMEOUT} s")


def run_page(path: str) -> list[dict]:
    """Execute every code cell of one page in one namespace (this process)."""
    import matplotlib
    matplotlib.use("Agg")
    namespace = {"__name__": "__main__"}
    outcomes = []
    signal.signal(signal.SIGALRM, _on_alarm)
    with open(path) as f:
        cells = code_cells(f.read())
    for index, cell in enumerate(cells):
        source = strip_ipython(cell)
        start = time.perf_counter()
        signal.alarm(CELL_TIMEOUT)
        try:
            exec(compile(ast.parse(source), f"<{os.path.basename(path)} cell {index}>", "exec"),
                 namespace)
            outcome = {"status": "ok"}
        except BaseException as e:          # noqa: BLE001  (SystemExit, KeyboardInterrupt too)
            if isinstance(e, KeyboardInterrupt):
                raise
            first = (str(e).strip().split("\n") or [""])[0][:300]
            outcome = {"status": "error", "type": type(e).__name__, "message": first}
        finally:
            signal.alarm(0)
        outcome.update(cell=index, seconds=round(time.perf_counter() - start, 3),
                       source=cell[:200])
        outcomes.append(outcome)
    return outcomes


def run_all(docs: str, real_jax: bool, pages: list[str]) -> dict:
    """Each page in a fresh interpreter (this one), with fungrad's hook unless real_jax."""
    env = dict(os.environ)
    if not real_jax:
        hook = subprocess.check_output([sys.executable, "-m", "fungrad", "jax-path"], text=True)
        env["PYTHONPATH"] = hook.strip() + os.pathsep + env.get("PYTHONPATH", "")
    results = {}
    for page in pages:
        path = os.path.join(docs, page + ".md")
        if not os.path.exists(path):
            results[page] = {"missing": True}
            continue
        proc = subprocess.run([sys.executable, __file__, "page", path], env=env,
                              capture_output=True, text=True, cwd=docs)
        try:
            results[page] = json.loads(proc.stdout.strip().split("\n")[-1])
        except (ValueError, IndexError):
            results[page] = {"crashed": proc.stderr[-2000:]}
        print(f"{page}: {summary_line(results[page])}", file=sys.stderr, flush=True)
    return results


def summary_line(result) -> str:
    if not isinstance(result, list):
        return "missing" if result.get("missing") else "crashed"
    ok = sum(c["status"] == "ok" for c in result)
    return f"{ok}/{len(result)} cells ran"


def compare(jax_results: dict, fungrad_results: dict) -> tuple[int, int, list]:
    """(judged, passed, failures): see the module docstring for the judgement."""
    judged = passed = 0
    failures = []
    for page, jax_cells in jax_results.items():
        mine = fungrad_results.get(page)
        if not isinstance(jax_cells, list):
            continue
        for k, want in enumerate(jax_cells):
            judged += 1
            got = mine[k] if isinstance(mine, list) and k < len(mine) else None
            if got is not None and (got["status"] == "ok") == (want["status"] == "ok"):
                passed += 1
            else:
                failures.append((page, k, want, got))
    return judged, passed, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("docs")
    run.add_argument("--out", required=True)
    run.add_argument("--real-jax", action="store_true")
    run.add_argument("--pages", nargs="*", default=PAGES)
    page = sub.add_parser("page")
    page.add_argument("path")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("jax_json")
    cmp_.add_argument("fungrad_json")
    args = parser.parse_args(argv)
    if args.command == "page":
        print(json.dumps(run_page(args.path)))
    elif args.command == "run":
        with open(args.out, "w") as f:
            json.dump(run_all(os.path.abspath(args.docs), args.real_jax, args.pages), f, indent=1)
    else:
        with open(args.jax_json) as f, open(args.fungrad_json) as g:
            judged, passed, failures = compare(json.load(f), json.load(g))
        for page, k, want, got in failures:
            print(f"{page} cell {k}: JAX {want.get('type', 'ok')}, fungrad "
                  f"{'missing' if got is None else got.get('type', 'ok')}: "
                  f"{(got or {}).get('message', want.get('message', ''))}\n    "
                  f"{want['source'][:120]!r}")
        print(f"{passed} of {judged} cells judged as JAX's")


if __name__ == "__main__":
    main()
