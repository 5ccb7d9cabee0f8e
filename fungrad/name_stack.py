"""Name stacks: the scope names every staged equation records
(``eqn.source_info.name_stack``, as JAX's).

``fungrad.named_scope("layer1")`` (``jax.named_scope``), ``fungrad.named_call``
and the modules of libraries that use them (haiku names every module's
computation this way) push a name for the code they run; each equation
staged meanwhile keeps the stack of names open at that moment, and
``str(eqn.source_info.name_stack)`` is JAX's ``"mlp/linear_0"``.  Tools read
it to attribute a program's operations to the parts of a model
(``hk.experimental.jaxpr_info``), as profiles do.

As in JAX, a ``jit`` starts a fresh stack for the body it traces (the body's
names are relative to the ``jit`` equation, which records the outer ones),
and the equations a transformation derives from another while interpreting
it (the JVP's, the transpose's) keep that equation's names.  JAX also wraps
the derived names in the transformation (``transpose(jvp(mlp))``); fungrad
keeps the plain names.  The names change nothing that is computed.

Imports nothing of fungrad's, so ``core`` can use it.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["NameStack", "SourceInfo", "current", "extend", "reset"]


class _State(threading.local):
    def __init__(self):
        self.names = ()          # the open scopes, outermost first


_state = _State()


def current() -> tuple:
    """The names open now, outermost first (a tuple of str)."""
    return _state.names


@contextlib.contextmanager
def extend(name: str):
    """``with extend("layer1"): ...``: equations staged inside record the name."""
    if not isinstance(name, str):
        raise TypeError(f"a scope name must be a str, got {type(name).__name__}")
    outer = _state.names
    _state.names = outer + (name,)
    try:
        yield
    finally:
        _state.names = outer


@contextlib.contextmanager
def reset():
    """A fresh (empty) stack inside, the outer one restored after (``jit``'s body)."""
    outer = _state.names
    _state.names = ()
    try:
        yield
    finally:
        _state.names = outer


class NameStack:
    """JAX's ``NameStack`` as its readers use it: ``str()`` joins the names with
    ``/``; ``extend`` gives a longer stack; iterable, sized, comparable."""
    __slots__ = ("names",)

    def __init__(self, names: tuple = ()):
        self.names = tuple(names)

    def extend(self, name) -> "NameStack":
        more = tuple(name) if isinstance(name, (tuple, list)) else (name,)
        return NameStack(self.names + more)

    def __str__(self):
        return "/".join(self.names)

    def __repr__(self):
        return f"NameStack({str(self)!r})"

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __bool__(self):
        return bool(self.names)

    def __eq__(self, other):
        return isinstance(other, NameStack) and other.names == self.names

    def __hash__(self):
        return hash(self.names)


class SourceInfo:
    """An equation's ``source_info``: its ``name_stack`` (and ``traceback``,
    None: fungrad records the user's line only while jax_debug_nans/infs is
    on, as ``eqn.source``)."""
    __slots__ = ("name_stack", "traceback")

    def __init__(self, name_stack: NameStack, traceback=None):
        self.name_stack = name_stack
        self.traceback = traceback

    def __repr__(self):
        return f"SourceInfo(name_stack={self.name_stack!r})"
