"""Cases for the rest of ``jax.lax``'s surface: bit counts, ``reduce_precision``,
the general ``reduce``, ``split``, ``index_take``, ``scatter_apply``,
``approx_max_k``/``approx_min_k``, ``optimization_barrier``, the convolution
patches and ``ragged_dot``."""
import numpy as np

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

CASES = BITS
