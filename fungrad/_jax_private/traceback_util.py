"""``jax._src.traceback_util``: imported by equinox and flax.

Both register their own directories (``register_exclusion``) and decorate
their public entry points with ``api_boundary``, so that a traceback raised
through them shows the user's frames rather than the library's internals.
fungrad's version: ``register_exclusion`` is the one of
``fungrad.extend.source_info_util`` (errors name the user's line, not the
library's), and ``api_boundary`` drops frames of excluded files from the
traceback of an exception leaving the decorated function (the innermost
frame, where it was raised, always stays).
"""
from __future__ import annotations

import functools
import types

from fungrad import core
from fungrad.core import register_exclusion

__all__ = ["register_exclusion", "api_boundary", "filter_traceback", "include_frame"]


def _excluded(tb) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(core._excluded_paths[1:])


def include_frame(frame) -> bool:
    """Is ``frame`` the user's (not fungrad's, nor in a file a library
    registered with ``register_exclusion``)?  equinox's ``error_if`` records
    such frames."""
    return not frame.f_code.co_filename.startswith(core._excluded_paths)


def filter_traceback(tb):
    """``tb`` without the frames of registered library files (the last kept)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [t for t in frames[:-1] if not _excluded(t)] + frames[-1:]
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def api_boundary(fun=None, *, repro_api_name: str | None = None, **_):
    """Decorate a library's public function: exceptions leaving it carry a
    traceback without the registered library's internal frames."""
    if fun is None:
        return functools.partial(api_boundary, repro_api_name=repro_api_name)

    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as err:
            if len(core._excluded_paths) > 1:
                raise err.with_traceback(filter_traceback(err.__traceback__))
            raise
    return boundary
