"""The core of fungrad: abstract values, the jaxpr IR, primitives, traces.

Everything a user function does ends in ``primitive.bind(*args, **params)``.
``bind`` hands the call to the *current trace* (thread-local).  A trace is one
interpreter: evaluation (call the NumPy impl), JVP, staging into a jaxpr,
batching.  Each trace runs its rules with its *parent* as the current trace, so
the interpreters stack: ``vmap(grad(f))`` is a batch trace whose rules run on
top of whatever was current before, and a rule never knows what is above or
below it.

A primitive carries all of its rules as attributes, registered next to its
definition in ``fungrad/lax/*.py``::

    impl(*arrays, **params) -> array | list[array]        evaluation (NumPy)
    abstract_eval(*avals, **params) -> aval | list[aval]   shape/dtype rule
    jvp(primals, tangents, **params) -> (out, tangent_out) forward mode
    transpose(cts, *args, **params) -> list[ct | None]     linear primitives only
    batch(axis_size, vals, dims, **params) -> (out, dim)   vmap
    lowering(arg_names, in_avals, **params) -> expression  NumPy code for jit

Tracers of different transformations are told apart by the trace object they
belong to; a finished trace is marked inactive so that a tracer which escaped
raises ``UnexpectedTracerError`` naming where its transformation was started.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import threading
from typing import Any, Callable, Sequence, Union

import numpy as np

from fungrad._dtype_classes import is_inexact, kind as dtype_kind
from fungrad import _config
from fungrad import name_stack as _name_stack

__all__ = [
    "AbstractValue", "ShapedArray", "Var", "Literal", "JaxprEqn", "Jaxpr", "ClosedJaxpr",
    "Primitive", "Trace", "Tracer", "Array", "EvalTrace",
    "get_aval", "eval_jaxpr", "typecheck_jaxpr",
    "UnexpectedTracerError", "ConcretizationTypeError", "TracerBoolConversionError",
    "TracerIntegerConversionError", "TracerArrayConversionError", "KeyReuseError", "JaxRuntimeError",
    "primitives", "float0", "new_trace_context", "canonicalize_dtype", "scalar_dtype",
    "Device", "CpuDevice", "cpu_device", "register_global_array_type",
]

# JAX's dtype for the (empty) tangent space of integer and boolean values.
float0 = np.dtype([("float0", np.void, 0)])

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_PKG_PREFIX = _PKG_DIR + os.sep
_NUMPY_PREFIX = os.path.dirname(np.__file__) + os.sep


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

# ``fungrad.errors`` re-exports these with JAX's names (``jax.errors``); the
# specific conversion errors subclass ConcretizationTypeError, so both
# ``except fungrad.ConcretizationTypeError`` and ``except jax.errors.X`` work.

class UnexpectedTracerError(Exception):
    """A tracer was used after the transformation that created it finished."""


class ConcretizationTypeError(TypeError):
    """Python needed a concrete value (``if``, ``bool``, ``int``...) of a tracer."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (``if``, ``while``, ``and``...) of a tracer without a value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` / ``__index__`` (a size, an index) of a tracer without a value."""


class TracerArrayConversionError(ConcretizationTypeError):
    """``np.asarray(tracer)`` (NumPy code on a traced value)."""


class JaxRuntimeError(ValueError):
    """A run-time check failed (``checkify.check``, ``Error.throw()``)."""


class KeyReuseError(TypeError):
    """A PRNG key was used twice (JAX's ``jax_debug_key_reuse``; fungrad does not
    track key use, so it never raises this: the class exists for ``except``)."""


# ----------------------------------------------------------------------------
# Abstract values
# ----------------------------------------------------------------------------

_SHORT_DTYPE = {
    "float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint64": "u64",
    "uint32": "u32", "uint16": "u16", "uint8": "u8", "bool": "bool",
    "complex128": "c128", "complex64": "c64",
}


class AbstractValue:
    """Base of abstract values (``jax.core.AbstractValue``): libraries check
    ``isinstance(aval, AbstractValue)``."""
    __slots__ = ()


class ShapedArray(AbstractValue):
    """The abstract value of an array: its shape and dtype, no data.

    ``weak_type`` marks values that came from Python scalars, which do not
    force their dtype on others in promotion (NumPy 2 / NEP 50 semantics).
    ``sharding`` is accepted for JAX's signature; on fungrad's one device
    every array is whole, so avals do not store it (``fungrad.sharding``
    gives them JAX's ``aval.sharding``, the single device's).
    """
    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type=False, sharding=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def str_short(self) -> str:
        dt = _SHORT_DTYPE.get(self.dtype.name, self.dtype.name)
        return f"{dt}[{','.join(map(str, self.shape))}]"

    def strip_weak_type(self) -> "ShapedArray":
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def to_tangent_aval(self) -> "ShapedArray":
        """The type of this type's tangents (JAX's method): itself for floats,
        ``float0`` of the same shape for integers and booleans."""
        if is_inexact(self.dtype):
            return self
        return ShapedArray(self.shape, float0)

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.shape}, {self.dtype.name}{weak})"


_PY_SCALARS = (bool, int, float, complex)


def _shaped(shape: tuple, dtype: np.dtype) -> ShapedArray:
    """ShapedArray without argument normalisation (shape/dtype already canonical)."""
    aval = object.__new__(ShapedArray)
    aval.shape = shape
    aval.dtype = dtype
    aval.weak_type = False
    return aval


def get_aval(x) -> ShapedArray:
    """Abstract value of a tracer, array, NumPy scalar or Python scalar."""
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, np.ndarray):
        dtype = x.dtype
        # a non-native byte order ('>f8' here) is the same number type: types
        # are native, and NumPy converts the values wherever they are used
        aval = _shaped(x.shape, dtype if dtype.isnative else dtype.newbyteorder("="))
        if type(x) is Array and x.weak_type:
            aval.weak_type = True
        return aval
    if isinstance(x, np.generic):
        return _shaped((), x.dtype)
    if isinstance(x, _PY_SCALARS):
        return ShapedArray((), scalar_dtype(x), weak_type=type(x) is not bool)
    if type(x) in _global_array_types:   # fungrad.sharding's arrays: no gather for an aval
        return x.aval
    if type(x) in pytype_aval_mappings and not isinstance(typeof(x), ShapedArray):
        raise NotImplementedError(
            f"a {type(x).__name__} (of type {typeof(x)!r}) cannot be an operand of an "
            "operation or an array argument of a transformation: read a Ref's value with "
            "ref[...] first (Refs themselves may be arguments of jit and vmap, and "
            "non-differentiated arguments of grad); hijax types (register_hitype) run "
            "eagerly only: pass the arrays they hold and return new values instead.")
    try:
        arr = np.asarray(x)
    except Exception as err:  # pragma: no cover - numpy's own message is kept
        raise TypeError(f"{type(x).__name__} is not a valid fungrad value: {err}") from None
    if arr.dtype.kind in "OUSV":     # objects, strings, bytes: not array values (as JAX)
        raise TypeError(
            f"Value {x!r:.60} of type {type(x).__name__} is not a valid fungrad array: "
            "pass numbers, NumPy arrays or (nested) lists of numbers.")
    return ShapedArray(arr.shape, arr.dtype)


# Value classes whose type is not a ShapedArray (JAX's ``pytype_aval_mappings``):
# class -> fn(value) -> its abstract value.  Mutable array refs (fungrad.refs)
# and the types of ``fungrad.experimental.hijax.register_hitype`` enter here.
pytype_aval_mappings: dict[type, Callable[[Any], AbstractValue]] = {}


def typeof(x) -> AbstractValue:
    """The abstract value (type) of ``x``: its ShapedArray (``jax.typeof``), or
    what ``pytype_aval_mappings`` says for a registered value class; a
    TypeError for other values."""
    to_type = pytype_aval_mappings.get(type(x))
    if to_type is not None:
        return to_type(x)
    return get_aval(x)


# ----------------------------------------------------------------------------
# Default dtypes (jax_enable_x64)
# ----------------------------------------------------------------------------
# With x64 (fungrad's default) Python scalars and defaults are NumPy's: float64,
# int64, complex128.  Without it they are JAX's 32-bit ones.  The tables below
# are rewritten in place when the option changes, so that hot paths (and jit's
# argument conversion, which shares SCALAR_TO_NUMPY) read them directly.

_x64 = True
_TO_32_BIT = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
              np.dtype(np.uint64): np.dtype(np.uint32),
              np.dtype(np.complex128): np.dtype(np.complex64)}
# Python scalars -> the NumPy value the compiled code of jit receives for them
SCALAR_TO_NUMPY: dict = {}


def canonicalize_dtype(dtype) -> np.dtype:
    """``dtype`` as fungrad uses it: unchanged with x64, else 64-bit -> 32-bit."""
    dtype = np.dtype(dtype)
    return dtype if _x64 else _TO_32_BIT.get(dtype, dtype)


def default_float_dtype() -> np.dtype:
    return np.dtype(np.float64 if _x64 else np.float32)


def default_int_dtype() -> np.dtype:
    return np.dtype(np.int64 if _x64 else np.int32)


def scalar_dtype(x) -> np.dtype:
    """The dtype a Python scalar takes (NumPy's with x64, else 32-bit as JAX);
    OverflowError for an int no NumPy integer holds."""
    if _x64 or type(x) is bool:
        dtype = np.asarray(x).dtype
        if dtype == object:
            raise OverflowError(f"Python int {x} too large to convert to int64 or uint64")
        return dtype
    if isinstance(x, int) and not -2**31 <= x < 2**31:
        raise OverflowError(f"Python int {x} too large to convert to int32 "
                            "(jax_enable_x64 is off; turn it on for 64-bit integers)")
    return _TO_32_BIT.get(np.asarray(x).dtype, np.asarray(x).dtype)


def _set_x64(on: bool):
    global _x64
    _x64 = on
    SCALAR_TO_NUMPY.clear()
    SCALAR_TO_NUMPY.update({float: np.float64 if on else np.float32, bool: np.bool_,
                            complex: np.complex128 if on else np.complex64,
                            int: _int64_scalar if on else _int32_scalar})


def _int64_scalar(x):
    out = np.asarray(x)
    if out.dtype == object:   # beyond uint64: never an object array in compiled code
        raise OverflowError(f"Python int {x} too large to convert to int64 or uint64")
    return out


def _int32_scalar(x):
    return np.asarray(x, dtype=scalar_dtype(x))


_config.enable_x64.hooks.append(_set_x64)
_set_x64(_config.enable_x64.value)


# ----------------------------------------------------------------------------
# The IR: Var, Literal, JaxprEqn, Jaxpr, ClosedJaxpr
# ----------------------------------------------------------------------------

_var_ids = itertools.count()


class Var:
    """A variable of a jaxpr; identity is the object, names come at print time."""
    __slots__ = ("aval", "_id")

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @property
    def id(self) -> int:
        """A number for ``repr`` (JAX's ``Var(id=4)``), given when first asked
        for: a long program's variables are never asked, and an int object
        each was a tenth of its jaxpr's memory."""
        try:
            return self._id
        except AttributeError:
            self._id = next(_var_ids)
            return self._id

    def __repr__(self):      # JAX's form: Var(id=4):float64[5]
        shape = ",".join(map(str, self.aval.shape))
        return f"Var(id={self.id}):{self.aval.dtype.name}[{shape}]"


class Literal:
    """A constant scalar written inline in a jaxpr."""
    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray | None = None):
        self.val = val
        self.aval = aval if aval is not None else get_aval(val)

    def __repr__(self):      # JAX's form: Literal(2.0)
        return f"Literal({self.val})"


#: what an equation reads: a variable or an inline constant (JAX's ``core.Atom``)
Atom = Union[Var, Literal]


class JaxprEqn:
    """``outvars = primitive[params] inputs``.  ``source`` is where the user's code
    created it, ``(filename, lineno, function, transforms)``, recorded while
    jax_debug_nans or jax_debug_infs is on, else None (see "Source information"
    below); ``scope`` the names of the scopes it was staged in (a tuple of str,
    fungrad/name_stack.py); passes that rewrite an equation keep both."""
    __slots__ = ("primitive", "inputs", "params", "outvars", "source", "scope")

    def __init__(self, primitive, inputs, params, outvars, source=None, scope=()):
        self.primitive = primitive
        # (lists are taken as they are: equations are never mutated, and the
        # passes share the outputs list of an equation they rewrite)
        self.inputs = inputs if type(inputs) is list else list(inputs)
        self.params = params
        self.outvars = outvars if type(outvars) is list else list(outvars)
        self.source = source
        self.scope = scope

    invars = property(lambda self: self.inputs)    # JAX's name for the inputs

    @property
    def source_info(self) -> _name_stack.SourceInfo:
        """JAX's ``eqn.source_info``: its ``name_stack`` (``str()``: "mlp/linear_0")."""
        return _name_stack.SourceInfo(_name_stack.NameStack(self.scope))

    def __repr__(self):
        return pp_eqn(self, _Namer())


class Jaxpr:
    """``{ lambda constvars ; invars . let eqns in outvars }``."""
    __slots__ = ("constvars", "invars", "eqns", "outvars")

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __repr__(self):
        return pp_jaxpr(self)

    __str__ = __repr__


_MISSING = object()
DERIVED_CACHE_SIZE = 128


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars.

    ``derived(key, build)`` is the one cache of everything computed from a
    jaxpr (its JVP, transpose, batched and partially evaluated versions, its
    compiled code): entries live on the jaxpr itself, so they die with it.
    """
    __slots__ = ("jaxpr", "consts", "_derived")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self._derived = None

    def derived(self, key, build: Callable):
        """``build()``, computed once per hashable ``key`` for this jaxpr (at most
        ``DERIVED_CACHE_SIZE`` entries, the oldest dropped first: a long-lived
        jaxpr vmapped at ever new sizes must not grow without bound)."""
        cache = self._derived
        if cache is None:
            cache = self._derived = {}
        value = cache.get(key, _MISSING)
        if value is _MISSING:
            value = build()
            if len(cache) >= DERIVED_CACHE_SIZE:
                try:
                    cache.pop(next(iter(cache)), None)
                except (RuntimeError, StopIteration):   # another thread changed it
                    pass
            cache[key] = value
        return value

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)   # JAX's older name for the consts
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    constvars = property(lambda self: self.jaxpr.constvars)

    def __repr__(self):
        return pp_jaxpr(self.jaxpr)

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(repr(self))


# ----------------------------------------------------------------------------
# Pretty printing
# ----------------------------------------------------------------------------

class _Namer:
    """Gives variables the short names a, b, ..., z, ba, bb, ... in order of use."""

    def __init__(self):
        self.names: dict[Var, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return _pp_literal(v.val)
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _letters(len(self.names))
        return name


def _letters(n: int) -> str:
    s = ""
    while True:
        s = chr(ord("a") + n % 26) + s
        n //= 26
        if n == 0:
            return s


def _pp_literal(val) -> str:
    val = val.item() if isinstance(val, (np.ndarray, np.generic)) else val
    return repr(val)


def _pp_param(value, namer) -> str:
    if isinstance(value, ClosedJaxpr):
        value = value.jaxpr
    if isinstance(value, Jaxpr):
        inner = pp_jaxpr(value, _Namer()).replace("\n", "\n    ")
        return inner
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, tuple):
        return "(" + ", ".join(_pp_param(v, namer) for v in value) + ("," if len(value) == 1 else "") + ")"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__      # (not the repr: it holds an address)
    return repr(value) if isinstance(value, str) else str(value)


def pp_eqn(eqn: JaxprEqn, namer) -> str:
    outs = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in eqn.outvars)
    params = ""
    if eqn.params:
        params = "[" + " ".join(f"{k}={_pp_param(v, namer)}"
                                for k, v in sorted(eqn.params.items())) + "]"
    ins = " ".join(namer(a) for a in eqn.inputs)
    return f"{outs or '_'} = {eqn.primitive.name}{params} {ins}".rstrip()


def pp_jaxpr(jaxpr: Jaxpr, namer: _Namer | None = None) -> str:
    """JAX-style text: ``{ lambda c:f64[] ; a:f64[3] . let ... in (b,) }``."""
    namer = namer or _Namer()
    decl = lambda vs: " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in vs)
    head = f"{{ lambda {decl(jaxpr.constvars)}; {decl(jaxpr.invars)}. let"
    eqns = [pp_eqn(e, namer) for e in jaxpr.eqns]
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    outs = f"({outs}{',' if len(jaxpr.outvars) == 1 else ''})"
    if sum(len(e) for e in eqns) < 70 and all("\n" not in e for e in eqns):
        body = "; ".join(eqns)
        return f"{head} {body} in {outs} }}" if body else f"{head} in {outs} }}"
    lines = "\n".join("    " + e for e in eqns)
    return f"{head}\n{lines}\n  in {outs} }}"


# ----------------------------------------------------------------------------
# Type checking
# ----------------------------------------------------------------------------

def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
    """Check every equation's avals against its primitive's shape rule.

    Raises TypeError naming the first equation whose inputs are undefined or
    whose declared output avals differ from what the shape rule gives.
    """
    defined: set = set(jaxpr.constvars) | set(jaxpr.invars)
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var) and a not in defined:
                raise TypeError(f"equation {i} ({eqn}) uses undefined variable {a}")
        in_avals = [a.aval for a in eqn.inputs]
        out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        got = [v.aval.strip_weak_type() for v in eqn.outvars]
        want = [a.strip_weak_type() for a in outs]
        if got != want:
            raise TypeError(f"equation {i} ({eqn}): declared output types "
                            f"{[a.str_short() for a in got]} but the rule of "
                            f"{eqn.primitive.name} gives {[a.str_short() for a in want]}")
        for v in eqn.outvars:
            if v in defined:
                raise TypeError(f"equation {i} ({eqn}) redefines {v}")
            defined.add(v)
    for v in jaxpr.outvars:
        if isinstance(v, Var) and v not in defined:
            raise TypeError(f"jaxpr output {v} is never defined")


# ----------------------------------------------------------------------------
# Primitives
# ----------------------------------------------------------------------------

primitives: dict[str, "Primitive"] = {}   # the registry every generic test walks


def standard_weak_type(avals, params) -> bool:
    """JAX's weak-type rule of most primitives: the outputs are weakly typed
    when every input is (an operation on Python scalars only)."""
    for a in avals:
        if not a.weak_type:
            return False
    return bool(avals)


def operand_weak_type(avals, params) -> bool:
    """The weak-type rule of indexing primitives (gather, scatter,
    dynamic_slice, ...): the operand's (indices and updates do not count)."""
    return avals[0].weak_type


def strip_weak_type_rule(avals, params) -> bool:
    """The weak-type rule of primitives whose outputs are never weak (argmax,
    bitcast_convert_type, ...)."""
    return False


class Primitive:
    """A named operation with one rule per interpreter, stored as attributes."""

    def __init__(self, name: str, multiple_results: bool = False,
                 linear: bool = False, differentiable: bool = True):
        self.name = name
        self.multiple_results = multiple_results
        self.linear = linear                  # has (and needs) a transpose rule
        self.differentiable = differentiable  # False: integer/boolean valued
        self.impl: Callable | None = None
        self.abstract_eval: Callable | None = None
        # weak_type_rule(in_avals, params) -> bool (every output) or a list of
        # bools: which outputs are weakly typed (JAX's weak_type_rule); None:
        # the abstract_eval rule's avals say (control flow, calls: their jaxprs')
        self.weak_type_rule: Callable | None = None if multiple_results else standard_weak_type
        # its rule may make weak outputs of strong inputs (convert_element_type's
        # weak_type param): evaluation consults it on every call, not only for weak inputs
        self.weak_from_params = False
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        # code generation: lowering(arg_names, in_avals, **params) -> an expression
        # node (interpreters/lowering.py); registered with lax.utils.def_lowering
        self.lowering: Callable | None = None
        # collectives (psum, ...) over a named vmap axis: reduce rule, see lax/parallel.py
        self.collective: Callable | None = None
        # higher-order primitives: split into known/unknown under partial eval
        self.partial_eval: Callable | None = None
        self.inline = False       # codegen inlines the ``jaxpr`` param
        self.emit_block = None    # control flow: emits a Python block (codegen.Block)
        # the optional compiled backend (interpreters/numba_backend.py): a rule
        # (arg_names, in_avals, out_avals, **params) -> source numba compiles, or
        # None where it cannot (ufuncs need none: their NumPy lowering is it), and
        # control flow's block emitter for a numba_backend.NumbaBlock
        self.numba_lowering: Callable | None = None
        self.numba_block = None
        # its numba_lowering is elementwise (operands of the output's shape or
        # scalars): it may join a fused loop, called on scalar avals there
        self.numba_elementwise = False
        # (key, source()): module-level numba source its lowering calls (a
        # kernel module's functions), written once before a program's segments
        self.numba_prelude = None
        # has a side effect (debug callbacks, checks): dce keeps it, cse never merges it
        self.effectful = False
        # algebraic facts the optimisation passes read (interpreters/passes.py)
        self.commutative = False  # operands may be reordered (CSE)
        self.unit = None          # op(x, unit) == x (either side if commutative)
        self.forwards_when: Callable | None = None  # params -> bool: then returns its
        #                           first operand unchanged, if that has the output's aval
        self.involution = False   # op(op(x)) == x
        self.distributes_over = ()  # primitives p with op(x, p(a, b)) == p(op(x, a), op(x, b))
        self.remat = False        # recomputes on purpose: never merged by CSE
        # finite inputs always give finite outputs (reshape, select, max...): the
        # code jax_debug_nans/jax_debug_infs generate checks no result of it
        self.keeps_finite = False
        # its lowering always returns a new array (or a view of one) that nothing
        # else refers to: codegen may write a later ufunc's result into it (out=)
        self.fresh_result = False
        # linear, one operand: params -> the box (a tuple of slices) its transpose
        # writes the cotangent into, zeros elsewhere (slice); the eager tape
        # keeps such cotangents as boxes until read (interpreters/tape_pads.py)
        self.transpose_box: Callable | None = None
        # the eager tape saves its operands and recomputes what its backward
        # reads (a max's equality mask and counts cost more than the max, and a
        # stop_gradient'ed max never needs them)
        self.recompute_residuals = False
        # params whose values any hashable may be (axis names): the lowering binds
        # them by name, so codegen's check for user text in params skips them
        # (True: all of them)
        self.opaque_params: tuple | bool = ()
        self._register()

    def _register(self):
        """Enter fungrad's registry (names are unique: generated code calls an impl
        by name); extension primitives (fungrad.extend.core) override this."""
        if self.name in primitives:
            raise ValueError(f"primitive {self.name!r} is already registered; a primitive "
                             "of your own is defined with fungrad.extend.core.Primitive or "
                             "define_primitive")
        primitives[self.name] = self

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        # The one choke point: every operation goes to the current trace.
        return _tls.trace.process_primitive(self, args, params)

    def def_impl(self, impl):
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule):
        self.abstract_eval = rule
        return rule


def with_weak_types(prim: Primitive, in_avals, params, out_avals: list) -> list:
    """``out_avals`` (of ``prim`` on ``in_avals``) weakly typed as its
    ``weak_type_rule`` says."""
    rule = prim.weak_type_rule
    if rule is None:
        return out_avals
    flags = rule(in_avals, params)
    if flags is True or flags is False:
        if not flags:
            for a in out_avals:        # (the common case: strong, as rules made them)
                if a.weak_type:
                    break
            else:
                return out_avals
        flags = [flags] * len(out_avals)
    return [a if a.weak_type == w else ShapedArray(a.shape, a.dtype, w)
            for a, w in zip(out_avals, flags)]


def output_weak_types(prim: Primitive, args, params, num_outputs: int) -> list:
    """Which of the ``num_outputs`` outputs of ``prim`` on the values ``args``
    are weakly typed."""
    in_avals = [get_aval(a) for a in args]
    rule = prim.weak_type_rule
    if rule is None:
        out = prim.abstract_eval(*in_avals, **params)
        return [a.weak_type for a in (out if prim.multiple_results else [out])]
    flags = rule(in_avals, params)
    return list(flags) if isinstance(flags, (list, tuple)) else [bool(flags)] * num_outputs


# ----------------------------------------------------------------------------
# Traces and tracers
# ----------------------------------------------------------------------------

class _TraceState(threading.local):
    def __init__(self):
        self.trace = EVAL_TRACE_PLACEHOLDER
        # the transformations open on this thread, outermost first: (label, origin)
        self.transforms = ()
        # one entry per running jaxpr interpreter: the equation it is at
        self.running = []


EVAL_TRACE_PLACEHOLDER: "Trace"   # set below, once EvalTrace exists


# path prefixes whose frames are not "the user's code" in error messages and
# source information: fungrad's own, and what libraries built on it register
# (``jax.extend.source_info_util.register_exclusion``: flax, equinox)
_excluded_paths: tuple = (_PKG_DIR,)


def register_exclusion(path: str) -> None:
    """Frames of files under ``path`` are skipped when looking for the user's line."""
    global _excluded_paths
    if not isinstance(path, str):
        raise TypeError(f"register_exclusion: path must be a str, got {type(path).__name__}")
    if path not in _excluded_paths:
        _excluded_paths = _excluded_paths + (path,)


def _user_frame() -> str:
    """File:line of the innermost caller outside fungrad (and excluded paths)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_excluded_paths):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


# ----------------------------------------------------------------------------
# Source information of equations (the provenance jax_debug_nans reports)
# ----------------------------------------------------------------------------
# While jax_debug_nans or jax_debug_infs is on, every staged equation records
# where the user's code created it: ``eqn.source = (filename, lineno,
# function, transforms)``, ``transforms`` the (label, origin) pairs of the
# transformations open at that moment.  That is the innermost frame outside
# fungrad -- unless a jaxpr interpreter (``eval_jaxpr``, the backward pass) is
# nearer: the equations it stages while re-interpreting an equation inherit
# that one's source, so derived jaxprs (JVPs, transposes, batched or partially
# evaluated bodies) point at the user's line of the original, inside loop
# bodies and custom rules too.  Finding it is one walk over the frames
# between the staging trace and the user's code (fungrad's code objects are
# classified once), but on CPython 3.11 reading ``f_back`` creates a frame
# object per frame: a quarter of the time of tracing, which is why it is
# only done while the checks that report it are on (jit traces again then).

_FUNGRAD, _INTERPRETER = 1, 2
_code_kinds: dict = {}        # fungrad's code objects -> _FUNGRAD / _INTERPRETER
_interpreter_phase: dict = {}  # an interpreter's code -> the transform it adds, or None


def register_interpreter(fn, phase=None) -> None:
    """``fn`` interprets jaxprs equation by equation, keeping the equation it is
    running in ``_tls.running[-1]`` (one entry per call, see ``eval_jaxpr``);
    ``phase`` is the (label, origin) pair the equations it stages add to
    their transforms (the backward pass's "transpose")."""
    _code_kinds[fn.__code__] = _INTERPRETER
    _interpreter_phase[fn.__code__] = phase


def _find_origin(frame):
    """``(source, eqn, phase)`` of the code running in ``frame``: the innermost
    user frame (``eqn`` None), or the equation an interpreter is running."""
    kinds = _code_kinds
    running = None
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code)
        if kind is None:
            name = code.co_filename
            if name.startswith(_PKG_PREFIX) or name.startswith(_excluded_paths):
                kinds[code] = _FUNGRAD
            elif not name.startswith("<fungrad"):     # (generated code is fungrad's)
                return (name, frame.f_lineno, code.co_name, _tls.transforms), None, None
        elif kind is _INTERPRETER:
            if running is None:
                running = _tls.running
                k = len(running)
            k -= 1
            eqn = running[k] if k >= 0 else None
            if eqn is not None and eqn.source is not None:
                return eqn.source, eqn, _interpreter_phase[code]
        frame = frame.f_back
    return None, None, None


def current_source(depth: int = 1):
    """The source an equation created now records (see above); ``depth`` frames
    above the caller's are skipped (they are known to be fungrad's)."""
    source, _, phase = _find_origin(sys._getframe(depth + 1))
    if phase is not None:
        source = source[:3] + (source[3] + (phase,),)
    return source


class Trace:
    """One interpreter instance. ``parent`` is the trace its rules bind on."""
    __slots__ = ("parent", "active", "origin", "__weakref__")
    kind = "trace"

    def __init__(self, parent: "Trace | None"):
        self.parent = parent
        self.active = True
        self.origin = _user_frame() if parent is not None else ""

    def label(self) -> str:
        """What this transformation is called in error messages (its ``kind``)."""
        return self.kind

    @property
    def main(self) -> "Trace":
        """What identifies this transformation (JAX's ``trace.main``, its tag): a
        tracer ``x`` belongs to it when ``x._trace.main is trace.main``."""
        return self

    def process_primitive(self, prim: Primitive, args, params):
        raise NotImplementedError  # every concrete trace overrides this

    def check_foreign(self, x):
        """A tracer of another trace is fine only while that trace is live."""
        if not x._trace.active:
            raise UnexpectedTracerError(escaped_message(x))

    def finish(self):
        self.active = False


def escaped_message(tracer) -> str:
    t = tracer._trace
    return (f"Encountered an escaped tracer {tracer.aval.str_short()} of a "
            f"{t.kind} transformation started at {t.origin}. That transformation "
            "has finished, so the value no longer exists: a traced value was "
            "stored outside the function (in a global, an attribute, a list) or "
            "returned through a side channel. Return it from the transformed "
            "function instead, or compute it outside the transformation.")


class new_trace_context:
    """``with new_trace_context(trace): ...`` makes ``trace`` current, then
    restores the previous current trace and marks ``trace`` finished.  While
    it is open (and jax_debug_nans/infs is on), ``trace`` is on the thread's
    transform stack (``_tls.transforms``, which the errors of the checks show)."""
    __slots__ = ("trace", "prev", "finish", "prev_transforms")

    def __init__(self, trace: Trace, finish: bool = True):
        self.trace = trace
        self.finish = finish

    def __enter__(self):
        tls = _tls
        self.prev = tls.trace
        tls.trace = trace = self.trace
        self.prev_transforms = tls.transforms
        if _float_checks and trace.parent is not None:    # (not the evaluation trace)
            tls.transforms = self.prev_transforms + ((trace.label(), trace.origin),)
        return trace

    def __exit__(self, *exc):
        _tls.trace = self.prev
        _tls.transforms = self.prev_transforms
        if self.finish:
            self.trace.finish()
        return False


class set_current_trace:
    """Run rules with ``trace`` current (no finishing): used by every rule call."""
    __slots__ = ("trace", "prev")

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.prev = _tls.trace
        _tls.trace = self.trace

    def __exit__(self, *exc):
        _tls.trace = self.prev
        return False


def current_trace() -> Trace:
    return _tls.trace


def bind_on(trace: Trace, prim: Primitive, args, params):
    """``prim.bind`` with ``trace`` as the current trace."""
    prev = _tls.trace
    _tls.trace = trace
    try:
        return trace.process_primitive(prim, args, params)
    finally:
        _tls.trace = prev


# ----------------------------------------------------------------------------
# Arrays and the evaluation trace
# ----------------------------------------------------------------------------

class EvalTrace(Trace):
    """No transformation: run the NumPy impl and return read-only Arrays."""
    __slots__ = ()
    kind = "eval"

    def process_primitive(self, prim, args, params):
        # The hot path of eager fungrad: keep it to a type check per argument.
        vals = []
        weak = False       # a weakly typed input: the outputs may be weak too
        for a in args:
            t = type(a)
            if t is Array:
                if a.weak_type:
                    weak = True
                a = a.view(np.ndarray)   # NumPy is slower on subclasses
            elif t is not np.ndarray:
                if t is float or t is int or t is complex:
                    weak = True
                elif isinstance(a, Tracer):
                    raise UnexpectedTracerError(_eval_tracer_message(a))
            vals.append(a)
        out = prim.impl(*vals, **params)
        if _float_checks:           # jax_debug_nans / jax_debug_infs
            check_floats(out if prim.multiple_results else [out], _op_name(prim, params), vals)
        if weak or prim.weak_from_params:
            return _weak_results(prim, args, params, out)
        if prim.multiple_results:
            return [wrap_array(o) for o in out]
        return wrap_array(out)


def _is_weak_value(a) -> bool:
    t = type(a)
    return t is float or t is int or t is complex or (t is Array and a.weak_type)


def _weak_results(prim, args, params, out):
    """The Arrays of ``out``, weakly typed where ``prim``'s rule says so."""
    outs = out if prim.multiple_results else [out]
    if prim.weak_type_rule is standard_weak_type:    # (without avals: the common case)
        flags = [all(map(_is_weak_value, args))] * len(outs)
    else:
        flags = output_weak_types(prim, args, params, len(outs))
    arrays = [with_weak_type(wrap_array(o), w) for o, w in zip(outs, flags)]
    return arrays if prim.multiple_results else arrays[0]


# ----------------------------------------------------------------------------
# jax_debug_nans / jax_debug_infs: eager results and jitted calls are checked
# ----------------------------------------------------------------------------
# Eagerly, every primitive's result is checked here (EvalTrace); jit and the
# compiled bodies of control flow run code that checks after each equation
# that can create a NaN/inf (codegen.py).  Either way the error names the
# primitive, the user's line that created it (``eqn.source``, or the frames),
# the transformations it ran under, and the inputs.

_float_checks = False     # either option is on (mirrored here for the hot paths: a bool)
# what is checked, "" (off), "nan", "inf" or "nan+inf": the key of the checking code
_float_check_mode = ""


def _set_float_checks(_):
    global _float_checks, _float_check_mode
    _float_check_mode = "+".join(name for name, option in
                                 (("nan", _config.debug_nans), ("inf", _config.debug_infs))
                                 if option.value)
    _float_checks = bool(_float_check_mode)
    # NumPy's own operators on concrete Arrays (``a / b``) are checked too, but
    # only while an option is on: otherwise Array has no __array_ufunc__ of its own
    if _float_checks:
        Array.__array_ufunc__ = _checked_array_ufunc
    elif "__array_ufunc__" in Array.__dict__:
        del Array.__array_ufunc__


# code objects of Array's operators (fungrad.numpy installs them): a NumPy
# ufunc they call is the user's operation, checked as the user's line
OPERATOR_CODES: set = set()


def _checked_array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufunc on ndarray views of the Arrays (so NumPy gives the result it
    gives without this hook), then the jax_debug_nans/infs check -- if the user's
    code called it: fungrad's (the code jit generates, called with Arrays) checks
    its own results."""
    if any(isinstance(x, Tracer) for x in inputs):
        return NotImplemented          # (the tracer's own __array_ufunc__ takes it)
    frame = sys._getframe(1)
    # (ndarray.sum's Python part, and Array's operators, which call NumPy's for the user)
    while frame.f_code.co_filename.startswith(_NUMPY_PREFIX) or frame.f_code in OPERATOR_CODES:
        frame = frame.f_back
    name = frame.f_code.co_filename
    checked = not (name.startswith(_PKG_PREFIX) or name.startswith("<fungrad"))
    plain = lambda x: x.view(np.ndarray) if type(x) is Array else x
    given = kwargs.get("out")
    if given is not None:
        kwargs["out"] = tuple(plain(o) for o in given)
    out = getattr(ufunc, method)(*[plain(x) for x in inputs], **kwargs)
    if checked:
        check_floats(out if isinstance(out, tuple) else (out,),
                     f"numpy.{ufunc.__name__} (a NumPy operation on fungrad Arrays)", inputs)
    if given is not None:
        return given if isinstance(out, tuple) else given[0]
    # (NumPy keeps a 0-d result of Arrays an Array, so a scalar becomes one)
    wrap = lambda r: np.asarray(r).view(Array) if isinstance(r, (np.ndarray, np.generic)) else r
    return tuple(map(wrap, out)) if isinstance(out, tuple) else wrap(out)


_config.debug_nans.hooks.append(_set_float_checks)
_config.debug_infs.hooks.append(_set_float_checks)


def _op_name(prim, params) -> str:
    name = params.get("name")
    return f"{prim.name}({name})" if isinstance(name, str) else prim.name


def _nonfinite(values) -> str | None:
    """"nan" or "inf" if a float result holds one the enabled checks look for."""
    for v in values:
        v = np.asarray(v)
        if not is_inexact(v.dtype) or not v.size:
            continue
        if _config.debug_nans.value and np.isnan(v).any():
            return "nan"
        if _config.debug_infs.value and np.isinf(v).any():
            return "inf"
    return None


def check_floats(values, where: str, inputs=None) -> None:
    """FloatingPointError if ``values`` (results of ``where`` applied to ``inputs``,
    evaluated now) hold a NaN/inf that jax_debug_nans/jax_debug_infs look for."""
    bad = _nonfinite(values)
    if bad is not None:
        raise FloatingPointError(nonfinite_message(bad, where, current_source(1), inputs))


def check_outputs(values, where: str) -> None:
    """The outputs of checked compiled code: a NaN/inf no equation created came
    in with the arguments or the constants (or from an unchecked primitive)."""
    bad = _nonfinite(values)
    if bad is not None:
        raise FloatingPointError(nonfinite_message(
            bad, where, None, None, "no equation of the compiled code created it: it "
            "came in with the arguments (or the closed-over constants)"))


def nonfinite_error(eqn, outs, inputs) -> FloatingPointError:
    """The error of checked compiled code whose equation ``eqn`` produced the
    non-finite ``outs`` from ``inputs`` (called by the generated code)."""
    bad = _nonfinite(outs) or ("nan" if _config.debug_nans.value else "inf")
    name = _op_name(eqn.primitive, eqn.params)
    note = "" if eqn.source is not None else (
        "no source line: this jaxpr was traced while jax_debug_nans/jax_debug_infs was off")
    return FloatingPointError(nonfinite_message(bad, name, eqn.source, inputs, note))


def nonfinite_message(bad, where, source, inputs, note: str = "") -> str:
    """``invalid value (nan) encountered in <where>`` and its provenance: the user's
    line (``source``), the phase (forward or backward pass), the
    transformations, the inputs (shape, and whether they already held one)."""
    option = "jax_debug_nans" if bad == "nan" else "jax_debug_infs"
    lines = [f"invalid value ({bad}) encountered in {where} ({option} is on)"]
    if source is not None:
        file, line, function, recorded = source
        text = _source_line(file, line)
        lines.append(f"  created at {file}:{line} (in {function})" + (f": {text}" if text else ""))
        labels = {label for label, _ in recorded + _tls.transforms}
        if "transpose" in labels:
            lines.append("  in the backward pass (the transposed derivative of that line)")
        elif "backward pass" in labels:
            lines.append("  in the backward pass")
        elif labels & {"jvp", "linearize", "grad"}:
            lines.append("  in the forward pass")
    else:
        recorded = ()
    transforms = _describe_transforms(t for t in _tls.transforms + tuple(
        t for t in recorded if t not in _tls.transforms) if t[0] not in _PHASES)
    lines.append(f"  under: {transforms}")
    if inputs is not None:
        lines.append("  inputs: " + (", ".join(_describe_input(x) for x in inputs) or "none"))
    if note:
        lines.append(f"  ({note})")
    lines.append(f"  switch the check off with fungrad.config.update({option!r}, False)")
    return "\n".join(lines)


def _source_line(file: str, line: int) -> str:
    import linecache
    return linecache.getline(file, line).strip()


_PHASES = ("transpose", "backward pass")    # said by the phase line, not listed


def _describe_transforms(transforms) -> str:
    """"vmap (started at f.py:3 (main)) > grad ..." or "no transformation"."""
    parts, previous = [], None
    for label, origin in transforms:
        if label == "jvp" and previous == ("linearize", origin):
            parts[-1] = f"grad/vjp (linearize, started at {origin})"   # one transformation
        else:
            parts.append(f"{label} (started at {origin})" if origin else label)
        previous = (label, origin)
    return " > ".join(parts) if parts else "no transformation (eager evaluation)"


def _describe_input(x) -> str:
    aval = get_aval(x)
    v = np.asarray(x) if is_inexact(aval.dtype) else None
    if v is None:
        return aval.str_short()
    held = [k for k, test in (("nan", np.isnan), ("inf", np.isinf)) if v.size and test(v).any()]
    return f"{aval.str_short()} ({'already holds ' + ' and '.join(held) if held else 'finite'})"


def _eval_tracer_message(a) -> str:
    if not a._trace.active:
        return escaped_message(a)
    return (f"A {a._trace.kind} tracer reached evaluation outside its "
            f"transformation (started at {a._trace.origin}).")


def wrap_array(x) -> "Array":
    """A read-only fungrad Array viewing ``x`` (no copy); arrays whose shards live
    elsewhere (``register_global_array_type``) are returned as they are."""
    t = type(x)
    if t is not np.ndarray:
        if t is Array or t in _global_array_types:
            return x
        # a 0-d Array over a NumPy scalar's (read-only) buffer: cheaper than
        # asarray + view + setflags, on every scalar result (a Python float,
        # what Python-float and numba code return, and the commonest scalars
        # are looked up; jit's per-call cost is mostly this for scalar code)
        if t is float:
            return _new_ndarray(Array, (), _FLOAT64, np.float64(x))
        dtype = _SCALAR_TYPE_DTYPES.get(t)
        if dtype is not None:
            return _new_ndarray(Array, (), dtype, x)
        if issubclass(t, np.generic) and dtype_kind(x.dtype) in "biufc":
            return _new_ndarray(Array, (), x.dtype, x)
        x = np.asarray(x)
    out = x.view(Array)
    out.setflags(write=False)
    return out


_new_ndarray = np.ndarray.__new__
_FLOAT64 = np.dtype(np.float64)
_SCALAR_TYPE_DTYPES = {t: np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32,
                                                np.bool_, np.complex128, np.complex64)}


def with_weak_type(x, weak: bool):
    """``x`` (an Array) weakly typed or not: itself when it already is, else a
    new view of its buffer (an Array's weak type never changes, so a shared
    one is never marked)."""
    if type(x) is not Array or x.weak_type == weak:
        return x
    out = x.view(Array)
    out.setflags(write=False)
    if weak:
        out.weak_type = True
    return out


def weak_array(value, dtype) -> "Array":
    """A weakly typed Array of ``value`` (a Python scalar, as JAX makes
    ``jnp.asarray(2.0)``) with ``dtype``."""
    return with_weak_type(wrap_array(np.asarray(value, dtype)), True)


def plain_array(x):
    """``x`` as NumPy computes fastest on it: a fungrad Array as a plain ndarray
    view of its (read-only) buffer (O(1), no copy: NumPy's ufuncs cost about
    twice as much on an ndarray subclass); anything else as it is."""
    return x.view(np.ndarray) if type(x) is Array else x


# ----------------------------------------------------------------------------
# Devices: one process is one CPU device (fungrad.distributed adds Dask workers)
# ----------------------------------------------------------------------------

class Device:
    """A place arrays live (``jax.Device``): ``id``, ``platform``, ``device_kind``."""
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0

    def __init__(self, id: int = 0):
        self.id = int(id)

    def __repr__(self):
        return f"CpuDevice(id={self.id})"


class CpuDevice(Device):
    """This process's CPU, where every fungrad Array lives (NumPy memory)."""


cpu_device = CpuDevice(0)

# Types of arrays whose data lives on other devices (fungrad.sharding's global
# arrays): get_aval asks them for their aval, and wrap_array passes them through.
_global_array_types: set = set()


def register_global_array_type(cls) -> None:
    """Make ``cls`` (with an ``aval`` attribute and ``__array__``) a fungrad value
    that evaluation passes through without gathering it."""
    _global_array_types.add(cls)


class _ArrayMeta(type):
    """``isinstance(v, Array)`` is true for tracers too, as ``isinstance(v,
    jax.Array)`` is inside transformations.  Free on hot paths: fungrad's own
    code tests ``type(v) is Array``, and CPython answers an exact-type
    ``isinstance`` before it calls this hook."""

    def __instancecheck__(cls, obj):
        # typed PRNG key arrays (fungrad.random's KeyArray) are jax.Arrays too
        # (flax checks isinstance(key, jnp.ndarray) before it accepts a key)
        return (type.__instancecheck__(cls, obj) or isinstance(obj, Tracer)
                or getattr(type(obj), "__fungrad_extended_array__", False))


_IMMUTABLE_MESSAGE = ("fungrad arrays are immutable (as JAX arrays): instead of "
                      "x[idx] = value, write x = x.at[idx].set(value) (or .add, .multiply, "
                      "... at that index)")


class Array(np.ndarray, metaclass=_ArrayMeta):
    """The read-only NumPy array fungrad returns; adds JAX's ``x.at[...]``.

    NumPy's own methods and operators are kept (they give NumPy's results).
    ``fungrad.numpy`` installs ``.at`` and indexing by traced indices (see
    ``fungrad/numpy/_methods.py``): core defines the class, the numpy layer
    what its array operations mean.

    Like ``jax.Array`` it has no in-place operators: ``x += y`` (and ``-=``,
    ``@=``, ...) computes ``x + y`` and rebinds ``x``, leaving other references
    to the old array unchanged; ``x[i] = v`` raises ``TypeError`` pointing to
    ``x.at[i].set(v)``.  (A writable Array, which only NumPy's own functions
    make, e.g. ``np.roll``'s output buffer, still takes item assignment.)
    """

    # JAX's weak type: True for values that came from Python scalars only
    # (``jnp.asarray(2.0)``, ``jit(lambda: 2.0)()``), which promotion treats
    # like Python scalars.  Set on the instance (``with_weak_type``); NumPy's
    # own functions make strongly typed Arrays.
    weak_type = False

    @property
    def aval(self) -> ShapedArray:
        """The abstract value (shape, dtype, weak type), as ``jax.Array.aval``."""
        return get_aval(self)

    def __reduce__(self):  # pickle as a plain ndarray
        return np.asarray(self).copy().__reduce__()

    # --- the device API of jax.Array, with its NumPy meaning -------------------
    # NumPy computes synchronously in this process's memory: a result is ready
    # when it is returned, and it lives on the one CPU device.
    def block_until_ready(self):
        """Wait until the value is computed: it already is; returns ``self``."""
        return self

    def copy_to_host_async(self):
        """Start copying to host memory: the data is already there; returns None."""
        return None

    @property
    def device(self) -> Device:
        """The device holding this array: this process's CPU."""
        return cpu_device

    def devices(self) -> set:
        """The set of devices holding this array: ``{CpuDevice(id=0)}``."""
        return {cpu_device}
    def __setitem__(self, idx, value):
        if not self.flags.writeable:
            raise TypeError(_IMMUTABLE_MESSAGE)
        np.ndarray.__setitem__(self, idx, value)


_set_float_checks(None)     # (the options may come from the environment)


def _rebind(self, other):
    # NotImplemented makes Python fall back to the binary operator: a new array
    return NotImplemented


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor", "lshift", "rshift"):
    setattr(Array, f"__i{_op}__", _rebind)


class Tracer:
    """A value being traced by some transformation; behaves like an array."""
    __slots__ = ("_trace",)
    # Until fungrad.numpy installs NEP 13/18 dispatch (numpy/_dispatch.py), stop
    # NumPy from turning tracers into object arrays: ``ndarray + tracer`` returns
    # NotImplemented so that ``Tracer.__radd__`` runs.
    __array_ufunc__ = None
    __array_priority__ = 1000
    # Operators (``+``, ``@``, ``<``...), array methods (``x.sum()``, ``x.T``,
    # ``x.at``) and indexing are installed by fungrad.numpy (numpy/_methods.py).

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError  # every concrete tracer overrides this

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays "
                        "cannot be dict keys or set members)")

    def __setitem__(self, idx, value):
        raise TypeError(_IMMUTABLE_MESSAGE)

    # --- concretization: Python needs a value ---------------------------------
    # Under jvp/grad the primal value exists (as in JAX, ``if x > 0`` works
    # there); under staging (make_jaxpr, jit) and vmap it does not.
    def _concrete_value(self):
        """The concrete value this tracer stands for, or None if there is none."""
        return None

    def _concrete_or_raise(self, what: str, error=ConcretizationTypeError):
        val = self._concrete_value()
        if val is None:
            raise error(concretization_message(self, what))
        return val

    def __bool__(self):
        return bool(self._concrete_or_raise("bool()/if/while", TracerBoolConversionError))

    def __int__(self):
        return int(self._concrete_or_raise("int()", TracerIntegerConversionError))

    def __float__(self):
        return float(self._concrete_or_raise("float()"))

    def __complex__(self):
        return complex(self._concrete_or_raise("complex()"))

    def __index__(self):
        return self._concrete_or_raise("use as an index/size (__index__)",
                                       TracerIntegerConversionError).__index__()

    def item(self, *args):
        return self._concrete_or_raise(".item()").item(*args)

    def tolist(self):
        return self._concrete_or_raise(".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(concretization_message(
            self, "conversion to a NumPy array (np.asarray, np.array)")
            + " To get a value out of a transformed function, return it.")

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{self._trace.kind}>"


def concrete_or_error(value, what: str):
    """``value`` as a concrete NumPy value, or a ConcretizationTypeError that says
    ``what`` needed it (e.g. "the shape argument of reshape")."""
    if isinstance(value, Tracer):
        return value._concrete_or_raise(what)
    return value


def concretization_message(tracer: "Tracer", what: str) -> str:
    t = tracer._trace
    prov = getattr(tracer, "provenance", None)
    origin = f" It is derived from {prov}." if prov else ""
    return (
        f"Abstract tracer value encountered where a concrete value is needed: "
        f"{what} on a traced array {tracer.aval.str_short()} inside a {t.kind} "
        f"transformation started at {t.origin}.{origin} Under this transformation "
        "the value is not known when Python runs the function. Fix: for "
        "value-dependent control flow use fungrad.lax.cond / lax.while_loop / "
        "fungrad.numpy.where; for a value that is really a fixed setting, mark "
        "the argument static (jit's static_argnums/static_argnames) or compute "
        "it outside the transformation.")


EVAL_TRACE = EvalTrace(None)
EVAL_TRACE_PLACEHOLDER = EVAL_TRACE
_tls = _TraceState()


# ----------------------------------------------------------------------------
# Evaluating a jaxpr (through bind, so any trace can interpret it)
# ----------------------------------------------------------------------------

def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list:
    """Interpret ``jaxpr`` with ``bind``: under a transformation this re-traces."""
    env: dict[Var, Any] = {}
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    read = lambda a: a.val if type(a) is Literal else env[a]
    running = _tls.running      # the equation being run: what it stages inherits its source
    running.append(None)
    try:
        for eqn in jaxpr.eqns:
            running[-1] = eqn
            out = eqn.primitive.bind(*[read(a) for a in eqn.inputs], **eqn.params)
            if eqn.primitive.multiple_results:
                for v, o in zip(eqn.outvars, out):
                    env[v] = o
            else:
                env[eqn.outvars[0]] = out
    finally:
        running.pop()
    return [read(v) for v in jaxpr.outvars]


register_interpreter(eval_jaxpr)
