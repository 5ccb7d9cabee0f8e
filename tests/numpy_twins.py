"""NumPy-spelled twins of the generic cases: the same function with every
``fungrad.numpy`` function that NumPy dispatches replaced by NumPy's own
(``fnp.sum`` -> ``np.sum``, ``fnp.linalg.solve`` -> ``np.linalg.solve``), so that
the generic suite runs NumPy's functions on tracers (NEP 13/18) under staging,
jit, check_grads and vmap.  Eagerly a twin is plain NumPy, which makes it the
reference for the traced results.

A case's twin is derived from ``fun`` automatically: ``fun`` is a
fungrad.numpy function, or a function whose code reads one through a global
(``fnp.sum``, ``fnp.linalg.norm``, ``E.diff``, ``convolve``).  ``Case.np_fun``
overrides it: a function to use instead, or False for no twin (the case uses
a JAX-only argument NumPy does not have).
"""
from __future__ import annotations

import dataclasses
import dis
import types

import numpy as np

import fungrad.numpy as fnp
from fungrad.numpy import _dispatch
from tests.harness import Case

# fungrad.numpy's namespaces and the NumPy namespace each stands for
_NUMPY_OF = {fnp: np, fnp.linalg: np.linalg, fnp.fft: np.fft}


def _numpy_module(module):
    if module in _NUMPY_OF:
        return _NUMPY_OF[module]
    name = getattr(module, "__name__", "")
    return np if name.startswith("fungrad.numpy._") else None   # fnp's private modules


def _namespace(module):
    """The NumPy namespace a module read by a case stands for (NumPy's own included:
    an explicit ``np_fun`` is written with them)."""
    return module if module in _NUMPY_OF.values() else _numpy_module(module)


def _dispatches(obj) -> bool:
    try:
        return obj in _dispatch._UFUNCS or obj in _dispatch._FUNCTIONS
    except TypeError:   # unhashable
        return False


def _numpy_function(fn):
    """NumPy's dispatching function of the same name as the fungrad function ``fn``."""
    for f_mod, np_mod in _NUMPY_OF.items():
        name = getattr(fn, "__name__", None)
        if name and getattr(f_mod, name, None) is fn and _dispatches(getattr(np_mod, name, None)):
            return getattr(np_mod, name)
    return None


class _NumpySpelled:
    """Stands for a fungrad.numpy namespace: NumPy's function where it dispatches,
    fungrad's attribute otherwise (dtypes, JAX-only functions)."""

    def __init__(self, f_mod, np_mod):
        self._f_mod, self._np_mod = f_mod, np_mod

    def __getattr__(self, name):
        value = getattr(self._f_mod, name)
        if isinstance(value, types.ModuleType) and _numpy_module(value) is not None:
            return _NumpySpelled(value, _numpy_module(value))
        np_value = getattr(self._np_mod, name, None)
        return np_value if _dispatches(np_value) else value


def _global_reads(code):
    """(global name, attribute chain) of every global read in ``code`` and its nested code."""
    ins = list(dis.get_instructions(code))
    for i, inst in enumerate(ins):
        if inst.opname == "LOAD_GLOBAL":
            chain, j = [], i + 1
            while j < len(ins) and ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                chain.append(ins[j].argval)
                j += 1
            yield inst.argval, tuple(chain)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_reads(const)


def _resolve(value, chain):
    """The NumPy function reached by reading ``chain`` off the fungrad object ``value``."""
    if not isinstance(value, types.ModuleType):
        return _numpy_function(value)
    np_mod = _namespace(value)
    for attr in chain:
        if np_mod is None:
            return None
        value = getattr(value, attr, None)
        if isinstance(value, types.ModuleType):
            np_mod = _namespace(value)
            continue
        np_value = getattr(np_mod, attr, None)
        return np_value if _dispatches(np_value) else None
    return None


def numpy_functions_called(fun) -> set[str]:
    """Public names of the NumPy functions the twin of ``fun`` calls."""
    direct = _numpy_function(fun)
    if direct is not None:
        return {_dispatch._NAMES[direct]}
    code = getattr(fun, "__code__", None)
    if code is None:
        return set()
    names = set()
    for name, chain in _global_reads(code):
        if name in fun.__globals__:
            np_fn = _resolve(fun.__globals__[name], chain)
            if np_fn is not None:
                names.add(_dispatch._NAMES[np_fn])
    return names


def _respelled(fun):
    """``fun`` with its fungrad.numpy globals replaced by their NumPy spelling."""
    direct = _numpy_function(fun)
    if direct is not None:
        return direct
    env = dict(fun.__globals__)
    for name, value in fun.__globals__.items():
        if isinstance(value, types.ModuleType) and _numpy_module(value) is not None:
            env[name] = _NumpySpelled(value, _numpy_module(value))
        elif callable(value) and _numpy_function(value) is not None:
            env[name] = _numpy_function(value)
    twin = types.FunctionType(fun.__code__, env, fun.__name__, fun.__defaults__,
                              fun.__closure__)
    twin.__kwdefaults__ = fun.__kwdefaults__
    return twin


def numpy_twin(case: Case) -> Case | None:
    """The case spelled with NumPy's functions, or None if it calls none of them."""
    if case.np_fun is False:
        return None
    if case.np_fun is not None:
        fun = case.np_fun
    elif numpy_functions_called(case.fun):
        fun = _respelled(case.fun)
    else:
        return None
    return dataclasses.replace(case, name=f"{case.name}[numpy]", fun=fun, np_fun=False)
