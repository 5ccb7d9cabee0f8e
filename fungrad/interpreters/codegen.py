"""jaxpr -> the source of a plain Python function that calls NumPy.

One line per equation, in order::

    def fn(a, b):
        c = np.sin(a)
        d = np.multiply(c, b)
        return (d,)

Each primitive owns its lowering (``prim.lower(arg_names, **params) -> str``,
registered next to its other rules).  A primitive without one is called
through its impl (``_impl['name'](args, **params)``), so every jaxpr lowers.
Nested ``jit`` calls are inlined before (``passes.inline_calls``).

Before emission the jaxpr goes through the passes of ``fungrad/interpreters/
passes.py`` (see there); this module only turns a jaxpr into text and
compiles the text.
"""
from __future__ import annotations

import keyword
import re
from typing import Callable

import numpy as np

from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr, Literal, Var
from fungrad.interpreters.passes import optimize

__all__ = ["lower_jaxpr", "compile_jaxpr", "compile_closed", "compile_source", "compiled",
           "CompiledFunction"]

_RESERVED = {"np", "fn", "_impl", "_unbound_axis", "dtype", "inf", "nan"}


class _Names:
    """Short, valid, unique Python names for variables: a, b, ..., z, ba, ..."""

    def __init__(self):
        self.names: dict[Var, str] = {}
        self.count = 0
        self.consts: dict[str, object] = {}   # constants of nested blocks: _b0, _b1, ...

    def const(self, value) -> str:
        name = f"_b{len(self.consts)}"
        self.consts[name] = value
        return name

    def new(self, v: Var) -> str:
        while True:
            name = core._letters(self.count)
            self.count += 1
            if not keyword.iskeyword(name) and name not in _RESERVED:
                self.names[v] = name
                return name

    def __call__(self, atom) -> str:
        if isinstance(atom, Literal):
            return literal_source(atom.val, atom.aval.dtype)
        return self.names[atom]


def literal_source(val, dtype) -> str:
    """Source for a scalar literal that keeps its dtype."""
    val = np.asarray(val).item()
    dtype = np.dtype(dtype)
    text = repr(val)
    if text in ("inf", "-inf", "nan"):
        text = f"float('{text}')"
    if dtype in (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)):
        return f"np.{dtype.name}({text})" if dtype == np.bool_ else text
    return f"np.{dtype.name}({text})"


def _impl_call(prim, args, params) -> str:
    kw = "".join(f", {k}={_param_source(v)}" for k, v in sorted(params.items()))
    return f"_impl[{prim.name!r}]({', '.join(args)}{kw})"


def _param_source(v) -> str:
    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if isinstance(v, tuple):
        inner = ", ".join(_param_source(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


_UFUNC_CALL = re.compile(r"^np\.(\w+)\((.*)\)$")


def _ufunc_of(expr: str):
    """The NumPy ufunc an expression ``np.name(args)`` calls, if the whole
    expression is that one call (not ``np.sin(a) + np.cos(b)``)."""
    m = _UFUNC_CALL.match(expr)
    fn = getattr(np, m.group(1), None) if m else None
    if not (isinstance(fn, np.ufunc) and fn.nout == 1):
        return None
    depth = 0
    for i, ch in enumerate(expr[m.start(2) - 1:], m.start(2) - 1):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return fn if i == len(expr) - 1 else None
    return None


_SCALAR_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/"}
_SIMPLE_BINARY = re.compile(r"^np\.(add|subtract|multiply|true_divide)\((-?[\w.]+), (-?[\w.]+)\)$")


def _operator_form(expr: str) -> str:
    """``np.multiply(a, b)`` -> ``a * b``.  The operands in generated code are
    NumPy arrays, NumPy scalars and Python scalar literals, for which the
    operator calls the same ufunc (same result, same NEP 50 promotion) with less
    overhead: no global and attribute lookup, and on NumPy scalars the scalar
    fast path (~10x cheaper than entering the ufunc machinery).  It also reads
    as the NumPy a user would write."""
    m = _SIMPLE_BINARY.match(expr)
    return f"{m.group(2)} {_SCALAR_OPERATORS[m.group(1)]} {m.group(3)}" if m else expr


def _last_uses(jaxpr: Jaxpr) -> dict:
    last = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last[a] = i
    return last


def _lower_eqn(eqn, args) -> str:
    prim = eqn.primitive
    if prim.lower is not None and prim.lower_typed:
        return prim.lower(args, [a.aval for a in eqn.inputs], **eqn.params)
    if prim.lower is not None:
        return prim.lower(args, **eqn.params)
    return _impl_call(prim, args, eqn.params)


# Below this many elements a fresh allocation is cheaper than passing out=
# (keyword handling in the ufunc call), and the memory saved is negligible.
_REUSE_MIN_SIZE = 1024


class Block:
    """What a primitive's ``emit_block`` rule gets: emit nested jaxprs as indented
    Python blocks (``if``/``for``/``while`` bodies) into the same function."""

    def __init__(self, names: _Names, lines: list, reuse_buffers: bool, indent: str):
        self.names, self.lines, self.reuse_buffers, self.indent = names, lines, reuse_buffers, indent

    def line(self, text: str, extra_indent: str = ""):
        self.lines.append(f"{self.indent}{extra_indent}{text}")

    def body(self, closed: ClosedJaxpr, in_names, extra_indent: str = "    ") -> list[str]:
        """Emit ``closed`` with its inputs bound to ``in_names``; returns its outputs."""
        jaxpr = closed.jaxpr
        for v, c in zip(jaxpr.constvars, closed.consts):
            self.names.names[v] = self.names.const(c)
        for v, n in zip(jaxpr.invars, in_names):
            self.names.names[v] = n
        outs = _emit_jaxpr(jaxpr, self.names, self.lines, self.reuse_buffers,
                           self.indent + extra_indent)
        if not jaxpr.eqns and not outs:
            self.line("pass", extra_indent)
        return outs


def _emit_jaxpr(jaxpr: Jaxpr, names: _Names, lines, reuse_buffers: bool,
                indent: str = "    ") -> list[str]:
    """Append one line per equation of the flat ``jaxpr``; return the output names.

    Buffer reuse: an elementwise ufunc whose input is a temporary that dies at
    this equation (produced by an earlier ufunc, so it is a fresh array we own,
    never a view of a caller's array), with the output's shape and dtype,
    writes into it with ``out=`` instead of allocating; other large temporaries
    are deleted after their last use so that peak memory stays as in eager code.
    """
    last = _last_uses(jaxpr)
    keep = {v for v in jaxpr.outvars if isinstance(v, Var)}
    params = set(jaxpr.invars) | set(jaxpr.constvars)
    fresh: set = set()      # temporaries holding arrays created by a ufunc
    for i, eqn in enumerate(jaxpr.eqns):
        args = [names(a) for a in eqn.inputs]
        out_names = [names.new(v) for v in eqn.outvars]
        if eqn.primitive.emit_block is not None:      # control flow: a Python block
            eqn.primitive.emit_block(Block(names, lines, reuse_buffers, indent), eqn, args,
                                     out_names)
            _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers)
            continue
        expr = _lower_eqn(eqn, args)
        ufunc = _ufunc_of(expr) if not eqn.primitive.multiple_results else None
        if ufunc is not None and reuse_buffers:
            out_aval = eqn.outvars[0].aval
            dead = [a for a in eqn.inputs if a in fresh and last.get(a) == i and a not in keep
                    and a.aval == out_aval]
            # (generalized ufuncs such as matmul create fresh arrays but must not
            # write into their own inputs)
            if dead and out_aval.size >= _REUSE_MIN_SIZE and ufunc.signature is None:
                expr = f"{expr[:-1]}, out={names(dead[0])})"
            if out_aval.ndim > 0:
                fresh.add(eqn.outvars[0])
        if not eqn.primitive.multiple_results:
            expr = _operator_form(expr)
        target = out_names[0] if not eqn.primitive.multiple_results else (
            ", ".join(out_names) + ("," if len(out_names) == 1 else ""))
        lines.append(f"{indent}{target} = {expr}")
        _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers)
    return [names(v) for v in jaxpr.outvars]


def _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers):
    """Drop large temporaries at their last use (equation ``i``), as eager Python would."""
    dead = sorted({names(a) for a in eqn.inputs if isinstance(a, Var) and last.get(a) == i
                   and a not in keep and a not in params and a.aval.size >= _REUSE_MIN_SIZE})
    if dead and reuse_buffers:
        lines.append(f"{indent}del {', '.join(dead)}")


def lower_jaxpr(jaxpr: Jaxpr, name: str = "fn", reuse_buffers: bool = True) -> str:
    """Python source of ``def name(consts..., args...)`` for a flat jaxpr
    (nested calls already inlined by ``passes.inline_calls``)."""
    return lower_jaxpr_and_consts(jaxpr, name, reuse_buffers)[0]


def lower_jaxpr_and_consts(jaxpr: Jaxpr, name: str = "fn", reuse_buffers: bool = True):
    """The source and the constants of nested blocks it refers to (``_b0``, ...)."""
    names = _Names()
    params = [names.new(v) for v in list(jaxpr.constvars) + list(jaxpr.invars)]
    lines = [f"def {name}({', '.join(params)}):"]
    outs = _emit_jaxpr(jaxpr, names, lines, reuse_buffers)
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return "\n".join(lines) + "\n", names.consts


def _unbound_axis(name):
    raise NameError(f"unbound axis name: {name!r} (a collective was used outside the vmap "
                    "that binds it)")


class CompiledFunction:
    """Compiled code: call ``fn(*consts, *args)``; ``source`` is its text."""
    __slots__ = ("fn", "source", "jaxpr", "consts")

    def __init__(self, fn: Callable, source: str, jaxpr: Jaxpr, consts=()):
        self.fn = fn
        self.source = source
        self.jaxpr = jaxpr
        self.consts = list(consts)


_HELPER_IMPORT = re.compile(r"__import__\('(fungrad\.[\w.]+)', fromlist=\['_'\]\)")


def _bind_helper_modules(source: str):
    """Lowerings call NumPy-only helper modules as ``__import__('m', ...).f(x)``
    (a form ``export`` can find and embed); compiled code binds each module to a
    name once instead of importing it on every call."""
    import importlib
    modules = {}
    for module_name in sorted(set(_HELPER_IMPORT.findall(source))):
        alias = "_" + module_name.rsplit(".", 1)[-1].lstrip("_")
        modules[alias] = importlib.import_module(module_name)
        source = source.replace(f"__import__('{module_name}', fromlist=['_'])", alias)
    return source, modules


def compile_source(source: str, name: str = "fn", block_consts=None):
    """Compile source that ``lower_jaxpr_and_consts`` generated (with the constants
    of its nested blocks), in this process: ``(function, source as compiled)``.
    Other processes (Dask workers) compile shipped source with this too."""
    source, helper_modules = _bind_helper_modules(source)
    namespace = {"np": np, "_impl": {n: p.impl for n, p in core.primitives.items()},
                 "_unbound_axis": _unbound_axis, **(block_consts or {}), **helper_modules}
    code = compile(source, f"<fungrad.jit {name}>", "exec")
    exec(code, namespace)
    return namespace[name], source


def compile_jaxpr(jaxpr: Jaxpr, name: str = "fn", consts=(),
                  reuse_buffers: bool = True) -> CompiledFunction:
    """Lower and compile a flat ``jaxpr`` (compile/exec once)."""
    source, block_consts = lower_jaxpr_and_consts(jaxpr, name, reuse_buffers)
    fn, source = compile_source(source, name, block_consts)
    return CompiledFunction(fn, source, jaxpr, consts)


def compile_closed(closed: ClosedJaxpr, name: str = "fn") -> CompiledFunction:
    return compile_jaxpr(closed.jaxpr, name, closed.consts)


def compiled(closed: ClosedJaxpr) -> CompiledFunction:
    """The optimised, compiled code of ``closed``, cached on it (so it dies with
    it); call it as ``comp.fn(*comp.consts, *args)``."""
    return closed.derived("compiled", lambda: compile_closed(optimize(closed)))
