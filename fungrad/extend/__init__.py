"""``fungrad.extend``: the public extension API (``jax.extend``).

``fungrad.extend.core`` exports the IR (``Jaxpr``, ``ClosedJaxpr``,
``JaxprEqn``, ``Var``, ``Literal``, ``jaxpr_as_fun``, ``new_jaxpr_eqn``) and
``Primitive``/``define_primitive`` for primitives of your own, with every rule
(impl, abstract eval, JVP, transpose, batching, NumPy lowering).  Every
built-in primitive is ``fungrad.lax.<name>_p``.
"""
from fungrad.extend import core  # noqa: F401
from fungrad.extend.core import define_primitive  # noqa: F401

__all__ = ["core", "define_primitive"]
