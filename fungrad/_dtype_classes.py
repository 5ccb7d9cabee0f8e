"""Which class of numbers a dtype holds, also for ml_dtypes' small types.

JAX's ``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn``, ``int2``,
``int4``, ``uint2`` and ``uint4`` are ml_dtypes' NumPy extension dtypes.  NumPy
files them all under dtype kind ``'V'`` and outside its scalar hierarchy
(``np.issubdtype(bfloat16, np.floating)`` is False; ``float8_e5m2`` alone has
kind ``'f'``, but no float ufunc loops of NumPy's), so every test of a
dtype's class in fungrad goes through this module instead of ``dtype.kind``
or ``np.issubdtype``: ``kind(bfloat16) == 'f'``, ``kind(int4) == 'i'``.

NumPy computes with these types through ml_dtypes' casts (and for most ufuncs
ml_dtypes' own loops, which also work in float32): ``compute_dtype`` names the
NumPy type a kernel without a loop of its own runs in (float32 for the small
floats, as XLA on CPU does, int8/uint8 for the small integers) before the
result is rounded back.  Imports only NumPy and ml_dtypes, so core can use it.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

# in JAX's order (jax._src.dtypes._custom_float_dtypes, then the intN types)
SMALL_FLOAT_NAMES = ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
                     "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                     "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
SMALL_SIGNED_NAMES = ("int2", "int4")
SMALL_UNSIGNED_NAMES = ("uint2", "uint4")

SMALL_FLOATS = tuple(np.dtype(getattr(ml_dtypes, n)) for n in SMALL_FLOAT_NAMES)
SMALL_SIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in SMALL_SIGNED_NAMES)
SMALL_UNSIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in SMALL_UNSIGNED_NAMES)
BFLOAT16 = SMALL_FLOATS[0]
FLOAT8S = tuple(d for d in SMALL_FLOATS if d.name.startswith("float8"))
FLOAT6S = tuple(d for d in SMALL_FLOATS if d.name.startswith("float6"))
FLOAT4S = tuple(d for d in SMALL_FLOATS if d.name.startswith("float4"))

_KIND = {**{d: "f" for d in SMALL_FLOATS}, **{d: "i" for d in SMALL_SIGNED},
         **{d: "u" for d in SMALL_UNSIGNED}}
_COMPUTE = {**{d: np.dtype(np.float32) for d in SMALL_FLOATS},
            **{d: np.dtype(np.int8) for d in SMALL_SIGNED},
            **{d: np.dtype(np.uint8) for d in SMALL_UNSIGNED}}
_SMALL_SCALAR_TYPES = {d.type: k for d, k in _KIND.items()}
# NumPy 2 gives every dtype its own class: ``type(x.dtype) in SMALL_DTYPE_CLASSES``
# is the cheapest test an eager op can make per operand
SMALL_DTYPE_CLASSES = frozenset(type(d) for d in _KIND)
# the abstract NumPy classes each kind belongs to (JAX's issubdtype for these types)
_ABSTRACT_OF_KIND = {"f": {np.floating, np.inexact, np.number, np.generic},
                     "i": {np.signedinteger, np.integer, np.number, np.generic},
                     "u": {np.unsignedinteger, np.integer, np.number, np.generic}}


def _as_dtype(dtype) -> np.dtype:
    return dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)


def kind(dtype) -> str:
    """NumPy's kind letter (b, i, u, f, c, ...), with ml_dtypes' floats as
    ``'f'`` and their int2/int4/uint2/uint4 as ``'i'``/``'u'``."""
    dtype = _as_dtype(dtype)
    letter = dtype.kind      # 'V' for ml_dtypes' types, but 'f' for float8_e5m2
    return _KIND.get(dtype, letter) if letter in "Vf" else letter


def is_floating(dtype) -> bool:
    """A real floating-point dtype (float16/32/64, bfloat16, float8 ...)."""
    return kind(dtype) == "f"


def is_inexact(dtype) -> bool:
    """A real or complex floating-point dtype: the dtypes with a tangent space."""
    return kind(dtype) in "fc"


def is_integer(dtype) -> bool:
    """A signed or unsigned integer dtype (int4 and uint2 included, bool not)."""
    return kind(dtype) in "iu"


def is_small(dtype) -> bool:
    """One of ml_dtypes' types, which NumPy computes with through casts."""
    return _as_dtype(dtype) in _KIND


def compute_dtype(dtype) -> np.dtype:
    """The NumPy dtype a kernel computes a value of ``dtype`` in: itself, or
    float32 for the small floats and int8/uint8 for the small integers."""
    dtype = _as_dtype(dtype)
    return _COMPUTE.get(dtype, dtype)


def issubdtype(a, b) -> bool:
    """``np.issubdtype`` that files ml_dtypes' types as JAX does: ``bfloat16``
    under ``np.floating``, ``int4`` under ``np.signedinteger`` ..."""
    a_type = a if isinstance(a, type) and issubclass(a, np.generic) else np.dtype(a).type
    b_type = b if isinstance(b, type) and issubclass(b, np.generic) else np.dtype(b).type
    small_kind = _SMALL_SCALAR_TYPES.get(a_type)
    if small_kind is not None:
        return b_type is a_type or b_type in _ABSTRACT_OF_KIND[small_kind]
    return bool(np.issubdtype(a_type, b_type))


# machine limits, of ml_dtypes' types too: ml_dtypes' subclasses of np.finfo and
# np.iinfo (classes, as JAX's jax.dtypes.finfo), NumPy's answers for NumPy's types
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo
