"""``fungrad.debug`` (as ``jax.debug``): print, call back and stop with the values
a transformed function really computes.

    @fungrad.jit
    def f(x):
        y = fnp.sin(x)
        fungrad.debug.print("y = {y}", y=y)     # at run time, in program order
        fungrad.debug.breakpoint()              # pdb with the concrete x and y
        return y * 2

Python's own ``print`` inside ``jit`` shows tracers (it runs once, while
tracing); these functions are primitives (``debug_callback``) that the
generated code calls with the arrays.  Under ``grad`` they see the primal
values; under ``vmap`` they run once per lane (as JAX's); in ``scan`` and
``while_loop`` bodies once per iteration.
"""
from __future__ import annotations

import builtins
import string
import sys
from typing import Callable

import numpy as np

from fungrad import core
from fungrad.lax.callbacks import debug_callback_p, flatten_callback_args

__all__ = ["print", "callback", "breakpoint", "visualize_array_sharding"]


def callback(callback: Callable | None = None, *args, ordered: bool = False,
             partitioned: bool = False, **kwargs):
    """``callback(*args, **kwargs)`` with the concrete values, at run time (under
    ``jit`` the generated code calls it).  Also ``callback(ordered=True)(fn, ...)``.
    fungrad runs every callback in program order, so ``ordered`` changes nothing."""
    def call(fn, *c_args, **c_kwargs):
        flat, dynamic = flatten_callback_args(fn, c_args, c_kwargs, "fungrad.debug.callback")
        debug_callback_p.bind(*dynamic, callback=flat)

    if callback is not None:
        call(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"fungrad.debug.callback: unexpected arguments in the two-call form "
                        f"callback(ordered=...)(fn, *args): {args=} {kwargs=}")
    return call


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting them (they
    may be tracers): the same IndexError/KeyError as ``str.format``, plus JAX's
    ValueError for unused arguments (often an f-string passed by mistake)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [i for i in range(len(args)) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to fungrad.debug.print: "
                             f"{[args[i] for i in unused]}")
        if unused_kw:
            raise ValueError(f"Unused keyword arguments to fungrad.debug.print: {unused_kw}. "
                             "You may be passing an f-string (f\"{x}\") instead of a format "
                             "string (\"{x}\", x=x).")


def _has_placeholders(fmt: str) -> bool:
    return any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))


def _printer(fmt: str, printoptions: dict, placeholders: bool):
    def show(*args, **kwargs):
        with np.printoptions(**printoptions):
            text = fmt.format(*args, **kwargs) if placeholders else \
                " ".join([fmt, *(str(a) for a in args)])
        sys.stdout.write(text + "\n")
    show.__name__ = "print"
    return show


def print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,
          skip_format_check: bool = False, **kwargs):  # noqa: A001 (JAX's name)
    """Print ``fmt.format(*args, **kwargs)`` with the values computed at run time.

    Works under ``jit`` (the generated code prints, in program order), ``grad``
    (primal values), ``vmap`` (one line per lane) and in loop bodies.  A format
    string that does not match its arguments raises at trace time, as
    ``str.format`` would.  Also the two-call form ``print(ordered=True)(fmt, ...)``.
    """
    def show(fmt_, *p_args, **p_kwargs):
        if not isinstance(fmt_, str):
            raise TypeError(f"fungrad.debug.print: the format must be a str, got "
                            f"{type(fmt_).__name__}")
        if not skip_format_check:
            _FormatChecker().format(fmt_, *p_args, **p_kwargs)
        printer = _printer(fmt_, np.get_printoptions(), _has_placeholders(fmt_))
        callback(printer, *p_args, **p_kwargs)

    if fmt is not None:
        show(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"fungrad.debug.print: unexpected arguments in the two-call form "
                        f"print(ordered=...)(fmt, *args): {args=} {kwargs=}")
    return show


def _caller_frame():
    """The innermost frame outside fungrad (the function that called us)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(core._PKG_DIR):
        frame = frame.f_back
    return frame


def _enter_debugger(namespace: dict, frame_globals: dict, origin: str):
    """pdb at a prompt whose locals are ``namespace`` (the concrete values)."""
    import pdb            # looked up at call time, so tests can patch pdb.Pdb
    names = ", ".join(sorted(namespace)) or "(none)"
    sys.stdout.write(f"fungrad.debug.breakpoint at {origin}. Concrete local values: {names}. "
                     "Inspect them (p name), continue with c.\n")
    pdb.Pdb().run("pass", frame_globals, namespace)


def breakpoint(*, backend=None, filter_frames: bool = True, num_frames: int | None = None,
               ordered: bool = False, token=None, **kwargs):  # noqa: A001 (JAX's name)
    """Stop in ``pdb`` with the caller's local variables as concrete values.

    Inside ``jit`` the generated code calls the debugger with the arrays of
    that call; under ``vmap`` it stops once per lane; under ``grad`` it shows
    the primal values.  Only the calling function's frame is offered (JAX also
    lets you move ``up`` to outer frames).  Returns ``token`` unchanged.
    """
    if backend not in (None, "cli"):
        raise ValueError(f"fungrad.debug.breakpoint: backend must be None or 'cli' (pdb), "
                         f"got {backend!r}")
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    frame = _caller_frame()
    origin = (f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
              if frame is not None else "<unknown>")
    local_values = dict(frame.f_locals) if frame is not None else {}
    frame_globals = frame.f_globals if frame is not None else {}

    def stop(values):
        _enter_debugger(dict(values), frame_globals, origin)
    stop.__name__ = "breakpoint"
    callback(stop, local_values)
    return token


def _sharding_description(x) -> str:
    """Where ``x`` lives: the shards of a distributed array (fungrad.sharding),
    else one line for the one local CPU device."""
    from fungrad.sharding import ShardedArray, describe_shards
    if isinstance(x, ShardedArray):
        return describe_shards(x)
    return f"{core.get_aval(x).str_short()}: single CPU device (not sharded)"


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print how ``arr`` is laid out over devices (one line on a single CPU)."""
    builtins.print(_sharding_description(arr))
