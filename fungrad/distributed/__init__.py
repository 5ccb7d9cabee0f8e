"""Beyond one machine: fungrad programs on a Dask cluster.

``initialize()`` starts a ``LocalCluster`` on this machine, or
``initialize("tcp://scheduler:8786")`` connects to a running Dask scheduler
(dask-jobqueue, Kubernetes, SSH ...); each worker is then a device
(``fungrad.devices()``).  Arrays are placed on the workers with
``fungrad.device_put(x, NamedSharding(mesh, P(...)))`` and programs run there
with ``fungrad.shard_map``: the body is traced once, split at its collectives
into stages, each stage compiled by the jit code generator to NumPy source,
and that source (not pickled closures) runs on the workers; the collectives
run as tree reductions and gathers between stages.  See docs/distributed.md.

Layout: ``cluster.py`` (the client, the devices), ``execute.py`` (plans and
Dask task graphs, on the client), ``worker.py`` (what runs on the workers).
"""
from fungrad.distributed.cluster import (Cluster, WorkerDevice, initialize, shutdown,
                                         is_initialized, simulated_devices)

__all__ = ["Cluster", "WorkerDevice", "initialize", "shutdown", "is_initialized",
           "simulated_devices"]
