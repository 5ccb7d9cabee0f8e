"""``fungrad.api_util`` (``jax.api_util``): the helpers libraries use to build
transformations of their own on ``fungrad.extend.linear_util``.

``flatten_fun(wrap_init(f), in_tree)`` turns ``f(*args, **kwargs)`` into a
function of the flat leaves of ``(args, kwargs)`` returning a flat list, and
a thunk giving the output tree after the call; ``flatten_fun_nokwargs`` does
the same for ``f(*args)``.  flax's ``nn.scan`` and ``lazy_init``, haiku's
``to_dot`` and numpyro's provenance tracking hand such flat functions to
``partial_eval.trace_to_jaxpr_*`` or ``make_jaxpr``.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from fungrad import core
from fungrad.extend import linear_util as lu
from fungrad.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["flatten_fun", "flatten_fun_nokwargs", "debug_info", "fun_signature",
           "fun_sourceinfo", "shaped_abstractify", "argnums_partial", "safe_map"]


@lu.transformation_with_aux2
def flatten_fun(f: Callable, store: lu.Store, in_tree, *args_flat):
    """``f(*args, **kwargs)`` as a function of the leaves of ``(args, kwargs)``."""
    args, kwargs = tree_unflatten(in_tree, args_flat)
    leaves, out_tree = tree_flatten(f(*args, **kwargs))
    store.store(out_tree)
    return leaves


@lu.transformation_with_aux2
def flatten_fun_nokwargs(f: Callable, store: lu.Store, in_tree, *args_flat):
    """``f(*args)`` as a function of the leaves of ``args``."""
    leaves, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args_flat)))
    store.store(out_tree)
    return leaves


def fun_signature(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (ValueError, TypeError):
        return None


def fun_sourceinfo(fun: Callable) -> str:
    """``"name at file:line"`` of ``fun`` (through partials and wrappers)."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    if code is None:
        return f"{name}"
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _arg_names(signature, args, kwargs, static_argnums, static_argnames) -> tuple[str, ...]:
    """One name per flattened non-static argument: ``x``, ``params['w']``, or
    ``args[0]`` when the signature does not bind (as JAX names them)."""
    static = object()
    statics = {i % len(args) for i in static_argnums} if args else set()
    args_ = [static if i in statics else x for i, x in enumerate(args)]
    kwargs_ = {k: static if k in static_argnames else x for k, x in kwargs.items()}
    named = None
    if signature is not None:
        try:
            bound = signature.bind(*args_, **kwargs_)
        except TypeError:
            bound = None
        if bound is not None:
            named = [(n, x) for n, x in bound.arguments.items() if n not in kwargs_
                     and signature.parameters[n].kind is not inspect.Parameter.VAR_KEYWORD]
            named += sorted(kwargs_.items())
    if named is None:
        named = [("args", args_)] + sorted((f"kwargs['{k}']", x) for k, x in kwargs_.items())
    return tuple(f"{name}{keystr(path)}" for name, x in named
                 for path, leaf in tree_flatten_with_path(x)[0] if leaf is not static)


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict, *,
               static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk=None, sourceinfo: str | None = None,
               signature: inspect.Signature | None = None) -> lu.DebugInfo:
    """What is traced, for error messages: ``DebugInfo(traced_for, "f at
    file:line", argument names, result paths)``.  ``args``/``kwargs`` are
    example arguments (their pytree paths name the flattened inputs)."""
    known = getattr(fun, "__fun_debug_info__", None)
    if known is not None:
        return known
    sourceinfo = fun_sourceinfo(fun) if sourceinfo is None else sourceinfo
    signature = fun_signature(fun) if signature is None else signature
    names = _arg_names(signature, tuple(args), dict(kwargs), tuple(static_argnums),
                       set(static_argnames))
    return lu.DebugInfo(traced_for, sourceinfo, names, result_paths_thunk)


def shaped_abstractify(x) -> core.ShapedArray:
    """The abstract value of ``x`` (an abstract value is its own)."""
    if isinstance(x, core.AbstractValue):
        return x
    return core.get_aval(x)


class _Static:
    """A static argument held by value; equal only to the same type and value."""
    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return hash(self.val)

    def __eq__(self, other):
        return type(self.val) is type(other.val) and self.val == other.val


@lu.transformation2
def _argnums_partial(f, dyn_argnums, fixed_args, *dyn_args, **kwargs):
    args = [None] * (len(fixed_args) + len(dyn_args))
    dynamic = dict(zip(dyn_argnums, dyn_args))
    fixed = iter(fixed_args)
    args = [dynamic[i] if i in dynamic else next(fixed).val for i in range(len(args))]
    return f(*args, **kwargs)


def argnums_partial(f: lu.WrappedFun, dyn_argnums, args: Sequence,
                    require_static_args_hashable: bool = True):
    """``f`` with the arguments not in ``dyn_argnums`` fixed to their values in
    ``args``; returns ``(WrappedFun of the dynamic ones, dynamic args)``."""
    nums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    nums = tuple(sorted(i % len(args) for i in nums)) if args else ()
    fixed = []
    for i, arg in enumerate(args):
        if i in nums:
            continue
        if require_static_args_hashable:
            try:
                hash(arg)
            except TypeError:
                raise ValueError(
                    f"argnums_partial: static argument {i} of type {type(arg).__name__} of "
                    f"{f.__name__} is not hashable; make it hashable or mark it dynamic") from None
        fixed.append(_Static(arg))
    return _argnums_partial(f, nums, tuple(fixed)), tuple(args[i] for i in nums)


def safe_map(f: Callable, *args) -> list:
    """``list(map(f, *args))``, requiring equal lengths."""
    args = [list(a) for a in args]
    lengths = {len(a) for a in args}
    if len(lengths) > 1:
        raise ValueError(f"safe_map: length mismatch {[len(a) for a in args]}")
    return list(map(f, *args))
