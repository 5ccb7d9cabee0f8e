"""``fungrad.extend.linear_util`` (``jax.extend.linear_util``): functions as
values that transformations are stacked onto before anything runs.

A ``WrappedFun`` holds a Python function ``f`` and a stack of
transformations; ``call_wrapped(*args)`` runs ``f`` through all of them.  A
transformation is written in one of JAX's two styles:

* function style (``transformation2`` / ``transformation_with_aux2``): a
  function ``gen(f, *static_args, *args, **kwargs)`` that calls ``f`` (the
  function below it) and returns the result; with aux it also receives a
  ``Store`` right after ``f`` and puts a side output there (``flatten_fun``
  stores the output tree that way);
* generator style (``transformation`` / ``transformation_with_aux``, JAX's
  older and still-accepted form, used by haiku): ``gen(*static_args, *args,
  **kwargs)`` yields ``(args, kwargs)`` for ``f``, receives ``f``'s result and
  yields the final result (with aux: ``(result, aux)``).

Libraries build a ``WrappedFun`` with ``wrap_init``, stack ``flatten_fun``
(``fungrad.api_util``) on it and hand it to ``partial_eval.trace_to_jaxpr_*``
or call ``call_wrapped``.  The store of an aux transformation is read after
the call through the thunk ``transformation_with_aux2`` returns; reading it
before raises ``StoreException``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

__all__ = ["WrappedFun", "wrap_init", "transformation", "transformation2",
           "transformation_with_aux", "transformation_with_aux2", "Store", "EqualStore",
           "StoreException", "DebugInfo", "cache", "merge_linear_aux"]


class StoreException(Exception):
    """A store read before anything was stored, or written twice."""


_EMPTY = object()


class Store:
    """One side output of a transformation: written once, read after the call."""
    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val) -> None:
        if self._val is not _EMPTY:
            raise StoreException("Store occupied: a transformation stored its side output "
                                 "twice (call the WrappedFun once per transformation stack)")
        self._val = val

    def reset(self) -> None:
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty: read the side output after call_wrapped ran")
        return self._val

    def __bool__(self) -> bool:
        return self._val is not _EMPTY


class EqualStore(Store):
    """A store that may be written again with an equal value (re-traced functions)."""
    __slots__ = ()

    def store(self, val) -> None:
        if self._val is not _EMPTY and self._val == val:
            return
        super().store(val)


class DebugInfo(NamedTuple):
    """What a traced function is, for error messages (JAX's ``DebugInfo``):
    ``traced_for`` ("jit", "flax scan"), ``func_src_info`` ("f at file:line"),
    ``arg_names`` (one per flattened argument, or None) and ``result_paths``
    (one per flattened result, a thunk, or None)."""
    traced_for: str
    func_src_info: str | None
    arg_names: tuple[str, ...] | None
    result_paths: Any = None

    @property
    def func_name(self) -> str:
        return (self.func_src_info or "<unknown>").split(" ")[0]

    def resolve_result_paths(self) -> "DebugInfo":
        paths = self.result_paths
        return self._replace(result_paths=paths()) if callable(paths) else self

    def replace_func_name(self, name: str) -> "DebugInfo":
        rest = (self.func_src_info or "").partition(" ")[2]
        return self._replace(func_src_info=f"{name} {rest}".rstrip())

    def safe_arg_names(self, expected_count: int) -> tuple[str, ...]:
        if self.arg_names is not None and len(self.arg_names) == expected_count:
            return self.arg_names
        return ("",) * expected_count

    def with_unknown_names(self) -> "DebugInfo":
        return self._replace(arg_names=None, result_paths=None)


def _missing_debug_info(for_what: str) -> DebugInfo:
    return DebugInfo(for_what, "<unknown>", None, None)


class WrappedFun:
    """``f`` with a stack of transformations (outermost first in ``transforms``);
    ``f_transformed`` is the composed function that ``call_wrapped`` runs."""
    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type",
                 "debug_info")

    def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self) -> str:
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen: Callable, gen_static_args: tuple, out_store: Store | None) -> "WrappedFun":
        """One more transformation on top: ``gen(f_below, [store,] *static, *args)``."""
        store_args = () if out_store is None else (out_store,)
        composed = functools.partial(gen, self.f_transformed, *store_args, *gen_static_args)
        return WrappedFun(self.f, composed, ((gen, gen_static_args),) + self.transforms,
                          (out_store,) + self.stores, self.params, None, self.debug_info)

    def call_wrapped(self, *args, **kwargs):
        """Run ``f`` through every transformation."""
        return self.f_transformed(*args, **kwargs)

    def populate_stores(self, stores) -> None:
        """Copy side outputs recorded by an earlier call (``cache``) into ours."""
        for mine, other in zip(self.stores, stores):
            if mine is not None:
                mine.store(other.val)

    def replace_debug_info(self, dbg: DebugInfo) -> "WrappedFun":
        return WrappedFun(self.f, self.f_transformed, self.transforms, self.stores,
                          self.params, self.in_type, dbg)

    def with_unknown_names(self) -> "WrappedFun":
        return self.replace_debug_info(self.debug_info.with_unknown_names())

    def __repr__(self):
        stack = "".join(f"\n  {i}: {getattr(g, '__name__', g)} {args}"
                        for i, (g, args) in enumerate(self.transforms))
        return f"WrappedFun({self.__name__}){stack}"

    def _key(self):
        return (self.f, self.transforms, self.params, self.in_type, self.debug_info)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, WrappedFun) and self._key() == other._key()


def wrap_init(f: Callable, params=None, *, debug_info: DebugInfo | None = None) -> WrappedFun:
    """``f`` as a WrappedFun with no transformations; ``params`` (a dict) are
    keyword arguments passed to ``f`` on every call."""
    if not callable(f):
        raise TypeError(f"wrap_init: expected a callable, got {type(f).__name__}")
    params_dict = dict(params or {})
    debug_info = debug_info or _missing_debug_info("linear_util.wrap_init")
    return WrappedFun(f, functools.partial(f, **params_dict), (), (),
                      tuple(sorted(params_dict.items())), None,
                      debug_info._replace(result_paths=None))


def _curried(transform):
    """``t(gen)(fun, *static)`` and ``t(gen, fun, *static)`` both work, as in JAX
    (``@transformation2`` decorates ``gen``; the result is applied to funs)."""
    @functools.wraps(transform)
    def curried(gen, *rest, **kw):
        if rest:
            return transform(gen, *rest, **kw)
        return functools.wraps(gen)(functools.partial(transform, gen, **kw))
    return curried


@_curried
def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Function-style transformation: ``gen(f, *static, *args, **kwargs)``."""
    return fun.wrap(gen, gen_static_args, None)


@_curried
def transformation_with_aux2(gen: Callable, fun: WrappedFun, *gen_static_args,
                             use_eq_store: bool = False, unk_names: bool = False):
    """Function-style transformation with a side output: ``gen(f, store, *static,
    *args, **kwargs)``; returns ``(WrappedFun, thunk)``, the thunk reading the
    store after the call."""
    store = EqualStore() if use_eq_store else Store()
    fun = fun.wrap(gen, gen_static_args, store)
    if unk_names:
        fun = fun.with_unknown_names()
    return fun, lambda: store.val


def _run_generator(gen, f, static, args, kwargs):
    """Drive a generator-style transformation once: args down, result up."""
    inst = gen(*static, *args, **kwargs)
    args_below, kwargs_below = next(inst)
    return inst.send(f(*args_below, **kwargs_below))


@_curried
def transformation(gen: Callable, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Generator-style transformation (JAX's older form): ``gen(*static, *args)``
    yields ``(args, kwargs)`` for the function below, receives its result and
    yields the final result."""
    def function_style(f, *args, **kwargs):
        return _run_generator(gen, f, gen_static_args, args, kwargs)
    function_style.__name__ = getattr(gen, "__name__", "transformation")
    return fun.wrap(function_style, (), None)


@_curried
def transformation_with_aux(gen: Callable, fun: WrappedFun, *gen_static_args,
                            use_eq_store: bool = False):
    """Generator style with a side output: the final yield is ``(result, aux)``."""
    def function_style(f, store, *args, **kwargs):
        ans, aux = _run_generator(gen, f, gen_static_args, args, kwargs)
        store.store(aux)
        return ans
    function_style.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    return transformation_with_aux2(function_style, fun, use_eq_store=use_eq_store)


def cache(call: Callable, *, explain: Callable | None = None, max_size: int = 4096):
    """Memoize ``call(fun: WrappedFun, *args)`` on the function, its
    transformations and ``args`` (hashable).  A hit replays the side outputs
    the first call stored into the new ``fun``'s stores.  Bounded: the oldest
    entry goes first."""
    memo: dict = {}

    @functools.wraps(call)
    def memoized(fun: WrappedFun, *args):
        key = (fun, args)
        hit = memo.get(key)
        if hit is not None:
            ans, stores = hit
            fun.populate_stores(stores)
            return ans
        if explain is not None:
            explain(fun, False, memo.keys(), *args)
        ans = call(fun, *args)
        if len(memo) >= max_size:
            memo.pop(next(iter(memo)))
        memo[key] = ans, fun.stores
        return ans
    memoized.cache_clear = memo.clear
    return memoized


def merge_linear_aux(aux1: Callable, aux2: Callable):
    """Of two aux thunks exactly one was stored (two branches, one taken):
    ``(True, value)`` if the first, ``(False, value)`` if the second."""
    try:
        out1 = aux1()
    except StoreException:
        try:
            return False, aux2()
        except StoreException:
            raise StoreException("merge_linear_aux: neither store occupied") from None
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("merge_linear_aux: both stores occupied")
