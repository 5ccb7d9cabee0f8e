"""Polynomials of ``jax.numpy`` (coefficients highest power first, as
``numpy.poly*``): evaluation, arithmetic, calculus, fitting and roots.

Every function composes ``fungrad.numpy``/``fungrad.lax`` calls, so it is
differentiable, vmappable and jittable; where the output shape depends on
the coefficients (``trim_leading_zeros``, ``roots(strip_zeros=True)``) the
coefficients must be concrete.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, kind as dtype_kind
from fungrad import lax
from fungrad.core import Tracer
from fungrad.numpy._convolve import convolve
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.numpy._util import (_builtin_range, _builtin_max, _fnp, _at, _shape, _dtype,
                                 _static_int, _concretization_error)

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit",
           "roots", "poly", "vander"]


def _coefficients(name, p):
    p = asarray_operand(p)
    if len(_shape(p)) == 0:
        p = lax.reshape(p, (1,))
    if len(_shape(p)) != 1:
        raise ValueError(f"{name}: polynomial coefficients must be 1-d, got shape {_shape(p)}")
    return p


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients ``p`` at ``x`` (Horner's scheme)."""
    fnp = _fnp()
    p = asarray_operand(p)
    x = asarray_operand(x)
    p, x = promote("polyval", p, x)
    y = fnp.zeros(fnp.broadcast_shapes(_shape(x), _shape(p)[1:]), _dtype(x))
    for i in _builtin_range(_shape(p)[0] if _shape(p) else 1):
        y = y * x + (p[i] if _shape(p) else p)
    return y


def _pad_front(p, n):
    fnp = _fnp()
    extra = n - _shape(p)[0]
    return fnp.concatenate([fnp.zeros((extra,), _dtype(p)), p]) if extra > 0 else p


def polyadd(a1, a2):
    """The sum of two polynomials."""
    a1, a2 = promote("polyadd", _coefficients("polyadd", a1), _coefficients("polyadd", a2))
    n = _builtin_max(_shape(a1)[0], _shape(a2)[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = promote("polysub", _coefficients("polysub", a1), _coefficients("polysub", a2))
    n = _builtin_max(_shape(a1)[0], _shape(a2)[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


def _trim_leading_zeros(name, p):
    if isinstance(p, Tracer):
        raise _concretization_error(name, "trim_leading_zeros=False")
    values = np.asarray(p)
    nonzero = np.flatnonzero(values)
    return p[nonzero[0]:] if nonzero.size else p[-1:]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (the full convolution of the coefficients)."""
    a1, a2 = _coefficients("polymul", a1), _coefficients("polymul", a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros("polymul", a1), _trim_leading_zeros("polymul", a2)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """``(quotient, remainder)`` of polynomial division (float).  As JAX, the
    remainder keeps ``u``'s length (leading zeros) unless ``trim_leading_zeros``."""
    fnp = _fnp()
    u, v = promote("polydiv", _coefficients("polydiv", u), _coefficients("polydiv", v),
                   to_float=True)
    if trim_leading_zeros:
        v = _trim_leading_zeros("polydiv", v)
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    scale = 1.0 / v[0]
    quotient = fnp.zeros((_builtin_max(m - n + 1, 1),), _dtype(u))
    remainder = u
    for k in _builtin_range(m - n + 1):
        d = scale * remainder[k]
        quotient = _at(quotient)[k].set(d)
        remainder = _at(remainder)[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        remainder = _trim_leading_zeros("polydiv", remainder)
    return quotient, remainder


def polyder(p, m=1):
    """The ``m``-th derivative of a polynomial."""
    fnp = _fnp()
    m = _static_int(m, "polyder's order m")
    if m < 0:
        raise ValueError(f"polyder: the order of derivative m must be non-negative, got {m}")
    p = _coefficients("polyder", p)
    for _ in _builtin_range(m):
        n = _shape(p)[0] - 1
        p = p[:-1] * fnp.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``
    (a scalar or ``m`` values, default 0)."""
    fnp = _fnp()
    m = _static_int(m, "polyint's order m")
    if m < 0:
        raise ValueError(f"polyint: the order of integral m must be non-negative, got {m}")
    p = _coefficients("polyint", p)
    constants = fnp.zeros((m,)) if k is None else asarray_operand(k)
    if len(_shape(constants)) == 0:
        constants = fnp.full((m,), constants)
    if _shape(constants) != (m,):
        raise ValueError(f"polyint: k must be a scalar or have m={m} values, got shape "
                         f"{_shape(constants)}")
    for i in _builtin_range(m):
        p = p / fnp.arange(_shape(p)[0], 0, -1)
        p, c = promote("polyint", p, constants[i:i + 1])
        p = fnp.concatenate([p, c])
    return p


def vander(x, N=None, increasing=False):  # noqa: N803
    """The Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1), ..., x, 1``
    (reversed with ``increasing``); built by repeated multiplication as NumPy."""
    fnp = _fnp()
    x = asarray_operand(x)
    if len(_shape(x)) != 1:
        raise ValueError(f"vander: x must be 1-d, got shape {_shape(x)}")
    n = _shape(x)[0] if N is None else _static_int(N, "vander's N")
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    columns = [fnp.ones(_shape(x), _dtype(x))] if n else []
    for _ in _builtin_range(n - 1):
        columns.append(columns[-1] * x)
    if not columns:
        return fnp.zeros((_shape(x)[0], 0), _dtype(x))
    out = fnp.stack(columns, axis=1)
    return out if increasing else out[:, ::-1]


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit (NumPy's column-scaled Vandermonde system).
    Returns the coefficients; with ``full`` also ``(residuals, rank, singular
    values, rcond)``; with ``cov`` the coefficients' covariance."""
    fnp = _fnp()
    deg = _static_int(deg, "polyfit's deg")
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    x, y = asarray_operand(x), asarray_operand(y)
    x, y = promote("polyfit", x, y, to_float=True)
    if len(_shape(x)) != 1 or _shape(x)[0] == 0:
        raise ValueError(f"polyfit: x must be a non-empty 1-d array, got shape {_shape(x)}")
    if len(_shape(y)) not in (1, 2) or _shape(y)[0] != _shape(x)[0]:
        raise ValueError(f"polyfit: y must be 1-d or 2-d with len(x)={_shape(x)[0]} rows, "
                         f"got shape {_shape(y)}")
    order = deg + 1
    rcond = _shape(x)[0] * float(dtype_finfo(_dtype(x)).eps) if rcond is None else rcond
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = asarray_operand(w)
        if _shape(w) != _shape(x):
            raise ValueError(f"polyfit: w must have the shape of x {_shape(x)}, got {_shape(w)}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if len(_shape(y)) == 1 else w[:, None])
    scale = fnp.sqrt(fnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    coef, resids, rank, s = fnp.linalg.lstsq(lhs, rhs, rcond)
    coef = (coef.T / scale).T
    if full:
        resids = fnp.reshape(resids, (1,)) if len(_shape(y)) == 1 else resids
        return coef, resids, rank, s, rcond
    if cov:
        return coef, _polyfit_covariance(lhs, scale, resids, order, cov, _shape(y))
    return coef


def _polyfit_covariance(lhs, scale, resids, order, cov, y_shape):
    fnp = _fnp()
    base = fnp.linalg.inv(lhs.T @ lhs) / fnp.outer(scale, scale)
    if cov == "unscaled":
        factor = 1.0
    else:
        if y_shape[0] <= order:
            raise ValueError("polyfit: the number of data points must exceed order to scale "
                             "the covariance matrix (or pass cov='unscaled')")
        factor = resids / (y_shape[0] - order)
    if len(y_shape) == 1:
        return base * factor
    return base[:, :, None] * factor


def roots(p, *, strip_zeros=True):
    """The roots of a polynomial: eigenvalues of its companion matrix (complex),
    differentiable through ``linalg.eigvals``.  With ``strip_zeros`` (NumPy's
    behaviour) leading zeros are dropped and trailing zeros give zero roots,
    which needs concrete coefficients (under jit pass ``strip_zeros=False``)."""
    from fungrad import core
    fnp = _fnp()
    p = _coefficients("roots", p)
    if not strip_zeros:
        return _companion_eigvals(p)
    values = np.asarray(core.concrete_or_error(
        p, "roots(strip_zeros=True) (the number of roots depends on the zero coefficients; "
           "under jit pass strip_zeros=False)"))
    nonzero = np.flatnonzero(values)
    if nonzero.size == 0:
        return fnp.zeros((0,), np.result_type(_dtype(p), np.complex64))
    lead, trail = int(nonzero[0]), int(values.size - 1 - nonzero[-1])
    found = _companion_eigvals(p[lead:values.size - trail])
    return fnp.concatenate([found, fnp.zeros((trail,), found.dtype)])


def _companion_eigvals(p):
    fnp = _fnp()
    n = _shape(p)[0] - 1
    if n < 1:
        return fnp.zeros((0,), np.result_type(_dtype(p), np.complex64))
    first_row = -p[1:] / p[0]
    companion = fnp.concatenate([first_row[None, :], fnp.eye(n - 1, n, dtype=first_row.dtype)])
    return fnp.linalg.eigvals(companion)


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a 1-d
    sequence), or a square matrix's characteristic polynomial (via ``eigvals``)."""
    fnp = _fnp()
    zeros = asarray_operand(seq_of_zeros)
    if len(_shape(zeros)) == 2 and _shape(zeros)[0] == _shape(zeros)[1] and _shape(zeros)[0]:
        # a matrix: its characteristic polynomial, real for real input as NumPy's
        real_input = dtype_kind(_dtype(zeros)) != "c"
        coefficients = poly(fnp.linalg.eigvals(zeros))
        return fnp.real(coefficients) if real_input else coefficients
    if len(_shape(zeros)) == 0:
        zeros = lax.reshape(zeros, (1,))
    if len(_shape(zeros)) != 1:
        raise ValueError(f"poly: input must be 1-d or a non-empty square 2-d array, got "
                         f"shape {_shape(zeros)}")
    dtype = np.result_type(_dtype(zeros), np.float64)
    if _shape(zeros)[0] == 0:
        return fnp.asarray(1.0)     # NumPy: the empty product, a scalar
    coefficients = fnp.ones((1,), dtype)
    for i in _builtin_range(_shape(zeros)[0]):
        factor = fnp.stack([fnp.ones((), dtype), -zeros[i].astype(dtype)])
        coefficients = convolve(coefficients, factor)
    if dtype_kind(dtype) == "c" and not isinstance(zeros, Tracer):
        values = np.asarray(zeros)
        if np.array_equal(np.sort_complex(values[values.imag > 0]),
                          np.sort_complex(np.conjugate(values[values.imag < 0]))):
            return fnp.real(coefficients)
    return coefficients
