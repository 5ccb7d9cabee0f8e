"""Record JAX's type promotion for the small dtypes (bfloat16, float8/6/4,
int2/int4/uint2/uint4) as test data for tests/test_small_dtypes.py.

    /work/jaxvenv/bin/python tools/gen_small_dtype_table.py   # needs real JAX (0.10.2)

writes tests/data/jax_small_dtype_promotion.json.  For both settings of
``jax_enable_x64``, and every ordered pair of types of which at least one is
a small dtype (the other: any of the small ones, the 14 types of
tools/gen_promotion_table.py, or a weak ``i*``/``f*``/``c*``), it records what
that tool records (``result_type`` and its weak flag, ``promote_types`` of two
dtypes, ``x + y`` eagerly and under ``jit``, and whether
``jax_numpy_dtype_promotion='strict'`` refuses ``x + y``), except that a cell
JAX refuses in standard promotion (float8 + bfloat16, int4 + int8, ...) holds
``"TypePromotionError"`` in place of a dtype, and the array cells of a type
XLA's CPU backend cannot hold (float6_*) hold ``"unsupported"``.  The small types are the ones
``jax.numpy`` exports (ml_dtypes' types).
"""
import json
import pathlib

import jax
import jax.numpy as jnp

from gen_promotion_table import NAMES as BASE_NAMES, WEAK, describe

SMALL = ["bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
         "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
         "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int2", "int4", "uint2", "uint4"]
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / \
    "jax_small_dtype_promotion.json"
REFUSED = "TypePromotionError"
UNSUPPORTED = "unsupported"    # XLA's CPU backend has no arrays of this type (float6)


def dtype_of(name):
    return jnp.dtype(getattr(jnp, name)) if name in SMALL else jnp.dtype(name)


def scalar_operand(name):
    return WEAK[name] if name in WEAK else dtype_of(name)


def array_operand(name):
    return WEAK[name] if name in WEAK else jnp.ones((2,), dtype_of(name))


def refused_or(fn):
    """``fn()``, or REFUSED where JAX finds no promotion path (UNSUPPORTED
    where XLA cannot make arrays of one of the types)."""
    try:
        return fn()
    except jax.dtypes.TypePromotionError:
        return REFUSED
    except jax.errors.JaxRuntimeError:
        return UNSUPPORTED


def cell(a, b):
    row = {"result_type": refused_or(lambda: [
        str(t) if i == 0 else bool(t) for i, t in enumerate(jax.dtypes.result_type(
            scalar_operand(a), scalar_operand(b), return_weak_type_flag=True))])}
    if a not in WEAK and b not in WEAK:
        row["promote_types"] = refused_or(lambda: str(jnp.promote_types(dtype_of(a),
                                                                        dtype_of(b))))
    try:
        x, y = array_operand(a), array_operand(b)
    except jax.errors.JaxRuntimeError:
        return {**row, "add": UNSUPPORTED, "add_jit": UNSUPPORTED, "strict_refuses": UNSUPPORTED}
    if a in WEAK and b in WEAK:
        x = jnp.asarray(x)
    row["add"] = refused_or(lambda: describe(x + y))
    row["add_jit"] = refused_or(lambda: describe(jax.jit(lambda u, v: u + v)(x, y)))
    with jax.numpy_dtype_promotion("strict"):
        row["strict_refuses"] = refused_or(lambda: x + y) == REFUSED
    return row


def table(x64: bool):
    jax.config.update("jax_enable_x64", x64)
    names = SMALL + BASE_NAMES
    return {f"{a},{b}": cell(a, b) for a in names for b in names
            if a in SMALL or b in SMALL}


def main():
    data = {"jax_version": jax.__version__, "small_types": SMALL, "other_types": BASE_NAMES,
            "x64": table(True), "x32": table(False)}
    OUT.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
