"""The Dask cluster fungrad runs on: ``initialize``, ``shutdown``, the devices.

One process without a cluster has one device, its CPU.  After
``initialize()`` every Dask worker is a device (``WorkerDevice``), and this
process is the single controller that drives them all (so every device is
"local" to it in JAX's sense).  Dask is imported only here and in
``execute.py``/``worker.py``, and only when a cluster is used: ``import
fungrad`` does not need it.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Sequence

from fungrad.core import CpuDevice, Device, cpu_device
from fungrad.distributed.security import resolve_security, warn_if_exposed

__all__ = ["WorkerDevice", "Cluster", "RemoteRef", "initialize", "shutdown", "is_initialized",
           "client", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "process_index", "process_count", "process_indices",
           "host_id", "host_count", "host_ids", "simulated_devices",
           "gather_refs", "wait_refs"]


class WorkerDevice(Device):
    """A Dask worker process, seen as one CPU device."""
    device_kind = "dask-worker"

    def __init__(self, id: int, address: str):
        super().__init__(id)
        self.address = address

    def __repr__(self):
        return f"WorkerDevice(id={self.id}, address={self.address!r})"


class RemoteRef:
    """A block on a worker: element ``index`` of the tuple a Dask future holds
    (``index=None``: the future's value itself)."""
    __slots__ = ("future", "index")

    def __init__(self, future, index=None):
        self.future, self.index = future, index

    def __repr__(self):
        return f"RemoteRef({self.future.key!r}, {self.index})"


class _State:
    def __init__(self):
        self.client = None
        self.cluster = None          # the LocalCluster we started (None: connected to one)
        self.devices: dict[str, WorkerDevice] = {}
        self.generation = 0          # bumped by every initialize (caches per client)


_state = _State()
_lock = threading.RLock()
_atexit_registered = False


class Cluster:
    """What ``initialize`` returns; ``with initialize(...):`` shuts it down at the end."""

    def __init__(self, client, local_cluster):
        self.client = client
        self.local_cluster = local_cluster

    @property
    def address(self) -> str:
        return self.client.scheduler.address

    def devices(self) -> list:
        return devices()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutdown()
        return False

    def __repr__(self):
        return f"Cluster(address={self.address!r}, workers={len(devices())})"


def _dask():
    try:
        import dask.distributed as dd
    except ImportError:
        raise ImportError("fungrad.distributed needs Dask's distributed scheduler: "
                          "pip install 'fungrad[distributed]' (or pip install "
                          "'dask[distributed]')") from None
    return dd


def initialize(address=None, *, n_workers: int | None = None, threads_per_worker: int = 1,
               timeout: float = 30.0, security=None, **cluster_kwargs) -> Cluster:
    """Start a ``LocalCluster`` of ``n_workers`` worker processes on this machine
    (``address=None``; 127.0.0.1 only, no dashboard), or connect to the Dask
    scheduler at ``address`` (e.g. ``"tcp://scheduler:8786"``, as started by
    ``dask scheduler``, dask-jobqueue, dask-kubernetes or ``dask ssh``).

    Each worker becomes a device (``fungrad.devices()``).  A scheduler that
    cannot be reached within ``timeout`` seconds raises ``ConnectionError``.
    Extra keyword arguments go to ``LocalCluster``.

    ``security``: Dask's ``distributed.Security`` for TLS with certificates
    (its files are checked here: a missing file or a certificate that does
    not load raises ``ValueError`` naming it), or ``True`` for a LocalCluster
    with a temporary self-signed certificate.  Plain TCP to a scheduler on
    another machine logs a warning: whoever reaches it can run code on the
    workers (docs/distributed.md, "TLS").
    """
    global _atexit_registered
    dd = _dask()
    with _lock:
        if _state.client is not None:
            raise RuntimeError("fungrad.distributed is already initialised; call "
                               "fungrad.distributed.shutdown() before initialising again")
        local = None
        sec = resolve_security(dd, security, local=address is None)
        if address is None:
            n = int(n_workers or os.cpu_count() or 1)
            kwargs = dict(n_workers=n, threads_per_worker=threads_per_worker, processes=True,
                          protocol="tls://" if sec else "tcp://", host="127.0.0.1",
                          dashboard_address=None, silence_logs=logging.ERROR)
            if sec is not None:
                kwargs["security"] = sec
            kwargs.update(cluster_kwargs)
            local = dd.LocalCluster(**kwargs)
            client = dd.Client(local, timeout=timeout, **({"security": sec} if sec else {}))
            client.wait_for_workers(n, timeout=timeout)
        else:
            warn_if_exposed(address, sec)
            client = _connect(dd, address, timeout, sec)
        _state.client, _state.cluster = client, local
        _state.devices = {}
        _state.generation += 1
        if not _atexit_registered:
            atexit.register(shutdown)
            _atexit_registered = True
    devices()        # number the workers now, in address order
    return Cluster(client, local)


def _connect(dd, address, timeout, security=None):
    try:
        return dd.Client(address, timeout=timeout, **({"security": security} if security else {}))
    except (OSError, TimeoutError) as err:
        if security is not None:
            raise ConnectionError(
                f"fungrad.distributed.initialize: no TLS connection to the Dask scheduler at "
                f"{address!r} within {timeout} s ({type(err).__name__}: {err}). Check that the "
                f"address starts with tls://, that the scheduler's certificate is signed by "
                f"the CA in tls_ca_file = {security.tls_ca_file!r}, and that the scheduler "
                "accepts this client's certificate.") from None
        raise ConnectionError(
            f"fungrad.distributed.initialize: could not reach the Dask scheduler at "
            f"{address!r} within {timeout} s ({type(err).__name__}: {err}). Check that a "
            "scheduler runs there (dask scheduler / dask-jobqueue / dask-kubernetes) and "
            "that this machine can reach it (with TLS: that its certificate is signed by "
            "the CA in security.tls_ca_file and the address starts with tls://), or call "
            "initialize() without an address for a LocalCluster on this machine.") from None


def shutdown() -> None:
    """Close the client (and the LocalCluster ``initialize`` started); devices are
    this process's CPU again.  Arrays placed on the workers become unusable."""
    with _lock:
        client, local = _state.client, _state.cluster
        _state.client = _state.cluster = None
        _state.devices = {}
    if client is not None:
        client.close(timeout=10)
    if local is not None:
        local.close(timeout=10)


def is_initialized() -> bool:
    """Whether a Dask client is connected (``initialize`` was called)."""
    return _state.client is not None


def client():
    """The Dask client (RuntimeError if fungrad.distributed is not initialised)."""
    c = _state.client
    if c is None:
        raise RuntimeError("this needs a Dask cluster, but fungrad.distributed is not "
                           "initialised: call fungrad.distributed.initialize() (or use a mesh "
                           "of local devices)")
    return c


def generation() -> int:
    return _state.generation


_BACKENDS = ("cpu",)


def _check_backend(backend) -> None:
    """JAX's error for a platform this process does not have (only ``cpu``:
    NumPy runs on the CPU, Dask workers included)."""
    name = getattr(backend, "platform", backend)
    if name is not None and str(name).lower() not in _BACKENDS:
        raise RuntimeError(f"Unknown backend {name}. Available backends are {list(_BACKENDS)} "
                           "(fungrad computes with NumPy on the CPU)")


def devices(backend=None) -> list:
    """The devices: the cluster's workers (in address order, numbered once), or
    this process's CPU when fungrad.distributed is not initialised.  ``backend``
    may be ``"cpu"``; other platforms raise ``RuntimeError`` as in JAX."""
    _check_backend(backend)
    c = _state.client
    if c is None:
        return _local_cpu_devices()
    workers = _worker_addresses(c)
    with _lock:
        for address in sorted(workers):
            if address not in _state.devices:
                _state.devices[address] = WorkerDevice(len(_state.devices), address)
        live = set(workers)
        return [d for a, d in sorted(_state.devices.items(), key=lambda kv: kv[1].id) if a in live]


def _local_cpu_devices() -> list:
    """This process's CPU devices: one, or as many as ``jax_num_cpu_devices``
    (or XLA_FLAGS' ``--xla_force_host_platform_device_count``) asks, simulated
    on the one CPU.  Listing them fixes the number, as initialising JAX's
    backend does."""
    from fungrad import _config
    n = _config.num_cpu_devices.value
    if n == -1:
        n = _xla_flags_device_count()
    _config._devices_in_use = True
    return [cpu_device] if n == 1 else simulated_devices(n)


def _xla_flags_device_count() -> int:
    """``--xla_force_host_platform_device_count=N`` in the XLA_FLAGS environment
    variable (how JAX's tutorials ask for several CPU devices), else 1."""
    for flag in os.environ.get("XLA_FLAGS", "").split():
        name, _, value = flag.partition("=")
        if name == "--xla_force_host_platform_device_count":
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"XLA_FLAGS: --xla_force_host_platform_device_count must be "
                                 f"a positive int, got {value!r}")
            return int(value)
    return 1


def _worker_addresses(client) -> list:
    """The scheduler's workers, asked for now.  (``Client.scheduler_info()``
    returns a cached dict that the client's own periodic refresh overwrites
    with one listing no workers, racing with the caller.)"""
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1)
    except TypeError:     # (a scheduler whose identity lists every worker anyway)
        info = client.sync(client.scheduler.identity)
    return list(info["workers"])


def local_devices(process_index: int | None = None, backend: str | None = None) -> list:
    """The devices this process drives: all of them (one controller, the Dask
    client, addresses every worker), or its CPU without a cluster."""
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    """The number of devices: Dask workers, or 1 (this process's CPU)."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """The number of devices this process drives (``device_count()``: one controller)."""
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """The platform fungrad computes on: ``"cpu"`` (NumPy), also on Dask workers."""
    return "cpu"


def process_index() -> int:
    """This process's index among the controllers: 0 (there is one)."""
    return 0


def process_count() -> int:
    """The number of controller processes: 1 (workers are devices, not controllers)."""
    return 1


def process_indices() -> list:
    """The indices of the controller processes: ``[0]``."""
    return list(range(process_count()))


# JAX's older names for the process functions (still in its namespace)
host_id, host_count, host_ids = process_index, process_count, process_indices


def simulated_devices(n: int) -> list:
    """``n`` CPU devices of this process (the first is its CPU): a mesh of them runs
    ``shard_map`` shard by shard here, as a named vmap — the single-machine
    reference of a cluster run, like XLA's host-platform device count."""
    if n < 1:
        raise ValueError(f"simulated_devices: n must be at least 1, got {n}")
    return [cpu_device] + [CpuDevice(i) for i in range(1, n)]


def gather_refs(refs: Sequence[RemoteRef]) -> list:
    """The values of ``refs`` in this process (one transfer per distinct future)."""
    futures = list({id(r.future): r.future for r in refs}.values())
    values = dict(zip(map(id, futures), client().gather(futures)))
    out = []
    for r in refs:
        v = values[id(r.future)]
        out.append(v if r.index is None else v[r.index])
    return out


def wait_refs(refs: Sequence[RemoteRef]) -> None:
    """Wait until ``refs`` are computed; a failed computation raises its error."""
    if refs:
        futures = [r.future for r in refs]
        _dask().wait(futures)
        for f in futures:
            if f.status == "error":
                f.result()
