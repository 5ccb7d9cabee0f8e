"""Condensed forms of matrices and the tridiagonal solve (``jax.lax.linalg``):
the ``hessenberg``, ``schur``, ``tridiagonal`` and ``tridiagonal_solve``
primitives, each with all of its rules.

* ``hessenberg(a) -> (packed, taus)``: LAPACK ``gehrd``'s packed form: the
  upper Hessenberg matrix H in the upper triangle and first subdiagonal, the
  Householder reflectors below it, their scalar factors in ``taus`` (..., n-1);
  ``householder_product`` of the reflectors gives Q with ``a = Q H Q^H``.
* ``schur(a) -> (t, z)``: ``a = z t z^H`` with ``z`` orthogonal/unitary; ``t`` is
  the real Schur form of a real matrix (1x1 and standardised 2x2 diagonal
  blocks, a 2x2 block per complex-conjugate pair of eigenvalues) and upper
  triangular for a complex one (see ``kernels/schur.py``).  The order of the
  eigenvalues along the diagonal is the QR algorithm's, as LAPACK's (not
  sorted); ``sort_eig_vals``/``select_callable`` raise, as in JAX.
* ``tridiagonal(a, lower) -> (packed, d, e, taus)``: ``Q^H A Q = T`` in LAPACK
  ``sytrd``/``hetrd``'s packed form (one triangle of ``a`` read; ``d``, ``e``
  real).
* ``tridiagonal_solve(dl, d, du, b)``: ``A x = b`` for the tridiagonal ``A``
  with ``dl[i] = A[i, i-1]``, ``d[i] = A[i, i]``, ``du[i] = A[i, i+1]``
  (``dl[0]`` and ``du[-1]`` unused), ``b`` (..., m, k); Gaussian elimination
  with partial pivoting (LAPACK ``gtsv``), NaNs for a singular matrix.  JVP
  (JAX's): ``dx = A⁻¹ (db - dA x)``, one solve; linear in ``b``, whose
  transpose solves with ``Aᵀ`` (the diagonals shifted: ``dlᵀ = [0, du[:-1]]``,
  ``duᵀ = [dl[1:], 0]``; no conjugation, JAX's convention).

The three reductions have no derivative, as in JAX (their JVP raises for a
nonzero tangent; ``eig``/``eigh`` are differentiable).  Batching: leading
axes, natively.  Impls and lowerings: the kernels of
``fungrad.lax.kernels.schur`` and ``fungrad.lax.kernels.tridiagonal``.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo
from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal, tangent_aval
from fungrad.lax.kernels import schur as _schur_kernels, tridiagonal as _tridiagonal_kernels
from fungrad.lax.elementwise import add, mul, neg
from fungrad.lax.structural import concatenate, full_like, pad, reshape, slice
from fungrad.lax.utils import as_operand, checked_bind, def_kernel
from fungrad.lax._matrix import _MATRIX_DTYPES, _batch_at_front, _check_square_float

__all__ = ["hessenberg", "schur", "tridiagonal", "tridiagonal_solve", "hessenberg_p", "schur_p",
           "tridiagonal_p", "tridiagonal_solve_p"]


def not_differentiable(prim, advice):
    """A JVP rule for a primitive without a derivative (as in JAX): zero tangents
    pass, a nonzero one raises NotImplementedError naming ``advice``."""
    def jvp(primals, tangents, **params):
        if any(type(t) is not Zero for t in tangents):
            raise NotImplementedError(f"lax.linalg.{prim.name} is not differentiable (nor in "
                                      f"JAX); {advice}")
        outs = prim.bind(*primals, **params)
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    prim.jvp = jvp


# --- hessenberg ------------------------------------------------------------------

def _hessenberg_shape(a):
    _check_square_float("hessenberg", a)
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]


hessenberg_p = Primitive("hessenberg", multiple_results=True)
def_kernel(hessenberg_p, _schur_kernels.hessenberg)
hessenberg_p.def_abstract_eval(_hessenberg_shape)
not_differentiable(hessenberg_p, "the Hessenberg form is a step towards eigenvalues: use "
                                 "eig or eigh for differentiable ones")
_batch_at_front(hessenberg_p)


def hessenberg(a):
    """``(packed, taus)``: the upper Hessenberg reduction ``a = Q H Q^H`` in LAPACK's
    packed form (``jax.lax.linalg.hessenberg``); ``Q = householder_product`` of
    the reflectors below the subdiagonal (shifted down one row) and ``taus``."""
    return tuple(checked_bind(hessenberg_p, as_operand(a)))


# --- schur -----------------------------------------------------------------------

def _schur_shape(a, *, compute_schur_vectors):
    _check_square_float("schur", a)
    return [ShapedArray(a.shape, a.dtype)] * (2 if compute_schur_vectors else 1)


schur_p = Primitive("schur", multiple_results=True)
def_kernel(schur_p, _schur_kernels.schur)
schur_p.def_abstract_eval(_schur_shape)
not_differentiable(schur_p, "use eig (differentiable eigenvalues and vectors) or eigh")
_batch_at_front(schur_p)


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """Schur decomposition ``x = z t z^H`` (``jax.lax.linalg.schur``): ``(t, z)``, or
    ``(t,)`` without vectors (JAX returns a 1-tuple too).  Real input: the real
    Schur form; complex input: upper triangular ``t``.  Sorting the eigenvalues
    is not implemented (nor in JAX's LAPACK lowering)."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sort_eig_vals / select_callable are not "
                                  "implemented (nor in JAX); reorder the eigenvalues of t "
                                  "yourself, or use eig")
    return tuple(checked_bind(schur_p, as_operand(x),
                              compute_schur_vectors=bool(compute_schur_vectors)))


# --- tridiagonal -----------------------------------------------------------------

def _tridiagonal_shape(a, *, lower):
    _check_square_float("tridiagonal", a)
    batch, n = a.shape[:-2], a.shape[-1]
    real = dtype_finfo(a.dtype).dtype
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (n,), real),
            ShapedArray(batch + (max(n - 1, 0),), real),
            ShapedArray(batch + (max(n - 1, 0),), a.dtype)]


tridiagonal_p = Primitive("tridiagonal", multiple_results=True)
def_kernel(tridiagonal_p, _tridiagonal_kernels.tridiagonal)
tridiagonal_p.def_abstract_eval(_tridiagonal_shape)
not_differentiable(tridiagonal_p, "use eigh for differentiable eigenvalues")
_batch_at_front(tridiagonal_p)


def tridiagonal(a, *, lower=True):
    """``(packed, d, e, taus)``: the reduction ``Q^H a Q = T`` of a Hermitian matrix
    to tridiagonal form (``jax.lax.linalg.tridiagonal``), reading the ``lower``
    (or upper) triangle: ``d`` the diagonal and ``e`` the off-diagonal of T,
    the reflectors of Q packed beyond the off-diagonal with factors ``taus``."""
    return tuple(checked_bind(tridiagonal_p, as_operand(a), lower=bool(lower)))


# --- tridiagonal_solve --------------------------------------------------------------

def _tridiagonal_solve_shape(dl, d, du, b):
    avals = dict(dl=dl, d=d, du=du, b=b)
    for name, aval in avals.items():
        if aval.dtype not in _MATRIX_DTYPES:
            raise TypeError(f"tridiagonal_solve: {name} must be float32/float64/complex64/"
                            f"complex128, got {aval.dtype.name}")
    if len({a.dtype for a in avals.values()}) != 1:
        raise TypeError("tridiagonal_solve: dl, d, du and b must share one dtype, got "
                        + ", ".join(f"{k} {a.dtype.name}" for k, a in avals.items()))
    if dl.shape != d.shape or du.shape != d.shape or d.ndim < 1:
        raise ValueError(f"tridiagonal_solve: dl, d and du must have one shape (..., m), got "
                         f"{dl.shape}, {d.shape} and {du.shape}")
    if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
        raise ValueError(f"tridiagonal_solve: b must be (..., m, k) with (..., m) the "
                         f"diagonals' shape {d.shape}, got {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _rows(x, start, stop):
    """``x[..., start:stop, :]`` of a stack of matrices."""
    shape = get_aval(x).shape
    nd = len(shape)
    return slice(x, (0,) * (nd - 2) + (start, 0), shape[:-2] + (stop, shape[-1]))


def _entries(v, start, stop):
    """``v[..., start:stop, None]`` of a stack of vectors."""
    shape = get_aval(v).shape
    part = slice(v, (0,) * (len(shape) - 1) + (start,), shape[:-1] + (stop,))
    return reshape(part, get_aval(part).shape + (1,))


def _shift_rows(x, low, high):
    """Pad the row axis of a stack of matrices with ``low``/``high`` zero rows."""
    nd = len(get_aval(x).shape)
    config = [(0, 0, 0)] * (nd - 2) + [(low, high, 0), (0, 0, 0)]
    return pad(x, np.zeros((), get_aval(x).dtype), config)


def _tridiagonal_product(dl, d, du, x):
    """``A x`` for the tridiagonal ``A`` of (dl, d, du) and x (..., m, k)."""
    m = get_aval(d).shape[-1]
    out = mul(reshape(d, get_aval(d).shape + (1,)), x)
    if m > 1:
        out = add(out, _shift_rows(mul(_entries(dl, 1, m), _rows(x, 0, m - 1)), 1, 0))
        out = add(out, _shift_rows(mul(_entries(du, 0, m - 1), _rows(x, 1, m)), 0, 1))
    return out


def _tridiagonal_solve_jvp(primals, tangents):
    dl, d, du, b = primals
    *diag_dots, b_dot = tangents
    x = tridiagonal_solve_p.bind(dl, d, du, b)
    if all(type(t) is Zero for t in tangents):
        return x, Zero(tangent_aval(get_aval(x)))
    rhs = instantiate_zeros(b_dot)
    if any(type(t) is not Zero for t in diag_dots):
        rhs = add(rhs, neg(_tridiagonal_product(*map(instantiate_zeros, diag_dots), x)))
    return x, tridiagonal_solve_p.bind(dl, d, du, rhs)


def _transposed_diagonals(dl, du):
    """The (dl, du) of Aᵀ: its subdiagonal is A's superdiagonal, one place down."""
    m = get_aval(dl).shape[-1]
    if m < 2:              # no off-diagonal: the entries are unused
        return dl, du
    first, last = (slice(v, (0,) * (get_aval(v).ndim - 1) + (i,), get_aval(v).shape[:-1] + (j,))
                   for v, (i, j) in ((du, (0, m - 1)), (dl, (1, m))))
    zero = full_like(slice(dl, (0,) * get_aval(dl).ndim, get_aval(dl).shape[:-1] + (1,)), 0)
    axis = get_aval(dl).ndim - 1
    return concatenate([zero, first], axis), concatenate([last, zero], axis)


def _tridiagonal_solve_transpose(ct, dl, d, du, b):
    assert is_undefined_primal(b) and not any(map(is_undefined_primal, (dl, d, du)))
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    dl_t, du_t = _transposed_diagonals(dl, du)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct)]


def _tridiagonal_solve_batch(axis_size, vals, dims):
    vals = [batching.bdim_at_front(v, dim, axis_size) for v, dim in zip(vals, dims)]
    return tridiagonal_solve_p.bind(*vals), 0


tridiagonal_solve_p = Primitive("tridiagonal_solve")
def_kernel(tridiagonal_solve_p, _tridiagonal_kernels.tridiagonal_solve)
tridiagonal_solve_p.def_abstract_eval(_tridiagonal_solve_shape)
tridiagonal_solve_p.jvp = _tridiagonal_solve_jvp
tridiagonal_solve_p.transpose = _tridiagonal_solve_transpose
tridiagonal_solve_p.linear = True   # in b (the diagonals are never undefined primals)
tridiagonal_solve_p.batch = _tridiagonal_solve_batch


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """``x`` with ``A x = b`` for the tridiagonal ``A`` of ``dl`` (``dl[i] = A[i,
    i-1]``), ``d`` and ``du`` (``du[i] = A[i, i+1]``), all (..., m); ``b`` is (...,
    m, k) (``jax.lax.linalg.tridiagonal_solve``).  Partial pivoting; NaNs if A
    is singular.  ``perturb_singular=True`` is not supported."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not "
                                  "supported; regularise d instead")
    dl, d, du, b = (as_operand(v) for v in (dl, d, du, b))
    return checked_bind(tridiagonal_solve_p, dl, d, du, b)
