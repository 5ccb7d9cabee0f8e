"""Record JAX's weak types as test data for tests/test_weak_types.py.

    /work/jaxvenv/bin/python tools/gen_weak_type_table.py   # needs real JAX (0.10.2)

writes tests/data/jax_weak_type_table.json.  For both settings of
``jax_enable_x64`` it records the dtype and ``weak_type`` of

* ``creation``: values made without arguments (``jnp.asarray(3.0)``,
  ``jit(lambda: 2.0)()``, ``jnp.full(3, 2.0)``, ...);
* ``cases``: each expression of ``CASES`` applied to the arguments named
  after it, in four ways: ``eager`` (called), ``jit`` (``jax.jit`` of it),
  ``vmap`` (``jax.vmap`` over a leading axis of 2 of every array argument,
  Python scalars unbatched) and ``grad`` (the aval of the expression's
  value while ``jax.grad`` traces it by its first argument, and the dtype
  and weak type of that gradient);
* ``pairs``: ``a + b``, ``a * b`` and ``a > b`` of every pair of operand
  kinds of ``PAIR_OPERANDS`` (strong arrays, weakly typed arrays and Python
  scalars), eagerly and under jit.

An expression JAX rejects for some arguments is left out (and counted in
``"rejected"``).  The same case table (``CASES``, ``ARGS``,
``PAIR_OPERANDS``, ``CREATION``) is read by the test, which evaluates each
expression with ``jax``/``jnp``/``lax``/``np`` bound to fungrad's modules.
"""
import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import jax.lax as lax
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from weak_type_cases import ARGS, CASES, CREATION, PAIR_OPERANDS, make_arg  # noqa: E402

OUT = (pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"
       / "jax_weak_type_table.json")
NAMESPACE = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def describe(x):
    return [str(x.dtype), bool(x.weak_type)]


def run_modes(fn, argnames):
    """{mode: [dtype, weak] | None (rejected)} of ``fn`` on the named arguments."""
    args = [make_arg(NAMESPACE, n) for n in argnames]
    batched = [make_arg(NAMESPACE, n, batch=2) for n in argnames]
    axes = [None if isinstance(a, (int, float, complex)) else 0 for a in args]
    out = {}
    runs = {"eager": lambda: fn(*args), "jit": lambda: jax.jit(fn)(*args),
            "vmap": lambda: jax.vmap(fn, in_axes=axes)(*batched)}
    for mode, run in runs.items():
        try:
            out[mode] = describe(run())
        except Exception:  # (JAX rejects these arguments: left out)
            out[mode] = None
    first = args[0] if args else None
    if first is not None and jnp.result_type(first).kind in "fc":
        inside = []

        def loss(a, *rest):
            y = fn(a, *rest)
            inside.append(describe(jax.typeof(y)))
            return jnp.sum(y).real
        try:
            out["grad"] = [inside, describe(jax.grad(loss)(*args))]
            out["grad"][0] = out["grad"][0][0]
        except Exception:  # (JAX rejects these arguments: left out)
            out["grad"] = None
    return out


def table(x64: bool):
    jax.config.update("jax_enable_x64", x64)
    creation = {src: describe(eval(src, NAMESPACE)) for src in CREATION}
    cases = {}
    for src, arg_lists in CASES:
        fn = eval(src, NAMESPACE)
        for argnames in arg_lists:
            cases[f"{src} @ {','.join(argnames)}"] = run_modes(fn, argnames)
    pairs = {}
    for op in ("lambda a, b: a + b", "lambda a, b: a * b", "lambda a, b: a > b"):
        fn = eval(op, NAMESPACE)
        for a in PAIR_OPERANDS:
            for b in PAIR_OPERANDS:
                if a.startswith("p") and b.startswith("p"):
                    continue          # two Python scalars: Python's own operation
                x, y = make_arg(NAMESPACE, a), make_arg(NAMESPACE, b)
                pairs[f"{op} @ {a},{b}"] = {"eager": describe(fn(x, y)),
                                            "jit": describe(jax.jit(fn)(x, y))}
    return {"creation": creation, "cases": cases, "pairs": pairs}


def main():
    data = {"jax_version": jax.__version__, "x64": table(True), "x32": table(False)}
    rejected = sum(v is None for mode in ("x64", "x32") for c in data[mode]["cases"].values()
                   for v in c.values())
    data["rejected"] = rejected
    OUT.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {rejected} rejected runs)")


if __name__ == "__main__":
    main()
