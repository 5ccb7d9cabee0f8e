"""Long programs as threaded code: a list of instructions run by a small loop.

``jit`` lowers a jaxpr to Python source (``codegen``), which is readable and
fast to run, but Python's ``compile()`` of it costs about as much as running
the whole program eagerly once, and generating the text costs as much again:
for the 500,000-equation gradient of a long chain, the source route was two
fifths of ``jit``'s first call.  A program of more than ``MIN_EQNS`` equations
is therefore run as *threaded code* instead::

    for kernel, read, out, arity in program:
        env[out] = kernel(read(env)) if arity == 1 else kernel(*read(env))

``env`` is a list of slots (the variables), ``read`` an ``operator.itemgetter``
of the input slots, ``kernel`` the function the equation's lowering calls
(``np.sin`` itself when the lowering is a plain call of it, else a one-line
function compiled from the lowering, once per distinct equation *shape*:
primitive, params and input types; a long program of few kinds of equation
compiles a few dozen of them).  Literals are slots filled before the run.
A slot is reused once its variable is dead, and a dead value of at least
``codegen._REUSE_MIN_SIZE`` elements is dropped at once (an instruction that
stores None), so the memory held is as in the generated code; ufuncs do not
write into dead inputs (``out=``) here.

Building the program costs a few microseconds per equation, a fifth of
writing and compiling its source; running it, up to a third more than the
source on tiny arrays (the loop's cost per equation against NumPy's call), so
a program that runs long enough is compiled to source after all (``_tiered``).
``source`` is the equivalent generated code, written on demand.
"""
from __future__ import annotations

import time
from operator import itemgetter

import numpy as np

from fungrad.core import Jaxpr, Literal, Var, plain_array
from fungrad.interpreters import codegen
from fungrad.interpreters.lowering import Call

__all__ = ["MIN_EQNS", "ThreadedFunction", "compile_threaded"]

#: programs with more equations than this run as threaded code under ``jit``
MIN_EQNS = 10_000


_F64 = np.dtype(np.float64)


def _no_value():
    return None


def _no_inputs(env):
    return ()


class _Program:
    """The instructions, the initial slots (arguments first, then literals) and
    the kernels of one program: ``build`` fills them in one pass."""

    def __init__(self, n_params: int):
        self.initial: list = [None] * n_params
        self.instructions: list = []
        self.kernels: dict = {}
        self.literal_slots: dict = {}

    def literal_slot(self, atom: Literal) -> int:
        """The slot holding the literal's value (one per distinct value and type)."""
        value = _literal_value(atom)
        try:      # (repr: 0.0 == -0.0 but the sign of a zero matters)
            key = (atom.aval.dtype, type(value), repr(value)) if np.ndim(value) == 0 \
                else id(atom)
            hit = self.literal_slots.get(key)
        except TypeError:          # an unhashable value
            key, hit = id(atom), None
        if hit is None:
            hit = self.literal_slots[key] = len(self.initial)
            self.initial.append(value)
        return hit

    def kernel(self, eqn):
        """(function, whether it returns a tuple) for ``eqn``: one per primitive,
        params, input types and which inputs are literals."""
        params = eqn.params
        try:
            key = (eqn.primitive, tuple(sorted(params.items())) if params else (),
                   tuple([a.aval if type(a) is Literal else id(a.aval) for a in eqn.inputs]),
                   len(eqn.outvars))
            hit = self.kernels.get(key)
        except TypeError:          # unhashable params: compiled for this equation alone
            key, hit = None, None
        if hit is None:
            hit = _kernel(eqn)
            if key is not None:
                # (keyed on the variables' avals' ids, which the jaxpr holds for
                # the build; long programs share a few aval objects; a literal's
                # own aval, by value)
                self.kernels[key] = hit
        return hit


def build(jaxpr: Jaxpr) -> _Program:
    """The threaded code of ``jaxpr``: slots are reused once their variable is
    dead (the last equation reading it has read it), large dead values dropped."""
    params = list(jaxpr.constvars) + list(jaxpr.invars)
    prog = _Program(len(params))
    slot = {v: k for k, v in enumerate(params)}
    kept = set(params) | {v for v in jaxpr.outvars if isinstance(v, Var)}
    last_use = codegen._last_uses(jaxpr)
    initial, instructions, free = prog.initial, prog.instructions, []
    large = codegen._REUSE_MIN_SIZE
    for i, eqn in enumerate(jaxpr.eqns):
        ins = [prog.literal_slot(a) if type(a) is Literal else slot[a] for a in eqn.inputs]
        dropped = []
        for a in eqn.inputs:       # the inputs' slots are free once read
            if type(a) is not Literal and last_use[a] == i and a not in kept \
                    and slot.get(a) is not None:
                free.append(slot.pop(a))    # (released once if read twice)
                if a.aval.size >= large:
                    dropped.append(free[-1])
        kernel, returns_tuple = prog.kernel(eqn)
        outvars = eqn.outvars
        if returns_tuple:
            out = slice(len(initial), len(initial) + len(outvars))
            initial.extend([None] * len(outvars))
            slot.update(zip(outvars, range(out.start, out.stop)))
        else:
            out = free.pop() if free else len(initial)
            if out == len(initial):
                initial.append(None)
            slot[outvars[0]] = out
        instructions.append((kernel, itemgetter(*ins) if ins else _no_inputs, out, len(ins)))
        for v in outvars:           # results nothing reads
            if v not in last_use and v not in kept:
                free.append(slot[v])
                if v.aval.size >= large:
                    dropped.append(slot[v])
        for s in dropped:
            if s != out:
                instructions.append((_no_value, _no_inputs, s, 0))
    prog.out_slots = [prog.literal_slot(v) if type(v) is Literal else slot[v]
                      for v in jaxpr.outvars]
    return prog


def _literal_value(atom: Literal):
    """The value the generated code writes for a literal (``codegen.literal_source``:
    a Python int/float/complex for the 64-bit types, else a NumPy scalar of the
    dtype; a non-numeric literal is bound as it is)."""
    dtype, val = atom.aval.dtype, atom.val
    if type(val) is float and dtype == _F64:    # (most literals: no NumPy call)
        return val
    if dtype.kind not in codegen._NUMERIC_KINDS:
        return plain_array(atom.val)
    item = np.asarray(val, dtype).item()
    if dtype in (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.complex128)):
        return item
    return dtype.type(item)


def _kernel(eqn):
    """The function computing ``eqn`` from its input values, and whether it
    returns a tuple (multiple results, or a control-flow block)."""
    prim = eqn.primitive
    if prim.emit_block is not None or prim.multiple_results:
        ins = [Var(a.aval) for a in eqn.inputs]
        outs = [Var(v.aval) for v in eqn.outvars]
        one = Jaxpr([], ins, [type(eqn)(prim, ins, eqn.params, outs, eqn.source)], outs)
        return codegen.compile_as_source(one, "kernel", reuse_buffers=False).fn, True
    names = [codegen.core._letters(k) for k in range(len(eqn.inputs))]
    expr = codegen._lower_eqn(eqn, names)
    if (type(expr) is Call and not expr.kwargs and list(expr.args) == names
            and callable(expr.fn) and any(type(a) is Var for a in eqn.inputs)):
        return expr.fn, False                 # np.sin itself: no wrapper to call
    namer = codegen._Names()
    body = codegen.render(expr, namer.modules, operator_form=True, bind=namer.const)
    source = f"def kernel({', '.join(names)}):\n    return {body}\n"
    return codegen.compile_source(source, "kernel", namer.consts, namer.modules), False


def _runner(program: list, initial: list, n_params: int, out_slots: list):
    def run(*args):
        env = initial.copy()
        env[:n_params] = args
        for kernel, read, out, arity in program:
            env[out] = kernel(read(env)) if arity == 1 else kernel(*read(env))
        return tuple([env[s] for s in out_slots])
    return run


#: the threaded code of a program gives way to its generated source once it
#: has run this many times as long as building it took (see ``_tiered``)
SOURCE_AFTER_RUN_PER_BUILD = 20.0


def compile_threaded(jaxpr: Jaxpr, name: str = "fn", consts=()) -> "ThreadedFunction":
    """The threaded code of a flat ``jaxpr`` (see the module docstring); call it
    as ``comp.fn(*comp.consts, *args)``, like ``codegen.compile_jaxpr``'s."""
    start = time.perf_counter()
    prog = build(jaxpr)
    n_params = len(jaxpr.constvars) + len(jaxpr.invars)
    run = _runner(prog.instructions, prog.initial, n_params, prog.out_slots)
    comp = ThreadedFunction(None, jaxpr, consts, name, len(prog.kernels))
    comp.fn = _tiered(run, comp, time.perf_counter() - start)
    return comp


def _tiered(run, comp: "ThreadedFunction", build_seconds: float):
    """``run``, until the program has spent ``SOURCE_AFTER_RUN_PER_BUILD`` times
    its build time running; then its generated source, compiled then (and
    ``comp.source_fn``).  Threaded code runs a program of tiny arrays up to a
    third slower than its source (the loop's cost per equation, against
    NumPy's), and writing and compiling the source costs about five builds:
    so a program called often enough for that to matter pays for its source
    once its calls have lost about as much as the source costs (the
    ski-rental rule), and one called a few times never does."""
    budget = [SOURCE_AFTER_RUN_PER_BUILD * build_seconds]

    def call(*args):
        fn = comp.source_fn
        if fn is not None:
            return fn(*args)
        start = time.perf_counter()
        outs = run(*args)
        budget[0] -= time.perf_counter() - start
        if budget[0] <= 0 and comp.source_fn is None:
            comp.source_fn = codegen.compile_as_source(comp.jaxpr, comp.name).fn
        return outs
    return call


class ThreadedFunction:
    """What ``codegen.compile_jaxpr`` returns for a long program: ``fn``,
    ``consts`` and ``jaxpr`` as a ``CompiledFunction``'s; ``source`` is the
    generated code of the same program (written when asked for: the threaded
    code runs without it)."""
    __slots__ = ("fn", "jaxpr", "consts", "name", "num_kernels", "_source", "source_fn")

    def __init__(self, fn, jaxpr: Jaxpr, consts, name: str, num_kernels: int):
        self.fn, self.jaxpr, self.name, self.num_kernels = fn, jaxpr, name, num_kernels
        self.consts = [plain_array(c) for c in consts]
        self._source = None
        self.source_fn = None     # the compiled source, once it replaces the threaded code

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = (
                f"# {len(self.jaxpr.eqns)} equations (over {MIN_EQNS}) run as threaded code "
                f"with {self.num_kernels} kernels (fungrad/interpreters/threaded.py);\n"
                "# the same program as generated source:\n"
                + codegen.lower_jaxpr(self.jaxpr, self.name))
        return self._source
