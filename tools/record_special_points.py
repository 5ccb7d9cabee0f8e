"""Values and derivatives of jax.numpy / jax.scipy.special / jax.nn functions at the
points where implementations part ways (NaN, ±inf, ±0, huge, just outside a
domain), as real JAX computes them: tests/data/jax_special_points.json, read
by tests/test_special_points.py, which computes the same with fungrad.

    /path/to/jax-venv/bin/python tools/record_special_points.py   # JAX 0.10.2, x64

Subnormal inputs are left out: XLA's CPU code flushes them to zero, NumPy
does not (a platform difference, not a function's).
"""
from __future__ import annotations

import json
import math
import os
import sys
import warnings

import numpy as np

UNARY_POINTS = [math.nan, -math.inf, math.inf, 0.0, -0.0, -1.0, 1.0, 0.5, -0.5, 2.0, -2.5,
                1e300, -1e300, 710.0, -745.5, 3.0]
BINARY_POINTS = [math.nan, -math.inf, math.inf, 0.0, -0.0, -1.0, 1.0, 2.5, -2.0]
NUMPY_UNARY = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
               "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10",
               "log1p", "sqrt", "cbrt", "square", "abs", "sign", "floor", "ceil", "round",
               "trunc", "rint", "reciprocal", "negative", "positive", "fabs", "sinc",
               "deg2rad", "rad2deg", "nan_to_num", "i0"]
SPECIAL_UNARY = ["erf", "erfc", "erfinv", "gammaln", "digamma", "expit", "logit", "ndtr",
                 "ndtri", "log_ndtr", "entr", "i0e", "i1", "i1e", "i0", "gamma", "gammasgn",
                 "spence", "expi", "exp1", "erfcx"]
NN_UNARY = ["relu", "relu6", "leaky_relu", "hard_tanh", "sigmoid", "silu", "gelu", "elu", "celu",
            "selu", "softplus", "soft_sign", "log_sigmoid", "hard_sigmoid", "hard_silu",
            "squareplus", "mish", "sparse_plus", "sparse_sigmoid", "tanh"]
BINARY = ["arctan2", "hypot", "power", "float_power", "maximum", "minimum", "fmax", "fmin",
          "copysign", "fmod", "remainder", "floor_divide", "true_divide", "heaviside",
          "logaddexp", "logaddexp2", "divide", "subtract", "add", "multiply", "xlogy",
          "xlog1py"]


def _number(value):
    """A JSON number, "nan", "inf"/"-inf" kept apart from "-0.0", or the
    name of the exception raised."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "-0.0" if v == 0 and math.copysign(1, v) < 0 else v


def _safely(thunk):
    try:
        return _number(thunk())
    except Exception as e:  # noqa: BLE001 (the exception's name is the result)
        return "raises " + type(e).__name__


def compute(jax, jnp, special, nn) -> dict:
    """{"jnp.sin": [values, derivatives], "bin.hypot": [values, d/dx, d/dy], ...}
    with ``jax`` (for grad), ``jnp``, ``special`` and ``nn`` of one framework."""
    out = {}
    f64 = np.float64
    unary = [("jnp." + n, getattr(jnp, n)) for n in NUMPY_UNARY] + \
            [("sp." + n, getattr(special, n)) for n in SPECIAL_UNARY] + \
            [("nn." + n, getattr(nn, n)) for n in NN_UNARY]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name, f in unary:
            out[name] = [[_safely(lambda: f(f64(x))) for x in UNARY_POINTS],
                         [_safely(lambda: jax.grad(f)(f64(x))) for x in UNARY_POINTS]]
        for name in BINARY:
            f = getattr(jnp, name, None) or getattr(special, name)
            pairs = [(f64(x), f64(y)) for x in BINARY_POINTS for y in BINARY_POINTS]
            out["bin." + name] = [[_safely(lambda: f(x, y)) for x, y in pairs],
                                  [_safely(lambda: jax.grad(f, 0)(x, y)) for x, y in pairs],
                                  [_safely(lambda: jax.grad(f, 1)(x, y)) for x, y in pairs]]
    return out


def main():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.nn as nn
    import jax.scipy.special as special
    data = {"made_by": f"tools/record_special_points.py on JAX {jax.__version__} (x64, CPU)",
            "values": compute(jax, jnp, special, nn)}
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "data", "jax_special_points.json")
    with open(path, "w") as fh:
        json.dump(data, fh, indent=0, sort_keys=True)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
