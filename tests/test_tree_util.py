"""Tests for fungrad.tree_util (JAX-compatible pytrees)."""

import collections
import dataclasses
import functools
import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fungrad import tree_util as tu
from fungrad.tree_util import (
    DictKey, FlattenedIndexKey, GetAttrKey, Partial, SequenceKey,
)


# ---------------------------------------------------------------------------
# Node types used throughout (registered once, at import)
# ---------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_pytree_node_class
class Box:
    """Custom node via tree_flatten/tree_unflatten methods; ``tag`` is aux."""

    def __init__(self, a, b, tag="t"):
        self.a, self.b, self.tag = a, b, tag

    def tree_flatten(self):
        return (self.a, self.b), self.tag

    @classmethod
    def tree_unflatten(cls, aux, children):
        a, b = children
        return cls(a, b, aux)

    def __eq__(self, other):
        return (type(other) is Box
                and (self.a, self.b, self.tag) == (other.a, other.b, other.tag))

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, {self.tag!r})"


@tu.register_dataclass
@dataclasses.dataclass
class DC:
    p: Any
    q: Any
    name: str = dataclasses.field(default="dc", metadata=dict(static=True))


class Pair:
    """Registered with register_pytree_node (no keys -> FlattenedIndexKey)."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __eq__(self, other):
        return type(other) is Pair and (self.first, self.second) == (other.first, other.second)


tu.register_pytree_node(Pair, lambda p: ((p.first, p.second), None),
                        lambda aux, ch: Pair(*ch))


class Keyed:
    """Registered with keys: paths use the user's GetAttrKey entries."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __eq__(self, other):
        return type(other) is Keyed and (self.lo, self.hi) == (other.lo, other.hi)


tu.register_pytree_with_keys(
    Keyed,
    lambda k: (((GetAttrKey("lo"), k.lo), (GetAttrKey("hi"), k.hi)), None),
    lambda aux, ch: Keyed(*ch))


# ---------------------------------------------------------------------------
# Hypothesis strategies
# ---------------------------------------------------------------------------

leaf_values = st.one_of(st.integers(), st.booleans(), st.text(max_size=3),
                        st.floats(allow_nan=False))
keys = st.text(max_size=3)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=3),
        st.dictionaries(keys, children, max_size=3).map(collections.OrderedDict),
        st.builds(Point, children, children),
        st.builds(Box, children, children, st.sampled_from(["t", "u"])),
        st.builds(DC, children, children, st.sampled_from(["dc", "other"])),
        st.builds(Pair, children, children),
        st.builds(Keyed, children, children),
    )


trees = st.recursive(st.one_of(leaf_values, st.none()), _containers, max_leaves=12)


def follow(tree, path):
    """Walk a key path by hand (independently of tree_util's own walking)."""
    for key in path:
        if isinstance(key, SequenceKey):
            tree = tree[key.idx]
        elif isinstance(key, DictKey):
            tree = tree[key.key]
        elif isinstance(key, GetAttrKey):
            tree = getattr(tree, key.name)
        elif isinstance(key, FlattenedIndexKey):
            tree = tu.tree_flatten(tree, is_leaf=lambda x: x is not tree)[0][key.key]
        else:
            raise AssertionError(f"unexpected key {key!r}")
    return tree


# ---------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------

@given(trees)
def test_roundtrip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree
    assert type(rebuilt) is type(tree)
    assert tu.tree_structure(rebuilt) == treedef
    assert treedef.num_leaves == len(leaves)
    assert tu.tree_leaves(tree) == leaves
    assert tu.all_leaves(leaves)


@given(trees)
def test_paths_point_at_leaves(tree):
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert [leaf for _, leaf in pairs] == tu.tree_leaves(tree)
    for path, leaf in pairs:
        assert follow(tree, path) == leaf
    assert len({tu.keystr(p) for p, _ in pairs}) == len(pairs)  # paths are unique


@given(trees)
def test_tree_map_identity_and_structure(tree):
    assert tu.tree_map(lambda x: x, tree) == tree
    mapped = tu.tree_map(lambda x: (x,), tree)
    td = tu.tree_structure(tree)
    # Mapped leaves are 1-tuples, so the structure grows by one tuple per leaf.
    assert tu.tree_structure(mapped) == td.compose(tu.tree_structure((0,)))
    assert td.flatten_up_to(mapped) == [(x,) for x in tu.tree_leaves(tree)]


@given(trees)
def test_tree_map_multiple_trees_and_prefix(tree):
    doubled = tu.tree_map(lambda x: [x, x], tree)
    out = tu.tree_map(lambda x, pair: pair[0] == x and pair[1] == x, tree, doubled)
    assert tu.tree_all(out)
    assert tu.tree_map(lambda a, b, c: (a, b, c), tree, tree, tree) == \
        tu.tree_map(lambda a: (a, a, a), tree)


@given(trees)
def test_treedef_hash_eq(tree):
    td1 = tu.tree_structure(tree)
    td2 = tu.tree_structure(tu.tree_map(lambda x: object(), tree))
    assert td1 == td2 and hash(td1) == hash(td2)
    assert {td1: 1}[td2] == 1
    assert td1.unflatten(td1.flatten_up_to(tree)) == tree


@given(trees)
def test_num_nodes_and_children(tree):
    td = tu.tree_structure(tree)
    kids = td.children()
    if tu.treedef_is_strict_leaf(td):
        assert kids == [] and td.num_nodes == 1
    else:
        assert td.num_nodes == 1 + sum(k.num_nodes for k in kids)
        assert td.num_leaves == sum(k.num_leaves for k in kids)


# ---------------------------------------------------------------------------
# Node-type semantics
# ---------------------------------------------------------------------------

def test_repr_matches_jax_style():
    td = tu.tree_structure((1, {"b": [2, 3], "a": 4}))
    assert repr(td) == "PyTreeDef((*, {'a': *, 'b': [*, *]}))"
    assert repr(tu.tree_structure(1)) == "PyTreeDef(*)"
    assert repr(tu.tree_structure(None)) == "PyTreeDef(None)"
    assert repr(tu.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tu.tree_structure(Point(1, 2))) == \
        "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
    assert repr(tu.tree_structure(Box(1, 2, "q"))) == "PyTreeDef(CustomNode(Box['q'], [*, *]))"


class Meta:
    """A custom node whose aux data is whatever it is given (dicts, lists, arrays)."""

    def __init__(self, child, meta):
        self.child, self.meta = child, meta


tu.register_pytree_node(Meta, lambda m: ((m.child,), m.meta), lambda meta, c: Meta(c[0], meta))


@given(st.dictionaries(st.sampled_from("abc"), st.lists(st.integers(0, 3), max_size=2)),
       st.dictionaries(st.sampled_from("abc"), st.lists(st.integers(0, 3), max_size=2)))
def test_treedef_with_unhashable_node_data_hashes_and_compares_as_jax(meta1, meta2):
    # JAX hashes a treedef from its node types and arities only, so node data
    # need not be hashable (a dict, a list); equality still compares it
    td1, td2 = tu.tree_structure(Meta(1.0, meta1)), tu.tree_structure(Meta(2.0, meta2))
    assert hash(td1) == hash(td2)
    assert (td1 == td2) == (meta1 == meta2)
    assert {td1: "x"}.get(td2) == ("x" if meta1 == meta2 else None)
    assert td1.unflatten([3.0]).meta == meta1


def test_treedef_hash_still_tells_node_types_and_arities_apart():
    # (JAX: a tuple and a list of one leaf, or two custom types, hash differently)
    assert hash(tu.tree_structure((1,))) != hash(tu.tree_structure([1]))
    assert hash(tu.tree_structure((1,))) != hash(tu.tree_structure((1, 2)))
    assert tu.tree_structure({"a": 1}) != tu.tree_structure({"b": 1})


def test_treedef_equality_with_array_node_data_raises_jax_error():
    td1 = tu.tree_structure(Meta(1.0, np.arange(3)))
    td2 = tu.tree_structure(Meta(1.0, np.arange(3)))
    with pytest.raises(ValueError, match="equality of metadata fields of pytree"):
        td1 == td2  # noqa: B015


def test_register_static_makes_instances_treedef_data():
    @tu.register_static
    class Config:
        def __init__(self, n):
            self.n = n

        def __eq__(self, other):
            return type(other) is Config and other.n == self.n

        def __hash__(self):
            return hash(self.n)

    leaves, td = tu.tree_flatten({"cfg": Config(3), "w": 1.0})
    assert leaves == [1.0]
    assert td.unflatten([2.0])["cfg"] == Config(3)
    assert td == tu.tree_structure({"cfg": Config(3), "w": 5.0})
    assert td != tu.tree_structure({"cfg": Config(4), "w": 5.0})


def test_dict_children_sorted_and_rebuilt_sorted():
    leaves, td = tu.tree_flatten({"b": 1, "a": 2, "c": 3})
    assert leaves == [2, 1, 3]
    rebuilt = td.unflatten([10, 20, 30])
    assert list(rebuilt) == ["a", "b", "c"]
    assert rebuilt == {"a": 10, "b": 20, "c": 30}
    assert td == tu.tree_structure({"c": 0, "a": 0, "b": 0})


def test_ordered_dict_keeps_insertion_order():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, td = tu.tree_flatten(od)
    assert leaves == [1, 2]
    rebuilt = td.unflatten(leaves)
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt) == ["b", "a"]
    assert td != tu.tree_structure(collections.OrderedDict([("a", 2), ("b", 1)]))
    assert td != tu.tree_structure({"b": 1, "a": 2})


def test_defaultdict():
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, td = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    rebuilt = td.unflatten([5, 6])
    assert type(rebuilt) is collections.defaultdict
    assert rebuilt.default_factory is list and rebuilt == {"a": 5, "b": 6}
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(dd)] == ["['a']", "['b']"]


def test_none_is_a_node_not_a_leaf():
    assert tu.tree_leaves([None, 1, (None,)]) == [1]
    td = tu.tree_structure(None)
    assert td.num_leaves == 0 and td.num_nodes == 1
    assert tu.tree_map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    assert not tu.all_leaves([None])
    # is_leaf can turn None into a leaf
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    # JAX quirk: treedef_is_leaf is "num_nodes == 1", true for None too.
    assert tu.treedef_is_leaf(td) and not tu.treedef_is_strict_leaf(td)
    assert tu.treedef_is_strict_leaf(tu.tree_structure(3))


def test_namedtuple_preserved_and_distinct_from_tuple():
    p = Point(1, [2, 3])
    leaves, td = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    rebuilt = td.unflatten([4, 5, 6])
    assert type(rebuilt) is Point and rebuilt == Point(4, [5, 6])
    assert td != tu.tree_structure((1, [2, 3]))
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == [".x", ".y[0]", ".y[1]"]


def test_unregistered_types_are_leaves():
    class MyDict(dict):
        pass

    arr = np.arange(3)
    tree = [arr, MyDict(a=1), {1, 2}, "s", 1.5]
    assert len(tu.tree_leaves(tree)) == 5
    assert tu.tree_leaves(tree)[0] is arr


def test_is_leaf_stops_descent():
    tree = {"a": (1, 2), "b": [(3, 4)]}
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: type(x) is tuple)
    assert leaves == [(1, 2), (3, 4)]
    out = tu.tree_map(lambda t, y: t[0] + y, tree, {"a": 10, "b": [20]},
                      is_leaf=lambda x: type(x) is tuple)
    assert out == {"a": 11, "b": [23]}
    pairs = tu.tree_leaves_with_path(tree, is_leaf=lambda x: type(x) is tuple)
    assert [(tu.keystr(p), v) for p, v in pairs] == [("['a']", (1, 2)), ("['b'][0]", (3, 4))]


def test_tree_map_with_path():
    tree = {"w": [1, 2], "b": Point(3, 4)}
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), tree, tree)
    assert out == {"w": [("['w'][0]", 2), ("['w'][1]", 4)],
                   "b": Point(("['b'].x", 6), ("['b'].y", 8))}


def test_prefix_matching():
    prefix = {"a": 1, "b": (2, 3)}
    full = {"a": [10, 11], "b": ({"z": 5}, None)}
    assert tu.tree_structure(prefix).flatten_up_to(full) == [[10, 11], {"z": 5}, None]
    out = tu.tree_map(lambda x, sub: (x, tu.tree_leaves(sub)), prefix, full)
    assert out == {"a": (1, [10, 11]), "b": ((2, [5]), (3, []))}


def test_custom_node_paths():
    tree = [Pair(1, 2), Keyed(3, 4), DC(5, 6)]
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)]
    assert paths == ["[0][<flat index 0>]", "[0][<flat index 1>]",
                     "[1].lo", "[1].hi", "[2].p", "[2].q"]


def test_keystr_options():
    path = (SequenceKey(0), DictKey("a"), GetAttrKey("w"), FlattenedIndexKey(2))
    assert tu.keystr(path) == "[0]['a'].w[<flat index 2>]"
    assert tu.keystr(path, simple=True, separator="/") == "0/a/w/2"
    assert tu.keystr(()) == ""


def test_key_entries_hash_and_eq():
    assert SequenceKey(1) == SequenceKey(1) and hash(SequenceKey(1)) == hash(SequenceKey(1))
    assert SequenceKey(1) != FlattenedIndexKey(1)
    assert hash(SequenceKey(1)) != hash(FlattenedIndexKey(1))
    assert SequenceKey(1).idx == 1 and DictKey("k").key == "k"
    assert GetAttrKey("n").name == "n" and FlattenedIndexKey(3).key == 3


# ---------------------------------------------------------------------------
# Dataclasses
# ---------------------------------------------------------------------------

def test_dataclass_meta_fields_are_static():
    d = DC([1, 2], 3, name="x")
    leaves, td = tu.tree_flatten(d)
    assert leaves == [1, 2, 3]
    assert td != tu.tree_structure(DC([1, 2], 3, name="y"))
    assert td.unflatten([7, 8, 9]) == DC([7, 8], 9, name="x")


def test_register_dataclass_explicit_fields():
    @dataclasses.dataclass
    class Explicit:
        a: Any
        b: Any
        cfg: str

    assert tu.register_dataclass(Explicit, data_fields=["b", "a"], meta_fields=["cfg"]) \
        is Explicit
    leaves, td = tu.tree_flatten(Explicit(1, 2, "c"))
    assert leaves == [2, 1]
    assert td.unflatten([20, 10]) == Explicit(10, 20, "c")


def test_register_dataclass_on_plain_class():
    class Plain:
        def __init__(self, v, k):
            self.v, self.k = v, k

    tu.register_dataclass(Plain, data_fields=["v"], meta_fields=["k"])
    leaves, td = tu.tree_flatten(Plain([1], "k"))
    assert leaves == [1]
    out = td.unflatten([5])
    assert (out.v, out.k) == ([5], "k")


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class A:
        x: Any

    class NotDC:
        pass

    with pytest.raises(TypeError):
        tu.register_dataclass(A, data_fields=["x"])
    with pytest.raises(TypeError):
        tu.register_dataclass(NotDC)
    with pytest.raises(ValueError, match="init fields"):
        tu.register_dataclass(A, data_fields=["x", "nope"], meta_fields=[])


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

def test_tree_map_mismatch_message_shows_both_structures_and_path():
    a = (1, {"a": 2, "b": [3, 4]})
    b = (1, {"a": 2, "b": (3, 4, 5)})
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, a, b)
    msg = str(info.value)
    assert repr(tu.tree_structure(a)) in msg
    assert repr(tu.tree_structure(b)) in msg
    assert "[1]['b']" in msg
    assert "PyTreeDef([*, *])" in msg and "PyTreeDef((*, *, *))" in msg


def test_mismatch_dict_keys_and_leaf_for_node():
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, {"a": 1, "b": [1]}, {"a": 1, "c": [1]})
    msg = str(info.value)
    assert "PyTreeDef({'a': *, 'b': [*]})" in msg and "PyTreeDef({'a': *, 'c': [*]})" in msg
    assert "keys" in msg
    with pytest.raises(ValueError, match=r"\['x'\]\[1\]") as info:
        tu.tree_map(lambda x, y: x, {"x": [1, (2, 3)]}, {"x": [1, 5]})
    assert "PyTreeDef({'x': [*, (*, *)]})" in str(info.value)
    assert "PyTreeDef({'x': [*, *]})" in str(info.value)


def test_mismatch_custom_nodes():
    with pytest.raises(ValueError, match=r"\.lo"):  # keyed node: real key in the path
        tu.tree_map(lambda x, y: x, Keyed([1], 2), Keyed((1,), 2))
    with pytest.raises(ValueError, match="node data") as info:
        tu.tree_map(lambda x, y: x, Box(1, 2, "t"), Box(1, 2, "u"))
    assert "Box['t']" in str(info.value) and "Box['u']" in str(info.value)
    with pytest.raises(ValueError, match="the root"):
        tu.tree_map(lambda x, y: x, Point(1, 2), (1, 2))
    with pytest.raises(ValueError):
        tu.tree_map(lambda x, y: x, [None], [3])  # None only matches None


def test_second_rest_tree_is_named():
    with pytest.raises(ValueError, match=r"rest\[1\]"):
        tu.tree_map(lambda *xs: 0, [1, 2], [1, 2], [1])


def test_unflatten_wrong_leaf_count():
    td = tu.tree_structure({"a": 1, "b": [2, 3]})
    with pytest.raises(ValueError) as info:
        td.unflatten([1, 2])
    msg = str(info.value)
    assert repr(td) in msg and "PyTreeDef([*, *])" in msg
    assert "['b'][1]" in msg
    with pytest.raises(ValueError, match="too many"):
        tu.tree_unflatten(td, [1, 2, 3, 4])


def test_registration_errors():
    with pytest.raises(ValueError):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)
    with pytest.raises(ValueError):
        tu.register_pytree_node(tuple, lambda t: (t, None), lambda a, c: tuple(c))
    with pytest.raises(ValueError):
        tu.register_pytree_node(type(None), lambda t: ((), None), lambda a, c: None)
    with pytest.raises(TypeError):
        tu.register_pytree_node("not a type", lambda t: ((), None), lambda a, c: None)


def test_registration_after_use_takes_effect():
    class Late:
        def __init__(self, v):
            self.v = v

    x = Late(1)
    assert tu.tree_leaves([x]) == [x]  # a leaf while unregistered
    tu.register_pytree_node(Late, lambda l: ((l.v,), None), lambda a, c: Late(*c))
    assert tu.tree_leaves([x]) == [1]


# ---------------------------------------------------------------------------
# Utilities
# ---------------------------------------------------------------------------

def test_tree_all_reduce():
    assert tu.tree_all([True, (1, {"a": True})])
    assert not tu.tree_all([True, (0,)])
    assert tu.tree_all([])
    assert tu.tree_reduce(operator.add, [1, (2, {"a": 3})]) == 6
    assert tu.tree_reduce(operator.add, [], 10) == 10
    assert tu.tree_reduce(operator.add, [(1, 2), [(3,)]], (),
                          is_leaf=lambda x: type(x) is tuple) == (1, 2, 3)


def test_tree_transpose():
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure({"a": 0, "b": 0})
    tree = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    expected = {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert tu.tree_transpose(outer, inner, tree) == expected
    assert tu.tree_transpose(outer, None, tree) == expected
    with pytest.raises(TypeError):
        tu.tree_transpose(outer, inner, tree[:2])


def test_all_leaves():
    assert tu.all_leaves([1, "a", np.zeros(2)])
    assert not tu.all_leaves([1, [2]])
    assert tu.all_leaves([1, [2]], is_leaf=lambda x: isinstance(x, list))


def test_treedef_tuple_and_children():
    a, b = tu.tree_structure([1, 2]), tu.tree_structure({"k": 1})
    td = tu.treedef_tuple([a, b])
    assert td == tu.tree_structure(([0, 0], {"k": 0}))
    assert td.children() == [a, b] == tu.treedef_children(td)
    assert td.unflatten([1, 2, 3]) == ([1, 2], {"k": 3})
    assert td.node_data() == (tuple, None)
    assert tu.tree_structure(5).node_data() is None
    assert tu.treedef_is_leaf(tu.tree_structure(5))
    assert not tu.treedef_is_leaf(td)


def test_treedef_not_equal_to_other_objects():
    td = tu.tree_structure([1])
    assert td != [1] and td != "PyTreeDef([*])"
    assert tu.tree_structure([1]) != tu.tree_structure((1,))
    assert tu.tree_structure([1, 2]) != tu.tree_structure([1])


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------

def _f(a, b, c=0):
    return a + 10 * b + 100 * c


def test_partial_is_a_pytree():
    p = Partial(_f, 1, c=3)
    assert p(2) == 321
    leaves, td = tu.tree_flatten(p)
    assert leaves == [1, 3]
    q = td.unflatten([4, 5])
    assert isinstance(q, Partial) and q(2) == 524
    assert td == tu.tree_structure(Partial(_f, 9, c=9))
    assert td != tu.tree_structure(Partial(operator.add, 9, c=9))
    doubled = tu.tree_map(lambda x: 2 * x, p)
    assert doubled(0) == 2 + 600


def test_partial_nested_and_functools_partial():
    nested = Partial(Partial(_f, 1), 2)
    assert tu.tree_leaves(nested) == [1, 2] and nested() == 21
    # A plain functools.partial stays static: its args are not leaves.
    p = Partial(functools.partial(_f, 1), 2)
    assert tu.tree_leaves(p) == [2]
    assert p() == 21
    assert tu.tree_structure(p) == tu.tree_structure(Partial(p.func, 0))
    hash(tu.tree_structure(p))


def test_partial_in_tree_map_with_arrays():
    p = Partial(np.add, np.ones(2))
    out = tu.tree_map(lambda x: x * 3, p)
    np.testing.assert_array_equal(out(np.zeros(2)), np.full(2, 3.0))


@settings(max_examples=50)
@given(trees)
def test_partial_roundtrip_over_random_args(tree):
    p = Partial(lambda *a, **k: (a, k), tree, kw=tree)
    leaves, td = tu.tree_flatten(p)
    q = td.unflatten(leaves)
    assert q() == ((tree,), {"kw": tree})


def test_flatten_func_may_return_any_iterable():
    class Gen:
        def __init__(self, *xs):
            self.xs = xs

    tu.register_pytree_node(Gen, lambda g: ((x for x in g.xs), len(g.xs)),
                            lambda n, ch: Gen(*ch))
    out = tu.tree_map(lambda a, b: a + b, Gen(1, 2), Gen(10, 20))
    assert out.xs == (11, 22)
    with pytest.raises(ValueError, match="node data"):
        tu.tree_map(lambda a, b: a, Gen(1, 2), Gen(1))


def test_register_pytree_with_keys_class():
    @tu.register_pytree_with_keys_class
    class Named:
        def __init__(self, **kw):
            self.kw = kw

        def tree_flatten_with_keys(self):
            names = sorted(self.kw)
            return [(GetAttrKey(n), self.kw[n]) for n in names], tuple(names)

        @classmethod
        def tree_unflatten(cls, names, children):
            return cls(**dict(zip(names, children)))

    pairs, td = tu.tree_flatten_with_path(Named(b=1, a=[2]))
    assert [(tu.keystr(p), v) for p, v in pairs] == [(".a[0]", 2), (".b", 1)]
    assert td.unflatten([5, 6]).kw == {"a": [5], "b": 6}


def test_jax_tree_short_names_and_ravel_pytree():
    import fungrad
    import fungrad.numpy as fnp
    from fungrad.flatten_util import ravel_pytree
    t = {"a": np.ones((2, 3)), "b": (np.arange(3.0), 2.0)}
    assert fungrad.tree.leaves(t) == fungrad.tree_util.tree_leaves(t)
    assert fungrad.tree.structure(fungrad.tree.map(lambda x: x, t)) == fungrad.tree.structure(t)
    assert fungrad.tree.broadcast((1, 2), ((3, 4), {"x": 5})) == ((1, 1), {"x": 2})
    assert fungrad.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3]) == 6
    assert fungrad.tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    flat, unravel = ravel_pytree(t)
    np.testing.assert_array_equal(flat, np.r_[np.ones(6), np.arange(3.0), 2.0])
    back = unravel(flat)
    assert fungrad.tree.structure(back) == fungrad.tree.structure(t)
    np.testing.assert_array_equal(back["a"], t["a"])
    g = fungrad.grad(lambda t: fnp.sum(ravel_pytree(t)[0] ** 2))(t)
    np.testing.assert_array_equal(g["b"][0], 2 * np.arange(3.0))
    with pytest.raises(ValueError, match="length 10"):
        unravel(np.ones(3))
