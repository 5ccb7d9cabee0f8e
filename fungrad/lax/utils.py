"""Shared pieces for defining primitives: shape/dtype rules, lowerings,
argument checks.  Each primitive module uses these so that one primitive's
whole story (impl, shape rule, jvp, transpose, batching, lowering) reads as a
few lines next to its definition."""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad._dtype_classes import (SMALL_DTYPE_CLASSES, compute_dtype, iinfo, is_small,
                                    kind as dtype_kind)
from fungrad.core import Primitive, ShapedArray, Tracer, get_aval, scalar_dtype, weak_array
from fungrad.interpreters.lowering import call, check_callable

__all__ = ["checked_bind", "def_lowering", "def_kernel", "call_lowering", "unary_shape_rule",
           "broadcast_shapes", "check_same_dtypes", "canonical_axes", "as_operand",
           "check_choice", "check_precision"]


def def_lowering(prim: Primitive, rule: Callable, typed: bool = False) -> None:
    """Register what ``jit`` emits for ``prim``: ``rule(arg_names, **params)``
    returns an expression node (``fungrad/interpreters/lowering.py``) over the
    argument names, e.g. ``lambda args, axes: call(np.sum, args[0], axis=axes)``.
    With ``typed=True`` the rule is ``(arg_names, in_avals, **params)``: it also
    gets the input avals, to emit dtype-specific code (integer vs float
    division).  (A new rule may format any param into source: codegen checks
    them for user text again, ``Primitive.opaque_params``.)"""
    prim.opaque_params = ()
    if typed:
        prim.lowering = rule
    else:
        prim.lowering = lambda args, in_avals, **params: rule(args, **params)


def numba_type(dtype) -> str:
    """The source naming ``dtype``'s scalar type in code numba compiles."""
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype_kind(dtype) == "b" else f"np.{dtype.name}"


def computes_small_dtypes_wide(prim: Primitive, bit_pattern: str | None = None) -> None:
    """Run ``prim`` (one result) on operands of ml_dtypes' types as XLA's CPU
    backend does: in float32 (int8 for int4, uint8 for uint4), the result
    rounded back to the dtype its shape rule gives -- for reductions,
    cumulative sums, windows and convolutions, whose NumPy code would otherwise
    accumulate in bfloat16 or run int4 through NumPy's int8 loops.  Impl and
    lowering keep their own code for every other dtype.

    ``bit_pattern`` ("value" for a logical shift, "leading zeros" for clz):
    the op reads a small integer as its own width's bit pattern, a uint8 below
    2**bits (int4's -1 is 0b1111); leading zeros count only those bits."""
    impl, lowering = prim.impl, prim.lowering

    def wide_impl(*args, **params):
        for a in args:
            if type(getattr(a, "dtype", None)) in SMALL_DTYPE_CLASSES:
                break
        else:                                 # no operand of a small type: as before
            return impl(*args, **params)
        out = prim.abstract_eval(*[get_aval(a) for a in args], **params)
        wide = [np.asarray(a).astype(compute_dtype(a.dtype)) if is_small(a.dtype) else a
                for a in args]
        if bit_pattern and dtype_kind(args[0].dtype) in "iu":
            return _on_bit_pattern(impl, args, wide, params, bit_pattern).astype(out.dtype)
        return np.asarray(impl(*wide, **params)).astype(out.dtype)

    def wide_lowering(args, in_avals, **params):
        # (in_avals may be unknown, None: codegen.lowered_source of an untyped rule)
        if not any(type(getattr(a, "dtype", None)) in SMALL_DTYPE_CLASSES for a in in_avals):
            return lowering(args, in_avals, **params)
        from fungrad.interpreters.codegen import impl_call    # late: codegen imports lax
        return impl_call(prim, args, params)        # the generated code calls wide_impl
    prim.impl, prim.lowering = wide_impl, wide_lowering


def _on_bit_pattern(impl, args, wide, params, bit_pattern):
    bits = iinfo(args[0].dtype).bits
    patterns = [(np.asarray(w).astype(np.int16) & (2**bits - 1)).astype(np.uint8)
                if is_small(a.dtype) else a for a, w in zip(args, wide)]
    out = np.asarray(impl(*patterns, **params))
    if bit_pattern == "leading zeros":    # the uint8's, less the 8 - bits above the pattern
        out = out - (8 - bits)
    return out


def small_dtypes_run_the_impl(prim: Primitive) -> None:
    """Under ``jit``, run ``prim``'s eager impl for operands of ml_dtypes' types:
    for lowerings whose generated code decides by ``x.dtype.kind`` at run time
    (gather's fill, scatter's identities), which is 'V' for bfloat16 and int4,
    while the impl asks fungrad._dtype_classes."""
    lowering = prim.lowering

    def rule(args, in_avals, **params):
        if any(type(getattr(a, "dtype", None)) in SMALL_DTYPE_CLASSES for a in in_avals):
            from fungrad.interpreters.codegen import impl_call    # late: codegen imports lax
            return impl_call(prim, args, params)
        return lowering(args, in_avals, **params)
    prim.lowering = rule


def call_lowering(fn: Callable) -> Callable:
    """The lowering rule ``fn(*args, **params)`` (params as keywords, sorted), for
    ``fn`` a NumPy ufunc or function or a kernel function: the impl and the
    lowering are then one definition.  (For a ufunc codegen may write an
    operator, ``a * b``, and reuse a dead input's buffer with ``out=``.)"""
    check_callable(fn)
    return lambda args, **params: call(fn, *args, **dict(sorted(params.items())))


def def_kernel(prim: Primitive, kernel: Callable) -> None:
    """Impl and lowering of ``prim`` from one NumPy-only kernel function
    (``fungrad/lax/kernels/``): ``kernel(*operands, **params)``, which the
    generated code calls by name (and ``export`` embeds)."""
    prim.def_impl(kernel)
    def_lowering(prim, call_lowering(kernel))


def checked_bind(prim: Primitive, *args, **params):
    """``prim.bind`` after running its shape rule, so that bad arguments raise the
    rule's clear error eagerly too.  (Evaluation calls the NumPy impl directly,
    skipping the rule for speed, so public lax functions whose impl would fail
    obscurely or silently on bad params bind through this.)"""
    prim.abstract_eval(*[get_aval(a) for a in args], **params)
    return prim.bind(*args, **params)


def unary_shape_rule(x: ShapedArray, **params) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def broadcast_shapes(name: str, *shapes) -> tuple:
    first = shapes[0]
    if all(s == first for s in shapes):      # the common case, without NumPy's machinery
        return tuple(first)
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise TypeError(f"{name}: operand shapes {', '.join(map(str, shapes))} "
                        "do not broadcast together (NumPy broadcasting rules)") from None


def check_same_dtypes(name: str, *avals) -> np.dtype:
    dtypes = {a.dtype for a in avals if not a.weak_type} or {avals[0].dtype}
    if len(dtypes) > 1:
        raise TypeError(f"lax.{name} requires arguments to have the same dtype, got "
                        f"{', '.join(a.dtype.name for a in avals)}. Convert with "
                        "lax.convert_element_type, or use fungrad.numpy which "
                        "promotes dtypes as jax.numpy does.")
    return dtypes.pop()


def canonical_axes(name: str, axes, ndim: int) -> tuple:
    """Normalise an int/sequence of axes to a sorted tuple of non-negative ints."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
    return tuple(sorted(out))


def as_operand(x, like=None):
    """Python scalars become 0-d arrays of ``like``'s dtype (weak typing);
    everything else is returned unchanged (tracers) or as an ndarray."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, np.ndarray):
        # a non-native byte order ('>f8') is the same type: native, as get_aval says
        return x if x.dtype.isnative else x.astype(x.dtype.newbyteorder("="))
    if type(x) in (bool, int, float, complex):
        # exact types: np.float64 subclasses float but is strongly typed; a
        # Python number is a weakly typed 0-d Array, as in JAX
        dtype = get_aval(like).dtype if like is not None else scalar_dtype(x)
        return np.asarray(x, dtype=dtype) if type(x) is bool else weak_array(x, dtype)
    return np.asarray(x)


# ----------------------------------------------------------------------------
# String-valued options: exact types (a str subclass's repr is user code, and
# params reach generated source), validated against their allowed values
# ----------------------------------------------------------------------------

def check_choice(value, allowed, who: str, what: str) -> str:
    """``value`` if it is a ``str`` (exactly) among ``allowed``; else TypeError
    (not a str) or ValueError (not allowed), naming the option."""
    if type(value) is not str:
        raise TypeError(f"{who}: {what} must be a str, one of {', '.join(map(repr, allowed))}; "
                        f"got {type(value).__name__}" + (
                            " (a subclass of str: pass str(value))" if isinstance(value, str)
                            else ""))
    if value not in allowed:
        raise ValueError(f"{who}: {what} must be one of {', '.join(map(repr, allowed))}, "
                         f"got {value!r}")
    return value


# JAX's precision names (lax.Precision(...) accepts them) and its dot algorithm
# presets (lax.DotAlgorithmPreset): NumPy computes at the operands' precision,
# so all are accepted and mean the same; anything else is an error, as in JAX.
# PRECISION_NAMES maps each string spelling to the lax.Precision member it means.
PRECISION_NAMES = {"default": "DEFAULT", "bfloat16": "DEFAULT", "fastest": "DEFAULT",
                   "high": "HIGH", "tensorfloat32": "HIGH",
                   "highest": "HIGHEST", "float32": "HIGHEST"}
_PRECISION_NAMES = frozenset(PRECISION_NAMES)
_PRECISION_MEMBERS = frozenset({"DEFAULT", "HIGH", "HIGHEST"})
_DOT_ALGORITHM_PRESETS = frozenset({
    "DEFAULT", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"})


def check_precision(precision, who: str) -> None:
    """``precision=`` of a product as JAX takes it: None, a precision name or
    ``lax.Precision`` member, a dot algorithm preset (or its name), or a tuple
    of two precisions (lhs, rhs).  TypeError/ValueError naming it otherwise."""
    if precision is None:
        return
    if type(precision) is tuple:
        if len(precision) != 2:
            raise ValueError(f"{who}: precision must be one precision or a tuple of two "
                             f"(lhs, rhs), got a tuple of {len(precision)}")
        for p in precision:
            _check_one_precision(p, who)
        return
    _check_one_precision(precision, who)


def _check_one_precision(p, who):
    import enum
    if type(p) is str:
        if p.lower() in _PRECISION_NAMES or p.upper() in _DOT_ALGORITHM_PRESETS:
            return
        raise ValueError(f"{who}: precision {p!r} is not a precision; use None, one of "
                         f"{', '.join(sorted(map(repr, _PRECISION_NAMES)))}, lax.Precision."
                         "DEFAULT/HIGH/HIGHEST or a lax.DotAlgorithmPreset name")
    if isinstance(p, enum.Enum) and (
            type(p).__name__ == "Precision" and p.name in _PRECISION_MEMBERS
            or type(p).__name__ == "DotAlgorithmPreset" and p.name in _DOT_ALGORITHM_PRESETS):
        return
    raise TypeError(f"{who}: precision must be None, a str, a lax.Precision or a "
                    f"lax.DotAlgorithmPreset (or a tuple of two), got {type(p).__name__}")
