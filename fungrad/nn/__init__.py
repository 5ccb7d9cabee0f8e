"""``fungrad.nn``: the ``jax.nn`` activation functions and helpers.

Everything is composed from ``fungrad.numpy``/``fungrad.lax``, so it is
differentiable to any order, vmappable and jittable. At kinks the derivative
is JAX's: ``relu'(0) = 0``, ``relu6'(0) = relu6'(6) = 0``,
``leaky_relu'(0) = 1``, ``hard_tanh'(±1) = 1``.

``softmax``, ``log_softmax`` and ``logsumexp`` subtract the (stop-gradient)
max before ``exp``: no overflow at logits of ±1000 and finite gradients there.

Initializers live in ``fungrad.nn.initializers``.
"""
from __future__ import annotations

import math
import operator

import numpy as np
from fungrad._dtype_classes import is_integer

from fungrad import lax
import fungrad.numpy as fnp
from fungrad.scipy.special import logsumexp, _promote_inexact
from fungrad.scipy import special as _special
from fungrad.nn import initializers  # noqa: F401

__all__ = ["relu", "relu6", "leaky_relu", "elu", "celu", "selu", "gelu", "silu", "swish",
           "sigmoid", "log_sigmoid", "softplus", "soft_sign", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "mish", "squareplus", "glu", "softmax",
           "log_softmax", "logsumexp", "one_hot", "standardize", "initializers",
           "dot_product_attention", "sparse_plus", "sparse_sigmoid", "identity", "tanh",
           "log1mexp", "logmeanexp", "scaled_matmul", "scaled_dot_general"]


# ----------------------------------------------------------------------------
# Piecewise-linear activations (derivatives at the kinks as JAX defines them)
# ----------------------------------------------------------------------------

def relu(x):
    """max(x, 0), NaN for NaN (JAX's values); the derivative is 1 above 0 and 0
    elsewhere, at 0 and at NaN too (JAX's custom JVP, a select: ``maximum``'s
    own tie rule would give 0.5 at 0)."""
    x = fnp.asarray(x)
    return fnp.where(x > 0, x, lax.stop_gradient(fnp.maximum(x, 0)))


def relu6(x):
    """min(max(x, 0), 6), NaN for NaN; the derivative is 1 strictly between 0
    and 6 and 0 elsewhere (both kinks, NaN), as JAX's custom JVP."""
    x = fnp.asarray(x)
    clipped = fnp.minimum(fnp.maximum(x, 0), 6)
    return fnp.where((x > 0) & (x < 6), x, lax.stop_gradient(clipped))


def leaky_relu(x, negative_slope=0.01):
    """x for x >= 0, negative_slope·x below (derivative 1 at 0)."""
    x = fnp.asarray(x)
    return fnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """x clipped to [-1, 1]; derivative 1 at ±1 (as JAX's nested where)."""
    x = fnp.asarray(x)
    ones = fnp.ones_like(x)
    return fnp.where(x > 1, ones, fnp.where(x < -1, -ones, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(fnp.asarray(x) + 3.0) / 6.0


def hard_silu(x):
    """x · hard_sigmoid(x)."""
    x = fnp.asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


# ----------------------------------------------------------------------------
# Smooth activations
# ----------------------------------------------------------------------------

def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x))."""
    return _special.expit(x)


def softplus(x):
    """log(1 + exp(x)), as logaddexp(x, 0) so that it never overflows."""
    (x,) = _promote_inexact(x)
    return fnp.logaddexp(x, 0.0)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), finite for any finite x."""
    (x,) = _promote_inexact(x)
    return -softplus(-x)


def soft_sign(x):
    """x / (|x| + 1)."""
    (x,) = _promote_inexact(x)
    return x / (fnp.abs(x) + 1)


def silu(x):
    """x · sigmoid(x) (also called swish)."""
    (x,) = _promote_inexact(x)
    return x * sigmoid(x)


swish = silu


def elu(x, alpha=1.0):
    """x for x > 0, alpha·(exp(x) - 1) otherwise."""
    (x,) = _promote_inexact(x)
    # expm1 only sees x <= 0 so the discarded branch cannot overflow to inf
    negative_part = fnp.where(x > 0, 0.0, x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(negative_part))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha·expm1(min(x, 0) / alpha)."""
    (x,) = _promote_inexact(x)
    return fnp.maximum(x, 0.0) + alpha * fnp.expm1(fnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale · elu(x, alpha) with the self-normalising constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def gelu(x, approximate=True):
    """x · Φ(x). ``approximate=True`` (JAX's default) uses the tanh formula
    0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³))); ``False`` the exact erf form."""
    (x,) = _promote_inexact(x)
    if approximate:
        # (a NumPy constant of x's dtype, as JAX's: strong, so is the result)
        c = np.asarray(_SQRT_2_OVER_PI).astype(x.dtype)
        cdf = 0.5 * (1.0 + fnp.tanh(c * (x + 0.044715 * x ** 3)))
        return x * cdf
    return x * _special.ndtr(x)


def mish(x):
    """x · tanh(softplus(x))."""
    (x,) = _promote_inexact(x)
    return x * fnp.tanh(softplus(x))


def squareplus(x, b=4):
    """(x + sqrt(x² + b)) / 2, a smooth relu."""
    (x,) = _promote_inexact(x)
    return (x + fnp.sqrt(x * x + b)) / 2


def glu(x, axis=-1):
    """Gated linear unit: split ``x`` in two halves a, b along ``axis``; a · sigmoid(b)."""
    x = fnp.asarray(x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} of x (shape {x.shape}) has odd size {size}; "
                         "it must split into two equal halves")
    first, second = fnp.split(x, 2, axis=axis)
    return first * sigmoid(second)


# ----------------------------------------------------------------------------
# Softmax and normalisation
# ----------------------------------------------------------------------------

def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) along ``axis``; entries outside ``where`` are 0."""
    return _special.softmax(x, axis=axis, where=where)


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along ``axis``; entries outside ``where`` are -inf."""
    return _special.log_softmax(x, axis=axis, where=where)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon); mean and variance default to
    the statistics of ``x`` along ``axis`` (variance as E[x²] - E[x]², as JAX)."""
    (x,) = _promote_inexact(x)
    if mean is None:
        mean = fnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        variance = fnp.mean(fnp.square(x), axis=axis, keepdims=True, where=where) \
            - fnp.square(mean)
    return (x - fnp.asarray(mean)) * lax.rsqrt(fnp.asarray(variance + epsilon, dtype=x.dtype))


# ----------------------------------------------------------------------------
# one_hot
# ----------------------------------------------------------------------------

def _class_count(num_classes):
    """``num_classes`` as a Python int; it fixes the output shape, so it must be concrete."""
    try:
        count = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot: num_classes must be a concrete integer (it fixes the "
                        f"output shape), got {num_classes!r}; pass a Python int, or mark "
                        "it static (jit's static_argnums)") from None
    if count < 0:
        raise ValueError(f"one_hot: num_classes must be >= 0, got {count}")
    return count


def one_hot(x, num_classes, *, dtype=np.float64, axis=-1):
    """A one-hot encoding of the integer array ``x`` with ``num_classes``
    classes on a new axis ``axis``. Indices outside [0, num_classes) give an
    all-zero row, as in JAX."""
    count = _class_count(num_classes)
    x = fnp.asarray(x)
    if not is_integer(x.dtype):
        raise TypeError(f"one_hot: x must hold integer class indices, got dtype {x.dtype}; "
                        "convert it first, e.g. x.astype(int)")
    out_ndim = x.ndim + 1
    if not -out_ndim <= axis < out_ndim:
        raise ValueError(f"one_hot: axis {axis} is out of range for a result with "
                         f"{out_ndim} dimensions")
    axis = axis % out_ndim
    classes_shape = [1] * out_ndim
    classes_shape[axis] = count
    classes = lax.broadcasted_iota(x.dtype, tuple(classes_shape), axis)
    return (fnp.expand_dims(x, axis) == classes).astype(dtype)


from fungrad.nn._attention import dot_product_attention, sparse_plus, sparse_sigmoid  # noqa: E402
from fungrad.nn._more import (identity, tanh, log1mexp, logmeanexp,  # noqa: E402
                             scaled_matmul, scaled_dot_general)
