"""Compiling the compiled backend's segments with numba (see numba_backend)."""
from __future__ import annotations

import numpy as np

from fungrad.interpreters.codegen import _check_names

__all__ = ["compile_segments"]

NJIT_OPTIONS = {"error_model": "numpy"}   # float division by zero: inf/nan, as NumPy


def compile_segments(sources: list[str], names: list[str]):
    """numba dispatchers of the segment functions (compiled on their first
    call), and numba's error class (what a failed compilation raises)."""
    import numba
    from numba.core.errors import NumbaError
    fns = []
    for source, name in zip(sources, names):
        code = compile(source, f"<fungrad.numba {name}>", "exec")
        _check_names(code)
        namespace = {"np": np}
        exec(code, namespace)
        fns.append(numba.njit(**NJIT_OPTIONS)(namespace[name]))
    return fns, NumbaError
