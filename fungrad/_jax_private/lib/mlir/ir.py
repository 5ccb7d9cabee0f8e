"""``jax._src.lib.mlir.ir`` (also ``jax.interpreters.mlir.ir``): the MLIR types,
attributes and values that a lowering rule written by hand handles.

Who needs it: JAX's "Primitives in JAX" tutorial (its ``multiply_add``
lowering) and libraries that lower their own primitives with ``hlo`` ops.
fungrad does not build MLIR: ``jit`` calls such a rule while staging, with
each operand a ``Value`` holding a fungrad traced array, and the ``hlo`` ops
(``dialects/hlo.py``) compute with fungrad's ``lax`` on them, so the rule
becomes ordinary equations of the jitted program. Types here are what the
rules construct to name a result type (``RankedTensorType.get(shape, F32Type.get())``);
they map to NumPy dtypes one to one.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Type", "RankedTensorType", "F16Type", "BF16Type", "F32Type", "F64Type",
           "IntegerType", "ComplexType", "Value", "OpResult", "DenseElementsAttr",
           "DenseI64ArrayAttr", "DenseBoolArrayAttr", "IntegerAttr", "FloatAttr", "BoolAttr",
           "dtype_to_ir_type", "ir_type_to_dtype"]


class Type:
    """An MLIR element type, standing for one NumPy dtype."""
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __eq__(self, other):
        return type(other) is type(self) and other.dtype == self.dtype

    def __hash__(self):
        return hash((type(self), self.dtype))

    def __repr__(self):
        return f"Type({_MLIR_NAMES.get(self.dtype, self.dtype.name)})"


def _element_type(dtype_name):
    class ElementType(Type):
        __slots__ = ()

        @staticmethod
        def get():
            return Type(_dtype(dtype_name))
    return ElementType


def _dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


F16Type = _element_type("float16")
BF16Type = _element_type("bfloat16")
F32Type = _element_type("float32")
F64Type = _element_type("float64")


class IntegerType:
    """``IntegerType.get_signless(32)`` (StableHLO's signed integers; ``i1`` is bool)."""

    @staticmethod
    def get_signless(width: int) -> Type:
        return Type(np.bool_ if width == 1 else f"int{width}")

    @staticmethod
    def get_unsigned(width: int) -> Type:
        return Type(f"uint{width}")

    get_signed = get_signless


class ComplexType:
    @staticmethod
    def get(element_type: Type) -> Type:
        return Type(np.result_type(element_type.dtype, np.complex64))


_MLIR_NAMES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
               np.dtype(np.float16): "f16", np.dtype(np.bool_): "i1",
               np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


class RankedTensorType:
    """``tensor<2x3xf32>``: a shape and an element type."""
    __slots__ = ("shape", "element_type")

    def __init__(self, shape, element_type: Type):
        self.shape = tuple(int(d) for d in shape)
        if not isinstance(element_type, Type):
            raise TypeError(f"RankedTensorType.get: element type must be an ir type "
                            f"(F32Type.get(), IntegerType.get_signless(32), ...), got "
                            f"{type(element_type).__name__}")
        self.element_type = element_type

    @classmethod
    def get(cls, shape, element_type: Type) -> "RankedTensorType":
        return cls(shape, element_type)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __eq__(self, other):
        return (isinstance(other, RankedTensorType) and other.shape == self.shape
                and other.element_type == self.element_type)

    def __hash__(self):
        return hash((self.shape, self.element_type))

    def __repr__(self):
        dims = "".join(f"{d}x" for d in self.shape)
        name = _MLIR_NAMES.get(self.element_type.dtype, self.element_type.dtype.name)
        return f"RankedTensorType(tensor<{dims}{name}>)"


def dtype_to_ir_type(dtype) -> Type:
    return Type(dtype)


def ir_type_to_dtype(t) -> np.dtype:
    return (t.element_type if isinstance(t, RankedTensorType) else t).dtype


class Value:
    """An SSA value of the lowering: a fungrad array or tracer (``.value``)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    @property
    def type(self) -> RankedTensorType:
        return RankedTensorType(self.value.shape, Type(self.value.dtype))

    def __repr__(self):
        return f"Value({self.type!r})"


OpResult = Value


class _Attr:
    """An attribute holding a Python value (``.value``)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    @classmethod
    def get(cls, value, *rest):
        return cls(value if not rest else (value, *rest))

    def __repr__(self):
        return f"{type(self).__name__}({self.value!r})"


class DenseElementsAttr(_Attr):
    """A constant array: ``DenseElementsAttr.get(np.array(...))``."""
    __slots__ = ()

    @classmethod
    def get(cls, array, type=None, **kwargs):  # noqa: A002 (MLIR's keyword)
        value = np.asarray(array)
        if type is not None:
            value = np.asarray(value, ir_type_to_dtype(type))
        return cls(value)


class DenseI64ArrayAttr(_Attr):
    __slots__ = ()

    @classmethod
    def get(cls, values):
        return cls(tuple(int(v) for v in values))


class DenseBoolArrayAttr(_Attr):
    __slots__ = ()

    @classmethod
    def get(cls, values):
        return cls(tuple(bool(v) for v in values))


class IntegerAttr(_Attr):
    __slots__ = ()

    @classmethod
    def get(cls, type, value):  # noqa: A002 (MLIR's argument name)
        return cls(int(value))


class FloatAttr(_Attr):
    __slots__ = ()

    @classmethod
    def get(cls, type, value):  # noqa: A002
        return cls(float(value))


class BoolAttr(_Attr):
    __slots__ = ()

    @classmethod
    def get(cls, value):
        return cls(bool(value))
