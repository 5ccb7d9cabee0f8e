"""Record the weak types of JAX's derivatives as test data for
tests/test_weak_derivatives.py.

    /work/jaxvenv/bin/python tools/gen_weak_derivative_table.py   # needs real JAX (0.10.2)

writes tests/data/jax_weak_derivative_table.json.  For both settings of
``jax_enable_x64``, for every expression of tests/weak_derivative_cases.py's
``CASES`` on each of its argument lists, and for each way of
differentiating in ``WAYS`` (grad, value_and_grad, jvp with tangents
``ones_like`` the primals, vjp with a cotangent ``ones_like`` the output and
with a strongly typed one, linearize, jacfwd, jacrev: all with respect to
the float arguments), it records ``[dtype, weak_type]`` of every leaf of the
result, in tree order (``derivative_types``).  Where JAX rejects a way for
some arguments the entry is ``null`` and nothing is compared.
"""
import json
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import jax.lax as lax
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.weak_derivative_cases import CASES, WAYS, derivative_types, make_arg  # noqa: E402

OUT = ROOT / "tests" / "data" / "jax_weak_derivative_table.json"
NAMESPACE = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def describe(x):
    return [str(x.dtype), bool(jax.typeof(x).weak_type)]


def table(x64: bool):
    jax.config.update("jax_enable_x64", x64)
    cases = {}
    for src, arg_lists in CASES:
        fn = eval(src, NAMESPACE)
        for argnames in arg_lists:
            args = [make_arg(NAMESPACE, n) for n in argnames]
            entry = {}
            for way in WAYS:
                try:
                    entry[way] = derivative_types(NAMESPACE, fn, args, way, describe)
                except Exception:  # (JAX rejects these arguments: left out)
                    entry[way] = None
            cases[f"{src} @ {','.join(argnames)}"] = entry
        jax.clear_caches()      # (JAX's compilation caches grow by gigabytes otherwise)
    return cases


def main():
    if len(sys.argv) > 1:       # one mode, in its own process (memory): print its table
        print(json.dumps(table(sys.argv[1] == "x64")))
        return
    data = {"jax_version": jax.__version__}
    for mode in ("x64", "x32"):
        run = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True,
                             check=True)
        data[mode] = json.loads(run.stdout)
    rejected = sum(v is None for mode in ("x64", "x32") for c in data[mode].values()
                   for v in c.values())
    data["rejected"] = rejected
    OUT.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {rejected} rejected runs)")


if __name__ == "__main__":
    main()
