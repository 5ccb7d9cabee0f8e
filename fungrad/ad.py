"""``jax.ad``: what a vjp's pullback is told per argument by ``with_refs``
(``fungrad.api.VJPFunction``), and what it returns in those places.

* a ``Ref``: the argument's gradient is added into it (``ref[...] += g``);
  the pullback returns ``GradRef()`` there;
* ``GradValue()``: the gradient is returned as a value (the default);
* ``DontWant()``: no gradient; the pullback returns ``DidntWant()`` there
  (fungrad computes it and drops it: the saving JAX makes is not made).
"""
from __future__ import annotations

from fungrad.tree_util import register_pytree_node

__all__ = ["GradValue", "GradRef", "DontWant", "DidntWant"]


class _Marker:
    __slots__ = ()

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self).__name__)

    def __repr__(self):
        return f"{type(self).__name__}()"


class GradValue(_Marker):
    """``with_refs`` entry: return this argument's gradient as a value."""
    __slots__ = ()


class DontWant(_Marker):
    """``with_refs`` entry: this argument's gradient is not wanted."""
    __slots__ = ()


class GradRef(_Marker):
    """In a pullback's result: the gradient went into the Ref given for it."""
    __slots__ = ()


class DidntWant(_Marker):
    """In a pullback's result: the gradient was not wanted (``DontWant``)."""
    __slots__ = ()


# (as JAX's: results are empty pytrees; the with_refs entries are leaves)
for _cls in (GradRef, DidntWant):
    register_pytree_node(_cls, lambda x: ((), None), lambda _, __, cls=_cls: cls())
