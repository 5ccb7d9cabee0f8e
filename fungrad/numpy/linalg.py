"""``fungrad.numpy.linalg``: NumPy's / ``jax.numpy.linalg``'s functions on the
primitives of ``fungrad.lax.linalg``.

Integer inputs are promoted to float64 as NumPy does; complex64/complex128
matrices work in every function (Hermitian where NumPy says symmetric:
``cholesky``, ``eigh``; real eigenvalues, singular values and norms; complex
``slogdet`` sign).  Failures follow JAX: a
singular matrix gives inf/nan from ``solve``/``inv`` and a non-positive-definite
one NaNs from ``cholesky`` instead of ``LinAlgError``.

Differentiation notes: ``solve``/``inv`` use the ``linear_solve`` primitive
(JVP through itself: any order); ``det`` has the adjugate as its gradient, so
the gradient is finite at singular matrices; ``eigh``/``svd`` derivatives
assume distinct eigen/singular values; ``pinv``/``lstsq`` assume a locally
constant rank.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, issubdtype as dtype_issubdtype
from fungrad import lax
from fungrad.core import Tracer, get_aval
from fungrad.lax import linalg as lax_linalg
from fungrad.numpy._dtypes import promote
from fungrad.numpy import _products

from fungrad.lax.eig import eig_numpy as eig, eigvals, EigResult  # noqa: E402,F401
from fungrad.lax.utils import check_precision

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigvals", "EigResult",
           "eigh", "eigvalsh", "inv",
           "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet",
           "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace",
           "vecdot", "vector_norm", "EighResult", "QRResult", "SlogdetResult",
           "SVDResult"]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _fnp():
    import fungrad.numpy as fnp  # late: this module is imported by fungrad.numpy
    return fnp


def _shape(x):
    return get_aval(x).shape


def _matrix_operand(name, a, square=True):
    """``a`` as a float array of rank >= 2 (square if asked), with a clear error."""
    (a,) = promote(name, a, to_float=True)
    s = _shape(a)
    if len(s) < 2 or (square and s[-1] != s[-2]):
        kind = "square matrices (..., M, M)" if square else "matrices (..., M, N)"
        raise ValueError(f"linalg.{name}: expected {kind}, got an array of shape {s}")
    return a


def _eye_like(a):
    n, dtype = _shape(a)[-1], get_aval(a).dtype
    return lax.broadcast_in_dim(np.eye(n, dtype=dtype), _shape(a), (len(_shape(a)) - 2,
                                                                     len(_shape(a)) - 1))


def _mH(x):
    """Conjugate transpose of the last two axes."""
    return lax_linalg._H(x)


# --- solve, inv, det, slogdet -------------------------------------------------------------

def solve(a, b, /):
    """Solve ``a @ x = b``.  As in NumPy 2, ``b`` is a vector only when it is 1-D;
    otherwise it is a stack of matrices (..., M, K) broadcast against ``a``."""
    a = _matrix_operand("solve", a)
    a, b = promote("solve", a, b, to_float=True)
    sa, sb = _shape(a), _shape(b)
    n = sa[-1]
    if len(sb) == 0 or (sb[-1] if len(sb) == 1 else sb[-2]) != n:
        raise ValueError(f"linalg.solve: a {sa} and b {sb} are incompatible: b must be "
                         f"({n},) or (..., {n}, K)")
    if len(sb) == 1:
        x = _solve_matrix(a, lax.reshape(b, (n, 1)))
        return lax.reshape(x, _shape(x)[:-1])
    return _solve_matrix(a, b)


def _solve_matrix(a, b):
    sa, sb = _shape(a), _shape(b)
    if len(sa) == 2 and len(sb) > 2:
        # one matrix, many right-hand sides: one factorisation, columns side by side
        nb = len(sb) - 2
        cols = lax.transpose(b, (nb,) + tuple(range(nb)) + (nb + 1,))  # (n, batch..., k)
        n_cols = int(np.prod(sb[:-2] + sb[-1:], dtype=np.int64))
        x = lax_linalg.linear_solve(a, lax.reshape(cols, (sb[-2], n_cols)))
        x = lax.reshape(x, (sb[-2],) + sb[:-2] + (sb[-1],))
        return lax.transpose(x, tuple(range(1, nb + 1)) + (0, nb + 1))
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise ValueError(f"linalg.solve: batch dimensions of a {sa} and b {sb} do not "
                         "broadcast together") from None
    a = _broadcast_batch(a, batch)
    b = _broadcast_batch(b, batch)
    return lax_linalg.linear_solve(a, b)


def _broadcast_batch(x, batch):
    s = _shape(x)
    if s[:-2] == batch:
        return x
    nb = len(batch)
    return lax.broadcast_in_dim(x, batch + s[-2:], tuple(range(nb - len(s) + 2, nb + 2)))


def inv(a, /):
    """Inverse of square matrices (..., M, M); inf/nan for singular ones."""
    a = _matrix_operand("inv", a)
    return lax_linalg.linear_solve(a, _eye_like(a))


def det(a, /):
    """Determinant of square matrices.  Its gradient is the transposed adjugate,
    finite for singular matrices too."""
    return lax_linalg.det(_matrix_operand("det", a))


def slogdet(a, /):
    """``SlogdetResult(sign, logabsdet)`` of square matrices."""
    return SlogdetResult(*lax_linalg.slogdet(_matrix_operand("slogdet", a)))


# --- decompositions ----------------------------------------------------------------------

def cholesky(a, /, *, upper=False, symmetrize_input=True):
    """Cholesky factor L (a = L Lᴴ), or U = Lᴴ with ``upper``; NaNs if not PD.

    ``a`` is symmetric (complex: Hermitian) positive definite."""
    a = _matrix_operand("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mH(factor) if upper else factor


def qr(a, /, mode="reduced"):
    """QR decomposition; ``mode`` is 'reduced', 'complete' or 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode={mode!r} is not supported; use 'reduced', "
                         "'complete' or 'r'")
    a = _matrix_operand("qr", a, square=False)
    q, r = lax_linalg.qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def eigh(a, /, UPLO=None, symmetrize_input=True):
    """``EighResult(eigenvalues, eigenvectors)`` of symmetric (complex: Hermitian)
    matrices, eigenvalues ascending and real.  Derivatives assume distinct
    eigenvalues."""
    lower = _uplo_is_lower(UPLO)
    a = _matrix_operand("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def _uplo_is_lower(UPLO):
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO != "U"


def eigvalsh(a, /, UPLO="L", *, symmetrize_input=True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, /, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """``SVDResult(U, S, Vh)`` (or ``S``) with descending singular values.  The
    derivative of U/Vh needs full_matrices=False for non-square matrices.
    ``subset_by_index=(start, end)`` (with full_matrices=False) keeps singular
    values start..end-1, as JAX."""
    a = _matrix_operand("svd", a, square=False)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=False, compute_uv=False,
                              subset_by_index=subset_by_index)
    return SVDResult(*lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                                     subset_by_index=subset_by_index))


def svdvals(x, /):
    return svd(x, compute_uv=False)


# --- pseudo-inverse, least squares, rank ------------------------------------------------

def pinv(a, /, rtol=None, hermitian=False, *, rcond=None):
    """Moore-Penrose pseudo-inverse; singular values at most ``rtol * max(s)`` are
    dropped (default ``rtol`` 1e-15, NumPy's).  Derivative assumes constant rank."""
    a = _matrix_operand("pinv", a, square=False)
    cutoff = rcond if rcond is not None else rtol
    cutoff = 1e-15 if cutoff is None else _static_float(cutoff, "pinv's rtol")
    return lax_linalg.pinv(a, cutoff)


def _static_float(x, what):
    if isinstance(x, Tracer) or np.ndim(x) != 0:
        raise TypeError(f"{what} must be a Python/NumPy scalar (a fixed setting), got "
                        f"{type(x).__name__}")
    return float(x)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """Least squares ``min ||a x - b||``: ``(x, residuals, rank, s)``.

    As JAX (``numpy_resid=False``), residuals are always ``||b - a x||²`` per
    column (shape (K,) or () for 1-D b); ``numpy_resid=True`` gives NumPy's
    convention (an empty array unless a has full column rank and M > N), which
    needs concrete values.
    """
    fnp = _fnp()
    a = _matrix_operand("lstsq", a, square=False)
    a, b = promote("lstsq", a, b, to_float=True)
    (m, n), sb = _shape(a), _shape(b)
    if len(_shape(a)) != 2 or len(sb) not in (1, 2) or sb[0] != m:
        raise ValueError(f"linalg.lstsq: a must be (M, N) and b (M,) or (M, K); got a "
                         f"{_shape(a)} and b {sb}")
    rcond = float(dtype_finfo(get_aval(a).dtype).eps * max(m, n)) if rcond is None else (
        _static_float(rcond, "lstsq's rcond"))
    x = _products.matmul(lax_linalg.pinv(a, rcond), b)
    s = svdvals(a)
    # int32, as NumPy's lstsq (LAPACK's rank)
    rank = _count_above(s, rcond) if _shape(s)[-1] else np.asarray(0, np.int32)
    resid = fnp.sum(_abs_square(fnp.subtract(b, _products.matmul(a, x))), axis=0)
    if numpy_resid:
        full = int(rank) == n and m > n
        resid = lax.reshape(resid, (1,)) if full and len(sb) == 1 else resid
        resid = resid if full else np.zeros((0,), get_aval(a).dtype)
    return x, resid, rank, s


def _count_above(s, rtol):
    """Number of singular values above ``rtol * max(s)``."""
    fnp = _fnp()
    cutoff = fnp.max(s, axis=-1, keepdims=True) * rtol
    return fnp.sum(fnp.greater(s, cutoff), axis=-1).astype(np.int32)


def matrix_rank(M, /, rtol=None, *, tol=None, hermitian=False):
    """Number of singular values above ``tol`` (absolute) or ``rtol * max(s)``
    (default ``max(M, N) * eps``)."""
    fnp = _fnp()
    (M,) = promote("matrix_rank", M, to_float=True)
    if len(_shape(M)) < 2:
        return fnp.any(fnp.not_equal(M, 0)).astype(np.int64)
    s = svdvals(M)
    if tol is not None:
        tol = tol if isinstance(tol, Tracer) else float(tol) if np.ndim(tol) == 0 else tol
        return fnp.sum(fnp.greater(s, tol), axis=-1)
    if rtol is None:
        rtol = max(_shape(M)[-2:]) * float(dtype_finfo(get_aval(M).dtype).eps)
    rtol = rtol if isinstance(rtol, Tracer) or np.ndim(rtol) else float(rtol)
    cutoff = fnp.max(s, axis=-1, keepdims=True) * rtol if _shape(s)[-1] else 0.0
    return fnp.sum(fnp.greater(s, cutoff), axis=-1)


# --- powers and chains ----------------------------------------------------------------

def matrix_power(a, n, /):
    """``a`` to the integer power ``n`` by repeated squaring (n < 0: of inv(a))."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"linalg.matrix_power: exponent must be an integer, got "
                        f"{type(n).__name__}") from None
    (a,) = promote("matrix_power", a)
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"linalg.matrix_power: expected square matrices (..., M, M), got "
                         f"shape {s}")
    if n == 0:
        return _eye_like(a)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else _products.matmul(result, base)
        n >>= 1
        if n:
            base = _products.matmul(base, base)
    return result


def multi_dot(arrays, *, precision=None):
    """``arrays[0] @ arrays[1] @ ...`` in the cheapest order (matrix-chain dynamic
    programming); the first/last may be 1-D (row/column vectors)."""
    check_precision(precision, "fungrad.numpy.linalg.multi_dot")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("linalg.multi_dot: expecting at least two arrays")
    arrays = list(promote("multi_dot", *arrays))
    first_1d, last_1d = len(_shape(arrays[0])) == 1, len(_shape(arrays[-1])) == 1
    if first_1d:
        arrays[0] = lax.reshape(arrays[0], (1,) + _shape(arrays[0]))
    if last_1d:
        arrays[-1] = lax.reshape(arrays[-1], _shape(arrays[-1]) + (1,))
    for i, x in enumerate(arrays):
        if len(_shape(x)) != 2:
            raise ValueError(f"linalg.multi_dot: array {i} has shape {_shape(x)}; only the "
                             "first and last may be 1-D, the others must be 2-D")
    dims = [_shape(x)[0] for x in arrays] + [_shape(arrays[-1])[1]]
    order = _chain_order(dims)
    out = _chain_product(arrays, order, 0, len(arrays) - 1)
    shape = _shape(out)
    shape = shape[1:] if first_1d else shape
    shape = shape[:-1] if last_1d else shape
    return lax.reshape(out, shape)


def _chain_order(dims):
    """split[i][j]: where to split arrays i..j for the fewest multiplications."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain_product(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return _products.matmul(_chain_product(arrays, split, i, k),
                            _chain_product(arrays, split, k + 1, j))


# --- norms -----------------------------------------------------------------------------

def _abs_square(x):
    fnp = _fnp()
    if dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        return fnp.real(x * fnp.conj(x))
    return x * x


def _vector_norm(x, ord, axis, keepdims):
    fnp = _fnp()
    if ord is None or ord == 2:
        return fnp.sqrt(fnp.sum(_abs_square(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return fnp.max(fnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return fnp.min(fnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        dtype = np.result_type(lax_linalg._real_dtype(get_aval(x).dtype), np.float16)
        return fnp.sum(fnp.not_equal(x, 0), axis=axis, keepdims=keepdims).astype(dtype)
    if ord == 1:
        return fnp.sum(fnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: invalid norm order {ord!r} for vectors")
    ord = float(ord)
    return fnp.power(fnp.sum(fnp.power(fnp.abs(x), ord), axis=axis, keepdims=keepdims),
                     1.0 / ord)


def _matrix_norm(x, ord, axis, keepdims):
    fnp = _fnp()
    row, col = axis
    if ord in (None, "fro", "f"):
        out = fnp.sqrt(fnp.sum(_abs_square(x), axis=axis))
    elif ord in ("nuc", 2, -2):
        s = svdvals(fnp.moveaxis(x, (row, col), (-2, -1)))
        out = (fnp.sum(s, axis=-1) if ord == "nuc" else
               fnp.max(s, axis=-1) if ord == 2 else fnp.min(s, axis=-1))
    elif ord in (1, -1, np.inf, -np.inf):
        # 1: max column sum (sum over rows); inf: max row sum (sum over columns)
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        if other > summed:
            other -= 1
        total = fnp.sum(fnp.abs(x), axis=summed)
        out = fnp.max(total, axis=other) if ord > 0 else fnp.min(total, axis=other)
    else:
        raise ValueError(f"linalg.norm: invalid norm order {ord!r} for matrices; use "
                         "None, 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2")
    if keepdims:
        out = fnp.expand_dims(out, tuple(sorted((row, col))))
    return out


def _norm_axes(axis, ndim):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"linalg.norm: axis {ax} is out of bounds for an array of "
                             f"rank {ndim}")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"linalg.norm: duplicate axes in axis={axis!r}")
    return tuple(out)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm, NumPy's rules: ``axis`` None means the 2-norm of the
    flattened array (ord None), a vector norm (1-D) or a matrix norm (2-D)."""
    fnp = _fnp()
    (x,) = promote("norm", x, to_float=True)
    ndim = len(_shape(x))
    if axis is None:
        if ord is None:
            out = _vector_norm(fnp.ravel(x), None, 0, False)
            return lax.reshape(out, (1,) * ndim) if keepdims else out
        if ndim not in (1, 2):
            raise ValueError(f"linalg.norm: improper number of dimensions to norm ({ndim}); "
                             "give axis for arrays that are not 1-D or 2-D")
        axis = tuple(range(ndim))
    axes = _norm_axes(axis, ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"linalg.norm: axis must name 1 or 2 axes, got {axis!r}")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over ``axis`` (None: all elements, as one vector)."""
    fnp = _fnp()
    (x,) = promote("vector_norm", x, to_float=True)
    if axis is None:
        out = _vector_norm(fnp.ravel(x), ord, 0, False)
        return lax.reshape(out, (1,) * len(_shape(x))) if keepdims else out
    axes = _norm_axes(axis, len(_shape(x)))
    return _vector_norm(x, ord, axes if len(axes) != 1 else axes[0], keepdims)  # (): |x|


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes."""
    x = _matrix_operand("matrix_norm", x, square=False)
    nd = len(_shape(x))
    return _matrix_norm(x, ord, (nd - 2, nd - 1), keepdims)


def cond(x, p=None):
    """Condition number: ratio of extreme singular values (p None, 2, -2), else
    ``norm(x, p) * norm(inv(x), p)``."""
    fnp = _fnp()
    x = _matrix_operand("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = fnp.max(s, axis=-1), fnp.min(s, axis=-1)
        return big / small if p != -2 else small / big
    axes = (-2, -1)
    return norm(x, p, axes) * norm(inv(x), p, axes)


# --- tensor solves ----------------------------------------------------------------------

def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for x."""
    fnp = _fnp()
    a, b = promote("tensorsolve", a, b, to_float=True)
    if axes is not None:
        axes = _norm_axes(axes, len(_shape(a)))
        rest = [i for i in range(len(_shape(a))) if i not in axes]
        a = lax.transpose(a, tuple(rest) + axes)
    sb = _shape(b)
    x_shape = _shape(a)[len(sb):]
    rows, cols = int(np.prod(sb, dtype=np.int64)), int(np.prod(x_shape, dtype=np.int64))
    if rows != cols:
        raise ValueError(f"linalg.tensorsolve: a {_shape(a)} and b {sb} do not give a square "
                         f"system ({rows} equations, {cols} unknowns)")
    x = solve(lax.reshape(a, (rows, cols)), fnp.ravel(b))
    return lax.reshape(x, x_shape)


def tensorinv(a, ind=2):
    """Inverse of ``a`` as a linear map from its last axes to its first ``ind``."""
    (a,) = promote("tensorinv", a, to_float=True)
    s = _shape(a)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be positive, got {ind}")
    rows, cols = int(np.prod(s[:ind], dtype=np.int64)), int(np.prod(s[ind:], dtype=np.int64))
    if rows != cols:
        raise ValueError(f"linalg.tensorinv: shape {s} with ind={ind} is not square "
                         f"({rows} x {cols})")
    return lax.reshape(inv(lax.reshape(a, (rows, cols))), s[ind:] + s[:ind])


# --- NumPy 2 array-API functions --------------------------------------------------------

def matmul(x1, x2, /):
    return _products.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _products.tensordot(x1, x2, axes)


def vecdot(x1, x2, /, *, axis=-1):
    return _products.vecdot(x1, x2, axis=axis)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays (NumPy 2's linalg.outer)."""
    for i, x in enumerate((x1, x2)):
        if len(get_aval(x).shape) != 1:
            raise ValueError(f"linalg.outer: argument {i} must be 1-D, got shape "
                             f"{get_aval(x).shape}; use numpy.outer to flatten")
    return _products.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-element vectors along ``axis``."""
    for i, x in enumerate((x1, x2)):
        shape = get_aval(x).shape
        if not -len(shape) <= axis < len(shape) or shape[axis] != 3:
            raise ValueError(f"linalg.cross: argument {i} must have 3 elements along axis "
                             f"{axis}, got shape {get_aval(x).shape}")
    return _products.cross(x1, x2, axis=axis)


def matrix_transpose(x, /):
    return _fnp().matrix_transpose(x)


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the ``offset`` diagonal of the last two axes."""
    return _fnp().trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    return _fnp().diagonal(x, offset, -2, -1)
