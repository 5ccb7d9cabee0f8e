"""jit over arguments sharded along one mesh axis runs data-parallel
(fungrad/distributed/partition.py): each program is checked against the same
jit on unsharded arguments, and for running as a shard_map (no "gathered"
log) or, outside the partitioned set, gathered with the log.  Here on a mesh
of this process's simulated devices; tests/test_distributed.py runs the
training loop on a Dask cluster."""
import logging

import numpy as np
import pytest

import fungrad
import fungrad.numpy as jnp
from fungrad import lax
from fungrad.distributed import simulated_devices
from fungrad.sharding import Mesh, NamedSharding, PartitionSpec as P, ShardedArray

RNG = np.random.default_rng(3)
MESH = Mesh(np.array(simulated_devices(2), dtype=object), ("data",))
MESH4 = Mesh(np.array(simulated_devices(4), dtype=object).reshape(2, 2), ("data", "model"))


def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(fungrad.nn.log_softmax(logits) * y, axis=-1))


def _layer_norm(x, g):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return g * (x - mu) / jnp.sqrt(var + 1e-5)


def _params():
    return ((RNG.normal(size=(6, 5)), RNG.normal(size=5)),
            (RNG.normal(size=(5, 3)), RNG.normal(size=3)))


X = RNG.normal(size=(8, 6))
Y = np.eye(3)[RNG.integers(0, 3, 8)]
IMG = RNG.normal(size=(8, 2, 3))

# (name, function, arguments, which arguments are batch-sharded on dim 0)
PARTITIONED = [
    ("mlp value_and_grad", fungrad.value_and_grad(_mlp_loss), (_params(), X, Y), (1, 2)),
    ("mlp loss", _mlp_loss, (_params(), X, Y), (1, 2)),
    ("layer norm", lambda x, g: _layer_norm(x, g), (X, RNG.normal(size=6)), (0,)),
    ("per-example outer products", lambda x: jnp.einsum("bi,bj->bij", x, x), (X,), (0,)),
    ("gram over the batch", lambda x: x.T @ x, (X,), (0,)),
    ("flatten and max", lambda im: (jnp.max(im.reshape(8, -1), axis=0),
                                    jnp.min(im, axis=(0, 2))), (IMG,), (0,)),
    ("transpose, slice, pad", lambda im: jnp.pad(jnp.transpose(im, (1, 0, 2))[:, :, 1:],
                                                 ((1, 0), (0, 0), (0, 2))), (IMG,), (0,)),
    ("scale broadcast to the batch", lambda x, s: x * jnp.broadcast_to(s, (8, 1)),
     (X, 2.5), (0,)),
    ("softmax over features, argmax", lambda x: (fungrad.nn.softmax(x),
                                                 jnp.argmax(x, axis=1)), (X,), (0,)),
    ("cumsum over features", lambda x: jnp.cumsum(x, axis=1), (X,), (0,)),
    ("batched matmul", lambda a, b: jnp.matmul(a, b), (IMG, RNG.normal(size=(8, 3, 4))), (0, 1)),
    ("replicated matrix times batch (contract the batch)",
     lambda a, x: a @ x, (RNG.normal(size=(4, 8)), X), (1,)),
]

# these read a split value along the split dimension: they run on the whole
# (all-gathered) value on every position, the rest of the program stays split
REPLICATED_STEPS = [
    ("sort along the batch", lambda x: jnp.sort(x, axis=0) * 2, (X,), (0,)),
    ("cumsum along the batch", lambda x: jnp.tanh(jnp.cumsum(x, axis=0)) + x, (X,), (0,)),
    ("take_along_axis (integer-label cross-entropy)",
     lambda x, labels: -jnp.mean(jnp.take_along_axis(fungrad.nn.log_softmax(x),
                                                     labels[:, None], 1)),
     (X, RNG.integers(0, 6, 8)), (0, 1)),
    ("scan over the batch", lambda x: lax.scan(lambda c, r: (c + r, c * r), x[0] * 0, x),
     (X,), (0,)),
    ("grad of integer-label cross-entropy",
     fungrad.grad(lambda x, labels: -jnp.mean(jnp.take_along_axis(
         fungrad.nn.log_softmax(x), labels[:, None], 1))), (X, RNG.integers(0, 6, 8)), (0, 1)),
]

def _shard(args, which, mesh=MESH):
    sharding = NamedSharding(mesh, P("data"))
    return tuple(fungrad.device_put(a, sharding) if i in which else a
                 for i, a in enumerate(args))


def _assert_close(got, want):
    for g, w in zip(fungrad.tree_util.tree_leaves(fungrad.device_get(got)),
                    fungrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,fn,args,which", PARTITIONED, ids=[c[0] for c in PARTITIONED])
def test_partitioned_programs_match_one_process(name, fn, args, which, caplog):
    want = fungrad.jit(fn)(*args)
    jitted = fungrad.jit(fn)
    with caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        got = jitted(*_shard(args, which))
        again = jitted(*_shard(args, which))
    assert "gathered" not in caplog.text
    _assert_close(got, want)
    _assert_close(again, want)
    runners = [r for e in jitted._cache.entries.values()
               for r in (getattr(e, "partition_runners", None) or {}).values()]
    assert any(callable(r) for r in runners)


@pytest.mark.parametrize("name,fn,args,which", REPLICATED_STEPS,
                         ids=[c[0] for c in REPLICATED_STEPS])
def test_steps_on_the_whole_value_are_named_once(name, fn, args, which, caplog):
    want = fungrad.jit(fn)(*args)
    jitted = fungrad.jit(fn)
    with caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        got = jitted(*_shard(args, which))
        jitted(*_shard(args, which))
    assert "gathered into this process" not in caplog.text
    assert caplog.text.count("all-gathered") == 1
    _assert_close(got, want)


def test_programs_with_effects_run_gathered_once(caplog, capsys):
    def f(x):
        fungrad.debug.print("sum {s}", s=jnp.sum(x))
        return x * 2
    with caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        got = fungrad.jit(f)(*_shard((X,), (0,)))
    assert capsys.readouterr().out.count("sum ") == 1
    assert "gathered into this process" in caplog.text and "side effect" in caplog.text
    _assert_close(got, X * 2)


def test_two_split_axes_run_gathered():
    """(one split mesh axis is what is partitioned)"""
    x = fungrad.device_put(X, NamedSharding(MESH4, P("data", "model")))
    got = fungrad.jit(lambda x: jnp.sin(x))(x)
    _assert_close(got, np.sin(X))


def test_outputs_of_an_in_process_mesh_are_whole_arrays():
    """(as shard_map's on this process's devices; on a cluster a split output
    stays on the workers: tests/test_distributed.py)"""
    out, total = fungrad.jit(lambda x: (jnp.tanh(x), jnp.sum(x)))(*_shard((X,), (0,)))
    assert not isinstance(out, ShardedArray)
    np.testing.assert_allclose(fungrad.device_get(out), np.tanh(X), rtol=1e-15)
    np.testing.assert_allclose(fungrad.device_get(total), X.sum(), rtol=1e-13)


def test_a_second_mesh_axis_is_replicated():
    """Arguments split over 'data' of a 2x2 mesh: 'model' holds copies."""
    loss = fungrad.jit(fungrad.value_and_grad(_mlp_loss))
    params = _params()
    got = loss(params, *_shard((X, Y), (0, 1), MESH4))
    _assert_close(got, loss(params, X, Y))


def test_training_loop_the_modern_way():
    """device_put the batch, plain jit of the step: the one-process result."""
    def step(params, x, y):
        loss, g = fungrad.value_and_grad(_mlp_loss)(params, x, y)
        return fungrad.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g), loss
    step = fungrad.jit(step)
    xs, ys = _shard((X, Y), (0, 1))
    p_sharded = p_ref = _params()
    for _ in range(3):
        p_sharded, loss = step(p_sharded, xs, ys)
        p_ref, loss_ref = step(p_ref, X, Y)
        np.testing.assert_allclose(fungrad.device_get(loss), loss_ref, rtol=1e-12)
    _assert_close(p_sharded, p_ref)


def test_collectives_of_the_partitioner_do_not_leak_into_user_code():
    """A program with its own lax.psum over an axis the caller did not bind
    still raises fungrad's unbound-axis error, sharded input or not."""
    with pytest.raises(NameError):
        fungrad.jit(lambda x: lax.psum(x, "data"))(*_shard((X,), (0,)))
