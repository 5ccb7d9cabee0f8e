"""The optional compiled backend of ``jit``: the optimised jaxpr lowered to
code numba (LLVM) compiles (``jit(f, backend="numba")``, the option
``fungrad_jit_backend``, or ``FUNGRAD_JIT_BACKEND=numba``; ``pip install
"fungrad[numba]"``).

The program is cut into runs of equations.  A run of equations that all
compile becomes one ``@numba.njit`` function (a *segment*); the rest is
written by the NumPy backend (``codegen``) into the driver, a plain Python
function that calls the segments in turn::

    def fn(a, b):
        c, d = _seg0(a, b)      # compiled by numba
        e = np.linalg.eigh(c)   # NumPy segment (not compiled)
        ...

What compiles is data on each primitive (next to its other rules):

* a ufunc primitive needs nothing: its NumPy lowering, ``call(np.sin, a)``,
  is what numba compiles too, for the ufuncs and dtypes of ``UFUNC_KINDS``;
* ``prim.numba_lowering(arg_names, in_avals, out_avals, **params)`` returns
  source numba compiles, or None for a case it does not;
* ``prim.numba_block(block, eqn, arg_names, out_names)`` (control flow)
  emits a native loop or branch through a ``NumbaBlock``, with the carries
  as local variables; the bodies are emitted by the same rules.

Inside a segment a value of shape ``()`` is a numba scalar (the driver passes
``x[()]`` and turns scalar results back into NumPy scalars of their dtype).
Consecutive elementwise equations (ufuncs, and rules marked
``numba_elementwise``, called with scalar avals there; operands broadcasting
NumPy's way), the views and the reductions of their values become one loop
nest with scalar locals (``numba_fusion``): one pass over memory, no
broadcast copies, reductions in registers.  Loops, dots and other reshapes
are array code between nests; ``tanh``/``exp`` of large arrays stay NumPy
calls (``NUMPY_FASTER``: between segments, or through ``numba.objmode`` inside
a compiled loop).
A run of fewer than ``MIN_SEGMENT`` equations without a loop stays NumPy
(a numba call costs more than it saves).  A segment numba cannot
compile (or that fails on its first call) runs its NumPy twin instead, with
one warning under ``jax_log_compiles``: never a wrong answer and never an
exception the user did not cause.  Compiled code is cached on disk
(``numba_cache``).  Generated text follows the NumPy backend's rules (no text
from a user object; ``codegen._check_names`` on everything compiled).
"""
from __future__ import annotations

import logging

import numpy as np

from fungrad._dtype_classes import is_small, kind as dtype_kind
from fungrad import core
from fungrad.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from fungrad.interpreters.codegen import (_REUSE_MIN_SIZE, _Names, _check_names, _check_params, _emit_jaxpr,
                                          _lower_eqn, _tuple_source, compile_scalar_or_numpy,
                                          _np_scalar, compile_source, literal_source,
                                          part_interfaces)
from fungrad.interpreters.lowering import Call, render
from fungrad.interpreters import numba_fusion, numba_remat
from fungrad.interpreters.numba_cache import NJIT_OPTIONS
from fungrad.interpreters.passes import optimize

__all__ = ["compiled", "lower", "NumbaCompiled", "NumbaBlock", "UFUNC_KINDS", "MIN_SEGMENT"]

log = logging.getLogger("fungrad.jit")


class NotCompilable(Exception):
    """An equation (or a body inside it) the compiled backend cannot lower."""


# The NumPy ufuncs numba compiles with NumPy's results, and the dtype kinds of
# their inputs for which it does (bool arithmetic, integer shifts, integer
# division and float->int casts differ, or are undefined in LLVM: left to NumPy).
_ARITH, _FLOAT, _ALL, _INT = "iuf", "f", "biuf", "biu"
UFUNC_KINDS = {
    np.add: _ARITH, np.subtract: _ARITH, np.multiply: _ARITH, np.true_divide: _FLOAT,
    np.negative: _ARITH, np.absolute: "if", np.square: _ARITH, np.sign: _FLOAT,
    np.maximum: _ARITH, np.minimum: _ARITH, np.fmax: _FLOAT, np.fmin: _FLOAT,
    np.greater: _ALL, np.greater_equal: _ALL, np.less: _ALL, np.less_equal: _ALL,
    np.equal: _ALL, np.not_equal: _ALL, np.logical_and: "b", np.logical_or: "b",
    np.logical_xor: "b", np.logical_not: "b", np.bitwise_and: _INT, np.bitwise_or: _INT,
    np.bitwise_xor: _INT, np.invert: _INT,
    np.isnan: _FLOAT, np.isinf: _FLOAT, np.isfinite: _FLOAT, np.signbit: _FLOAT,
    np.copysign: _FLOAT, np.nextafter: _FLOAT, np.power: _FLOAT,
    np.floor: _FLOAT, np.ceil: _FLOAT, np.trunc: _FLOAT, np.rint: _FLOAT,
    np.exp: _FLOAT, np.exp2: _FLOAT, np.expm1: _FLOAT, np.log: _FLOAT, np.log2: _FLOAT,
    np.log10: _FLOAT, np.log1p: _FLOAT, np.sqrt: _FLOAT, np.cbrt: _FLOAT,
    np.sin: _FLOAT, np.cos: _FLOAT, np.tan: _FLOAT, np.arcsin: _FLOAT, np.arccos: _FLOAT,
    np.arctan: _FLOAT, np.arctan2: _FLOAT, np.hypot: _FLOAT, np.sinh: _FLOAT,
    np.cosh: _FLOAT, np.tanh: _FLOAT, np.arcsinh: _FLOAT, np.arccosh: _FLOAT,
    np.arctanh: _FLOAT, np.logaddexp: _FLOAT, np.logaddexp2: _FLOAT,
}

# Transcendental ufuncs NumPy computes with SIMD code where numba calls the C
# library once per element.  On an array of at least NUMPY_FASTER_SIZE
# elements such a call is NumPy's call: between segments at the top level, and
# from the compiled code through ``numba.objmode`` inside a loop body (where
# leaving the segment would cost more).  Measured per 2,048 float64 elements:
# tanh 5.9 µs through objmode vs 21.6 µs per element in numba, exp 4.5 vs
# 10.1 µs; at 512 elements exp is even (entering objmode costs ~2.5 µs, and
# the split nest a pass over memory).  Not objmode at the top level: entering
# it costs more the more arrays are live there (30 µs with 25 live arrays).
NUMPY_FASTER = (np.tanh, np.exp)
NUMPY_FASTER_SIZE = 1024


def _faster_numpy_ufunc(eqn):
    """The ``NUMPY_FASTER`` ufunc ``eqn`` applies to a floating array of at
    least ``NUMPY_FASTER_SIZE`` elements (result of its dtype), else None."""
    if eqn.primitive.numba_lowering is not None or eqn.primitive.lowering is None:
        return None
    if len(eqn.outvars) != 1 or len(eqn.inputs) != 1:
        return None
    (x,), out = eqn.inputs, eqn.outvars[0]
    if (out.aval.size < NUMPY_FASTER_SIZE or not isinstance(x, Var)
            or x.aval.shape != out.aval.shape or x.aval.dtype != out.aval.dtype
            or dtype_kind(out.aval.dtype) != "f"):
        return None
    expr = _lower_eqn(eqn, ["a0"])
    if isinstance(expr, Call) and expr.fn in NUMPY_FASTER and expr.args == ("a0",) \
            and not expr.kwargs:
        return expr.fn
    return None


# a segment is compiled when it has a loop or branch, or at least this many
# equations: a numba call costs more than one small NumPy call saves
MIN_SEGMENT = 2
# at most this many top-level equations per segment: numba's type inference
# and LLVM's optimiser grow faster than linearly with a function's length
MAX_SEGMENT = 200
# A loop body or branch of this many equations (nested ones included) or more
# is compiled as a function of its own (NumbaBlock._outlined). Measured cold
# compiles: numpyro's NUTS, two vectorized chains, 129 s as one function,
# 73 s at 500, 54 s at 25-300; but numpyro's one-chain NUTS (16.8 s) took
# 20 s at 300 and 34 s at 60, and its steps twice as long at 60 (calls in hot
# inner loops): only the largest bodies are worth a call
OUTLINE_MIN = 500


def _sub_jaxprs(eqn):
    """The jaxprs in ``eqn``'s params (a loop's body, a cond's branches)."""
    for value in eqn.params.values():
        for sub in value if isinstance(value, tuple) else (value,):
            if isinstance(sub, ClosedJaxpr):
                yield sub.jaxpr


def _size(jaxpr: Jaxpr) -> int:
    """The number of equations of ``jaxpr`` and of the jaxprs inside them."""
    return sum(1 + sum(_size(sub) for sub in _sub_jaxprs(eqn)) for eqn in jaxpr.eqns)


class _StableNames(_Names):
    """Names that stay once given: an equation is emitted as numba source first,
    and again as NumPy code if that fails, after later equations (in compiled
    runs) may have used the names of its results."""

    def new(self, v) -> str:
        name = self.names.get(v)
        return name if name is not None else super().new(v)


def _compilable_aval(aval) -> bool:
    dtype = getattr(aval, "dtype", None)
    # numba has none of ml_dtypes' types (bfloat16, float8_*, int4, ...)
    return (isinstance(dtype, np.dtype) and dtype_kind(dtype) in "biuf" and not is_small(dtype)
            and dtype.isnative
            and dtype != np.float16 and isinstance(getattr(aval, "shape", None), tuple))


class NumbaBlock:
    """Where equations are emitted as numba source: ``line`` appends a line at
    the current indentation, ``body`` emits a nested jaxpr (a loop body,
    a branch) with its inputs bound to the given names and returns the names
    of its outputs (the interface of ``codegen.Block``, for ``numba_block``).
    ``targets`` ({variable: array element source}) are the slots a loop body's
    outputs may be computed in (``body``'s ``into``); ``written``, those that were."""

    def __init__(self, names: _Names, lines: list, indent: str, consts: dict, targets=None,
                 functions=None):
        self.names, self.lines, self.indent, self.consts = names, lines, indent, consts
        self.targets, self.written = targets or {}, {}
        # the sources of the bodies emitted as functions of their own (``body``)
        self.functions = [] if functions is None else functions

    def line(self, text: str, extra_indent: str = ""):
        self.lines.append(f"{self.indent}{extra_indent}{text}")

    def const(self, value) -> str:
        """A constant of a nested body: passed to the segment as an argument
        (numba would freeze a global array into the compiled code)."""
        value = np.asarray(value) if not isinstance(value, np.generic) else value
        if not _compilable_aval(value):
            raise NotCompilable(f"a constant of dtype {value.dtype}")
        if value.shape == ():
            value = value[()]
        name = self.names.const(value)
        self.consts[name] = value
        return name

    def body(self, closed: ClosedJaxpr, in_names, extra_indent: str = "    ",
             into=None, outline=True) -> list[str]:
        """``into`` ({output index: array element source}, a scan's ``ys[i]``):
        a nest or NumPy call computes such an output in that slot (no copy
        afterwards) and it is returned as the slot (``codegen.Block.body``)."""
        jaxpr = closed.jaxpr
        if outline and not into and _size(jaxpr) >= OUTLINE_MIN:
            return self._outlined(closed, in_names, extra_indent)
        for v, c in zip(jaxpr.constvars, closed.consts):
            self.names.names[v] = self.const(c)
        for v, n in zip(jaxpr.invars, in_names):
            self.names.names[v] = n
        targets = {}
        for k, target in (into or {}).items():
            v = jaxpr.outvars[k]
            if isinstance(v, Var) and v.aval.shape != () and jaxpr.outvars.count(v) == 1 \
                    and v not in jaxpr.invars:
                targets[v] = target
        inner = NumbaBlock(self.names, self.lines, self.indent + extra_indent, self.consts,
                           targets, self.functions)
        emit_eqns(inner, jaxpr.eqns, jaxpr.outvars)
        if not jaxpr.eqns:
            inner.line("pass")
        return [inner.written.get(v) or inner.atom(v) for v in jaxpr.outvars]

    def _outlined(self, closed: ClosedJaxpr, in_names, extra_indent) -> list[str]:
        """A large body as a numba function of its own, called here: numba's
        passes over a function (liveness, SSA) grow faster than its size, so
        a sampler's loop nest compiled as one function took minutes."""
        jaxpr = closed.jaxpr
        params = [self.names.new(v) for v in jaxpr.invars]
        lines, consts = [], {}
        inner = NumbaBlock(self.names, lines, "    ", consts, None, self.functions)
        outs = inner.body(closed, params, "", None, outline=False)
        # (a name unique in the program: the functions are module-level)
        name = "_body_" + self.names.new(Var(ShapedArray((), np.bool_)))
        self.functions.append("\n".join(
            [f"@numba.njit(error_model={NJIT_OPTIONS['error_model']!r})",
             f"def {name}({', '.join(params + list(consts))}):"] + lines
            + [f"    return {_tuple_source(outs)}"]) + "\n")
        for const_name, value in consts.items():
            self.consts[const_name] = value
        results = [self.names.new(Var(v.aval)) for v in jaxpr.outvars]
        call = f"{name}({', '.join(list(in_names) + list(consts))})"
        self.line(f"{_tuple_source(results)} = {call}" if results else call, extra_indent)
        return results

    def atom(self, a) -> str:
        """The source of an operand: a variable's name or a literal."""
        if isinstance(a, Literal):
            if not _compilable_aval(a.aval):
                raise NotCompilable(f"a literal of dtype {a.aval.dtype}")
            if dtype_kind(a.aval.dtype) == "b":
                return "True" if bool(a.val) else "False"
            return literal_source(a.val, a.aval.dtype)
        return self.names(a)


def _ufunc_source(eqn, args) -> str:
    """A ufunc primitive's NumPy lowering, if numba compiles it for these dtypes."""
    expr = _lower_eqn(eqn, args)
    if not isinstance(expr, Call) or expr.kwargs or not isinstance(expr.fn, np.ufunc):
        raise NotCompilable(f"{eqn.primitive.name} has no compiled lowering")
    kinds = UFUNC_KINDS.get(expr.fn)
    if kinds is None or any(dtype_kind(a.aval.dtype) not in kinds for a in eqn.inputs):
        raise NotCompilable(f"{eqn.primitive.name} on {[a.aval.dtype for a in eqn.inputs]}")
    if not all(type(a) is str for a in expr.args):
        raise NotCompilable(f"{eqn.primitive.name}: a non-operand argument")
    # (numba computes + - * of small integer scalars in int64: the ufunc keeps the
    # dtype; its int64 operators carry LLVM's no-signed-wrap flag, so a comparison
    # of a sum that overflowed may see the unwrapped value: the ufunc wraps)
    wide = all(a.aval.dtype in _PYTHON_DTYPES and a.aval.dtype != np.int64
               for a in eqn.inputs)
    return render(expr, operator_form=wide)


def _check_eqn(eqn) -> None:
    prim = eqn.primitive
    if prim.effectful:
        raise NotCompilable(f"{prim.name} has side effects")
    if not all(_compilable_aval(v.aval) for v in list(eqn.inputs) + list(eqn.outvars)):
        raise NotCompilable(f"{prim.name}: a value of a dtype numba does not compile")
    if eqn.params:
        _check_params(prim, eqn.params)


def _source(eqn, args, in_avals, out_avals) -> str:
    """The right-hand side numba compiles for ``eqn`` (NotCompilable if none);
    with shape () avals, its form on scalars (inside a fused loop)."""
    prim = eqn.primitive
    if prim.numba_lowering is not None:
        text = prim.numba_lowering(args, in_avals, out_avals, **eqn.params)
        if text is None:
            raise NotCompilable(f"{prim.name} with these params or dtypes")
        return text
    if prim.multiple_results or prim.emit_block is not None:
        raise NotCompilable(f"{prim.name} has no compiled lowering")
    return _ufunc_source(eqn, args)


def emit_eqn(block: NumbaBlock, eqn) -> None:
    """Append the numba source of ``eqn`` (NotCompilable if there is none)."""
    _check_eqn(eqn)
    prim = eqn.primitive
    args = [block.atom(a) for a in eqn.inputs]
    outs = [block.names.new(v) for v in eqn.outvars]
    if prim.numba_block is not None:
        prim.numba_block(block, eqn, args, outs)
        return
    ufunc = _faster_numpy_ufunc(eqn)
    if ufunc is not None:
        _emit_objmode_call(block, ufunc, args[0], outs[0], eqn.outvars[0])
        return
    text = _source(eqn, args, [a.aval for a in eqn.inputs], [v.aval for v in eqn.outvars])
    target = ", ".join(outs) + ("," if prim.multiple_results and len(outs) == 1 else "")
    block.line(f"{target} = {text}")


def _emit_objmode_call(block: NumbaBlock, ufunc, x: str, out: str, v) -> None:
    """``out = ufunc(x)`` as NumPy's call from compiled code (see
    ``NUMPY_FASTER``): NumPy's result, bit for bit (in ``v``'s slot if it has one)."""
    target = block.targets.get(v)
    if target is not None:
        block.line(f"{out} = {target}")
        block.written[v] = target
    else:
        shape = repr(tuple(int(d) for d in v.aval.shape))
        block.line(f"{out} = np.empty({shape}, np.{v.aval.dtype.name})")
    block.line("with numba.objmode():    # (SIMD in NumPy: faster than numba's per-element calls)")
    block.line(f"np.{ufunc.__name__}({x}, out={out})", "    ")


# ----------------------------------------------------------------------------
# Fusion: elementwise equations and reductions as loop nests (numba_fusion)
# ----------------------------------------------------------------------------

def _scalar_source(eqn, args) -> str:
    """An elementwise equation's form on scalars (inside a loop nest)."""
    in_avals = [ShapedArray((), a.aval.dtype) for a in eqn.inputs]
    return _source(eqn, args, in_avals, [ShapedArray((), eqn.outvars[0].aval.dtype)])


def _fusable(eqn, elementwise: bool) -> bool:
    """Whether ``eqn`` compiles (and, if ``elementwise``, has a scalar form)."""
    prim = eqn.primitive
    try:
        _check_eqn(eqn)
        if elementwise:
            if _faster_numpy_ufunc(eqn) is not None:
                return False              # (a NumPy call: ``_emit_objmode_call``)
            if prim.multiple_results or prim.numba_block is not None or not (
                    prim.numba_elementwise or (prim.numba_lowering is None and prim.lowering)):
                return False
            _scalar_source(eqn, [f"a{k}" for k in range(len(eqn.inputs))])
    except NotCompilable:
        return False
    return True


def emit_eqns(block: NumbaBlock, eqns, live_after) -> None:
    """Emit ``eqns``; runs of elementwise equations (operands broadcasting
    NumPy's way) and reductions of their values become loop nests
    (``numba_fusion``); ``live_after`` are the variables read after them
    (later code, outputs)."""
    eqns = list(eqns)
    reads_after = [set() for _ in eqns]
    later = {v for v in live_after if isinstance(v, Var)}
    for k in range(len(eqns) - 1, -1, -1):
        reads_after[k] = set(later)
        later.update(a for a in eqns[k].inputs if isinstance(a, Var))
    k = 0
    while k < len(eqns):
        planned = numba_fusion.plan_nest(eqns, k, _fusable)
        if planned is None:
            emit_eqn(block, eqns[k])
            k += 1
            continue
        nest, end = planned
        numba_fusion.emit_nest(block, nest, reads_after[end - 1], _scalar_source)
        k = end


# ----------------------------------------------------------------------------
# Segments and the driver
# ----------------------------------------------------------------------------

class _Run:
    """Consecutive top-level equations: compiled (with their numba lines and the
    constants they take) or left to the NumPy backend."""

    def __init__(self, compiled: bool):
        self.compiled, self.eqns, self.lines, self.consts = compiled, [], [], {}
        self.has_block = False
        self.functions = []      # the sources of its outlined bodies


def _runs(jaxpr: Jaxpr, names: _Names) -> list:
    """The equations of ``jaxpr`` cut into runs (see ``MIN_SEGMENT``)."""
    runs: list[_Run] = []
    for eqn in jaxpr.eqns:
        lines, consts = [], {}
        try:
            # (as a nest of its own where it is one: a reduction over some axes)
            emit_eqns(NumbaBlock(names, lines, "    ", consts), [eqn], set(eqn.outvars))
            ok = _faster_numpy_ufunc(eqn) is None
        except NotCompilable:
            ok = False
        if not runs or runs[-1].compiled != ok or (ok and len(runs[-1].eqns) >= MAX_SEGMENT):
            runs.append(_Run(ok))
        run = runs[-1]
        run.eqns.append(eqn)
        run.has_block |= ok and eqn.primitive.numba_block is not None
    for run in runs:     # too small to be worth a call: NumPy
        if run.compiled and not run.has_block and len(run.eqns) < MIN_SEGMENT:
            run.compiled = False
    return runs


def _emit_run(run: _Run, names, live_after) -> None:
    """The numba lines of a compiled run (fused), or it becomes a NumPy run."""
    lines, consts, functions = [], {}, []
    try:
        emit_eqns(NumbaBlock(names, lines, "    ", consts, functions=functions), run.eqns,
                  live_after)
    except NotCompilable:
        run.compiled = False
        return
    run.lines, run.consts, run.functions = lines, consts, functions


def _interface(runs, outvars):
    """For each run: the top-level variables it reads that earlier runs (or
    the arguments) define, and those it defines that later runs or the
    outputs read (codegen's rule for the parts of a long program)."""
    return part_interfaces([run.eqns for run in runs], outvars)


_PYTHON_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))


def _scalar_in(names, v) -> str:
    """A driver value passed to a segment (a 0-d array or NumPy scalar becomes a
    scalar: inside a segment shape () is a numba scalar)."""
    return f"{names(v)}[()]" if v.aval.shape == () else names(v)


class _Program:
    """The lowered program: the driver's source, the segments' sources, the
    constants the driver binds by name, the kernel modules it calls."""

    def __init__(self):
        self.driver: list[str] = []
        self.segments: list[tuple[str, str, str]] = []   # (name, numba source, numpy twin)
        self.consts: dict = {}
        self.modules: dict = {}
        self.primitives: set = set()     # names of the primitives the segments compile
        self.preludes: list[str] = []    # module-level source the segments call
        self.functions: list[str] = []   # the segments' outlined bodies (NumbaBlock._outlined)
        # the driver only calls its one segment with its parameters and returns
        # the segment's results: jit may call the segment itself (``_compile``)
        self.direct = False


def lower(closed: ClosedJaxpr, name: str = "fn") -> _Program:
    """Cut ``closed`` (optimised) into compiled segments and NumPy runs."""
    jaxpr = closed.jaxpr
    names = _StableNames()
    params = [names.new(v) for v in list(jaxpr.constvars) + list(jaxpr.invars)]
    runs = _runs(jaxpr, names)
    numba_remat.remat_cheap_values(runs, jaxpr.outvars, _fusable)
    ins, outs = _interface(runs, jaxpr.outvars)
    for run, run_outs in zip(runs, outs):
        if run.compiled:
            _emit_run(run, names, set(run_outs))
    prog = _Program()
    prog.consts = names.consts        # (one table: the names _b0, _b1, ... stay unique)
    prog.driver.append(f"def {name}({', '.join(params)}):")
    top_outs = [v for v in jaxpr.outvars if isinstance(v, Var)]
    needed_after = _needed_after(ins, top_outs)
    for k, run in enumerate(runs):
        if not run.compiled:
            prog.driver.append("    # NumPy")
            _emit_numpy(run.eqns, names, prog.driver, needed_after[k])
            continue
        seg = f"_seg{len(prog.segments)}"
        seg_params = [names(v) for v in ins[k]] + list(run.consts)
        ret = f"    return {_tuple_source([names(v) for v in outs[k]])}"
        source = "\n".join([f"def {seg}({', '.join(seg_params)}):"] + run.lines + [ret]) + "\n"
        prog.functions.extend(run.functions)
        twin = _numpy_twin(seg, run, ins[k], outs[k], names, prog)
        prog.primitives.update(_primitive_names(run.eqns))
        prog.segments.append((seg, source, twin))
        args = [_scalar_in(names, v) for v in ins[k]] + list(run.consts)
        target = _tuple_source([names(v) for v in outs[k]])
        prog.driver.append(f"    {target} = {seg}({', '.join(args)})  # compiled by numba"
                           if outs[k] else f"    {seg}({', '.join(args)})")
        _delete_dead(prog.driver, names, [v for v in ins[k] if v not in needed_after[k]])
        read_later = {v for later in ins[k + 1:] for v in later}      # (not just returned)
        for v in outs[k]:
            # numba returns Python scalars: NumPy scalars of their dtype again,
            # unless only returned and of a dtype jit's output wrapping keeps
            if v.aval.shape == () and (v in read_later or v.aval.dtype not in _PYTHON_DTYPES):
                prog.driver.append(f"    {names(v)} = np.{v.aval.dtype.name}({names(v)})")
    prog.driver.append(f"    return {_tuple_source([names(v) for v in jaxpr.outvars])}")
    prog.modules.update(names.modules)
    prog.preludes = _preludes([eqn for run in runs if run.compiled for eqn in run.eqns])
    prog.direct = (len(runs) == 1 and runs[0].compiled and not runs[0].consts
                   and ins[0] == list(jaxpr.invars) and outs[0] == list(jaxpr.outvars)
                   and len(prog.driver) == 3)
    return prog


def _primitives(eqns) -> set:
    """The primitives of ``eqns`` and of the jaxprs inside them."""
    found = set()
    for eqn in eqns:
        found.add(eqn.primitive)
        for sub in _sub_jaxprs(eqn):
            found |= _primitives(sub.eqns)
    return found


def _primitive_names(eqns) -> set:
    return {prim.name for prim in _primitives(eqns)}


def _preludes(eqns) -> list[str]:
    """The module-level source the compiled equations' rules call (each
    primitive's ``numba_prelude``), once per key, in the keys' order."""
    preludes = dict(prim.numba_prelude for prim in _primitives(eqns)
                    if prim.numba_prelude is not None)
    return [preludes[key]() for key in sorted(preludes)]


def _needed_after(ins, top_outs) -> list:
    """For each run: the variables read by a later run or returned."""
    needed, later = [], set(top_outs)
    for run_ins in reversed(ins):
        needed.append(set(later))
        later.update(run_ins)
    return needed[::-1]


def _delete_dead(lines, names, dead):
    """Drop the driver's references to large arrays no later code reads, as the
    NumPy backend does: the allocator reuses their memory (else every call
    touches fresh pages, and page faults cost more than the arithmetic)."""
    dead = sorted({names(v) for v in dead if v.aval.size >= _REUSE_MIN_SIZE})
    if dead:
        lines.append(f"    del {', '.join(dead)}")


def _emit_numpy(eqns, names, lines, needed_after=None, indent="    "):
    """The NumPy backend's lines for ``eqns``; with ``needed_after`` (the values
    later code reads), its buffer reuse too: an array a ufunc of this run made
    and nothing later reads is no segment's input or output (the twins, called
    with a segment's arguments, reuse nothing)."""
    seen = {v for eqn in eqns for v in list(eqn.inputs) + list(eqn.outvars)
            if isinstance(v, Var)}
    outs = sorted(seen & (needed_after or set()), key=lambda v: v.id)
    _emit_jaxpr(Jaxpr([], [], eqns, outs), names, lines, needed_after is not None, indent)


def _numpy_twin(seg, run, ins, outs, names, prog) -> str:
    """The NumPy version of a segment (same parameters and results), run if
    numba cannot compile it."""
    twin_names = _Names()
    twin_names.count = names.count
    twin_names.consts = prog.consts        # (shared: the driver binds them)
    for v in ins:
        twin_names.names[v] = names(v)
    params = [names(v) for v in ins] + list(run.consts)
    lines = [f"def {seg}_numpy({', '.join(params)}):"]
    _emit_numpy(run.eqns, twin_names, lines)
    lines.append(f"    return {_tuple_source([twin_names(v) for v in outs])}")
    prog.modules.update(twin_names.modules)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------
# Compiling
# ----------------------------------------------------------------------------

class NumbaCompiled:
    """Compiled code: call ``fn(*consts, *args)``; ``source`` is the driver and
    the segments numba compiles; ``backend`` says which backend runs it."""
    __slots__ = ("fn", "source", "jaxpr", "consts", "backend", "segments")

    def __init__(self, fn, source, jaxpr, consts, backend, segments=()):
        self.fn, self.source, self.jaxpr, self.consts = fn, source, jaxpr, list(consts)
        self.backend, self.segments = backend, list(segments)


class _Segment:
    """A compiled segment in the driver's namespace: the numba function, or,
    if numba cannot compile it (or it fails on its first call), its NumPy twin."""
    __slots__ = ("name", "label", "numba_fn", "twin", "call", "numba_error", "after",
                 "namespace")

    def __init__(self, name, label, numba_fn, twin, numba_error, after, namespace):
        self.name, self.label, self.numba_fn, self.twin = name, label, numba_fn, twin
        self.numba_error, self.after, self.namespace = numba_error, after, namespace
        self.call = self._first

    def __call__(self, *args):
        return self.call(*args)

    def _first(self, *args):
        try:
            out = self.numba_fn(*args)
        except Exception as err:      # (loading or compiling; nothing has run yet)
            retry = self.after(False, self.name)   # a bad disk cache entry: compile anew
            if retry is None:
                return self._give_up(err, args)
            self.numba_fn = retry
            try:
                out = self.numba_fn(*args)
            except Exception as err:
                return self._give_up(err, args)
        self.call = self._compiled()
        self.namespace[self.name] = self.call    # (the driver calls it directly from now on)
        self.after(True, self.name)        # (the disk cache records what numba wrote)
        return out

    def _compiled(self):
        numba_fn, numba_error, give_up = self.numba_fn, self.numba_error, self._give_up

        def call(*args):
            try:
                return numba_fn(*args)
            except numba_error as err:     # compiling for new argument layouts
                return give_up(err, args)
        return call

    def _give_up(self, err, args):
        from fungrad import _config
        if _config.log_compiles.value:
            log.warning("%s: numba could not compile %s (%s: %s); it runs on NumPy",
                        self.label, self.name, type(err).__name__, str(err).split("\n")[0])
        # (NumPy scalars for the NumPy code: jit calls a direct segment with
        # Python floats, numba's float64)
        self.call = self.namespace[self.name] = twin = _with_numpy_scalars(self.twin)
        return twin(*args)


def _with_numpy_scalars(twin):
    def call(*args):
        return twin(*[_np_scalar(a) for a in args])
    return call


def compiled(closed: ClosedJaxpr, label: str = "fn") -> NumbaCompiled:
    """The compiled backend's code of ``closed``, cached on it (see module doc);
    ``label`` (the user's function name) appears in log lines, never in code."""
    return closed.derived("numba", lambda: _compile(optimize(closed), label))


def _on_numpy(closed: ClosedJaxpr, name: str) -> NumbaCompiled:
    """The NumPy backend's code of ``closed``, as the compiled backend's result."""
    comp = compile_scalar_or_numpy(closed, name)
    return NumbaCompiled(comp.fn, comp.source, comp.jaxpr, comp.consts, "NumPy")


def _compile(closed: ClosedJaxpr, label: str) -> NumbaCompiled:
    from fungrad import _config
    from fungrad.interpreters import numba_cache
    name = "fn"
    prog = lower(closed, name)
    if not prog.segments:
        if _config.log_compiles.value:
            log.warning("jit(%s): nothing in it compiles with numba; it runs on NumPy", label)
        return _on_numpy(closed, name)
    try:
        numba_fns, numba_error, on_compiled = numba_cache.compile_segments(
            [src for _, src, _ in prog.segments], [seg for seg, _, _ in prog.segments],
            prog.primitives, prog.preludes + prog.functions)
    except SyntaxError as err:        # (a bug in a numba rule: never the user's error)
        log.warning("jit(%s): fungrad generated numba code that is not valid Python (%s: %s, "
                    "line %s); it runs on NumPy. This is a bug in fungrad; please report it "
                    "with the function being compiled.", label, type(err).__name__, err.msg,
                    err.lineno)
        return _on_numpy(closed, name)
    twins = "".join(twin + "\n" for _, _, twin in prog.segments)
    driver = "\n".join(prog.driver) + "\n"
    fn = compile_source(twins + driver, name, dict(prog.consts), prog.modules)
    namespace = fn.__globals__
    for (seg, _, _), numba_fn in zip(prog.segments, numba_fns):
        namespace[seg] = _Segment(seg, f"jit({label})", numba_fn, namespace[f"{seg}_numpy"],
                                  numba_error, on_compiled, namespace)
    if prog.direct:
        # jit's runner calls it with the arguments as numba takes them (0-d
        # values as scalars, Python floats as they are) instead of the driver
        fn.direct_segment = namespace[prog.segments[0][0]]
    source = ("".join(f + "\n" for f in prog.functions)
              + "".join(f"@numba.njit\n{src}\n" for _, src, _ in prog.segments) + driver)
    return NumbaCompiled(fn, source, closed.jaxpr, closed.consts, "numba",
                         [namespace[seg] for seg, _, _ in prog.segments])
