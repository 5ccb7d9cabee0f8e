"""jaxpr -> the source of a plain Python function that calls NumPy.

One line per equation, in order::

    def fn(a, b):
        c = np.sin(a)
        d = c * b
        return (d,)

Each primitive owns its lowering (``prim.lowering(arg_names, in_avals,
**params)``, registered next to its other rules with
``lax.utils.def_lowering``), which returns an expression node
(``interpreters/lowering.py``); this module renders the nodes, choosing from
the node the operator form (``c * b`` for ``np.multiply``), ``out=`` buffer
reuse (for ufunc calls) and the kernel modules to bind.  A primitive without
a lowering is called through its impl (``_impl['name'](args, **params)``), so
every jaxpr lowers.  Nested ``jit`` calls are inlined before
(``passes.inline_calls``).

Before emission the jaxpr goes through the passes of ``fungrad/interpreters/
passes.py`` (see there); this module only turns a jaxpr into text and
compiles the text.
"""
from __future__ import annotations

import importlib
import keyword
import math
from typing import Callable

import ml_dtypes
import numpy as np

from fungrad._dtype_classes import is_inexact, kind as dtype_kind
from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr, Literal, Var
from fungrad.interpreters.lowering import (SCALAR_FORMS, scalar_type_name, Call, Const, Expr, Source, render,
                                            value_source)
from fungrad.interpreters.passes import optimize

__all__ = ["lower_jaxpr", "compile_jaxpr", "compile_closed", "compile_source", "compiled",
           "CompiledFunction", "lowered_source", "expression_function"]

_RESERVED = {"np", "fn", "_impl", "_unbound_axis", "dtype", "inf", "nan", "_nonfinite"}


class _Names:
    """Short, valid, unique Python names for variables: a, b, ..., z, ba, ..."""

    def __init__(self, float_checks: str = ""):
        self.names: dict[Var, str] = {}
        self.count = 0
        self.consts: dict[str, object] = {}   # constants of nested blocks: _b0, _b1, ...
        self.modules: dict[str, object] = {}  # kernel modules called: _special, ...
        self.float_checks = float_checks      # "", "nan", "inf" or "nan+inf" (see _emit_check)

    def const(self, value) -> str:
        name = f"_b{len(self.consts)}"
        self.consts[name] = core.plain_array(value)   # compiled code runs on plain ndarrays
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
            if dtype_kind(np.dtype(atom.aval.dtype)) in _NUMERIC_KINDS:
                return literal_source(atom.val, atom.aval.dtype)
            return self.const(atom.val)       # a string or object scalar: by name
        return self.names[atom]


_NUMERIC_KINDS = "biufc"


def literal_source(val, dtype) -> str:
    """Source for a scalar literal of a numeric dtype that keeps its dtype (the
    value goes through ``item()``, so only a Python number is written)."""
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) not in _NUMERIC_KINDS:
        raise TypeError(f"codegen: a literal of dtype {dtype} is bound by name, not written")
    val = np.asarray(val, dtype).item()
    text = value_source(val)
    if dtype in (np.dtype(np.float64), np.dtype(np.int64)):
        return text
    return f"{scalar_type_name(dtype)}({text})"


def impl_call(prim, args, params) -> Source:
    """Source calling ``prim``'s impl at run time (for primitives without a lowering)."""
    # the primitive's name and params are the user's objects: bound by name
    parts = ", ".join(list(args) + (["**{}"] if params else []))
    return Source(f"_impl[{{}}]({parts})", Const(prim.name),
                  *([Const(dict(sorted(params.items())))] if params else []))


def _user_text_in(value):
    """The first value inside a param whose text a user's class decides (a
    subclass of str, int, float, complex, bytes or tuple defined outside
    fungrad and NumPy), or None.  Lowering rules may format params into source,
    so such a value never reaches them."""
    t = type(value)
    if t in _PLAIN_PARAM_TYPES:
        return None
    if t is tuple or t is list:
        return next((u for u in map(_user_text_in, value) if u is not None), None)
    if t is dict:
        return _user_text_in(tuple(value.values()))
    if isinstance(value, (str, int, float, complex, bytes, tuple)):
        if t.__module__.split(".")[0] not in ("fungrad", "numpy"):
            return value
        if isinstance(value, tuple):        # fungrad's own named tuples
            return _user_text_in(tuple(value))
    return None


_PLAIN_PARAM_TYPES = frozenset({int, float, complex, bool, str, bytes, type(None)})


def _check_params(prim, params):
    opaque = prim.opaque_params
    if opaque is True:
        return
    for name, value in params.items():
        if name in opaque:
            continue
        bad = _user_text_in(value)
        if bad is not None:
            raise TypeError(
                f"{prim.name}: the param {name} is a {type(bad).__name__} (a subclass of "
                f"{type(bad).__mro__[1].__name__} defined in {type(bad).__module__}); fungrad "
                f"needs a plain {type(bad).__mro__[1].__name__} here. Pass "
                f"{type(bad).__mro__[1].__name__}(value) instead.")


def _last_uses(jaxpr: Jaxpr) -> dict:
    last = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last[a] = i
    return last


def _lower_eqn(eqn, args) -> Expr:
    prim = eqn.primitive
    if prim.lowering is None:
        return impl_call(prim, args, eqn.params)
    if eqn.params:
        _check_params(prim, eqn.params)
    return prim.lowering(args, [a.aval for a in eqn.inputs], **eqn.params)


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

    def body(self, closed: ClosedJaxpr, in_names, extra_indent: str = "    ",
             into=None) -> list[str]:
        """Emit ``closed`` with its inputs bound to ``in_names``; returns its outputs.
        ``into`` gives, for some outputs (by index), an array element a ufunc
        may write that output into (``out=``: a scan's ``ys[i]``, no copy
        afterwards); such an output is returned as that target."""
        jaxpr = closed.jaxpr
        for v, c in zip(jaxpr.constvars, closed.consts):
            self.names.names[v] = self.names.const(c)
        for v, n in zip(jaxpr.invars, in_names):
            self.names.names[v] = n
        targets = {}
        for k, target in (into or {}).items():
            v = jaxpr.outvars[k]
            if isinstance(v, Var) and jaxpr.outvars.count(v) == 1:
                targets[v] = target
        outs = _emit_jaxpr(jaxpr, self.names, self.lines, self.reuse_buffers,
                           self.indent + extra_indent, targets)
        if not jaxpr.eqns and not outs:
            self.line("pass", extra_indent)
        return outs


def _emit_jaxpr(jaxpr: Jaxpr, names: _Names, lines, reuse_buffers: bool,
                indent: str = "    ", targets=None) -> list[str]:
    """Append one line per equation of the flat ``jaxpr``; return the output names
    (an output of ``targets``, {outvar: array element source}, that a ufunc
    wrote into its target with ``out=`` is returned as the target).

    Buffer reuse: an elementwise ufunc whose input is a temporary that dies at
    this equation (produced by an earlier ufunc or a ``fresh_result``
    primitive, so it is a fresh array we own, never a view of a caller's
    array), with the output's shape and dtype,
    writes into it with ``out=`` instead of allocating; other large temporaries
    are deleted after their last use so that peak memory stays as in eager code.
    """
    last = _last_uses(jaxpr)
    keep = {v for v in jaxpr.outvars if isinstance(v, Var)}
    params = set(jaxpr.invars) | set(jaxpr.constvars)
    fresh: set = set()      # temporaries holding arrays created by a ufunc
    written = {}            # outputs computed into their targets
    for i, eqn in enumerate(jaxpr.eqns):
        args = [names(a) for a in eqn.inputs]
        out_names = [names.new(v) for v in eqn.outvars]
        if eqn.primitive.emit_block is not None:      # control flow: a Python block
            _check_params(eqn.primitive, eqn.params)
            eqn.primitive.emit_block(Block(names, lines, reuse_buffers, indent), eqn, args,
                                     out_names)
            _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers)
            continue
        expr = _lower_eqn(eqn, args)
        single = not eqn.primitive.multiple_results
        ufunc = expr.ufunc if single and isinstance(expr, Call) else None
        out = None
        target = (targets or {}).get(eqn.outvars[0]) if ufunc is not None else None
        if target is not None and ufunc.signature is None and eqn.outvars[0].aval.ndim > 0:
            out = written[eqn.outvars[0]] = target
        elif ufunc is not None and reuse_buffers:
            out_aval = eqn.outvars[0].aval
            dead = [a for a in eqn.inputs if a in fresh and last.get(a) == i and a not in keep
                    and a.aval == out_aval]
            # (generalized ufuncs such as matmul create fresh arrays but must not
            # write into their own inputs)
            if dead and out_aval.size >= _REUSE_MIN_SIZE and ufunc.signature is None:
                out = names(dead[0])
            if out_aval.ndim > 0:
                fresh.add(eqn.outvars[0])
        elif eqn.primitive.fresh_result and reuse_buffers and eqn.outvars[0].aval.ndim > 0:
            fresh.add(eqn.outvars[0])         # (a GEMM's result: the bias add goes into it)
        expr = render(expr, names.modules, out=out, operator_form=single, bind=names.const)
        target = out_names[0] if not eqn.primitive.multiple_results else (
            ", ".join(out_names) + ("," if len(out_names) == 1 else ""))
        lines.append(f"{indent}{target} = {expr}")
        if names.float_checks and not eqn.primitive.keeps_finite:
            _emit_check(eqn, args, out_names, names, lines, indent)
        _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers)
    return [written.get(v) or names(v) for v in jaxpr.outvars]


# jax_debug_nans / jax_debug_infs: the test of one result, by what is checked
_CHECK_TESTS = {"nan": "np.isnan({}).any()", "inf": "np.isinf({}).any()",
                "nan+inf": "not np.isfinite({}).all()"}


def _emit_check(eqn, args, out_names, names: _Names, lines, indent):
    """After an equation that can create a NaN/inf, test its float results and
    raise the error naming the equation (its source line, transforms, inputs)::

        c = np.log(a)
        if np.isnan(c).any(): raise _nonfinite(_b0, (c,), (a,))
    """
    outs = [n for n, v in zip(out_names, eqn.outvars) if is_inexact(v.aval.dtype)]
    if not outs:
        return
    test = " or ".join(_CHECK_TESTS[names.float_checks].format(n) for n in outs)
    where = names.const(eqn)
    lines.append(f"{indent}if {test}: raise _nonfinite({where}, ({', '.join(outs)},), "
                 f"({''.join(a + ', ' for a in args)}))")


def _delete_dead(eqn, i, last, keep, params, names, lines, indent, reuse_buffers):
    """Drop large temporaries at their last use (equation ``i``), as eager Python would."""
    if not reuse_buffers:
        return
    dead = sorted({names(a) for a in eqn.inputs if isinstance(a, Var) and last.get(a) == i
                   and a.aval.size >= _REUSE_MIN_SIZE and a not in keep and a not in params})
    if dead:
        lines.append(f"{indent}del {', '.join(dead)}")


def _tuple_source(items) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


# A long program is emitted as functions of this many equations each, called in
# turn by the main one: Python compiles one huge function with memory growing
# by kilobytes per line (200 MB for 50,000 lines), parts of it in little.
CHUNK_SIZE = 1000


def part_name(name: str, k: int) -> str:
    """The name of part ``k`` of the generated function ``name``."""
    return f"_part{k}_{name}"


def _emit_in_parts(jaxpr: Jaxpr, name: str, params, names: _Names, reuse_buffers: bool):
    """Lines of ``def name(params)`` calling one function per ``CHUNK_SIZE``
    equations: each takes the values it reads from earlier parts and returns
    those later parts (or the outputs) read; the main function drops large
    values after the last part that reads them."""
    eqns = jaxpr.eqns
    parts = [eqns[i:i + CHUNK_SIZE] for i in range(0, len(eqns), CHUNK_SIZE)]
    ins, outs = part_interfaces(parts, jaxpr.outvars)
    last_reader = {v: k for k, part_ins in enumerate(ins) for v in part_ins}
    keep = set(jaxpr.outvars) | set(jaxpr.invars) | set(jaxpr.constvars)
    lines, main = [], [f"def {name}({', '.join(params)}):"]
    for k, part in enumerate(parts):
        part_jaxpr = Jaxpr([], ins[k], part, outs[k])
        lines.append(f"def {part_name(name, k)}({', '.join(names(v) for v in ins[k])}):")
        part_outs = _emit_jaxpr(part_jaxpr, names, lines, reuse_buffers)
        lines.append(f"    return {_tuple_source(part_outs)}")
        lines.append("")
        call = f"{part_name(name, k)}({', '.join(names(v) for v in ins[k])})"
        main.append(f"    {_tuple_source(part_outs)} = {call}" if part_outs else f"    {call}")
        dead = [names(v) for v in ins[k] if last_reader[v] == k and v not in keep
                and v.aval.size >= _REUSE_MIN_SIZE]
        if dead and reuse_buffers:
            main.append(f"    del {', '.join(dead)}")
    main.append(f"    return {_tuple_source([names(v) for v in jaxpr.outvars])}")
    return lines + main


def part_interfaces(parts, outvars):
    """For each part (a list of equations): the variables it reads that are
    defined before it, and those it defines that later parts or the outputs
    read (each in first-appearance order)."""
    ins = []
    for part in parts:
        defined, reads = set(), {}
        for eqn in part:
            for a in eqn.inputs:
                if isinstance(a, Var) and a not in defined:
                    reads[a] = None
            defined.update(eqn.outvars)
        ins.append(list(reads))
    needed = {v: None for v in outvars if isinstance(v, Var)}
    outs = [None] * len(parts)
    for k in range(len(parts) - 1, -1, -1):
        outs[k] = [v for eqn in parts[k] for v in eqn.outvars if v in needed]
        needed.update(dict.fromkeys(ins[k]))
    return ins, outs


def lower_jaxpr(jaxpr: Jaxpr, name: str = "fn", reuse_buffers: bool = True) -> str:
    """Python source of ``def name(consts..., args...)`` for a flat jaxpr
    (nested calls already inlined by ``passes.inline_calls``)."""
    return lower_jaxpr_and_consts(jaxpr, name, reuse_buffers)[0]


def lower_jaxpr_and_consts(jaxpr: Jaxpr, name: str = "fn", reuse_buffers: bool = True,
                           float_checks: str = ""):
    """The source, the constants of nested blocks it refers to (``_b0``, ...) and
    the kernel modules it calls (``_special``, ...), each by name.  With
    ``float_checks`` ("nan", "inf", "nan+inf": jax_debug_nans/infs) each equation
    that can create a NaN/inf is followed by a check (and buffers are not
    reused, so that the error can show the inputs)."""
    if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"codegen: the function name must be an identifier, got {name!r}")
    names = _Names(float_checks)
    reuse_buffers = reuse_buffers and not float_checks
    params = [names.new(v) for v in list(jaxpr.constvars) + list(jaxpr.invars)]
    if len(jaxpr.eqns) > CHUNK_SIZE:
        lines = _emit_in_parts(jaxpr, name, params, names, reuse_buffers)
    else:
        lines = [f"def {name}({', '.join(params)}):"]
        outs = _emit_jaxpr(jaxpr, names, lines, reuse_buffers)
        lines.append(f"    return {_tuple_source(outs)}")
    return "\n".join(lines) + "\n", names.consts, names.modules


def _unbound_axis(name):
    raise NameError(f"unbound axis name: {name!r} (a collective was used outside the vmap "
                    "that binds it)")


class _Impls:
    """``_impl[name]`` in generated code: the impl of the primitive ``name`` (one
    shared table, looked up at call time, instead of a dict per compiled function)."""
    __slots__ = ()

    def __getitem__(self, name):
        return core.primitives[name].impl


_IMPLS = _Impls()


class CompiledFunction:
    """Compiled code: call ``fn(*consts, *args)``; ``source`` is its text."""
    __slots__ = ("fn", "source", "jaxpr", "consts")

    def __init__(self, fn: Callable, source: str, jaxpr: Jaxpr, consts=()):
        self.fn = fn
        self.source = source
        self.jaxpr = jaxpr
        # constants captured at trace time as plain ndarrays (the code is faster on them)
        self.consts = [core.plain_array(c) for c in consts]


def compile_source(source: str, name: str = "fn", block_consts=None, modules=None):
    """Compile source that ``lower_jaxpr_and_consts`` generated, in this process:
    the function ``name``.  ``modules`` maps the kernel-module aliases the source
    calls (``_special``) to the modules or to their import names, which is what
    another process (a Dask worker) receives with shipped source."""
    bound = {alias: importlib.import_module(m) if isinstance(m, str) else m
             for alias, m in (modules or {}).items()}
    namespace = {"np": np, "ml_dtypes": ml_dtypes, "_impl": _IMPLS,
                 "_unbound_axis": _unbound_axis, "_nonfinite": core.nonfinite_error,
                 **(block_consts or {}), **bound}
    for k, text in enumerate(_top_level_functions(source)):
        code = compile(text, f"<fungrad.jit {name}>" if k == 0 else f"<fungrad.jit {name} {k}>",
                       "exec")
        _check_names(code)
        exec(code, namespace)
    return namespace[name]


def _top_level_functions(source: str) -> list:
    """``source`` as one text, or, when it is long (a program emitted in parts),
    one text per top-level ``def``: each is compiled on its own, so that the
    compiler's syntax tree never holds the whole program."""
    if source.count("\n") <= 2 * CHUNK_SIZE:
        return [source]
    texts, start = [], 0
    while True:
        end = source.find("\ndef ", start + 1)
        if end < 0:
            texts.append(source[start:])
            return texts
        texts.append(source[start:end + 1])
        start = end + 1


# Names generated code never uses: a tripwire, should text from a user object
# ever reach the source despite the rules above (``lowering.value_source``,
# ``_check_params``), compilation fails before anything runs.
_NEVER_USED = frozenset({
    "__import__", "__builtins__", "__dict__", "__globals__", "__class__", "__subclasses__",
    "__code__", "__getattribute__", "__reduce__", "__reduce_ex__", "__loader__", "__spec__",
    "eval", "exec", "compile", "open", "globals", "locals", "vars", "getattr", "setattr",
    "delattr", "input", "breakpoint", "help", "exit", "quit", "system", "popen", "spawn",
    "subprocess", "builtins", "importlib", "ctypes", "ctypeslib", "load", "save", "savez",
    "savetxt", "loadtxt", "fromfile", "tofile", "memmap", "genfromtxt"})


def _check_names(code) -> None:
    used = _NEVER_USED.intersection(code.co_names)
    if used:
        raise TypeError(f"codegen: the generated code refers to {sorted(used)}, which fungrad "
                        "never writes: text from a user object reached the source. This is a "
                        "bug in fungrad; please report it with the function being compiled.")
    for const in code.co_consts:
        if hasattr(const, "co_names"):    # lambdas and nested functions
            _check_names(const)


def compile_jaxpr(jaxpr: Jaxpr, name: str = "fn", consts=(),
                  reuse_buffers: bool = True, float_checks: str = "") -> CompiledFunction:
    """Lower and compile a flat ``jaxpr`` (compile/exec once); a program of more
    than ``threaded.MIN_EQNS`` equations runs as threaded code instead (its
    source is not compiled: see ``interpreters/threaded.py``)."""
    from fungrad.interpreters import threaded
    if len(jaxpr.eqns) > threaded.MIN_EQNS and not float_checks:
        return threaded.compile_threaded(jaxpr, name, consts)
    return compile_as_source(jaxpr, name, consts, reuse_buffers, float_checks)


def compile_as_source(jaxpr: Jaxpr, name: str = "fn", consts=(),
                      reuse_buffers: bool = True, float_checks: str = "") -> CompiledFunction:
    """``compile_jaxpr`` through generated source, whatever the program's length."""
    source, block_consts, modules = lower_jaxpr_and_consts(jaxpr, name, reuse_buffers,
                                                           float_checks)
    return CompiledFunction(compile_source(source, name, block_consts, modules), source, jaxpr,
                            consts)


_F64 = np.dtype(np.float64)


def _scalar_lines(jaxpr: Jaxpr, names: "_Names", indent: str):
    """The body of ``jaxpr`` in Python float arithmetic, or None unless every
    value is a float64 scalar and every equation a ufunc with a Python form."""
    values = list(jaxpr.invars) + list(jaxpr.constvars) + [v for e in jaxpr.eqns
                                                             for v in e.outvars]
    if not all(v.aval.shape == () and v.aval.dtype == _F64 for v in values):
        return None
    lines = []
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        if prim.emit_block is not None or prim.multiple_results or prim.lowering is None:
            return None
        if any(isinstance(a, Literal) and a.aval.dtype != _F64 for a in eqn.inputs):
            return None
        args = [names(a) for a in eqn.inputs]
        expr = _lower_eqn(eqn, args)
        form = SCALAR_FORMS.get(expr.fn) if isinstance(expr, Call) and not expr.kwargs else None
        if form is None or not all(isinstance(a, (str, int)) for a in expr.args):
            return None
        operands = [a if isinstance(a, str) else repr(a) for a in expr.args]
        lines.append(f"{indent}{names.new(eqn.outvars[0])} = {form.format(*operands)}")
    return lines


def scalar_source(jaxpr: Jaxpr, name: str, numpy_name: str):
    """Source of ``name``: ``jaxpr`` in Python float arithmetic and the ``math``
    module when all its values are float64 scalars (NumPy's per-call overhead
    dominates such code), calling ``numpy_name`` (its NumPy version) with the
    original arguments where Python raises instead of returning inf/nan; or
    None for any other program."""
    names = _Names()
    params = [names.new(v) for v in list(jaxpr.constvars) + list(jaxpr.invars)]
    floats = []
    for v, p in zip(list(jaxpr.constvars) + list(jaxpr.invars), params):
        floats.append(f"{p}_")
        names.names[v] = f"{p}_"
    body = _scalar_lines(jaxpr, names, "        ")
    if body is None:
        return None
    outs = [names(v) for v in jaxpr.outvars]
    lines = [f"def {name}({', '.join(params)}):", "    try:"]
    if params:
        lines.append(f"        {', '.join(floats)}, = {', '.join(f'float({p})' for p in params)},")
    lines += body
    lines.append(f"        return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    lines.append("    except (ArithmeticError, ValueError):   # NumPy's inf/nan instead")
    lines.append(f"        return {numpy_name}({', '.join(f'_np_scalar({p})' for p in params)})")
    return "\n".join(lines) + "\n"


def _np_scalar(x):
    """A Python float as the NumPy scalar the NumPy version computes with."""
    return np.float64(x) if type(x) is float else x


def compile_scalar_or_numpy(closed: ClosedJaxpr, name: str = "fn") -> CompiledFunction:
    """``compile_closed``, or for an all-float64-scalar program its Python-float
    twin (``scalar_source``) with the NumPy version as the fallback.  (A long
    program run as threaded code gets no twin: its source is what the
    threaded code saves compiling.)"""
    numpy_version = compile_closed(closed, name)
    if not isinstance(numpy_version, CompiledFunction):
        return numpy_version
    source = scalar_source(closed.jaxpr, name, "_numpy_version")
    if source is None:
        return numpy_version
    namespace = {"_math": math, "np": np, "ml_dtypes": ml_dtypes, "_numpy_version": numpy_version.fn,
                 "_np_scalar": _np_scalar}
    code = compile(source, f"<fungrad.jit {name}>", "exec")
    _check_names(code)
    exec(code, namespace)
    compiled_fn = namespace[name]
    compiled_fn.takes_python_scalars = True    # (jit need not convert them first)
    return CompiledFunction(compiled_fn, source + "\n" + numpy_version.source.replace(
        f"def {name}(", "def _numpy_version(", 1), closed.jaxpr, closed.consts)


def compiled_scalar_or_numpy(closed: ClosedJaxpr) -> CompiledFunction:
    """``compiled``, with ``compile_scalar_or_numpy`` (what ``jit`` runs); the
    checking code while jax_debug_nans/jax_debug_infs is on."""
    if core._float_check_mode:
        return compiled(closed)
    return closed.derived("compiled_scalar",
                          lambda: compile_scalar_or_numpy(optimize(closed)))


def compile_closed(closed: ClosedJaxpr, name: str = "fn",
                   float_checks: str = "") -> CompiledFunction:
    return compile_jaxpr(closed.jaxpr, name, closed.consts, float_checks=float_checks)


def compiled(closed: ClosedJaxpr, float_checks: str | None = None) -> CompiledFunction:
    """The optimised, compiled code of ``closed``, cached on it (so it dies with
    it); call it as ``comp.fn(*comp.consts, *args)``.  While jax_debug_nans or
    jax_debug_infs is on (``float_checks`` None: as the options are now) it is
    the code that checks every equation, cached under its own key: switching
    the options off gives back the fast code."""
    checks = core._float_check_mode if float_checks is None else float_checks
    if not checks:
        return closed.derived("compiled", lambda: compile_closed(optimize(closed)))
    return closed.derived(("compiled", checks),
                          lambda: compile_closed(optimize(closed), float_checks=checks))


def lowered_source(prim, arg_names, in_avals=None, **params):
    """The source of one equation's lowering (as ``jit`` would write it, without
    ``out=``) and the kernel modules it calls: ``(source, {alias: module})``.
    ``in_avals`` matter only to rules registered ``typed``."""
    modules: dict = {}
    in_avals = [None] * len(arg_names) if in_avals is None else list(in_avals)
    return render(prim.lowering(list(arg_names), in_avals, **params), modules,
                  operator_form=not prim.multiple_results), modules


def expression_function(rule, num_args: int, **params) -> Callable:
    """The Python function of ``num_args`` arrays that evaluates the expression
    ``rule(arg_names, **params)`` returns, compiled once: a primitive whose impl
    is its lowering defines the expression once and gets both from it."""
    names = [f"x{i}" for i in range(num_args)]
    modules: dict = {}
    bound: dict = {}

    def bind(value):
        bound[f"_b{len(bound)}"] = value
        return f"_b{len(bound) - 1}"
    body = render(rule(names, **params), modules, bind=bind)
    namespace = {"np": np, "ml_dtypes": ml_dtypes, **modules, **bound}
    exec(compile(f"def impl({', '.join(names)}):\n    return {body}\n",
                 f"<fungrad.lowering {getattr(rule, '__name__', 'rule')}>", "exec"), namespace)
    return namespace["impl"]
