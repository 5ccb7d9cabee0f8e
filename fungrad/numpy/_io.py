"""Input, output and printing, delegated to NumPy (as ``jax.numpy`` does):
arrays read from files, buffers, strings and iterables come back as fungrad
``Array``s; arrays written or printed must be concrete (a traced value raises
the concretization error that names it).  Printing follows NumPy's print
options, which ``printoptions``/``set_printoptions`` set for fungrad arrays
too.

Under ``jit`` the readers run once, when the function is traced: what they
read is a constant of the compiled function (JAX refuses ``fromfile`` and
``fromiter`` for that reason; here they behave as NumPy code inside a jitted
function does).
"""
from __future__ import annotations

import numpy as np

from fungrad.core import Tracer, wrap_array

__all__ = ["load", "save", "savez", "frombuffer", "fromfile", "fromiter", "fromstring",
           "array_repr", "array_str", "printoptions", "get_printoptions", "set_printoptions"]


def load(file, *args, **kwargs):
    """``numpy.load``: an ``.npy`` file's array as a fungrad Array; an ``.npz``
    archive as NumPy's lazy ``NpzFile`` of NumPy arrays (as JAX)."""
    out = np.load(file, *args, **kwargs)
    return wrap_array(out) if isinstance(out, np.ndarray) else out


def save(file, arr, allow_pickle=True):
    """``numpy.save`` of a concrete array (a traced one raises the conversion error)."""
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle=True, **kwds):
    """``numpy.savez`` of concrete arrays (by position and by name)."""
    np.savez(file, *[np.asarray(a) for a in args], allow_pickle=allow_pickle,
             **{k: np.asarray(v) for k, v in kwds.items()})


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """``numpy.frombuffer``, as a (copied) fungrad Array."""
    return wrap_array(np.array(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)))


def fromfile(file, dtype=float, count=-1, sep="", offset=0):
    """``numpy.fromfile``, as a fungrad Array (read when called; see the module
    docstring for jit)."""
    return wrap_array(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def fromiter(iterable, dtype, count=-1):
    """``numpy.fromiter``, as a fungrad Array (consumes the iterable when called)."""
    return wrap_array(np.fromiter(iterable, dtype=dtype, count=count))


def fromstring(string, dtype=float, count=-1, *, sep):
    """``numpy.fromstring`` of text separated by ``sep`` (required, as JAX: NumPy's
    binary mode is deprecated; use ``frombuffer`` for bytes)."""
    return wrap_array(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """``numpy.array_repr`` of a concrete array (``Array([...])``); a traced value's
    repr names its abstract value."""
    if isinstance(arr, Tracer):
        return repr(arr)
    return np.array_repr(np.asarray(arr) if not isinstance(arr, np.ndarray) else arr,
                         max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """``numpy.array_str`` of a concrete array; a traced value's str names its
    abstract value."""
    if isinstance(a, Tracer):
        return str(a)
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
