"""fungrad on a Dask cluster: a 2-worker LocalCluster on 127.0.0.1, started once
for this module and shut down at its end (the test checks that no worker
process is left behind).

Every result computed on the cluster is compared with the same program run in
this process (a mesh of ``simulated_devices``: nested named vmaps), or with
one-process ``jit``.  The worker-killing test is last: it leaves a restarted
worker behind it.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import time

import numpy as np
import psutil
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, nn
from fungrad.distributed import WorkerDevice, simulated_devices
from fungrad.sharding import Mesh, NamedSharding, P, ShardedArray

RNG = np.random.default_rng(1)


def _exited(pid) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture(scope="module")
def cluster():
    faulthandler.dump_traceback_later(900, exit=True)    # a hung cluster must not hang CI
    handle = fungrad.distributed.initialize(n_workers=2, threads_per_worker=1, timeout=60)
    try:
        yield handle
    finally:
        pids = set(handle.client.run(os.getpid).values())
        fungrad.distributed.shutdown()
        faulthandler.cancel_dump_traceback_later()
        deadline = time.monotonic() + 30
        while not all(map(_exited, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(map(_exited, pids)), "worker processes were left behind"
        assert fungrad.devices() == [fungrad.core.cpu_device]


def worker_mesh(*shape, names=("data",)):
    devices = np.array(fungrad.devices(), dtype=object)
    return Mesh(devices.reshape(shape or devices.shape), names)


def local_mesh(mesh):
    """A mesh of this process's devices with ``mesh``'s shape and names."""
    devices = np.array(simulated_devices(mesh.size), dtype=object).reshape(mesh.devices.shape)
    return Mesh(devices, mesh.axis_names)


def on_both(body, mesh, in_specs, out_specs, *args):
    """(cluster result gathered, in-process result) of the same shard_map."""
    got = fungrad.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(*args)
    ref = fungrad.shard_map(body, mesh=local_mesh(mesh), in_specs=in_specs,
                            out_specs=out_specs)(*args)
    return fungrad.device_get(got), ref


def assert_trees_close(a, b, rtol=1e-12, atol=1e-13):
    la, lb = fungrad.tree_util.tree_leaves(a), fungrad.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------
# Devices and placement
# ----------------------------------------------------------------------------

def test_workers_are_the_devices(cluster):
    devices = fungrad.devices()
    assert len(devices) == 2 and all(isinstance(d, WorkerDevice) for d in devices)
    assert [d.id for d in devices] == [0, 1]
    assert all(d.address.startswith("tcp://127.0.0.1:") for d in devices)
    assert fungrad.device_count() == 2 and fungrad.local_device_count() == 2
    assert fungrad.default_backend() == "cpu"
    with pytest.raises(RuntimeError, match="already initialised"):
        fungrad.distributed.initialize(n_workers=1)


def test_device_put_places_each_block_on_its_worker(cluster):
    mesh = worker_mesh()
    x = RNG.standard_normal((8, 3))
    a = fungrad.device_put(x, NamedSharding(mesh, P("data")))
    assert isinstance(a, ShardedArray) and a.shape == (8, 3) and a.dtype == np.float64
    assert a.sharding == NamedSharding(mesh, P("data"))
    who = cluster.client.who_has([r.future for r in a.block_until_ready()._refs])
    for ref, device in zip(a._refs, mesh.devices.flat):
        assert device.address in who[ref.future.key]
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(a.addressable_shards[1].data, x[4:])
    assert str(mesh.devices.flat[1].address) in fungrad.sharding.describe_shards(a)
    mesh2 = worker_mesh(1, 2, names=("data", "model"))
    with pytest.raises(ValueError, match="dimension 1 has size 3, which is not divisible by 2"):
        fungrad.device_put(x, NamedSharding(mesh2, P(None, "model")))
    c = fungrad.device_put(x.T, NamedSharding(mesh2, P(None, "model")))
    np.testing.assert_array_equal(fungrad.device_get(c), x.T)
    single = fungrad.device_put(x, fungrad.devices()[1])
    assert single.device is fungrad.devices()[1]
    np.testing.assert_array_equal(np.asarray(single), x)


def test_jit_with_shardings_is_correct_and_places_its_outputs(cluster, caplog):
    import logging
    mesh = worker_mesh()
    batch = NamedSharding(mesh, P("data"))
    x, w = RNG.standard_normal((8, 3)), RNG.standard_normal(3)
    step = fungrad.jit(lambda w, x: (fnp.tanh(x @ w), fnp.sum(x ** 2)),
                       in_shardings=(None, batch), out_shardings=(batch, None))
    xb = fungrad.device_put(x, batch)
    with caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        out, total = step(w, xb)
        step(w, xb)
        # partitioned automatically (distributed/partition.py): not gathered
        assert "gathered" not in caplog.text
        # a sort along the sharded axis runs on the all-gathered value on every
        # worker, the rest split (said once)
        sort = fungrad.jit(lambda x: fnp.sort(x, axis=0) * x)
        np.testing.assert_allclose(fungrad.device_get(sort(xb)), np.sort(x, axis=0) * x,
                                   rtol=1e-15)
        sort(xb)
        # a program with a side effect runs once, gathered into this process (said once)
        noisy = fungrad.jit(lambda x: fungrad.debug.callback(lambda v: None, x) or x + 1)
        np.testing.assert_array_equal(noisy(xb), x + 1)
        noisy(xb)
    assert caplog.text.count("all-gathered") == 1
    assert caplog.text.count("gathered into this process") == 1
    assert isinstance(out, ShardedArray) and out.sharding == batch
    np.testing.assert_allclose(fungrad.device_get(out), np.tanh(x @ w), rtol=1e-14)
    np.testing.assert_allclose(total, np.sum(x ** 2), rtol=1e-14)
    with pytest.raises(ValueError, match=r"argument \[1\] \(shape \(7, 3\), mesh "):
        step(w, x[:7])


def test_pmap_runs_one_lane_per_worker(cluster):
    x = RNG.standard_normal((2, 3))
    w = RNG.standard_normal(3)

    def lane(v, w, scale):
        total = lax.psum(fnp.sum(v * w), "i")
        gathered = lax.all_gather(v, "i")
        shifted = lax.ppermute(v, "i", perm=[(0, 1), (1, 0)])
        return {"share": fnp.sum(v * w) / total * scale, "all": gathered,
                "next": shifted, "me": lax.axis_index("i")}
    got = fungrad.pmap(lane, axis_name="i", in_axes=(0, None, None),
                       static_broadcasted_argnums=2)(x, w, 2.0)
    assert isinstance(got["share"], ShardedArray)
    assert len(got["share"].sharding.device_set) == 2        # a lane on each worker
    want = fungrad.vmap(lambda v: lane(v, w, 2.0), axis_name="i")(x)
    assert_trees_close(fungrad.device_get(got), want)
    with pytest.raises(ValueError, match="requires 3 logical devices, but only 2"):
        fungrad.pmap(lambda v: v, axis_name="i")(np.ones((3, 2)))


def test_make_array_from_callback_places_blocks_on_the_workers(cluster):
    mesh = worker_mesh()
    x = RNG.standard_normal((6, 2))
    asked = []
    a = fungrad.make_array_from_callback(x.shape, NamedSharding(mesh, P("data")),
                                         lambda idx: asked.append(idx) or x[idx])
    assert isinstance(a, ShardedArray) and a.is_fully_addressable and len(asked) == 2
    np.testing.assert_array_equal(a.addressable_data(1), x[3:])
    np.testing.assert_array_equal(fungrad.device_get(a), x)
    assert fungrad.devices("cpu") == fungrad.devices()


# ----------------------------------------------------------------------------
# shard_map on the cluster == the same body in this process
# ----------------------------------------------------------------------------

def test_every_collective_matches_the_in_process_run(cluster):
    mesh = worker_mesh()
    x = RNG.standard_normal((8, 3))

    def body(b):
        return (lax.psum(b, "data"), lax.pmean(fnp.sin(b), "data"), lax.pmax(b, "data"),
                lax.pmin(b, "data"), lax.all_gather(b, "data"),
                lax.psum_scatter(b, "data", scatter_dimension=0, tiled=True),
                lax.ppermute(b, "data", [(0, 1)]),
                lax.all_to_all(b, "data", 0, 1, tiled=True),
                b * lax.axis_index("data") + lax.axis_size("data"))
    specs = (P(), P(), P(), P(), P(), P("data"), P("data"), P("data"), P("data"))
    got, ref = on_both(body, mesh, P("data"), specs, x)
    assert_trees_close(got, ref)
    # and the reference is the body under a named vmap over the blocks
    lanes = fungrad.vmap(body, axis_name="data")(x.reshape(2, 4, 3))
    np.testing.assert_allclose(got[0], lanes[0][0], rtol=1e-13)
    np.testing.assert_allclose(got[6], np.concatenate(list(lanes[6])), rtol=1e-13)


def test_two_axis_mesh_on_the_cluster(cluster):
    mesh = worker_mesh(1, 2, names=("data", "model"))
    x, w = RNG.standard_normal((4, 6)), RNG.standard_normal(6)

    def body(xb, wb):
        partial = fnp.sum(xb * wb, axis=1)
        return lax.psum(partial, "model"), lax.all_gather(wb, "model", tiled=True)
    got, ref = on_both(body, mesh, (P("data", "model"), P("model")), (P("data"), P()), x, w)
    assert_trees_close(got, ref)
    np.testing.assert_allclose(got[0], x @ w, rtol=1e-13)


def test_jit_of_shard_map_keeps_results_on_the_workers(cluster):
    mesh = worker_mesh()
    x = fungrad.device_put(RNG.standard_normal((8, 2)), NamedSharding(mesh, P("data")))
    step = fungrad.jit(fungrad.shard_map(
        lambda w, b: (w - 0.5 * lax.pmean(fnp.mean(b * w, axis=0), "data"),
                      lax.psum(fnp.sum(b), "data")),
        mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P())))
    w = np.ones(2)
    for _ in range(3):
        w, total = step(w, x)
        assert isinstance(w, ShardedArray) and w.sharding.spec == P()
    w_ref = np.ones(2)
    xs = np.asarray(x)
    for _ in range(3):
        w_ref = w_ref - 0.5 * np.mean(xs * w_ref, axis=0)
    np.testing.assert_allclose(np.asarray(w.block_until_ready()), w_ref, rtol=1e-13)
    np.testing.assert_allclose(total, xs.sum(), rtol=1e-13)


def test_grad_and_vmap_of_shard_map_on_the_cluster(cluster):
    mesh = worker_mesh()
    x, y, w = RNG.standard_normal((8, 3)), RNG.standard_normal(8), RNG.standard_normal(3)

    def loss(w, xb, yb):
        return lax.pmean(fnp.mean((fnp.tanh(xb @ w) - yb) ** 2), "data")
    specs = dict(in_specs=(P(), P("data"), P("data")), out_specs=P())
    on_cluster = fungrad.shard_map(loss, mesh=mesh, **specs)
    in_process = fungrad.shard_map(loss, mesh=local_mesh(mesh), **specs)
    full = lambda w, x, y: fnp.mean((fnp.tanh(x @ w) - y) ** 2)
    for argnums in ((0,), (0, 1, 2)):
        g = fungrad.grad(on_cluster, argnums)(w, x, y)
        assert_trees_close(g, fungrad.grad(in_process, argnums)(w, x, y))
        assert_trees_close(g, fungrad.grad(full, argnums)(w, x, y))
    assert_trees_close(fungrad.jit(fungrad.grad(on_cluster))(w, x, y), fungrad.grad(full)(w, x, y))
    ws = RNG.standard_normal((3, 3))
    assert_trees_close(fungrad.vmap(on_cluster, (0, None, None))(ws, x, y),
                       fungrad.vmap(full, (0, None, None))(ws, x, y))
    _, t = fungrad.jvp(on_cluster, (w, x, y), (np.ones(3), np.zeros((8, 3)), np.zeros(8)))
    np.testing.assert_allclose(t, fungrad.jvp(full, (w, x, y), (np.ones(3), np.zeros((8, 3)),
                                                                np.zeros(8)))[1], rtol=1e-12)


def test_grad_vmap_and_jit_inside_the_body_on_the_cluster(cluster):
    mesh = worker_mesh()
    x, w = RNG.standard_normal((8, 3)), RNG.standard_normal(3)

    def body(w, xb):     # per-example gradients inside, their global sum across workers
        per_example = fungrad.vmap(fungrad.grad(lambda w, xi: fnp.tanh(xi @ w)), (None, 0))(w, xb)
        return fungrad.jit(lambda g: lax.psum(fnp.sum(g, axis=0), "data"))(per_example), per_example
    got, ref = on_both(body, mesh, (P(), P("data")), (P(), P("data")), w, x)
    assert_trees_close(got, ref)
    np.testing.assert_allclose(got[0], ((1 - np.tanh(x @ w) ** 2)[:, None] * x).sum(0), rtol=1e-13)


def test_bad_specs_raise_before_anything_runs(cluster):
    mesh = worker_mesh()
    with pytest.raises(ValueError, match=r"args\[0\].*not divisible by 2"):
        fungrad.shard_map(lambda b: b, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(
            np.ones(3))
    with pytest.raises(ValueError, match="replicated over mesh axis 'data'"):
        fungrad.shard_map(lambda b: b, mesh=mesh, in_specs=P("data"), out_specs=P())(np.ones(4))


# ----------------------------------------------------------------------------
# Data-parallel training
# ----------------------------------------------------------------------------

def _mlp_problem(sizes=(8, 16, 16, 3), batch=64):
    rng = np.random.default_rng(2)
    params = [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((batch, sizes[0]))
    labels = rng.integers(0, sizes[-1], batch)
    return params, x, np.eye(sizes[-1])[labels]


def _loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = fnp.tanh(h @ w + b)
    w, b = params[-1]
    return -fnp.mean(fnp.sum(nn.log_softmax(h @ w + b) * y, axis=-1))


def _sgd(params, grads, lr=0.5):
    return fungrad.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def _train_step(params, xb, yb):
    loss, g = fungrad.value_and_grad(_loss)(params, xb, yb)
    g = lax.pmean(g, "data")
    return _sgd(params, g), lax.pmean(loss, "data")


def test_data_parallel_training_matches_one_process_jit(cluster):
    params, x, y = _mlp_problem()
    mesh = worker_mesh()
    # as in the issue: gradients averaged across workers, parameters updated here
    grads_step = fungrad.jit(fungrad.shard_map(
        lambda p, xb, yb: lax.pmean(fungrad.value_and_grad(_loss)(p, xb, yb), "data"),
        mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=(P(), P())))
    one_process = fungrad.jit(fungrad.value_and_grad(_loss))
    batch = fungrad.device_put((x, y), NamedSharding(mesh, P("data")))
    p_cluster, p_ref = params, params
    for _ in range(4):
        loss_c, g_c = grads_step(p_cluster, *batch)
        loss_r, g_r = one_process(p_ref, x, y)
        np.testing.assert_allclose(loss_c, loss_r, rtol=1e-12)
        p_cluster, p_ref = _sgd(p_cluster, fungrad.device_get(g_c)), _sgd(p_ref, g_r)
    assert_trees_close(p_cluster, p_ref, rtol=1e-11)
    # the whole step on the workers: parameters stay there between steps
    step = fungrad.jit(fungrad.shard_map(_train_step, mesh=mesh,
                                         in_specs=(P(), P("data"), P("data")),
                                         out_specs=(P(), P())))
    p = params
    for _ in range(4):
        p, loss = step(p, *batch)
    assert all(isinstance(leaf, ShardedArray) for leaf in fungrad.tree_util.tree_leaves(p))
    assert_trees_close(fungrad.device_get(p), p_ref, rtol=1e-11)


def test_plain_jit_of_a_training_step_runs_on_the_workers(cluster):
    """The modern JAX way: device_put the batch with NamedSharding(mesh,
    P('data')), then a plain jit of the step; fungrad partitions it (the
    gradient's sum over the batch becomes a psum across the workers)."""
    params, x, y = _mlp_problem()
    mesh = worker_mesh()

    def train_step(params, xb, yb):
        loss, g = fungrad.value_and_grad(_loss)(params, xb, yb)
        return _sgd(params, g), loss
    step = fungrad.jit(train_step)
    batch = fungrad.device_put((x, y), NamedSharding(mesh, P("data")))
    p, p_ref = params, params
    for _ in range(3):
        p, loss = step(p, *batch)
        p_ref, loss_ref = step(p_ref, x, y)
        np.testing.assert_allclose(fungrad.device_get(loss), loss_ref, rtol=1e-12)
    # the step ran as a shard_map on the workers: its outputs live there
    assert all(isinstance(leaf, ShardedArray) for leaf in fungrad.tree_util.tree_leaves(p))
    assert_trees_close(fungrad.device_get(p), p_ref, rtol=1e-11)
    per_example = fungrad.jit(lambda x: fnp.tanh(x) * 2)(batch[0])
    assert isinstance(per_example, ShardedArray) and per_example.sharding.spec == P("data")
    np.testing.assert_allclose(fungrad.device_get(per_example), np.tanh(x) * 2, rtol=1e-15)


def _plain_train_step(params, xb, yb):
    loss, g = fungrad.value_and_grad(_loss)(params, xb, yb)
    return _sgd(params, g), loss


@pytest.mark.parametrize("spelling", ["shard_map", "plain jit (partitioned)"])
def test_a_killed_worker_does_not_change_the_results(cluster, spelling):
    params, x, y = _mlp_problem(batch=32)
    mesh = worker_mesh()
    if spelling == "shard_map":
        step = fungrad.jit(fungrad.shard_map(_train_step, mesh=mesh,
                                             in_specs=(P(), P("data"), P("data")),
                                             out_specs=(P(), P())))
    else:
        step = fungrad.jit(_plain_train_step)
    batch = fungrad.device_put((x, y), NamedSharding(mesh, P("data")))

    def train(kill_at=None):
        p, losses = params, []
        for i in range(6):
            p, loss = step(p, *batch)
            if i == kill_at:    # the step was submitted; its tasks are running or queued
                pid = cluster.client.run(os.getpid, workers=[mesh.devices.flat[1].address])
                os.kill(next(iter(pid.values())), signal.SIGKILL)
            losses.append(loss)
        return fungrad.device_get(p), [float(v) for v in losses]
    p_ok, losses_ok = train()
    p_killed, losses_killed = train(kill_at=2)
    np.testing.assert_allclose(losses_killed, losses_ok, rtol=1e-13)
    assert_trees_close(p_killed, p_ok, rtol=1e-13)
    cluster.client.wait_for_workers(2, timeout=60)    # the nanny restarted it
