"""``fungrad.extend.core``: the IR and primitives as a public extension API
(``jax.extend.core``).

Reading jaxprs::

    closed = fungrad.make_jaxpr(f)(x)          # a ClosedJaxpr
    closed.jaxpr.invars, closed.jaxpr.outvars, closed.jaxpr.constvars, closed.consts
    for eqn in closed.jaxpr.eqns:              # JaxprEqn
        eqn.primitive, eqn.invars, eqn.outvars, eqn.params
    jaxpr_as_fun(closed)(x)                    # evaluate it (a list of outputs)

An interpreter over jaxprs calls ``eqn.primitive.bind(*invals, **eqn.params)``
for what it does not handle itself, so it composes with every transformation
(see ``notebooks/09_writing_an_interpreter.ipynb``).  Every primitive is
``fungrad.lax.<name>_p`` and ``fungrad.extend.core.primitives.<name>_p``.  ``Jaxpr`` and
``JaxprEqn`` are constructed with JAX's argument order (``Jaxpr(constvars,
invars, outvars, eqns)``, ``new_jaxpr_eqn(invars, outvars, primitive, params,
effects)``) and are the very classes fungrad builds.

A primitive of your own, with every rule::

    multiply_add_p = define_primitive(
        "multiply_add",
        impl=lambda x, y, z: x * y + z,                          # NumPy arrays in and out
        abstract_eval=lambda x, y, z: ShapedArray(x.shape, x.dtype),
        jvp=lambda primals, tangents: ...,                       # (out, tangent out)
        transpose=lambda ct, x, y, z: ...,                       # cotangents, None if not linear
        batch=lambda args, dims: ...,                            # (out, out dim), JAX's signature
        lowering="({0} * {1} + {2})")                            # NumPy source for jit

or step by step on ``Primitive(name)`` (``def_impl``, ``def_abstract_eval``)
and JAX's registries (``fungrad.interpreters.ad.primitive_jvps[p] = rule``,
``ad.primitive_transposes``, ``fungrad.interpreters.batching.primitive_batchers``).
A transformation that meets a missing rule raises ``NotImplementedError``
naming the primitive, the rule and the transformations that need it.  Without
a lowering, ``jit`` calls the impl from the generated code (``export`` then
needs a lowering: its modules use NumPy only).

``define_primitive``'s ``lowering`` is a format string over the argument
names ``{0}, {1}, ...`` and the params by name, or a callable
``(arg_names, **params)`` returning source text or a lowering node of
``fungrad.interpreters.lowering`` (``call(np.add, a, b)``, ``Source(...)``), which
is how fungrad's own primitives declare theirs (``fungrad.lax.utils.def_lowering``).
"""
from __future__ import annotations

import contextlib
import itertools
import weakref
from typing import Callable, Sequence

import numpy as np

from fungrad import core
from fungrad.core import ClosedJaxpr, Literal, ShapedArray, Var, eval_jaxpr
from fungrad.interpreters import ad, batching
from fungrad.interpreters.ad import Zero, UndefinedPrimal, is_undefined_primal
from fungrad.interpreters.lowering import Call, Source
from fungrad.lax.utils import def_lowering
from fungrad.extend.core import primitives  # noqa: F401  (every primitive as <name>_p)

__all__ = ["Primitive", "Jaxpr", "ClosedJaxpr", "JaxprEqn", "Var", "DropVar", "Literal", "ShapedArray",
           "jaxpr_as_fun", "new_jaxpr_eqn", "check_jaxpr", "define_primitive", "Zero",
           "UndefinedPrimal", "is_undefined_primal", "primitives", "mapped_aval", "unmapped_aval", "take_current_trace", "set_current_trace", "find_top_trace", "get_opaque_trace_state",
           "OpaqueTraceState", "Effect"]


# ----------------------------------------------------------------------------
# Jaxpr and JaxprEqn with JAX's constructor signatures
# ----------------------------------------------------------------------------

class _BuildsCore(type):
    """A name for one of core's classes with JAX's constructor signature:
    calling it builds the core object; ``isinstance`` accepts core's objects."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls.core_class)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls.core_class)


class Jaxpr(metaclass=_BuildsCore):
    """``Jaxpr(constvars, invars, outvars, eqns, effects=None, debug_info=None)``:
    builds a ``fungrad.core.Jaxpr`` (whose own constructor takes the eqns before
    the outvars).  Attributes: ``constvars``, ``invars``, ``outvars``, ``eqns``."""
    core_class = core.Jaxpr

    def __new__(cls, constvars, invars, outvars, eqns, effects=None, debug_info=None):
        return core.Jaxpr(constvars, invars, eqns, outvars)


class JaxprEqn(metaclass=_BuildsCore):
    """``JaxprEqn(invars, outvars, primitive, params, effects=None,
    source_info=None, ctx=None)``: builds a ``fungrad.core.JaxprEqn``.
    Attributes: ``primitive``, ``invars``, ``outvars``, ``params``."""
    core_class = core.JaxprEqn

    def __new__(cls, invars, outvars, primitive, params, effects=None, source_info=None,
                ctx=None):
        return core.JaxprEqn(primitive, invars, dict(params), outvars)


class DropVar(Var):
    """An equation output that nothing reads (JAX prints it ``_``).  fungrad's
    jaxprs bind every output to an ordinary ``Var`` (its passes delete unused
    equations instead), so a DropVar appears only in jaxprs built by hand,
    where it behaves as a ``Var``."""
    __slots__ = ()

    def __repr__(self):
        return f"DropVar({self.aval.str_short()})"


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None):
    """An equation ``outvars = primitive[params] invars`` (``jax.extend.core``'s
    signature; effects, source_info and ctx are accepted and unused)."""
    return JaxprEqn(invars, outvars, primitive, params)


def check_jaxpr(jaxpr) -> None:
    """Type-check ``jaxpr`` (a Jaxpr or ClosedJaxpr): every equation's declared
    output types against its primitive's abstract evaluation; raises TypeError."""
    core.typecheck_jaxpr(jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr)


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    """``closed`` as a Python function of its inputs returning the list of its
    outputs; it binds primitives, so it can be transformed (grad, vmap, jit)."""
    if not isinstance(closed, ClosedJaxpr):
        raise TypeError(f"jaxpr_as_fun takes a ClosedJaxpr (make_jaxpr's result), got "
                        f"{type(closed).__name__}; wrap a Jaxpr as ClosedJaxpr(jaxpr, consts)")

    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return fun


class Effect:
    """Base class of the effects a primitive declares (``jax.extend.core.Effect``):
    a ``fungrad.experimental.hijax.HiPrimitive`` whose ``abstract_eval``
    returns one is kept by dead-code elimination and never merged by CSE."""

    def __repr__(self):
        return type(self).__name__


# ----------------------------------------------------------------------------
# Primitives of your own
# ----------------------------------------------------------------------------

# rule -> (the transformations that need it, how to give it)
_NEEDED_BY = {
    "impl": ("evaluation (a call outside jit, vmap and grad)",
             "impl= to define_primitive, or p.def_impl(fn)"),
    "abstract_eval": ("staging: jit, make_jaxpr, vmap, and grad/vjp (which stage tangents)",
                      "abstract_eval= to define_primitive, or p.def_abstract_eval(fn)"),
    "jvp": ("differentiation: jvp, grad, vjp, linearize, jacfwd, jacrev, hessian",
            "jvp= to define_primitive, or fungrad.interpreters.ad.primitive_jvps[p] = rule"),
    "transpose": ("reverse mode (grad, vjp, jacrev) when the JVP rule applies the primitive "
                  "to tangents", "transpose= to define_primitive, or "
                  "fungrad.interpreters.ad.primitive_transposes[p] = rule"),
    "batch": ("vmap, and jacfwd/jacrev/hessian, which batch",
              "batch= to define_primitive, or "
              "fungrad.interpreters.batching.primitive_batchers[p] = rule"),
}

_impls: dict[str, "Primitive"] = {}    # what lowerings without a NumPy template call
_ids = itertools.count()


def _missing_rule(prim: "Primitive", rule: str) -> Callable:
    needed_by, fix = _NEEDED_BY[rule]

    def missing(*args, **params):
        raise NotImplementedError(f"primitive '{prim.name}' has no {rule} rule, needed by "
                                  f"{needed_by}; give one with {fix}")
    missing.missing_rule = True
    return missing


class Primitive(core.Primitive):
    """A primitive of your own (``jax.extend.core.Primitive``).

    Names need not be unique among your primitives but may not be one of
    fungrad's.  Until a rule is given, a transformation that needs it raises
    ``NotImplementedError`` naming it; without a lowering, ``jit`` calls the
    impl from the generated code (params are handed to it as they are: numbers
    and strings written as literals, other values bound by name).
    """

    def __init__(self, name: str, multiple_results: bool = False):
        if type(name) is not str or not name.isidentifier():
            raise ValueError(f"Primitive: the name must be a Python identifier (a str), got "
                             f"{type(name).__name__} {name!r}")
        super().__init__(name, multiple_results=multiple_results)
        for rule in _NEEDED_BY:
            setattr(self, rule, self.missing_rule(rule))
        self.key = f"{name}_{next(_ids)}"
        _impls[self.key] = self
        def_lowering(self, self._impl_lowering)
        self.opaque_params = True     # the impl call binds the params: never text

    def missing_rule(self, rule: str) -> Callable:
        """The placeholder of a rule not given yet: it raises NotImplementedError."""
        return _missing_rule(self, rule)

    def _register(self):
        if self.name in core.primitives:
            raise ValueError(f"Primitive: {self.name!r} is the name of one of fungrad's "
                             f"primitives (fungrad.lax.{self.name}_p); choose another name")

    def _impl_lowering(self, args, **params):
        return Call(call_impl, args, dict(sorted(params.items()), primitive_key=self.key))


def call_impl(*args, primitive_key, **params):
    """What generated code calls for a primitive of your own without a lowering.
    The impl gets NumPy values, as outside jit: a constant operand the code
    writes as a Python number (``0``, ``1.5``) is passed as a NumPy scalar."""
    args = [_LITERAL_TYPES[type(a)](a) if type(a) in _LITERAL_TYPES else a for a in args]
    return _impls[primitive_key].impl(*args, **params)


# the dtypes of the literals codegen writes as plain Python numbers
_LITERAL_TYPES = {float: np.float64, int: np.int64}


def _as_lowering(lowering) -> Callable:
    """A user's lowering: a format string over the argument names (``{0}``, ...)
    and params (by name: numbers and strings as literals, other values bound by
    name, never their repr), or ``rule(arg_names, **params)`` returning source
    text or a lowering node (``fungrad.interpreters.lowering``)."""
    if isinstance(lowering, str):
        template = str(lowering)
        return lambda args, **params: Source(template, *args, **params)
    if not callable(lowering):
        raise TypeError(f"define_primitive: lowering must be a format string or a callable, "
                        f"got {lowering!r}")

    def rule(args, **params):
        out = lowering(args, **params)
        return Source(out) if isinstance(out, str) else out
    return rule


def define_primitive(name: str, *, impl: Callable, abstract_eval: Callable,
                     jvp: Callable | None = None, transpose: Callable | None = None,
                     batch: Callable | str | None = None, lowering: str | Callable | None = None,
                     multiple_results: bool = False, symbolic_zeros: bool = False) -> Primitive:
    """A new primitive with all of its rules; call it as ``p.bind(*arrays, **params)``.

    * ``impl(*arrays, **params)``: NumPy arrays in, an array (or a list if
      ``multiple_results``) out.
    * ``abstract_eval(*avals, **params)``: ``ShapedArray``(s) of the outputs
      from those of the inputs (``.shape``, ``.dtype``).
    * ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``,
      written with primitives (it is traced, and differentiated again for
      higher orders).  Zero tangents arrive as arrays of zeros, or as
      ``Zero(aval)`` objects with ``symbolic_zeros=True``.
    * ``transpose(ct, *args, **params)``: for a primitive linear in some
      arguments (those arrive as ``UndefinedPrimal``; see
      ``is_undefined_primal``), one cotangent per argument, ``None`` for the
      others.  Needed by reverse mode when the JVP rule applies the primitive
      to tangents.
    * ``batch(args, dims, **params) -> (out, out_dim)``: JAX's batcher
      signature; a dim is an axis or ``None`` (not mapped).
      ``batch="elementwise"`` is the rule of an elementwise primitive whose
      operands broadcast like NumPy's.
    * ``lowering``: the NumPy source ``jit`` emits, as for
      ``fungrad.lax.utils.def_lowering`` (e.g. ``"np.add(np.multiply({0}, {1}), {2})"``);
      by default the generated code calls ``impl``.
    """
    p = Primitive(name, multiple_results=multiple_results)
    p.def_impl(impl)
    p.def_abstract_eval(abstract_eval)
    if jvp is not None:
        p.jvp = jvp if symbolic_zeros else _instantiating(jvp)
    if transpose is not None:
        ad.primitive_transposes[p] = _instantiating_cts(transpose)
    if batch == "elementwise":
        batching.broadcasting_batcher(p)
    elif batch is not None:
        if not callable(batch):
            raise TypeError(f"define_primitive: batch must be a rule or 'elementwise', got "
                            f"{batch!r}")
        batching.primitive_batchers[p] = batch
    if lowering is not None:
        def_lowering(p, _as_lowering(lowering))
        # a template writes params as values (lowering.Source); a rule of the
        # user's own may format them, so codegen checks those for user text
        p.opaque_params = isinstance(lowering, str)
    return p


def _instantiating(jvp: Callable) -> Callable:
    def rule(primals, tangents, **params):
        return jvp(primals, [ad.instantiate_zeros(t) for t in tangents], **params)
    return rule


def _instantiating_cts(transpose: Callable) -> Callable:
    def rule(ct, *args, **params):
        cts = [ad.instantiate_zeros(c) for c in ct] if isinstance(ct, list) else \
            ad.instantiate_zeros(ct)
        return list(transpose(cts, *args, **params))
    return rule


# ----------------------------------------------------------------------------
# Avals with and without a mapped axis (batching rules of one's own use them)
# ----------------------------------------------------------------------------

def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """The type of one slice of ``aval`` along ``axis`` (of length ``size``);
    ``axis=None``: not mapped, ``aval`` itself."""
    if axis is None:
        return aval
    if not -aval.ndim <= axis < aval.ndim or aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} does not have "
                         f"size {size}")
    axis %= aval.ndim
    return ShapedArray(aval.shape[:axis] + aval.shape[axis + 1:], aval.dtype, aval.weak_type)


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis=None) -> ShapedArray:
    """The type of ``size`` stacked values of type ``aval``, the new axis at
    ``axis`` (``None``: not mapped, ``aval`` itself)."""
    if axis is None:
        return aval
    if not -aval.ndim - 1 <= axis <= aval.ndim:
        raise ValueError(f"unmapped_aval: axis {axis} is out of range for "
                         f"{aval.str_short()} with one more axis")
    axis %= aval.ndim + 1
    return ShapedArray(aval.shape[:axis] + (size,) + aval.shape[axis:], aval.dtype,
                       aval.weak_type)


# ----------------------------------------------------------------------------
# The current trace, for interpreters of one's own (haiku imports these)
# ----------------------------------------------------------------------------

@contextlib.contextmanager
def take_current_trace():
    """``with take_current_trace() as trace:``: the current trace, with
    evaluation current inside the block (an interpreter of one's own then binds
    on ``trace`` explicitly), restored afterwards; as JAX's."""
    prev = core.current_trace()
    with core.set_current_trace(core.EVAL_TRACE):
        yield prev


def find_top_trace(xs=None):
    """The innermost transformation running (the current trace), as JAX's
    ``find_top_trace`` (which also ignores its argument)."""
    return core.current_trace()


def set_current_trace(trace, check_leaks: bool = False):
    """``with set_current_trace(trace):``: ``trace`` is current inside the block
    (``check_leaks`` is accepted: escaped tracers are detected when used)."""
    return core.set_current_trace(trace)


# ----------------------------------------------------------------------------
# Which transformation is running (flax, haiku and equinox ask)
# ----------------------------------------------------------------------------

class OpaqueTraceState:
    """A token for the trace current when it was taken: equal to another token
    exactly when both were taken under the same trace (the same ``jit``,
    ``grad``, ``vmap`` ... level, or both outside any).  Libraries take one
    when a module or variable is made and compare later to refuse updates
    from inside a transformation that did not create it.  Holds the trace
    weakly (a token does not keep a finished transformation alive)."""
    __slots__ = ("_ref", "_id")

    def __init__(self, trace):
        self._ref = weakref.ref(trace)     # one ref object per live trace: `is` works
        self._id = id(trace)

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._ref is other._ref

    def __hash__(self):
        return self._id

    def __repr__(self):
        trace = self._ref()
        kind = trace.kind if trace is not None else "finished"
        return f"OpaqueTraceState({kind} trace {self._id:#x})"


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    """The current trace as an ``OpaqueTraceState`` (``convention`` names the
    asking library, as in JAX; every convention gets the same token)."""
    return OpaqueTraceState(core.current_trace())
