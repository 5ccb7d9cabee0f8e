"""Non-symmetric eigendecomposition: the ``eig`` primitive with all its rules,
and the public functions built on it.

* ``eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True)``
  is ``jax.lax.linalg.eig``: ``(w, vl, vr)`` (the vectors only if asked for),
  complex outputs, LAPACK ``geev`` conventions (see ``kernels/eig.py``): unit
  2-norm vectors whose largest-modulus component is real; ``vl`` is *not*
  rescaled by ``vl^H vr``.
* ``eig_numpy(a)`` / ``eigvals(a)``: ``numpy.linalg.eig``/``eigvals`` semantics
  with JAX's always-complex outputs (re-exported as ``fungrad.numpy.linalg``'s
  ``eig``/``eigvals``); ``sqrtm(A)``: ``scipy.linalg.sqrtm`` for diagonalisable
  matrices (re-exported from ``fungrad.scipy.linalg``).

Derivatives (distinct eigenvalues assumed, as for ``eigh``; repeated ones give
inf/nan).  With U = vl, V = vr, D = diag(U^H V) (so V^-1 = D^-1 U^H) and
M = V^-1 dA V:

* eigenvalues: dw_i = M_ii = (u_i^H dA v_i) / (u_i^H v_i);
* right vectors: dV = V (F o M) + V diag(c), F_ij = 1/(w_j - w_i) (0 on the
  diagonal); left vectors likewise, as right eigenvectors of A^H.
* The gauge term diag(c) is *LAPACK's own normalisation* differentiated:
  Re(v^H dv) = 0 keeps the unit norm and Im(dv_k) = 0 keeps the largest-
  modulus component k real, so the JVP is the derivative of the vectors eig
  actually returns (away from ties in |v_k| and eigenvalue crossings).

JAX differentiates eigenvalues only (and raises for eigenvectors unless
``enable_eigvec_derivs``); here eigenvector derivatives are always available
and ``enable_eigvec_derivs`` is accepted and ignored.  The JVP rule always
computes both vector sets (one internal ``eig`` call), so every output's
derivative is available, and derivatives of any order follow by re-tracing.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype, kind as dtype_kind
from fungrad.core import Primitive, ShapedArray, Tracer, get_aval
from fungrad.interpreters import batching
from fungrad.lax.kernels.eig import eig as _eig_numpy
from fungrad.lax.elementwise import (add, sub, mul, div, neg, conj, real, imag, complex,
                                     convert_element_type, eq, abs, sqrt, stop_gradient)
from fungrad.lax.reductions import reduce_sum, argmax
from fungrad.lax._matrix import _mm, _mT, _diag_part, _as_row, _as_col, _shape
from fungrad.lax.utils import as_operand, checked_bind, def_kernel

__all__ = ["eig", "eig_numpy", "eigvals", "sqrtm", "EigResult"]

_FLOATS = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


# ============================================================================
# The primitive
# ============================================================================

def _eig_shape(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"eig expects square matrices (an array of shape (..., n, n)), "
                         f"got shape {a.shape}")
    if a.dtype not in _FLOATS:
        raise TypeError(f"eig supports float32/float64/complex64/complex128 matrices, got "
                        f"{a.dtype.name}; convert the input (e.g. x.astype(float)).")
    cdt = np.result_type(a.dtype, np.complex64)
    vectors = [ShapedArray(a.shape, cdt)] * (compute_left_eigenvectors
                                             + compute_right_eigenvectors)
    return [ShapedArray(a.shape[:-1], cdt)] + vectors


def _off_diagonal_inverse_gaps(w):
    """F with F_ij = 1/(w_j - w_i) off the diagonal and 0 on it."""
    n, dtype = _shape(w)[-1], get_aval(w).dtype
    eye = np.eye(n, dtype=dtype)
    return sub(div(np.asarray(1, dtype), add(sub(_as_row(w), _as_col(w)), eye)), eye)


def _largest_component_mask(v):
    """0/1 matrix marking, in each column of ``v``, the component of largest
    modulus (the one LAPACK makes real).  A constant: no derivative."""
    nd, n = len(_shape(v)), _shape(v)[-1]
    k = argmax(abs(stop_gradient(v)), nd - 2, np.int32)
    hit = eq(_as_row(k), np.arange(n, dtype=np.int32)[:, None])
    return convert_element_type(hit, get_aval(v).dtype)


def _gauge_fixed(v, dv):
    """``dv + v diag(c)`` with c chosen so that the columns keep unit norm
    (Re(v^H dv) = 0) and their largest component stays real (Im(dv_k) = 0)."""
    axis = len(_shape(v)) - 2
    re_c = neg(real(reduce_sum(mul(conj(v), dv), (axis,))))
    mask = _largest_component_mask(v)
    dv_k = reduce_sum(mul(mask, dv), (axis,))
    v_k = real(reduce_sum(mul(mask, v), (axis,)))
    im_c = neg(div(imag(dv_k), v_k))
    return add(dv, mul(v, _as_row(complex(re_c, im_c))))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    # M = V^-1 dA V = D^-1 U^H dA V with D = diag(U^H V) (U^H V is diagonal for
    # distinct eigenvalues).  dw = diag(M); dV = V (F o M) + gauge;
    # U are right eigenvectors of A^H: M' = U^-1 dA^H U = (M_raw D^-1)^H and
    # F' = conj(F), so dU = U (conj(F) o M') + gauge.
    (a,), (da,) = primals, tangents
    w, vl, vr = eig_p.bind(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
    da = convert_element_type(da, get_aval(w).dtype)
    vl_h = conj(_mT(vl))
    m_raw = _mm(vl_h, _mm(da, vr))
    d = _diag_part(_mm(vl_h, vr))
    m = div(m_raw, _as_col(d))
    outs, tans = [w], [_diag_part(m)]
    f = _off_diagonal_inverse_gaps(w)
    if compute_left_eigenvectors:
        m_left = conj(_mT(div(m_raw, _as_row(d))))
        outs.append(vl)
        tans.append(_gauge_fixed(vl, _mm(vl, mul(conj(f), m_left))))
    if compute_right_eigenvectors:
        outs.append(vr)
        tans.append(_gauge_fixed(vr, _mm(vr, mul(f, m))))
    return outs, tans


def _eig_batch(axis_size, vals, dims, **params):
    (x,), (d,) = vals, dims
    out = eig_p.bind(batching.moveaxis(x, d, 0), **params)
    return out, [0] * len(out)


eig_p = Primitive("eig", multiple_results=True)
def_kernel(eig_p, _eig_numpy)
eig_p.def_abstract_eval(_eig_shape)
eig_p.jvp = _eig_jvp
eig_p.batch = _eig_batch


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
    """Eigendecomposition of general square matrices (``jax.lax.linalg.eig``).

    Returns ``(w, vl, vr)``: complex eigenvalues (..., n) and, if asked for, the
    left and right eigenvectors as columns (..., n, n), LAPACK-normalised (unit
    norm, largest component real).  ``A @ vr[..., i] = w[i] vr[..., i]`` and
    ``vl[..., i]^H A = w[i] vl[..., i]^H``.  Derivatives of eigenvalues and
    eigenvectors assume distinct eigenvalues; ``enable_eigvec_derivs``,
    ``implementation`` and ``use_magma`` are accepted for JAX compatibility.
    """
    outs = checked_bind(eig_p, as_operand(x),
                        compute_left_eigenvectors=bool(compute_left_eigenvectors),
                        compute_right_eigenvectors=bool(compute_right_eigenvectors))
    return tuple(outs)


# ============================================================================
# numpy.linalg / scipy.linalg level
# ============================================================================

class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


def _square_operand(name, a):
    """``a`` as an inexact array of square matrices: integers and booleans become
    float64 (NumPy's rule), float16 becomes float32."""
    a = as_operand(a)
    aval = get_aval(a)
    if dtype_kind(aval.dtype) in "biu":
        a = convert_element_type(a, np.float64)
    elif aval.dtype == np.float16:
        a = convert_element_type(a, np.float32)
    if aval.ndim < 2 or aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"linalg.{name}: expected square matrices (..., M, M), got an "
                         f"array of shape {aval.shape}")
    return a


def eig_numpy(a):
    """``EigResult(eigenvalues, eigenvectors)`` as ``numpy.linalg.eig`` (re-exported
    as ``fungrad.numpy.linalg.eig``), always complex, as JAX.  Differentiable
    (distinct eigenvalues)."""
    w, v = eig(_square_operand("eig", a), compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Complex eigenvalues of general square matrices (``numpy.linalg.eigvals``)."""
    return eig(_square_operand("eigvals", a), compute_left_eigenvectors=False,
               compute_right_eigenvectors=False)[0]


def _has_negative_real_eigenvalue(w):
    w = np.asarray(w)
    return bool(np.any((w.imag == 0) & (w.real < 0)))


def sqrtm(A, disp=True, blocksize=64):
    """Principal matrix square root (``scipy.linalg.sqrtm``) of diagonalisable
    matrices (..., n, n), computed as V sqrt(Λ) V^-1 from ``eig``.

    Output dtype: complex for complex input; for real input real, except that a
    concrete (not traced) input with an eigenvalue on the negative real axis
    gives a complex result, as SciPy.  Under jit/vmap/grad a real input always
    gives the real part.  Limits: defective or nearly defective matrices give
    inaccurate results (SciPy's Schur method does not); derivatives need
    distinct, nonzero eigenvalues.  ``disp``/``blocksize`` are accepted for
    SciPy compatibility.
    """
    a = _square_operand("sqrtm", A)
    w, vl, vr = eig(a)
    vl_h = conj(_mT(vl))
    scale = div(sqrt(w), _diag_part(_mm(vl_h, vr)))
    x = _mm(mul(vr, _as_row(scale)), vl_h)
    if dtype_issubdtype(get_aval(a).dtype, np.complexfloating):
        return x
    if not isinstance(w, Tracer) and _has_negative_real_eigenvalue(w):
        return x
    return real(x)
