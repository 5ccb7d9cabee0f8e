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

A rule written directly in MLIR (``rule(ctx, *values, **params)`` emitting
``hlo`` operations) cannot run on NumPy; it is accepted, and ``jit`` then
lowers the primitive to a call of its impl, which computes the same values
(and is what JAX's own impl of such primitives dispatches to).

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

from typing import Callable

from fungrad import core
from fungrad.interpreters.partial_eval import trace_to_jaxpr, closure_convert

__all__ = ["register_lowering", "lower_fun"]

#: JAX's known platforms (``xla_bridge.known_platforms()`` on a CPU install)
KNOWN_PLATFORMS = ("cpu", "cuda", "gpu", "oneapi", "rocm", "tpu")

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
        prim.emit_block = _inlining_emitter(prim, rule)
    else:
        mlir_rules[prim] = rule
        if getattr(prim.emit_block, "lowers_fun", False):
            prim.emit_block = None      # back to fungrad's own lowering (the impl call)


def _inlining_emitter(prim: core.Primitive, rule: FunLowering) -> Callable:
    """A codegen ``emit_block`` rule: trace ``rule.fun`` at the equation's
    input types and params, and emit its jaxpr in place."""
    def emit(block, eqn, args, out_names):
        closed = _trace_rule(prim, rule, eqn)
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
