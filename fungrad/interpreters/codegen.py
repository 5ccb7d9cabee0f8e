"""jaxpr -> the source of a plain Python function that calls NumPy.

One line per equation, in order::

    def fn(a, b):
        c = np.sin(a)
        d = np.multiply(c, b)
        return (d,)

Each primitive owns its lowering (``prim.lower(arg_names, **params) -> str``,
registered next to its other rules).  A primitive without one is called
through its impl (``_impl['name'](args, **params)``), so every jaxpr lowers.
Higher-order primitives with a ``jaxpr`` param (``jit`` calls) are inlined.

Before emission the jaxpr goes through the passes of ``fungrad/interpreters/
passes.py`` (see there); this module only turns a jaxpr into text and
compiles the text.
"""
from __future__ import annotations

import keyword
from typing import Callable

import numpy as np

from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr, Literal, Var

__all__ = ["lower_jaxpr", "compile_jaxpr", "CompiledFunction"]

_RESERVED = {"np", "fn", "_impl", "_unbound_axis", "dtype", "inf", "nan"}


class _Names:
    """Short, valid, unique Python names for variables: a, b, ..., z, ba, ..."""

    def __init__(self):
        self.names: dict[Var, str] = {}
        self.count = 0
        self.consts: list = []      # values the code refers to as _k0, _k1, ...

    def const(self, value) -> str:
        self.consts.append(value)
        return f"_k{len(self.consts) - 1}"

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


def _emit_jaxpr(jaxpr: Jaxpr, names: _Names, in_names, lines, indent="    ") -> list[str]:
    """Append lines computing ``jaxpr`` from ``in_names``; return output names."""
    for v, n in zip(list(jaxpr.constvars) + list(jaxpr.invars), in_names):
        names.names[v] = n
    for eqn in jaxpr.eqns:
        args = [names(a) for a in eqn.inputs]
        sub = eqn.params.get("jaxpr")
        if isinstance(sub, ClosedJaxpr) and getattr(eqn.primitive, "inline", False):
            const_names = [names.const(c) for c in sub.consts]
            outs = _emit_jaxpr(sub.jaxpr, names, const_names + args, lines, indent)
            for v, o in zip(eqn.outvars, outs):
                names.names[v] = o
            continue
        out_names = [names.new(v) for v in eqn.outvars]
        if eqn.primitive.lower is not None and eqn.primitive.lower_typed:
            expr = eqn.primitive.lower(args, [a.aval for a in eqn.inputs], **eqn.params)
        elif eqn.primitive.lower is not None:
            expr = eqn.primitive.lower(args, **eqn.params)
        else:
            expr = _impl_call(eqn.primitive, args, eqn.params)
        target = out_names[0] if not eqn.primitive.multiple_results else (
            ", ".join(out_names) + ("," if len(out_names) == 1 else ""))
        lines.append(f"{indent}{target} = {expr}")
    return [names(v) for v in jaxpr.outvars]


def lower_jaxpr(jaxpr: Jaxpr, name: str = "fn") -> tuple[str, list]:
    """Python source of ``def name(consts..., args...)`` and the inner constants
    it refers to by name (``_k0``, ``_k1``...)."""
    names = _Names()
    params = [names.new(v) for v in list(jaxpr.constvars) + list(jaxpr.invars)]
    lines = [f"def {name}({', '.join(params)}):"]
    outs = _emit_jaxpr(jaxpr, names, params, lines)
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return "\n".join(lines) + "\n", names.consts


def _unbound_axis(name):
    raise NameError(f"unbound axis name: {name!r} (a collective was used outside the vmap "
                    "that binds it)")


class CompiledFunction:
    """A compiled jaxpr: ``self(*consts_and_args) -> tuple of outputs``."""
    __slots__ = ("fn", "source", "jaxpr")

    def __init__(self, fn: Callable, source: str, jaxpr: Jaxpr):
        self.fn = fn
        self.source = source
        self.jaxpr = jaxpr


def compile_jaxpr(jaxpr: Jaxpr, name: str = "fn") -> CompiledFunction:
    """Lower and compile ``jaxpr`` (compile/exec once)."""
    source, inner_consts = lower_jaxpr(jaxpr, name)
    namespace = {"np": np, "_impl": {n: p.impl for n, p in core.primitives.items()},
                 "_unbound_axis": _unbound_axis}
    namespace.update({f"_k{i}": c for i, c in enumerate(inner_consts)})
    code = compile(source, f"<fungrad.jit {name}>", "exec")
    exec(code, namespace)
    return CompiledFunction(namespace[name], source, jaxpr)
