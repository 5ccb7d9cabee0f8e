"""Shared pieces for defining primitives: shape/dtype rules, lowering templates,
argument checks.  Each primitive module uses these so that one primitive's
whole story (impl, shape rule, jvp, transpose, batching, lowering) reads as a
few lines next to its definition."""
from __future__ import annotations

from typing import Callable

import numpy as np

from fungrad.core import Primitive, ShapedArray, Tracer, get_aval

__all__ = ["checked_bind", "def_lowering", "unary_shape_rule", "binary_shape_rule", "broadcast_shapes",
           "check_same_dtypes", "canonical_axes", "as_operand", "aval_of"]


def def_lowering(prim: Primitive, template: str | Callable, typed: bool = False) -> None:
    """Register the NumPy source ``jit`` emits for ``prim``.

    ``template`` is either a format string over the argument names (``{0}``,
    ``{1}``, ...) and the params by name (their ``repr``), e.g.
    ``"np.sum({0}, axis={axes})"``, or a callable
    ``(arg_names: list[str], **params) -> str`` returning a Python expression
    that uses only ``np`` (NumPy) and the argument names.  With ``typed=True``
    the callable is ``(arg_names, in_avals, **params)``: it also gets the
    input avals, to emit dtype-specific code (e.g. integer vs float division).
    """
    if isinstance(template, str):
        def lower(args, **params):
            return template.format(*args, **{k: repr(v) for k, v in params.items()})
        prim.lower = lower
    else:
        prim.lower = template
    prim.lower_typed = typed


def checked_bind(prim: Primitive, *args, **params):
    """``prim.bind`` after running its shape rule, so that bad arguments raise the
    rule's clear error eagerly too.  (Evaluation calls the NumPy impl directly,
    skipping the rule for speed, so public lax functions whose impl would fail
    obscurely or silently on bad params bind through this.)"""
    prim.abstract_eval(*[get_aval(a) for a in args], **params)
    return prim.bind(*args, **params)


def aval_of(x) -> ShapedArray:
    return get_aval(x)


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
                        "promotes dtypes as NumPy does.")
    return dtypes.pop()


def binary_shape_rule(name: str, out_dtype=None) -> Callable:
    """Shape rule of an n-ary elementwise op: NumPy broadcasting of the shapes,
    one common dtype (``out_dtype`` overrides the result dtype, e.g. bool)."""
    def rule(*avals, **params):
        dtype = check_same_dtypes(name, *avals)
        shape = broadcast_shapes(name, *(a.shape for a in avals))
        return ShapedArray(shape, out_dtype if out_dtype is not None else dtype)
    return rule


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
    if isinstance(x, (Tracer, np.ndarray)):
        return x
    if type(x) in (bool, int, float, complex) and like is not None:
        # exact types: np.float64 subclasses float but is strongly typed
        return np.asarray(x, dtype=get_aval(like).dtype)
    return np.asarray(x)
