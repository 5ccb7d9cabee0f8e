"""Loop nests for the compiled backend (``numba_backend``): consecutive
elementwise equations, with NumPy broadcasting between their operands, and
the reductions of their values, as one nest of loops over an iteration shape.

Every value of a nest lives in that shape's index space: ``dims[v]`` gives,
for each axis of ``v``, the loop (axis of the iteration shape) that indexes
it, or None for an axis of size 1 (indexed by 0).  So an operand of shape
``(8, 4, 64, 1)`` in a loop over ``(8, 4, 64, 64)`` is read as
``b[i0, i1, i2, 0]`` -- in place, whatever its strides, with no
broadcast copy -- and a value is computed as a scalar local at the depth of
the innermost loop it depends on (a layer norm's ``sqrt(var + eps)`` once
per row, not once per element).

Reductions over the trailing axes ``p..n-1`` (softmax's max and sum, layer
norm's mean and variance, a loss's total) accumulate in registers: the outer
loops run over axes ``0..p-1`` and, inside them, one inner loop over the
trailing axes per *phase*; a value that needs a reduction's result is
computed in a later phase (rows stay in the cache between phases), and an
inner value read in a later phase is kept in an array.  Reductions over
other axes (bias gradients) accumulate into their result array and end the
nest for their readers.

What fuses is data on the primitives: ufuncs and ``numba_elementwise`` rules
(through ``numba_backend`` scalar forms), ``numba_axis_map`` (reshapes and
broadcasts that only move, add or drop size-1 axes: a read through another
index) and ``numba_reduction`` (an accumulator's identity and update).
"""
from __future__ import annotations

from fungrad._dtype_classes import is_floating
from fungrad.core import Literal, ShapedArray, Var

__all__ = ["plan_nest", "emit_nest", "Nest"]


class Nest:
    """The plan of one loop nest: its equations and their roles, the index
    map of every value and where each is computed (see module doc)."""

    def __init__(self, shape):
        self.shape, self.n = tuple(int(d) for d in shape), len(shape)
        self.p = None                 # outer depth, set by the first register reduction
        # (eqn, role, its operands' index maps); role: "map", "view", "reduce", "accumulate"
        self.items = []
        self.dims = {}                # a value of the nest -> its index map
        self.accumulated = set()      # results of accumulate: complete after the nest only

    def depth(self) -> int:
        return self.n if self.p is None else self.p

    def right_aligned(self, shape):
        """The index map of a value of ``shape`` broadcast NumPy's way against
        the iteration shape, or None if it does not broadcast to it."""
        r = len(shape)
        if r > self.n:
            return None
        dims = []
        for j, d in enumerate(shape):
            k = self.n - r + j
            if d == 1:
                dims.append(None)
            elif d == self.shape[k]:
                dims.append(k)
            else:
                return None
        return tuple(dims)


def _operand_dims(shape, out_dims):
    """An operand's index map, broadcast NumPy's way (right-aligned) into an
    output with index map ``out_dims``."""
    offset = len(out_dims) - len(shape)
    return tuple(None if d == 1 else out_dims[offset + j] for j, d in enumerate(shape))


def _consistent(nest, operands, dims_of) -> bool:
    """Operands of the nest must be indexed the way the equation reads them."""
    for v, dims in zip(operands, dims_of):
        if dims is None or any(d is not None and nest.shape[d] != s
                               for d, s in zip(dims, v.aval.shape)):
            return False
        if isinstance(v, Var) and v in nest.dims and nest.dims[v] != dims:
            return False
    return True


def _map_out_dims(nest, eqn):
    """The index map of an elementwise equation's result (that of an operand
    of the nest of the same shape, else broadcast against the iteration shape)."""
    shape = eqn.outvars[0].aval.shape
    for a in eqn.inputs:
        if isinstance(a, Var) and a in nest.dims and a.aval.shape == shape:
            return nest.dims[a]
    return nest.right_aligned(shape)


def _view_out_dims(nest, eqn, axis_map):
    """A view's result: the axes it takes from its operand keep their loops;
    new axes (a broadcast's) are broadcast against the iteration shape."""
    x, out_shape = eqn.inputs[0], eqn.outvars[0].aval.shape
    default = nest.right_aligned(out_shape)
    dims = [None if default is None else default[k] for k in range(len(out_shape))]
    if isinstance(x, Var) and x in nest.dims:
        for j, k in enumerate(axis_map):
            if k is not None and x.aval.shape[j] != 1:
                dims[k] = nest.dims[x][j]
    loops = [d for d in dims if d is not None]
    if len(set(loops)) != len(loops) or any(d is None and s != 1 for d, s in zip(dims, out_shape)):
        return None        # (a broadcast axis would take a loop its operand's axis takes)
    return tuple(dims)


def _reduction_role(nest, eqn):
    """"reduce" (in registers, over trailing axes), "accumulate" (into the
    result array) or None for a reduction equation that cannot join."""
    rule = getattr(eqn.primitive, "numba_reduction", None)
    (x,), out = eqn.inputs, eqn.outvars[0]
    axes = tuple(sorted(int(a) for a in eqn.params.get("axes", ())))
    if (rule is None or not axes or not isinstance(x, Var) or not is_floating(x.aval.dtype)
            or out.aval.dtype != x.aval.dtype or tuple(x.aval.shape) != nest.shape):
        return None
    if nest.dims.get(x, tuple(range(nest.n))) != tuple(range(nest.n)):
        return None
    trailing = nest.n - len(axes)
    if axes == tuple(range(trailing, nest.n)) and nest.p in (None, trailing):
        return "reduce"
    return "accumulate" if trailing > 0 else None     # (into an array of at least one axis)


def _join(nest, eqn, fusable) -> bool:
    """Add ``eqn`` to ``nest`` if it fits (``fusable(eqn, elementwise)``: it
    compiles, with a scalar form if elementwise)."""
    if len(eqn.outvars) != 1 or any(isinstance(a, Var) and a in nest.accumulated
                                    for a in eqn.inputs):
        return False
    out = eqn.outvars[0]
    prim = eqn.primitive
    axis_map = None
    if getattr(prim, "numba_axis_map", None) is not None and len(eqn.inputs) == 1:
        axis_map = prim.numba_axis_map(eqn.inputs[0].aval, out.aval, **eqn.params)
    if axis_map is not None:
        if not fusable(eqn, False):
            return False
        dims = _view_out_dims(nest, eqn, axis_map)
        x = eqn.inputs[0]
        if dims is None:
            return False
        in_dims = tuple(None if x.aval.shape[j] == 1 else dims[k] for j, k in enumerate(axis_map))
        if not _consistent(nest, [x], [in_dims]):
            return False
        nest.items.append((eqn, "view", [in_dims]))
        nest.dims[out] = dims
        return True
    role = _reduction_role(nest, eqn) if getattr(prim, "numba_reduction", None) else None
    if role is not None:
        if not fusable(eqn, False):
            return False
        if role == "reduce":
            nest.p = nest.n - len(eqn.params["axes"])
            nest.dims[out] = tuple(range(nest.p))
        else:
            kept = [d for d in range(nest.n) if d not in eqn.params["axes"]]
            nest.dims[out] = tuple(kept)
            nest.accumulated.add(out)
        nest.items.append((eqn, role, [tuple(range(nest.n))]))
        return True
    if not fusable(eqn, True):
        return False
    dims = _map_out_dims(nest, eqn)
    if dims is None:
        return False
    in_dims = [_operand_dims(a.aval.shape, dims) for a in eqn.inputs]
    arrays = [(a, d) for a, d in zip(eqn.inputs, in_dims)
              if isinstance(a, Var) and a.aval.shape != ()]
    if not _consistent(nest, [a for a, _ in arrays], [d for _, d in arrays]):
        return False
    nest.items.append((eqn, "map", in_dims))
    nest.dims[out] = dims
    return True


def _starts(eqn, fusable):
    """The iteration shape of a nest that starts with ``eqn``, or None."""
    out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
    if out is None:
        return None
    if getattr(eqn.primitive, "numba_reduction", None) is not None:
        x = eqn.inputs[0]
        return x.aval.shape if isinstance(x, Var) and x.aval.shape != () else None
    if out.aval.shape == () or not (getattr(eqn.primitive, "numba_axis_map", None) is not None
                                    or fusable(eqn, True)):
        return None
    return out.aval.shape


def _grows(shape, eqn):
    """The larger iteration shape ``eqn``'s result needs, if ``shape``
    broadcasts into it (a nest started on a row's values, a loop over rows)."""
    if len(eqn.outvars) != 1:
        return None
    bigger = tuple(eqn.outvars[0].aval.shape)
    if len(bigger) < len(shape) or bigger == tuple(shape):
        return None
    tail = bigger[len(bigger) - len(shape):]
    return bigger if all(s in (1, b) for s, b in zip(shape, tail)) else None


def plan_nest(eqns, start: int, fusable):
    """The longest nest of ``eqns[start:]`` (and the index after it), or None
    when ``eqns[start]`` starts none worth emitting (views alone are cheaper
    as NumPy views)."""
    shape = _starts(eqns[start], fusable)
    best = None
    for _ in range(4):               # (a few times larger shapes: then give up)
        if shape is None:
            break
        nest = Nest(shape)
        end = start
        while end < len(eqns) and _join(nest, eqns[end], fusable):
            end += 1
        if end > start and any(role != "view" for _, role, _ in nest.items) and (
                best is None or end > best[1]):
            best = nest, end
        shape = _grows(shape, eqns[end]) if end < len(eqns) else None
    return best


# ----------------------------------------------------------------------------
# Emission
# ----------------------------------------------------------------------------

def _mask(nest, v) -> frozenset:
    return frozenset(d for d in nest.dims[v] if d is not None)


def _schedule(nest):
    """Where each item is computed: ("outer", slot) for values indexed by the
    outer loops only (slot k: after phase k-1), ("inner", phase) otherwise."""
    p = nest.depth()
    place = {}
    for eqn, role, _ in nest.items:
        at = 0
        for a in eqn.inputs:
            if isinstance(a, Var) and a in place:
                _, k = place[a]
                at = max(at, k)
        out = eqn.outvars[0]
        if role == "reduce":
            place[out] = ("outer", at + 1)
            place[eqn] = ("inner", at)
        elif role == "accumulate":
            place[eqn] = ("inner", at) if p < nest.n else ("outer", at)
        elif any(d >= p for d in _mask(nest, out)):
            place[out] = place[eqn] = ("inner", at)
        else:
            place[out] = place[eqn] = ("outer", at)
    return place


class _Emitter:
    """Lines of one nest, collected per place and assembled by ``lines``:
    ``levels[d]`` run inside the loops over axes ``0..d-1`` (d < p), then at
    depth p ``slots[k]`` alternate with the inner loops of ``phases[k]``."""

    def __init__(self, block, nest, live_after, scalar_source):
        import numpy as np
        self.block, self.nest, self.names = block, nest, block.names
        self.scalar_source, self.p = scalar_source, nest.depth()
        self.place = _schedule(nest)
        self.prologue, self.levels = [], [[] for _ in range(self.p)]
        self.slots, self.phases = {}, {}
        self.loops = [self.names.new(Var(ShapedArray((), np.int64))) for _ in nest.shape]
        self.local, self.loaded, self.arrays = {}, {}, {}
        self.live = {v for eqn, _, _ in nest.items for v in eqn.outvars if v in live_after}
        self.defining = {eqn.outvars[0]: (eqn, role, dims) for eqn, role, dims in nest.items}
        self.recomputed = {}
        self.crossing = self._crossing()

    def _crossing(self) -> set:
        """Inner values read in a later phase than their own, kept in arrays
        unless recomputing them there is cheaper (``_recomputable``)."""
        found = set()
        for eqn, _, _ in self.nest.items:
            at = self.place[eqn]
            for a in eqn.inputs:
                if isinstance(a, Var) and self.place.get(a, ("outer", 0))[0] == "inner" \
                        and self.place[a][1] < at[1] and not self._recomputable(a):
                    found.add(a)
        return found

    def _recomputable(self, v, budget=None) -> bool:
        """A short chain of cheap equations (no transcendental calls) from arrays
        and row values: recomputed in a later phase, not written and read back
        (a pass over memory, and fresh pages, saved)."""
        budget = [4] if budget is None else budget
        if v in self.live or v not in self.defining:
            return False
        eqn, role, _ = self.defining[v]
        budget[0] -= 1
        if role not in ("map", "view") or budget[0] < 0 or _calls(eqn):
            return False
        return all(not isinstance(a, Var) or a not in self.defining
                   or self.place[a][0] == "outer" or self._recomputable(a, budget)
                   for a in eqn.inputs)

    def _recompute(self, v, where) -> str:
        """``v``'s scalar computed again at ``where`` (see ``_recomputable``)."""
        if (v, where) not in self.recomputed:
            eqn, role, in_dims = self.defining[v]
            args = [self.operand(a, d, where) for a, d in zip(eqn.inputs, in_dims)]
            text = args[0] if role == "view" else self.scalar_source(eqn, args)
            name = self.names.new(Var(ShapedArray((), v.aval.dtype)))
            self._list(where).append(f"{name} = {text}")
            self.recomputed[v, where] = name
        return self.recomputed[v, where]

    # -- where lines go ------------------------------------------------------

    def _list(self, where, depth=None):
        kind, k = where
        if kind == "inner":
            return self.phases.setdefault(k, ([], []))[1]
        if depth is not None and depth < self.p:
            return self.levels[depth]
        return self.slots.setdefault(k, [])

    def _depth(self, dims) -> int:
        mask = [d for d in dims if d is not None]
        return 1 + max(mask) if mask else 0

    def _index(self, dims) -> str:
        return ", ".join(self.loops[d] if d is not None else "0" for d in dims)

    # -- operands ------------------------------------------------------------

    def _array(self, a) -> str:
        """The name of an array read in the nest (an expression is bound once)."""
        if a not in self.arrays:
            name = self.block.atom(a)
            if not name.isidentifier():
                local = self.names.new(Var(a.aval))
                self.prologue.append(f"{local} = {name}")
                name = local
            self.arrays[a] = name
        return self.arrays[a]

    def operand(self, a, dims, where) -> str:
        """The scalar source of operand ``a`` (read through ``dims``) at ``where``."""
        if isinstance(a, Literal) or a.aval.shape == ():
            return self.local.get(a) or self.block.atom(a)
        if a in self.local and (self.place[a][0] == "outer" or self.place[a] == where):
            return self.local[a]
        if a in self.defining and a not in self.crossing:
            return self._recompute(a, where)
        inner = any(d is not None and d >= self.p for d in dims)
        key = (a, dims, where if inner else None)
        if key not in self.loaded:
            name = self.names.new(Var(ShapedArray((), a.aval.dtype)))
            self.loaded[key] = name
            text = f"{name} = {self._array(a)}[{self._index(dims)}]"
            at = where if inner else ("outer", 0)
            self._list(at, self._depth(dims)).append(text)
        return self.loaded[key]

    # -- items ---------------------------------------------------------------

    def _new_local(self, v) -> str:
        name = self.names.new(v)
        self.local[v] = f"{name}_s" if name.isidentifier() else self.names.new(Var(v.aval))
        return self.local[v]

    def _store(self, v, where, lines):
        """Write ``v`` where later code (or a later phase) reads it."""
        if v not in self.live and v not in self.crossing:
            return
        if v.aval.shape == ():
            lines.append(f"{self.names(v)} = {self.local[v]}")
            return
        array = self.names(v) if v in self.live else self.names.new(Var(v.aval))
        self.arrays[v] = array
        target = self.block.targets.get(v) if v in self.live else None
        if target is not None:           # (a scan's slot for it: no copy afterwards)
            self.prologue.append(f"{array} = {target}")
            self.block.written[v] = target
        else:
            self.prologue.append(f"{array} = np.empty({_shape(v)}, {_type(v.aval.dtype)})")
        lines.append(f"{array}[{self._index(self.nest.dims[v])}] = {self.local[v]}")

    def item(self, eqn, role, in_dims):
        where, out = self.place[eqn], eqn.outvars[0]
        args = [self.operand(a, d, where) for a, d in zip(eqn.inputs, in_dims)]
        if role == "reduce":
            self._reduce(eqn, args[0], where)
        elif role == "accumulate":
            self._accumulate(eqn, args[0], where)
        else:
            text = args[0] if role == "view" else self.scalar_source(eqn, args)
            lines = self._list(where, self._depth(self.nest.dims[out]))
            lines.append(f"{self._new_local(out)} = {text}")
            self._store(out, where, lines)

    def _reduce(self, eqn, x, where):
        out = eqn.outvars[0]
        identity, update = eqn.primitive.numba_reduction
        acc = self._new_local(out)
        self.phases.setdefault(where[1], ([], []))[0].append(
            f"{acc} = {_type(out.aval.dtype)}({identity})")
        self._list(where).append(f"{acc} = {update.format(acc=acc, x=x)}")
        self._store(out, self.place[out], self._list(self.place[out]))

    def _accumulate(self, eqn, x, where):
        out = eqn.outvars[0]
        identity, update = eqn.primitive.numba_reduction
        array = self.names.new(out)
        self.prologue.append(f"{array} = np.full({_shape(out)}, {identity}, "
                             f"{_type(out.aval.dtype)})")
        target = f"{array}[{self._index(self.nest.dims[out])}]"
        self._list(where, self.nest.n).append(f"{target} = {update.format(acc=target, x=x)}")

    # -- assembly ------------------------------------------------------------

    def lines(self) -> list:
        out = list(self.prologue)
        pad = ""
        for d in range(self.p):
            out += [pad + line for line in self.levels[d]]
            out.append(f"{pad}for {self.loops[d]} in range({self.nest.shape[d]}):")
            pad += "    "
        last = max(list(self.slots) + list(self.phases) + [0])
        for k in range(last + 1):
            out += [pad + line for line in self.slots.get(k, [])]
            if k in self.phases:
                pre, body = self.phases[k]
                out += [pad + line for line in pre]
                inner = pad
                for d in range(self.p, self.nest.n):
                    out.append(f"{inner}for {self.loops[d]} in range({self.nest.shape[d]}):")
                    inner += "    "
                out += [inner + line for line in body] or [inner + "pass"]
        if out and out[-1].endswith(":"):      # (nothing depends on the innermost loop)
            out.append(pad + "pass")
        return out


def _calls(eqn) -> bool:
    """Whether an equation's scalar form calls a function (exp, tanh, ...)."""
    prim = eqn.primitive
    return not (prim.numba_lowering is None and prim.name in _CHEAP
                or getattr(prim, "numba_axis_map", None) is not None)


# (arithmetic and comparisons: an instruction or two, cheaper than a memory pass)
_CHEAP = frozenset({"add", "sub", "mul", "neg", "max", "min", "abs", "eq", "ne", "lt", "le",
                    "gt", "ge", "and", "or", "not", "square", "sign"})


def _shape(v) -> str:
    return repr(tuple(int(d) for d in v.aval.shape))


def _type(dtype) -> str:
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def emit_nest(block, nest, live_after, scalar_source) -> None:
    """Append the nest's lines to ``block`` (a ``numba_backend.NumbaBlock``);
    ``scalar_source(eqn, args)`` is an equation's form on scalars and
    ``live_after`` the values read after the nest (written into arrays)."""
    emitter = _Emitter(block, nest, live_after, scalar_source)
    for eqn, role, in_dims in nest.items:
        emitter.item(eqn, role, in_dims)
    for line in emitter.lines():
        block.line(line)
