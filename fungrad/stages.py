"""``jax.stages``: the objects of jit's ahead-of-time stages.

``jit(f).trace(*args)`` is a ``Traced`` (the staged jaxpr), its ``.lower()``
(or ``jit(f).lower(*args)``) a ``Lowered`` (the jaxpr and the generated NumPy
source), whose ``.compile()`` is a ``Compiled``; a ``jit``-wrapped function is
a ``Wrapped``; ``ArgInfo`` describes one argument.  Libraries annotate with
these names (equinox's ``filter_jit(...).lower``).
"""
from fungrad._jit_stages import ArgInfo, Compiled, Lowered, Traced
from fungrad.jitting import Jitted as Wrapped

__all__ = ["Traced", "Lowered", "Compiled", "Wrapped", "ArgInfo"]
