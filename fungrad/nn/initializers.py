"""``fungrad.nn.initializers``: JAX-style parameter initializers.

Every initializer is a function ``init(key, shape, dtype=float64) -> Array``.
As in JAX, ``zeros`` and ``ones`` are initializers themselves; the others are
factories that return one (``normal(stddev)``, ``glorot_uniform()``, ...).

Keys: ``key`` may be

* a ``fungrad.random`` key (when ``fungrad.random`` exists): samples come from
  ``fungrad.random.normal`` / ``fungrad.random.uniform``;
* a Python or NumPy integer seed, or a ``numpy.random.Generator``: samples come
  from NumPy's generator (``np.random.default_rng(seed)``), so a seed gives the
  same array every time.

``truncated_normal`` (and ``variance_scaling(..., "truncated_normal")``, used
by ``glorot_normal``/``he_normal``/``lecun_normal``) is exact, not clipped: a
uniform sample between Φ(lower) and Φ(upper) is mapped through the inverse
normal CDF √2·erfinv(2u − 1), as JAX does.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Protocol, runtime_checkable

import numpy as np
from fungrad._dtype_classes import is_floating

from fungrad import lax
import fungrad.numpy as fnp

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "he_uniform", "he_normal", "kaiming_uniform", "kaiming_normal",
           "lecun_uniform", "lecun_normal", "orthogonal", "delta_orthogonal", "Initializer"]


@runtime_checkable
class Initializer(Protocol):
    """The type of an initializer (``jax.nn.initializers.Initializer``):
    ``init(key, shape, dtype=float64) -> Array``.  Libraries annotate with it."""

    def __call__(self, key: Any, shape: Any, dtype: Any = ...) -> Any: ...


# ----------------------------------------------------------------------------
# Sampling from either kind of key
# ----------------------------------------------------------------------------

def _numpy_generator(key):
    """The NumPy generator for an integer seed or Generator, else None."""
    if isinstance(key, np.random.Generator):
        return key
    if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, bool):
        return np.random.default_rng(int(key))
    return None


def _fungrad_random():
    try:
        from fungrad import random
    except ImportError:
        return None
    return random


def _bad_key(key):
    return TypeError(f"initializer key must be an integer seed, a numpy.random.Generator "
                     f"or a fungrad.random key, got {type(key).__name__}: {key!r}")


def _standard_normal(key, shape, dtype):
    rng = _numpy_generator(key)
    if rng is not None:
        return fnp.asarray(rng.standard_normal(shape), dtype=dtype)
    random = _fungrad_random()
    if random is None:
        raise _bad_key(key)
    return fnp.asarray(random.normal(key, shape, dtype), dtype=dtype)


def _uniform(key, shape, dtype, minval, maxval):
    rng = _numpy_generator(key)
    if rng is not None:
        return fnp.asarray(rng.uniform(minval, maxval, shape), dtype=dtype)
    random = _fungrad_random()
    if random is None:
        raise _bad_key(key)
    return fnp.asarray(random.uniform(key, shape, dtype, minval=minval, maxval=maxval), dtype=dtype)


def _normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _standard_truncated_normal(key, shape, dtype, lower, upper):
    """N(0, 1) conditioned on [lower, upper]: ``fungrad.random.truncated_normal``
    for a fungrad key (JAX's stream), else by inverting the CDF of a uniform
    sample in [Φ(lower), Φ(upper)]."""
    if _numpy_generator(key) is None:
        random = _fungrad_random()
        if random is None:
            raise _bad_key(key)
        return fnp.asarray(random.truncated_normal(key, lower, upper, shape, dtype), dtype=dtype)
    u = _uniform(key, shape, np.float64, _normal_cdf(lower), _normal_cdf(upper))
    z = math.sqrt(2) * lax.erf_inv(2 * u - 1)
    return fnp.asarray(fnp.clip(z, lower, upper), dtype=dtype)


def _shape_tuple(shape):
    try:
        return tuple(int(d) for d in ((shape,) if isinstance(shape, int) else shape))
    except TypeError:
        raise TypeError(f"initializer shape must be a tuple of ints, got {shape!r}") from None


def _float_dtype(dtype):
    dtype = np.dtype(dtype)
    if not is_floating(dtype):
        raise TypeError(f"initializers produce real floating arrays, got dtype {dtype}; "
                        "pass e.g. dtype=numpy.float32")
    return dtype


# ----------------------------------------------------------------------------
# Constant and simple random initializers
# ----------------------------------------------------------------------------

def zeros(key, shape, dtype=np.float64):
    """An initializer: all zeros (``key`` is ignored)."""
    return fnp.zeros(_shape_tuple(shape), dtype=dtype)


def ones(key, shape, dtype=np.float64):
    """An initializer: all ones (``key`` is ignored)."""
    return fnp.ones(_shape_tuple(shape), dtype=dtype)


def constant(value, dtype=np.float64):
    """An initializer filling the array with ``value``."""
    def init(key, shape, dtype=dtype):
        return fnp.full(_shape_tuple(shape), value, dtype=dtype)
    return init


def normal(stddev=1e-2, dtype=np.float64):
    """An initializer drawing from N(0, stddev²)."""
    def init(key, shape, dtype=dtype):
        dtype = _float_dtype(dtype)
        return _standard_normal(key, _shape_tuple(shape), dtype) * np.asarray(stddev, dtype)
    return init


def uniform(scale=1e-2, dtype=np.float64):
    """An initializer drawing uniformly from [0, scale) (JAX's range)."""
    def init(key, shape, dtype=dtype):
        dtype = _float_dtype(dtype)
        return _uniform(key, _shape_tuple(shape), dtype, 0.0, 1.0) * np.asarray(scale, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=np.float64, lower=-2.0, upper=2.0):
    """An initializer drawing stddev · (N(0, 1) truncated to [lower, upper])."""
    def init(key, shape, dtype=dtype):
        dtype = _float_dtype(dtype)
        z = _standard_truncated_normal(key, _shape_tuple(shape), dtype, lower, upper)
        return z * np.asarray(stddev, dtype)
    return init


# ----------------------------------------------------------------------------
# Variance scaling and its named instances
# ----------------------------------------------------------------------------

def _axes_size(shape, axes):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return math.prod(shape[a] for a in axes)


def _fans(shape, in_axis, out_axis, batch_axis):
    """(fan_in, fan_out): input/output sizes times the receptive field (all
    remaining, non-batch axes), as JAX computes them."""
    if len(shape) < 2:
        raise ValueError(f"variance_scaling needs a weight shape with at least 2 "
                         f"dimensions to find fan-in and fan-out, got shape {shape}")
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive_field = math.prod(shape) / (in_size * out_size * batch_size)
    return in_size * receptive_field, out_size * receptive_field


_FAN_DENOMINATORS = {
    "fan_in": lambda fan_in, fan_out: fan_in,
    "fan_out": lambda fan_in, fan_out: fan_out,
    "fan_avg": lambda fan_in, fan_out: (fan_in + fan_out) / 2,
    "fan_geo_avg": lambda fan_in, fan_out: math.sqrt(fan_in * fan_out),
}
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")
# the standard deviation of N(0, 1) truncated to [-2, 2]
_TRUNCATED_STDDEV = 0.87962566103423978


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=np.float64):
    """An initializer with variance ``scale / n``, n the fan chosen by ``mode``
    ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"), drawn from
    ``distribution`` ("truncated_normal" at ±2 std, "normal" or "uniform")."""
    if mode not in _FAN_DENOMINATORS:
        raise ValueError(f"variance_scaling: mode must be one of "
                         f"{sorted(_FAN_DENOMINATORS)}, got {mode!r}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"variance_scaling: distribution must be one of "
                         f"{list(_DISTRIBUTIONS)}, got {distribution!r}")

    def init(key, shape, dtype=dtype):
        shape, dtype = _shape_tuple(shape), _float_dtype(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        # JAX's arithmetic, in dtype: the variance, its square root and the
        # sample are all of the requested dtype (so float32 inits are JAX's bits)
        variance = np.asarray(scale / _FAN_DENOMINATORS[mode](fan_in, fan_out), dtype)
        if distribution == "truncated_normal":
            stddev = np.sqrt(variance) / np.asarray(_TRUNCATED_STDDEV, dtype)
            sample = _standard_truncated_normal(key, shape, dtype, -2.0, 2.0) * stddev
        elif distribution == "normal":
            sample = _standard_normal(key, shape, dtype) * np.sqrt(variance)
        else:
            sample = _uniform(key, shape, dtype, -1.0, 1.0) * np.sqrt(3 * variance)
        return fnp.asarray(sample, dtype=dtype)
    return init


def _named_scaling(scale, mode, distribution, name):
    def factory(in_axis=-2, out_axis=-1, batch_axis=(), dtype=np.float64):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (f"``variance_scaling({scale}, {mode!r}, {distribution!r})``.")
    return factory


glorot_uniform = _named_scaling(1.0, "fan_avg", "uniform", "glorot_uniform")
glorot_normal = _named_scaling(1.0, "fan_avg", "truncated_normal", "glorot_normal")
lecun_uniform = _named_scaling(1.0, "fan_in", "uniform", "lecun_uniform")
lecun_normal = _named_scaling(1.0, "fan_in", "truncated_normal", "lecun_normal")
he_uniform = _named_scaling(2.0, "fan_in", "uniform", "he_uniform")
he_normal = _named_scaling(2.0, "fan_in", "truncated_normal", "he_normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


# ----------------------------------------------------------------------------
# Orthogonal initializers
# ----------------------------------------------------------------------------

def orthogonal(scale=1.0, column_axis=-1, dtype=np.float64):
    """An initializer giving ``scale`` times a uniformly random orthogonal matrix.

    The array is viewed as a matrix whose columns run along ``column_axis`` and
    whose rows are all other axes flattened; that matrix has orthonormal
    columns (tall) or rows (wide), times ``scale``. Built as in JAX: the QR
    factor of a Gaussian matrix with R's diagonal made positive (which makes
    the distribution the Haar measure).
    """
    def init(key, shape, dtype=dtype):
        shape, dtype = _shape_tuple(shape), _float_dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer needs a shape with at least 2 "
                             f"dimensions, got {shape}; e.g. shape=(fan_in, fan_out)")
        if not -len(shape) <= column_axis < len(shape):
            raise ValueError(f"orthogonal: column_axis={column_axis} is out of range for "
                             f"shape {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        # QR needs a tall matrix: factor the transpose of a wide one.
        tall = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        q, r = fnp.linalg.qr(_standard_normal(key, tall, np.float64))
        q = q * fnp.sign(fnp.diagonal(r))[None, :]
        if n_rows < n_cols:
            q = q.T
        other_axes = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = fnp.moveaxis(fnp.reshape(q, (*other_axes, n_cols)), -1, column_axis)
        return fnp.asarray(scale * q, dtype=dtype)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=np.float64):
    """An initializer for 3-, 4- or 5-d convolution kernels (spatial..., in, out):
    zero except the spatial centre, which holds ``orthogonal(scale)`` of shape
    (in, out) (Xiao et al. 2018, as JAX). Needs in <= out."""
    def init(key, shape, dtype=dtype):
        shape, dtype = _shape_tuple(shape), _float_dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta_orthogonal needs a 3-, 4- or 5-d kernel shape "
                             f"(spatial..., in, out), got {shape}")
        if shape[-2] > shape[-1]:
            raise ValueError(f"delta_orthogonal needs fan_in <= fan_out (shape[-2] <= "
                             f"shape[-1]) so the centre can be orthogonal, got {shape}")
        centre_matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:], dtype)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return fnp.zeros(shape, dtype).at[centre].set(centre_matrix)
    return init
