"""Cases for the rest of ``jax.lax``'s surface: bit counts, ``reduce_precision``,
the general ``reduce``, ``split``, ``index_take``, ``scatter_apply``,
``approx_max_k``/``approx_min_k``, ``optimization_barrier``, the convolution
patches and ``ragged_dot``."""
import numpy as np

import fungrad
from fungrad import lax
from tests.harness import Arg, Case

INTS = ("int64", "int32", "int8", "uint8", "uint16")


def _unsigned(x):
    return x.view(f"u{x.dtype.itemsize}")


def _popcount_ref(x):
    return np.vectorize(lambda v: bin(int(v)).count("1"), otypes=[x.dtype])(_unsigned(x))


def _clz_ref(x):
    width = 8 * x.dtype.itemsize
    return np.vectorize(lambda v: width - int(v).bit_length(), otypes=[x.dtype])(_unsigned(x))


def _float32_rounding(x):
    return x.astype(np.float32).astype(x.dtype)


def _normal_range(rng, shape, dtype):
    """float64 values of magnitudes float32 represents as normal numbers."""
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * np.exp(rng.uniform(-80, 80, shape))).astype(dtype)


BITS = [
    Case("lax.population_count", lax.population_count, _popcount_ref,
         [Arg(dtype=INTS, low=-200, high=200)], prims=("population_count",), grad_order=0),
    Case("lax.clz", lax.clz, _clz_ref, [Arg(dtype=INTS, low=-200, high=200)], prims=("clz",),
         grad_order=0),
    # rounding to float32 (ties to even), float64 kept; no derivative check: the
    # rounding is piecewise constant and JAX's derivative straight-through
    Case("lax.reduce_precision_f32", lambda x: lax.reduce_precision(x, 8, 23),
         _float32_rounding, [Arg(make=_normal_range)], prims=("reduce_precision",),
         grad_order=0),
    # at the operand's own precision it is the identity, which finite differences see
    Case("lax.reduce_precision_identity", lambda x: lax.reduce_precision(x, 11, 52),
         lambda x: x, [Arg()], prims=("reduce_precision",)),
]


# --- reduce -------------------------------------------------------------------------

def _shifted_product(a, b):
    """(1 + a)(1 + b) - 1: associative and not a monoid fungrad knows."""
    return a * b + a + b


def _matrix_product(p, q):
    """The product of 2x2 matrices held as four scalars: associative, not commutative."""
    (a, b, c, d), (e, f, g, h) = p, q
    return (a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h)


def _matrix_fold_ref(a, b, c, d):
    acc = np.eye(2)
    for m in zip(a, b, c, d):
        acc = acc @ np.array(m).reshape(2, 2)
    return tuple(acc.reshape(4))


def _argmax_pair(p, q):
    (v, i), (w, j) = p, q
    take = lax.ge(v, w)
    return lax.select(take, v, w), lax.select(take, i, j)


def _argmax_by_reduce(x):
    iota = lax.broadcasted_iota(np.int64, x.shape, 1)
    return lax.reduce((x, iota), (-np.inf, np.int64(0)), _argmax_pair, (1,))


SMALL = Arg("mat", low=-0.5, high=0.5)

REDUCE = [
    Case("lax.reduce_with_add", lambda x: lax.reduce(x, 0.0, lax.add, (0,)),
         lambda x: np.sum(x, axis=0), [Arg("mat")], prims=("reduce_sum",)),
    Case("lax.reduce_with_mul_lambda", lambda x: lax.reduce(x, 1.0, lambda a, b: a * b, (0,)),
         lambda x: np.prod(x, axis=0), [Arg("mat")], prims=("reduce_prod",)),
    Case("lax.reduce_with_max_init", lambda x: lax.reduce(x, 0.5, lax.max, (0,)),
         lambda x: np.maximum(np.max(x, axis=0, initial=-np.inf), 0.5),
         [Arg("mat", avoid=(0.5,), unique=True)], prims=("reduce_max", "max")),
    Case("lax.reduce_with_or", lambda x: lax.reduce(x, False, lax.bitwise_or, (0,)),
         lambda x: np.any(x, axis=0), [Arg("mat", dtype="bool")], prims=("reduce_or",),
         grad_order=0),
    Case("lax.reduce_fold", lambda x: lax.reduce(x, 0.0, _shifted_product, (0,)),
         lambda x: np.prod(1 + x, axis=0) - 1, [SMALL], prims=("mul", "add", "slice")),
    Case("lax.reduce_fold_two_axes", lambda x: lax.reduce(x, 0.0, _shifted_product, (0, 2)),
         lambda x: np.prod(1 + x, axis=(0, 2)) - 1, [Arg((3, 2, 3), low=-0.5, high=0.5)]),
    Case("lax.reduce_fold_init", lambda x, i: lax.reduce(x, i, _shifted_product, (0,)),
         lambda x, i: (1 + i) * np.prod(1 + x, axis=0) - 1, [SMALL, Arg(())]),
    Case("lax.reduce_fold_ordered", lambda a, b, c, d: lax.reduce(
        (a, b, c, d), (1.0, 0.0, 0.0, 1.0), _matrix_product, (0,)), _matrix_fold_ref,
        [Arg((5,), low=-1, high=1)] * 4),
    Case("lax.reduce_variadic_argmax", _argmax_by_reduce,
         lambda x: (np.max(x, axis=1), np.argmax(x, axis=1)), [Arg((3, 4), unique=True)]),
]


# --- shape and indexing helpers ------------------------------------------------------

IDX0, IDX2 = np.array([0, 1, -1, 1]), np.array([4, 2, 7, -3])


def _scatter_apply_ref(x, index, func, size):
    out = x.copy()
    for i in index:
        if -size <= i < size:
            out[i] = func(out[i])
    return out


def _square_plus(v):
    return v * v + 0.5


INDEXING = [
    Case("lax.split", lambda x: lax.split(x, (1, 0, 3), axis=1),
         lambda x: tuple(np.split(x, (1, 1), axis=1)), [Arg((2, 4, 3))]),
    Case("lax.index_take", lambda x: lax.index_take(x, (IDX0, IDX2), (0, 2)),
         lambda x: x[IDX0 % 2, :, IDX2 % 5], [Arg((2, 3, 5))], prims=("gather",)),
    Case("lax.scatter_apply_repeated", lambda x: lax.scatter_apply(
        x, (np.array([0, 3, 0, 9, -1, 0]),), _square_plus),
        lambda x: _scatter_apply_ref(x, [0, 3, 0, 9, -1, 0], _square_plus, 6),
        [Arg((6,), low=-1, high=1)], prims=("scatter", "gather")),
    Case("lax.scatter_apply_traced_index", lambda x, i: lax.scatter_apply(
        x, (i,), _square_plus), lambda x, i: _scatter_apply_ref(x, i, _square_plus, 6),
        [Arg((6,), low=-1, high=1), Arg((4,), dtype="int64", low=-6, high=7, diff=False)],
        prims=("scatter", "scatter_add", "while")),
    Case("lax.scatter_apply_unique", lambda x: lax.scatter_apply(
        x, (slice(None), np.array([2, 0])), lax.sin, unique_indices=True),
        lambda x: np.concatenate([np.sin(x[:, :1]), x[:, 1:2], np.sin(x[:, 2:])], axis=1),
        [Arg((2, 3))], prims=("scatter",)),
]


def _smallest(x, k, axis):
    order = np.argsort(x, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int32)


def _largest(x, k, axis):
    values, order = _smallest(-x, k, axis)
    return -values, order


TOPK = [
    Case("lax.approx_max_k", lambda x: lax.approx_max_k(x, 2), lambda x: _largest(x, 2, -1),
         [Arg((3, 5), unique=True)], prims=("top_k",)),
    Case("lax.approx_min_k_axis0", lambda x: lax.approx_min_k(x, 2, reduction_dimension=0,
                                                               recall_target=0.5),
         lambda x: _smallest(x, 2, 0), [Arg((3, 4), unique=True)], prims=("top_k",)),
    Case("lax.optimization_barrier", lambda x, y: lax.optimization_barrier(
        (lax.sin(x), lax.mul(y, y))), lambda x, y: (np.sin(x), y * y),
        [Arg(), Arg()], prims=("optimization_barrier",)),
]


# --- convolution patches, unshared convolutions, ragged products -----------------------

def _patches_ref(x, window, strides, pads):
    """NCHW patches: feature c * prod(window) + (ki * window[1] + kj)."""
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    (kh, kw), (sh, sw) = window, strides
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    out = np.zeros((x.shape[0], x.shape[1] * kh * kw, oh, ow), x.dtype)
    for c in range(x.shape[1]):
        for ki in range(kh):
            for kj in range(kw):
                out[:, (c * kh + ki) * kw + kj] = x[:, c, ki:ki + sh * oh:sh, kj:kj + sw * ow:sw]
    return out


PADS = ((1, 0), (0, 2))
GROUP_SIZES = np.array([2, 0, 3])


def _ragged_ref(a, b):
    out, start = np.zeros((a.shape[0], b.shape[2]), np.result_type(a, b)), 0
    for g, size in enumerate(GROUP_SIZES):
        out[start:start + size] = a[start:start + size] @ b[g]
        start += size
    return out


PRODUCTS = [
    Case("lax.conv_general_dilated_patches", lambda x: lax.conv_general_dilated_patches(
        x, (2, 3), (2, 1), PADS), lambda x: _patches_ref(x, (2, 3), (2, 1), PADS),
        [Arg((2, 2, 4, 3), ("float64", "complex128"))], prims=("conv_general_dilated",)),
    Case("lax.conv_general_dilated_patches_nhwc", lambda x: lax.conv_general_dilated_patches(
        x, (2, 2), (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        lambda x: np.moveaxis(_patches_ref(np.moveaxis(x, -1, 1), (2, 2), (1, 1),
                                           ((0, 0), (0, 0))), 1, -1),
        [Arg((1, 3, 3, 2))], prims=("conv_general_dilated",)),
    Case("lax.conv_general_dilated_local", lambda x, w: lax.conv_general_dilated_local(
        x, w, (2, 1), PADS, (2, 3)),
        lambda x, w: np.einsum("nfij,ofij->noij", _patches_ref(x, (2, 3), (2, 1), PADS), w),
        [Arg((2, 2, 4, 3)), Arg((3, 12, 2, 3))], prims=("conv_general_dilated", "dot_general")),
    Case("lax.ragged_dot", lambda a, b: lax.ragged_dot(a, b, GROUP_SIZES), _ragged_ref,
         [Arg((6, 3), ("float64", "complex128")), Arg((3, 3, 2), "same")],
         prims=("dot_general", "select_n")),
]


# --- collectives over a named vmap, and the stateless bit generator ----------------------

def _named(f):
    return lambda x: fungrad.vmap(f, axis_name="i")(x)


COLLECTIVES = [
    Case("lax.pshuffle", _named(lambda v: lax.pshuffle(v, "i", [2, 0, 1])),
         lambda x: x[[2, 0, 1]], [Arg((3, 2))], prims=("ppermute",)),
    Case("lax.pswapaxes", _named(lambda v: lax.pswapaxes(v, "i", 1)),
         lambda x: np.swapaxes(x, 0, 2), [Arg((3, 2, 3))], prims=("all_to_all",)),
    Case("lax.pbroadcast", _named(lambda v: lax.pbroadcast(v, "i", 1)),
         lambda x: np.broadcast_to(x[1], x.shape).copy(), [Arg((3, 2))], prims=("psum",)),
    # bits: values are Threefry's (checked as a function of the key: jit, vmap)
    Case("lax.rng_bit_generator", lambda k: lax.rng_bit_generator(k, (3, 2), np.uint16),
         None, [Arg((4,), "uint32", low=0, high=2**31)], prims=("threefry2x32", "random_sample"),
         grad_order=0, check=lambda out, args: _check_bits(out, args)),
]


def _check_bits(out, args):
    new_key, bits = (np.asarray(o) for o in out)
    assert new_key.shape == (4,) and new_key.dtype == np.uint32
    assert bits.shape == (3, 2) and bits.dtype == np.uint16
    again = lax.rng_bit_generator(args[0], (3, 2), np.uint16)
    np.testing.assert_array_equal(np.asarray(again[1]), bits)     # deterministic
    assert not np.array_equal(new_key, args[0])



# --- JAX 0.11's additions: stack, unstack, tile, broadcast_like, mulhi, scaled_dot ------

def _mulhi_ref(x, y):
    width = 8 * x.dtype.itemsize
    wide = (np.asarray(x, object) * np.asarray(y, object)) if x.shape else int(x) * int(y)
    high = np.vectorize(lambda v: (int(v) >> width) & ((1 << width) - 1), otypes=[object])(wide)
    unsigned = np.asarray(high, dtype=np.uint64 if width == 64 else np.int64).astype(
        f"u{x.dtype.itemsize}")
    return unsigned.view(x.dtype)


MORE = [
    Case("lax.stack", lambda a, b: lax.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1),
         [Arg((2, 3)), Arg((2, 3))]),
    Case("lax.unstack", lambda a: lax.unstack(a, axis=1), lambda a: tuple(np.moveaxis(a, 1, 0)),
         [Arg((2, 3))]),
    Case("lax.tile", lambda a: lax.tile(a, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)),
         [Arg((2, 1, 2), ("float64", "complex128"))], prims=("broadcast_in_dim", "reshape")),
    Case("lax.broadcast_like", lambda a, b: lax.broadcast_like(a, b),
         lambda a, b: np.broadcast_to(a, b.shape).copy(), [Arg((3, 1)), Arg((2, 3, 4), diff=False)]),
    Case("lax.mulhi", lax.mulhi, _mulhi_ref,
         [Arg((3, 2), ("int8", "uint16", "int32", "uint32", "int64", "uint64"), low=0,
              high=2**62, make=lambda rng, s, d: rng.integers(np.iinfo(d).min, np.iinfo(d).max,
                                                               s, dtype=d, endpoint=True)),
          Arg((3, 2), "same", make=lambda rng, s, d: rng.integers(
              np.iinfo(d).min, np.iinfo(d).max, s, dtype=d, endpoint=True))],
         prims=("mulhi",), grad_order=0),
    Case("lax.scaled_dot", lambda x, y, sx, sy: lax.scaled_dot(x, y, lhs_scale=sx, rhs_scale=sy),
         lambda x, y, sx, sy: (x * np.repeat(sx, 3, -1)) @ (y * np.repeat(sy, 3, -2)),
         [Arg((2, 4, 6)), Arg((2, 6, 3)), Arg((2, 4, 2), low=0.5, high=2),
          Arg((2, 2, 3), low=0.5, high=2)], prims=("dot_general",)),
]

CASES = BITS + REDUCE + INDEXING + TOPK + PRODUCTS + COLLECTIVES + MORE
