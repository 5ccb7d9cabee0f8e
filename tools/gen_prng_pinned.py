"""Rewrite the PINNED table of tests/test_random_values.py with JAX's values.

Run with a real JAX (0.10.2 was used): ``python tools/gen_prng_pinned.py``.
The test's CASES (keys and sampler calls written against ``random``) are
evaluated with ``jax.random`` (x64 on, partitionable Threefry: JAX's
defaults but for x64), and the values at ``pinned_positions`` replace the
table between ``PINNED = {`` and its closing brace.
"""
import os
import re
import warnings

import numpy as np

import jax

warnings.simplefilter("ignore")
jax.config.update("jax_enable_x64", True)

PATH = os.path.join(os.path.dirname(__file__), "..", "tests", "test_random_values.py")


def main():
    text = open(PATH).read()
    cases_src = text[text.index("K0 = random.PRNGKey(0)"):text.index("\nPINNED = {")]
    from types import SimpleNamespace
    from jax._src.random.threefry2x32 import threefry_2x32    # not public in jax.random
    random = SimpleNamespace(**vars(jax.random), threefry_2x32=threefry_2x32)
    namespace = {"np": np, "random": random}
    exec(cases_src, namespace)
    lines = ["PINNED = {"]
    for name, (_, call) in namespace["CASES"].items():
        out = np.asarray(call())
        positions = namespace["pinned_positions"](out.size)
        values = out.ravel()[positions].tolist()
        lines.append(f"    {name!r}: ({tuple(out.shape)!r}, {out.dtype.name!r},")
        lines.append(f"        {positions!r},")
        lines.append(f"        {values!r}),")
    lines.append("}")
    start = text.index("\nPINNED = {") + 1
    end = text.index("\n}\n", start) + 2
    open(PATH, "w").write(text[:start] + "\n".join(lines) + "\n" + text[end:])


if __name__ == "__main__":
    main()
