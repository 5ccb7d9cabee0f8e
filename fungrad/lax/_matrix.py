"""Matrix helpers shared by the linear-algebra primitives' rules
(``linalg.py``, ``eig.py``, ``condensed.py``): products,
triangles, diagonals, conjugate transposes and the dtype checks, all written
with lax ops, so the rules that use them can be differentiated again by
re-tracing.  A module of its own so that ``linalg`` can import (and export)
``eig`` and the other decompositions built on these helpers."""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import finfo as dtype_finfo, issubdtype as dtype_issubdtype
from fungrad.core import get_aval
from fungrad.interpreters import batching
from fungrad.lax.dot import dot_general
from fungrad.lax.elementwise import add, mul, conj, real, convert_element_type
from fungrad.lax.reductions import reduce_sum
from fungrad.lax.structural import reshape, transpose


def _shape(x):
    return get_aval(x).shape


def _mT(x):
    """Swap the last two axes."""
    nd = len(_shape(x))
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _mm(a, b):
    """Matrix product of stacks with equal leading dims; either operand may be
    a plain 2-D matrix (a constant), which is then shared by the whole stack."""
    an, bn = len(_shape(a)), len(_shape(b))
    if an == bn:
        batch = tuple(range(an - 2))
        return dot_general(a, b, (((an - 1,), (bn - 2,)), (batch, batch)))
    if bn == 2:
        return dot_general(a, b, (((an - 1,), (0,)), ((), ())))
    out = dot_general(a, b, (((1,), (bn - 2,)), ((), ())))  # (m, batch..., n)
    return transpose(out, tuple(range(1, bn - 1)) + (0, bn - 1))


def _mask(x, make):
    """``x`` times the constant 0/1 matrix ``make(m, n)`` over its last two axes."""
    m, n = _shape(x)[-2:]
    return mul(x, make(m, n).astype(get_aval(x).dtype))


def _tril(x, k=0):
    return _mask(x, lambda m, n: np.tril(np.ones((m, n)), k))


def _triu(x, k=0):
    return _mask(x, lambda m, n: np.triu(np.ones((m, n)), k))


def _eye(n, dtype):
    return np.eye(n, dtype=dtype)


def _diag_part(x):
    """Diagonal of a stack of square matrices: (..., n, n) -> (..., n)."""
    nd = len(_shape(x))
    return reduce_sum(_mask(x, lambda m, n: np.eye(m, n)), (nd - 1,))


def _as_row(v):
    """(..., n) -> (..., 1, n)."""
    s = _shape(v)
    return reshape(v, s[:-1] + (1, s[-1]))


def _as_col(v):
    """(..., n) -> (..., n, 1)."""
    return reshape(v, _shape(v) + (1,))


def _is_complex(x):
    return dtype_issubdtype(get_aval(x).dtype, np.complexfloating)


def _real_dtype(dtype):
    """float32 for complex64, float64 for complex128; real dtypes unchanged."""
    return dtype_finfo(dtype).dtype if dtype_issubdtype(dtype, np.complexfloating) else np.dtype(dtype)


def _H(x):
    """Conjugate transpose of the last two axes (the transpose for real x)."""
    return conj(_mT(x)) if _is_complex(x) else _mT(x)


def _real_part_as(x, like):
    """Re(x) in ``like``'s dtype (x itself for real x): keeps a complex tangent
    complex while dropping its imaginary part."""
    if not _is_complex(x):
        return x
    return convert_element_type(real(x), get_aval(like).dtype)


def _symmetric_from_triangle(t, lower):
    """The Hermitian (real: symmetric) matrix an impl that reads only one
    triangle of ``t`` sees; LAPACK also ignores the imaginary part of the
    diagonal of a Hermitian matrix."""
    strict = _tril(t, -1) if lower else _triu(t, 1)
    if not _is_complex(t):
        return add(_tril(t) if lower else _triu(t), _mT(strict))
    diag = _mask(t, lambda m, n: np.eye(m, n))
    return add(add(strict, _real_part_as(diag, t)), _H(strict))


_MATRIX_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _check_square_float(name, x, square=True):
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ValueError(f"{name} expects {kind} (an array of shape (..., m, "
                         f"{'m' if square else 'n'})), got shape {x.shape}")
    if x.dtype not in _MATRIX_DTYPES:
        raise TypeError(f"{name} supports float32/float64/complex64/complex128 matrices, got "
                        f"{x.dtype.name}; convert the input (e.g. x.astype(float)).")


def _batch_at_front(prim):
    """Batching rule of a one-operand primitive that batches over leading axes."""
    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        out = prim.bind(batching.moveaxis(x, d, 0), **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    prim.batch = rule


def _symmetrize(x):
    """(x + xᴴ) / 2, JAX's ``symmetrize_input``."""
    return mul(add(x, _H(x)), np.asarray(0.5, get_aval(x).dtype))

