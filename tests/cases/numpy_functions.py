"""Cases for the jax.numpy functions of issue 13: gradient, unwrap, piecewise,
place, put, kaiser, i0, sort_complex, frompyfunc's ufuncs, and the bit
functions (packbits, unpackbits, bitwise_count, spacing).  Composed
functions: prims=() unless a primitive is the point."""
import numpy as np

import fungrad.numpy as fnp
from tests.harness import Arg, Case

RC = ("float64", "complex128")
F32_64 = ("float64", "float32")


def _coordinates(rng, shape, dtype):
    """Increasing sample coordinates with steps in [0.5, 1.5]."""
    return np.cumsum(rng.uniform(0.5, 1.5, shape), axis=-1).astype(dtype)


def _wrapped_phases(rng, shape, dtype):
    """A phase with steps of at most 2.5 rad, wrapped into (-pi, pi]: every step of
    the wrapped samples is at least 0.6 rad away from the discontinuity pi."""
    phase = np.cumsum(rng.uniform(-2.5, 2.5, shape), axis=-1)
    return np.angle(np.exp(1j * phase)).astype(dtype)


MASK = np.array([[True, False, True], [False, True, True]])
FLAT = np.array([4, -1, 0])


def _place_ref(a, mask, vals):
    out = a.copy()
    np.place(out, mask, vals)
    return out


def _put_ref(a, ind, v, mode="raise"):
    out = a.copy()
    np.put(out, ind, v, mode=mode)
    return out


def _mul_add(a, b):
    return a * b + a


_MUL_ADD = fnp.frompyfunc(_mul_add, 2, 1)


def _fold_ref(x, axis):
    moved = np.moveaxis(x, axis, 0)
    acc = moved[0]
    for row in moved[1:]:
        acc = acc * row + acc
    return acc


def _accumulate_ref(x):
    out = [x[0]]
    for v in x[1:]:
        out.append(out[-1] * v + out[-1])
    return np.stack(out)


def _at_ref(x, idx, b):
    out = x.copy()
    for i, v in zip(idx, np.broadcast_to(b, np.shape(idx))):
        out[i] = out[i] * v + out[i]
    return out


AT_INDEX = np.array([0, 2, 0, 3])

GRADIENT = [
    Case("numpy.gradient", fnp.gradient, np.gradient, [Arg((6,))]),
    Case("numpy.gradient_2d_spacing", lambda f: fnp.gradient(f, 0.5, 2.0),
         lambda f: list(np.gradient(f, 0.5, 2.0)), [Arg((3, 4))]),
    Case("numpy.gradient_coordinates", lambda f, x: fnp.gradient(f, x, axis=1),
         lambda f, x: np.gradient(f, x, axis=1), [Arg((2, 5)), Arg((5,), make=_coordinates)]),
    Case("numpy.gradient_edge_order_2", lambda f, x: fnp.gradient(f, x, edge_order=2),
         lambda f, x: np.gradient(f, x, edge_order=2), [Arg((5,)), Arg((5,), make=_coordinates)]),
    Case("numpy.gradient_uniform_edge_order_2", lambda f: fnp.gradient(f, 0.3, edge_order=2),
         lambda f: list(np.gradient(f, 0.3, edge_order=2)), [Arg((3, 4), RC)]),
    Case("numpy.unwrap", fnp.unwrap, np.unwrap, [Arg((2, 7), make=_wrapped_phases)]),
    Case("numpy.unwrap_period", lambda p: fnp.unwrap(p, axis=0, period=4.0),
         lambda p: np.unwrap(p, axis=0, period=4.0),
         [Arg((6, 2), make=lambda rng, s, d: np.mod(np.cumsum(rng.uniform(-1.5, 1.5, s), 0)
                                                     + 2, 4) - 2)]),
]

SELECTION = [
    Case("numpy.piecewise", lambda x: fnp.piecewise(
        x, [x < -1, x > 1], [lambda v: fnp.sin(v), lambda v: v * v, 0.5]),
        lambda x: np.piecewise(x, [x < -1, x > 1], [np.sin, lambda v: v * v, 0.5]),
        [Arg(avoid=(-1.0, 1.0))]),
    Case("numpy.piecewise_args", lambda x: fnp.piecewise(
        x, x > 0, [lambda v, k: k * v, lambda v, k: v / k], 3.0),
        lambda x: np.piecewise(x, x > 0, [lambda v, k: k * v, lambda v, k: v / k], 3.0),
        [Arg((5,), avoid=(0.0,))]),
    # JAX's inplace=False: NumPy's place and put write into their argument (no twin)
    Case("numpy.place", lambda a, v: fnp.place(a, MASK, v, inplace=False),
         lambda a, v: _place_ref(a, MASK, v), [Arg((2, 3), RC), Arg((3,), "same")],
         np_fun=False),
    Case("numpy.place_traced_mask", lambda a, m, v: fnp.place(a, m, v, inplace=False),
         _place_ref, [Arg((2, 3)), Arg((2, 3), "bool", diff=False), Arg((2,))], np_fun=False),
    Case("numpy.put", lambda a, v: fnp.put(a, FLAT, v, inplace=False),
         lambda a, v: _put_ref(a, FLAT, v), [Arg((2, 3)), Arg((3,))], np_fun=False),
    Case("numpy.put_clip", lambda a, v: fnp.put(a, np.array([7, 1]), v, mode="clip",
                                                inplace=False),
         lambda a, v: _put_ref(a, np.array([7, 1]), v, "clip"), [Arg((4,)), Arg((2,))],
         np_fun=False),
    Case("numpy.sort_complex", fnp.sort_complex, np.sort_complex,
         [Arg((2, 4), RC, unique=True)]),
    # NumPy has no top_k: the reference sorts
    Case("numpy.top_k_smallest", lambda a: fnp.top_k(a, 2, axis=0, mode="smallest"),
         lambda a: (np.sort(a, axis=0)[:2], np.argsort(a, axis=0, kind="stable")[:2].astype(
             np.int32)), [Arg((3, 2), ("float64", "int8"), low=-128, high=127, unique=True)]),
]

INDEX_TRICKS = [
    Case("numpy.r_", lambda x, y: fnp.r_[x, 0.5, y, 0:1:3j], lambda x, y: np.r_[x, 0.5, y, 0:1:3j],
         [Arg((2,)), Arg((3,))], np_fun=False),
    Case("numpy.c_", lambda x, y: fnp.c_[x, y], lambda x, y: np.c_[x, y],
         [Arg((3,), RC), Arg((3, 2), "same")], np_fun=False),
]

SPECIAL = [
    Case("numpy.i0", fnp.i0, np.i0, [Arg(dtype=F32_64)], rtol=1e-6),
    Case("numpy.kaiser", lambda beta: fnp.kaiser(7, beta), lambda beta: np.kaiser(7, float(beta)),
         [Arg((), low=0.5, high=6.0)]),
]

UFUNC_OBJECTS = [
    # frompyfunc's ufunc calls a traced function: JAX's semantics, no NumPy twin
    Case("numpy.frompyfunc_call", lambda x, y: _MUL_ADD(x, y), _mul_add,
         [Arg(), Arg("bcast")], np_fun=False),
    Case("numpy.frompyfunc_reduce", lambda x: _MUL_ADD.reduce(x, axis=1),
         lambda x: _fold_ref(x, 1), [Arg((2, 4), low=-1, high=1)], np_fun=False),
    Case("numpy.frompyfunc_accumulate", lambda x: _MUL_ADD.accumulate(x),
         _accumulate_ref, [Arg((4, 2), low=-1, high=1)], np_fun=False),
    Case("numpy.frompyfunc_at", lambda x, b: _MUL_ADD.at(x, AT_INDEX, b, inplace=False),
         lambda x, b: _at_ref(x, AT_INDEX, b), [Arg((5,)), Arg((4,), low=-1, high=1)],
         np_fun=False),
    Case("numpy.frompyfunc_outer", lambda x, y: _MUL_ADD.outer(x, y),
         lambda x, y: np.multiply.outer(x, y) + x[:, None], [Arg((3,)), Arg((2,))],
         np_fun=False),
]

BITS = [
    Case("numpy.packbits", lambda a: fnp.packbits(a, axis=1), lambda a: np.packbits(a, axis=1),
         [Arg((2, 11), "bool")], grad_order=0),
    Case("numpy.packbits_little", lambda a: fnp.packbits(a, bitorder="little"),
         lambda a: np.packbits(a, bitorder="little"), [Arg(dtype="int32", low=0, high=2)],
         grad_order=0),
    Case("numpy.unpackbits", lambda a: fnp.unpackbits(a, axis=0, count=-3),
         lambda a: np.unpackbits(a, axis=0, count=-3), [Arg((2, 3), "uint8", low=0, high=255)],
         grad_order=0),
    Case("numpy.unpackbits_flat", fnp.unpackbits, np.unpackbits,
         [Arg(dtype="uint8", low=0, high=255)], grad_order=0),
    Case("numpy.bitwise_count", fnp.bitwise_count, np.bitwise_count,
         [Arg(dtype=("int8", "int64", "uint16"), low=-120, high=120)], grad_order=0,
         prims=("population_count",)),
    Case("numpy.spacing", fnp.spacing, np.spacing, [Arg(dtype=F32_64, low=-1e3, high=1e3)],
         grad_order=0, prims=("nextafter",)),
]

CASES = GRADIENT + SELECTION + INDEX_TRICKS + SPECIAL + UFUNC_OBJECTS + BITS
