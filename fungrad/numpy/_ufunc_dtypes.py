"""The machinery of fungrad.numpy's elementwise functions (``_ufuncs.py``):
which dtypes an operation runs in (JAX's, ``_loop_dtypes``; NumPy's own loop
for NumPy's ufuncs on tracers, ``_numpy_loop_dtypes``), the fast paths that
skip binding when NumPy's own ufunc gives the same result (``_eager``,
``_args``), the guard against NumPy's ``out=``/``where=`` keywords, and small
helpers the functions share.
"""
from __future__ import annotations

import functools

import numpy as np

from fungrad._dtype_classes import is_small, is_floating, is_inexact, is_integer, kind as dtype_kind
from fungrad import _config, core, lax
from fungrad.core import Array, Tracer, get_aval
from fungrad.numpy._dtypes import (asarray_operand, check_promotion, dtype_of, inexact_dtype,
                                    is_weak, numeric_dtype, result_type, weak_result_type,
                                    x32_default)
from fungrad.lax.elementwise import convert_weak_type as lax_convert_weak_type

# ----------------------------------------------------------------------------
# NumPy's dtype resolution and the ufunc keyword guard
# ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _resolve(ufunc, signature):
    return ufunc.resolve_dtypes(signature)


_ARRAY_TYPES = (np.ndarray, Array)


def _loop_dtypes(ufunc, args):
    """The dtypes of the inner loop for ``ufunc(*args)``, inputs then outputs: the
    operands' common dtype by JAX's lattice, if NumPy has a loop that takes it
    as it is; where NumPy's loop would convert it, JAX's conversion instead:
    integers to float32/float64 (``sin(int8)`` is float32, not NumPy's
    float16), bools to int32 (``square(bool)``, not NumPy's int8)."""
    dtype = result_type(*args)
    try:
        loop = _resolve(ufunc, (dtype,) * ufunc.nin + (None,) * ufunc.nout)
    except TypeError:
        return _numpy_loop_dtypes(ufunc, args)      # mixed signatures (ldexp) or none
    ins = loop[:ufunc.nin]
    if any(d != dtype for d in ins) and is_small(dtype):
        # NumPy runs int4 (bfloat16) without a loop of its own in int8 (float32):
        # JAX keeps the type, the lax op rounds the result back
        return tuple(dtype if d == ins[0] else d for d in loop)
    if any(d != dtype for d in ins):
        if not is_inexact(dtype) and all(is_inexact(d) for d in ins):
            loop = _resolve(ufunc, (inexact_dtype(dtype, args),) * ufunc.nin
                            + (None,) * ufunc.nout)
        elif dtype == np.bool_ and all(is_integer(d) for d in ins):
            loop = _resolve(ufunc, (numeric_dtype(dtype),) * ufunc.nin + (None,) * ufunc.nout)
    if core._x64:
        return loop
    return tuple(x32_default(d, args) for d in loop)   # jax_enable_x64 off: 32-bit defaults


def _signature_entry(x):
    """What NumPy's ``resolve_dtypes`` needs: a dtype, or the Python type of a
    weakly typed value (a Python scalar, or a tracer jit made from one)."""
    if type(x) in _ARRAY_TYPES:
        return x.dtype
    if is_weak(x):
        kind = dtype_kind(dtype_of(x))
        return np.dtype(np.bool_) if kind == "b" else {"i": int, "u": int, "f": float,
                                                      "c": complex}[kind]
    return dtype_of(x)


def _numpy_loop_dtypes(ufunc, args):
    """NumPy's own loop for ``ufunc(*args)`` (for ufuncs whose inputs differ in
    kind, such as ``ldexp(float, int)``), or its TypeError, naming the types."""
    signature = tuple(map(_signature_entry, args))
    if all(isinstance(entry, type) for entry in signature):
        signature = tuple(dtype_of(a) for a in args)   # NumPy's defaults for scalars
    try:
        loop = _resolve(ufunc, signature + (None,) * ufunc.nout)
    except TypeError as err:
        kinds = ", ".join(getattr(s, "name", getattr(s, "__name__", str(s))) for s in signature)
        raise TypeError(f"fungrad.numpy.{ufunc.__name__} is not defined for inputs of "
                        f"type ({kinds}), as in NumPy: {err}") from None
    if core._x64:
        return loop
    return tuple(x32_default(d, args) for d in loop)


def _cast(x, dtype, weak: bool | None = None):
    """``x`` as an operand of ``dtype`` (Python scalars become 0-d arrays), of
    an operation whose result is weakly typed or not (``weak``): as JAX's
    promotion, a converted operand takes the result's weak type.  Without
    ``weak``, an operand of ``dtype`` is kept as it is (and a converted one,
    or a Python number, is strong)."""
    kind = type(x)
    if kind is np.ndarray and x.dtype == dtype or kind is Array and x.dtype == dtype and (
            weak is not False or not x.weak_type):
        return x
    if weak is None:
        if kind in (bool, int, float, complex):
            return np.asarray(x, dtype=dtype)
        x = asarray_operand(x)
        return x if dtype_of(x) == dtype else lax_convert_weak_type(x, dtype, False)
    if kind in (bool, int, float, complex):
        return core.weak_array(x, dtype) if weak and kind is not bool else \
            np.asarray(x, dtype=dtype)
    # (a weak operand of a strong result is converted even to its own dtype, as
    # JAX's promotion does: the transposed conversion makes its cotangent weak)
    return lax_convert_weak_type(asarray_operand(x), dtype, weak)


_NATIVE_LOOPS: dict = {}     # (ufunc, dtype, nargs) -> NumPy's loop takes dtype as is


def _native_loop(ufunc, dtype, nargs) -> bool:
    key = (ufunc, dtype, nargs)
    hit = _NATIVE_LOOPS.get(key)
    if hit is None:
        try:
            loop = _resolve(ufunc, (dtype,) * nargs + (None,) * ufunc.nout)
            hit = all(d == dtype for d in loop[:nargs])
            if is_small(dtype):    # int4's negative: an int4 input, but an int8 result
                hit = hit and all(d == dtype or d == np.bool_ for d in loop[nargs:])
        except TypeError:
            hit = False
        _NATIVE_LOOPS[key] = hit
    return hit


_EVAL = core.EVAL_TRACE
_SCALAR_TYPES = (float, int)

# jax_numpy_rank_promotion != "allow" or jax_numpy_dtype_promotion == "strict":
# the fast paths below step aside so that _args checks every call
_promotion_checks = False


def _set_promotion_checks(_):
    global _promotion_checks
    _promotion_checks = (_config.numpy_rank_promotion.value != "allow"
                         or _config.numpy_dtype_promotion.value == "strict")


_config.numpy_rank_promotion.hooks.append(_set_promotion_checks)
_config.numpy_dtype_promotion.hooks.append(_set_promotion_checks)
_set_promotion_checks(None)


def _eager(ufunc, args):
    """NumPy's own ufunc, when nothing is being traced and NumPy's loop takes the
    arguments as they are (arrays of one dtype, or Python floats/ints of one
    type); else None.  This is what binding the primitive would do (its impl is
    the same ufunc), minus the dispatch: eager calls on small arrays cost little
    more than NumPy's."""
    if core._tls.trace is not _EVAL or _promotion_checks or core._float_checks:
        return None       # (promotion and NaN/inf checks happen on the way through bind)
    first = args[0]
    kind = type(first)
    if kind is np.ndarray or kind is Array:
        dtype = first.dtype
        if len(args) == 1:
            vals = (first.view(np.ndarray),) if kind is Array else args
        else:
            for a in args:
                if type(a) not in _ARRAY_TYPES or a.dtype != dtype:
                    return None
            vals = [a.view(np.ndarray) if type(a) is Array else a for a in args]
        native = _NATIVE_LOOPS.get((ufunc, dtype, len(args)))
        if native is None:
            native = _native_loop(ufunc, dtype, len(args))
        if not native:
            return None
        out = ufunc(*vals)
        weak = first.weak_type if kind is Array else False
        if weak and len(args) > 1:        # (weak only if all are, as JAX's rule)
            weak = all(type(a) is Array and a.weak_type for a in args)
    elif kind in _SCALAR_TYPES and all(type(a) is kind for a in args) and core._x64:
        out = ufunc(*args)        # (NumPy's 64-bit defaults: not without jax_enable_x64)
        weak = True               # (Python numbers only: weakly typed, as in JAX)
    else:
        return None
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    out = out.view(Array)
    out.setflags(write=False)
    if weak:
        out.weak_type = True
    return out


def _args(ufunc, *args):
    """``args`` converted to the input dtypes of NumPy's loop for ``ufunc``."""
    if _promotion_checks and len(args) > 1:
        check_promotion(ufunc.__name__, args)
    # Fast paths (they are on every traced operation): arrays or tracers of one
    # dtype the loop takes as is (tracers all strong or all weak: the result is
    # weak when every operand is); and such a value with a Python
    # int/float, which NumPy (NEP 50, weak scalars) casts to the array's float dtype.
    dtype, scalars, strong, weak_traced = None, False, False, False
    for a in args:
        t = type(a)
        if t in _ARRAY_TYPES:
            d = a.dtype
            if t is np.ndarray or not a.weak_type:
                strong = True
        elif t is float or t is int:
            scalars = True
            continue
        elif isinstance(a, Tracer):
            aval = a.aval
            d = aval.dtype
            if aval.weak_type:
                weak_traced = True
            else:
                strong = True
        else:
            break
        if dtype is None:
            dtype = d
        elif d != dtype:
            break
    else:
        # (a weak traced value with a strong one is converted to strong below,
        # as JAX does: that conversion's transpose makes its cotangent weak)
        if dtype is not None and (not scalars or is_inexact(dtype)) and \
                not (weak_traced and strong) and _native_loop(ufunc, dtype, len(args)):
            if not scalars:
                return args
            # (the scalars are weak, so the result is weak when every array is)
            convert = np.asarray if strong else core.weak_array
            return [convert(a, dtype) if type(a) is float or type(a) is int else a
                    for a in args]
    dtypes = _loop_dtypes(ufunc, args)
    weak = weak_result_type(*args)[1]
    return [_cast(a, d, weak) for a, d in zip(args, dtypes)]


def weak_if_all_weak(out, operands):
    """``out`` weakly typed when every operand is (JAX's rule for elementwise
    results), for functions built from several lax operations, whose
    constants would otherwise make it strong (``floor_divide``, ``pad``)."""
    if not all(is_weak(a) for a in operands) or is_weak(out):
        return out
    if isinstance(out, Tracer):
        return lax_convert_weak_type(out, out.dtype, True)
    return core.with_weak_type(core.wrap_array(out), True)


def _ufunc(fn):
    """Reject NumPy's ``out=``/``where=`` keywords with the reason and the fix."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, out=None, where=True, **kwargs):
        if out is not None:
            raise TypeError(
                f"fungrad.numpy.{name}: out= is not supported because fungrad arrays are "
                f"immutable. Use the return value instead (y = fnp.{name}(...)); to update "
                "part of an array use x.at[idx].set(value).")
        if where is not True:
            raise TypeError(
                f"fungrad.numpy.{name}: where= is not supported (it leaves the masked "
                "entries of out= untouched, and there is no out=). Compute everywhere and "
                f"select: fnp.where(mask, fnp.{name}(...), fallback).")
        return fn(*args, **kwargs)
    return wrapper


def _named(name, doc):
    """Name a function made by a factory, then guard its keywords like ``_ufunc``."""
    def decorate(fn):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = doc
        return _ufunc(fn)
    return decorate


def _const(value, dtype):
    return np.asarray(value, dtype=dtype)


def _dtype(x):
    return get_aval(x).dtype


def _is_float(dtype):
    return is_floating(np.dtype(dtype))


def _is_complex(dtype):
    return dtype_kind(np.dtype(dtype)) == "c"


def _full_like(x, value, dtype):
    return lax.full(get_aval(x).shape, value, dtype)


def _full_broadcast(args, value, dtype):
    """``value`` filling the broadcast shape of ``args``."""
    return lax.full(np.broadcast_shapes(*(get_aval(a).shape for a in args)), value, dtype)


def _to_bool(x):
    """Truth value of each element (nonzero; NaN counts as true, as in NumPy)."""
    x = asarray_operand(x)
    if _dtype(x) == np.bool_:
        return x
    return lax.ne(x, _const(0, _dtype(x)))
