"""Functions mapped over array axes: ``vectorize`` (with gufunc signatures),
``apply_along_axis``, ``apply_over_axes`` and ``piecewise``, built on
``batching.vmap_flat`` (the api layer's ``vmap`` is above this one).
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from fungrad.interpreters import batching
from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._util import _builtin_range, _fnp, _shape, _static_int

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "piecewise"]


_DIMS = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*,?\s*\)"
_ARGS = rf"{_DIMS}(?:\s*,\s*{_DIMS})*"
_SIGNATURE = re.compile(rf"^\s*({_ARGS})?\s*->\s*({_ARGS})\s*$")


def _parse_dims(text):
    return [tuple(d for d in re.split(r"\s*,\s*", group.strip()) if d)
            for group in re.findall(r"\(([^)]*)\)", text)]


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m','n'), ('n',)], [('m',)])."""
    match = _SIGNATURE.match(signature)
    if not match:
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                         "something like '(m,n),(n)->(m)')")
    return _parse_dims(match.group(1) or ""), _parse_dims(match.group(2))


class vectorize:  # noqa: N801 (numpy's name)
    """``pyfunc`` mapped over the broadcast leading (loop) dimensions of its
    arguments with ``fungrad.vmap``; ``signature`` names the trailing core
    dimensions each argument and output keeps (``'(n),(n)->()'``); ``excluded``
    positions or keyword names are passed through unchanged."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        if not callable(pyfunc):
            raise TypeError(f"vectorize: pyfunc must be callable, got {pyfunc!r}")
        for e in excluded:
            if not isinstance(e, (int, str)):
                raise TypeError(f"vectorize: excluded must contain ints or strings, got {e!r}")
        self.pyfunc = pyfunc
        self.excluded = frozenset(excluded)
        self.signature = signature
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")

    def __call__(self, *args, **kwargs):
        fixed_pos = {i: a for i, a in enumerate(args) if i in self.excluded}
        fixed_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        mapped_pos = [i for i in _builtin_range(len(args)) if i not in self.excluded]
        mapped_kw = [k for k in kwargs if k not in self.excluded]
        arrays = [asarray_operand(args[i]) for i in mapped_pos] + \
                 [asarray_operand(kwargs[k]) for k in mapped_kw]

        def call(*values):
            full = list(args)
            for i, v in zip(mapped_pos, values):
                full[i] = v
            named = dict(fixed_kw, **dict(zip(mapped_kw, values[len(mapped_pos):])))
            full = [fixed_pos.get(i, a) for i, a in enumerate(full)]
            return self.pyfunc(*full, **named)

        core_in, core_out = self._core_dims(len(arrays))
        return _vectorized_call(call, arrays, core_in, core_out)

    def _core_dims(self, nargs):
        if self.signature is None:
            return [()] * nargs, None
        core_in, core_out = _parse_signature(self.signature)
        if len(core_in) != nargs:
            raise TypeError(f"vectorize: signature {self.signature!r} has {len(core_in)} "
                            f"inputs, but the function got {nargs} (non-excluded) arguments")
        return core_in, core_out


def _core_sizes(arrays, core_in):
    """The size of every named core dimension (ValueError on a mismatch)."""
    sizes = {}
    for k, (x, dims) in enumerate(zip(arrays, core_in)):
        if len(_shape(x)) < len(dims):
            raise ValueError(f"vectorize: argument {k} has shape {_shape(x)}, fewer dimensions "
                             f"than its core dimensions {dims}")
        for name, size in zip(dims, _shape(x)[len(_shape(x)) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} and {size}")
    return sizes


def _vectorized_call(call, arrays, core_in, core_out):
    """vmap ``call`` once per loop dimension (outermost first); an argument whose
    loop dimension is 1 where others are larger is not mapped at that level."""
    fnp = _fnp()
    sizes = _core_sizes(arrays, core_in)
    loop_shapes = [_shape(x)[:len(_shape(x)) - len(d)] for x, d in zip(arrays, core_in)]
    loop_shape = fnp.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    depth = len(loop_shape)
    in_axes_per_level, prepared = [], []
    for x, shape in zip(arrays, loop_shapes):
        core_shape = _shape(x)[len(shape):]
        shape = (1,) * (depth - len(shape)) + tuple(shape)
        x = fnp.reshape(x, shape + core_shape)
        mapped = [s != 1 or b == 1 for s, b in zip(shape, loop_shape)]
        drop = tuple(i for i, m in enumerate(mapped) if not m)
        prepared.append(fnp.squeeze(x, drop) if drop else x)
        in_axes_per_level.append(mapped)
    fun = _checked_outputs(call, core_out, sizes)
    for level in reversed(_builtin_range(depth)):
        axes = tuple(0 if m[level] else None for m in in_axes_per_level)
        fun = _vmap_level(fun, axes)
    return fun(*prepared)


def _vmap_level(fun, axes):
    return _vmap_arrays(fun, axes)


def _vmap_arrays(fun, in_axes, out_axes=0):
    """``vmap`` of a function of positional arrays returning an array or a tuple
    of arrays (all vectorize and apply_along_axis need; the full vmap, with
    pytrees, is the api layer's): ``in_axes`` one per argument or one for all."""
    def mapped(*xs):
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(xs)
        axes = [None if a is None else a % len(_shape(x)) for a, x in zip(axes, xs)]
        size = next(_shape(x)[a] for x, a in zip(xs, axes) if a is not None)
        returns_tuple = []

        def flat(*vals):
            out = fun(*vals)
            returns_tuple.append(isinstance(out, tuple))
            return [asarray_operand(o) for o in (out if isinstance(out, tuple) else (out,))]
        outs = batching.vmap_flat(flat, list(xs), axes, size, itertools.repeat(out_axes))
        return tuple(outs) if returns_tuple[0] else outs[0]
    return mapped


def _checked_outputs(call, core_out, sizes):
    """``call`` with its outputs turned into arrays and checked against the
    signature's output core dimensions."""
    fnp = _fnp()

    def checked(*values):
        out = call(*values)
        if core_out is None:
            return tuple(fnp.asarray(o) for o in out) if isinstance(out, tuple) \
                else fnp.asarray(out)
        outs = out if len(core_out) > 1 else (out,)
        if not isinstance(outs, tuple) or len(outs) != len(core_out):
            raise ValueError(f"vectorize: the function must return {len(core_out)} outputs "
                             "to match its signature")
        for k, (o, dims) in enumerate(zip(outs, core_out)):
            shape = _shape(fnp.asarray(o))
            want = tuple(sizes.get(d, s) for d, s in zip(dims, shape))
            if len(shape) != len(dims) or shape != want:
                raise ValueError(f"vectorize: output {k} has shape {shape}, which does not "
                                 f"match the signature's core dimensions {dims}")
            for d, s in zip(dims, shape):
                sizes.setdefault(d, s)
        return out if len(core_out) > 1 else fnp.asarray(out)
    return checked


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to the 1-d slices of ``arr`` along ``axis`` (via vmap);
    the output's dimensions replace ``axis``."""
    fnp = _fnp()
    arr = asarray_operand(arr)
    ndim = len(_shape(arr))
    axis = _static_int(axis, "apply_along_axis's axis")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, "fungrad.numpy.apply_along_axis")
    axis %= ndim
    fun = lambda x: fnp.asarray(func1d(x, *args, **kwargs))  # noqa: E731
    for _ in _builtin_range(ndim - 1 - axis):    # the dimensions after axis
        fun = _vmap_arrays(fun, -1, out_axes=-1)
    for _ in _builtin_range(axis):               # the dimensions before axis
        fun = _vmap_arrays(fun, 0, out_axes=0)
    return fun(arr)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn, keeping the dimension."""
    fnp = _fnp()
    a = asarray_operand(a)
    for axis in ([axes] if np.ndim(axes) == 0 else axes):
        axis = _static_int(axis, "apply_over_axes's axes")
        out = fnp.asarray(func(a, axis))
        if len(_shape(out)) == len(_shape(a)) - 1:
            out = fnp.expand_dims(out, axis)
        if len(_shape(out)) != len(_shape(a)):
            raise ValueError("apply_over_axes: func must keep or reduce by one the number of "
                             "dimensions")
        a = out
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` where ``condlist[i]`` holds (the last true condition wins;
    an extra last entry of ``funclist`` applies where none holds, else 0)
    (``numpy.piecewise``).  Entries of ``funclist`` are functions, called on
    scalars as in JAX (through ``vectorize`` and ``lax.switch``, with ``*args``
    and ``**kw``), or constants.  The conditions may be traced; the result has
    ``x``'s dtype."""
    from fungrad import lax
    fnp = _fnp()
    x = fnp.asarray(asarray_operand(x))
    if isinstance(condlist, (bool, np.bool_)) or (
            not isinstance(condlist, (list, tuple)) and fnp.ndim(condlist) == x.ndim
            and x.ndim != 0) or (isinstance(condlist, (list, tuple)) and x.ndim != 0
                                 and condlist and fnp.ndim(condlist[0]) == 0):
        condlist = [condlist]          # one condition for the whole of x (NumPy's rule)
    conds = [fnp.broadcast_to(fnp.asarray(c, dtype=bool), x.shape) for c in condlist]
    n, m = len(conds), len(funclist)
    if m == n:
        funclist = [0] + list(funclist)
    elif m == n + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    else:
        raise ValueError(f"piecewise: with {n} condition(s), funclist must have {n} or {n + 1} "
                         f"entries, got {m}")
    if not conds:
        which = fnp.zeros(x.shape, np.int32)
    else:   # the position of the last true condition (0: none holds)
        stacked = fnp.stack([fnp.zeros(x.shape, np.int32)] + [c.astype(np.int32) for c in conds])
        which = fnp.argmax(fnp.cumsum(stacked, axis=0), axis=0).astype(np.int32)
    dtype = x.dtype

    def branch(f):
        if callable(f):
            return lambda v: fnp.asarray(f(v, *args, **kw)).astype(dtype)
        return lambda v: fnp.full((), f, dtype)
    branches = [branch(f) for f in funclist]
    return vectorize(lambda i, v: lax.switch(i, branches, v))(which, x)
