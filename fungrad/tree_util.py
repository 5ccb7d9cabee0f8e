"""Pytrees: nested containers whose leaves the transforms operate on.

This module mirrors the public API and semantics of ``jax.tree_util``.

Design
------
* A tree is *flattened* into a list of leaves plus a :class:`PyTreeDef`
  describing the containers.  Internally a structure ("struct") is a nested
  plain tuple so that building, hashing and comparing it is cheap:

  - ``_LEAF`` (``None``) stands for one leaf;
  - ``(nodetype, aux, child_structs)`` stands for a container node, where
    ``aux`` is the node's static data (``None`` for tuples and lists, the
    sorted key tuple for dicts, the user's aux data for custom nodes).

  ``PyTreeDef`` wraps the root struct and caches its leaf count and hash.
* Node types live in a registry mapping ``type -> _NodeSpec``.  Lookups are
  by exact type (as JAX: subclasses of registered types are leaves, except
  namedtuple classes, which are recognised automatically).  A per-type cache
  remembers the classification of every type seen, including "leaf", and is
  cleared whenever something is registered.
* Flattening runs at every API boundary of every transform, so the hot path
  special-cases ``tuple``/``list``/``dict``/``None`` with ``type(x) is ...``
  checks before consulting the registry, and builds no per-node objects
  except the struct tuples themselves.  Key paths are only materialised by
  the ``*_with_path`` functions and when formatting error messages.
* Flattening and unflattening are recursive; recursion depth equals tree
  depth, which is small for real-world pytrees (Python's default limit of
  1000 nested containers is far beyond practical use).
* ``None`` is a node with no children (not a leaf), dict children are in
  sorted key order, ``OrderedDict`` keeps insertion order — all as in JAX.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from typing import Any, Callable, Iterable

__all__ = [
    "PyTreeDef",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "tree_all",
    "tree_reduce",
    "tree_transpose",
    "register_static",
    "all_leaves",
    "treedef_is_leaf",
    "treedef_is_strict_leaf",
    "treedef_tuple",
    "treedef_children",
    "keystr",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "KeyEntry",
    "KeyPath",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_dataclass",
    "Partial",
]

_NoneType = type(None)
_LEAF = None          # struct of a single leaf
_MISSING = object()   # sentinel for "no value" (cache misses, no initializer)


# ---------------------------------------------------------------------------
# Key path entries
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Path entry for the ``idx``-th child of a tuple or list."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def __hash__(self):  # distinct from other key kinds holding the same value
        return hash((SequenceKey, self.idx))


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Path entry for the value stored under ``key`` in a dict-like node."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def __hash__(self):
        return hash((DictKey, self.key))


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Path entry for attribute ``name`` (namedtuples, dataclasses)."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def __hash__(self):
        return hash((GetAttrKey, self.name))


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Path entry for the ``key``-th child of a custom node without keys."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"

    def __hash__(self):
        return hash((FlattenedIndexKey, self.key))


KeyEntry = Any               # one of the key classes above, or a user's key
KeyPath = tuple              # tuple[KeyEntry, ...]


def _simple_key_str(key) -> str:
    """Bare rendering of a key entry, used by ``keystr(..., simple=True)``."""
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return key.name
    if isinstance(key, FlattenedIndexKey):
        return str(key.key)
    return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path, e.g. ``keystr((SequenceKey(0), DictKey('a')))``
    gives ``"[0]['a']"``; with ``simple=True, separator='/'`` gives ``"0/a"``."""
    render = _simple_key_str if simple else str
    return separator.join(render(k) for k in keys)


def _where(path: KeyPath) -> str:
    """Human readable location for error messages."""
    return f"path {keystr(path)}" if path else "the root"


# ---------------------------------------------------------------------------
# Node registry
# ---------------------------------------------------------------------------

class _NodeSpec:
    """How to take apart and rebuild one node type.

    flatten(x) -> (children, aux); unflatten(aux, children) -> x;
    flatten_with_keys(x) -> (keys, children, aux);
    keys_from_aux(aux, n) -> keys, used to name children when only the
    structure (not the object) is available (error messages).
    """
    __slots__ = ("nodetype", "kind", "flatten", "unflatten",
                 "flatten_with_keys", "keys_from_aux")

    def __init__(self, nodetype, kind, flatten, unflatten,
                 flatten_with_keys=None, keys_from_aux=None):
        self.nodetype = nodetype
        self.kind = kind  # "tuple", "list", "dict", "none", "namedtuple", "custom"
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys or _index_keyed(flatten)
        self.keys_from_aux = keys_from_aux or _flat_index_keys


def _flat_index_keys(aux, n):
    return [FlattenedIndexKey(i) for i in range(n)]


def _index_keyed(flatten):
    """flatten_with_keys for nodes that have no natural keys."""
    def flatten_with_keys(x):
        children, aux = flatten(x)
        children = tuple(children)
        return _flat_index_keys(aux, len(children)), children, aux
    return flatten_with_keys


_registry: dict[type, _NodeSpec] = {}
# type -> _NodeSpec, or None for leaf types.  Derived from _registry plus
# automatic namedtuple detection; cleared on every registration.
_lookup_cache: dict[type, _NodeSpec | None] = {}


def _is_namedtuple_class(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _namedtuple_spec(t: type) -> _NodeSpec:
    fields = tuple(t._fields)
    return _NodeSpec(
        t, "namedtuple",
        flatten=lambda x: (tuple(x), None),
        unflatten=lambda aux, children: t(*children),
        flatten_with_keys=lambda x: ([GetAttrKey(f) for f in fields], tuple(x), None),
        keys_from_aux=lambda aux, n: [GetAttrKey(f) for f in fields],
    )


def _classify(t: type) -> _NodeSpec | None:
    """Registry lookup on a cache miss; remembers the answer."""
    spec = _registry.get(t)
    if spec is None and _is_namedtuple_class(t):
        spec = _namedtuple_spec(t)
    if len(_lookup_cache) >= 4096:   # classes made at run time (namedtuples): bounded
        _lookup_cache.clear()
    _lookup_cache[t] = spec
    return spec


def _spec_of_type(t: type) -> _NodeSpec | None:
    spec = _lookup_cache.get(t, _MISSING)
    return _classify(t) if spec is _MISSING else spec


def _register(spec: _NodeSpec) -> None:
    t = spec.nodetype
    if not isinstance(t, type):
        raise TypeError(f"Pytree node types must be classes, got {t!r}")
    if t in _registry:
        raise ValueError(f"Duplicate pytree node registration for type {t!r}")
    _registry[t] = spec
    _lookup_cache.clear()  # earlier classifications (e.g. "leaf") are stale


def _sorted_keys(d) -> tuple:
    """Dict keys in canonical order: sorted, as JAX.

    Mixed-type keys that do not compare are grouped by type name first
    (JAX raises in that case; here such dicts still work)."""
    try:
        return tuple(sorted(d))
    except TypeError:
        pass
    try:
        return tuple(sorted(d, key=lambda k: (type(k).__module__,
                                              type(k).__qualname__, k)))
    except TypeError:
        raise TypeError(f"Cannot sort the keys of a dict pytree node: {list(d)!r}") from None


def _seq_keys(aux, n):
    return [SequenceKey(i) for i in range(n)]


def _dict_keys(aux, n):
    return [DictKey(k) for k in aux]


def _register_builtins() -> None:
    _register(_NodeSpec(
        tuple, "tuple", lambda x: (x, None), lambda aux, ch: tuple(ch),
        lambda x: (_seq_keys(None, len(x)), x, None), _seq_keys))
    _register(_NodeSpec(
        list, "list", lambda x: (x, None), lambda aux, ch: list(ch),
        lambda x: (_seq_keys(None, len(x)), x, None), _seq_keys))

    def flatten_dict(d):
        keys = _sorted_keys(d)
        return [d[k] for k in keys], keys

    _register(_NodeSpec(
        dict, "dict", flatten_dict, lambda keys, ch: dict(zip(keys, ch)),
        _with_dict_keys(flatten_dict, lambda aux: aux), _dict_keys))
    _register(_NodeSpec(
        _NoneType, "none", lambda x: ((), None), lambda aux, ch: None,
        lambda x: ((), (), None), lambda aux, n: []))

    def flatten_ordered(d):
        keys = tuple(d)  # insertion order is part of the structure
        return [d[k] for k in keys], keys

    _register(_NodeSpec(
        collections.OrderedDict, "custom", flatten_ordered,
        lambda keys, ch: collections.OrderedDict(zip(keys, ch)),
        _with_dict_keys(flatten_ordered, lambda aux: aux), _dict_keys))

    def flatten_default(d):
        keys = _sorted_keys(d)
        return [d[k] for k in keys], (d.default_factory, keys)

    _register(_NodeSpec(
        collections.defaultdict, "custom", flatten_default,
        lambda aux, ch: collections.defaultdict(aux[0], zip(aux[1], ch)),
        _with_dict_keys(flatten_default, lambda aux: aux[1]),
        lambda aux, n: [DictKey(k) for k in aux[1]]))


def _with_dict_keys(flatten, keys_of_aux):
    """flatten_with_keys for dict-like nodes: DictKey per (ordered) key."""
    def flatten_with_keys(d):
        children, aux = flatten(d)
        return [DictKey(k) for k in keys_of_aux(aux)], children, aux
    return flatten_with_keys


_register_builtins()


# ---------------------------------------------------------------------------
# Core flatten / unflatten on structs
# ---------------------------------------------------------------------------

_NONE_STRUCT = (_NoneType, None, ())


def _flatten(x, leaves: list, is_leaf):
    """Append the leaves of ``x`` to ``leaves``; return the struct of ``x``.

    Hot path: builtin containers are recognised by exact type before the
    registry is consulted.  Recursive (depth = tree depth)."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    t = type(x)
    if t is tuple or t is list:
        return (t, None, tuple([_flatten(c, leaves, is_leaf) for c in x]))
    if t is dict:
        keys = _sorted_keys(x)
        return (dict, keys, tuple([_flatten(x[k], leaves, is_leaf) for k in keys]))
    if x is None:
        return _NONE_STRUCT
    spec = _lookup_cache.get(t, _MISSING)
    if spec is _MISSING:
        spec = _classify(t)
    if spec is None:
        leaves.append(x)
        return _LEAF
    children, aux = spec.flatten(x)
    return (t, aux, tuple([_flatten(c, leaves, is_leaf) for c in children]))


def _collect_leaves(x, leaves: list, is_leaf) -> None:
    """Like ``_flatten`` but builds no structure (for ``tree_leaves``)."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return
    t = type(x)
    if t is tuple or t is list:
        for c in x:
            _collect_leaves(c, leaves, is_leaf)
        return
    if t is dict:
        for k in _sorted_keys(x):
            _collect_leaves(x[k], leaves, is_leaf)
        return
    if x is None:
        return
    spec = _lookup_cache.get(t, _MISSING)
    if spec is _MISSING:
        spec = _classify(t)
    if spec is None:
        leaves.append(x)
        return
    for c in spec.flatten(x)[0]:
        _collect_leaves(c, leaves, is_leaf)


def _flatten_with_path(x, path: tuple, out: list, is_leaf):
    """Append ``(path, leaf)`` pairs to ``out``; return the struct of ``x``."""
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return _LEAF
    t = type(x)
    spec = _spec_of_type(t)
    if spec is None:
        out.append((path, x))
        return _LEAF
    keys, children, aux = spec.flatten_with_keys(x)
    kids = [_flatten_with_path(c, path + (k,), out, is_leaf)
            for k, c in zip(keys, children)]
    return (t, aux, tuple(kids))


def _unflatten(struct, leaves_iter):
    """Rebuild a tree from a struct and an iterator over enough leaves."""
    if struct is _LEAF:
        return next(leaves_iter)
    t, aux, kids = struct
    children = [_unflatten(k, leaves_iter) for k in kids]
    if t is tuple:
        return tuple(children)
    if t is list:
        return children
    if t is dict:
        return dict(zip(aux, children))
    if t is _NoneType:
        return None
    return _spec_of_type(t).unflatten(aux, tuple(children))


def _count(struct) -> tuple[int, int]:
    """(num_leaves, num_nodes) of a struct; leaves count as nodes, as JAX."""
    if struct is _LEAF:
        return 1, 1
    leaves, nodes = 0, 1
    for k in struct[2]:
        kl, kn = _count(k)
        leaves += kl
        nodes += kn
    return leaves, nodes


def _struct_hash(struct) -> int:
    if struct is _LEAF:
        return hash(_LEAF)
    return hash((struct[0], tuple([_struct_hash(k) for k in struct[2]])))


def _struct_str(struct) -> str:
    """JAX-style rendering: ``*`` for leaves, Python syntax for builtins."""
    if struct is _LEAF:
        return "*"
    t, aux, kids = struct
    parts = [_struct_str(k) for k in kids]
    if t is tuple:
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if t is list:
        return "[" + ", ".join(parts) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(aux, parts)) + "}"
    if t is _NoneType:
        return "None"
    spec = _spec_of_type(t)
    if spec is not None and spec.kind == "namedtuple":
        head = f"namedtuple[{t.__name__}]"
    else:
        head = f"{t.__name__}[{aux!r}]"
    return f"CustomNode({head}, [{', '.join(parts)}])"


def _leaf_paths(struct, path=()):
    """Key paths of the leaves of a struct (no object needed)."""
    if struct is _LEAF:
        yield path
        return
    t, aux, kids = struct
    keys = _spec_of_type(t).keys_from_aux(aux, len(kids))
    for k, kid in zip(keys, kids):
        yield from _leaf_paths(kid, path + (k,))


def _safe_eq(a, b) -> bool:
    """Equality that tolerates aux data such as arrays (falls back to identity)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


# ---------------------------------------------------------------------------
# flatten_up_to: match a tree against a (prefix) structure
# ---------------------------------------------------------------------------

class _Mismatch(Exception):
    """Internal: raised at the mismatching node; child indices are collected
    while unwinding so the key path is only computed on failure."""

    def __init__(self, struct, subtree, reason):
        super().__init__(reason)
        self.struct, self.subtree, self.reason = struct, subtree, reason
        self.indices: list[int] = []  # innermost first


def _node_children(struct, x):
    """Children of ``x`` if it is the node described by ``struct``, else raise."""
    t, aux, kids = struct
    if type(x) is not t:
        got = "a leaf" if _is_leaf_object(x) else "a node"
        raise _Mismatch(struct, x, f"expected a {t.__name__} node, got {got} "
                                   f"of type {type(x).__name__}")
    if t is tuple or t is list:
        children, x_aux = x, None
    elif t is _NoneType:
        return ()
    else:
        children, x_aux = _spec_of_type(t).flatten(x)
        children = tuple(children)  # user flatten may return any iterable
    if t is dict or t is collections.OrderedDict:
        if x_aux != aux:
            raise _Mismatch(struct, x, f"dict keys differ: expected {list(aux)!r}, "
                                       f"got {list(x_aux)!r}")
    elif not _safe_eq(aux, x_aux):
        raise _Mismatch(struct, x, f"node data differ: expected {aux!r}, got {x_aux!r}")
    if len(children) != len(kids):
        raise _Mismatch(struct, x, f"expected {len(kids)} children, got {len(children)}")
    return children


def _up_to(struct, x, out: list) -> None:
    if struct is _LEAF:
        out.append(x)
        return
    children = _node_children(struct, x)
    for i, (kid, c) in enumerate(zip(struct[2], children)):
        try:
            _up_to(kid, c, out)
        except _Mismatch as e:
            e.indices.append(i)
            raise


def _path_of(tree, indices) -> KeyPath:
    """Convert child indices (outermost first) into key entries by walking
    the actual tree, so custom keyed nodes get their real keys."""
    path = []
    for i in indices:
        spec = _spec_of_type(type(tree))
        keys, children, _ = spec.flatten_with_keys(tree)
        path.append(keys[i])
        tree = list(children)[i]
    return tuple(path)


def _structure_repr_or_value(tree) -> str:
    try:
        return repr(tree_structure(tree))
    except Exception:  # un-flattenable object: show the value instead
        return _short_repr(tree)


def _short_repr(x, limit=200) -> str:
    r = repr(x)
    return r if len(r) <= limit else r[:limit] + "..."


def _mismatch_error(treedef, tree, err: _Mismatch, what: str) -> ValueError:
    path = _path_of(tree, reversed(err.indices))
    where = _where(path)
    return ValueError(
        f"{what} does not match the expected tree structure at {where}: {err.reason}.\n"
        f"  expected structure: {treedef!r}\n"
        f"  got structure:      {_structure_repr_or_value(tree)}\n"
        f"  expected subtree at {where}: PyTreeDef({_struct_str(err.struct)})\n"
        f"  got subtree at {where}:      {_structure_repr_or_value(err.subtree)}")


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------

class PyTreeDef:
    """Immutable, hashable description of a pytree's container structure.

    Obtain one from :func:`tree_flatten` / :func:`tree_structure`; it is not
    meant to be constructed directly."""

    __slots__ = ("_struct", "_num_leaves", "_num_nodes", "_hash")

    def __init__(self, struct, num_leaves: int | None = None):
        self._struct = struct
        self._num_leaves = num_leaves
        self._num_nodes = None
        self._hash = None

    def _counts(self):
        self._num_leaves, self._num_nodes = _count(self._struct)

    @property
    def num_leaves(self) -> int:
        if self._num_leaves is None:
            self._counts()
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        if self._num_nodes is None:
            self._counts()
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the immediate children (empty for a leaf)."""
        if self._struct is _LEAF:
            return []
        return [PyTreeDef(k) for k in self._struct[2]]

    def node_data(self):
        """``(nodetype, aux_data)`` of the root, or ``None`` for a leaf."""
        if self._struct is _LEAF:
            return None
        return self._struct[0], self._struct[1]

    def unflatten(self, leaves: Iterable) -> Any:
        """Build a tree of this structure from ``leaves`` (in flatten order)."""
        if type(leaves) is not list:
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise self._leaf_count_error(len(leaves))
        return _unflatten(self._struct, iter(leaves))

    def _leaf_count_error(self, got: int) -> ValueError:
        n = self.num_leaves
        if got < n:
            missing = next(p for i, p in enumerate(_leaf_paths(self._struct)) if i == got)
            detail = f"too few leaves; the first missing leaf is at {_where(missing)}"
        else:
            detail = f"too many leaves ({got - n} extra)"
        # The "other structure" is the flat list of leaves we were given.
        got_struct = f"PyTreeDef([{', '.join(['*'] * got)}])" if got <= 32 else "a flat list"
        return ValueError(
            f"tree_unflatten: {detail}.\n"
            f"  expected structure: {self!r} ({n} leaves)\n"
            f"  got leaves:         {got_struct} ({got} leaves)")

    def flatten_up_to(self, tree) -> list:
        """Flatten ``tree`` only as deep as this structure: returns one subtree
        per leaf of ``self``.  ``self`` must be a prefix of ``tree``'s
        structure, otherwise ValueError naming both structures and the path."""
        return self._flatten_up_to(tree, "Tree")

    def _flatten_up_to(self, tree, what: str) -> list:
        out: list = []
        try:
            _up_to(self._struct, tree, out)
        except _Mismatch as e:
            raise _mismatch_error(self, tree, e, what) from None
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by replacing every leaf of ``self`` with ``inner``."""
        def sub(s):
            if s is _LEAF:
                return inner._struct
            return (s[0], s[1], tuple([sub(k) for k in s[2]]))
        return PyTreeDef(sub(self._struct))

    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        if self._struct is other._struct:
            return True
        try:
            return self._struct == other._struct
        except Exception as e:      # node data whose == raises or is ambiguous (arrays)
            raise ValueError(
                "Exception raised while checking equality of metadata fields of pytree. "
                "Make sure that metadata fields are hashable and have simple equality "
                "semantics. (Note: arrays cannot be passed as metadata fields!)") from e

    def __hash__(self):
        # node data need not be hashable (a dict, a list), as in JAX: such a
        # treedef hashes its node types and arities only.  Others hash in C
        # (jit hashes its arguments' treedef on every call); equal treedefs hash
        # equal unless equal node data differ in hashability (a set and an equal
        # frozenset), where the cost is a dictionary miss
        if self._hash is None:
            try:
                self._hash = hash(self._struct)
            except TypeError:
                self._hash = _struct_hash(self._struct)
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({_struct_str(self._struct)})"

    __str__ = __repr__


# ---------------------------------------------------------------------------
# Public tree functions
# ---------------------------------------------------------------------------

def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Return ``(leaves, treedef)``.  ``is_leaf(x)`` may declare any subtree
    (including ``None``) a leaf; it is called before ``x`` is inspected."""
    leaves: list = []
    struct = _flatten(tree, leaves, is_leaf)
    return leaves, PyTreeDef(struct, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable):
    """Inverse of :func:`tree_flatten`."""
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in flatten order."""
    leaves: list = []
    _collect_leaves(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def _leaves_of_rest(treedef: PyTreeDef, rest: tuple, fname: str) -> list[list]:
    """Flatten each extra tree up to ``treedef``, naming the culprit on error."""
    return [treedef._flatten_up_to(r, f"{fname}: tree argument {i + 1} (rest[{i}])")
            for i, r in enumerate(rest)]


def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None):
    """Apply ``f`` to corresponding leaves.  Each tree in ``rest`` must have
    the structure of ``tree`` or have it as a prefix (then ``f`` receives the
    corresponding subtrees of ``rest``).  ``is_leaf`` applies to ``tree``."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = _leaves_of_rest(treedef, rest, "tree_map")
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Return ``([(key_path, leaf), ...], treedef)``."""
    out: list = []
    struct = _flatten_with_path(tree, (), out, is_leaf)
    return out, PyTreeDef(struct, len(out))


def tree_leaves_with_path(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """``[(key_path, leaf), ...]`` in flatten order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree, *rest,
                       is_leaf: Callable[[Any], bool] | None = None):
    """Like :func:`tree_map` but calls ``f(key_path, x, *xs)``; paths come
    from the first tree."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = _leaves_of_rest(treedef, rest, "tree_map_with_path")
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def tree_all(tree, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """``all(tree_leaves(tree))``."""
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable, tree, initializer=_MISSING,
                is_leaf: Callable[[Any], bool] | None = None):
    """``functools.reduce`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose):
    """Turn an outer-of-inner tree into an inner-of-outer tree.

    ``inner_treedef=None`` infers it from the first outer subtree.  Raises
    TypeError (as JAX) if the tree is not ``outer.compose(inner)``."""
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_structure(first)
    leaves, treedef = tree_flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: structure mismatch.\n"
                        f"  expected: {expected!r}\n  got:      {treedef!r}")
    n_in = inner_treedef.num_leaves
    rows = [leaves[i * n_in:(i + 1) * n_in] for i in range(outer_treedef.num_leaves)]
    columns = [outer_treedef.unflatten(col) for col in zip(*rows)] if rows else \
        [outer_treedef.unflatten([]) for _ in range(n_in)]
    return inner_treedef.unflatten(columns)


def _is_leaf_object(x) -> bool:
    return x is not None and _spec_of_type(type(x)) is None


def all_leaves(iterable: Iterable, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element is a leaf (``None`` is not a leaf)."""
    for x in iterable:
        if is_leaf is not None and is_leaf(x):
            continue
        if not _is_leaf_object(x):
            return False
    return True


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """As JAX: ``treedef.num_nodes == 1``, which is also true for childless
    nodes such as ``None`` and ``()``; see :func:`treedef_is_strict_leaf`."""
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    """True only for the structure of a single leaf (``PyTreeDef(*)``)."""
    return treedef._struct is _LEAF


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the given structures."""
    return PyTreeDef((tuple, None, tuple(td._struct for td in treedefs)))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


# ---------------------------------------------------------------------------
# Registration API
# ---------------------------------------------------------------------------

def register_pytree_node(nodetype: type, flatten_func: Callable,
                         unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Register ``nodetype`` as a container.

    ``flatten_func(x) -> (children, aux_data)``;
    ``unflatten_func(aux_data, children) -> x``; optional
    ``flatten_with_keys_func(x) -> (((key, child), ...), aux_data)``.
    aux_data should be hashable and comparable (it is part of the treedef).
    Raises ValueError if ``nodetype`` is already registered."""
    keyed = _from_user_keyed(flatten_with_keys_func) if flatten_with_keys_func else None
    _register(_NodeSpec(nodetype, "custom", flatten_func, unflatten_func, keyed))


def _from_user_keyed(flatten_with_keys: Callable) -> Callable:
    """Adapt the user's ``(((key, child), ...), aux)`` to ``(keys, children, aux)``."""
    def flatten(x):
        pairs, aux = flatten_with_keys(x)
        pairs = list(pairs)
        return [k for k, _ in pairs], [c for _, c in pairs], aux
    return flatten


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Register ``nodetype`` with key-aware flattening (for key paths).

    ``flatten_with_keys(x) -> (((key, child), ...), aux_data)``; if
    ``flatten_func`` is omitted it is derived by dropping the keys."""
    keyed = _from_user_keyed(flatten_with_keys)
    if flatten_func is None:
        def flatten_func(x):
            _, children, aux = keyed(x)
            return children, aux
    _register(_NodeSpec(nodetype, "custom", flatten_func, unflatten_func, keyed))


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``x.tree_flatten() -> (children, aux)`` and
    ``cls.tree_unflatten(aux, children)`` (a classmethod)."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_static(cls: type) -> type:
    """Class decorator: instances are pytrees with no leaves, the instance itself
    being the node data (so ``jit`` treats them as static; they should be
    hashable and compare by value)."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x, lambda x: ((), x))
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator using ``tree_flatten_with_keys`` / ``tree_unflatten``
    (and ``tree_flatten`` if defined)."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def _dataclass_fields(nodetype, data_fields, meta_fields, drop_fields):
    """Resolve (data_fields, meta_fields), inferring them for dataclasses."""
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                        f"given or both omitted; got {data_fields=}, {meta_fields=}")
    is_dc = dataclasses.is_dataclass(nodetype)
    if data_fields is None:
        if not is_dc:
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when {nodetype!r} is not a dataclass")
        init = [f for f in dataclasses.fields(nodetype)
                if f.init and f.name not in drop_fields]
        meta = [f.name for f in init if f.metadata.get("static", False)]
        data = [f.name for f in init if not f.metadata.get("static", False)]
        return data, meta
    data, meta = list(data_fields), list(meta_fields)
    if is_dc:  # every constructor argument must be accounted for exactly once
        expected = {f.name for f in dataclasses.fields(nodetype) if f.init}
        given = data + meta + list(drop_fields)
        if sorted(given) != sorted(expected):
            raise ValueError(
                f"register_dataclass: data_fields + meta_fields + drop_fields must be the "
                f"init fields of {nodetype.__name__} exactly once; got "
                f"{sorted(given)}, expected {sorted(expected)}")
    return data, meta


def _tuple_getter(names: list[str]) -> Callable[[Any], tuple]:
    """``x -> (x.n1, x.n2, ...)``; attrgetter alone returns a bare value for
    one name and cannot take zero names."""
    if not names:
        return lambda x: ()
    if len(names) == 1:
        name = names[0]
        return lambda x: (getattr(x, name),)
    return operator.attrgetter(*names)


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> type:
    """Register a dataclass-like type: ``data_fields`` become children,
    ``meta_fields`` become (hashable) aux data; rebuilt with
    ``nodetype(**fields)``.  With both omitted, fields of a dataclass are
    inferred: ``field(metadata=dict(static=True))`` marks meta fields.
    Returns ``nodetype`` so it can be used as a decorator."""
    data, meta = _dataclass_fields(nodetype, data_fields, meta_fields, tuple(drop_fields))
    get_data, get_meta = _tuple_getter(data), _tuple_getter(meta)
    data_keys = [GetAttrKey(n) for n in data]

    def flatten(x):
        return get_data(x), get_meta(x)

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    _register(_NodeSpec(
        nodetype, "custom", flatten, unflatten,
        lambda x: (data_keys, get_data(x), get_meta(x)),
        lambda aux, n: data_keys))
    return nodetype


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------

class _StaticCallable:
    """Wraps a plain ``functools.partial`` passed to :class:`Partial` so that
    its bound arguments stay static instead of being merged into (and
    becoming leaves of) the Partial."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __eq__(self, other):
        if isinstance(other, _StaticCallable):
            return self.fn is other.fn or _safe_eq(self.fn, other.fn)
        return NotImplemented

    def __hash__(self):
        return hash(self.fn)

    def __repr__(self):
        return repr(self.fn)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree.

    The function is static (part of the treedef's aux data, compared by
    ``==``/hash); the positional and keyword arguments are children, so
    arrays bound into a Partial are traced/transformed like any other leaf.
    ``Partial(Partial(f, a), b)`` flattens to the leaves ``[a, b]``."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial) and not isinstance(func, Partial):
            func = _StaticCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
