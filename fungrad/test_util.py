"""``check_grads``: test derivatives of your own functions against finite differences.

    from fungrad.test_util import check_grads
    check_grads(f, (x, y), order=2)                  # fwd and rev, orders 1 and 2
    check_grads(f, (x,), order=1, modes=("rev",))    # reverse mode only

For each order up to ``order`` and each mode:

* ``"fwd"``: ``jvp(f)`` against central differences
  ``(f(x + eps·v) − f(x − eps·v)) / 2eps`` along a random direction ``v``;
* ``"rev"``: ``vjp(f)`` against the same finite differences through the
  inner-product identity ``<u, J v> ≈ <Jᵀu, v>`` for random ``u``, ``v``;
* with both modes, ``jvp`` and ``vjp`` against each other exactly:
  ``<u, J v> = <Jᵀu, v>`` to rounding error (this catches a wrong transpose
  rule even where finite differences are noisy).

Higher orders apply the same checks to the functions ``x ↦ jvp(f, x, v)`` and
``x ↦ vjp(f, x)(u)``.  Only floating-point leaves are perturbed; integer and
boolean arguments are held fixed.  Random directions come from a fixed seed,
so a failure reproduces.

Complex leaves are perturbed along complex directions ``v = a + ib`` (a, b
random), so both the real and the imaginary part of every input is checked,
and complex outputs are compared in full.  The pairing ``<x, y>`` is
``Re Σ x·y`` without conjugation: with JAX's convention (transposes are plain
transposes, ``vjp(f)(u) = uᵀJ``) this is the identity ``Re<u, J v> =
Re<Jᵀu, v>`` that every linear map and its transpose satisfy, holomorphic or
not (it equals JAX's ``Re<conj(u), J v>`` check with the cotangent conjugated).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from fungrad._dtype_classes import BFLOAT16, finfo as dtype_finfo, is_inexact, issubdtype as dtype_issubdtype
from fungrad import api
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

# (eps, rtol, atol) per dtype, following JAX's test defaults
_DEFAULTS = {
    np.dtype(np.float64): (1e-4, 1e-5, 1e-5),
    np.dtype(np.float32): (1e-2, 2e-2, 2e-2),
    np.dtype(np.float16): (1e-1, 1e-1, 1e-1),
    BFLOAT16: (1e-1, 1e-1, 1e-1),         # JAX's gradient tolerance for bfloat16
    np.dtype(np.complex128): (1e-4, 1e-5, 1e-5),
    np.dtype(np.complex64): (1e-2, 2e-2, 2e-2),
}


def _is_float(x) -> bool:
    return is_inexact(np.asarray(x).dtype)


def _defaults(leaves, eps, rtol, atol):
    dts = [np.asarray(x).dtype for x in leaves if _is_float(x)]
    # the least precise leaf sets the defaults (complex64 is as coarse as float32)
    worst = max(dts, key=lambda d: dtype_finfo(d).eps) if dts else np.dtype(np.float64)
    d_eps, d_rtol, d_atol = _DEFAULTS.get(worst, _DEFAULTS[np.dtype(np.float64)])
    return (d_eps if eps is None else eps, d_rtol if rtol is None else rtol,
            d_atol if atol is None else atol)


def _random_like(rng, leaves):
    """A random direction in the tangent space: floats get N(0,1), complex
    leaves N(0,1) + i N(0,1), others (no tangent space) float0 zeros."""
    out = []
    for x in leaves:
        x = np.asarray(x)
        if dtype_issubdtype(x.dtype, np.complexfloating):
            re, im = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
            out.append((re + 1j * im).astype(x.dtype))
        elif _is_float(x):
            out.append(rng.standard_normal(x.shape).astype(x.dtype))
        else:
            out.append(np.zeros(x.shape, dtype=api.float0))
    return out


def _axpy(a, xs, ys):
    """ys + a·xs on float leaves; other leaves of ``ys`` unchanged."""
    return [np.asarray(y + a * np.asarray(x, dtype=np.asarray(y).dtype)).astype(np.asarray(y).dtype)
            if _is_float(y) else y for x, y in zip(xs, ys)]


def _inner(xs, ys) -> float:
    """Real part of the bilinear pairing sum(x*y) (JAX's convention for complex
    transposes: no conjugation)."""
    return float(sum(np.sum(np.asarray(x) * np.asarray(y)).real
                     for x, y in zip(xs, ys) if _is_float(x) and _is_float(y)))


def _flat_fun(f, in_tree):
    out_tree = []

    def flat(*leaves):
        out = f(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, tree = tree_flatten(out)
        out_tree[:] = [tree]
        return list(out_leaves)
    return flat, out_tree


def numerical_jvp(f: Callable, primals: Sequence, tangents: Sequence, eps: float):
    """Central difference of flat ``f`` at ``primals`` along ``tangents``
    (computed in float64/complex128; complex outputs keep their imaginary part)."""
    f_pos = f(*_axpy(eps, tangents, primals))
    f_neg = f(*_axpy(-eps, tangents, primals))
    return [(_widened(p) - _widened(n)) / (2 * eps)
            if _is_float(p) else np.zeros(np.shape(p)) for p, n in zip(f_pos, f_neg)]


def _widened(x):
    x = np.asarray(x)
    return x.astype(np.result_type(x.dtype, np.float64))


def _assert_close(what, got, want, rtol, atol):
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype == api.float0 or w.dtype == api.float0:
            continue
        if g.shape != w.shape:
            raise AssertionError(f"{what}: output {i} has shape {g.shape}, expected {w.shape}")
        np.testing.assert_allclose(g.astype(np.result_type(g, np.float64)),
                                   w.astype(np.result_type(w, np.float64)),
                                   rtol=rtol, atol=atol, err_msg=f"{what} (output {i})")


def check_jvp(f, args: Sequence, *, eps, rtol, atol, seed=0, what="jvp"):
    """``jvp(f)`` against central differences along a random direction."""
    leaves, tree = tree_flatten(tuple(args))
    flat, _ = _flat_fun(f, tree)
    rng = np.random.default_rng(seed)
    tangents = _random_like(rng, leaves)
    outs, out_ts = api.jvp(flat, leaves, tangents)
    _assert_close(f"{what}: primal output", outs, flat(*leaves), rtol, atol)
    _assert_close(f"{what}: tangent vs finite differences", out_ts,
                  numerical_jvp(flat, leaves, tangents, eps), rtol, atol)


def check_vjp(f, args: Sequence, *, eps, rtol, atol, seed=0, what="vjp"):
    """``vjp(f)`` via <u, J v> (finite differences) = <Jᵀu, v> (reverse mode)."""
    leaves, tree = tree_flatten(tuple(args))
    flat, _ = _flat_fun(f, tree)
    rng = np.random.default_rng(seed + 1)
    outs, pullback = api.vjp(flat, *leaves)
    _assert_close(f"{what}: primal output", outs, flat(*leaves), rtol, atol)
    cts = _random_like(rng, outs)
    v = _random_like(rng, leaves)
    ct_in = pullback([c if _is_float(o) else np.zeros(np.shape(o), api.float0)
                      for c, o in zip(cts, outs)])
    lhs = _inner(ct_in, v)
    rhs = _inner(cts, numerical_jvp(flat, leaves, v, eps))
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol + rtol * scale * 10:
        raise AssertionError(f"{what}: <Jᵀu, v> = {lhs!r} but finite differences give "
                             f"<u, J v> ≈ {rhs!r}")


def check_transpose(f, args: Sequence, *, rtol, seed=0, what="transpose"):
    """<u, J v> from jvp equals <Jᵀu, v> from vjp, to rounding error."""
    leaves, tree = tree_flatten(tuple(args))
    flat, _ = _flat_fun(f, tree)
    rng = np.random.default_rng(seed + 2)
    v = _random_like(rng, leaves)
    outs, jv = api.jvp(flat, leaves, v)
    _, pullback = api.vjp(flat, *leaves)
    u = _random_like(rng, outs)
    ju = pullback([c if _is_float(o) else np.zeros(np.shape(o), api.float0)
                   for c, o in zip(u, outs)])
    lhs, rhs = _inner(u, jv), _inner(ju, v)
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= 1e3 * rtol * scale:
        raise AssertionError(f"{what}: <u, J v> = {lhs!r} (jvp) but <Jᵀu, v> = {rhs!r} (vjp)")


def check_grads(f: Callable, args: Sequence, order: int, modes=("fwd", "rev"),
                atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` in ``modes``; raises AssertionError.

    ``args`` is a tuple of arguments (pytrees of arrays allowed).  Tolerances
    default by dtype (float64: eps=1e-4, rtol=atol=1e-5).
    """
    if isinstance(modes, str):
        modes = (modes,)
    bad = set(modes) - {"fwd", "rev"}
    if bad:
        raise ValueError(f"check_grads: unknown modes {sorted(bad)}; use 'fwd' and/or 'rev'")
    if not isinstance(args, (tuple, list)):
        raise TypeError("check_grads: args must be a tuple of arguments, e.g. (x,)")
    leaves, _ = tree_flatten(tuple(args))
    eps, rtol, atol = _defaults(leaves, eps, rtol, atol)
    _check_grads(f, tuple(args), order, tuple(modes), eps, rtol, atol, 1)


def _check_grads(f, args, order, modes, eps, rtol, atol, level):
    if order < level:
        return
    tag = f"order {level}"
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, rtol=rtol, atol=atol, seed=level, what=f"{tag} jvp")
    if "rev" in modes:
        check_vjp(f, args, eps=eps, rtol=rtol, atol=atol, seed=level, what=f"{tag} vjp")
    if "fwd" in modes and "rev" in modes:
        check_transpose(f, args, rtol=rtol, seed=level, what=f"{tag} jvp/vjp transpose")
    if order == level:
        return
    leaves, tree = tree_flatten(args)
    rng = np.random.default_rng(100 + level)
    if "fwd" in modes:
        v = tree_unflatten(tree, _random_like(rng, leaves))
        f_jvp = lambda *a: api.jvp(f, a, tuple(v))[1]
        _check_grads(f_jvp, args, order, modes, eps, rtol, atol, level + 1)
    if "rev" in modes:
        out = f(*args)
        out_leaves, out_tree = tree_flatten(out)
        u = tree_unflatten(out_tree, [c if _is_float(o) else np.zeros(np.shape(o), api.float0)
                                      for c, o in zip(_random_like(rng, out_leaves), out_leaves)])
        f_vjp = lambda *a: api.vjp(f, *a)[1](u)
        _check_grads(f_vjp, args, order, modes, eps, rtol, atol, level + 1)
