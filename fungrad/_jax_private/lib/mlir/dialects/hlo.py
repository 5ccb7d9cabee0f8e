"""``jax._src.lib.mlir.dialects.hlo``: StableHLO's operations, interpreted on
fungrad's ``lax``.

Who needs it: JAX's "Primitives in JAX" tutorial lowers its ``multiply_add``
primitive as ``[hlo.AddOp(hlo.MulOp(xc, yc), zc).result]`` and registers that
with ``mlir.register_lowering``; libraries that define primitives write such
rules too. JAX hands the rule MLIR values and compiles what it builds.
fungrad's ``jit`` calls the rule while staging with each operand an
``ir.Value`` around a traced array; each op here computes its result at once
with the ``lax`` function of the same meaning (``hlo.MulOp`` is ``lax.mul``),
so the rule's operations become equations of the jitted program and run as
the rule says (not as the primitive's impl). An op of StableHLO not listed
here raises ``NotImplementedError`` naming it; ``register_lowering`` then
lowers the primitive to its impl call instead (see jax_compat/mlir.py).

Operands are ``ir.Value``s or ops with one result (MLIR's Python API accepts
an op for its single result, and the tutorial relies on it). As in StableHLO,
binary ops need operands of one type: there is no promotion.
"""
from __future__ import annotations

import numpy as np

from fungrad import lax
from fungrad._jax_private.lib.mlir import ir

__all__ = ["ComparisonDirectionAttr", "ConstantOp", "SelectOp", "ClampOp", "ConvertOp",
           "ReshapeOp", "BroadcastInDimOp", "TransposeOp", "CompareOp", "DotOp", "ReverseOp",
           "ConcatenateOp", "SliceOp", "IotaOp"]


def _value(operand):
    """The fungrad array behind an operand (an ``ir.Value`` or a one-result op)."""
    if isinstance(operand, Op):
        operand = operand.result
    if not isinstance(operand, ir.Value):
        raise TypeError(f"hlo: an operand must be an ir.Value (a lowering rule's argument or "
                        f"an op's .result), got {type(operand).__name__}")
    return operand.value


def _attr(value):
    """The Python value of an attribute argument (an ir attribute or plain)."""
    return value.value if isinstance(value, ir._Attr) else value


class Op:
    """One operation; ``.result`` (one result) and ``.results`` (all)."""

    def __init__(self, *results):
        self.results = [ir.Value(r) for r in results]

    @property
    def result(self) -> ir.Value:
        if len(self.results) != 1:
            raise ValueError(f"{type(self).__name__} has {len(self.results)} results; "
                             f"use .results")
        return self.results[0]

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.results))})"


def _elementwise_op(name: str, fn, arity: int):
    def __init__(self, *operands, loc=None, ip=None):
        if len(operands) != arity:
            raise TypeError(f"hlo.{name} takes {arity} operand(s), got {len(operands)}")
        values = [_value(o) for o in operands]
        dtypes = {np.dtype(v.dtype) for v in values}
        if len(dtypes) > 1:
            raise TypeError(f"hlo.{name}: operands must have one element type (StableHLO does "
                            f"not promote), got {sorted(d.name for d in dtypes)}; convert one "
                            f"with hlo.ConvertOp")
        Op.__init__(self, fn(*values))
    return type(name, (Op,), {"__init__": __init__, "__doc__": f"StableHLO's {name}: "
                              f"``lax.{fn.__name__}``."})


_UNARY = {"AbsOp": lax.abs, "CeilOp": lax.ceil, "CosineOp": lax.cos, "ExpOp": lax.exp,
          "Expm1Op": lax.expm1, "FloorOp": lax.floor, "LogOp": lax.log, "Log1pOp": lax.log1p,
          "LogisticOp": lax.logistic, "NegOp": lax.neg, "NotOp": lax.bitwise_not,
          "RsqrtOp": lax.rsqrt, "SignOp": lax.sign, "SineOp": lax.sin, "SqrtOp": lax.sqrt,
          "CbrtOp": lax.cbrt, "TanhOp": lax.tanh, "TanOp": lax.tan, "IsFiniteOp": lax.is_finite,
          "RealOp": lax.real, "ImagOp": lax.imag, "PopulationCountOp": lax.population_count,
          "CountLeadingZerosOp": lax.clz,
          "RoundNearestEvenOp": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
          "RoundOp": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO)}
_BINARY = {"AddOp": lax.add, "SubtractOp": lax.sub, "MulOp": lax.mul, "DivOp": lax.div,
           "RemOp": lax.rem, "PowOp": lax.pow, "MaxOp": lax.max, "MinOp": lax.min,
           "AndOp": lax.bitwise_and, "OrOp": lax.bitwise_or, "XorOp": lax.bitwise_xor,
           "Atan2Op": lax.atan2, "ComplexOp": lax.complex, "ShiftLeftOp": lax.shift_left,
           "ShiftRightArithmeticOp": lax.shift_right_arithmetic,
           "ShiftRightLogicalOp": lax.shift_right_logical, "NextAfterOp": lax.nextafter}
for _name, _fn in _UNARY.items():
    globals()[_name] = _elementwise_op(_name, _fn, 1)
for _name, _fn in _BINARY.items():
    globals()[_name] = _elementwise_op(_name, _fn, 2)
__all__ += sorted(_UNARY) + sorted(_BINARY)


class ComparisonDirectionAttr(ir._Attr):
    """``ComparisonDirectionAttr.get("LT")``: EQ, NE, LT, LE, GT or GE."""
    __slots__ = ()


_COMPARISONS = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt,
                "GE": lax.ge}


class CompareOp(Op):
    def __init__(self, lhs, rhs, comparison_direction, compare_type=None, loc=None, ip=None):
        direction = str(_attr(comparison_direction)).upper()
        if direction not in _COMPARISONS:
            raise ValueError(f"hlo.CompareOp: unknown comparison direction {direction!r}; "
                             f"one of {sorted(_COMPARISONS)}")
        super().__init__(_COMPARISONS[direction](_value(lhs), _value(rhs)))


class SelectOp(Op):
    def __init__(self, pred, on_true, on_false, loc=None, ip=None):
        super().__init__(lax.select(_value(pred), _value(on_true), _value(on_false)))


class ClampOp(Op):
    def __init__(self, min, operand, max, loc=None, ip=None):  # noqa: A002 (StableHLO's names)
        super().__init__(lax.clamp(_value(min), _value(operand), _value(max)))


class ConstantOp(Op):
    """``hlo.ConstantOp(ir.DenseElementsAttr.get(np_array))``."""

    def __init__(self, value, loc=None, ip=None):
        super().__init__(np.array(_attr(value)))     # a constant of the staged program


class ConvertOp(Op):
    def __init__(self, result, operand, loc=None, ip=None):
        super().__init__(lax.convert_element_type(_value(operand), ir.ir_type_to_dtype(result)))


def _result_shape(result, op_name) -> tuple:
    if not isinstance(result, ir.RankedTensorType):
        raise TypeError(f"hlo.{op_name}: the result type must be an ir.RankedTensorType, got "
                        f"{type(result).__name__}")
    return result.shape


class ReshapeOp(Op):
    def __init__(self, result, operand, loc=None, ip=None):
        super().__init__(lax.reshape(_value(operand), _result_shape(result, "ReshapeOp")))


class BroadcastInDimOp(Op):
    def __init__(self, result, operand, broadcast_dimensions, loc=None, ip=None):
        shape = _result_shape(result, "BroadcastInDimOp")
        super().__init__(lax.broadcast_in_dim(_value(operand), shape,
                                              tuple(_attr(broadcast_dimensions))))


class TransposeOp(Op):
    def __init__(self, operand, permutation, loc=None, ip=None):
        super().__init__(lax.transpose(_value(operand), tuple(_attr(permutation))))


class ReverseOp(Op):
    def __init__(self, operand, dimensions, loc=None, ip=None):
        super().__init__(lax.rev(_value(operand), tuple(_attr(dimensions))))


class ConcatenateOp(Op):
    def __init__(self, inputs, dimension, loc=None, ip=None):
        super().__init__(lax.concatenate([_value(v) for v in inputs], int(_attr(dimension))))


class SliceOp(Op):
    def __init__(self, operand, start_indices, limit_indices, strides, loc=None, ip=None):
        super().__init__(lax.slice(_value(operand), tuple(_attr(start_indices)),
                                   tuple(_attr(limit_indices)), tuple(_attr(strides))))


class IotaOp(Op):
    def __init__(self, output, iota_dimension, loc=None, ip=None):
        shape = _result_shape(output, "IotaOp")
        super().__init__(lax.broadcasted_iota(ir.ir_type_to_dtype(output), shape,
                                              int(_attr(iota_dimension))))


class DotOp(Op):
    """Matrix-vector or matrix-matrix product of rank-1/2 operands."""

    def __init__(self, lhs, rhs, precision_config=None, loc=None, ip=None):
        x, y = _value(lhs), _value(rhs)
        super().__init__(lax.dot_general(x, y, (((x.ndim - 1,), (0,)), ((), ()))))


def __getattr__(name):
    if name.endswith("Op") or name.endswith("Attr"):
        raise NotImplementedError(
            f"hlo.{name} is not interpreted by fungrad (it runs a lowering rule's StableHLO "
            f"ops with lax; the ops it knows: {', '.join(__all__)}); jit lowers the "
            f"primitive to its impl instead")
    raise AttributeError(f"module 'hlo' has no attribute {name!r}")
