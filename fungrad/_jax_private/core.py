"""``jax._src.core``: imported by flax (``flax.linen.fp8_ops`` builds its fp8
meta dtype's rules on ``core.ShapedArray`` when ``flax.linen`` is imported)
and by blackjax (``core.trace_state_clean``).

Everything here is fungrad's own core object under JAX's private name; the
one function of JAX's private core not in fungrad's public modules is
``trace_state_clean``.
"""
from __future__ import annotations

from fungrad.core import (AbstractValue, ClosedJaxpr, ConcretizationTypeError, Jaxpr, JaxprEqn,
                          Literal, Primitive, ShapedArray, Trace, Tracer, Var, concrete_or_error,
                          current_trace, eval_jaxpr, get_aval, typeof, EVAL_TRACE)
from fungrad.extend.core import OpaqueTraceState, get_opaque_trace_state

__all__ = ["AbstractValue", "ClosedJaxpr", "ConcretizationTypeError", "Jaxpr", "JaxprEqn",
           "Literal", "Primitive", "ShapedArray", "Trace", "Tracer", "Var", "concrete_or_error",
           "eval_jaxpr", "get_aval", "typeof", "OpaqueTraceState", "get_opaque_trace_state",
           "trace_state_clean"]


def trace_state_clean() -> bool:
    """True outside every transformation (no jit, grad, vmap ... is tracing)."""
    return current_trace() is EVAL_TRACE
