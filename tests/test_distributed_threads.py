"""shard_map over 3 Dask workers (threads of one LocalCluster process, started and
stopped here): reductions over a number of positions that is not a power of two
take the binary-tree path; the results equal the in-process run's."""
from __future__ import annotations

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.distributed import simulated_devices
from fungrad.sharding import Mesh, P


@pytest.fixture(scope="module")
def mesh():
    fungrad.distributed.initialize(n_workers=3, processes=False, timeout=60)
    try:
        yield Mesh(fungrad.devices(), ("data",))
    finally:
        fungrad.distributed.shutdown()


def test_reductions_over_three_workers(mesh):
    x = np.random.default_rng(3).standard_normal((6, 4))

    def body(b):
        return (lax.psum(b, "data"), lax.pmax(fnp.sin(b), "data"),
                lax.psum_scatter(b[:, :3], "data", scatter_dimension=1),
                lax.all_gather(b, "data", axis=1, tiled=True), lax.axis_index("data") * b)
    specs = dict(in_specs=P("data"), out_specs=(P(), P(), P("data"), P(), P("data")))
    got = fungrad.shard_map(body, mesh=mesh, **specs)(x)
    local = Mesh(simulated_devices(3), ("data",))
    want = fungrad.shard_map(body, mesh=local, **specs)(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-13, atol=1e-14)
    grad = fungrad.grad(lambda v: fnp.sum(fungrad.shard_map(body, mesh=mesh, **specs)(v)[0]))(x)
    np.testing.assert_allclose(grad, np.ones_like(x), rtol=1e-13)   # the replicated sum, once
