"""The ahead-of-time stages of ``jit`` (JAX's ``jax.stages``, re-exported by
``fungrad.stages``): ``jitted.trace(*args)`` is a ``Traced`` (the staged
jaxpr), its ``lower()`` a ``Lowered`` (the jaxpr and the generated source),
whose ``compile()`` is a ``Compiled``; ``ArgInfo`` describes one argument.
A stage holds the jitted function and the cache entry of one signature
(``_StageInfo``); calling a ``Compiled`` checks the arguments against that
signature with JAX's errors and calls the jitted function.
"""
from __future__ import annotations

import numpy as np

from fungrad import _config
from fungrad.core import get_aval
from fungrad.interpreters.codegen import compiled
from fungrad.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["ArgInfo", "Traced", "Lowered", "Compiled"]

_PY_SCALARS = (bool, int, float, complex)   # (as jitting's: weakly typed arguments)

class ArgInfo:
    """One argument of an ahead-of-time stage (``jax.stages.ArgInfo``): its
    shape and dtype (fungrad donates nothing)."""
    __slots__ = ("shape", "dtype", "donated")

    def __init__(self, aval):
        self.shape, self.dtype, self.donated = tuple(aval.shape), aval.dtype, False

    def __repr__(self):
        return f"ArgInfo(shape={self.shape}, dtype={self.dtype.name}, donated=False)"


class _StageInfo:
    """What every stage knows of one traced signature of a jitted function."""

    def __init__(self, jitted, entry, in_tree):
        from fungrad.api import ShapeDtypeStruct
        self.jitted, self.entry, self.in_tree = jitted, entry, in_tree
        in_avals = [v.aval for v in entry.closed.jaxpr.invars][len(entry.hoisted):]
        in_avals = in_avals[:in_tree.num_leaves]      # (then the values of closed-over Refs)
        self.args_info = tree_unflatten(in_tree, [ArgInfo(a) for a in in_avals])
        self.out_tree = entry.out_tree
        self.out_info = tree_unflatten(entry.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
            for a in entry.closed.out_avals])


class _Stage:
    """Attributes shared by the stages (JAX's ``Stage``)."""
    fun_name = property(lambda self: self._info.jitted.name)
    args_info = property(lambda self: self._info.args_info)
    out_info = property(lambda self: self._info.out_info)
    in_tree = property(lambda self: self._info.in_tree)
    out_tree = property(lambda self: self._info.out_tree)


class Traced(_Stage):
    """``jitted.trace(*args)``: the staged jaxpr, before code generation."""

    def __init__(self, info: _StageInfo):
        self._info = info
        self.jaxpr = info.entry.closed

    def lower(self) -> "Lowered":
        jitted = self._info.jitted
        backend = jitted.backend or _config.jit_backend.value
        code = jitted._compiled(self.jaxpr) if backend == "numba" else compiled(self.jaxpr)
        return Lowered(self.jaxpr, code.source, jitted, self._info)


class Lowered(_Stage):
    """What ``jitted.lower(*args)`` returns: the staged jaxpr and the generated code."""

    def __init__(self, closed: ClosedJaxpr, source: str, jitted=None, info=None):
        self.jaxpr = closed
        self._source = source
        self._jitted = jitted
        self._info = info

    def as_text(self) -> str:
        """The jaxpr, as ``make_jaxpr`` prints it."""
        return str(self.jaxpr)

    def source(self) -> str:
        """The generated Python/NumPy source of the compiled function."""
        return self._source

    def compile(self) -> "Compiled":
        """The compiled function (JAX's ``lower(...).compile()``)."""
        return Compiled(self._jitted, self.jaxpr, self._source, self._info)

    def __repr__(self):
        return self._source


class Compiled(_Stage):
    """What ``jitted.lower(*args).compile()`` returns: call it with arguments of
    the signature it was lowered for; ``as_text()`` is the generated source."""

    def __init__(self, jitted, closed: ClosedJaxpr, source: str, info=None):
        self._jitted = jitted
        self._closed = closed
        self._source = source
        self._info = info

    def as_text(self) -> str:
        return self._source

    def __call__(self, *args, **kwargs):
        if self._info is not None:
            self._check_signature(args, kwargs)
        entry, _ = self._jitted._entry(args, kwargs)
        if entry.closed is not self._closed:
            want = ", ".join(a.str_short() for a in self._closed.in_avals)
            got = ", ".join(a.str_short() for a in entry.closed.in_avals)
            raise TypeError(f"jit({self._jitted.name}): this compiled function was lowered for "
                            f"arguments ({want}) and was called with ({got}); lower and "
                            "compile again for these arguments, or call the jitted function")
        return self._jitted(*args, **kwargs)

    def _check_signature(self, args, kwargs):
        """JAX's errors for a call that does not match the compiled signature."""
        jitted = self._jitted
        dyn_args, dyn_kwargs, _, nums = jitted._split(args, kwargs)
        leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        if tree != self.in_tree:
            raise TypeError(f"jit({jitted.name}): function compiled for input pytree "
                            f"{self.in_tree} was called with {tree}")
        names = jitted._arg_names(args, kwargs, nums)
        wanted = tree_flatten(self.args_info)[0]
        bad = [f"{name} compiled with {_short(w.shape, w.dtype)} and called with "
               f"{_short(get_aval(x).shape, get_aval(x).dtype)}"
               for name, w, x in zip(names, wanted, leaves)
               if (tuple(get_aval(x).shape), get_aval(x).dtype) != (w.shape, w.dtype)
               and not (type(x) in _PY_SCALARS and get_aval(x).shape == w.shape)]
        if bad:
            raise TypeError("Argument types differ from the types for which this computation "
                            f"was compiled (jit({jitted.name})). The mismatches are:\n"
                            + "\n".join(bad) + "\nLower and compile again for these "
                            "arguments, or call the jitted function (it compiles as needed).")


def _short(shape, dtype) -> str:
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


def _stand_ins(args, kwargs, nums, static_argnames):
    """``ShapeDtypeStruct`` leaves of the non-static arguments as zero-stride
    arrays of that shape and dtype (no memory): tracing reads only those."""
    from fungrad.api import ShapeDtypeStruct
    is_sds = lambda x: isinstance(x, ShapeDtypeStruct)
    stand_in = lambda x: np.broadcast_to(np.zeros((), x.dtype), x.shape) if is_sds(x) else x
    args = tuple(a if i in nums else tree_map(stand_in, a, is_leaf=is_sds)
                 for i, a in enumerate(args))
    kwargs = {k: v if k in static_argnames else tree_map(stand_in, v, is_leaf=is_sds)
              for k, v in kwargs.items()}
    return args, kwargs
