"""``jax._src.util``: JAX's list helpers.

Who imports it: JAX's own "Writing custom Jaxpr interpreters" notebook
(``from jax._src.util import safe_map``, to walk a jaxpr's equations), and
interpreters written after it. The helpers are small and exact: lengths are
checked where JAX's ``safe_*`` check them, so a mismatch is an error naming
the lengths, not a silently truncated ``zip``.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from fungrad.api_util import safe_map
from fungrad.lax.control_flow.common import merge_lists, partition_list, split_list

__all__ = ["safe_map", "safe_zip", "unzip2", "unzip3", "split_list", "partition_list",
           "merge_lists", "concatenate", "unflatten", "subvals", "curry", "canonicalize_axis",
           "tuple_insert", "tuple_delete", "tuple_update", "wrap_name"]


def safe_zip(*args) -> list[tuple]:
    """``list(zip(*args))``, requiring equal lengths."""
    args = [list(a) for a in args]
    lengths = [len(a) for a in args]
    if len(set(lengths)) > 1:
        raise ValueError(f"safe_zip: length mismatch {lengths}")
    return list(zip(*args))


def unzip2(pairs: Iterable[tuple]) -> tuple[tuple, tuple]:
    """``[(a, b), ...]`` -> ``((a, ...), (b, ...))`` (empty input: two empty tuples)."""
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def unzip3(triples: Iterable[tuple]) -> tuple[tuple, tuple, tuple]:
    firsts, seconds, thirds = [], [], []
    for a, b, c in triples:
        firsts.append(a)
        seconds.append(b)
        thirds.append(c)
    return tuple(firsts), tuple(seconds), tuple(thirds)


def concatenate(lists: Iterable[Sequence]) -> list:
    return [x for xs in lists for x in xs]


def unflatten(flat: Iterable, sizes: Sequence[int]) -> list[list]:
    """Split ``flat`` into consecutive lists of the given sizes (all of it)."""
    flat = list(flat)
    if sum(sizes) != len(flat):
        raise ValueError(f"unflatten: sizes {list(sizes)} do not add up to {len(flat)}")
    return split_list(flat, sizes[:-1]) if sizes else []


def subvals(seq: Sequence, replace: Iterable[tuple[int, object]]) -> tuple:
    """``seq`` as a tuple with the ``(index, value)`` replacements made."""
    out = list(seq)
    for i, v in replace:
        out[i] = v
    return tuple(out)


def curry(f: Callable) -> Callable:
    """``curry(f)(x)(y) == f(x, y)``."""
    import functools
    return functools.partial(functools.partial, f)


def canonicalize_axis(axis: int, num_dims: int) -> int:
    """``axis`` in ``[0, num_dims)``, negative axes counted from the end."""
    axis = int(axis)
    if not -num_dims <= axis < num_dims:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {num_dims}")
    return axis % num_dims if num_dims else axis


def tuple_insert(t: tuple, idx: int, val) -> tuple:
    return t[:idx] + (val,) + t[idx:]


def tuple_delete(t: tuple, idx: int) -> tuple:
    return t[:idx] + t[idx + 1:]


def tuple_update(t: tuple, idx: int, val) -> tuple:
    return t[:idx] + (val,) + t[idx + 1:]


def wrap_name(transform_name: str, name: str) -> str:
    """JAX's naming of a transformed function: ``jvp(f)``."""
    return f"{transform_name}({name})"

