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
_PY_NUMBERS = frozenset({float, int, complex, bool})


def _no_value():
    return None


#: the last field of an instruction ``(kernel, out, a, b)`` (see ``_runner``):
#: ``b >= 0`` is a second input slot; these mark the other forms
_UNARY, _NARY, _DROP = -1, -2, -3


class _Program:
    """The instructions, the initial slots (arguments first, then literals) and
    the kernels of one program: ``build`` fills them in one pass.  The
    instructions ``(kernel, out, a, b)`` are kept as four lists, one per field
    (a tuple each was 70 bytes per equation)."""

    def __init__(self, n_params: int):
        self.initial: list = [None] * n_params
        self.fields: tuple = ([], [], [], [])
        self.kernels: dict = {}
        self.literal_slots: dict = {}
        self.literal_ids: dict = {}          # id(Literal) -> slot, for literals seen before
        self.fast_kernels: dict = {}         # see ``kernel``

    @property
    def instructions(self) -> list:
        return list(zip(*self.fields))

    def literal_slot(self, atom: Literal) -> int:
        """The slot holding the literal's value (one per distinct value and type)."""
        hit = self.literal_ids.get(id(atom))     # (the jaxpr keeps the literal alive)
        if hit is not None:
            return hit
        value = _literal_value(atom)
        try:      # (repr: 0.0 == -0.0 but the sign of a zero matters)
            scalar = type(value) in _PY_NUMBERS or np.ndim(value) == 0
            key = (atom.aval.dtype, type(value), repr(value)) if scalar else id(atom)
            hit = self.literal_slots.get(key)
        except TypeError:          # an unhashable value
            key, hit = id(atom), None
        if hit is None:
            hit = self.literal_slots[key] = len(self.initial)
            self.initial.append(value)
        self.literal_ids[id(atom)] = hit
        return hit

    def kernel(self, eqn):
        """(function, whether it returns a tuple) for ``eqn``: one per primitive,
        params, input types and which inputs are literals."""
        # (keyed on the variables' avals' ids, which the jaxpr holds for the
        # build: long programs share a few aval objects; a literal's aval by
        # value; params first by identity: staged programs share them, the
        # staged tape splicing the same few jaxprs over and over)
        params = eqn.params
        inputs = [(a.aval.shape, a.aval.dtype, a.aval.weak_type) if type(a) is Literal
                  else id(a.aval) for a in eqn.inputs]
        fast = (eqn.primitive, id(params) if params else 0, len(eqn.outvars), *inputs)
        hit = self.fast_kernels.get(fast)
        if hit is not None:
            return hit
        try:
            key = (eqn.primitive, tuple(sorted(params.items())), len(eqn.outvars),
                   *inputs) if params else fast
            hit = self.kernels.get(key)
        except TypeError:          # unhashable params: compiled for this equation alone
            key, hit = None, None
        if hit is None:
            hit = _kernel(eqn)
            if key is not None:
                self.kernels[key] = hit
        if key is not None:
            self.fast_kernels[fast] = hit
        return hit


def _no_inputs(env):
    return ()


def build(jaxpr: Jaxpr) -> _Program:
    """The threaded code of ``jaxpr``: slots are reused once their variable is
    dead (the last equation reading it has read it), large dead values dropped."""
    params = list(jaxpr.constvars) + list(jaxpr.invars)
    prog = _Program(len(params))
    slot = {v: k for k, v in enumerate(params)}
    kept = set(params) | {v for v in jaxpr.outvars if isinstance(v, Var)}
    dying, unread = _deaths(jaxpr)
    initial, free = prog.initial, []
    kernel_list, out_list, a_list, b_list = prog.fields
    kernels, literal_slot = prog.fast_kernels, prog.literal_slot
    large = _LargeAvals()
    for i, eqn in enumerate(jaxpr.eqns):
        inputs, outvars, params = eqn.inputs, eqn.outvars, eqn.params
        # the kernel, by identities first (see _Program.kernel), inline for the
        # most common equations: one or two variables in, one out
        n = len(inputs)
        if n == 1 and type(inputs[0]) is Var:
            a = inputs[0]
            hit = kernels.get((eqn.primitive, id(params) if params else 0, len(outvars),
                               id(a.aval)))
            ins = [slot[a]]
        elif n == 2 and type(inputs[0]) is Var and type(inputs[1]) is Var:
            a, b = inputs
            hit = kernels.get((eqn.primitive, id(params) if params else 0, len(outvars),
                               id(a.aval), id(b.aval)))
            ins = [slot[a], slot[b]]
        else:
            hit = None
            ins = [slot[a] if type(a) is not Literal else literal_slot(a) for a in inputs]
        kernel, returns_tuple = hit if hit is not None else prog.kernel(eqn)
        dropped = None
        mask = dying[i]
        if mask:
            for a in inputs:       # the inputs' slots are free once read
                if mask & 1 and a not in kept:
                    free.append(slot.pop(a))
                    if large[a.aval]:
                        dropped = [free[-1]] if dropped is None else dropped + [free[-1]]
                mask >>= 1
        if returns_tuple:
            out = slice(len(initial), len(initial) + len(outvars))
            initial.extend([None] * len(outvars))
            slot.update(zip(outvars, range(out.start, out.stop)))
        else:
            out = free.pop() if free else len(initial)
            if out == len(initial):
                initial.append(None)
            slot[outvars[0]] = out
        kernel_list.append(kernel)
        out_list.append(out)
        if n == 1:
            a_list.append(ins[0])
            b_list.append(_UNARY)
        elif n == 2:
            a_list.append(ins[0])
            b_list.append(ins[1])
        else:
            a_list.append(itemgetter(*ins) if ins else _no_inputs)
            b_list.append(_NARY)
        mask = unread[i]
        if mask:
            for v in outvars:       # results nothing reads
                if mask & 1 and v not in kept:
                    free.append(slot[v])
                    if large[v.aval]:
                        dropped = [slot[v]] if dropped is None else dropped + [slot[v]]
                mask >>= 1
        if dropped is not None:
            for s in dropped:
                if s != out:
                    kernel_list.append(_no_value)
                    out_list.append(s)
                    a_list.append(0)
                    b_list.append(_DROP)
    prog.out_slots = [prog.literal_slot(v) if type(v) is Literal else slot[v]
                      for v in jaxpr.outvars]
    return prog


def _deaths(jaxpr: Jaxpr) -> tuple[list, list]:
    """Per equation, bit masks of its inputs read there for the last time (once
    each: ``x * x`` marks the first) and of its outputs nothing reads, by one
    walk backwards keeping the set of variables read later (a variable leaves
    it where it is made: small ints and a small set, where a map of every
    variable's last reader was a tenth of a long program's memory)."""
    n = len(jaxpr.eqns)
    dying, unread = [0] * n, [0] * n
    later = {v for v in jaxpr.outvars if type(v) is not Literal}
    for i in range(n - 1, -1, -1):
        eqn = jaxpr.eqns[i]
        outvars = eqn.outvars
        if len(outvars) == 1:
            v = outvars[0]
            if v in later:
                later.discard(v)
            else:
                unread[i] = 1
        else:
            mask = 0
            for k, v in enumerate(outvars):
                if v in later:
                    later.discard(v)
                else:
                    mask |= 1 << k
            unread[i] = mask
        mask = 0
        for k, a in enumerate(eqn.inputs):
            if type(a) is not Literal and a not in later:
                later.add(a)
                mask |= 1 << k
        dying[i] = mask
    return dying, unread


class _LargeAvals(dict):
    """``large[aval]``: is a value of this type at least ``codegen._REUSE_MIN_SIZE``
    elements (dropped once dead)?  Asked per type object, keyed by identity
    (the jaxpr keeps its avals alive for the build; few distinct objects)."""

    def __getitem__(self, aval):
        hit = self.get(id(aval))
        if hit is None:
            hit = self[id(aval)] = aval.size >= codegen._REUSE_MIN_SIZE
        return hit


def _literal_value(atom: Literal):
    """The value the generated code writes for a literal (``codegen.literal_source``:
    a Python int/float/complex for the 64-bit types, else a NumPy scalar of the
    dtype; a non-numeric literal is bound as it is)."""
    dtype, val = atom.aval.dtype, atom.val
    if type(val) is float and dtype == _F64:    # (most literals: no NumPy call)
        return val
    if type(val) is np.ndarray and val.dtype == _F64 and dtype == _F64 and val.ndim == 0:
        return val.item()                       # (what fungrad.numpy makes of a float)
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


def _runner(fields: tuple, initial: list, n_params: int, out_slots: list):
    def run(*args):
        env = initial.copy()
        env[:n_params] = args
        for kernel, out, a, b in zip(*fields):
            if b >= 0:                      # two inputs (the slots a and b)
                env[out] = kernel(env[a], env[b])
            elif b == -1:                   # one (_UNARY)
                env[out] = kernel(env[a])
            elif b == -2:                   # any number, read by a getter (_NARY)
                env[out] = kernel(*a(env))
            else:                           # a large dead value dropped (_DROP)
                env[out] = None
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
    run = _runner(prog.fields, prog.initial, n_params, prog.out_slots)
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
