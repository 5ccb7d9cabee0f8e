"""``fungrad.tree``: the short names of ``jax.tree`` (``tree.map``, ``tree.leaves``, ...),
the same functions as ``fungrad.tree_util``'s ``tree_*``."""
from __future__ import annotations

from typing import Any, Callable

from fungrad import tree_util as _tu

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "structure", "transpose",
           "unflatten"]

all = _tu.tree_all  # noqa: A001 (JAX's names)
flatten = _tu.tree_flatten
flatten_with_path = _tu.tree_flatten_with_path
leaves = _tu.tree_leaves
leaves_with_path = _tu.tree_leaves_with_path
map = _tu.tree_map  # noqa: A001
map_with_path = _tu.tree_map_with_path
reduce = _tu.tree_reduce
structure = _tu.tree_structure
transpose = _tu.tree_transpose
unflatten = _tu.tree_unflatten


def reduce_associative(operation: Callable, tree, *, identity=_tu._MISSING,
                       is_leaf: Callable[[Any], bool] | None = None):
    """Reduce the leaves with an associative ``operation`` (here left to right);
    ``identity`` is the result for a tree without leaves."""
    xs = leaves(tree, is_leaf=is_leaf)
    if not xs:
        if identity is _tu._MISSING:
            raise TypeError("tree.reduce_associative: the tree has no leaves; give identity=")
        return identity
    return reduce(operation, xs)


def broadcast(prefix_tree, full_tree, is_leaf: Callable[[Any], bool] | None = None):
    """``prefix_tree`` with each of its leaves repeated over the matching subtree
    of ``full_tree``."""
    return map(lambda leaf, subtree: map(lambda _: leaf, subtree), prefix_tree, full_tree,
               is_leaf=is_leaf)
