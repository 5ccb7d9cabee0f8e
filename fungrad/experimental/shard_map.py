"""``jax.experimental.shard_map.shard_map``: the older spelling of
``fungrad.shard_map`` (JAX kept it when ``jax.shard_map`` became public), with
its positional ``mesh``/``in_specs``/``out_specs`` and ``check_rep``."""
from __future__ import annotations

from typing import Callable

from fungrad.shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f: Callable, mesh, in_specs, out_specs, check_rep: bool = True,
              auto=frozenset()):
    """``shard_map(f, mesh, in_specs, out_specs)``: see ``fungrad.shard_map``.
    ``auto`` (axes left to the compiler's partitioner) must be empty: fungrad
    maps every mesh axis by hand."""
    if auto:
        raise NotImplementedError(f"shard_map(auto={set(auto)}): fungrad does not partition "
                                  "mesh axes automatically; name every axis in the specs or "
                                  "leave it replicated")
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      check_rep=check_rep)
