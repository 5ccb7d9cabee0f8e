"""Pure-NumPy reductions of general square matrices: the Householder reflector
(LAPACK's ``larfg``), the Hessenberg reduction in LAPACK's packed form
(``gehrd``) and the Schur decomposition (``gees``): the implicit double-shift
Francis QR algorithm for real matrices (the real Schur form, 2x2 blocks for
complex pairs, standardised as LAPACK's ``lanv2`` does) and the single-shift
QR algorithm for complex ones (upper triangular).

Conventions are LAPACK's, so the packed outputs equal SciPy's ``lapack``
wrappers: a reflector is ``H = I - tau v v^H`` with ``v[0] = 1``, chosen so that
``H^H [alpha, x] = [beta, 0]`` with ``beta`` real.  A batch of matrices is
reduced one matrix at a time.  A QR iteration that does not converge in
``30 n`` sweeps gives NaNs (JAX's answer for a LAPACK failure).
"""
from __future__ import annotations

import numpy as np

__all__ = ["householder", "hessenberg", "schur"]


def householder(alpha, x):
    """``(v_tail, tau, beta)`` of the reflector mapping ``[alpha, x]`` to
    ``[beta, 0]`` (LAPACK ``larfg``; ``tau = 0`` when there is nothing to do)."""
    xnorm = np.linalg.norm(x)
    if xnorm == 0 and np.imag(alpha) == 0:
        return np.zeros_like(x), 0 * alpha, alpha
    beta = -np.copysign(np.hypot(np.abs(alpha), xnorm), np.real(alpha))
    tau = (beta - alpha) / beta
    return x / (alpha - beta), tau, beta


def _apply_left(a, v, tau):
    """``a <- H^H a`` for ``H = I - tau v v^H`` (in place)."""
    a -= np.conj(tau) * np.outer(v, np.conj(v) @ a)


def _apply_right(a, v, tau):
    """``a <- a H`` (in place)."""
    a -= tau * np.outer(a @ v, np.conj(v))


def _hessenberg_one(a):
    a = a.copy()
    n = a.shape[-1]
    taus = np.zeros(max(n - 1, 0), a.dtype)
    for i in range(n - 1):      # the last reflector makes a complex subdiagonal real
        tail, tau, beta = householder(a[i + 1, i], a[i + 2:, i])
        v = np.concatenate([np.ones(1, a.dtype), tail])
        _apply_right(a[:, i + 1:], v, tau)
        _apply_left(a[i + 1:, i + 1:], v, tau)
        a[i + 1, i], a[i + 2:, i], taus[i] = beta, tail, tau
    return a, taus


def _each_matrix(fn, a, n_out):
    """``fn`` (one matrix -> ``n_out`` arrays) over the leading axes of ``a``."""
    a = np.asarray(a)
    batch = a.shape[:-2]
    firsts = fn(a.reshape((-1,) + a.shape[-2:])[0]) if a.size else None
    if firsts is None:
        return None
    outs = [np.empty(batch + f.shape, f.dtype) for f in firsts]
    for index in np.ndindex(*batch):
        for out, value in zip(outs, fn(a[index])):
            out[index] = value
    return outs


def hessenberg(a):
    """``(packed, taus)``: the upper Hessenberg form of each matrix in the upper
    triangle and first subdiagonal, the reflectors below it (LAPACK ``gehrd``)."""
    a = np.asarray(a)
    n = a.shape[-1]
    outs = _each_matrix(_hessenberg_one, a, 2)
    if outs is None:
        return np.zeros(a.shape, a.dtype), np.zeros(a.shape[:-2] + (max(n - 1, 0),), a.dtype)
    return tuple(outs)


def _q_from_reflectors(packed, taus):
    """Q = H(0) H(1) ... of the Hessenberg reduction (reflector i acts on rows i+1:)."""
    n = packed.shape[-1]
    q = np.eye(n, dtype=packed.dtype)
    for i in range(n - 2, -1, -1):
        v = np.concatenate([np.ones(1, packed.dtype), packed[i + 2:, i]])
        q[i + 1:, i + 1:] -= taus[i] * np.outer(v, np.conj(v) @ q[i + 1:, i + 1:])
    return q


def _negligible(h, k):
    """Is the subdiagonal entry h[k, k-1] negligible next to its neighbours?"""
    scale = abs(h[k, k]) + abs(h[k - 1, k - 1])
    if scale == 0:
        scale = np.abs(h).sum()
    return abs(h[k, k - 1]) <= np.finfo(h.dtype).eps * scale


def _active_start(h, p):
    """The first row of the unreduced block that ends at row p (deflating)."""
    k = p
    while k > 0:
        if _negligible(h, k):
            h[k, k - 1] = 0
            return k
        k -= 1
    return 0


def _reflector3(x):
    """(v, beta) with (I - beta v v^T) x = -+|x| e_0, for a real 2- or 3-vector."""
    tail, tau, _ = householder(x[0], x[1:])
    return np.concatenate([[1.0], tail]), tau


def _francis_step(h, z, l, m, shift_sum, shift_product):
    """One implicit double-shift QR sweep on the block h[l:m+1, l:m+1], applied
    to the whole of h (so it stays the full Schur form) and to z."""
    x = h[l, l] ** 2 + h[l, l + 1] * h[l + 1, l] - shift_sum * h[l, l] + shift_product
    y = h[l + 1, l] * (h[l, l] + h[l + 1, l + 1] - shift_sum)
    w = h[l + 1, l] * h[l + 2, l + 1]
    for k in range(l, m - 1):
        v, beta = _reflector3(np.array([x, y, w]))
        r = max(l, k - 1)
        h[k:k + 3, r:] -= beta * np.outer(v, v @ h[k:k + 3, r:])
        if k > l:                 # the bulge's column is annihilated below row k
            h[k + 1:k + 3, k - 1] = 0
        top = min(k + 3, m)
        h[:top + 1, k:k + 3] -= beta * np.outer(h[:top + 1, k:k + 3] @ v, v)
        z[:, k:k + 3] -= beta * np.outer(z[:, k:k + 3] @ v, v)
        x, y = h[k + 1, k], h[k + 2, k]
        if k < m - 2:
            w = h[k + 3, k]
    v, beta = _reflector3(np.array([x, y]))
    h[m - 1:m + 1, m - 2:] -= beta * np.outer(v, v @ h[m - 1:m + 1, m - 2:])
    if m - 2 >= l:
        h[m, m - 2] = 0
    h[:m + 1, m - 1:m + 1] -= beta * np.outer(h[:m + 1, m - 1:m + 1] @ v, v)
    z[:, m - 1:m + 1] -= beta * np.outer(z[:, m - 1:m + 1] @ v, v)


def _standard_rotation(a, b, c, d):
    """(cs, sn, real) of the rotation that makes the 2x2 block [[a, b], [c, d]]
    standard (LAPACK ``lanv2``): upper triangular for real eigenvalues
    (``real``), equal diagonal and ``b c < 0`` for a complex pair."""
    eps = np.finfo(float).eps
    if c == 0:
        return 1.0, 0.0, True
    if b == 0:
        return 0.0, 1.0, True
    if a - d == 0 and np.sign(b) != np.sign(c):
        return 1.0, 0.0, False
    p = 0.5 * (a - d)
    bcmax, bcmis = max(abs(b), abs(c)), min(abs(b), abs(c)) * np.sign(b) * np.sign(c)
    scale = max(abs(p), bcmax)
    disc = p / scale * p + bcmax / scale * bcmis
    if disc >= 4 * eps:                                   # real eigenvalues
        zz = p + np.copysign(np.sqrt(scale) * np.sqrt(disc), p)
        tau = np.hypot(c, zz)
        return zz / tau, c / tau, True
    sigma = b + c                                         # make the diagonal equal
    tau = np.hypot(sigma, a - d)
    cs = np.sqrt(0.5 * (1 + abs(sigma) / tau))
    sn = -(p / (tau * cs)) * (1.0 if sigma >= 0 else -1.0)
    rot = np.array([[cs, -sn], [sn, cs]])
    block = rot.T @ np.array([[a, b], [c, d]]) @ rot
    b2, c2 = block[0, 1], block[1, 0]
    if c2 != 0 and b2 != 0 and np.sign(b2) == np.sign(c2):   # real after all: triangular
        sab, sac = np.sqrt(abs(b2)), np.sqrt(abs(c2))
        tau = 1 / np.sqrt(abs(b2 + c2))
        cs1, sn1 = sab * tau, sac * tau
        return cs * cs1 - sn * sn1, cs * sn1 + sn * cs1, True
    if b2 == 0 and c2 != 0:
        return -sn, cs, True
    return cs, sn, c2 == 0


def _rotate(h, z, k, cs, sn, real):
    """``h <- G^T h G``, ``z <- z G`` for the rotation G in rows/columns k, k+1;
    then the block exactly standard: triangular (``real``) or equal diagonal."""
    rot = np.array([[cs, -sn], [sn, cs]])
    h[k:k + 2, :] = rot.T @ h[k:k + 2, :]
    h[:, k:k + 2] = h[:, k:k + 2] @ rot
    z[:, k:k + 2] = z[:, k:k + 2] @ rot
    if real:
        h[k + 1, k] = 0
    else:
        h[k, k] = h[k + 1, k + 1] = 0.5 * (h[k, k] + h[k + 1, k + 1])


def _shifts(h, l, m, its):
    """Sum and product of the two shifts: the eigenvalues of the trailing 2x2
    block, or LAPACK's exceptional shifts after 10 and 20 stalled sweeps."""
    if its in (10, 20):
        s = abs(h[m, m - 1]) + abs(h[m - 1, m - 2] if m - 2 >= l else 0)
        h11, h12 = 0.75 * s + h[m, m], -0.4375 * s
        return 2 * h11, h11 * h11 - h12 * s
    return (h[m - 1, m - 1] + h[m, m],
            h[m - 1, m - 1] * h[m, m] - h[m - 1, m] * h[m, m - 1])


def _hessenberg_start(a):
    """(h, z) with a = z h z^H, h upper Hessenberg (writeable copies): where
    both Schur iterations start."""
    packed, taus = _hessenberg_one(a)
    return np.triu(packed, -1), _q_from_reflectors(packed, taus)


def _real_schur_one(a):
    n = a.shape[0]
    h, z = _hessenberg_start(a)
    p, its, total = n - 1, 0, 0
    while p > 0:
        l = _active_start(h, p)
        if l == p:
            p, its = p - 1, 0
        elif l == p - 1:
            _rotate(h, z, p - 1, *_standard_rotation(h[p - 1, p - 1], h[p - 1, p],
                                                     h[p, p - 1], h[p, p]))
            p, its = p - 2, 0
        else:
            if total > 30 * max(n, 1):
                return np.full_like(a, np.nan), np.full_like(a, np.nan)
            _francis_step(h, z, l, p, *_shifts(h, l, p, its))
            its, total = its + 1, total + 1
    return np.triu(h, -1), z


def _givens(x, y):
    """Unitary G with G^H [x, y] = [r, 0]."""
    r = np.hypot(abs(x), abs(y))
    if r == 0:
        return np.eye(2, dtype=np.result_type(x, y, np.complex64))
    u0, u1 = x / r, y / r
    return np.array([[u0, -np.conj(u1)], [u1, np.conj(u0)]])


def _wilkinson_shift(h, l, m, its):
    if its in (10, 20):
        return abs(np.real(h[m, m - 1])) * 0.75 + h[m, m]
    a, b, c, d = h[m - 1, m - 1], h[m - 1, m], h[m, m - 1], h[m, m]
    half_trace, det = 0.5 * (a + d), a * d - b * c
    root = np.sqrt(half_trace * half_trace - det)
    e1, e2 = half_trace + root, half_trace - root
    return e1 if abs(e1 - d) <= abs(e2 - d) else e2


def _complex_qr_step(h, z, l, m, mu):
    x, y = h[l, l] - mu, h[l + 1, l]
    for k in range(l, m):
        g = _givens(x, y)
        h[k:k + 2, max(l, k - 1):] = np.conj(g.T) @ h[k:k + 2, max(l, k - 1):]
        if k > l:
            h[k + 1, k - 1] = 0
        top = min(k + 2, m)
        h[:top + 1, k:k + 2] = h[:top + 1, k:k + 2] @ g
        z[:, k:k + 2] = z[:, k:k + 2] @ g
        if k < m - 1:
            x, y = h[k + 1, k], h[k + 2, k]


def _complex_schur_one(a):
    n = a.shape[0]
    h, z = _hessenberg_start(a)
    p, its, total = n - 1, 0, 0
    while p > 0:
        l = _active_start(h, p)
        if l == p:
            p, its = p - 1, 0
            continue
        if total > 30 * max(n, 1):
            return np.full_like(a, np.nan), np.full_like(a, np.nan)
        _complex_qr_step(h, z, l, p, _wilkinson_shift(h, l, p, its))
        its, total = its + 1, total + 1
    return np.triu(h), z


def schur(a, *, compute_schur_vectors=True):
    """``[t, z]`` (``[t]`` without vectors) with ``a = z t z^H``, ``z`` unitary and
    ``t`` the real Schur form (real input) or upper triangular (complex input)."""
    a = np.asarray(a)
    one = _complex_schur_one if np.iscomplexobj(a) else _real_schur_one
    outs = _each_matrix(one, a, 2)
    if outs is None:
        outs = [np.zeros(a.shape, a.dtype), np.zeros(a.shape, a.dtype)]
    t, z = outs
    return [t, z] if compute_schur_vectors else [t]
