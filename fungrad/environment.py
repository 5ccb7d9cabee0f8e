"""Process-level state around the transformations, with JAX's names:
``disable_jit``, ``ensure_compile_time_eval``, ``default_device``,
``clear_caches``, ``live_arrays``, ``print_environment_info``.
"""
from __future__ import annotations

import gc
import platform
import sys

import numpy as np

from fungrad import _config, core
from fungrad.core import Trace, Tracer, bind_on, new_trace_context

__all__ = ["disable_jit", "ensure_compile_time_eval", "default_device", "clear_caches",
           "live_arrays", "print_environment_info", "copy_to_host_async", "effects_barrier"]


def disable_jit(disable: bool = True):
    """``with fungrad.disable_jit(): ...``: jitted functions run their Python code
    op by op (so ``print`` and ``pdb`` see values), as ``jax.disable_jit``; same
    as ``config.update("jax_disable_jit", True)`` while the block runs."""
    return _config.disable_jit(disable)


#: ``with fungrad.default_device(device): ...`` (``jax_default_device``): accepted
#: with any value; fungrad computes on the local CPU, and the device objects of
#: ``fungrad.distributed`` (being built) will give it a meaning there.
default_device = _config.default_device


class _CompileTimeEvalTrace(Trace):
    """Evaluates operations on concrete values right away (even while ``jit`` is
    tracing); operations on traced values go to the trace below, unchanged."""
    __slots__ = ()
    kind = "compile_time_eval"

    def process_primitive(self, prim, args, params):
        if any(isinstance(a, Tracer) for a in args):
            return bind_on(self.parent, prim, args, params)
        return bind_on(core.EVAL_TRACE, prim, args, params)


class ensure_compile_time_eval:
    """``with fungrad.ensure_compile_time_eval(): ...``: inside ``jit`` (or any
    transformation), operations whose inputs are all concrete are computed now,
    giving concrete arrays that Python control flow can use, as in JAX."""

    def __enter__(self):
        self._context = new_trace_context(_CompileTimeEvalTrace(core.current_trace()))
        self._context.__enter__()
        return self

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


def clear_caches() -> None:
    """Drop every cache of staged and compiled code (``jit``'s, control flow's)."""
    for clear in _config.on_tracing_change:
        clear()


def copy_to_host_async(x):
    """Start copying each leaf of ``x`` to the host (``jax.copy_to_host_async``):
    calls the leaves' ``copy_to_host_async`` where they have one (fungrad
    Arrays are already on the host; sharded ones fetch their blocks) and
    returns ``x``."""
    from fungrad.tree_util import tree_leaves
    for leaf in tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


def effects_barrier() -> None:
    """Wait until every side effect (``debug.print``, ``io_callback``) of the
    functions run so far has happened (``jax.effects_barrier``).  fungrad runs
    callbacks synchronously, in program order, before a call returns, so by
    the time this is reached they all have."""


def live_arrays() -> list:
    """The fungrad Arrays currently alive (reachable from Python containers,
    frames and objects that the garbage collector tracks; an array referenced
    only from inside another untracked object is not seen)."""
    seen, found = set(), []
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if type(ref) is core.Array and id(ref) not in seen:
                seen.add(id(ref))
                found.append(ref)
    return found


def print_environment_info(return_string: bool = False):
    """The versions and settings that a bug report needs, printed (or returned)."""
    from importlib.metadata import PackageNotFoundError, version
    from fungrad.distributed.cluster import devices
    try:
        fungrad_version = version("fungrad")
    except PackageNotFoundError:      # a source checkout that is not installed
        fungrad_version = "unknown (not installed)"
    changed = _config.config.non_defaults()
    found = devices()
    lines = [
        f"fungrad:    {fungrad_version}",
        f"numpy:      {np.__version__}",
        f"python:     {sys.version}",
        f"platform:   {platform.platform()}",
        f"devices:    {len(found)} ({', '.join(sorted({d.platform for d in found}))})",
        f"config:     {changed or 'defaults'}",
    ]
    info = "\n".join(lines)
    if return_string:
        return info
    print(info)
    return None

