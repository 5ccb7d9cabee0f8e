"""Workloads on a Dask LocalCluster of 2 worker processes (fungrad.distributed).

``python -m benchmarks --only shard_map`` / ``--only data_parallel``.  One
cluster serves both: "1 worker" is a mesh of its first worker only.  Every
call blocks until its results exist on the workers (``block_until_ready``), so
a time is a whole step: task submission, the scheduler's round trips, compute
and the collectives' transfers.
"""
from __future__ import annotations

import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.sharding import Mesh, NamedSharding, P

from benchmarks.workloads import _mlp_loss, as_fungrad, mlp_setup

_CLUSTER = []


def _workers(n_workers: int = 2):
    if not _CLUSTER:
        _CLUSTER.append(fungrad.distributed.initialize(n_workers=n_workers, timeout=120))
    return fungrad.devices()


def _mesh(devices) -> Mesh:
    return Mesh(np.array(devices, dtype=object), ("data",))


def make_shard_map_empty_step():
    """Per-step overhead: a shard_map whose body returns its block."""
    devices = _workers()
    impls = {}
    for n in (1, 2):
        mesh = _mesh(devices[:n])
        x = fungrad.device_put(np.arange(8.0), NamedSharding(mesh, P("data")))
        step = fungrad.jit(fungrad.shard_map(lambda b: b, mesh=mesh, in_specs=P("data"),
                                             out_specs=P("data")))
        impls[f"{n} worker{'s' * (n > 1)}"] = (lambda s=step, x=x: s(x).block_until_ready())
    return "empty shard_map step (scheduler round trip), jit, block_until_ready", impls


def _sgd_step(params, x, onehot, lr=0.1):
    loss, grads = fungrad.value_and_grad(lambda p: _mlp_loss(fnp, p, x, onehot))(params)
    return fungrad.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss


def _data_parallel_step(params, xb, yb):
    # the local batch's mean gradient, averaged over the workers: the full batch's
    loss, grads = fungrad.value_and_grad(lambda p: _mlp_loss(fnp, p, xb, yb))(params)
    grads, loss = lax.pmean((grads, loss), "data")
    return fungrad.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


GLOBAL_BATCH = 1024


def communication_bytes(params, n_workers: int) -> int:
    """Bytes moved between workers per step: the tree all-reduce of the gradients
    (and the loss) sends each worker's payload up the tree and the sum back."""
    payload = sum(w.nbytes + b.nbytes for w, b in params) + 8
    return 2 * (n_workers - 1) * payload


def make_data_parallel_mlp():
    """A training step of the 784-512-512-10 MLP, batch 1024 split over the workers,
    against the same step in one process under jit."""
    devices = _workers()
    params, x, onehot = as_fungrad(mlp_setup(batch=GLOBAL_BATCH))
    local = fungrad.jit(lambda p, x, y: _sgd_step(p, x, y))
    impls = {"one process, jit": (lambda: local(params, x, onehot)[1].block_until_ready())}
    want = float(local(params, x, onehot)[1])
    for n in (1, 2):
        mesh = _mesh(devices[:n])
        step = fungrad.jit(fungrad.shard_map(_data_parallel_step, mesh=mesh,
                                             in_specs=(P(), P("data"), P("data")),
                                             out_specs=(P(), P())))
        p = fungrad.device_put(params, NamedSharding(mesh, P()))
        xb, yb = fungrad.device_put((x, onehot), NamedSharding(mesh, P("data")))
        got = float(step(p, xb, yb)[1])
        assert abs(got - want) <= 1e-12 * abs(want), (got, want)     # same numbers
        impls[f"shard_map, {n} worker{'s' * (n > 1)}"] = (
            lambda s=step, p=p, xb=xb, yb=yb: s(p, xb, yb)[1].block_until_ready())
    mb = communication_bytes(params, 2) / 2**20
    return (f"data-parallel MLP 784-512-512-10 SGD step, batch {GLOBAL_BATCH} "
            f"({mb:.1f} MiB between the 2 workers per step)", impls)


WORKLOADS = [make_shard_map_empty_step, make_data_parallel_mlp]
