"""``dot_product_attention``, ``sparse_plus`` and ``sparse_sigmoid`` (``jax.nn``).

Shapes follow JAX's letters: B batch, T query length, S key/value length,
N query heads, K key/value heads (N a multiple of K: grouped-query attention,
query head ``n`` reads key/value head ``n // (N // K)``), H head size.

    attention = softmax(Q K^T * scale + bias, masked) V      per head

Masked logits are replaced by ``-0.7 * finfo(dtype).max`` as JAX does, so a
query whose every key is masked averages all values uniformly (no NaN); with
both ``query_seq_lengths`` and ``key_value_seq_lengths`` given, outputs of
padded query positions are zero (as JAX).  Everything is ``fungrad.numpy``:
differentiable, vmappable, jittable.  ``implementation`` is accepted and
ignored (there is one NumPy implementation).
"""
from __future__ import annotations

import math

import numpy as np
from fungrad._dtype_classes import finfo as dtype_finfo, is_integer

from fungrad.core import get_aval
import fungrad.numpy as fnp
from fungrad.scipy.special import _promote_inexact, softmax

__all__ = ["dot_product_attention", "sparse_plus", "sparse_sigmoid"]


def sparse_plus(x):
    """0 for x <= -1, (x + 1)^2 / 4 for -1 < x < 1, x for x >= 1."""
    (x,) = _promote_inexact(x)
    return fnp.where(x <= -1.0, 0.0, fnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4.0))


def sparse_sigmoid(x):
    """0 for x <= -1, (x + 1) / 2 for -1 < x < 1, 1 for x >= 1 (the derivative
    of ``sparse_plus``); ``0.5 * clip(x + 1, 0, 2)`` as JAX."""
    (x,) = _promote_inexact(x)
    return 0.5 * fnp.clip(x + 1.0, 0.0, 2.0)


# --- argument checks -----------------------------------------------------------------

def _to_4d(name, t, allow=(3, 4)):
    ndim = get_aval(t).ndim
    if ndim not in allow:
        raise ValueError(f"dot_product_attention: {name} must have {' or '.join(map(str, allow))}"
                         f" dimensions, got shape {get_aval(t).shape}")
    return fnp.reshape(t, (1,) * (4 - ndim) + get_aval(t).shape)


def _check_qkv(query, key, value):
    B, S, K, H = get_aval(key).shape
    if get_aval(value).shape != (B, S, K, H):
        raise ValueError(f"dot_product_attention: value must have key's shape {(B, S, K, H)} "
                         f"(B, S, K, H), got {get_aval(value).shape}")
    qb, _, N, qh = get_aval(query).shape
    if qb != B or qh != H:
        raise ValueError(f"dot_product_attention: query must have shape (B={B}, T, N, H={H}) "
                         f"to match key, got {get_aval(query).shape}")
    if N % K:
        raise ValueError(f"dot_product_attention: the number of query heads ({N}) must be a "
                         f"multiple of the number of key/value heads ({K})")


def _check_broadcast(name, t, target):
    shape = get_aval(t).shape
    if any(d not in (1, want) for d, want in zip(shape, target)):
        raise ValueError(f"dot_product_attention: {name} of shape {shape} does not "
                         f"broadcast to (B, N, T, S) = {target}")


def _seq_lengths(name, lengths, batch):
    if lengths is None:
        return None
    lengths = fnp.asarray(lengths)
    if get_aval(lengths).shape != (batch,) or not is_integer(get_aval(lengths).dtype):
        raise ValueError(f"dot_product_attention: {name} must be an integer array of shape "
                         f"(B,) = ({batch},), got {get_aval(lengths).dtype}"
                         f"{list(get_aval(lengths).shape)}")
    return lengths


def _window(local_window_size):
    if local_window_size is None:
        return None
    if isinstance(local_window_size, (int, np.integer)):
        return int(local_window_size), int(local_window_size)
    window = tuple(local_window_size)
    if len(window) != 2:
        raise ValueError("dot_product_attention: local_window_size must be an int or a "
                         f"(left, right) pair, got {local_window_size!r}")
    return int(window[0]), int(window[1])


# --- the computation -----------------------------------------------------------------

def _combined_mask(mask, is_causal, window, q_len, kv_len, T, S):
    """Boolean array broadcastable to (B, N, T, S), or None when nothing is masked."""
    keep = None if mask is None else mask
    q_pos, k_pos = np.arange(T)[:, None], np.arange(S)[None, :]
    static = np.ones((T, S), dtype=bool)
    if is_causal:
        static &= k_pos <= q_pos
    if window is not None:
        static &= (k_pos >= q_pos - window[0]) & (k_pos <= q_pos + window[1])
    if is_causal or window is not None:
        keep = static[None, None] if keep is None else fnp.logical_and(keep, static)
    if q_len is not None or kv_len is not None:
        pad = np.ones((1, T, S), dtype=bool)
        if q_len is not None:
            pad = fnp.logical_and(pad, fnp.less(np.arange(T)[None, :, None],
                                                    q_len[:, None, None]))
        if kv_len is not None:
            pad = fnp.logical_and(pad, fnp.less(np.arange(S)[None, None, :],
                                                    kv_len[:, None, None]))
        pad = fnp.expand_dims(pad, 1)
        keep = pad if keep is None else fnp.logical_and(keep, pad)
    return keep


def _attend(q, k, v, bias, keep, scale):
    """softmax(QK^T scale + bias, masked) V with grouped heads; q (B,T,N,H)."""
    B, T, N, H = get_aval(q).shape
    _, S, K, _ = get_aval(k).shape
    G = N // K
    qg = fnp.reshape(q, (B, T, K, G, H))
    logits = fnp.einsum("btkgh,bskh->bkgts", qg, k) * scale
    logits = fnp.reshape(logits, (B, N, T, S))
    dtype = get_aval(logits).dtype
    if bias is not None:
        logits = fnp.asarray(logits + bias, dtype=dtype)
    if keep is not None:
        logits = fnp.where(keep, logits, -0.7 * float(dtype_finfo(dtype).max))
    probs = fnp.reshape(softmax(logits, axis=-1), (B, K, G, T, S))
    out = fnp.einsum("bkgts,bskh->btkgh", probs, v)
    return fnp.reshape(out, (B, T, N, H))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention (``jax.nn.dot_product_attention``).

    query (B, T, N, H) or (T, N, H); key, value (B, S, K, H) or (S, K, H);
    bias (additive) and mask (boolean, True = attend) broadcastable to
    (B, N, T, S); ``scale`` defaults to 1/sqrt(H); ``local_window_size`` is an
    int or (left, right): query t sees keys t-left .. t+right."""
    if implementation not in (None, "xla", "cudnn"):
        raise ValueError(f"dot_product_attention: unsupported implementation "
                         f"{implementation!r}; use None, 'xla' or 'cudnn'")
    out_shape = get_aval(fnp.asarray(query)).shape
    q, k, v = _promote_inexact(query, key, value)
    q, k, v = _to_4d("query", q), _to_4d("key", k), _to_4d("value", v)
    _check_qkv(q, k, v)
    B, T, N, H = get_aval(q).shape
    S = get_aval(k).shape[1]
    if bias is not None:
        bias = _to_4d("bias", fnp.asarray(bias), allow=(0, 1, 2, 3, 4))
        _check_broadcast("bias", bias, (B, N, T, S))
    if mask is not None:
        mask = _to_4d("mask", fnp.asarray(mask), allow=(0, 1, 2, 3, 4))
        if get_aval(mask).dtype != np.bool_:
            raise TypeError(f"dot_product_attention: mask must be boolean (True = attend), "
                            f"got {get_aval(mask).dtype}; pass additive masks as bias")
        _check_broadcast("mask", mask, (B, N, T, S))
    q_len = _seq_lengths("query_seq_lengths", query_seq_lengths, B)
    kv_len = _seq_lengths("key_value_seq_lengths", key_value_seq_lengths, B)
    keep = _combined_mask(mask, bool(is_causal), _window(local_window_size), q_len, kv_len,
                          T, S)
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    out = _attend(q, k, v, bias, keep, scale)
    if q_len is not None and kv_len is not None:
        valid = fnp.less(np.arange(T)[None, :], q_len[:, None])
        out = out * fnp.asarray(valid, dtype=get_aval(out).dtype)[:, :, None, None]
    return fnp.reshape(out, out_shape)
