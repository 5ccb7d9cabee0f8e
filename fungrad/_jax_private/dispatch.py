"""``jax._src.dispatch``: imported by equinox (``equinox/_jit.py``).

equinox takes ``wait_for_tokens`` (JAX registers it with ``atexit`` to block
until the effectful computations it dispatched asynchronously have finished)
and re-registers it with ``atexit`` behind an error guard.  fungrad runs
every computation, effectful ones included, synchronously, so when
``wait_for_tokens`` is called there is never anything left to wait for.
"""
from __future__ import annotations

__all__ = ["wait_for_tokens"]


def wait_for_tokens() -> None:
    """Block until every dispatched effectful computation has finished: in
    fungrad they finish before the call that dispatched them returns."""
