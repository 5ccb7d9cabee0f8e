"""Pure-NumPy non-symmetric eigendecomposition: the impl of the ``eig``
primitive (``fungrad/lax/eig.py``) and what its jit lowering calls.

``fungrad.export`` copies this module's source into exported modules, so it
must import nothing but NumPy.

Conventions (LAPACK ``geev``'s, as ``jax.lax.linalg.eig``):

* outputs are complex (complex64 for float32/complex64 input, complex128
  otherwise), whether or not the eigenvalues happen to be real;
* right eigenvectors ``vr[..., :, i]`` satisfy ``A vr_i = w_i vr_i``, left ones
  ``vl_i^H A = w_i vl_i^H``; every vector has unit 2-norm and its component of
  largest modulus is real (LAPACK's normalisation; the left vectors are *not*
  rescaled so that ``vl^H vr = I``);
* the left vectors are the right eigenvectors of ``A^H`` (eigenvalues
  ``conj(w)``), put in the order of ``w`` by nearest-eigenvalue matching;
* failures follow JAX, not NumPy: a matrix with inf/nan entries (or one where
  LAPACK does not converge) gives NaN outputs instead of ``LinAlgError``, so
  one bad matrix does not abort a whole batch.
"""
from __future__ import annotations

import numpy as np

__all__ = ["eig"]


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


def _eig_or_nan(a, vectors):
    """``np.linalg.eig`` (or ``eigvals``) over a stack, complex outputs; the
    matrices LAPACK cannot decompose give NaN."""
    cdt = _complex_dtype(a.dtype)
    decompose = np.linalg.eig if vectors else np.linalg.eigvals
    try:
        out = decompose(a)
        return tuple(np.asarray(o, cdt) for o in out) if vectors else (np.asarray(out, cdt),)
    except np.linalg.LinAlgError:
        pass
    flat = a.reshape((-1,) + a.shape[-2:])
    w = np.full(flat.shape[:-1], np.nan, cdt)
    v = np.full(flat.shape, np.nan, cdt)
    for i, m in enumerate(flat):
        try:
            if vectors:
                w[i], v[i] = decompose(m)
            else:
                w[i] = decompose(m)
        except np.linalg.LinAlgError:
            pass
    w = w.reshape(a.shape[:-1])
    return (w, v.reshape(a.shape)) if vectors else (w,)


def _match(w, mu):
    """``perm`` with ``mu[..., perm[..., i]] ~= w[..., i]``: greedy matching of
    the closest remaining pair first (exact for distinct eigenvalues)."""
    n = w.shape[-1]
    if n == 0 or w.size == 0:
        return np.zeros(w.shape, np.intp)
    with np.errstate(invalid="ignore"):
        d = np.abs(w[..., :, None] - mu[..., None, :]).reshape(-1, n, n)
    d = np.where(np.isnan(d), np.finfo(np.float64).max, d)
    rows = np.arange(d.shape[0])
    perm = np.zeros((d.shape[0], n), np.intp)
    for _ in range(n):
        i, j = np.divmod(np.argmin(d.reshape(d.shape[0], -1), axis=1), n)
        perm[rows, i] = j
        d[rows, i, :] = np.inf
        d[rows, :, j] = np.inf
    return perm.reshape(w.shape)


def eig(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True):
    """``(w, vl, vr)`` of a stack of square matrices (..., n, n); ``vl``/``vr``
    only if asked for.  Returns a tuple of complex arrays."""
    a = np.asarray(a)
    need_right = compute_right_eigenvectors or compute_left_eigenvectors
    w, *right = _eig_or_nan(a, vectors=need_right)
    outs = [w]
    if compute_left_eigenvectors:
        mu, vl = _eig_or_nan(np.conj(np.swapaxes(a, -1, -2)), vectors=True)
        perm = _match(np.conj(w), mu)
        outs.append(np.take_along_axis(vl, perm[..., None, :], axis=-1))
    if compute_right_eigenvectors:
        outs.append(right[0])
    return tuple(outs)
