"""``jax.interpreters.mlir`` on fungrad: lowering rules for primitives of
one's own, mapped onto fungrad's NumPy code generation.

JAX lowers a jaxpr to MLIR; fungrad's ``jit`` writes NumPy source
(``fungrad/interpreters/codegen.py``).  Libraries that define primitives
(equinox's ``eqx.internal`` ones, for instance) give them a lowering as::

    mlir.register_lowering(my_p, mlir.lower_fun(impl, multiple_results=True))

``lower_fun(fun)`` says "lower this primitive as the computation ``fun``
does".  ``register_lowering`` installs that on the primitive as fungrad's
lowering: when ``jit`` meets the primitive it traces ``fun`` at the
equation's input types and params and inlines the resulting jaxpr's NumPy
code into the generated function (as a nested ``jit`` is inlined).

A rule written directly in MLIR (``rule(ctx, *values, **params)`` building
``hlo`` operations, as JAX's "Primitives in JAX" tutorial writes) is run while
staging: its operands are ``ir.Value``s around traced arrays and the ``hlo``
ops compute with ``lax`` (``fungrad/_jax_private/lib/mlir/dialects/hlo.py``),
so what the rule builds is inlined as equations, as for ``lower_fun``.  A rule
that uses an op or ``ir`` feature fungrad does not interpret is lowered to a
call of the primitive's impl instead (logged under ``jax_log_compiles``),
which computes the same values when impl and rule agree, as they must in JAX.

Platforms: ``platform=None`` registers the rule for every platform;
``"cpu"`` for the CPU, which takes precedence over a rule for every
platform, as in JAX.  fungrad has only the CPU, so rules for JAX's other
known platforms (``"cuda"``, ``"rocm"``, ``"gpu"``, ``"tpu"``, ``"oneapi"``)
are accepted and never used, as on a CPU-only JAX install; an unknown
platform raises ``NotImplementedError`` as JAX does.

Lives in ``fungrad.jax_compat`` (not ``fungrad.interpreters``) because it
stages and inlines whole jaxprs, which needs the layers above the
interpreters; the import hook maps ``jax.interpreters.mlir`` here.
"""
from __future__ import annotations

import logging
from typing import Callable

from fungrad import _config, core
from fungrad.interpreters.codegen import _lower_eqn as lower_eqn
from fungrad.interpreters.lowering import render
from fungrad.interpreters.partial_eval import trace_to_jaxpr, closure_convert

from fungrad._jax_private.lib.mlir import ir
from fungrad._jax_private.lib.mlir.dialects.hlo import Op as HloOp

__all__ = ["register_lowering", "lower_fun", "ir", "ir_constant", "aval_to_ir_type",
           "dtype_to_ir_type", "LoweringRuleContext", "ModuleContext", "emit_python_callback"]

#: JAX's known platforms (``xla_bridge.known_platforms()`` on a CPU install)
KNOWN_PLATFORMS = ("cpu", "cuda", "gpu", "oneapi", "rocm", "tpu")

_log = logging.getLogger("fungrad.jit")

# rules registered for platforms other than the CPU: kept (as JAX keeps them), never used
_other_platform_rules: dict[str, dict] = {p: {} for p in KNOWN_PLATFORMS if p != "cpu"}
# primitives with a CPU-specific rule, which a rule for every platform does not replace
_cpu_specific: "set[core.Primitive]" = set()
# hand-written MLIR rules, by primitive: they cannot run here (see the module docstring)
mlir_rules: dict = {}


class FunLowering:
    """What ``lower_fun`` returns: the rule "lower as ``fun`` computes",
    consumed by ``register_lowering``."""

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun = fun
        self.multiple_results = multiple_results

    def __repr__(self):
        return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r}, " \
               f"multiple_results={self.multiple_results})"


def lower_fun(fun: Callable, multiple_results: bool = True) -> FunLowering:
    """The lowering rule that lowers a primitive as the traceable function
    ``fun(*args, **params)`` computes (a list of outputs if
    ``multiple_results``, else one)."""
    if not callable(fun):
        raise TypeError(f"lower_fun: fun must be a function, got {type(fun).__name__}")
    return FunLowering(fun, bool(multiple_results))


def register_lowering(prim: core.Primitive, rule, platform: str | None = None,
                      inline: bool = True, cacheable: bool = True) -> None:
    """Register ``rule`` as how ``jit`` lowers ``prim`` (see the module
    docstring for what runs on fungrad).  ``inline`` and ``cacheable`` are
    accepted: fungrad always inlines and caches."""
    if not isinstance(prim, core.Primitive):
        raise TypeError(f"register_lowering: prim must be a Primitive, got "
                        f"{type(prim).__name__}")
    if not callable(rule) and not isinstance(rule, FunLowering):
        raise TypeError(f"register_lowering: rule must be mlir.lower_fun(...) or a function, "
                        f"got {type(rule).__name__}")
    if platform is not None and platform not in KNOWN_PLATFORMS:
        raise NotImplementedError(
            f"Registering an MLIR lowering rule for primitive {prim} for an unknown platform "
            f"{platform}. Known platforms are: {', '.join(sorted(KNOWN_PLATFORMS))}.")
    if platform not in (None, "cpu"):
        _other_platform_rules[platform][prim] = rule
        return
    if platform is None and prim in _cpu_specific:
        return
    if platform == "cpu":
        _cpu_specific.add(prim)
    if isinstance(rule, FunLowering):
        mlir_rules.pop(prim, None)
    else:
        mlir_rules[prim] = rule
        rule = _interpreted_mlir_rule(prim, rule)
    prim.emit_block = _inlining_emitter(prim, rule)


def _inlining_emitter(prim: core.Primitive, rule: FunLowering) -> Callable:
    """A codegen ``emit_block`` rule: trace ``rule.fun`` at the equation's
    input types and params, and emit its jaxpr in place."""
    def emit(block, eqn, args, out_names):
        try:
            closed = _trace_rule(prim, rule, eqn)
        except _Uninterpreted as e:       # an MLIR rule using what fungrad cannot run
            _log.log(logging.WARNING if _config.log_compiles.value else logging.DEBUG,
                     "jit lowers primitive '%s' to its impl: its MLIR lowering rule %s",
                     prim.name, e)
            target = ", ".join(out_names) + ("," if prim.multiple_results else "")
            source = render(lower_eqn(eqn, args), block.names.modules, bind=block.names.const)
            block.line(f"{target} = {source}")
            return
        outs = block.body(closed, list(args), extra_indent="")
        for name, value in zip(out_names, outs):
            block.line(f"{name} = {value}")
    emit.lowers_fun = True
    return emit


def _trace_rule(prim, rule: FunLowering, eqn) -> core.ClosedJaxpr:
    def flat(*xs):
        out = rule.fun(*xs, **eqn.params)
        return list(out) if rule.multiple_results else [out]
    jaxpr, consts = trace_to_jaxpr(flat, [v.aval for v in eqn.invars],
                                   name=f"lower_fun({prim.name})")
    closed, hoisted = closure_convert(jaxpr, consts)
    if hoisted:
        raise TypeError(f"mlir.lower_fun: the lowering of primitive '{prim.name}' closes over "
                        f"a traced value; lower_fun's function must depend only on its "
                        f"arguments and params")
    expected = [(v.aval.shape, v.aval.dtype) for v in eqn.outvars]
    got = [(a.shape, a.dtype) for a in closed.out_avals]
    if got != expected:
        raise TypeError(f"mlir.lower_fun: the lowering of primitive '{prim.name}' returns "
                        f"{got}, but its abstract evaluation says {expected}; the lowered "
                        f"function must compute what the primitive's abstract_eval declares")
    return closed


# ----------------------------------------------------------------------------
# Rules written in MLIR, run by interpreting their hlo ops (see the docstring)
# ----------------------------------------------------------------------------

class _Uninterpreted(Exception):
    """An MLIR rule used an op or ir feature that fungrad does not interpret."""


class LoweringRuleContext:
    """What a lowering rule gets as ``ctx``: the abstract values of the
    equation's inputs and outputs (``ctx.avals_in``, ``ctx.avals_out``)."""

    def __init__(self, avals_in, avals_out, primitive=None, module_context=None):
        self.avals_in = list(avals_in)
        self.avals_out = list(avals_out)
        self.primitive = primitive
        self.platforms = ("cpu",)
        self.module_context = module_context or ModuleContext()

    def replace(self, **changes) -> "LoweringRuleContext":
        fields = dict(avals_in=self.avals_in, avals_out=self.avals_out,
                      primitive=self.primitive)
        fields.update(changes)
        return LoweringRuleContext(**fields)


class ModuleContext:
    """``ctx.module_context``: what a rule may keep alive with the program
    (``add_keepalive``: objects its callbacks need, e.g. the callback itself)."""

    def __init__(self):
        self.keepalives = []
        self.platforms = ("cpu",)

    def add_keepalive(self, keepalive) -> None:
        if keepalive is not None:
            self.keepalives.append(keepalive)


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, sharding=None, ordered: bool = False,
                         returns_token: bool = True, partitioned: bool = False):
    """A call back into Python from the lowered program: ``callback(*arrays)``
    returns a sequence of arrays shaped as ``result_avals``.  On fungrad it is
    a ``pure_callback`` (``io_callback`` when ``has_side_effect``) in the
    staged program.  Returns ``(results, token, keepalive)`` as JAX's does."""
    from fungrad.api import ShapeDtypeStruct
    from fungrad.callback import io_callback, pure_callback
    args = [o.result.value if hasattr(o, "result") else o.value for o in operands]
    shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in result_avals]
    flat_callback = lambda *xs: list(callback(*xs))   # noqa: E731 (a list: the shapes' tree)
    if has_side_effect:
        outs = io_callback(flat_callback, shapes, *args, ordered=ordered)
    else:
        outs = pure_callback(flat_callback, shapes, *args, vmap_method="sequential")
    return [ir.Value(o) for o in outs], token, None


def _interpreted_mlir_rule(prim: core.Primitive, rule: Callable) -> FunLowering:
    """``rule(ctx, *ir_values, **params)`` as a traceable function of arrays."""
    def fun(*args, **params):
        in_avals = [core.get_aval(a) for a in args]
        out_avals = prim.abstract_eval(*in_avals, **params) if prim.abstract_eval else None
        if out_avals is not None and not prim.multiple_results:
            out_avals = [out_avals]
        ctx = LoweringRuleContext(in_avals, out_avals or [], prim)
        try:
            results = rule(ctx, *[ir.Value(a) for a in args], **params)
        except NotImplementedError as e:
            raise _Uninterpreted(str(e)) from e
        except (AttributeError, ImportError) as e:     # a jax.* name fungrad lacks
            if "fungrad is standing in for JAX" not in str(e):
                raise
            raise _Uninterpreted(str(e).split(";")[0]) from e
        if isinstance(results, (ir.Value, HloOp)):
            results = [results]
        return [_unwrap_result(r, prim) for r in results]
    fun.__name__ = getattr(rule, "__name__", "mlir_rule")
    return FunLowering(fun, multiple_results=True)     # (a rule returns a list of results)


def _unwrap_result(result, prim):
    if isinstance(result, HloOp):
        result = result.result
    if isinstance(result, (list, tuple)) and len(result) == 1:     # [value] per output
        result = result[0]
    if not isinstance(result, ir.Value):
        raise TypeError(f"the MLIR lowering rule of primitive '{prim.name}' must return a "
                        f"list of ir.Values (an op's .result), got {type(result).__name__}")
    return result.value


def ir_constant(value) -> ir.Value:
    """A constant of the lowering (``mlir.ir_constant(np.float32(1))``)."""
    import numpy as np
    return ir.Value(np.asarray(value))


def aval_to_ir_type(aval) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(aval.shape, ir.dtype_to_ir_type(aval.dtype))


def dtype_to_ir_type(dtype) -> ir.Type:
    return ir.dtype_to_ir_type(dtype)
