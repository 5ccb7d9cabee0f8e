"""``associative_scan``: all prefix combinations of an associative operation.

Not a primitive: a parallel prefix built from slices, concatenations and
calls of ``fn`` on whole arrays (O(log n) rounds), so every transformation
applies to it through those operations.
"""
from __future__ import annotations

from typing import Callable

from fungrad.core import get_aval
from fungrad.interpreters.partial_eval import as_value
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["associative_scan"]


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """``jax.lax.associative_scan``: all prefix combinations ``fn(...fn(e0, e1)..., ei)``
    along ``axis`` for an associative ``fn`` (elementwise over its pytree
    arguments' slices), in O(log n) rounds of whole-array calls to ``fn``
    (pairs combined, the half-length problem solved recursively, the rest
    filled in), with no new primitive: it differentiates, vmaps and jits
    through the slicing and ``fn``."""
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    leaves = [as_value(x) for x in leaves]
    ndim = get_aval(leaves[0]).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"associative_scan: axis {axis} is out of range for arrays of rank {ndim}")
    axis = axis % ndim
    lengths = {get_aval(x).shape[axis] if get_aval(x).ndim > axis else None for x in leaves}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(f"associative_scan: every leaf of elems needs the same length along "
                         f"axis {axis}, got shapes {[get_aval(x).shape for x in leaves]}")

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return the structure of elems "
                            f"({tree}), got {out_tree}")
        return out_leaves
    from fungrad import lax
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]
    out = _prefix_scan(combine, leaves, axis, lengths.pop())
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


def _prefix_scan(combine, elems, axis, n):
    from fungrad import lax
    if n < 2:
        return elems
    take = lambda xs, start, stop, step=1: [
        lax.slice_in_dim(x, start, stop, step, axis) for x in xs]
    pairs = combine(take(elems, 0, n - 1, 2), take(elems, 1, n, 2))     # e0+e1, e2+e3, ...
    odd = _prefix_scan(combine, pairs, axis, n // 2)                     # prefixes 1, 3, 5...
    n_rest = (n - 1) // 2                                                # e2, e4, ...
    first = take(elems, 0, 1)                                            # prefix 0 = e0
    if n_rest:                                  # prefix 2k = prefix (2k-1) + e_2k
        tail = combine(take(odd, 0, n_rest), take(elems, 2, n, 2))
        even = [lax.concatenate([f, t], axis) for f, t in zip(first, tail)]
    else:
        even = first
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _interleave(even, odd, axis):
    """``even[0], odd[0], even[1], odd[1], ...`` along ``axis`` (even may be one longer)."""
    from fungrad import lax
    n_even, n_odd = get_aval(even).shape[axis], get_aval(odd).shape[axis]
    head = lax.slice_in_dim(even, 0, n_odd, 1, axis)
    shape = list(get_aval(odd).shape)
    both = lax.concatenate([lax.expand_dims(head, (axis + 1,)), lax.expand_dims(odd, (axis + 1,))],
                           axis + 1)
    shape[axis] = 2 * n_odd
    merged = lax.reshape(both, tuple(shape))
    if n_even == n_odd:
        return merged
    return lax.concatenate([merged, lax.slice_in_dim(even, n_odd, n_even, 1, axis)], axis)
