"""Mutable array refs and their tracing glue (JAX's ``jax._src.state``): the
``Ref`` class, how a jit or a loop body takes over the Refs it uses while it
is traced (``RefScope``), and the checks of JAX's rules.  The public module is
``fungrad.ref`` (``jax.ref``), whose docstring says what works where; this one
sits below ``lax``'s control flow and ``jit``, which use it.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from fungrad import core

_pyset = set        # (``set`` is ``jax.ref.set`` below)

__all__ = ["AbstractRef", "Ref", "new_ref", "empty_ref", "free_ref", "freeze", "get", "set",
           "swap", "addupdate", "RefScope", "JitRefs"]


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
    """A mutable array reference (made by ``new_ref``).

    ``_owner`` is the trace whose values may be written into it (the one it
    was made in, or the jit/scan body that holds it for now; see ``RefScope``),
    ``_created`` the trace it was made in (None for the stand-ins of Ref
    arguments): ``freeze`` works only there."""
    __slots__ = ("_value", "_freed", "_owner", "_created", "_first", "__weakref__")

    def __init__(self, value, owner=None, created=None):
        self._value = self._first = value     # (_first: has a stand-in been written?)
        self._freed = False
        self._owner = owner
        self._created = created

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
        """The value, as the innermost jit or loop body being traced sees it
        (adopted by it on first use: ``RefScope.adopt``)."""
        scopes = _scopes.stack
        if scopes and self not in scopes[-1].known:
            scopes[-1].adopt(self)
        return self._current()

    def _current(self):
        """The value held (not freed, not a finished transformation's)."""
        if self._freed:
            raise ValueError("this Ref was freed with free_ref: it holds no value any more")
        value = self._value
        if isinstance(value, core.Tracer) and not value._trace.active:
            raise core.UnexpectedTracerError(
                "this Ref holds a value of a transformation that has finished: a Ref "
                f"made inside a {value._trace.kind} transformation (started at "
                f"{value._trace.origin}) lives only there. Return its value (ref[...]) "
                "from the transformed function instead.")
        return value


core.pytype_aval_mappings[Ref] = lambda ref: ref.aval


def _whole(idx) -> bool:
    """``ref[...]`` / ``ref[()]``: the whole value (never compares arrays)."""
    return idx is Ellipsis or (type(idx) is tuple and (
        len(idx) == 0 or len(idx) == 1 and idx[0] is Ellipsis))


# ----------------------------------------------------------------------------
# Refs under transformations
# ----------------------------------------------------------------------------
# A Ref always holds its current value, which under a transformation may be a
# tracer: reads index it, writes replace it (``.at[idx].set``), so code whose
# Refs are its own is ordinary traced code, and grad, vmap and jit need nothing
# more for it.  A Ref from outside a traced region is taken over by the
# innermost jit or loop body being traced on its first use there (a
# ``RefScope``): jit makes its value an input of the program (and its final
# value, when written, an output written back after each call); a loop body
# threads it through the carry.  Elsewhere (vmap, grad, cond branches,
# make_jaxpr) a Ref from outside may be read, and written only with values
# that exist outside that transformation (``store``): that is JAX's rule (a
# batched write into a closed-over Ref, or a differentiated value written into
# a plumbing Ref, is an error), and keeps tracers from escaping.

class _ScopeStack(threading.local):
    def __init__(self):
        self.stack: list = []


_scopes = _ScopeStack()


class RefScope:
    """``with RefScope(label, lift=...)`` around the Python function a jit or a
    loop body is traced from (entered inside its trace).  Refs made outside it
    are adopted on first use (``adopt``): their value and owner are saved, the
    owner becomes this trace, and with ``lift`` (jit) the value becomes a new
    input of the trace (``lifted``).  On exit every adopted Ref gets back what
    was saved: the caller (jit's call, the loop) writes the new values."""
    __slots__ = ("label", "lift", "trace", "parent", "known", "saved", "lifted", "seeded",
                 "arg_originals")

    def __init__(self, label: str, lift: bool = False):
        self.label, self.lift = label, lift
        self.known = _pyset()
        self.saved: dict = {}
        self.lifted: list = []            # (ref, the input tracer standing for its value)
        self.seeded: list = []            # refs threaded through a loop carry (``seed``)
        self.arg_originals = ()           # Refs passed as arguments (jit's stand-ins)

    def __enter__(self):
        stack = _scopes.stack
        self.parent = stack[-1] if stack else None
        self.trace = core.current_trace()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _scopes.stack.pop()
        for ref, (value, owner) in self.saved.items():
            ref._value, ref._owner = value, owner
        return False

    def adopt(self, ref: Ref) -> None:
        if any(ref is r for r in self.arg_originals):
            raise ValueError(
                f"{self.label}: a Ref is passed as an argument and also closed over (used "
                "from the enclosing scope): JAX refuses this aliasing too. Use the argument "
                "only, or close over it only.")
        parent = self.parent
        if parent is not None and ref not in parent.known:
            parent.adopt(ref)
        self.known.add(ref)
        self.saved[ref] = (ref._value, ref._owner)
        if self.lift:
            value = ref._current()
            tracer = self.trace.new_arg(_value_aval(value))
            self.lifted.append((ref, tracer))
            ref._value = tracer
        ref._owner = self.trace

    def adopted(self) -> list:
        """The Refs from outside used here (not those threaded by ``seed``)."""
        return [r for r in self.saved if not any(r is s for s in self.seeded)]

    def seed(self, refs, values) -> None:
        """Loop bodies: ``refs`` hold ``values`` (the carry's) while traced."""
        for ref, value in zip(refs, values):
            if ref not in self.known:
                self.adopt(ref)
            self.seeded.append(ref)
            ref._value = value

    def stand_in(self, value) -> Ref:
        """A Ref of this trace standing for a Ref argument (holding ``value``)."""
        return stand_in(value, self.trace)


def stand_in(value, trace) -> Ref:
    """A Ref standing for a Ref argument of the transformation ``trace`` (jit,
    vmap) while it is traced: it holds ``value``, a tracer of ``trace``; its
    final value is written into the Ref passed (``store``), and its ``_first``
    tells whether it was written."""
    ref = Ref(value, owner=trace, created=None)
    scopes = _scopes.stack
    if scopes:                         # the innermost scope's own, not something to adopt
        scopes[-1].known.add(ref)
    return ref


def _value_aval(value):
    return value.aval if isinstance(value, core.Tracer) else core.get_aval(value)


def store(ref: Ref, value) -> None:
    """``ref`` holds ``value`` now, if its owner may see it (JAX's rules)."""
    owner = ref._owner
    if owner is not None and not owner.active:
        raise core.UnexpectedTracerError(
            f"writing a Ref that belongs to a transformation that has finished "
            f"({owner.label()}, started at {owner.origin}): a Ref made inside jit, grad or "
            "vmap, or the stand-in a jitted function sees for a Ref argument, can't be "
            "written after it (as by a custom_vjp bwd that grad of a jitted function runs "
            "later: apply jit outside grad instead, jit(grad(f))).")
    if isinstance(value, core.Tracer):
        trace = value._trace
        if not trace.active:
            raise core.UnexpectedTracerError(core.escaped_message(value))
        if not _visible_from(trace, ref._owner):
            raise _foreign_write_error(trace)
    ref._value = value


def _visible_from(trace, owner) -> bool:
    """Is ``trace`` ``owner`` or one it runs inside (so its values exist there)?"""
    main = trace.main
    while owner is not None:
        if owner.main is main:
            return True
        owner = owner.parent
    return False


def _foreign_write_error(trace) -> Exception:
    kind, label = trace.kind, trace.label()
    if kind == "vmap":
        return ValueError(
            "vmap of a function that writes a batched value into a Ref it closes over (a "
            "Ref made outside the vmapped function): JAX refuses this too, since the Ref "
            "would have to hold one value per batch element. Pass the Ref as an argument "
            "mapped by in_axes, or return the values.")
    if kind in ("jvp", "grad") or label == "linearize":
        return ValueError(
            f"writing a value that depends on a differentiated input ({label}) into a Ref "
            "made outside the differentiated function (a plumbing Ref): JAX refuses this "
            "too. Write jax.lax.stop_gradient(value), or return the value.")
    return NotImplementedError(
        f"writing a value traced by {label} into a Ref made outside it: fungrad threads "
        "Refs through jit and through scan/fori_loop/while_loop bodies; elsewhere (cond "
        "branches, checkpoint, custom_jvp rules, a custom_vjp's function) return the value "
        "and write it to the Ref outside.")


def check_no_refs(leaves, where: str) -> None:
    """JAX's rule: a Ref may not leave a jitted function or a loop body."""
    for i, x in enumerate(leaves):
        if type(x) is Ref:
            raise TypeError(f"{where}: output {i} is a Ref, and Refs can't be returned from "
                            "jit-compiled functions or loop bodies (JAX's rule). Return its "
                            "value (ref[...]) instead.")


class JitRefs:
    """How one compiled signature of a jitted function meets its Refs: the Ref
    arguments (``arg_positions`` among the flat arguments) and the Refs it
    closes over (``closed``, found while tracing) enter as their current values
    (in that order, after the arguments); those written (``arg_written``
    positions, ``closed_written``) leave as outputs after the function's
    ``n_user`` outputs, and are written back into the Refs."""
    __slots__ = ("where", "arg_positions", "arg_written", "closed", "closed_written", "n_user")

    def input_values(self, leaves) -> list:
        values = list(leaves)
        if self.arg_positions:
            _check_distinct([leaves[i] for i in self.arg_positions] + self.closed, self.where)
            for i in self.arg_positions:
                values[i] = leaves[i]._contents()
        return values + [ref._contents() for ref in self.closed]

    def write_back(self, leaves, new_values) -> None:
        targets = [leaves[i] for i in self.arg_written] + self.closed_written
        for ref, value in zip(targets, new_values):
            store(ref, value)

    def call(self, bind, leaves, out_tree):
        """A call through ``bind`` (the flat values -> the program's outputs)."""
        from fungrad.tree_util import tree_unflatten
        outs = bind(self.input_values(leaves))
        self.write_back(leaves, outs[self.n_user:])
        return tree_unflatten(out_tree, list(outs[:self.n_user]))


def _check_distinct(refs, where: str) -> None:
    if len({id(r) for r in refs}) != len(refs):
        raise ValueError(f"{where}: the same Ref is passed more than once (as two arguments, "
                         "or as an argument it also closes over): JAX refuses this aliasing "
                         "too. Pass each Ref once.")


def ref_positions(leaves, where: str) -> list:
    """Where the Refs are among a jitted call's flat arguments (each once)."""
    positions = [i for i, x in enumerate(leaves) if type(x) is Ref]
    _check_distinct([leaves[i] for i in positions], where)
    return positions


class JitRefScope(RefScope):
    """The ``RefScope`` of a jitted function being traced: Ref arguments become
    stand-ins (``arguments``), Refs it closes over inputs (``lift``); ``finish``
    returns the written values (extra outputs) and sets ``plumbing``."""
    __slots__ = ("positions", "stand_ins", "plumbing")

    def __init__(self, label: str, leaves, positions):
        super().__init__(label, lift=True)
        self.positions = positions
        self.arg_originals = tuple(leaves[i] for i in positions)
        self.stand_ins: list = []
        self.plumbing = None

    def arguments(self, xs) -> list:
        xs = list(xs)
        for i in self.positions:
            xs[i] = self.stand_in(xs[i])
            self.stand_ins.append((i, xs[i]))
        return xs

    def finish(self, n_user: int) -> list:
        written = [(i, ref._value) for i, ref in self.stand_ins if ref._value is not ref._first]
        closed_written = [(ref, ref._value) for ref, first in self.lifted
                          if ref._value is not first]
        if self.lifted or self.stand_ins:
            plumbing = self.plumbing = JitRefs()
            plumbing.where, plumbing.n_user = self.label, n_user
            plumbing.arg_positions = list(self.positions)
            plumbing.arg_written = [i for i, _ in written]
            plumbing.closed = [ref for ref, _ in self.lifted]
            plumbing.closed_written = [ref for ref, _ in closed_written]
        return [v for _, v in written] + [v for _, v in closed_written]


def discovering(fn, found: list, label: str):
    """``fn`` traced as a loop body: in a ``RefScope`` of its trace, appending to
    ``found`` the Refs from outside it uses (then the loop threads them through
    its carry: ``scan_with_refs``, ``while_with_refs``)."""
    from fungrad.tree_util import tree_leaves

    def body(*args):
        with RefScope(label) as scope:
            out = fn(*args)
            check_no_refs(tree_leaves(out), label)
        found.extend(r for r in scope.adopted() if not any(r is f for f in found))
        return out
    return body


def _seeded(refs, values):
    """In a loop body being traced: ``refs`` hold the carry's ``values``."""
    _scopes.stack[-1].seed(refs, values)


def scan_with_refs(scan, f, init, xs, refs, **kwargs):
    """``scan(f, init, xs)`` whose body uses ``refs`` (made outside it): their
    values ride in the carry, read before the loop and written after it."""
    def threaded(carry, x):
        inner, values = carry
        _seeded(refs, values)
        new_inner, y = f(inner, x)
        return (new_inner, [ref._contents() for ref in refs]), y
    (carry, values), ys = scan(threaded, (init, [ref._contents() for ref in refs]), xs,
                               **kwargs)
    for ref, value in zip(refs, values):
        store(ref, value)
    return carry, ys


def while_with_refs(while_loop, cond_fun, body_fun, init, refs):
    """``while_loop`` whose functions use ``refs``: as ``scan_with_refs``."""
    def cond(carry):
        _seeded(refs, carry[1])
        pred = cond_fun(carry[0])
        if any(ref._value is not v for ref, v in zip(refs, carry[1])):
            raise NotImplementedError("while_loop: cond_fun writes a Ref; write it in "
                                      "body_fun instead")
        return pred

    def body(carry):
        _seeded(refs, carry[1])
        new = body_fun(carry[0])
        return new, [ref._contents() for ref in refs]
    out, values = while_loop(cond, body, (init, [ref._contents() for ref in refs]))
    for ref, value in zip(refs, values):
        store(ref, value)
    return out


def values_of(leaves) -> list:
    """``leaves`` with each Ref replaced by its value."""
    return [x._contents() if type(x) is Ref else x for x in leaves]


def new_ref(init_val, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A new mutable array reference holding ``init_val`` (``jax.new_ref``)."""
    if isinstance(init_val, core.Tracer) and not init_val._trace.active:
        raise core.UnexpectedTracerError(core.escaped_message(init_val))
    if isinstance(init_val, Ref):
        raise TypeError("jax.new_ref of a Ref: refs to refs are not allowed (JAX's rule); "
                        "pass its value, ref[...]")
    value = init_val if _is_extended_array(init_val) else _as_array(init_val)
    trace = core.current_trace()
    ref = Ref(value, owner=trace, created=trace)
    scopes = _scopes.stack
    if scopes:                         # made here: none of the scope's business
        scopes[-1].known.add(ref)
    return ref


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A ref of type ``ty`` (anything with ``shape`` and ``dtype``) whose
    contents are unspecified until written (JAX's; here they are zeros)."""
    dtype = core.canonicalize_dtype(np.dtype(ty.dtype))
    return new_ref(core.wrap_array(np.zeros(ty.shape, dtype)), memory_space=memory_space)


def free_ref(ref: Ref) -> None:
    """End ``ref``'s life: any later use raises."""
    ref._contents()
    ref._freed = True
    ref._value = None


def freeze(ref: Ref):
    """The final value of ``ref`` (``jax.freeze``), in the transformation that
    made it only (JAX's rule)."""
    ref = _as_ref(ref, "freeze")
    value = ref._contents()
    here = core.current_trace()
    if ref._created is not here and not (isinstance(here, core.EvalTrace)
                                         and isinstance(ref._created, core.EvalTrace)):
        raise ValueError(f"jax.freeze: a Ref can only be frozen where it was made (JAX's "
                         f"rule); this one was passed into or closed over by {here.label()}. "
                         "Read its value with ref[...] instead.")
    return value


def get(ref: Ref, idx=()):
    """``ref[idx]`` (``jax.ref.get``)."""
    return _as_ref(ref, "get")[idx]


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``ref[idx]`` and return what was there (``jax.ref.swap``)."""
    current = _as_ref(ref, "swap")._contents()
    old = current if _whole(idx) else current[idx]
    new = _checked_value(old, value)
    if _whole(idx):
        store(ref, new)
    elif _is_extended_array(old):
        raise NotImplementedError("an indexed write into a Ref of typed PRNG keys: write "
                                  "the whole Ref (ref[...] = keys)")
    else:
        store(ref, current.at[idx].set(new))
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
        value = core.wrap_array(np.asarray(value, dtype=old.dtype))
    if not _is_extended_array(value):
        value = _as_array(value)
    if value.shape != old.shape:
        raise ValueError(f"Invalid shape for a Ref write: the indexed Ref has shape "
                         f"{old.shape}, the value {value.shape} (no broadcasting)")
    if value.dtype != old.dtype:
        raise ValueError(f"Invalid dtype for a Ref write: Ref dtype {old.dtype}, value "
                         f"dtype {value.dtype}")
    return _with_weak_type(value, getattr(old, "weak_type", False))


def _as_array(x):
    """``x`` as a value a Ref holds (``jnp.asarray``'s): tracers and Arrays as
    they are, a Python number weakly typed, anything else a read-only copy (a
    NumPy array the caller may change later is not shared) of the canonical
    dtype (32-bit without jax_enable_x64)."""
    if isinstance(x, core.Tracer) or type(x) is core.Array:
        return x
    if type(x) in (int, float, complex):
        return core.weak_array(x, core.scalar_dtype(x))
    arr = np.array(x)
    if arr.dtype.kind in "OUSV":
        raise TypeError(f"a Ref holds arrays of numbers, not {type(x).__name__} {x!r:.60}")
    dtype = core.canonicalize_dtype(arr.dtype)
    return core.wrap_array(arr if arr.dtype == dtype else arr.astype(dtype))


def _with_weak_type(value, weak: bool):
    """``value`` weakly typed as the Ref it goes into: a Ref's type is fixed
    when it is made (as JAX's, whose reads of ``new_ref(0.)`` are weak whatever
    was written), so a jitted function traced for it stays right."""
    if getattr(value, "weak_type", False) == weak:
        return value
    if isinstance(value, core.Tracer):
        from fungrad.lax.selection import convert_weak_type
        return convert_weak_type(value, value.dtype, weak)
    return core.with_weak_type(value, weak)
