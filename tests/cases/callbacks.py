"""Cases for the callback primitives (fungrad/lax/callbacks.py): debug callbacks
and checks observe values without changing them (so every transform applies);
pure_callback computes with NumPy (no derivative, as in JAX; vmap by its
vmap_method)."""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad import checkify, debug
from tests.harness import Arg, Case


def _observed(x):
    seen = []
    debug.callback(lambda v: seen.append(v.shape), x)
    return fnp.sin(x) * 2.0


def _checked(x):
    checkify.check(fnp.all(x < 100.0), "x too large: {}", x)
    return fnp.cos(x) + x


def _pure(fn, vmap_method):
    def f(*args):
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        dtype = np.result_type(*(a.dtype for a in args))
        return fungrad.pure_callback(fn, fungrad.ShapeDtypeStruct(shape, dtype), *args,
                                     vmap_method=vmap_method)
    return f


def _io(x):
    from fungrad.experimental import io_callback
    return io_callback(np.sin, fungrad.ShapeDtypeStruct(x.shape, x.dtype), x) * 2.0


CASES = [
    Case("io_callback", _io, lambda x: np.sin(x) * 2.0, [Arg()], prims=("io_callback",),
         grad_order=0),
    Case("debug_callback_observes", _observed, lambda x: np.sin(x) * 2.0, [Arg()],
         prims=("debug_callback",)),
    Case("check_passing", _checked, lambda x: np.cos(x) + x, [Arg()], prims=("check",)),
    Case("pure_callback_sequential", _pure(np.sin, "sequential"), np.sin, [Arg()],
         prims=("pure_callback",), grad_order=0),
    Case("pure_callback_expand_dims", _pure(np.add, "expand_dims"), np.add,
         [Arg(), Arg("same")], prims=("pure_callback",), grad_order=0),
    Case("pure_callback_broadcast_all", _pure(np.multiply, "broadcast_all"), np.multiply,
         [Arg(), Arg("same")], prims=("pure_callback",), grad_order=0),
    Case("pure_callback_legacy_vectorized", _pure(np.exp, "legacy_vectorized"), np.exp,
         [Arg()], prims=("pure_callback",), grad_order=0),
]
