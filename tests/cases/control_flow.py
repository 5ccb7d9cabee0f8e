"""Cases for cond/switch: the generic tests check eager vs NumPy, staged, jit,
derivatives (orders 1-2, fwd and rev) and vmap (batched predicates too)."""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case


def _cond_scalar(p, x):
    return lax.cond(p > 0, lambda v: fnp.sin(v) * v, lambda v: v ** 3, x)


def _switch3(i, x, y):
    return lax.switch(i, [lambda a, b: a * b, lambda a, b: fnp.exp(a) - b,
                          lambda a, b: fnp.tanh(a + b)], x, y)


def _switch3_ref(i, x, y):
    k = int(np.clip(i, 0, 2))
    return [x * y, np.exp(x) - y, np.tanh(x + y)][k]


def _cond_pytree(p, x, y):
    out = lax.cond(p > 0, lambda d: {"s": d["x"] * 2.0, "t": (d["y"], d["x"] + d["y"])},
                   lambda d: {"s": -d["x"], "t": (d["y"] * d["y"], d["x"])},
                   {"x": x, "y": y})
    return out["s"] + out["t"][0] + out["t"][1]


def _cond_pytree_ref(p, x, y):
    return (x * 2.0 + y + (x + y)) if p > 0 else (-x + y * y + x)


CASES = [
    Case("cond_scalar_pred", _cond_scalar,
         lambda p, x: np.sin(x) * x if p > 0 else x ** 3,
         [Arg((), low=-1, high=1, avoid=(0.0,), diff=False), Arg("any")], prims=("cond",)),
    Case("switch_three_branches", _switch3, _switch3_ref,
         [Arg((), dtype="int64", low=-1, high=3, diff=False), Arg("any"), Arg("same")],
         prims=("cond",)),
    Case("cond_pytree_operands", _cond_pytree, _cond_pytree_ref,
         [Arg((), low=-1, high=1, avoid=(0.0,), diff=False), Arg("vec"), Arg("same")],
         prims=("cond",)),
]
