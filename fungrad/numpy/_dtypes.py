"""NumPy 2 dtype promotion for fungrad.numpy (NEP 50: Python scalars are weak).

``promote(name, *args)`` turns every argument into an operand of the common
result dtype NumPy would pick: arrays and tracers keep their dtype in the
decision, Python scalars only contribute their *kind* (so ``f32_array * 2.0``
stays float32, ``int_array * 2.5`` becomes float64), exactly as
``np.result_type`` does for them.
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Tracer, get_aval

_PY_SCALARS = (bool, int, float, complex)


class TypePromotionError(ValueError):
    """An implicit dtype promotion that ``jax_numpy_dtype_promotion="strict"`` forbids
    (also ``fungrad.dtypes.TypePromotionError``)."""


def is_weak(x) -> bool:
    """Python scalars (not NumPy scalars such as np.float64, which are strong),
    and traced values that jit received as Python scalars."""
    return type(x) in _PY_SCALARS or (isinstance(x, Tracer) and x.aval.weak_type)


def weak_python_type(x) -> type:
    """The Python scalar type a weakly typed value stands for (for np.result_type
    and ufunc.resolve_dtypes, which take Python types as weak)."""
    if isinstance(x, Tracer):
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[x.aval.dtype.kind]
    return type(x)


def dtype_of(x) -> np.dtype:
    return get_aval(x).dtype


# a Python scalar of the same kind stands in for a weakly typed tracer
_WEAK_STANDIN = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def result_type(*args) -> np.dtype:
    """The dtype NumPy 2 gives an operation on ``args`` (arrays, tracers, scalars)."""
    parts = [(_WEAK_STANDIN[a.aval.dtype.kind] if isinstance(a, Tracer) else a)
             if is_weak(a) else dtype_of(a) for a in args]
    return np.result_type(*parts)


def asarray_operand(x, dtype=None):
    """A tracer or ndarray for ``x`` (lists and scalars become ndarrays)."""
    if isinstance(x, Tracer):
        if dtype is not None and x.dtype != dtype:
            from fungrad import lax
            return lax.convert_element_type(x, dtype)
        return x
    if isinstance(x, np.ndarray) and (dtype is None or x.dtype == dtype):
        return x
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"cannot convert {type(x).__name__} to a fungrad array: {err}") from None
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(x).__name__} {x!r:.60} to a numeric array")
    return arr


_ARRAYS = (np.ndarray, Tracer)


def promote(name: str, *args, to_float: bool = False):
    """Operands of ``args`` converted to their common NumPy result dtype.

    ``to_float`` additionally promotes integer/bool results to float64, as the
    transcendental ufuncs (sin, exp, ...) do in NumPy.
    """
    # Fast path (most calls): arrays that already share one suitable dtype.
    first = args[0]
    if isinstance(first, _ARRAYS):
        dtype = first.dtype
        if all(isinstance(a, _ARRAYS) and a.dtype == dtype for a in args[1:]) and (
                not to_float or dtype.kind in "fc"):
            return args
    dtype = result_type(*args)
    if to_float and not np.issubdtype(dtype, np.inexact):
        dtype = np.promote_types(dtype, np.float16)  # int8 -> f16, int32 -> f64, as NumPy
    from fungrad import lax
    out = []
    for a in args:
        if type(a) in _PY_SCALARS:
            out.append(np.asarray(a, dtype=dtype))
        else:
            a = asarray_operand(a)
            out.append(a if dtype_of(a) == dtype else lax.convert_element_type(a, dtype))
    return out
