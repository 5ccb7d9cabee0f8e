"""The compiled backend's forms of ``lax.div`` and ``lax.rem`` (numba_backend):
the rules elementwise.py attaches to ``div_p`` and ``rem_p``.

On integers both are C's: ``div`` rounds towards zero and ``rem`` has the
sign of the dividend.  They are written on scalars (so they join fused loop
nests) with the NumPy backend's results in the cases where C's are
undefined or numba's differ: a zero divisor gives 0 for both (NumPy's
``floor_divide``/``fmod`` of integers), and ``INT_MIN / -1`` wraps to
``INT_MIN`` (its remainder is 0).  Python's ``//`` and ``%`` (numba's, on
integers) floor; the quotient is moved up by one where they rounded down.
Floats: ``div`` is the ufunc NumPy's lowering calls, ``rem`` NumPy's ``fmod``.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import is_floating, kind as dtype_kind
from fungrad.interpreters.lowering import call, render
from fungrad.lax.utils import numba_type


def _integer_operands(in_avals):
    """The dtype of integer scalar operands (None: arrays, or not integers;
    integer arrays are computed in loop nests, on scalars)."""
    dtype = np.dtype(in_avals[0].dtype)
    if dtype_kind(dtype) not in "iu" or any(a.shape != () for a in in_avals):
        return None
    return dtype


def _rounded_down(x, y) -> str:
    """Whether floor division of nonzero ``y`` rounded ``x / y`` down (a remainder
    and operands of opposite signs)."""
    return f"({x} % {y} != 0 and ({x} < 0) != ({y} < 0))"


def div_numba(args, in_avals, out_avals):
    x, y = args
    if is_floating(in_avals[0].dtype):
        return render(call(np.true_divide, x, y),
                      operator_form=np.dtype(in_avals[0].dtype) == np.float64)
    dtype = _integer_operands(in_avals)
    if dtype is None:
        return None
    t = numba_type(dtype)
    if dtype_kind(dtype) == "u":          # (no signs: floor is truncation)
        return f"({t}(0) if {y} == 0 else {t}({x} // {y}))"
    # (np.negative wraps INT_MIN to itself; smaller types are computed in int64
    # and cast back)
    return (f"{t}(0 if {y} == 0 else np.negative({x}) if {y} == -1 else "
            f"{x} // {y} + (1 if {_rounded_down(x, y)} else 0))")


def rem_numba(args, in_avals, out_avals):
    x, y = args
    if is_floating(in_avals[0].dtype):
        return f"np.fmod({x}, {y})"
    dtype = _integer_operands(in_avals)
    if dtype is None:
        return None
    t = numba_type(dtype)
    if dtype_kind(dtype) == "u":
        return f"({t}(0) if {y} == 0 else {t}({x} % {y}))"
    return (f"{t}(0 if {y} == 0 or {y} == -1 else "
            f"{x} % {y} - ({y} if {_rounded_down(x, y)} else 0))")
