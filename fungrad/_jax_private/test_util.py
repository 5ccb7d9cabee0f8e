"""``jax._src.test_util``: the helpers of JAX's own test suite that its
documentation uses.

Who needs it: JAX's "Gradient checkpointing" guide (``from jax._src import
test_util as jtu``, then ``jtu.create_mesh((2,), ("x",))`` in its offloading
example); test suites written after JAX's use ``check_grads`` from here too.
"""
from __future__ import annotations

import math
import unittest

from fungrad.distributed.cluster import devices as _devices
from fungrad.sharding import make_mesh
from fungrad.test_util import check_grads, check_jvp, check_vjp, numerical_jvp  # noqa: F401

__all__ = ["create_mesh", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]


def create_mesh(mesh_shape, axis_names, iota_order: bool = False, axis_types=None):
    """A mesh of ``prod(mesh_shape)`` devices (``iota_order``: the first ones by
    id), as JAX's; skips the calling test (``unittest.SkipTest``, as JAX's
    does) when there are fewer devices. fungrad's meshes have one axis type
    (JAX's ``Auto``): ``axis_types`` other than None is refused."""
    if axis_types is not None:
        raise NotImplementedError(
            "create_mesh: fungrad's meshes have no axis types (every axis behaves as JAX's "
            "AxisType.Auto); call it without axis_types")
    size = math.prod(mesh_shape)
    devices = _devices()
    if len(devices) < size:
        raise unittest.SkipTest(f"Test requires {size} global devices and found "
                                f"{len(devices)}.")
    devices = sorted(devices, key=lambda d: d.id)[:size] if iota_order else devices[:size]
    return make_mesh(tuple(mesh_shape), tuple(axis_names), devices=devices)
