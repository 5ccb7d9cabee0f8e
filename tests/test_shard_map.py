"""shard_map, meshes, shardings and the device API on one machine (no cluster).

A mesh of ``simulated_devices`` runs shard_map in this process, as nested
named vmaps over the mesh axes: these tests check it against vmaps written
by hand (the reference the cluster tests compare with), and every
composition (jit, grad, vmap, jvp inside and outside the body).  The cluster
itself is tested in tests/test_distributed.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.distributed import simulated_devices
from fungrad.sharding import Mesh, NamedSharding, P, ShardedArray, SingleDeviceSharding
from fungrad.test_util import check_grads

RNG = np.random.default_rng(0)


def mesh_1d(n=4, name="data"):
    return Mesh(simulated_devices(n), (name,))


def mesh_2d():
    return Mesh(np.array(simulated_devices(4), dtype=object).reshape(2, 2), ("data", "model"))


def blocks(x, n, axis=0):
    """x split into n blocks along ``axis``, stacked on a new leading axis."""
    return np.stack(np.split(x, n, axis=axis))


# ----------------------------------------------------------------------------
# The device API with its NumPy meaning
# ----------------------------------------------------------------------------

def test_arrays_live_on_the_one_cpu_device():
    x = fnp.arange(3.0)
    cpu = fungrad.devices()[0]
    assert fungrad.devices() == [cpu] and fungrad.local_devices() == [cpu]
    assert fungrad.device_count() == 1 and fungrad.local_device_count() == 1
    assert fungrad.default_backend() == "cpu" and cpu.platform == "cpu"
    assert x.block_until_ready() is x
    tree = {"x": x}
    assert fungrad.block_until_ready(tree) is tree
    assert x.devices() == {cpu} and x.device is cpu
    assert x.copy_to_host_async() is None
    assert x.sharding == SingleDeviceSharding(cpu) and x.sharding.is_fully_replicated


def test_device_put_copies_and_device_get_returns_values():
    src = np.arange(4.0)
    tree = {"a": src, "b": (1.5, np.float32(2))}
    put = fungrad.device_put(tree)
    src[0] = 99.0                     # the placed copy does not see later writes
    assert put["a"][0] == 0.0 and isinstance(put["a"], fungrad.Array)
    assert not put["a"].flags.writeable
    assert put["b"][1].dtype == np.float32
    assert fungrad.device_put(src, fungrad.devices()[0])[0] == 99.0
    got = fungrad.device_get(put)
    np.testing.assert_array_equal(got["a"], [0.0, 1.0, 2.0, 3.0])
    # inside a transformation device_put is the identity
    assert fungrad.jit(lambda v: fungrad.device_put(v) * 2)(np.ones(2))[0] == 2.0


def test_device_put_rejects_non_array_leaves():
    with pytest.raises(TypeError, match=r"leaf \['b'\] is a str"):
        fungrad.device_put({"a": np.ones(2), "b": "text"})


def test_mesh_and_named_sharding():
    mesh = mesh_2d()
    assert mesh.shape == {"data": 2, "model": 2} and mesh.size == 4
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3]]
    s = NamedSharding(mesh, P("data", None))
    assert s.shard_shape((4, 6)) == (2, 6)
    idx = s.devices_indices_map((4, 6))
    assert [tuple((sl.start, sl.stop) for sl in v) for v in idx.values()] == \
        [((0, 2), (0, 6)), ((0, 2), (0, 6)), ((2, 4), (0, 6)), ((2, 4), (0, 6))]
    assert NamedSharding(mesh, P(("data", "model"))).shard_shape((8,)) == (2,)
    assert s == NamedSharding(mesh, P("data")) and not s.is_fully_replicated
    assert repr(P("data", None)) == "PartitionSpec('data', None)"


def test_mesh_and_spec_errors():
    with pytest.raises(ValueError, match="one name per dimension"):
        Mesh(simulated_devices(2), ("a", "b"))
    with pytest.raises(ValueError, match="repeat"):
        Mesh(np.array(simulated_devices(4), dtype=object).reshape(2, 2), ("a", "a"))
    with pytest.raises(ValueError, match="more than once"):
        Mesh(simulated_devices(1) * 2, ("a",))
    with pytest.raises(ValueError, match=r"names mesh axis 'x'.*\('data',\)"):
        NamedSharding(mesh_1d(), P("x"))
    with pytest.raises(ValueError, match="dimension 0 has size 6, which is not divisible by 4"):
        NamedSharding(mesh_1d(), P("data")).shard_shape((6,))
    with pytest.raises(TypeError, match="PartitionSpec entries"):
        P(3)
    # (a cluster that lost every worker gives an empty fungrad.devices())
    empty = Mesh(np.array([], dtype=object), ("data",))
    with pytest.raises(ValueError, match=r"device_put of an array of shape \(4,\).*no devices"):
        fungrad.device_put(np.ones(4), NamedSharding(empty, P("data")))


def test_sharded_array_on_simulated_devices():
    mesh = mesh_2d()
    x = RNG.standard_normal((4, 6))
    a = fungrad.device_put(x, NamedSharding(mesh, P("data", "model")))
    assert isinstance(a, ShardedArray) and a.shape == (4, 6) and a.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(fungrad.device_get(a), x)
    shards = a.addressable_shards
    assert len(shards) == 4 and shards[1].index == (slice(0, 2), slice(3, 6))
    np.testing.assert_array_equal(shards[1].data, x[:2, 3:])
    np.testing.assert_allclose(a * 2 + 1, x * 2 + 1)
    np.testing.assert_allclose(fnp.sum(a), x.sum())
    assert a.devices() == set(mesh.devices.flat)
    text = fungrad.sharding.describe_shards(a)
    assert text.count("CpuDevice") == 4 and "[2:4, 3:6]" in text
    assert fungrad.sharding.describe_shards(fnp.ones(2)) == "single CPU device"


# ----------------------------------------------------------------------------
# In-process shard_map against named vmaps written by hand
# ----------------------------------------------------------------------------

def test_every_collective_matches_a_named_vmap():
    n = 4
    mesh = mesh_1d(n)
    x = RNG.standard_normal((n * 4, 3))

    def body(b):
        s = lax.psum(b, "data")
        return (s, lax.pmean(b, "data"), lax.pmax(b, "data"), lax.pmin(b, "data"),
                lax.all_gather(b, "data", tiled=True),
                lax.psum_scatter(b, "data", scatter_dimension=0, tiled=True),
                lax.ppermute(b, "data", [(i, (i + 1) % n) for i in range(n)]),
                lax.all_to_all(b, "data", 0, 0, tiled=True),
                b * lax.axis_index("data") + lax.axis_size("data"))
    specs = (P(), P(), P(), P(), P(), P("data"), P("data"), P("data"), P("data"))
    got = fungrad.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=specs)(x)
    ref = fungrad.vmap(body, axis_name="data")(blocks(x, n))
    for g, r, s in zip(got, ref, specs):
        want = r[0] if s == P() else np.concatenate(list(r))
        np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-14)


def test_two_axis_mesh_matches_nested_named_vmaps():
    mesh = mesh_2d()
    x = RNG.standard_normal((4, 6))
    w = RNG.standard_normal((6,))

    def body(xb, wb):   # xb: (2, 3) block, wb: (3,) block (split over "model")
        partial = fnp.sum(xb * wb, axis=1)
        return lax.psum(partial, "model"), lax.psum(partial, ("data", "model"))
    f = fungrad.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("model")),
                          out_specs=(P("data"), P()))
    rows, total = f(x, w)
    np.testing.assert_allclose(rows, x @ w, rtol=1e-13)
    np.testing.assert_allclose(total, (x @ w).reshape(2, 2).sum(0), rtol=1e-13)
    xb = x.reshape(2, 2, 2, 3).transpose(0, 2, 1, 3)          # (data, model, 2, 3)
    ref = fungrad.vmap(fungrad.vmap(body, in_axes=(0, 0), axis_name="model"),
                       in_axes=(0, None), axis_name="data")(xb, w.reshape(2, 3))
    np.testing.assert_allclose(rows, np.concatenate(list(ref[0][:, 0])), rtol=1e-13)


# ----------------------------------------------------------------------------
# Composition
# ----------------------------------------------------------------------------

def _data_parallel(mesh):
    """Mean squared error of a linear model, batch split over "data"."""
    def loss(w, xb, yb):
        return lax.pmean(fnp.mean((xb @ w - yb) ** 2), "data")
    return fungrad.shard_map(loss, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                             out_specs=P())


def test_grad_of_shard_map_from_outside_is_the_full_gradient():
    mesh = mesh_1d(4)
    x, y, w = RNG.standard_normal((16, 3)), RNG.standard_normal(16), RNG.standard_normal(3)
    loss = _data_parallel(mesh)
    full = lambda w, x, y: fnp.mean((x @ w - y) ** 2)
    np.testing.assert_allclose(loss(w, x, y), full(w, x, y), rtol=1e-13)
    for argnums in (0, 1, 2):
        np.testing.assert_allclose(fungrad.grad(loss, argnums)(w, x, y),
                                   fungrad.grad(full, argnums)(w, x, y), rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(loss))(w, x, y),
                               fungrad.grad(full)(w, x, y), rtol=1e-12)
    check_grads(loss, (w, x, y), order=2, modes=("fwd", "rev"))


def test_transpose_of_replicated_outputs_and_gathers():
    mesh = mesh_1d(2)
    x = RNG.standard_normal(6)

    def body(b):
        return lax.all_gather(b, "data", tiled=True) * 2.0, lax.psum(fnp.sin(b), "data")
    f = fungrad.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=(P(), P()))
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    g = fungrad.grad(lambda v: fnp.sum(f(v)[0] * np.arange(6.0)) + fnp.sum(f(v)[1]))(x)
    np.testing.assert_allclose(g, 2 * np.arange(6.0) + np.cos(x), rtol=1e-13)


def test_grad_vmap_and_jit_inside_the_body():
    mesh = mesh_1d(2)
    w = RNG.standard_normal(3)
    x = RNG.standard_normal((8, 3))

    def body(w, xb):
        per_example = fungrad.vmap(fungrad.grad(lambda w, xi: fnp.tanh(xi @ w)), (None, 0))(w, xb)
        g = fungrad.jit(lambda v: lax.psum(fnp.sum(v, axis=0), "data"))(per_example)
        return g, per_example
    f = fungrad.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P("data")))
    g, per = f(w, x)
    want = (1 - np.tanh(x @ w)[:, None] ** 2) * x
    np.testing.assert_allclose(per, want, rtol=1e-13)
    np.testing.assert_allclose(g, want.sum(0), rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(f)(w, x)[0], want.sum(0), rtol=1e-13)


def test_vmap_and_jvp_of_shard_map():
    mesh = mesh_1d(2)
    f = fungrad.shard_map(lambda b: lax.psum(b * b, "data") + b[:1], mesh=mesh,
                          in_specs=P("data"), out_specs=P("data"))
    xs = RNG.standard_normal((3, 4))
    got = fungrad.vmap(f)(xs)
    np.testing.assert_allclose(got[1], f(xs[1]), rtol=1e-13)
    np.testing.assert_allclose(fungrad.vmap(f, in_axes=1, out_axes=1)(xs.T), got.T, rtol=1e-13)
    out, tan = fungrad.jvp(f, (xs[0],), (np.ones(4),))
    np.testing.assert_allclose(out, f(xs[0]))
    b = xs[0].reshape(2, 2)
    np.testing.assert_allclose(tan, np.concatenate([2 * b.sum(0) + 1] * 2), rtol=1e-13)
    check_grads(lambda v: fungrad.vmap(f)(v), (xs,), order=1)


def test_jit_of_shard_map_calls_it_from_generated_code():
    f = fungrad.jit(fungrad.shard_map(lambda b: b * 2, mesh=mesh_1d(2), in_specs=P("data"),
                                      out_specs=P("data")))
    assert "shard_map" in f.lower(np.ones(4)).source()
    np.testing.assert_allclose(f(np.arange(4.0)), 2 * np.arange(4.0))


def test_closed_over_tracers_become_replicated_inputs():
    mesh = mesh_1d(2)
    x = np.arange(4.0)
    f = lambda s: fnp.sum(fungrad.shard_map(lambda b: b * s, mesh=mesh, in_specs=P("data"),
                                            out_specs=P("data"))(x))
    np.testing.assert_allclose(fungrad.grad(f)(2.0), x.sum())


def test_decorator_form_and_check_rep_alias():
    from functools import partial

    @partial(fungrad.shard_map, mesh=mesh_1d(2), in_specs=P("data"), out_specs=P(),
             check_rep=False)
    def first_block(b):
        return b
    np.testing.assert_allclose(first_block(np.arange(4.0)), [0.0, 1.0])


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------

def test_mesh_spec_mismatches_raise_value_errors():
    mesh = mesh_1d(4)
    ident = lambda b: b
    with pytest.raises(ValueError, match=r"args\[0\].*dimension 0 has size 6.*not divisible by 4"):
        fungrad.shard_map(ident, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(np.ones(6))
    with pytest.raises(ValueError, match=r"names mesh axis 'batch'"):
        fungrad.shard_map(ident, mesh=mesh, in_specs=P("batch"), out_specs=P())(np.ones(4))
    with pytest.raises(ValueError, match=r"out_specs for output 0.*replicated over mesh axis "
                                         r"'data'.*lax.psum"):
        fungrad.shard_map(ident, mesh=mesh, in_specs=P("data"), out_specs=P())(np.ones(4))
    with pytest.raises(ValueError, match="tree prefix"):
        fungrad.shard_map(lambda a, b: a, mesh=mesh, in_specs=(P(), P(), P()),
                          out_specs=P())(np.ones(4), np.ones(4))
    with pytest.raises(TypeError, match="PartitionSpec"):
        fungrad.shard_map(ident, mesh=mesh, in_specs="data", out_specs=P())(np.ones(4))
    with pytest.raises(TypeError, match="keyword"):
        fungrad.shard_map(ident, mesh=mesh, in_specs=P(), out_specs=P())(b=np.ones(4))
    with pytest.raises(TypeError, match="Mesh"):
        fungrad.shard_map(ident, mesh="data", in_specs=P(), out_specs=P())


def test_collectives_inside_control_flow_raise_not_implemented():
    mesh = mesh_1d(2)

    def body(b):
        return lax.scan(lambda c, _: (lax.psum(c, "data"), None), b, None, length=2)[0]
    with pytest.raises(NotImplementedError, match=r"psum inside a scan \(lax.scan"):
        fungrad.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P())(np.ones(2))
    with pytest.raises(NotImplementedError, match="nested"):
        inner = fungrad.shard_map(lambda b: b, mesh=mesh, in_specs=P(), out_specs=P())
        fungrad.shard_map(inner, mesh=mesh, in_specs=P(), out_specs=P())(np.ones(2))


def test_bad_collective_arguments():
    mesh = mesh_1d(2)
    run = lambda body: fungrad.shard_map(body, mesh=mesh, in_specs=P("data"),
                                         out_specs=P("data"))(np.ones((4, 3)))
    with pytest.raises(ValueError, match="scatter_dimension.*size 3 but axis 'data' has size 2"):
        run(lambda b: lax.psum_scatter(b, "data", scatter_dimension=1)[None])
    with pytest.raises(ValueError, match=r"pair \(0, 2\).*out of range"):
        run(lambda b: lax.ppermute(b, "data", [(0, 2)]))
    with pytest.raises(ValueError, match="must not repeat"):
        run(lambda b: lax.ppermute(b, "data", [(0, 1), (1, 1)]))
    with pytest.raises(NameError, match="unbound axis name: 'model'"):
        run(lambda b: lax.psum(b, "model"))


def test_unreachable_scheduler_raises_connection_error():
    # (the wait is bounded by ``timeout``; nothing listens on port 9 of this machine)
    with pytest.raises(ConnectionError, match=r"tcp://127\.0\.0\.1:9.*within 1"):
        fungrad.distributed.initialize("tcp://127.0.0.1:9", timeout=1)
    assert not fungrad.distributed.is_initialized()


def test_export_refuses_a_shard_map():
    f = fungrad.shard_map(lambda b: b * 2, mesh=mesh_1d(2), in_specs=P("data"),
                          out_specs=P("data"))
    with pytest.raises(TypeError, match="shard_map.*cannot be exported"):
        fungrad.export(f, np.ones(4))


# --- a mesh in context: set_mesh, bare PartitionSpecs, reshard, smap -------------

def test_set_mesh_as_setter_and_context_manager():
    from fungrad.sharding import get_abstract_mesh, get_mesh
    mesh = mesh_1d(2)
    assert get_mesh() is None and get_abstract_mesh().empty
    with fungrad.set_mesh(mesh):
        assert get_mesh() is mesh and get_abstract_mesh() == mesh.abstract_mesh
        x = fungrad.device_put(np.arange(4.0), P("data"))
        assert x.sharding == NamedSharding(mesh, P("data"))
        y = fungrad.reshard({"a": np.ones((4, 2))}, P(None, None))["a"]
        assert y.sharding == NamedSharding(mesh, P())
    assert get_mesh() is None
    setter = fungrad.set_mesh(mesh)            # a plain call sets it
    try:
        assert get_mesh() is mesh
    finally:
        setter.__exit__(None, None, None)
    assert get_mesh() is None


def test_bare_specs_without_a_mesh_say_what_to_do():
    with pytest.raises(ValueError, match="set_mesh"):
        fungrad.device_put(np.ones(4), P("data"))
    with pytest.raises(ValueError, match="no mesh"):
        fungrad.shard_map(lambda x: x, in_specs=P("data"), out_specs=P("data"))(np.ones(4))
    with pytest.raises(ValueError, match="outside of `jax.jit`"):
        fungrad.jit(lambda x: fungrad.set_mesh(mesh_1d(2)) and x)(1.0)
    with pytest.raises(ValueError, match="Expected mesh"):
        fungrad.set_mesh("data")


def test_shard_map_and_smap_use_the_mesh_in_context():
    mesh = mesh_2d()
    x = np.arange(24.0).reshape(4, 6)
    with fungrad.set_mesh(mesh):
        summed = fungrad.shard_map(lambda b: lax.psum(fnp.sum(b), mesh.axis_names[0]),
                                   in_specs=P(mesh.axis_names[0]), out_specs=P())(x)
        np.testing.assert_allclose(summed, x.sum(), rtol=1e-15)
        f = fungrad.smap(lambda b, w: (fnp.tanh(b) * w, lax.psum(fnp.sum(b), mesh.axis_names[0])),
                         in_axes=(0, None), out_axes=(0, None), axis_name=mesh.axis_names[0])
        out, total = f(x, 0.5)
        np.testing.assert_allclose(out, np.tanh(x) * 0.5, rtol=1e-15)
        np.testing.assert_allclose(total, x.sum(), rtol=1e-15)
        cols = fungrad.smap(lambda b: b * 2, in_axes=1, out_axes=1,
                            axis_name=mesh.axis_names[1])(x)
        np.testing.assert_allclose(cols, 2 * x, rtol=1e-15)
        # under jit and grad as any shard_map
        g = fungrad.jit(fungrad.grad(lambda x: fnp.sum(f(x, 0.5)[0])))(x)
        np.testing.assert_allclose(g, fungrad.grad(lambda x: fnp.sum(fnp.tanh(x) * 0.5))(x),
                                   rtol=1e-14)
    with pytest.raises(TypeError, match="in_axes must be given"):
        fungrad.smap(lambda b: b, out_axes=0, axis_name="x")
    with pytest.raises(TypeError, match="axis_name"):
        fungrad.smap(lambda b: b, in_axes=0, out_axes=0, axis_name=("x", "y"))


# ----------------------------------------------------------------------------
# Several CPU devices in one process, as JAX's tutorials ask for them
# ----------------------------------------------------------------------------

_SEVERAL_DEVICES = textwrap.dedent("""
    import numpy as np
    import fungrad, fungrad.numpy as fnp
    from fungrad import lax
    from fungrad.sharding import AxisType, NamedSharding, PartitionSpec as P
    {setup}
    assert fungrad.device_count() == 8 and len(set(fungrad.devices())) == 8
    mesh = fungrad.make_mesh((4, 2), ("i", "j"))
    x = fungrad.device_put(np.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("i", "j")))
    total = fungrad.shard_map(lambda b: lax.psum(b.sum(), ("i", "j")), mesh=mesh,
                              in_specs=P("i", "j"), out_specs=P())(x)
    assert float(total) == np.arange(32.0).sum()
    rows = fungrad.pmap(lambda r: r * 2)(np.ones((8, 3)))
    assert rows.shape == (8, 3)
    try:
        fungrad.config.update("jax_num_cpu_devices", 4)
    except RuntimeError as e:
        assert "before backends are initialized" in str(e)
    else:
        raise AssertionError("changing the device count after listing the devices")
    print("ok")
""")


@pytest.mark.parametrize("setup,env", [
    ("fungrad.config.update('jax_num_cpu_devices', 8)", {}),
    ("", {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}),
])
def test_several_cpu_devices_from_config_or_xla_flags(setup, env):
    out = subprocess.run([sys.executable, "-c", _SEVERAL_DEVICES.format(setup=setup)],
                         capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_num_cpu_devices_refuses_bad_values():
    from fungrad import _config
    for bad in (0, -2, 2.5, "eight"):
        with pytest.raises(ValueError, match="jax_num_cpu_devices must be a positive int"):
            _config.num_cpu_devices.parse(bad)


def test_axis_types_are_recorded_as_given():
    from fungrad.sharding import AbstractMesh, AxisType
    devs = simulated_devices(4)
    auto = Mesh(np.array(devs).reshape(2, 2), ("a", "b"))
    assert auto.axis_types == (AxisType.Auto,) * 2 and not auto.are_all_axes_explicit
    explicit = fungrad.make_mesh((2, 2), ("a", "b"), (AxisType.Explicit,) * 2, devices=devs)
    assert explicit.are_all_axes_explicit and explicit != auto
    assert explicit.abstract_mesh == AbstractMesh((2, 2), ("a", "b"), (AxisType.Explicit,) * 2)
    assert "axis_types=(Explicit, Explicit)" in repr(explicit)
    with pytest.raises(ValueError, match="axis_types must be 2 jax.sharding.AxisType"):
        Mesh(np.array(devs).reshape(2, 2), ("a", "b"), ("explicit", "explicit"))
    # the values do not depend on the axis types
    x = np.arange(8.0).reshape(4, 2)
    f = lambda m: fungrad.shard_map(lambda b: b * lax.axis_index("a"), mesh=m,
                                    in_specs=P("a", "b"), out_specs=P("a", "b"))(x)
    np.testing.assert_array_equal(f(auto), f(explicit))


def test_pvary_and_pcast_change_the_type_not_the_value():
    mesh = mesh_1d(4, "i")
    x = np.arange(3.0)

    def body(v):
        return lax.pcast(v, "i", to="varying") * 2

    # the same value at each position, now varying: out_specs may stack it
    stacked = fungrad.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P("i"))(x)
    np.testing.assert_array_equal(stacked, np.tile(2 * x, 4))
    # ...but check_vma refuses to return it as replicated, as JAX's does
    with pytest.raises(ValueError, match="replicated over mesh axis 'i', but it varies"):
        fungrad.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P())(x)
    # the gradient of the replicated input sums the positions' cotangents once
    g = fungrad.grad(lambda v: fungrad.shard_map(body, mesh=mesh, in_specs=P(),
                                                  out_specs=P("i"))(v).sum())(x)
    np.testing.assert_array_equal(g, np.full(3, 8.0))
    jitted = fungrad.jit(fungrad.shard_map(lambda v: lax.pvary(v, "i"), mesh=mesh,
                                           in_specs=P(), out_specs=P("i")))
    np.testing.assert_array_equal(jitted(x), np.tile(x, 4))
    with pytest.raises(NameError, match="unbound axis name: 'k'"):
        fungrad.shard_map(lambda v: lax.pvary(v, "k"), mesh=mesh, in_specs=P(),
                          out_specs=P("i"))(x)
    with pytest.raises(NotImplementedError, match="no reduced/unreduced types"):
        fungrad.shard_map(lambda v: lax.pcast(v, "i", to="reduced"), mesh=mesh,
                          in_specs=P(), out_specs=P())(x)
    with pytest.raises(ValueError, match="to must be one of"):
        lax.pcast(x, "i", to="invariant")


def test_auto_and_explicit_axes_reshard_at_the_edges():
    from fungrad.sharding import (AbstractMesh, AxisType, auto_axes, explicit_axes,
                                  get_abstract_mesh, set_mesh, use_abstract_mesh)
    mesh = Mesh(np.array(simulated_devices(4)).reshape(2, 2), ("x", "y"))
    x = np.arange(16.0).reshape(4, 4)
    with set_mesh(mesh):
        f = auto_axes(lambda a: a * 2, out_sharding=P("x", None))
        out = f(x)
        np.testing.assert_array_equal(fungrad.device_get(out), 2 * x)
        assert out.sharding == NamedSharding(mesh, P("x", None))
        g = auto_axes(lambda a: a + 1)
        assert g(x, out_sharding=P(None, "y")).sharding == NamedSharding(mesh, P(None, "y"))
        with pytest.raises(TypeError, match="missing required keyword argument: 'out_sharding'"):
            g(x)
        h = explicit_axes(lambda a: a.sum(0), in_sharding=P("y", None))
        np.testing.assert_array_equal(fungrad.device_get(h(x)), x.sum(0))
        abstract = AbstractMesh((2, 2), ("x", "y"), (AxisType.Explicit,) * 2)
        with use_abstract_mesh(abstract):
            assert get_abstract_mesh() == abstract
        assert get_abstract_mesh() == mesh.abstract_mesh
    with pytest.raises(ValueError, match="Context mesh cannot be empty"):
        explicit_axes(lambda a: a, in_sharding=P("x"))(x)
    with pytest.raises(ValueError, match="expected a jax.sharding.AbstractMesh"):
        use_abstract_mesh(mesh)


def test_none_specs_stand_for_parts_without_arrays():
    mesh = mesh_1d(4, "i")
    seen = []
    f = fungrad.shard_map(lambda x, none: seen.append(x.shape), mesh=mesh,
                          in_specs=(P(), None), out_specs=None)
    assert f(np.arange(6.0), None) is None and seen == [(6,)]
    with pytest.raises(TypeError, match="got None for a part holding 1 array"):
        fungrad.shard_map(lambda x: x, mesh=mesh, in_specs=P(), out_specs=None)(np.ones(4))
