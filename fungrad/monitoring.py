"""``jax.monitoring``: listeners for events, durations and scalars.

fungrad's ``jit`` reports JAX's compile events, so tools written against
JAX's monitoring (compile-time dashboards, tests that count compilations)
see fungrad's:

* ``/jax/core/compile/jaxpr_trace_duration`` (``fun_name=<name>``): tracing
  the Python function into a jaxpr;
* ``/jax/core/compile/backend_compile_duration`` (``fun_name=jit(<name>)``):
  the passes, source generation and Python's ``compile`` (or numba's).

Listeners run synchronously in the thread that records, in registration
order; an exception in a listener propagates to the recording call, as in JAX.
"""
from __future__ import annotations

import threading
from typing import Callable

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners"]

_lock = threading.Lock()
_event: list[Callable] = []
_duration: list[Callable] = []
_time_span: list[Callable] = []
_scalar: list[Callable] = []


def _snapshot(listeners):
    with _lock:
        return list(listeners)


def record_event(event: str, **kwargs) -> None:
    """Tell every event listener ``listener(event, **kwargs)``."""
    for listener in _snapshot(_event):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Tell every duration listener ``listener(event, duration, **kwargs)``."""
    for listener in _snapshot(_duration):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Tell every time-span listener ``listener(event, start_time, end_time, **kwargs)``."""
    for listener in _snapshot(_time_span):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(key: str, value: float | int, **kwargs) -> None:
    """Tell every scalar listener ``listener(key, value, **kwargs)``."""
    for listener in _snapshot(_scalar):
        listener(key, value, **kwargs)


def _registrar(listeners, what):
    def register(callback: Callable) -> None:
        if not callable(callback):
            raise TypeError(f"register_{what}_listener: expected a callable, got "
                            f"{type(callback).__name__}")
        with _lock:
            listeners.append(callback)
    return register


def _unregistrar(listeners, what):
    def unregister(callback: Callable) -> None:
        with _lock:
            if callback not in listeners:
                raise AssertionError(f"unregister_{what}_listener: {callback!r} is not a "
                                     "registered listener")
            listeners.remove(callback)
    return unregister


register_event_listener = _registrar(_event, "event")
register_event_duration_secs_listener = _registrar(_duration, "event_duration_secs")
register_event_time_span_listener = _registrar(_time_span, "event_time_span")
register_scalar_listener = _registrar(_scalar, "scalar")
unregister_event_listener = _unregistrar(_event, "event")
unregister_event_duration_listener = _unregistrar(_duration, "event_duration")
unregister_event_time_span_listener = _unregistrar(_time_span, "event_time_span")
unregister_scalar_listener = _unregistrar(_scalar, "scalar")


def clear_event_listeners() -> None:
    """Forget every listener of every kind."""
    with _lock:
        for listeners in (_event, _duration, _time_span, _scalar):
            listeners.clear()


def has_duration_listeners() -> bool:
    """Whether timing a compile stage is worth a clock read (fungrad's hot paths)."""
    return bool(_duration)
