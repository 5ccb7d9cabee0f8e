"""Cases for the collectives added for shard_map (psum_scatter, ppermute,
all_to_all, axis_size, tuple axis names) under a named vmap.

Each case wraps the collective in the vmap that binds its axis, as the cases
of tests/cases/transforms.py do; the generic tests then nest it inside vmap,
jvp, vjp, jit and make_jaxpr.
"""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.distributed import simulated_devices
from fungrad.sharding import Mesh, P
from tests.harness import Arg, Case

# shard_map on two devices of this process (the named-vmap execution)
_MESH = Mesh(simulated_devices(2), ("data",))


def _normalise_rows(b):
    # per-block rows divided by the global column sums (a psum across blocks)
    return fnp.sin(b) / (lax.psum(fnp.sum(b * b, axis=0), "data") + 1.0)


def _named(f, name="i"):
    return lambda x: fungrad.vmap(f, axis_name=name)(x)


def _two_axes(f):
    """Lanes on a (rows, cols) grid: axis 0 is named "r", axis 1 "c"."""
    return lambda x: fungrad.vmap(fungrad.vmap(f, axis_name="c"), axis_name="r")(x)


def _all_to_all_ref(x, split, concat):
    # lane i receives chunk i (along split) of every lane j, concatenated along concat
    n = x.shape[0]
    chunk = x.shape[1 + split] // n
    take = lambda j, i: np.take(x[j], range(i * chunk, (i + 1) * chunk), axis=split)
    return np.stack([np.concatenate([take(j, i) for j in range(n)], axis=concat)
                     for i in range(n)])


def _shift(x):
    # lane i+1 receives lane i; lane 0 receives nothing (zeros)
    return np.concatenate([np.zeros_like(x[:1]), x[:-1]])


CASES = [
    Case("shard_map_sharded", fungrad.shard_map(_normalise_rows, mesh=_MESH, in_specs=P("data"),
                                                out_specs=P("data")),
         lambda x: np.sin(x) / (np.sum(x * x, axis=0) + 1.0), [Arg((4, 3))],
         prims=("shard_map", "psum")),
    Case("shard_map_replicated",
         fungrad.shard_map(lambda w, b: (lax.all_gather(b * w, "data", tiled=True),
                                         lax.pmean(fnp.tanh(b @ w), "data")),
                           mesh=_MESH, in_specs=(P(), P("data")), out_specs=(P(), P())),
         lambda w, x: (x * w, np.mean(np.tanh(x @ w).reshape(2, -1), axis=0)),
         [Arg((3,)), Arg((4, 3))], prims=("shard_map", "all_gather", "psum")),
    # pvary: the replicated value typed as varying, stacked by the out spec
    Case("shard_map_pvary", fungrad.shard_map(lambda w: fnp.sin(lax.pvary(w, "data")) * 2.0,
                                              mesh=_MESH, in_specs=P(), out_specs=P("data")),
         lambda w: np.tile(np.sin(w) * 2.0, 2), [Arg((3,))], prims=("shard_map", "pvary")),
    Case("pvary_named", _named(lambda v: lax.pcast(v, "i", to="varying") * v),
         lambda x: x * x, [Arg((3, 2))], prims=("pvary",)),
    Case("psum_scatter", _named(lambda v: lax.psum_scatter(v, "i")),
         lambda x: np.sum(x, axis=0), [Arg((3, 3, 2))], prims=("psum_scatter",)),
    Case("psum_scatter_tiled", _named(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1,
                                                                 tiled=True)),
         lambda x: np.moveaxis(np.sum(x, 0).reshape(2, 2, 3), 1, 0),
         [Arg((2, 2, 6))], prims=("psum_scatter",)),
    Case("ppermute_cycle", _named(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])),
         lambda x: np.roll(x, 1, axis=0), [Arg((3, 2))], prims=("ppermute",)),
    Case("ppermute_shift", _named(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3)]) * v),
         lambda x: _shift(x) * x, [Arg((4, 2))], prims=("ppermute",)),
    Case("all_to_all_tiled", _named(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True)),
         lambda x: _all_to_all_ref(x, 0, 1), [Arg((2, 4, 3))], prims=("all_to_all",)),
    Case("all_to_all", _named(lambda v: lax.all_to_all(v, "i", 1, 0)),
         lambda x: np.stack([x[:, :, i] for i in range(x.shape[0])]),
         [Arg((3, 2, 3))], prims=("all_to_all",)),
    Case("axis_size", _named(lambda v: v * lax.axis_size("i") - lax.psum(v, "i")),
         lambda x: x * x.shape[0] - np.sum(x, axis=0), [Arg((3, 2))], prims=("psum",)),
    Case("psum_two_axes", _two_axes(lambda v: lax.psum(v, ("r", "c")) * v),
         lambda x: np.sum(x, axis=(0, 1)) * x, [Arg((2, 3, 2))], prims=("psum",)),
    Case("axis_index_two_axes", _two_axes(lambda v: v * lax.axis_index(("r", "c"))),
         lambda x: x * np.arange(6).reshape(2, 3, 1), [Arg((2, 3, 2))], prims=("axis_index",)),
    Case("all_gather_two_axes", _two_axes(lambda v: lax.all_gather(v, ("r", "c")) * 1.0),
         lambda x: np.broadcast_to(x.reshape(6, 2), (2, 3, 6, 2)),
         [Arg((2, 3, 2))], prims=("all_gather",)),
    # a collective over the outer axis inside an inner vmap acts lane by lane on
    # the inner axis (its axis param shifted past the inner batch axis)
    Case("all_gather_inner_vmap", _two_axes(lambda v: lax.all_gather(v, "r", axis=1) * 1.0),
         lambda x: np.broadcast_to(np.moveaxis(x, 0, 2)[None], (2,) + x.shape[1:2] + x.shape[2:3]
                                   + (2,) + x.shape[3:]),
         [Arg((2, 3, 2, 1))], prims=("all_gather",)),
]
