"""What a primitive's lowering rule returns: a small expression node, which
``codegen`` renders as NumPy source.

A rule ``lower(arg_names, **params)`` (registered with
``fungrad.lax.utils.def_lowering``) gets the source of its operands (variable
names such as ``"a"``, or literals) and returns one of::

    call(np.sin, "a")                          # np.sin(a)
    call(np.sum, "a", axis=(0,), dtype=Source("a.dtype"))
                                               # np.sum(a, axis=(0,), dtype=a.dtype)
    call(kernels.special.erf, "a")             # _special.erf(a): a NumPy-only kernel
    Source("1 / np.sqrt(a)")                   # raw source, for the rare rest
    Source("{}.astype(np.float32)", call(np.matmul, "a", "b"))
                                               # raw source around nodes

Because the node says which function is called, nothing downstream reads
generated text back:

* a call of a NumPy ufunc with one output may write its result into a dead
  temporary (``out=``, decided in codegen from ``Call.ufunc``);
* a call of ``np.add``/``subtract``/``multiply``/``true_divide`` on two bare
  operands (names or plain numbers) is written with the operator (``a * b``),
  which calls the same ufunc: the operator table below;
* a function of a kernel module (``fungrad.lax.kernels``) is called through
  its module, bound to a name (``_special``) by ``codegen`` and embedded by
  ``export``, which follows ``Call.fn`` to the module.

Arguments of ``call``: positional arguments are operands, a ``str`` being
source (an argument name) and an ``Expr`` a nested expression; keyword
arguments are params, rendered from their Python value unless they are an
``Expr``.  Any other positional value (an int, a tuple of ints) is rendered
as a param.

No text from a user object ever reaches the source.  A param value is
written as text only when it is an exact builtin literal (``value_source``:
``None``, bool, int, float, complex, str, bytes, slices, tuples and lists of
them, numeric dtypes and NumPy scalars; nan and inf as ``float('nan')``);
anything else (a ``str`` subclass, whose ``__repr__`` is user code, an
object, a structured dtype) is bound to a name in the compiled function's
namespace (``Const(value)``, rendered ``_b3``), so the code receives the very
object.
"""
from __future__ import annotations

import sys

import numpy as np
from fungrad._dtype_classes import is_small, kind as dtype_kind

__all__ = ["Expr", "Call", "Source", "Const", "call", "dtype_source", "render", "value_source",
           "is_literal", "check_callable", "module_alias", "OPERATORS", "SCALAR_FORMS"]


class Expr:
    """A NumPy expression: a ``Call`` or ``Source``."""
    __slots__ = ()


class Source(Expr):
    """Raw source, used as written (never parsed); with ``parts`` (nodes, or
    ``str`` source), a format string whose ``{}`` fields are the parts' source:
    ``Source("{}.astype(np.float32)", call(np.matmul, "a", "b"))``; with
    ``named`` params, its ``{name}`` fields are the params' values (literals
    written as text, other values bound by name, as ``call``'s keywords)."""
    __slots__ = ("text", "parts", "named")

    def __init__(self, text: str, *parts: Expr, **named):
        self.text, self.parts, self.named = text, parts, named

    def __repr__(self):
        return f"Source({self.text!r}{''.join(', ' + repr(p) for p in self.parts)})"


class Const(Expr):
    """A Python value the generated code refers to by a name bound in its
    namespace (``_b3``), never written as text."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Const({type(self.value).__name__})"


class Call(Expr):
    """``fn(*args, **kwargs)``, ``fn`` a NumPy function, a ufunc method
    (``np.add.reduce``) or a function of a kernel module."""
    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args=(), kwargs=None):
        self.fn, self.args, self.kwargs = fn, tuple(args), dict(kwargs or {})

    @property
    def ufunc(self):
        """The NumPy ufunc called, if it is one with a single output (so that its
        result is a fresh array and it takes ``out=``), else None."""
        fn = self.fn
        return fn if isinstance(fn, np.ufunc) and fn.nout == 1 else None

    def __repr__(self):
        return f"Call({_function_name(self.fn)}, {self.args!r}, {self.kwargs!r})"


def call(fn, /, *args, **kwargs) -> Call:
    """The node for ``fn(*args, **kwargs)`` (see the module docstring)."""
    return Call(fn, args, kwargs)


def scalar_type_name(dtype) -> str:
    """Source naming ``dtype``'s scalar type: ``np.float32``, or for ml_dtypes'
    types ``ml_dtypes.bfloat16`` (generated code's namespace has ``ml_dtypes``)."""
    dtype = np.dtype(dtype)
    return f"ml_dtypes.{dtype.name}" if is_small(dtype) else f"np.{dtype.name}"


def dtype_source(dtype) -> Source:
    """A dtype as the scalar type NumPy code names it: ``np.float32``."""
    return Source(scalar_type_name(dtype))


# ufuncs whose Python operator calls them on arrays and NumPy scalars (same
# result and promotion, less call overhead, and it reads as user code)
OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}


# exact types whose repr is builtin code that reads back as the value
_REPR_TYPES = frozenset({type(None), bool, int, str, bytes, type(Ellipsis)})


def is_literal(v) -> bool:
    """Can ``value_source`` write ``v`` (exact types only, see the module docstring)?"""
    t = type(v)
    if t in _REPR_TYPES or t is float or t is complex:
        return True
    if t is tuple or t is list:
        return all(is_literal(x) for x in v)
    if t is slice:
        return is_literal((v.start, v.stop, v.step))
    if isinstance(v, np.dtype):
        return dtype_kind(v) in "biufc" and v.fields is None and v.isnative
    if isinstance(v, np.generic):
        return type(v).__module__ == "numpy" and dtype_kind(v.dtype) in "biufc"
    return False


def _float_source(x: float) -> str:
    return repr(x) if np.isfinite(x) else f"float({repr(x)!r})"


def value_source(v) -> str:
    """Source of a literal param value (``is_literal``); TypeError for anything
    else, which must be bound to a name (``Const``) instead."""
    t = type(v)
    if t in _REPR_TYPES:
        return repr(v)
    if t is float:
        return _float_source(v)
    if t is complex:
        return f"complex({_float_source(v.real)}, {_float_source(v.imag)})"
    if t is tuple and is_literal(v):
        inner = ", ".join(value_source(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    if t is list and is_literal(v):
        return "[" + ", ".join(value_source(x) for x in v) + "]"
    if t is slice and is_literal(v):
        return f"slice({value_source(v.start)}, {value_source(v.stop)}, {value_source(v.step)})"
    if is_literal(v) and isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if is_literal(v):                                   # a NumPy scalar
        return f"np.{v.dtype.name}({value_source(v.item())})"
    raise TypeError(f"lowering: a {t.__name__} cannot be written into generated code as text; "
                    "bind it by name (lowering.Const)")


def _is_numpy(fn) -> bool:
    owner = getattr(fn, "__self__", None)        # a ufunc method: np.add.reduce
    if isinstance(owner, np.ufunc):
        return True
    module = getattr(fn, "__module__", None) or ""
    return isinstance(fn, np.ufunc) or module.split(".")[0] == "numpy"


# ufuncs NumPy exports under a second name, which the generated code uses (as
# users write it: np.abs(x), not np.absolute(x))
_SPELLINGS = {np.absolute: "abs", np.conjugate: "conj", np.true_divide: "true_divide"}


def _function_name(fn) -> str:
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"np.{owner.__name__}.{fn.__name__}"
    if isinstance(fn, np.ufunc):
        return f"np.{_SPELLINGS.get(fn, fn.__name__)}"
    module = fn.__module__
    if module.split(".")[0] == "numpy":
        return "np" + module[len("numpy"):] + "." + fn.__name__
    return f"{module_alias(module)}.{fn.__name__}"


def module_alias(module_name: str) -> str:
    """The name generated code gives a kernel module: ``_special``."""
    return "_" + module_name.rsplit(".", 1)[-1]


def _bind_module(fn, modules: dict):
    """Record the kernel module of ``fn`` under its alias (``_special``)."""
    check_callable(fn)
    module = sys.modules[fn.__module__]
    alias = module_alias(module.__name__)
    if modules.setdefault(alias, module) is not module:
        raise TypeError(f"lowering: kernel modules {modules[alias].__name__} and "
                        f"{module.__name__} have the same name")


def check_callable(fn) -> None:
    """TypeError unless generated code can call ``fn`` by name: a NumPy function
    or ufunc (method), or a top-level function of a module (a kernel)."""
    if _is_numpy(fn):
        return
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or getattr(module, getattr(fn, "__name__", ""), None) is not fn:
        raise TypeError(f"lowering: {fn!r} is not a top-level function of its module; "
                        "a lowering calls NumPy or a function of a kernel module")


def _is_bare(operand) -> bool:
    """A name or a plain number (``a``, ``_b0``, ``-1.5``): safe next to an operator."""
    if type(operand) is not str:
        return False
    body = operand[1:] if operand.startswith("-") else operand
    return body.isidentifier() or body.replace(".", "", 1).isdigit()


def _param_source(v, modules, bind) -> str:
    """A param: an expression, a literal written as text, or a value bound by name."""
    if isinstance(v, Expr):
        return render(v, modules, bind=bind)
    if is_literal(v):
        return value_source(v)
    return _bound(v, bind)


def _bound(value, bind) -> str:
    if bind is None:
        raise TypeError(f"lowering: a {type(value).__name__} must be bound by name, which this "
                        "rendering does not do")
    return bind(value)


def _operand_source(a, modules, bind) -> str:
    # (type(a) is str: a subclass would be a user's object, not source we wrote)
    return a if type(a) is str else _param_source(a, modules, bind)


def render(expr: Expr, modules: dict | None = None, out: str | None = None,
           operator_form: bool = False, bind=None) -> str:
    """The source of ``expr``.  ``modules`` collects the kernel modules it calls
    (alias -> module); ``out`` adds ``out=`` to a ufunc call; with
    ``operator_form`` a call of an ``OPERATORS`` ufunc on two bare operands is
    written with its operator; ``bind(value) -> name`` binds the values that
    are not written as text (``Const`` and non-literal params)."""
    modules = {} if modules is None else modules
    if isinstance(expr, Const):
        return _bound(expr.value, bind)
    if isinstance(expr, Source):
        if not expr.parts and not expr.named:
            return expr.text
        return expr.text.format(*[_operand_source(p, modules, bind) for p in expr.parts],
                                **{k: _param_source(v, modules, bind)
                                   for k, v in expr.named.items()})
    if not isinstance(expr, Call):
        raise TypeError(f"lowering rules return a Call or Source node, got {expr!r}")
    fn, args = expr.fn, expr.args
    if (operator_form and out is None and not expr.kwargs and len(args) == 2
            and OPERATORS.get(fn) and _is_bare(args[0]) and _is_bare(args[1])):
        return f"{args[0]} {OPERATORS[fn]} {args[1]}"
    if not _is_numpy(fn):
        _bind_module(fn, modules)
    parts = [_operand_source(a, modules, bind) for a in args]
    parts += [f"{k}={_param_source(v, modules, bind)}" for k, v in expr.kwargs.items()]
    if out is not None:
        parts.append(f"out={out}")
    return f"{_function_name(fn)}({', '.join(parts)})"


# Python-float forms of NumPy ufuncs, for programs whose values are all float64
# scalars (codegen.scalar_source): NumPy's per-call cost dominates such code, and
# Python's float arithmetic is the same IEEE arithmetic (+ - * / exactly;
# the math module's functions within a few ulps of NumPy's).  Where Python
# raises instead (division by zero, math domain and range errors: math.pow,
# not **, so that a negative base never gives a complex number) the
# generated code falls back to the NumPy version.
SCALAR_FORMS = {
    np.add: "{} + {}", np.subtract: "{} - {}", np.multiply: "{} * {}",
    np.true_divide: "{} / {}", np.negative: "-{}", np.square: "{0} * {0}",
    np.power: "_math.pow({}, {})", np.absolute: "abs({})",
    np.sin: "_math.sin({})", np.cos: "_math.cos({})", np.tan: "_math.tan({})",
    np.arcsin: "_math.asin({})", np.arccos: "_math.acos({})", np.arctan: "_math.atan({})",
    np.sinh: "_math.sinh({})", np.cosh: "_math.cosh({})", np.tanh: "_math.tanh({})",
    np.arcsinh: "_math.asinh({})", np.arccosh: "_math.acosh({})",
    np.arctanh: "_math.atanh({})", np.exp: "_math.exp({})", np.expm1: "_math.expm1({})",
    np.log: "_math.log({})", np.log1p: "_math.log1p({})", np.sqrt: "_math.sqrt({})",
    np.arctan2: "_math.atan2({}, {})", np.hypot: "_math.hypot({}, {})",
}
