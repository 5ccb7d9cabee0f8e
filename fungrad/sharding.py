"""Meshes, partition specs, shardings and global arrays (``jax.sharding``).

A ``Mesh`` is a NumPy array of devices with a name per axis; a
``PartitionSpec`` says, per array dimension, which mesh axes split it (None:
not split); a ``NamedSharding(mesh, spec)`` places one block of an array on
every device of the mesh (devices along axes the spec does not mention hold
copies).  ``device_put(x, NamedSharding(...))`` returns a ``ShardedArray``: a
global array (``.shape``, ``.dtype``, ``.sharding`` as in JAX) whose blocks
live on the devices — on Dask workers once ``fungrad.distributed`` is
initialised, in this process for the local CPU device or
``fungrad.distributed.simulated_devices``.  ``np.asarray`` / ``device_get``
gathers it.

On NumPy without a cluster there is one device, this process's CPU: every
fungrad ``Array`` lives there (``SingleDeviceSharding``).
"""
from __future__ import annotations

import enum
import functools
import math
import threading
from typing import Any, Sequence

import numpy as np

from fungrad import core
from fungrad import jitting as _jitting
from fungrad.core import Array, Device, ShapedArray, Tracer, cpu_device, wrap_array
from fungrad.distributed import cluster
from fungrad.tree_util import (keystr, tree_flatten_with_path, tree_leaves, tree_map,
                                tree_unflatten)

__all__ = ["AxisType", "Mesh", "PartitionSpec", "P", "Sharding", "NamedSharding", "SingleDeviceSharding",
           "ShardedArray", "Shard", "make_mesh", "device_put", "device_get", "block_until_ready",
           "describe_shards", "AbstractMesh", "get_abstract_mesh", "get_mesh", "set_mesh",
           "reshard", "use_abstract_mesh", "auto_axes", "explicit_axes"]


# ----------------------------------------------------------------------------
# PartitionSpec
# ----------------------------------------------------------------------------

class PartitionSpec(tuple):
    """Per array dimension: None (not split), a mesh axis name, or a tuple of names
    (split over their product, first name major).  Trailing dimensions that the
    spec does not reach are not split."""

    def __new__(cls, *partitions):
        for p in partitions:
            ok = p is None or isinstance(p, str) or (
                isinstance(p, tuple) and all(isinstance(n, str) for n in p))
            if not ok:
                raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a "
                                f"tuple of names, got {p!r}")
        # (as JAX: a one-name tuple is that name, so P(('data',)) == P('data'))
        return super().__new__(cls, tuple(p[0] if isinstance(p, tuple) and len(p) == 1
                                          else p for p in partitions))

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"

    __str__ = __repr__

    def axes_of(self, dim: int) -> tuple:
        """The mesh axis names splitting dimension ``dim`` (empty if none)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        p = self[dim]
        return (p,) if isinstance(p, str) else tuple(p)

    def mesh_axes(self) -> tuple:
        """Every mesh axis name the spec mentions, in order."""
        return tuple(n for d in range(len(self)) for n in self.axes_of(d))

    def normalized(self) -> "PartitionSpec":
        """The same spec with trailing Nones dropped (names as tuples, a single
        name as itself)."""
        parts = [self.axes_of(d) or None for d in range(len(self))]
        while parts and parts[-1] is None:
            parts.pop()
        return PartitionSpec(*parts)


P = PartitionSpec


# ----------------------------------------------------------------------------
# Mesh
# ----------------------------------------------------------------------------

class AxisType(enum.Enum):
    """How a mesh axis is sharded (``jax.sharding.AxisType``).  JAX propagates
    shardings through its compiler on ``Auto`` axes and carries them in the
    types on ``Explicit`` ones; fungrad keeps no shardings in types, so both
    compute the same values here and the type is recorded as given
    (``mesh.axis_types``).  ``Manual``: the axes a ``shard_map`` body runs over."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _axis_types(axis_types, n: int, what: str) -> tuple:
    """``axis_types`` checked: one AxisType per axis (None: all Auto)."""
    if axis_types is None:
        return (AxisType.Auto,) * n
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * n
    axis_types = tuple(axis_types)
    if len(axis_types) != n or not all(isinstance(t, AxisType) for t in axis_types):
        raise ValueError(f"{what}: axis_types must be {n} jax.sharding.AxisType values (one "
                         f"per axis), got {axis_types!r}")
    return axis_types


class Mesh:
    """Devices in an n-dimensional array with a name per axis (``jax.sharding.Mesh``)."""

    def __init__(self, devices, axis_names, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        self.axis_types = _axis_types(axis_types, len(axis_names), "Mesh")
        arr = np.array(devices, dtype=object)
        flat = list(arr.flat)
        if arr.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices has {arr.ndim} dimensions {arr.shape} but "
                             f"{len(axis_names)} axis_names {axis_names} were given; give one "
                             "name per dimension of the devices array")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis_names {axis_names} repeat a name")
        if not all(isinstance(d, Device) for d in flat):
            bad = next(d for d in flat if not isinstance(d, Device))
            raise TypeError(f"Mesh: devices must be fungrad devices (fungrad.devices()), got "
                            f"{type(bad).__name__}")
        if len({id(d) for d in flat}) != len(flat):
            raise ValueError("Mesh: a device appears more than once in devices")
        kinds = {type(d) is cluster.WorkerDevice for d in flat}
        if len(kinds) > 1:
            raise ValueError("Mesh: devices mix Dask workers and local CPU devices")
        self.devices = arr
        self.axis_names = axis_names

    @property
    def shape(self) -> dict:
        """Axis name -> size, in order."""
        return dict(zip(self.axis_names, self.devices.shape))

    axis_sizes = property(lambda self: tuple(self.devices.shape))
    size = property(lambda self: self.devices.size)
    device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))

    # (recorded as given: see AxisType)
    are_all_axes_explicit = property(
        lambda self: bool(self.axis_types) and all(t is AxisType.Explicit
                                                   for t in self.axis_types))

    @property
    def is_distributed(self) -> bool:
        """True if the devices are Dask workers (shards live in other processes)."""
        return self.size > 0 and type(self.devices.flat[0]) is cluster.WorkerDevice

    def positions(self) -> list[dict]:
        """Each device's coordinates (axis name -> index), in ``devices.flat`` order."""
        return [dict(zip(self.axis_names, idx)) for idx in np.ndindex(*self.devices.shape)]

    def _key(self):
        return (self.axis_names, self.devices.shape, tuple(id(d) for d in self.devices.flat),
                self.axis_types)

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        types = "" if all(t is AxisType.Auto for t in self.axis_types) else \
            f", axis_types={self.axis_types}"
        return f"Mesh(device_ids={self.device_ids.tolist()}, axis_names={self.axis_names}{types})"

    def __str__(self):
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({axes})"


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types=None, *,
              devices=None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices (``jax.make_mesh``).
    ``axis_types`` default to ``Auto`` (JAX 0.10's default is ``Explicit``,
    which only changes types there: see AxisType)."""
    devices = list(cluster.devices() if devices is None else devices)
    n = math.prod(axis_shapes)
    if n > len(devices):
        raise ValueError(f"make_mesh: axis_shapes {tuple(axis_shapes)} need {n} devices but "
                         f"there are {len(devices)}")
    arr = np.empty(len(devices[:n]), dtype=object)
    arr[:] = devices[:n]
    return Mesh(arr.reshape(tuple(axis_shapes)), tuple(axis_names), axis_types)


class AbstractMesh:
    """A mesh's axis names and sizes without its devices (``jax.sharding.AbstractMesh``):
    what shardings inside traced code refer to.  ``Mesh.abstract_mesh`` gives one."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types=None):
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis_sizes but "
                             f"{len(axis_names)} axis_names; give one size per name")
        self.axis_sizes = tuple(int(n) for n in axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = _axis_types(axis_types, len(self.axis_names), "AbstractMesh")

    shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes))
    empty = property(lambda self: not self.axis_names)
    abstract_mesh = property(lambda self: self)
    are_all_axes_explicit = property(
        lambda self: bool(self.axis_types) and all(t is AxisType.Explicit
                                                   for t in self.axis_types))

    def __eq__(self, other):
        return (isinstance(other, AbstractMesh) and self.shape_tuple == other.shape_tuple
                and self.axis_types == other.axis_types)

    def __hash__(self):
        return hash((self.shape_tuple, self.axis_types))

    def __repr__(self):
        return f"AbstractMesh({', '.join(f'{n!r}: {s}' for n, s in self.shape_tuple)})"


Mesh.abstract_mesh = property(lambda self: AbstractMesh(self.axis_sizes, self.axis_names,
                                                        self.axis_types))
Mesh.empty = property(lambda self: self.size == 0)


_context = threading.local()      # .mesh: the mesh jax.set_mesh put in context


def get_mesh():
    """The mesh ``set_mesh`` put in context in this thread, or None."""
    return getattr(_context, "mesh", None)


def get_abstract_mesh() -> AbstractMesh:
    """The mesh that traced code runs under (``jax.sharding.get_abstract_mesh``):
    the one ``use_abstract_mesh`` put in context, else the abstract mesh of the
    one ``set_mesh`` put in context, else the empty one."""
    abstract = getattr(_context, "abstract_mesh", None)
    if abstract is not None:
        return abstract
    mesh = get_mesh()
    return AbstractMesh((), ()) if mesh is None else mesh.abstract_mesh


class use_abstract_mesh:
    """``with jax.sharding.use_abstract_mesh(abstract_mesh):``: the mesh that
    ``get_abstract_mesh`` reports inside the block (in this thread)."""
    __slots__ = ("mesh", "previous")

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"use_abstract_mesh: expected a jax.sharding.AbstractMesh, got "
                             f"{type(mesh).__name__} (a Mesh's is mesh.abstract_mesh)")
        self.mesh = mesh

    def __enter__(self):
        self.previous = getattr(_context, "abstract_mesh", None)
        _context.abstract_mesh = self.mesh
        return self.mesh

    def __exit__(self, *exc):
        _context.abstract_mesh = self.previous


class set_mesh:
    """``jax.set_mesh(mesh)``: put ``mesh`` in context for this thread, so that
    bare ``PartitionSpec``s stand for ``NamedSharding(mesh, spec)``
    (``device_put``, ``reshard``, ``jit``'s shardings) and ``shard_map``/
    ``smap`` need no ``mesh=``.  A call sets it; used as a context manager,
    the previous mesh comes back at the end of the block."""
    __slots__ = ("previous",)

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        if core.current_trace() is not core.EVAL_TRACE:
            raise ValueError("`set_mesh` can only be used outside of `jax.jit` (and other "
                             "transformations)")
        self.previous = get_mesh()
        _context.mesh = mesh

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _context.mesh = self.previous


def resolve_sharding(sharding, who: str):
    """``sharding``, with a bare ``PartitionSpec`` made a ``NamedSharding`` over
    the mesh in context."""
    if not isinstance(sharding, PartitionSpec):
        return sharding
    mesh = get_mesh()
    if mesh is None:
        raise ValueError(f"{who}: a bare PartitionSpec {sharding} needs a mesh: pass "
                         "NamedSharding(mesh, spec), or put a mesh in context with "
                         "jax.set_mesh(mesh)")
    return NamedSharding(mesh, sharding)


# ----------------------------------------------------------------------------
# Shardings
# ----------------------------------------------------------------------------

class Sharding:
    """How an array's blocks map to devices (``jax.sharding.Sharding``)."""

    def devices_indices_map(self, global_shape) -> dict:
        raise NotImplementedError

    def shard_shape(self, global_shape) -> tuple:
        raise NotImplementedError

    @property
    def device_set(self) -> set:
        return set(self._device_list())

    @property
    def num_devices(self) -> int:
        return len(self._device_list())

    @property
    def addressable_devices(self) -> set:
        # one controller drives every device (the Dask client), so all are addressable
        return self.device_set

    #: every device is driven by this process (the single controller)
    is_fully_addressable = True


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Device):
        self._device = device

    def _device_list(self):
        return [self._device]

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)

    is_fully_replicated = True
    mesh = property(lambda self: Mesh(np.array([self._device], dtype=object), ("_",)))
    spec = property(lambda self: PartitionSpec())

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(id(self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


class NamedSharding(Sharding):
    """Blocks of an array split over the mesh axes named by ``spec``."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec()):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec (P(...)), got {spec!r}")
        check_spec(spec, mesh, "NamedSharding spec")
        self.mesh = mesh
        self.spec = spec

    def _device_list(self):
        return list(self.mesh.devices.flat)

    def shard_shape(self, global_shape) -> tuple:
        return block_shape(global_shape, self.spec, self.mesh, "the array")

    def position_indices(self, global_shape) -> list[tuple]:
        """The index (tuple of slices) of each mesh position's block."""
        block = self.shard_shape(global_shape)
        out = []
        for coords in self.mesh.positions():
            idx = []
            for d, size in enumerate(block):
                k = 0
                for name in self.spec.axes_of(d):
                    k = k * self.mesh.shape[name] + coords[name]
                idx.append(slice(k * size, (k + 1) * size))
            out.append(tuple(idx))
        return out

    def devices_indices_map(self, global_shape) -> dict:
        return dict(zip(self.mesh.devices.flat, self.position_indices(global_shape)))

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[n] == 1 for n in self.spec.mesh_axes())

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and other.spec.normalized() == self.spec.normalized())

    def __hash__(self):
        return hash((self.mesh, self.spec.normalized()))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec})"


def check_spec(spec: PartitionSpec, mesh: Mesh, what: str, ndim: int | None = None) -> None:
    """ValueError naming ``what`` if ``spec`` names an axis the mesh lacks, uses an
    axis twice, or has more entries than the array has dimensions."""
    names = spec.mesh_axes()
    unknown = [n for n in names if n not in mesh.shape]
    if unknown:
        raise ValueError(f"{what} = {spec} names mesh axis {unknown[0]!r}, but the mesh axes "
                         f"are {mesh.axis_names}")
    if len(set(names)) != len(names):
        raise ValueError(f"{what} = {spec} uses a mesh axis more than once")
    if ndim is not None and len(spec.normalized()) > ndim:
        raise ValueError(f"{what} = {spec} has {len(spec)} entries but the value has rank "
                         f"{ndim}")


def block_shape(global_shape, spec: PartitionSpec, mesh: Mesh, what: str) -> tuple:
    """The shape of one block; ValueError naming ``what`` if a split dimension is
    not divisible by the product of its mesh axis sizes."""
    check_spec(spec, mesh, f"the spec of {what}", len(global_shape))
    out = []
    for d, size in enumerate(global_shape):
        parts = math.prod(mesh.shape[n] for n in spec.axes_of(d))
        if parts == 0:
            raise ValueError(f"{what}: the mesh has no devices along {spec.axes_of(d)}; "
                             "build it from a non-empty fungrad.devices()")
        if size % parts:
            raise ValueError(f"{what}: dimension {d} has size {size}, which is not divisible "
                             f"by {parts}, the size of mesh axes {spec.axes_of(d)} that "
                             f"{spec} splits it over")
        out.append(size // parts)
    return tuple(out)


def global_shape(block, spec: PartitionSpec, mesh: Mesh) -> tuple:
    return tuple(b * math.prod(mesh.shape[n] for n in spec.axes_of(d))
                 for d, b in enumerate(block))


def split_blocks(x: np.ndarray, spec: PartitionSpec, mesh: Mesh) -> np.ndarray:
    """``x`` as an array with one leading axis per mesh axis ``spec`` mentions (in
    mesh order), followed by the block shape: the layout a nested named vmap over
    the mesh axes maps over."""
    shape, split = [], []
    for d, size in enumerate(x.shape):
        names = spec.axes_of(d)
        sizes = [mesh.shape[n] for n in names]
        shape += sizes + [size // max(1, math.prod(sizes))]
        split += [(n, len(shape) - len(sizes) - 1 + i) for i, n in enumerate(names)]
    y = x.reshape(shape)
    pos = dict(split)
    lead = [pos[n] for n in mesh.axis_names if n in pos]
    rest = [i for i in range(len(shape)) if i not in lead]
    return y.transpose(lead + rest)


def merge_blocks(y: np.ndarray, spec: PartitionSpec, mesh: Mesh) -> np.ndarray:
    """Inverse of ``split_blocks``."""
    lead_names = [n for n in mesh.axis_names if n in spec.mesh_axes()]
    block = y.shape[len(lead_names):]
    order = []          # axes of y in the reshaped global layout
    for d in range(len(block)):
        order += [lead_names.index(n) for n in spec.axes_of(d)] + [len(lead_names) + d]
    z = y.transpose(order)
    return z.reshape(global_shape(block, spec, mesh))


# ----------------------------------------------------------------------------
# Global arrays
# ----------------------------------------------------------------------------

class Shard:
    """One block of a ShardedArray: its ``device``, ``index`` and ``data``."""

    def __init__(self, array: "ShardedArray", position: int):
        self._array, self._position = array, position
        self.device = array._devices[position]
        self.index = array._indices[position]

    @property
    def data(self) -> Array:
        return self._array._fetch([self._position])[0]

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index})"


class ShardedArray:
    """A global array whose blocks live on the devices of its ``sharding``.

    ``refs`` holds one block per mesh position (in ``mesh.devices.flat``
    order): a NumPy array for blocks in this process, or a reference to a
    block on a Dask worker.  Replicated blocks (mesh axes the spec does not
    mention) are copies; gathering reads one copy of each.
    """
    __array_priority__ = 1000

    def __init__(self, aval: ShapedArray, sharding: Sharding, refs: Sequence[Any]):
        self.aval = aval.strip_weak_type()
        self.sharding = sharding
        self._refs = list(refs)
        self._devices = list(sharding.devices_indices_map(aval.shape))
        self._indices = (sharding.position_indices(aval.shape)
                         if isinstance(sharding, NamedSharding) else
                         list(sharding.devices_indices_map(aval.shape).values()))
        self._host = None

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated)

    @property
    def addressable_shards(self) -> list:
        return [Shard(self, i) for i in range(len(self._refs))]

    #: the single controller addresses every block
    is_fully_addressable = True

    def addressable_data(self, index: int) -> Array:
        """The block of ``addressable_shards[index]``, in this process."""
        return self.addressable_shards[index].data

    def devices(self) -> set:
        return self.sharding.device_set

    @property
    def device(self):
        devs = self._devices
        if len(devs) != 1:
            raise ValueError(f"this array is sharded over {len(devs)} devices; use .devices() "
                             "or .sharding")
        return devs[0]

    # --- gathering ----------------------------------------------------------------
    def _fetch(self, positions) -> list:
        remote = [p for p in positions if not isinstance(self._refs[p], np.ndarray)]
        got = dict(zip(remote, cluster.gather_refs([self._refs[p] for p in remote]))) if remote else {}
        return [wrap_array(got.get(p, self._refs[p])) for p in positions]

    def _value(self) -> Array:
        """The whole array in this process (gathered once, then kept: it is immutable)."""
        if self._host is None:
            first = {}
            for p, idx in enumerate(self._indices):
                first.setdefault(tuple((s.start, s.stop) for s in idx), p)
            positions = list(first.values())
            out = np.empty(self.shape, self.dtype)
            for p, block in zip(positions, self._fetch(positions)):
                out[self._indices[p]] = block
            self._host = wrap_array(out)
        return self._host

    def __array__(self, dtype=None, copy=None):
        value = self._value().view(np.ndarray)
        return value if dtype is None else value.astype(dtype)

    def block_until_ready(self):
        """Wait until every block is computed; returns ``self``."""
        cluster.wait_refs([r for r in self._refs if not isinstance(r, np.ndarray)])
        return self

    def copy_to_host_async(self):
        return None

    # --- behaving like an array: through the gathered value ----------------------
    def __repr__(self):
        return f"ShardedArray({np.asarray(self)!r}, sharding={self.sharding})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return iter(self._value())

    def __getitem__(self, idx):
        return self._value()[idx]

    def __bool__(self):
        return bool(self._value())

    def __float__(self):
        return float(self._value())

    def __int__(self):
        return int(self._value())

    def __index__(self):
        return self._value().__index__()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._value(), name)

    def __reduce__(self):   # pickles as the gathered NumPy array
        return np.asarray(self).copy().__reduce__()


def _install_operators():
    binary = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"]
    names = [f"__{b}__" for b in binary] + [f"__r{b}__" for b in binary[:13]]
    names += ["__neg__", "__pos__", "__abs__", "__invert__"]
    for dunder in names:
        def op(self, *other, _d=dunder):
            return getattr(self._value(), _d)(*other)
        op.__name__ = dunder
        setattr(ShardedArray, dunder, op)


_install_operators()
ShardedArray.__hash__ = None
core.register_global_array_type(ShardedArray)
Array.sharding = property(lambda self: SingleDeviceSharding(cpu_device),
                          doc="Where the array lives: this process's CPU device.")


class _WholeShard:
    """The one shard of an array in this process: all of it, on the CPU device."""

    def __init__(self, array):
        self.device, self.data = cpu_device, array
        self.index = tuple(slice(None) for _ in np.shape(array))
        self.replica_id = 0

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index})"


def _addressable_data(self, index: int):
    if index != 0:
        raise IndexError(f"addressable_data({index}): an array in this process has one shard "
                         "(index 0)")
    return self


Array.addressable_shards = property(lambda self: [_WholeShard(self)],
                                    doc="One shard: the whole array, on the CPU device.")
Array.addressable_data = _addressable_data
Array.is_fully_addressable = True
Array.is_fully_replicated = True
# jax.typeof(x).sharding: an abstract value's sharding is its array's
class _TypeSharding(SingleDeviceSharding):
    """The sharding of an abstract value of rank ``ndim``: the CPU device, and
    JAX's spec of an unsharded type, one ``None`` per axis (flax reads
    ``x.aval.sharding.spec[0]`` of scanned arrays)."""

    def __init__(self, device: Device, ndim: int):
        super().__init__(device)
        self._ndim = ndim

    spec = property(lambda self: PartitionSpec(*([None] * self._ndim)))

    def update(self, *, spec=None, **_):
        """The same with another (unsharded) spec, as JAX's ``NamedSharding.update``."""
        return _TypeSharding(self._device, self._ndim if spec is None else len(spec))


core.ShapedArray.sharding = property(lambda self: _TypeSharding(cpu_device, len(self.shape)),
                                     doc="The sharding of arrays of this type: one CPU device.")


# ----------------------------------------------------------------------------
# device_put / device_get
# ----------------------------------------------------------------------------

def _check_leaf(x, path: str):
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex, ShardedArray, Tracer)):
        return
    raise TypeError(f"device_put: the leaf {path or 'x'} is a {type(x).__name__}, which is not "
                    "an array; device_put takes arrays, NumPy scalars and Python numbers "
                    "(and pytrees of them)")


def _put_one(x, where):
    if isinstance(x, Tracer):
        return x            # inside a transformation the value is already where it runs
    if where is None or where is cpu_device or where == SingleDeviceSharding(cpu_device):
        if isinstance(x, ShardedArray):
            return x._value()
        if type(x) in (int, float, complex):     # a Python number: weakly typed, as in JAX
            return core.weak_array(x, core.scalar_dtype(x))
        return x if type(x) is Array else wrap_array(np.array(x))
    if isinstance(where, Device):
        where = SingleDeviceSharding(where)
    if not isinstance(where, Sharding):
        raise TypeError(f"device_put: device must be a device or a sharding, got "
                        f"{type(where).__name__}")
    if isinstance(x, ShardedArray) and x.sharding == where:
        return x
    return place(np.asarray(x), where)


def place(value: np.ndarray, sharding: Sharding) -> ShardedArray:
    """Copy ``value``'s blocks to the devices of ``sharding``."""
    aval = core.get_aval(value)
    if isinstance(sharding, NamedSharding):
        block_shape(value.shape, sharding.spec, sharding.mesh,
                    f"device_put of an array of shape {value.shape}")
    mapping = sharding.devices_indices_map(value.shape)     # in mesh position order
    devices = list(mapping)
    blocks = [np.array(value[idx]) for idx in mapping.values()]
    for b in blocks:
        b.setflags(write=False)
    if isinstance(devices[0], cluster.WorkerDevice):
        from fungrad.distributed import execute
        refs = execute.put_blocks(blocks, devices)
    else:
        refs = blocks
    return ShardedArray(aval, sharding, refs)


class _JitShardingSupport:
    """What ``jit(f, in_shardings=..., out_shardings=...)`` needs from this module
    (installed into fungrad.jitting below)."""

    @staticmethod
    def _pairs(name, what, shardings, tree):
        """(sharding, leaf, path) for every leaf, ``shardings`` a tree prefix of
        ``tree`` (a single sharding applies to every leaf)."""
        leaves = tree_flatten_with_path(tree)[0]
        if shardings is None or isinstance(shardings, (Sharding, PartitionSpec)):
            return [(resolve_sharding(shardings, f"jit({name}): {what}"), leaf, keystr(p))
                    for p, leaf in leaves]
        per_leaf = []
        try:
            tree_map(lambda s, sub: per_leaf.extend(
                         [resolve_sharding(s, f"jit({name}): {what}")] * len(tree_leaves(sub))),
                     shardings, tree,
                     is_leaf=lambda s: s is None or isinstance(s, (Sharding, PartitionSpec)))
        except (ValueError, TypeError) as err:
            raise ValueError(f"jit({name}): {what} must be a Sharding or a pytree prefix of the "
                             f"{'positional arguments' if what == 'in_shardings' else 'outputs'}"
                             f" with a Sharding (or None) per leaf: {err}") from None
        return [(s, leaf, keystr(p)) for s, (p, leaf) in zip(per_leaf, leaves)]

    def check_inputs(self, name, in_shardings, args):
        for sharding, leaf, path in self._pairs(name, "in_shardings", in_shardings, tuple(args)):
            if isinstance(sharding, NamedSharding):
                block_shape(np.shape(leaf), sharding.spec, sharding.mesh,
                            f"jit({name}): argument {path or '0'} (shape {np.shape(leaf)}, "
                            f"mesh {dict(sharding.mesh.shape)})")

    @staticmethod
    def partitioned_runner(closed, n_hoisted, leaves, cache):
        from fungrad.distributed.partition import partitioned_runner
        return partitioned_runner(closed, n_hoisted, leaves, cache)

    def place_outputs(self, name, out_shardings, out):
        pairs = self._pairs(name, "out_shardings", out_shardings, out)
        placed = [leaf if s is None else device_put(leaf, s) for s, leaf, _ in pairs]
        return tree_unflatten(tree_flatten_with_path(out)[1], placed)


def make_array_from_callback(shape, sharding: Sharding, data_callback, dtype=None):
    """A global array of ``shape`` placed by ``sharding``, each block made by
    ``data_callback(index)`` (a tuple of slices into the global array), as
    ``jax.make_array_from_callback``; each distinct block is asked for once."""
    shape = tuple(int(d) for d in shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"make_array_from_callback: sharding must be a Sharding "
                        f"(NamedSharding, SingleDeviceSharding), got {type(sharding).__name__}")
    indices = sharding.devices_indices_map(shape)
    if isinstance(sharding, NamedSharding):
        check_spec(sharding.spec, sharding.mesh, "make_array_from_callback", len(shape))
    blocks, full = {}, None
    for index in indices.values():
        key = tuple(s.indices(d)[:2] for s, d in zip(index, shape))
        if key in blocks:
            continue
        block = np.asarray(data_callback(index))
        want = tuple(len(range(*s.indices(d))) for s, d in zip(index, shape))
        if block.shape != want:
            raise ValueError(f"make_array_from_callback: data_callback({index}) returned shape "
                             f"{block.shape}; the block of global shape {shape} at that index "
                             f"is {want}")
        if full is None:
            full = np.empty(shape, dtype if dtype is not None else block.dtype)
        full[index] = block
        blocks[key] = True
    if full is None:
        full = np.empty(shape, dtype if dtype is not None else np.float64)
    return device_put(full, sharding)


def make_array_from_single_device_arrays(shape, sharding: Sharding, arrays, *, dtype=None):
    """The global array of ``shape`` whose block on the k-th device of
    ``sharding`` (in ``sharding.devices_indices_map`` order) is ``arrays[k]``,
    as ``jax.make_array_from_single_device_arrays``."""
    shape = tuple(int(d) for d in shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"make_array_from_single_device_arrays: sharding must be a Sharding, "
                        f"got {type(sharding).__name__}")
    indices = list(sharding.devices_indices_map(shape).values())
    arrays = list(arrays)
    if len(arrays) != len(indices):
        raise ValueError(f"make_array_from_single_device_arrays: {len(arrays)} arrays given "
                         f"for a sharding over {len(indices)} devices; pass one per device")
    by_index = {}
    for k, (index, block) in enumerate(zip(indices, arrays)):
        key = tuple(s.indices(d)[:2] for s, d in zip(index, shape))
        by_index.setdefault(key, np.asarray(block))
    return make_array_from_callback(
        shape, sharding,
        lambda index: by_index[tuple(s.indices(d)[:2] for s, d in zip(index, shape))],
        dtype=dtype)


def make_array_from_process_local_data(sharding: Sharding, local_data, global_shape=None):
    """``jax.make_array_from_process_local_data``: with one controller process
    its local data is the whole array, placed by ``sharding``."""
    local_data = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != local_data.shape:
        raise ValueError(f"make_array_from_process_local_data: global_shape "
                         f"{tuple(global_shape)} differs from the local data's shape "
                         f"{local_data.shape}, but this is the only process, so its data is "
                         "the whole array")
    return device_put(local_data, sharding)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place ``x`` (a pytree of arrays) on ``device`` (a device or a sharding).

    On NumPy without a cluster every array lives in this process: the result is
    a read-only copy (a fungrad Array).  With a ``NamedSharding`` the blocks go
    to the mesh's devices (Dask workers once ``fungrad.distributed`` is
    initialised) and the result is a ``ShardedArray``.  ``device`` may also be a
    pytree of devices/shardings matching ``x``.  ``src``, ``donate`` and
    ``may_alias`` are accepted and ignored (NumPy has nothing to donate).
    """
    paths, treedef = tree_flatten_with_path(x)
    for path, leaf in paths:
        _check_leaf(leaf, keystr(path))
    leaves = [leaf for _, leaf in paths]
    device = resolve_sharding(device, "device_put")
    if device is None or isinstance(device, (Device, Sharding)):
        return tree_unflatten(treedef, [_put_one(v, device) for v in leaves])
    where = treedef.flatten_up_to(device)
    return tree_unflatten(treedef, [_put_one(v, w) for v, w in zip(leaves, where)])


def reshard(xs, out_shardings):
    """``jax.reshard``: ``xs`` (a pytree) placed by ``out_shardings`` (a
    sharding, bare ``PartitionSpec`` with a mesh in context, or a pytree prefix
    of them).  Inside ``jit`` the values are unchanged: fungrad's ``jit``
    partitions by its arguments' shardings (``with_sharding_constraint``)."""
    leaves, treedef = tree_flatten_with_path(xs)
    if out_shardings is None:
        raise ValueError("reshard: out_shardings must be a sharding or PartitionSpec, "
                         "not None")
    if isinstance(out_shardings, (Sharding, PartitionSpec)):
        per_leaf = [out_shardings] * len(leaves)
    else:
        per_leaf = _JitShardingSupport._pairs("reshard", "out_shardings", out_shardings, xs)
        per_leaf = [s_ for s_, _, _ in per_leaf]
    placed = []
    for (path, x), sharding in zip(leaves, per_leaf):
        sharding = resolve_sharding(sharding, "reshard")
        if isinstance(sharding, NamedSharding):
            check_spec(sharding.spec, sharding.mesh, f"reshard: {keystr(path) or 'x'}",
                       np.ndim(x))
        placed.append(x if isinstance(x, Tracer) else _put_one(x, sharding))
    return tree_unflatten(treedef, placed)


def device_get(x):
    """The value of ``x`` (a pytree) in this process: ShardedArrays are gathered;
    fungrad Arrays already live here and are returned as they are."""
    return tree_map(lambda v: v._value() if isinstance(v, ShardedArray) else v, x)


def block_until_ready(x):
    """Wait until every array of the pytree ``x`` is computed; returns ``x``.
    fungrad Arrays already are (NumPy is synchronous); ShardedArrays wait for
    their blocks on the workers."""
    for leaf in tree_leaves(x):
        if isinstance(leaf, ShardedArray):
            leaf.block_until_ready()
    return x


def describe_shards(x) -> str:
    """A text description of where ``x``'s blocks live (one line per device), or
    ``"single CPU device"`` for an array of this process."""
    if not isinstance(x, ShardedArray):
        return "single CPU device"
    lines = [f"{x.aval.str_short()} with {x.sharding}"]
    for dev, idx in zip(x._devices, x._indices):
        where = ", ".join(f"{s.start}:{s.stop}" if s != slice(None) else ":" for s in idx)
        lines.append(f"  {dev!r}: [{where}]")
    return "\n".join(lines)


_jitting.sharding_support = _JitShardingSupport()


# ----------------------------------------------------------------------------
# auto_axes / explicit_axes: JAX's switches between its Auto and Explicit axes
# ----------------------------------------------------------------------------
# In JAX they change how shardings are typed inside ``fun`` and reshard at the
# edges.  fungrad keeps no shardings in types (see AxisType), so what remains
# is the resharding at the edges, which is what the values depend on.

def _resharding_at_edges(f, who: str, keyword: str, given, call):
    """``f`` wrapped: the sharding comes from ``given`` or the call's
    ``keyword`` argument (JAX's two spellings); ``call(target, args, kwargs)``."""
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        target = given if given is not None else kwargs.pop(keyword, None)
        if target is None:
            raise TypeError(f"{who}: missing required keyword argument: '{keyword}'")
        return call(target, args, kwargs)
    return wrapped


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``jax.sharding.auto_axes``: ``f``'s result resharded to
    ``out_sharding`` (given here or as a keyword argument of the call)."""
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)
    return _resharding_at_edges(f, "auto_axes", "out_sharding", out_sharding,
                                lambda target, args, kwargs: reshard(f(*args, **kwargs), target))


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``jax.sharding.explicit_axes``: ``f`` of its arguments resharded to
    ``in_sharding`` (given here or as a keyword argument of the call); needs a
    mesh in context (``jax.set_mesh``), as JAX's does."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    def call(target, args, kwargs):
        if get_mesh() is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                             "enter into a mesh context when using `explicit_axes` API.")
        return f(*reshard(args, target), **kwargs)
    return _resharding_at_edges(f, "explicit_axes", "in_sharding", in_sharding, call)
