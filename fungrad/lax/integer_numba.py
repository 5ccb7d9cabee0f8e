"""The compiled backend's forms of integer operations (numba_backend): the
rules elementwise.py and comparisons.py attach to ``div_p``, ``rem_p``, the
shifts and ``population_count_p``, with the NumPy backend's results.

On integers ``div`` and ``rem`` are C's: ``div`` rounds towards zero and
``rem`` has the sign of the dividend.  They are written on scalars (so they
join fused loop nests) with the NumPy backend's results in the cases where
C's are undefined or numba's differ: a zero divisor gives 0 for both
(NumPy's ``floor_divide``/``fmod`` of integers), and ``INT_MIN / -1`` wraps
to ``INT_MIN`` (its remainder is 0).  Python's ``//`` and ``%`` (numba's, on
integers) floor; the quotient is moved up by one where they rounded down.
Floats: ``div`` is the ufunc NumPy's lowering calls, ``rem`` NumPy's ``fmod``.

Shifts by an amount outside ``[0, bits)`` are undefined in LLVM; NumPy's are
0, or -1 for an arithmetic right shift of a negative number: written out.
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


def _bits_and_unsigned(dtype):
    dtype = np.dtype(dtype)
    return 8 * dtype.itemsize, f"np.uint{8 * dtype.itemsize}"


def _shift_rule(form):
    """A shift's scalar rule: ``form(x, y, t, u)`` is its expression for an
    amount in ``[0, bits)`` (``t`` the type, ``u`` its unsigned twin); outside,
    NumPy's 0, or -1 for a negative number shifted right arithmetically."""
    def rule(args, in_avals, out_avals):
        (x, y), dtype = args, _integer_operands(in_avals)
        if dtype is None:
            return None
        t, (bits, u) = numba_type(dtype), _bits_and_unsigned(dtype)
        outside = (f"{t}(-1) if {x} < 0 else {t}(0)" if form is _ARITHMETIC and
                   dtype_kind(dtype) == "i" else f"{t}(0)")
        return f"({form(x, y, t, u)} if 0 <= {y} < {bits} else {outside})"
    return rule


def _ARITHMETIC(x, y, t, u):
    return f"{t}({x} >> {y})"


# (small types shift in int64: the cast back keeps the low bits, as NumPy's)
shift_left_numba = _shift_rule(lambda x, y, t, u: f"{t}({x} << {y})")
shift_right_arithmetic_numba = _shift_rule(_ARITHMETIC)
# the bit pattern shifted as unsigned (zeros come in from the left)
shift_right_logical_numba = _shift_rule(lambda x, y, t, u: f"{t}({u}({x}) >> {u}({y}))")


# the bits of a 64-bit word summed in pairs, nibbles, bytes (then one multiply
# adds the bytes into the top one)
_POPCOUNT_STEPS = (
    "{v} = {v} - (({v} >> np.uint64(1)) & np.uint64(0x5555555555555555))",
    "{v} = ({v} & np.uint64(0x3333333333333333)) + (({v} >> np.uint64(2)) & "
    "np.uint64(0x3333333333333333))",
    "{v} = ({v} + ({v} >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)",
)


def population_count_numba(block, eqn, args, out_names):
    """The set bits of each element's two's-complement pattern (a numba_block:
    four statements per element; an array's in a loop over its elements)."""
    from fungrad.core import ShapedArray, Var
    from fungrad.interpreters.numba_backend import NotCompilable
    aval = eqn.inputs[0].aval
    dtype = np.dtype(aval.dtype)
    if dtype_kind(dtype) not in "iu":
        raise NotCompilable(f"population_count of {dtype}")
    (x,), (out,), (_, u) = args, out_names, _bits_and_unsigned(dtype)
    v = block.names.new(Var(ShapedArray((), np.uint64)))
    if aval.shape == ():
        _popcount_lines(block, v, x, out, dtype, u, "")
        return
    shape, flat_in, flat_out, i = (tuple(int(d) for d in aval.shape),
                                   *(block.names.new(Var(ShapedArray((), np.int64)))
                                     for _ in range(3)))
    block.line(f"{flat_in} = np.ascontiguousarray({x}).reshape(-1)")
    block.line(f"{flat_out} = np.empty({flat_in}.size, np.{dtype.name})")
    block.line(f"for {i} in range({flat_in}.size):")
    _popcount_lines(block, v, f"{flat_in}[{i}]", f"{flat_out}[{i}]", dtype, u, "    ")
    block.line(f"{out} = {flat_out}.reshape({shape!r})")


def _popcount_lines(block, v, x, out, dtype, u, indent):
    block.line(f"{v} = np.uint64({u}({x}))", indent)        # (zero-extended: no sign bits)
    for step in _POPCOUNT_STEPS:
        block.line(step.format(v=v), indent)
    block.line(f"{out} = {numba_type(dtype)}(({v} * np.uint64(0x0101010101010101)) "
               ">> np.uint64(56))", indent)
