"""``fungrad.profiler`` (as ``jax.profiler``): where the time goes.

NumPy has no device profiler, so a trace here is a timing report: while
tracing is on, every operation that runs (each primitive evaluated eagerly,
each call of a jitted function as a whole, each annotated region) is timed,
and ``stop_trace`` writes a table to ``log_dir``::

    with fungrad.profiler.trace("/tmp/prof"):
        train_step(params, batch)
    # /tmp/prof/fungrad_profile_<time>.txt:  name, calls, total ms, mean us, share

    with fungrad.profiler.TraceAnnotation("data loading"): ...
    @fungrad.profiler.annotate_function
    def step(...): ...

The timing covers the calling thread.  Inside a jitted call the generated code
runs as one block (time it per call, or read ``jit(f).lower(...).source()``).
``fungrad.named_scope`` and ``fungrad.named_call`` are annotations too.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from typing import Callable

from fungrad import name_stack as _name_stack
from fungrad import core
from fungrad.core import Trace, bind_on, new_trace_context

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "named_scope", "named_call"]

log = logging.getLogger("fungrad.profiler")


class _Timings:
    """Total time and count per name."""

    def __init__(self):
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, name: str, seconds: float):
        self.total[name] = self.total.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + 1

    def report(self, wall: float) -> str:
        rows = sorted(self.total.items(), key=lambda kv: -kv[1])
        width = max([len(n) for n, _ in rows] + [20])
        lines = [f"fungrad profile: {wall * 1e3:.3f} ms wall time",
                 f"{'name':<{width}}  {'calls':>8}  {'total ms':>10}  {'mean us':>10}  share"]
        for name, total in rows:
            calls = self.calls[name]
            lines.append(f"{name:<{width}}  {calls:>8}  {total * 1e3:>10.3f}  "
                         f"{total / calls * 1e6:>10.1f}  {total / wall if wall else 0:>5.1%}")
        return "\n".join(lines) + "\n"


class _ProfileTrace(Trace):
    """Times each primitive (a jitted call counts as one, named ``jit(f)``) that
    reaches evaluation, then hands it to the trace below unchanged."""
    __slots__ = ("timings",)
    kind = "profile"

    def __init__(self, parent, timings):
        super().__init__(parent)
        self.timings = timings

    def process_primitive(self, prim, args, params):
        start = time.perf_counter()
        try:
            return bind_on(self.parent, prim, args, params)
        finally:
            self.timings.add(core._op_name(prim, params), time.perf_counter() - start)


class _Session:
    def __init__(self, log_dir):
        self.log_dir = os.fspath(log_dir)
        self.timings = _Timings()
        self.context = new_trace_context(_ProfileTrace(core.current_trace(), self.timings))
        self.start = time.perf_counter()


_session: _Session | None = None


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> None:
    """Start timing (this thread); ``stop_trace`` writes the report to ``log_dir``."""
    global _session
    if _session is not None:
        raise RuntimeError("fungrad.profiler: a trace is already running; call "
                           "stop_trace() first")
    _session = _Session(log_dir)
    _session.context.__enter__()


def stop_trace() -> str:
    """Stop timing and write the report; returns the report file's path."""
    global _session
    if _session is None:
        raise RuntimeError("fungrad.profiler: no trace is running (call start_trace first)")
    session, _session = _session, None
    session.context.__exit__(None, None, None)
    wall = time.perf_counter() - session.start
    os.makedirs(session.log_dir, exist_ok=True)
    path = os.path.join(session.log_dir, f"fungrad_profile_{time.strftime('%Y%m%d-%H%M%S')}"
                                         f"_{os.getpid()}.txt")
    with open(path, "w") as fh:
        fh.write(session.timings.report(wall))
    log.info("fungrad.profiler: report written to %s", path)
    return path


class trace:
    """``with fungrad.profiler.trace(log_dir): ...``: start_trace/stop_trace."""

    def __init__(self, log_dir, create_perfetto_link: bool = False,
                 create_perfetto_trace: bool = False, profiler_options=None):
        self.log_dir = log_dir

    def __enter__(self):
        start_trace(self.log_dir)
        return self

    def __exit__(self, *exc):
        self.path = stop_trace()
        return False


class TraceAnnotation(contextlib.ContextDecorator):
    """A named region; its time is reported (under its name, in brackets) while
    a trace runs, and costs nothing otherwise.  Also a decorator (each call is
    the region), as ``jax.named_scope`` and ``TraceAnnotation`` are."""

    def __init__(self, name: str, **kwargs):
        self.name = f"[{name}]"
        self._kwargs = kwargs

    def _recreate_cm(self):
        # a fresh region per decorated call, so recursive calls keep their own start
        return type(self)(self.name[1:-1], **self._kwargs)

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if _session is not None:
            _session.timings.add(self.name, time.perf_counter() - self._start)
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A training step region (``step_num`` is part of the name)."""

    def __init__(self, name: str, **kwargs):
        step = kwargs.get("step_num")
        super().__init__(name if step is None else f"{name} step {step}")


def annotate_function(func: Callable | None = None, name: str | None = None, **kwargs):
    """Decorator: each call of ``func`` is a ``TraceAnnotation`` region."""
    if func is None:
        return lambda f: annotate_function(f, name=name, **kwargs)
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args, **kw):
        with TraceAnnotation(label):
            return func(*args, **kw)
    return wrapper


class _NamedScope(TraceAnnotation):
    """A region named in profiles whose name is also pushed on the name stack,
    so that the equations staged inside record it (fungrad/name_stack.py)."""

    def __enter__(self):
        self._names = _name_stack.extend(self.name[1:-1])
        self._names.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._names.__exit__(*exc)


def named_scope(name: str) -> TraceAnnotation:
    """``with fungrad.named_scope("layer1"): ...`` (as ``jax.named_scope``): the
    region is named in profiles, and the equations staged inside record the
    name (``eqn.source_info.name_stack``); the computation is unchanged."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a str, got {type(name).__name__}")
    return _NamedScope(name)


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` with its calls named as ``named_scope`` names a region (as
    ``jax.named_call``)."""
    label = name or getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        with _NamedScope(label):
            return fun(*args, **kwargs)
    return wrapper

