"""Cases for the primitives the lead owns: the jit call and the collectives.

Collectives only mean something inside a named vmap, so each case wraps one
(the generic tests then also nest it inside vmap, jvp, vjp and make_jaxpr).
"""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case

RC = ("float64", "complex128")


def _named(f):
    return lambda x: fungrad.vmap(f, axis_name="i")(x)


def _plain_call(prim):
    """``f`` through ``prim`` (closed_call_p: a ClosedJaxpr; call_p: an open
    Jaxpr without constants), as a jaxpr interpreter would bind it."""
    def f(x, y):
        closed = fungrad.make_jaxpr(lambda a, b: fnp.sin(a) * b + fnp.exp(-a))(x, y)
        jaxpr = closed if prim is lax.closed_call_p else closed.jaxpr
        return prim.bind(x, y, call_jaxpr=jaxpr)[0]
    return f


def _mlp_like(x, w):
    return fnp.tanh(x @ w) * fnp.sin(x[..., :1])


CASES = [
    Case("closed_call", _plain_call(lax.closed_call_p), lambda x, y: np.sin(x) * y + np.exp(-x),
         [Arg(dtype=RC), Arg("same", dtype=RC)], prims=("closed_call",)),
    Case("call", _plain_call(lax.call_p), lambda x, y: np.sin(x) * y + np.exp(-x),
         [Arg(), Arg("same")], prims=("call",)),
    Case("jit_elementwise", fungrad.jit(lambda x, y: fnp.sin(x) * y + fnp.exp(-x)),
         lambda x, y: np.sin(x) * y + np.exp(-x), [Arg(dtype=RC), Arg("bcast", RC)],
         prims=("jit",)),
    Case("jit_matmul", fungrad.jit(_mlp_like),
         lambda x, w: np.tanh(x @ w) * np.sin(x[..., :1]),
         [Arg((3, 4), RC, imag=(-0.3, 0.3)), Arg((4, 2), RC, imag=(-0.3, 0.3))],
         prims=("jit",)),
    Case("jit_nested", fungrad.jit(lambda x: fungrad.jit(fnp.cos)(x) * x),
         lambda x: np.cos(x) * x, [Arg(dtype=RC)], prims=("jit",)),
    Case("psum", _named(lambda v: lax.psum(v, "i")),
         lambda x: np.broadcast_to(np.sum(x, axis=0), x.shape), [Arg((4, 3), RC)],
         prims=("psum",)),
    Case("pmean_normalise", _named(lambda v: v - lax.pmean(v, "i")),
         lambda x: x - np.mean(x, axis=0), [Arg((4, 3), RC)], prims=("psum",)),
    Case("pmax", _named(lambda v: lax.pmax(v, "i")),
         lambda x: np.broadcast_to(np.max(x, axis=0), x.shape),
         [Arg((4, 3), unique=True)], prims=("pmax",)),
    Case("pmin", _named(lambda v: lax.pmin(v, "i")),
         lambda x: np.broadcast_to(np.min(x, axis=0), x.shape),
         [Arg((4, 3), unique=True)], prims=("pmin",)),
    Case("all_gather", _named(lambda v: lax.all_gather(v, "i") * 1.0),
         lambda x: np.broadcast_to(x, (x.shape[0],) + x.shape), [Arg((3, 2), RC)],
         prims=("all_gather",)),
    Case("all_gather_tiled", _named(lambda v: lax.all_gather(v, "i", tiled=True)),
         lambda x: np.broadcast_to(x.reshape(-1, *x.shape[2:]), (x.shape[0], x.shape[0] * x.shape[1]) + x.shape[2:]),
         [Arg((3, 2, 2))], prims=("all_gather",)),
    Case("axis_index", _named(lambda v: v * lax.axis_index("i")),
         lambda x: x * np.arange(x.shape[0]).reshape((-1,) + (1,) * (x.ndim - 1)),
         [Arg((4, 2))], prims=("axis_index",)),
]
