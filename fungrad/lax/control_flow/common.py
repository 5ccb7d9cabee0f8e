"""What the control-flow primitives share: named groups of operands, the
cache of jaxprs derived from several jaxprs at once, the JVP of a loop body.

The operands of a control-flow primitive come in groups (scan: consts, carry,
xs; while: cond consts, body consts, carry).  Rules read them with
``split_list`` and separate known/unknown or zero/nonzero members with
``partition_list`` / ``merge_lists`` (autodidax's helpers), instead of
counting positions by hand.
"""
from __future__ import annotations

from typing import Callable, Sequence

from fungrad import _config
from fungrad.core import ClosedJaxpr, get_aval
from fungrad.interpreters import ad
from fungrad.interpreters.partial_eval import permute_binders

__all__ = ["split_list", "partition_list", "merge_lists", "cached", "grouped_jvp_jaxpr",
           "lane_mask", "python_control_flow"]


def python_control_flow() -> bool:
    """Under ``jax_disable_jit`` control flow runs as Python on the values (so that
    print and pdb see them), as JAX's does."""
    return _config.disable_jit.value


def split_list(seq: Sequence, sizes: Sequence[int]) -> list[list]:
    """``seq`` cut into consecutive groups of ``sizes``, then the rest:
    ``split_list([a, b, c, d], [1, 2]) == [[a], [b, c], [d]]``."""
    groups, start = [], 0
    for n in sizes:
        groups.append(list(seq[start:start + n]))
        start += n
    groups.append(list(seq[start:]))
    return groups


def partition_list(flags: Sequence[bool], seq: Sequence) -> tuple[list, list]:
    """``(members whose flag is False, members whose flag is True)``."""
    falses, trues = [], []
    for f, x in zip(flags, seq):
        (trues if f else falses).append(x)
    return falses, trues


def merge_lists(flags: Sequence[bool], falses: Sequence, trues: Sequence) -> list:
    """The inverse of ``partition_list``."""
    f_it, t_it = iter(falses), iter(trues)
    return [next(t_it) if f else next(f_it) for f in flags]


def cached(kind: str, jaxprs: Sequence[ClosedJaxpr], extra, build: Callable):
    """``build()`` once per (``jaxprs``, ``extra``): a jaxpr derived from several
    (a cond's branches, a while loop's cond and body), cached on the first one,
    so it dies with it (the key keeps the others alive meanwhile)."""
    first, rest = jaxprs[0], tuple(jaxprs[1:])
    return first.derived((kind, rest, extra), build)


def grouped_jvp_jaxpr(closed: ClosedJaxpr, in_sizes: Sequence[int], nonzeros,
                      out_sizes: Sequence[int], instantiate):
    """``ad.jvp_jaxpr`` with every group of inputs and of outputs followed by the
    tangents of its members: ``(g1, T g1', g2, T g2', ...) -> (h1, T h1', ...)``,
    the layout of a loop whose consts, carry and xs each gain tangents.
    ``in_sizes``/``out_sizes`` cover all inputs/outputs.  Returns
    ``(jaxpr, out_nonzeros)``."""
    jvp, out_nonzeros = ad.jvp_jaxpr(closed, nonzeros, instantiate)
    in_order = _tangents_after_groups(in_sizes, nonzeros)
    out_order = _tangents_after_groups(out_sizes, out_nonzeros)
    return permute_binders(jvp, in_order, out_order), out_nonzeros


def _tangents_after_groups(sizes, nonzeros) -> list[int]:
    """Positions in ``(values..., tangents of the nonzero ones...)`` read group by
    group, each group's values then its tangents."""
    n = len(nonzeros)
    assert sum(sizes) == n, (sizes, n)
    tangent_at, k = {}, n
    for i, nz in enumerate(nonzeros):
        if nz:
            tangent_at[i] = k
            k += 1
    order, start = [], 0
    for size in sizes:
        group = range(start, start + size)
        order += list(group) + [tangent_at[i] for i in group if i in tangent_at]
        start += size
    return order


def lane_mask(live, x):
    """The per-lane predicate ``live`` (shape (n,)) of a vmapped loop, reshaped to
    broadcast against the batched value ``x``."""
    from fungrad import lax
    return lax.reshape(live, live.shape + (1,) * (get_aval(x).ndim - 1))
