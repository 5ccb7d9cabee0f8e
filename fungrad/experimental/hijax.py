"""``fungrad.experimental.hijax``: JAX's "hijax" extension API
(``jax.experimental.hijax``), which flax.nnx builds its optional hijax
Variables on.

What works, on fungrad's own machinery:

* ``HiPrimitive``: a primitive defined by subclassing, whose methods are its
  rules: ``impl`` (or ``to_lojax``, its expansion into ordinary operations)
  for evaluation, ``abstract_eval`` (returning ``(avals, effects)``) for
  staging, ``jvp(primals, tangents, **params)`` for differentiation (zero
  tangents arrive as symbolic ``Zero``; ``instantiate_zeros`` makes arrays of
  them), ``transpose(ct, *args, **params)`` for reverse mode (linear inputs
  arrive as ``UndefinedPrimal``, see ``is_undefined_primal``) and, if given,
  ``batch(args, dims, **params)`` for vmap.  It is a
  ``fungrad.extend.core.Primitive``: on arrays it runs under every
  transformation (jit calls its impl from the generated code), and a
  declared ``Effect`` keeps its equations from being removed or merged.
* ``register_hitype(cls, typeof_fn)``: ``typeof(value)`` of a value class of
  one's own gives the type ``typeof_fn`` computes (a ``HiType`` /
  ``MutableHiType``), and ``HiPrimitive``s take and return such values when
  run eagerly; ``cur_qdd(value)`` asks the value for its current
  quasi-dynamic data (``value.cur_qdd()``), as JAX's evaluation does.

What does not: fungrad's interpreters trace arrays only, so a value of a
registered hi type (flax's ``HijaxVariable``, i.e. ``nnx.var_defaults(hijax=True)``
or ``flax_hijax_variable=True``) cannot cross a transformation (``jit``,
``grad``, ``vmap``...): binding a ``HiPrimitive`` on one there, or returning a
hi type from ``abstract_eval``, raises ``NotImplementedError`` naming the
primitive and the transformation.  (On JAX 0.10.2, flax 0.12.8's hijax
Variables fail under ``nnx.jit`` and ``nnx.grad`` too.)  ``aval_method`` /
``aval_property`` are JAX's markers for the attributes a hi type lends its
tracers; with no tracers of hi types, nothing here reads them.
"""
from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import numpy as np

from fungrad import core
from fungrad.core import AbstractValue, ShapedArray
from fungrad.extend.core import Effect, Primitive
from fungrad.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from fungrad.ref import AbstractRef

__all__ = ["HiPrimitive", "HiType", "MutableHiType", "register_hitype", "AbstractValue",
           "ShapedArray", "Zero", "instantiate_zeros", "is_undefined_primal", "AvalQDD",
           "AvalMutableQDD", "aval_method", "aval_property", "control_flow_allowed_effects",
           "EffectTypeSet", "cur_qdd", "AbstractRef"]

# An attribute of a type (an aval) that a value of that type exposes: a method
# (``fun`` gets the value as ``self``) or a property (JAX's namedtuples).
aval_method = namedtuple("aval_method", ["fun"])
aval_property = namedtuple("aval_property", ["fget"])


class EffectTypeSet:
    """A set of ``Effect`` subclasses (JAX's ``effects.EffectTypeSet``)."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, effect_type: type) -> None:
        if not (isinstance(effect_type, type) and issubclass(effect_type, Effect)):
            raise TypeError(f"add_type takes a subclass of Effect, got {effect_type!r}")
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, t) for t in self._types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


#: the effects control flow (cond, scan, while) may carry in its bodies
control_flow_allowed_effects = EffectTypeSet()


def _is_high_type(aval) -> bool:
    return getattr(aval, "is_high", False) and not isinstance(aval, ShapedArray)


def _transformation() -> str | None:
    trace = core.current_trace()
    return None if isinstance(trace, core.EvalTrace) else trace.label()


def _as_array(x):
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return core.wrap_array(x)
    return x


class HiPrimitive(Primitive):
    """A primitive whose rules are the methods of a subclass (JAX's hijax)."""
    multiple_results = False

    def __init__(self, name: str):
        super().__init__(name, multiple_results=type(self).multiple_results)
        cls = type(self)
        # Primitive.__init__ set every rule to a "missing" placeholder: the
        # subclass's methods replace those it overrides
        self.impl = self._evaluate
        self.abstract_eval = self._abstract_eval_lo
        for rule in ("jvp", "transpose", "batch"):
            method = getattr(cls, rule, None)
            if method is not None and method is not getattr(HiPrimitive, rule, None):
                setattr(self, rule, method.__get__(self, cls))

    def bind(self, *args, **params):
        kind = _transformation()
        if kind is None:
            # eagerly, hi values (registered types) go in and come out as they
            # are; array results become read-only Arrays, as every eager result
            out = self._evaluate(*args, **params)
            return [_as_array(o) for o in out] if self.multiple_results else _as_array(out)
        for arg in args:
            if type(arg) in core.pytype_aval_mappings or (
                    isinstance(arg, core.Tracer) and _is_high_type(arg.aval)):
                raise self._no_hi_types(kind, core.typeof(arg))
        return super().bind(*args, **params)

    def _evaluate(self, *args, **params):
        if type(self).impl is not HiPrimitive.impl:
            return type(self).impl(self, *args, **params)
        return self.to_lojax(*args, **params)

    def _abstract_eval_lo(self, *avals, **params):
        """abstract_eval for fungrad's staging: the avals (hi types refused);
        an effect (or ``is_effectful``) marks the primitive effectful: dce
        keeps its equations, cse never merges them."""
        out, effects = type(self).abstract_eval(self, *avals, **params)
        for aval in (out if self.multiple_results else [out]):
            if not isinstance(aval, ShapedArray):
                raise self._no_hi_types(_transformation() or "staging", aval)
        if effects or self.is_effectful(params):
            self.effectful = True
        return out

    def _no_hi_types(self, kind: str, aval) -> NotImplementedError:
        return NotImplementedError(
            f"hijax primitive '{self.name}' meets a value of the hi type "
            f"{getattr(aval, 'aval', aval)!r} under a "
            f"transformation ({kind}): fungrad traces arrays only, so it runs hi types "
            "(values registered with register_hitype) eagerly only: they cannot cross jit, "
            "grad, vmap or control flow. For flax.nnx: leave hijax Variables off (nnx.use_hijax(False), "
            "flax_hijax_variable=False, the defaults).")

    # the rules a subclass defines (JAX's names and signatures)
    def is_high(self, *avals, **params) -> bool:
        return True

    def is_effectful(self, params) -> bool:
        return False

    def impl(self, *args, **params):
        raise NotImplementedError(f"hijax primitive '{self.name}': define impl or to_lojax")

    def abstract_eval(self, *arg_avals, **params):
        raise NotImplementedError(f"hijax primitive '{self.name}' has no abstract_eval "
                                  "(needed by jit, make_jaxpr, vmap, grad)")

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"hijax primitive '{self.name}': define to_lojax (its "
                                  "expansion into ordinary operations) or impl")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(f"hijax primitive '{self.name}' has no jvp rule "
                                  "(needed by jvp, grad, vjp)")

    def transpose(self, *args, **params):
        raise NotImplementedError(f"hijax primitive '{self.name}' has no transpose rule "
                                  "(needed by grad and vjp when its jvp is linear)")


def _must_override(ty, method: str, needed_for: str):
    raise NotImplementedError(f"{needed_for} needs {type(ty).__name__} to define `{method}`")


class HiType(AbstractValue):
    """The type of an immutable value class of one's own (register it with
    ``register_hitype``).  Subclasses define equality and what the
    transformations they meet need; fungrad uses ``to_tangent_aval`` and the
    equality methods (its transformations do not take hi types yet)."""
    is_high = True
    has_qdd = False

    def __hash__(self):
        _must_override(self, "__hash__", "type equality")

    def __eq__(self, other):
        _must_override(self, "__eq__", "type equality")

    def lo_ty(self) -> list:
        _must_override(self, "lo_ty", "lowering (under jit)")

    def lower_val(self, hi_val) -> list:
        _must_override(self, "lower_val", "lowering values (under jit)")

    def raise_val(self, *lo_vals):
        _must_override(self, "raise_val", "raising lowered values (under jit)")

    def to_tangent_aval(self):
        _must_override(self, "to_tangent_aval", "autodiff")

    def to_ct_aval(self):
        return self.to_tangent_aval()


class MutableHiType(AbstractValue):
    """The type of a mutable value class of one's own, whose contents' types
    (its quasi-dynamic data, QDD) may change: ``type_state()`` on a value is
    ``cur_qdd(value)``."""
    is_high = True
    has_qdd = True
    is_writer = False
    type_state = aval_method(lambda value: cur_qdd(value))

    def __hash__(self):
        _must_override(self, "__hash__", "type equality")

    def __eq__(self, other):
        _must_override(self, "__eq__", "type equality")

    def lo_ty_qdd(self, state, /) -> list:
        _must_override(self, "lo_ty_qdd", "lowering (under jit)")

    def to_tangent_aval(self):
        _must_override(self, "to_tangent_aval", "autodiff")

    def to_ct_aval(self):
        return self.to_tangent_aval()


def register_hitype(val_cls: type, typeof_fn) -> None:
    """``typeof(v)`` of a ``val_cls`` instance is ``typeof_fn(v)`` (JAX's)."""
    core.pytype_aval_mappings[val_cls] = typeof_fn


@dataclasses.dataclass(frozen=True)
class AvalQDD:
    """A mutable type together with its current quasi-dynamic data."""
    aval: AbstractValue
    qdd: Any
    is_high = True
    has_qdd = True


@dataclasses.dataclass(frozen=True)
class AvalMutableQDD:
    """A mutable type with QDD an ``abstract_eval`` may update in place."""
    aval: AbstractValue
    mutable_qdd: Any


def cur_qdd(x):
    """The current quasi-dynamic data of the mutable hi value ``x``
    (``jax.experimental.cur_qdd``): eagerly, ``x.cur_qdd()``."""
    kind = _transformation()
    if kind is not None or isinstance(x, core.Tracer):
        raise NotImplementedError(
            f"cur_qdd of a traced value ({kind or 'a finished transformation'}): fungrad "
            "runs mutable hi types eagerly only")
    return x.cur_qdd()
