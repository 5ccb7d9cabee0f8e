"""``fungrad.ref``: mutable array references (``jax.ref``; also ``jax.new_ref``,
``jax.Ref``, ``jax.freeze``).

A ``Ref`` holds an array that can be replaced in place::

    r = fungrad.new_ref(jnp.arange(5.0))
    r[1:3] = jnp.array([7.0, 8.0])      # ref[idx] = value
    r[...]                               # read: Array([0., 7., 8., 3., 4.])
    fungrad.freeze(r)                    # its final value

As in JAX, a write must give the value the exact shape and dtype of what it
replaces (a Python scalar takes the ref's dtype); no broadcasting.

Refs work eagerly.  Under a transformation (``jit``, ``grad``, ``vmap``,
``make_jaxpr``, control flow) creating, reading or writing a ref raises
``NotImplementedError`` naming the transformation: fungrad's interpreters
have no effects to thread a mutable buffer through a traced program yet, and
reading one as a constant would silently freeze it into compiled code.
There, pass the array as an argument and return the new value (functional
state), which is what flax.nnx does by default (refs off).
"""
from __future__ import annotations

from typing import Any

from fungrad import core
from fungrad import numpy as jnp

__all__ = ["AbstractRef", "Ref", "new_ref", "empty_ref", "free_ref", "freeze", "get", "set",
           "swap", "addupdate"]


class AbstractRef(core.AbstractValue):
    """The type of a ``Ref``: the type of the array it holds (``inner_aval``)."""
    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval: core.ShapedArray, memory_space: Any = None, kind: Any = None):
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)
    weak_type = property(lambda self: self.inner_aval.weak_type)

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))

    def __repr__(self):  # JAX's form: Ref{float64[5]}
        return f"Ref{{{self.inner_aval.str_short()}}}"

    str_short = __repr__


class Ref:
    """A mutable array reference (made by ``new_ref``)."""
    __slots__ = ("_value", "_freed", "__weakref__")

    def __init__(self, value):
        self._value = value
        self._freed = False

    aval = property(lambda self: AbstractRef(core.typeof(self._contents())))
    shape = property(lambda self: self._contents().shape)
    dtype = property(lambda self: self._contents().dtype)
    ndim = property(lambda self: self._contents().ndim)
    size = property(lambda self: self._contents().size)

    def __getitem__(self, idx):
        value = self._contents()
        return value if _whole(idx) else value[idx]

    def __setitem__(self, idx, value):
        set(self, idx, value)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d Ref)")
        return self.shape[0]

    def addupdate(self, x, idx=()):
        addupdate(self, idx, x)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a Ref is not an array: read its value with ref[...] "
                        "(or fungrad.freeze(ref)) first")

    def __repr__(self):
        if self._freed:
            return "Ref(<freed>)"
        text = repr(self._value)
        return "Ref" + text[len("Array"):] if text.startswith("Array(") else f"Ref({text})"

    def _contents(self):
        _check_eager("reading or writing a Ref")
        if self._freed:
            raise ValueError("this Ref was freed with free_ref: it holds no value any more")
        return self._value


core.pytype_aval_mappings[Ref] = lambda ref: ref.aval


def _whole(idx) -> bool:
    """``ref[...]`` / ``ref[()]``: the whole value (never compares arrays)."""
    return idx is Ellipsis or (type(idx) is tuple and (idx == () or idx == (Ellipsis,)))


def _under_transformation() -> str | None:
    """The kind of the innermost transformation being traced, or None eagerly."""
    trace = core.current_trace()
    return None if isinstance(trace, core.EvalTrace) else trace.label()


def _check_eager(what: str) -> None:
    kind = _under_transformation()
    if kind is not None:
        raise NotImplementedError(
            f"{what} under a transformation ({kind}): fungrad supports mutable array "
            "refs (jax.new_ref / jax.Ref) eagerly only. Inside jit, grad, vmap, scan... "
            "pass the array as an argument and return its new value instead "
            "(for flax.nnx: keep refs off, its default).")


def new_ref(init_val, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A new mutable array reference holding ``init_val`` (``jax.new_ref``)."""
    _check_eager("jax.new_ref")
    if isinstance(init_val, core.Tracer):     # (a tracer of a finished transformation)
        raise core.UnexpectedTracerError(core.escaped_message(init_val))
    if _is_extended_array(init_val):            # typed PRNG keys: kept as they are
        return Ref(init_val)
    return Ref(jnp.asarray(init_val))


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A ref of type ``ty`` (anything with ``shape`` and ``dtype``) whose
    contents are unspecified until written (JAX's; here they are zeros)."""
    return new_ref(jnp.zeros(ty.shape, ty.dtype), memory_space=memory_space)


def free_ref(ref: Ref) -> None:
    """End ``ref``'s life: any later use raises."""
    ref._contents()
    ref._freed = True
    ref._value = None


def freeze(ref: Ref):
    """The final value of ``ref`` (``jax.freeze``)."""
    return _as_ref(ref, "freeze")._contents()


def get(ref: Ref, idx=()):
    """``ref[idx]`` (``jax.ref.get``)."""
    return _as_ref(ref, "get")[idx]


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``ref[idx]`` and return what was there (``jax.ref.swap``)."""
    old = get(ref, idx)
    new = _checked_value(old, value)
    if _whole(idx):
        ref._value = new
    elif _is_extended_array(old):
        raise NotImplementedError("an indexed write into a Ref of typed PRNG keys: write "
                                  "the whole Ref (ref[...] = keys)")
    else:
        ref._value = ref._contents().at[idx].set(new)
    return old


def set(ref: Ref, idx, value) -> None:
    """``ref[idx] = value`` (``jax.ref.set``)."""
    swap(ref, idx, value)


def addupdate(ref: Ref, idx, x) -> None:
    """``ref[idx] += x`` (``jax.ref.addupdate``)."""
    set(ref, idx, get(ref, idx) + _checked_value(get(ref, idx), x))


def _as_ref(ref, what: str) -> Ref:
    if not isinstance(ref, Ref):
        raise TypeError(f"jax.ref.{what} takes a Ref (made by jax.new_ref), got "
                        f"{type(ref).__name__}")
    return ref


def _is_extended_array(x) -> bool:
    """An array whose dtype is not NumPy's (typed PRNG keys): held as it is."""
    return type(x) in core.pytype_aval_mappings and isinstance(core.typeof(x), core.ShapedArray)


def _checked_value(old, value):
    """``value`` as an array of ``old``'s shape and dtype; JAX's errors otherwise."""
    if isinstance(value, (bool, int, float, complex)):      # weakly typed: takes the dtype
        value = jnp.asarray(value, dtype=old.dtype)
    if not _is_extended_array(value):
        value = jnp.asarray(value)
    if value.shape != old.shape:
        raise ValueError(f"Invalid shape for a Ref write: the indexed Ref has shape "
                         f"{old.shape}, the value {value.shape} (no broadcasting)")
    if value.dtype != old.dtype:
        raise ValueError(f"Invalid dtype for a Ref write: Ref dtype {old.dtype}, value "
                         f"dtype {value.dtype}")
    return value
