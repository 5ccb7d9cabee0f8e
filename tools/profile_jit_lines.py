"""Time each line of a jitted function's generated NumPy code (a developer's
tool: where does a `jit` step spend its time, and how far is it from the
floor of its BLAS and kernel calls?).

    python tools/profile_jit_lines.py cnn            # the CNN training step
    python tools/profile_jit_lines.py transformer    # the transformer block
    python tools/profile_jit_lines.py transformer --numba   # its numba driver

Each statement of the generated function is timed on its own (CPU time, the
minimum over the repeats: the least disturbed run of every line, so the sum
is a floor the whole call can approach, not its median), and the lines are
printed by cost with their share.  The process is set up as `python -m
benchmarks` sets up its own (one BLAS thread; see benchmarks/run.py).  Only the NumPy backend's straight-line
code is instrumented (statements at the top level of the generated ``fn``);
under the numba backend (``--numba``) its driver is, each compiled segment
timed as one line.
"""
from __future__ import annotations

import ast
import sys
import time

if __name__ == "__main__":
    # the benchmarks' process settings (one BLAS thread, the machine's forced
    # old BLAS kernel dropped), made by benchmarks.run before NumPy loads; only
    # when run as a program (tests import this module and keep their settings)
    import benchmarks.run  # noqa: F401
import numpy as np

import fungrad
from fungrad import jitting


def _instrumented(fn, source: str):
    """``fn``'s source with each top-level statement of its body timed into
    ``_line_times[k]`` (compiled in ``fn``'s own globals)."""
    tree = ast.parse(source)
    # the NumPy backend's source is the one function; the numba backend's ends
    # with its driver ``fn``, whose segment calls are timed as lines
    func = next(node for node in tree.body if isinstance(node, ast.FunctionDef)
                and node.name == fn.__name__)
    tree.body = [func]
    body, texts = [], []
    for k, stmt in enumerate(func.body):
        texts.append(ast.unparse(stmt))
        start = ast.parse(f"_t0 = _clock()").body[0]
        stop = ast.parse(f"_line_times[{k}] = min(_line_times[{k}], _clock() - _t0)").body[0]
        if isinstance(stmt, ast.Return):
            body += [start, ast.parse(f"_r = {ast.unparse(stmt.value)}").body[0], stop,
                     ast.parse("return _r").body[0]]
        else:
            body += [start, stmt, stop]
    func.body = body
    namespace = dict(fn.__globals__)
    namespace.update(_clock=time.process_time, _line_times=[float("inf")] * len(texts))
    exec(compile(ast.fix_missing_locations(tree), "<profiled>", "exec"), namespace)
    return namespace[func.name], namespace["_line_times"], texts


# What a line's time is spent in: BLAS (GEMMs, and the convolutions, which are
# GEMMs over window views), the window kernels (pooling and its gradient), or
# the rest (elementwise NumPy calls, reductions, reshapes).
_KINDS = (("GEMM and convolution", ("np.matmul", "np.dot", "_conv.", "np.einsum",
                                    "np.tensordot")),
          ("windows (pooling)", ("_window.",)))


def _kind(text: str) -> str:
    for kind, markers in _KINDS:
        if any(m in text for m in markers):
            return kind
    return "elementwise and other"


def profile(jitted, *args, repeats: int = 40, top: int = 25):
    """Print the ``top`` most expensive lines of ``jitted``'s generated code for
    ``args`` and the sum of all lines' minima against the whole call's; return
    ``{line text: minimum seconds}``."""
    jitted(*args)
    entry, leaves = jitted._entry(args, {})
    source = jitted.lower(*args).source()
    if not hasattr(entry.fn, "__globals__") or f"def {entry.fn.__name__}(" not in source:
        raise ValueError("profile_jit_lines: this function's compiled code is not a "
                         "generated Python function (the NumPy backend's, or the numba "
                         "backend's driver); nothing to instrument")
    fn, line_times, texts = _instrumented(entry.fn, source)
    call_args = [*entry.consts, *jitting.compiled_code_arguments(leaves, True)]
    whole = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn(*call_args)
        whole.append(time.process_time() - t0)
    plain = []
    for _ in range(repeats):
        t0 = time.process_time()
        entry.fn(*entry.consts, *jitting.compiled_code_arguments(leaves, True))
        plain.append(time.process_time() - t0)
    total = sum(line_times)
    print(f"call (uninstrumented): min {1e3 * min(plain):.2f} ms, "
          f"median {1e3 * float(np.median(plain)):.2f} ms; "
          f"sum of per-line minima {1e3 * total:.2f} ms")
    shares = {}
    for k, text in enumerate(texts):
        kind = _kind(text)
        shares[kind] = shares.get(kind, 0.0) + line_times[k]
    print("by kind: " + ", ".join(f"{kind} {1e3 * t:.2f} ms ({100 * t / total:.0f}%)"
                                  for kind, t in sorted(shares.items(), key=lambda kv: -kv[1])))
    order = sorted(range(len(texts)), key=lambda k: -line_times[k])
    for k in order[:top]:
        text = texts[k] if len(texts[k]) < 110 else texts[k][:107] + "..."
        print(f"{1e3 * line_times[k]:8.3f} ms {100 * line_times[k] / total:5.1f}%  {text}")
    return dict(zip(texts, line_times))


def _cnn(backend=None):
    from benchmarks import model_workloads as M
    params, x, onehot = M.cnn_setup()
    loss = lambda p: M._cnn_loss(fungrad.numpy, fungrad.lax, fungrad.lax.stop_gradient,
                                 p, x, onehot)
    return fungrad.jit(fungrad.value_and_grad(loss), backend=backend), (params,)


def _transformer(backend=None):
    from benchmarks import model_workloads as M
    params, x, target = M.transformer_setup()
    loss = lambda p: M._transformer_loss(fungrad.numpy, fungrad.lax.stop_gradient,
                                         p, x, target)
    return fungrad.jit(fungrad.value_and_grad(loss), backend=backend), (params,)


WORKLOADS = {"cnn": _cnn, "transformer": _transformer}

if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    name = names[0] if names else "cnn"
    if name not in WORKLOADS:
        raise SystemExit(f"profile_jit_lines: unknown workload {name!r}; "
                         f"choose one of {sorted(WORKLOADS)}")
    jitted, arguments = WORKLOADS[name]("numba" if "--numba" in sys.argv else None)
    profile(jitted, *arguments)
