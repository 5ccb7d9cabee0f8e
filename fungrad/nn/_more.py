"""``jax.nn``'s ``identity``, ``tanh``, ``log1mexp``, ``logmeanexp``,
``scaled_matmul`` and ``scaled_dot_general`` (re-exported by ``fungrad.nn``).

All are compositions of fungrad.numpy/lax, so they differentiate to any
order, vmap and jit. ``scaled_dot_general`` with quantization ``configs``
(JAX's float8/float4 block scaling for cuDNN) is not available: NumPy has no
float8 or float4 dtypes; without ``configs`` it is ``lax.dot_general``, as in JAX.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from fungrad import lax
import fungrad.numpy as fnp
from fungrad.custom_derivatives import custom_jvp
from fungrad.scipy.special import logsumexp, _promote_inexact

__all__ = ["identity", "tanh", "log1mexp", "logmeanexp", "scaled_matmul", "scaled_dot_general"]

tanh = fnp.tanh


def identity(x):
    """``x`` itself, as an array (the identity activation)."""
    return fnp.asarray(x)


_LOG_2 = math.log(2.0)


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, accurate for small and large x (Mächler
    2012): ``log(-expm1(-x))`` below log 2, ``log1p(-exp(-x))`` above; nan
    for x < 0. The derivative is ``1 / expm1(x)`` (JAX's rule)."""
    (x,) = _promote_inexact(x)
    small = x < _LOG_2
    return fnp.where(small, fnp.log(-fnp.expm1(-x)), fnp.log1p(-fnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / fnp.expm1(x))


def _reduced_count(x, axis, where, keepdims):
    """How many entries of ``x`` (those where ``where``) each reduction sums."""
    if where is None:
        axes = range(x.ndim) if axis is None else (
            (axis,) if isinstance(axis, int) else tuple(axis))
        size = math.prod(x.shape[operator.index(a)] for a in axes)
        shape = fnp.sum(fnp.zeros_like(x), axis=axis, keepdims=keepdims).shape
        return fnp.full(shape, size, x.dtype)
    mask = fnp.broadcast_to(fnp.asarray(where), x.shape)
    return fnp.sum(mask, axis=axis, keepdims=keepdims).astype(x.dtype)


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) over ``axis`` without overflow: logsumexp(x) - log(n),
    n the number of entries averaged (those where ``where``)."""
    (x,) = _promote_inexact(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    return lse - fnp.log(_reduced_count(x, axis, where, keepdims))


def _check_scaled_shapes(a, b, a_scales, b_scales):
    if not all(t.ndim == 3 for t in (a, b, a_scales, b_scales)):
        raise ValueError("scaled_matmul: lhs, rhs, lhs_scales and rhs_scales must all be "
                         f"3-dimensional (B, M, K), got shapes {a.shape}, {b.shape}, "
                         f"{a_scales.shape}, {b_scales.shape}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise ValueError("scaled_matmul: lhs (B, M, K) and rhs (B, N, K) must have the same "
                         f"batch B and contracting K dimensions, got {a.shape} and {b.shape}")
    if a_scales.shape[0] != b_scales.shape[0] or a_scales.shape[2] != b_scales.shape[2]:
        raise ValueError("scaled_matmul: the scales must have the same batch and contracting "
                         f"dimensions, got {a_scales.shape} and {b_scales.shape}")
    if a_scales.shape[:2] != a.shape[:2] or b_scales.shape[:2] != b.shape[:2]:
        raise ValueError("scaled_matmul: the scales must match the batch and non-contracting "
                         f"dimensions of their operands: lhs {a.shape}, rhs {b.shape}, "
                         f"lhs_scales {a_scales.shape}, rhs_scales {b_scales.shape}")
    if a.shape[2] % a_scales.shape[2]:
        raise ValueError(f"scaled_matmul: K = {a.shape[2]} is not a multiple of the number of "
                         f"scale blocks {a_scales.shape[2]}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matmul ``einsum('BMK,BNK->BMN', lhs * s_l, rhs * s_r)``,
    each scale repeated over its block of ``K // K_scales`` entries of the
    contracting axis. As in JAX the result is ``preferred_element_type``
    (float32 by default); fungrad computes in the operands' precision first."""
    a, b = fnp.asarray(lhs), fnp.asarray(rhs)
    a_scales, b_scales = fnp.asarray(lhs_scales), fnp.asarray(rhs_scales)
    _check_scaled_shapes(a, b, a_scales, b_scales)
    block = a.shape[2] // a_scales.shape[2]
    a_scaled = a * fnp.repeat(a_scales, block, axis=-1)
    b_scaled = b * fnp.repeat(b_scales, block, axis=-1)
    out = fnp.einsum("bmk,bnk->bmn", a_scaled, b_scaled)
    return out.astype(preferred_element_type)


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """``lax.dot_general`` (``configs=None``, as in JAX). Quantization configs
    (JAX's mxfp8/nvfp4 block scaling) raise NotImplementedError: they need
    float8/float4 dtypes, which NumPy does not have."""
    if configs is not None:
        raise NotImplementedError(
            "nn.scaled_dot_general: quantization configs (mxfp8/nvfp4 block scaling) need "
            "float8/float4 dtypes, which NumPy lacks; pass configs=None for lax.dot_general, "
            "or quantize yourself and call nn.scaled_matmul")
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
