"""``frompyfunc`` and the ``ufunc`` objects it returns (``jax.numpy.frompyfunc``,
``jax.numpy.ufunc``): a scalar Python function with NumPy's ufunc methods.

* calling it maps the function over the broadcast arguments (``vectorize``);
* ``reduce``, ``accumulate`` and ``reduceat`` (binary functions) fold left in
  NumPy's order with ``lax.scan`` (so any function works, associative or not);
* ``outer`` calls it on every pair; ``at`` applies it at integer indices one
  entry after the other (repeated indices included), as JAX's
  ``inplace=False`` (fungrad arrays are immutable).

All of it is traced fungrad code: differentiable, vmappable and jittable.
"""
from __future__ import annotations

import operator

import numpy as np

from fungrad import lax
from fungrad.core import ShapedArray
from fungrad.interpreters.partial_eval import trace_to_jaxpr
from fungrad.numpy._dtypes import asarray_operand
from fungrad.numpy._util import _fnp
from fungrad.numpy._vectorize import vectorize

__all__ = ["ufunc", "frompyfunc"]


def reduceat_by_slices(x, indices, axis, reduce_piece):
    """``ufunc.reduceat``'s rule, for fungrad's ufuncs and NumPy's on tracers:
    ``reduce_piece(x[indices[i]:indices[i+1]])`` along ``axis`` (to the end for
    the last index), or ``x[indices[i]]`` where the slice is empty, stacked."""
    fnp = _fnp()
    n = x.shape[axis]
    parts = []
    for i, begin in enumerate(indices):
        end = indices[i + 1] if i + 1 < len(indices) else n
        if end <= begin:
            parts.append(fnp.take(x, begin, axis=axis))
        else:
            parts.append(reduce_piece(fnp.take(x, np.arange(begin, end), axis=axis)))
    return fnp.stack(parts, axis=axis)

class ufunc:  # noqa: N801 (NumPy's and JAX's name)
    """A function of ``nin`` scalars returning ``nout`` scalars, with NumPy's ufunc
    methods (see the module docstring)."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None):
        if not callable(func):
            raise TypeError(f"ufunc: func must be callable, got {func!r}")
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")

    def __repr__(self):
        return f"<fungrad.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise TypeError(f"{self.__name__}: out= is not supported (fungrad arrays are "
                            "immutable); use the returned value")
        if where is not None:
            raise NotImplementedError(f"{self.__name__}: where= is not supported; select the "
                                      "result with fungrad.numpy.where")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        return vectorize(self._func)(*args)

    def _check_binary(self, method):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{self.__name__}.{method} needs a function of two arguments and "
                             f"one result (this one has nin={self.nin}, nout={self.nout})")

    def _result_dtype(self, dtype):
        """The dtype the function returns for two scalars of ``dtype``."""
        scalar = ShapedArray((), np.dtype(dtype))
        jaxpr, _ = trace_to_jaxpr(lambda a, b: [asarray_operand(self._func(a, b))],
                                  [scalar, scalar])
        return jaxpr.outvars[0].aval.dtype

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """``a`` folded left with the function along ``axis`` (an int, a tuple, or None
        for all; ``numpy.ufunc.reduce``).  ``initial`` (or the identity) starts the
        fold; ``where`` selects the elements folded in (needs one of them)."""
        self._check_binary("reduce")
        fnp = _fnp()
        if out is not None:
            raise TypeError(f"{self.__name__}.reduce: out= is not supported; use the result")
        x = fnp.asarray(asarray_operand(a))
        axes = tuple(range(x.ndim)) if axis is None else (
            tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
        axes = tuple(sorted({operator.index(ax) % max(x.ndim, 1) for ax in axes}))
        start = self.identity if initial is None else initial
        if where is not None and start is None:
            raise ValueError(f"{self.__name__}.reduce: where= needs an initial value (this "
                             "function has no identity)")
        dtype = self._result_dtype(x.dtype) if dtype is None else np.dtype(dtype)
        kept = tuple(d for d in range(x.ndim) if d not in axes)
        flat = fnp.reshape(fnp.transpose(x, axes + kept), (-1,) + tuple(x.shape[d] for d in kept))
        mask = None if where is None else fnp.reshape(
            fnp.transpose(fnp.broadcast_to(where, x.shape), axes + kept), flat.shape)
        result = self._fold(flat, mask, start, dtype)
        if keepdims:
            result = fnp.reshape(result, tuple(1 if d in axes else n for d, n in enumerate(x.shape)))
        return result

    def _fold(self, flat, mask, start, dtype):
        fnp = _fnp()
        rest_shape = flat.shape[1:]
        if flat.shape[0] == 0:
            if start is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return fnp.full(rest_shape, start, dtype)
        if start is None:
            carry, flat = flat[0].astype(dtype), flat[1:]
            mask = None if mask is None else mask[1:]
        else:
            carry = fnp.full(rest_shape, start, dtype)

        def step(acc, item):
            value, keep = item
            new = fnp.asarray(self(acc, value.astype(dtype))).astype(dtype)
            return (new if keep is None else fnp.where(keep, new, acc)), None
        if mask is None:
            result, _ = lax.scan(lambda acc, v: step(acc, (v, None)), carry, flat)
        else:
            result, _ = lax.scan(step, carry, (flat, mask))
        return result

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running left fold of ``a`` along ``axis`` (``numpy.ufunc.accumulate``)."""
        self._check_binary("accumulate")
        fnp = _fnp()
        if out is not None:
            raise TypeError(f"{self.__name__}.accumulate: out= is not supported")
        x = fnp.asarray(asarray_operand(a))
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{self.__name__}.accumulate: axis must be one integer")
        axis = operator.index(axis) % max(x.ndim, 1)
        dtype = self._result_dtype(x.dtype) if dtype is None else np.dtype(dtype)
        if x.size == 0:
            return x.astype(dtype)
        moved = fnp.moveaxis(x, axis, 0)
        first = moved[0].astype(dtype)

        def step(acc, value):
            new = fnp.asarray(self(acc, value.astype(dtype))).astype(dtype)
            return new, new
        _, rest = lax.scan(step, first, moved[1:])
        return fnp.moveaxis(fnp.concatenate([first[None], rest], axis=0), 0, axis)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices ``indices[i]:indices[i+1]`` along ``axis``
        (``numpy.ufunc.reduceat``; static indices)."""
        self._check_binary("reduceat")
        fnp = _fnp()
        x = fnp.asarray(asarray_operand(a))
        axis = operator.index(axis) % max(x.ndim, 1)
        indices = [operator.index(i) for i in np.asarray(indices).ravel()]
        return reduceat_by_slices(x, indices, axis,
                                  lambda piece: self.reduce(piece, axis=axis, dtype=dtype))

    def outer(self, A, B, /):
        """The function of every pair ``(A[i...], B[j...])`` (``numpy.ufunc.outer``)."""
        self._check_binary("outer")
        fnp = _fnp()
        A, B = fnp.asarray(asarray_operand(A)), fnp.asarray(asarray_operand(B))
        return self(fnp.reshape(A, A.shape + (1,) * B.ndim), B)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """A copy of ``a`` with the function applied at the integer ``indices``, one
        entry after the other (``numpy.ufunc.at``; ``inplace=False`` as JAX)."""
        fnp = _fnp()
        if inplace:
            raise ValueError(f"{self.__name__}.at cannot update arrays in place: fungrad arrays "
                             "are immutable. Pass inplace=False and use the returned array.")
        if (b is None) != (self.nin == 1):
            raise TypeError(f"{self.__name__}.at takes {'no' if self.nin == 1 else 'one'} "
                            f"operand b for a function of {self.nin} argument(s)")
        x = fnp.asarray(asarray_operand(a))
        index = indices if isinstance(indices, tuple) else (indices,)
        index = fnp.broadcast_arrays(*[fnp.asarray(i) for i in index])
        count = int(np.prod(index[0].shape, dtype=np.int64))
        flat_index = [fnp.ravel(i) for i in index]
        values = None if b is None else fnp.ravel(fnp.broadcast_to(b, index[0].shape))

        def step(k, acc):
            where = tuple(i[k] for i in flat_index)
            args = (acc[where],) if values is None else (acc[where], values[k])
            return acc.at[where].set(fnp.asarray(self(*args)).astype(acc.dtype))
        return lax.fori_loop(0, count, step, x)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ``ufunc`` of the scalar function ``func`` (``numpy.frompyfunc``, as JAX's:
    the function must be traceable; its result dtype is the computed one, not
    ``object``)."""
    return ufunc(func, nin, nout, identity=identity)
