"""JAX's dtype promotion for fungrad.numpy (``_lattice.py`` is the rule).

``promote(name, *args)`` turns every argument into an operand of the common
result dtype JAX would pick: arrays and tracers keep their dtype in the
decision, weakly typed values (Python scalars, tracers jit made from them)
only their kind, so ``f32_array * 2.0`` stays float32, ``int_array * 2.5``
becomes float64 and ``f32_array + int64_array`` is float32.
"""
from __future__ import annotations

import warnings

import numpy as np
from fungrad._dtype_classes import SMALL_SIGNED, SMALL_UNSIGNED, is_inexact

from fungrad import _config, _dtype_classes, core
from fungrad.core import Array, Tracer, get_aval
from fungrad.numpy._lattice import TypePromotionError, lattice_result_type  # noqa: F401

_PY_SCALARS = (bool, int, float, complex)


def is_weak(x) -> bool:
    """Python numbers (not NumPy scalars such as np.float64, which are strong;
    not bools, whose type is bool either way) and weakly typed Arrays and
    traced values (made from Python numbers only, as in JAX)."""
    t = type(x)
    return t in _PY_SCALARS or ((t is Array or isinstance(x, Tracer)) and x.weak_type)


def dtype_of(x) -> np.dtype:
    return get_aval(x).dtype


# ----------------------------------------------------------------------------
# jax_numpy_rank_promotion and jax_numpy_dtype_promotion (JAX's wording)
# ----------------------------------------------------------------------------

def check_promotion(name: str, args, ranks: bool = True, dtypes: bool = True) -> None:
    """Warn or raise as the promotion options say, for ``name`` applied to ``args``."""
    if ranks and _config.numpy_rank_promotion.value != "allow":
        _check_ranks(name, args)
    if dtypes and _config.numpy_dtype_promotion.value == "strict":
        _check_strict(name, args)


def _check_ranks(name, args):
    shapes = [tuple(get_aval(a).shape) for a in args if not type(a) in _PY_SCALARS]
    if len({len(s) for s in shapes if s}) < 2:      # scalars broadcast freely, as in JAX
        return
    shown = " ".join(map(str, shapes))
    if _config.numpy_rank_promotion.value == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {shown}. "
                      "Set the jax_numpy_rank_promotion config option to 'allow' to disable "
                      "this warning.", stacklevel=4)
    else:
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes "
                         f"{shown} and with the config option jax_numpy_rank_promotion="
                         "'raise'. Add the missing axes explicitly (x[:, None], "
                         "fnp.expand_dims) or allow rank promotion.")


def _check_strict(name, args):
    try:
        lattice_result_type([(dtype_of(a), is_weak(a)) for a in args])
    except TypePromotionError as err:
        shown = tuple(str(dtype_of(a)) + (" (weak)" if is_weak(a) else "") for a in args)
        raise TypePromotionError(f"{name}: input dtypes {shown}: {err}") from None


def x32_default(dtype, args) -> np.dtype:
    """``dtype``, or with jax_enable_x64 off its 32-bit counterpart when no strongly
    typed argument is 64-bit: NumPy's default dtypes become JAX's 32-bit ones,
    and a 64-bit dtype appears only where an input brings one."""
    dtype = np.dtype(dtype)
    if core._x64 or core.canonicalize_dtype(dtype) == dtype:
        return dtype
    if any(not is_weak(a) and core.canonicalize_dtype(dtype_of(a)) != dtype_of(a) for a in args):
        return dtype
    return core.canonicalize_dtype(dtype)


def user_dtype(dtype) -> np.dtype:
    """``np.dtype`` of a ``dtype=`` argument.  Python's ``int``, ``float`` and
    ``complex`` mean the default dtypes of their kind (int32/float32/complex64
    when jax_enable_x64 is off, as JAX); NumPy dtypes are taken as they are."""
    if dtype in (int, float, complex):
        return core.canonicalize_dtype(dtype)
    return np.dtype(dtype)


def weak_result_type(*args) -> tuple:
    """``(dtype, weak)`` JAX gives an operation on ``args`` (arrays, tracers,
    scalars); with x64 off a 64-bit dtype only where a strong input has one."""
    dtype, weak = lattice_result_type([(dtype_of(a), is_weak(a)) for a in args])
    return x32_default(dtype, args), weak


def result_type(*args) -> np.dtype:
    """The dtype JAX gives an operation on ``args`` (arrays, tracers, scalars)."""
    return weak_result_type(*args)[0]


# JAX's inexact counterparts (dtypes.to_inexact_dtype): bool and integers of
# up to 32 bits -> float32, 64-bit integers -> float64, whatever jax_enable_x64
_TO_INEXACT = {**{np.dtype(t): np.dtype(np.float32) for t in (
                   np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32)},
               np.dtype(np.int64): np.dtype(np.float64), np.dtype(np.uint64): np.dtype(np.float64),
               **{t: np.dtype(np.float32) for t in (*SMALL_SIGNED, *SMALL_UNSIGNED)}}


def inexact_dtype(dtype, args=()) -> np.dtype:
    """``dtype``, or for bool/integers its inexact counterpart by JAX's rule
    for sin, true_divide, mean ...: ``sin(int8)`` and ``int32 / int32`` are
    float32, ``int64 / int64`` float64 (float32 without x64)."""
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return dtype
    return x32_default(_TO_INEXACT[dtype], args)


def numeric_dtype(dtype) -> np.dtype:
    """``dtype``, or int32 for bool (JAX's rule for power, floor_divide, square of bools)."""
    return np.dtype(np.int32) if dtype == np.bool_ else dtype


def asarray_operand(x, dtype=None):
    """A tracer or ndarray for ``x`` (lists and scalars become ndarrays)."""
    if isinstance(x, Tracer):
        if dtype is not None and x.dtype != dtype:
            from fungrad import lax
            return lax.convert_element_type(x, dtype)
        return x
    if isinstance(x, np.ndarray) and (dtype is None or x.dtype == dtype):
        return x
    if dtype is None and type(x) in (int, float, complex):
        return core.weak_array(x, core.scalar_dtype(x))    # weakly typed, as jnp.asarray's
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"cannot convert {type(x).__name__} to a fungrad array: {err}") from None
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(x).__name__} {x!r:.60} to a numeric array")
    return arr


_ARRAYS = (np.ndarray, Tracer)


def _is_weak(a) -> bool:
    return a.aval.weak_type if isinstance(a, Tracer) else type(a) is core.Array and a.weak_type


def promote(name: str, *args, to_float: bool = False, weak_operands: bool = False):
    """Operands of ``args`` converted to their common (JAX) result dtype.

    ``to_float`` additionally promotes integer/bool results to the default
    float dtype, as JAX's transcendental functions (sin, exp, ...) do.
    An operand of the result's dtype is converted to the result's weak type
    (JAX's promote_dtypes: the conversion's transpose makes its cotangent
    weak again), unless ``weak_operands`` (JAX's dot products promote by
    dtype only).
    """
    # Fast path (most calls): arrays that already share one suitable dtype.
    first = args[0]
    if isinstance(first, _ARRAYS):
        dtype = first.dtype
        if all(isinstance(a, _ARRAYS) and a.dtype == dtype for a in args[1:]) and (
                not to_float or is_inexact(dtype)) and (
                weak_operands or len({_is_weak(a) for a in args}) == 1):
            return args       # (a weak operand with a strong one is converted, as in JAX)
    check_promotion(name, args, ranks=False)
    dtype, weak = weak_result_type(*args)
    if to_float and not is_inexact(dtype):
        dtype = inexact_dtype(dtype, args)
    from fungrad.lax.elementwise import convert_weak_type
    out = []
    for a in args:     # (converted operands take the result's weak type, as in JAX)
        if type(a) in _PY_SCALARS:
            out.append(core.weak_array(a, dtype) if weak and type(a) is not bool
                       else np.asarray(a, dtype=dtype))
        else:
            a = asarray_operand(a)
            out.append(a if weak_operands and dtype_of(a) == dtype
                       else convert_weak_type(a, dtype, weak))
    return out


def _is_extended(d) -> bool:
    """A dtype that is not one of NumPy's (typed PRNG keys' ``key<fry>``): its
    ``type`` is the scalar class it belongs to."""
    return (not isinstance(d, (np.dtype, type, str))
            and isinstance(getattr(d, "type", None), type))


def issubdtype(a, b) -> bool:
    """``jnp.issubdtype`` (the same as ``jax.dtypes.issubdtype``): NumPy's, and
    also for ``float0`` (its own category), ml_dtypes' types
    (``issubdtype(bfloat16, np.floating)`` is True, as in JAX) and extended
    dtypes, which are subtypes of the abstract classes their ``type`` derives
    from (``issubdtype(random.key(0).dtype, dtypes.prng_key)``)."""
    if _is_extended(a) or _is_extended(b):
        if _is_extended(b):
            return a == b
        return isinstance(b, type) and issubclass(a.type, b)
    is_float0 = lambda d: isinstance(d, np.dtype) and d == core.float0
    if is_float0(a) or is_float0(b):
        return is_float0(a) and is_float0(b)
    return bool(_dtype_classes.issubdtype(a, b))
