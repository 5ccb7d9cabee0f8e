"""Record JAX's type promotion table as test data for tests/test_promotion.py.

    /work/jaxvenv/bin/python tools/gen_promotion_table.py   # needs real JAX (0.10.2)

writes tests/data/jax_promotion_table.json.  For both settings of
``jax_enable_x64`` and every ordered pair of the 15 strong types (bool,
u8-u64, i8-i64, f16/f32/f64, c64/c128) and the three weak ones (``i*``,
``f*``, ``c*``, i.e. Python ints, floats and complexes), it records

* ``result_type``: ``jnp.result_type(a, b)`` and its weak flag, a strong type
  given as a dtype and a weak one as a Python scalar;
* ``add``: dtype and weak flag of ``x + y`` on arrays, eagerly (a weak
  operand is a Python scalar; two weak ones are ``jnp.asarray(1) + 2.0``-style
  weakly typed arrays) and under ``jit`` (the same values as arguments);
* ``strict``: whether ``jax_numpy_dtype_promotion='strict'`` refuses ``x + y``.

``promote_types`` is ``result_type`` of the strong pairs (JAX defines it so),
and is recorded as its own entry so the test checks the function too.
"""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

STRONG = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "float32", "float64", "complex64", "complex128"]
WEAK = {"i*": 1, "f*": 1.0, "c*": 1j}
NAMES = STRONG + list(WEAK)
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "jax_promotion_table.json"


def scalar_operand(name):
    """What result_type takes for a type name: a dtype or a Python scalar."""
    return WEAK[name] if name in WEAK else np.dtype(name)


def array_operand(name):
    """An eager operand of that type: an array, or for weak types a Python scalar."""
    return WEAK[name] if name in WEAK else jnp.ones((2,), np.dtype(name))


def describe(x):
    return [str(x.dtype), bool(x.weak_type)]


def cell(a, b):
    rt, weak = jax.dtypes.result_type(scalar_operand(a), scalar_operand(b),
                                      return_weak_type_flag=True)
    row = {"result_type": [str(rt), bool(weak)]}
    if a not in WEAK and b not in WEAK:
        row["promote_types"] = str(jnp.promote_types(a, b))
    x, y = array_operand(a), array_operand(b)
    if a in WEAK and b in WEAK:
        x = jnp.asarray(x)           # a weakly typed array
    row["add"] = describe(x + y)
    row["add_jit"] = describe(jax.jit(lambda u, v: u + v)(x, y))
    with jax.numpy_dtype_promotion("strict"):
        try:
            x + y
            row["strict_refuses"] = False
        except jax.dtypes.TypePromotionError:   # a ValueError in JAX 0.10.2
            row["strict_refuses"] = True
    return row


def table(x64: bool):
    jax.config.update("jax_enable_x64", x64)
    return {f"{a},{b}": cell(a, b) for a in NAMES for b in NAMES}


def main():
    data = {"jax_version": jax.__version__, "types": NAMES,
            "x64": table(True), "x32": table(False)}
    OUT.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
