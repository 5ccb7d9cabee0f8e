"""JAX's type promotion lattice (the rule of ``jax.numpy``, not NumPy's).

Types are nodes of a directed graph; an edge goes from a type to the types it
promotes to directly, and the result of combining types is their least upper
bound.  Every integer type sits below every float type (``int64 + float16 ->
float16``), ``bool`` is lowest, and the weak types ``int``, ``float`` and
``complex`` (Python scalars, and values derived only from them) sit just above
``bool``/the integers/the floats, so they take the width of the strongly typed
operand: ``uint8 + 1 -> uint8``, ``float16 + 2.5 -> float16``.  Where the
lattice itself lands on a weak type (``uint64 + int64``, ``int32 + 2.5``), the
result is that kind's default dtype (float64, or float32 with
``jax_enable_x64`` off) and stays weakly typed.

ml_dtypes' small types are nodes too, as in JAX: ``bfloat16`` sits beside
``float16`` (both promote to float32), while the float8/float6/float4 types and
int2/int4/uint2/uint4 have no edge out, so they combine only with themselves,
bool and the weak types (``float8_e4m3fn + bfloat16`` raises).

Without ``jax_enable_x64`` the one edge that forms a 64-bit type from 32-bit
ones (``uint32 -> int64``) goes to ``int32`` instead, as in JAX.  Under
``jax_numpy_dtype_promotion="strict"`` only weak types promote (to any type of
their kind or above), and anything else raises ``TypePromotionError``.
"""
from __future__ import annotations

import functools

import numpy as np

from fungrad import _config, _dtype_classes, core
from fungrad._dtype_classes import BFLOAT16 as BF16, SMALL_FLOATS, SMALL_SIGNED, SMALL_UNSIGNED

_D = np.dtype
B = _D(np.bool_)
U8, U16, U32, U64 = _D(np.uint8), _D(np.uint16), _D(np.uint32), _D(np.uint64)
I8, I16, I32, I64 = _D(np.int8), _D(np.int16), _D(np.int32), _D(np.int64)
F16, F32, F64 = _D(np.float16), _D(np.float32), _D(np.float64)
C64, C128 = _D(np.complex64), _D(np.complex128)
WEAK_TYPES = (int, float, complex)          # the weak types i*, f*, c*
_INTS = [U8, U16, U32, U64, I8, I16, I32, I64]
_FLOATS = [F16, F32, F64]
_COMPLEXES = [C64, C128]
_SMALL_INTS = [*SMALL_UNSIGNED, *SMALL_SIGNED]
_SMALL = [*_SMALL_INTS, *SMALL_FLOATS]


class TypePromotionError(TypeError, ValueError):
    """An implicit dtype promotion JAX's lattice does not allow (under
    ``jax_numpy_dtype_promotion="strict"``).  A ``TypeError`` (the promised
    type of a bad-dtype error) and a ``ValueError`` (JAX's base class), so
    either ``except`` catches it.  Also ``fungrad.dtypes.TypePromotionError``."""


def _standard_edges(x64: bool) -> dict:
    edges = {
        B: [int], int: [U8, I8, *_SMALL_INTS],
        U8: [I16, U16], U16: [I32, U32], U32: [I64, U64] if x64 else [I32, U64],
        U64: [float],
        I8: [I16], I16: [I32], I32: [I64], I64: [float],
        float: [*SMALL_FLOATS, F16, complex], F16: [F32], F32: [F64, C64], F64: [C128],
        complex: [C64], C64: [C128], C128: [],
    }
    edges.update({t: [] for t in _SMALL})        # no implicit promotion out of them,
    edges[BF16] = [F32]                          # except bfloat16's, beside float16's
    return edges


def _strict_edges() -> dict:
    edges = {t: [] for t in [B, *_INTS, *_FLOATS, *_COMPLEXES, *_SMALL]}
    edges.update({int: [float, *_INTS, *_SMALL_INTS], float: [complex, *_FLOATS, *SMALL_FLOATS],
                  complex: _COMPLEXES})
    return edges


def _upper_bounds(edges: dict) -> dict:
    """Every node's set of nodes at or above it (the transitive closure)."""
    bounds = {}

    def above(node):
        if node not in bounds:
            bounds[node] = {node}.union(*(above(n) for n in edges[node]))
        return bounds[node]
    for node in edges:
        above(node)
    return bounds


_BOUNDS = {("standard", True): _upper_bounds(_standard_edges(True)),
           ("standard", False): _upper_bounds(_standard_edges(False)),
           "strict": _upper_bounds(_strict_edges())}


def _bounds_table():
    mode = _config.numpy_dtype_promotion.value
    return _BOUNDS["strict"] if mode == "strict" else _BOUNDS[("standard", core._x64)]


def _is_weak_node(node) -> bool:
    # identity, not ==: np.dtype('int64') == int is True
    return node is int or node is float or node is complex


def _show(node) -> str:
    return node.name if isinstance(node, np.dtype) else f"{node.__name__}*"


@functools.lru_cache(maxsize=2048)
def _least_upper_bound(table_key, nodes: frozenset):
    table = _BOUNDS[table_key]
    try:
        common = set.intersection(*(table[n] for n in nodes))
    except KeyError:
        bad = next(n for n in nodes if n not in table)
        raise TypeError(f"dtype {_show(bad)} takes no part in type promotion (JAX's "
                        "lattice has booleans, integers, floats and complexes)") from None
    least = (common & nodes) or {c for c in common if common <= table[c]}
    if len(least) != 1:
        raise TypePromotionError(_no_path_message(table_key, nodes))
    return least.pop()


def _no_path_message(table_key, nodes) -> str:
    shown = tuple(_show(n) for n in nodes)
    if table_key == "strict":
        return (f"Input dtypes {shown} have no available implicit dtype promotion path when "
                "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the "
                "desired output type (x.astype(...)), or set jax_numpy_dtype_promotion=standard.")
    # the class JAX names, first of: 8-bit, 6-bit, 4-bit floats, then small integers
    small_floats = sorted((n for n in nodes if n in SMALL_FLOATS and n != BF16),
                          key=lambda d: -_dtype_classes.finfo(d).bits)
    if small_floats:
        what, fix = f"{_dtype_classes.finfo(small_floats[0]).bits}-bit floats", "float32"
    else:
        what, fix = "1-bit, 2-bit and 4-bit integers", "int32"
    return (f"Input dtypes {shown} have no available implicit dtype promotion path. To avoid "
            f"unintended promotion, {what} do not support implicit promotion. If you'd like "
            "your inputs to be promoted to another type, do so explicitly, e.g. "
            f"x.astype('{fix}').")


def least_upper_bound(*nodes):
    """The join of dtypes and weak types (``int``/``float``/``complex``) on the
    current lattice (standard or strict, x64 on or off)."""
    mode = _config.numpy_dtype_promotion.value
    key = "strict" if mode == "strict" else ("standard", core._x64)
    return _least_upper_bound(key, frozenset(nodes))


def jax_type(dtype: np.dtype, weak: bool):
    """The lattice node of a value: its dtype, or the weak type of its kind."""
    if not weak or dtype == B:
        return dtype
    return {"i": int, "u": int, "f": float, "c": complex}[_dtype_classes.kind(dtype)]


def default_dtype(kind: str) -> np.dtype:
    """The dtype a weak result of this kind takes (64-bit, or 32-bit without x64)."""
    return core.canonicalize_dtype({"b": B, "i": I64, "u": U64, "f": F64, "c": C128}[kind])


def lattice_result_type(typed) -> tuple:
    """``(dtype, weak)`` of an operation on values given as ``(dtype, weak)`` pairs."""
    dtypes = {d for d, _ in typed}
    if len(typed) == 1 or (len(dtypes) == 1 and not all(w for _, w in typed)):
        dtype, weak = typed[0][0], all(w for _, w in typed)
    elif all(w for _, w in typed) and _config.numpy_dtype_promotion.value != "strict":
        dtype, weak = least_upper_bound(*dtypes), True     # weak of the strong join
    else:
        node = least_upper_bound(*{jax_type(d, w) for d, w in typed})
        weak = _is_weak_node(node)
        dtype = default_dtype(_D(node).kind) if weak else node
    if weak and dtype != B:
        return default_dtype(_dtype_classes.kind(dtype)), True
    return dtype, False


def promote_types(a, b) -> np.dtype:
    """JAX's ``promote_types``: the join of two dtypes; the Python types
    ``int``/``float``/``complex`` count as weak.  No 32-bit canonicalisation."""
    nodes = [t if _is_weak_node(t) else np.dtype(t) for t in (a, b)]
    node = least_upper_bound(*nodes)
    return np.dtype(node)
