"""``jax.stages``: the objects of jit's ahead-of-time stages.

``jit(f).lower(*args)`` is a ``Lowered`` (the staged jaxpr and the generated
NumPy source), its ``.compile()`` a ``Compiled``; a ``jit``-wrapped function
is a ``Wrapped``.  Libraries annotate with these names (equinox's
``filter_jit(...).lower``); fungrad has no separate ``Traced`` stage.
"""
from fungrad.jitting import Compiled, Jitted as Wrapped, Lowered

__all__ = ["Lowered", "Compiled", "Wrapped"]
