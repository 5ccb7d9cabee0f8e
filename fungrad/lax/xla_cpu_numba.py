"""XLA's CPU arithmetic compiled with numba: the functions of
``fungrad/lax/kernels/xla_cpu_math.py`` (log, log1p, exp, erf, erf_inv,
rsqrt, tan, pow, fused multiply-add, and JAX's normal from its uniform), bit
for bit the same numbers, 20-100x faster than the NumPy emulation; and the
Threefry-2x32 rounds of ``kernels/prng.py``.

The scalar functions are in ``_xla_cpu_numba_kernels.py``; this module compiles
that text with one array loop per function and dtype through fungrad's numba
disk cache (``interpreters/numba_cache.py``: a private directory, files checked
by their recorded sums), so a second process loads machine code instead of
compiling. ``load()`` imports numba on its first call (~0.4 s): the samplers
ask for it only for draws of more than ``EXACT_SAMPLES`` per key
(``kernels/prng.py``'s ``exact_draw`` says when, in one place), and it
registers the kernels with ``xla_cpu_math``, whose functions then use them for
arrays of its ``COMPILED_MIN_SIZE`` elements or more. Without numba nothing here is
imported, and the NumPy emulation or NumPy's own functions are used.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading

import numpy as np

from fungrad.lax.kernels import xla_cpu_math

__all__ = ["available", "load", "CompiledMath"]

_UNARY = ("log", "log1p", "exp", "erf", "erf_inv", "rsqrt", "tan", "normal")
_ARITY = {**{name: 1 for name in _UNARY}, "pow": 2, "fma": 3}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_LOOP = """
def {name}_{suffix}_array({params}, out):
    for i in range(out.size):
        out[i] = {name}_{suffix}({items})
"""
# erf_inv in vectorised passes (see erf_inv_f64_into): (function, scale)
_PASSES = {"erf_inv_f64": ("erf_inv_f64_into", "1.0"),
           "normal_f64": ("erf_inv_f64_into", "_SQRT2_64"),
           "erf_inv_f32": ("erf_inv_f32_into", "_ONE32"),
           "normal_f32": ("erf_inv_f32_into", "_SQRT2_32")}
_PASSES_LOOP = """
def {entry}_array(x0, out):
    {function}(x0, out, {scale})
"""
_STATE: dict = {}
_LOCK = threading.Lock()
log = logging.getLogger("fungrad.random")


def available() -> bool:
    """Whether numba can be imported (without importing it)."""
    if "available" not in _STATE:
        _STATE["available"] = importlib.util.find_spec("numba") is not None
    return _STATE["available"]


def load() -> "CompiledMath | None":
    """The compiled kernels (numba imported and the cache opened on the first
    call), registered with ``xla_cpu_math``; None without numba, or if numba
    fails to import (logged)."""
    if "kernels" not in _STATE:
        with _LOCK:
            if "kernels" not in _STATE:
                _STATE["kernels"] = _load() if available() else None
                xla_cpu_math.COMPILED[0] = _STATE["kernels"]
    return _STATE["kernels"]


def _load():
    try:
        from fungrad.interpreters import numba_cache
        fns, _numba_error, after = numba_cache.compile_segments([_source()], _entry_names())
    except Exception as err:         # (a broken numba install: the NumPy paths stay)
        log.warning("fungrad.random: numba's kernels could not be loaded (%s: %s); large "
                    "draws use NumPy", type(err).__name__, err)
        return None
    return CompiledMath(dict(zip(_entry_names(), fns)), after)


def _entry_names():
    return [f"{name}_{suffix}_array" for name in _ARITY for suffix in ("f32", "f64")] + [
        "threefry_array", "threefry_keyed_array"]


def kernels_source() -> str:
    """The scalar kernels' text and the hash of the NumPy module whose
    constants they take (frozen into cached code); also the compiled jit
    backend's prelude for the PRNG primitives (fungrad/lax/prng.py)."""
    if "source" not in _STATE:
        path = os.path.join(os.path.dirname(__file__), "_xla_cpu_numba_kernels.py")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        with open(xla_cpu_math.__file__, "rb") as fh:
            constants = hashlib.sha256(fh.read()).hexdigest()
        _STATE["source"] = f"# xla_cpu_math.py sha256 {constants}\n{text}\n"
    return _STATE["source"]


def _source() -> str:
    """The kernels' text with an array loop per function."""
    loops = []
    for name, arity in _ARITY.items():
        params = ", ".join(f"x{k}" for k in range(arity))
        items = ", ".join(f"x{k}[i]" for k in range(arity))
        for suffix in ("f32", "f64"):
            entry = f"{name}_{suffix}"
            if entry in _PASSES:
                function, scale = _PASSES[entry]
                loops.append(_PASSES_LOOP.format(entry=entry, function=function, scale=scale))
            else:
                loops.append(_LOOP.format(name=name, suffix=suffix, params=params, items=items))
    return kernels_source() + "".join(loops)


class CompiledMath:
    """The array functions: ``call(name, *arrays, out=None)`` on float32 or
    float64 arrays of one dtype and shape (any layout) returns a new flat array
    (or fills the flat contiguous ``out``); ``threefry`` and
    ``threefry_keyed`` work in place and return True. If numba cannot compile
    a kernel, that is logged, the kernels are unregistered from xla_cpu_math
    (its NumPy emulation computes from then on), and these return None/False."""

    def __init__(self, entries, after):
        self._entries, self._after = entries, after
        self._first = set(entries)          # not called yet: see _call_entry

    def call(self, name, *arrays, out=None):
        dtype = arrays[0].dtype
        flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        if out is None:
            out = np.empty(flat[0].size, dtype)
        return out if self._call_entry(f"{name}_{_SUFFIX[dtype]}_array", *flat, out) else None

    def threefry(self, x0, x1, injections):
        """Threefry-2x32 in place on the uint32 ``x0``, ``x1`` (C-contiguous,
        a row per key) after the first key injection; ``injections``: uint32,
        a row of kernels/prng.py's 12 words per key."""
        return self._call_entry("threefry_array", x0, x1, injections)

    def threefry_keyed(self, k0, k1, x0, x1):
        """Threefry-2x32 in place on the 1-d uint32 ``x0``, ``x1``, each pair
        under its own key ``(k0[i], k1[i])``."""
        return self._call_entry("threefry_keyed_array", k0, k1, x0, x1)

    def _call_entry(self, entry, *args):
        fn = self._entries[entry]
        if entry not in self._first:
            fn(*args)
            return True
        try:
            try:
                fn(*args)
            except Exception:       # (nothing has run: a bad cache entry; compile anew)
                retry = self._after(False, entry)
                if retry is None:          # (no disk cache: it was compiled anew)
                    raise
                self._entries[entry] = fn = retry
                fn(*args)
        except Exception as err:
            log.warning("fungrad.random: numba could not compile %s (%s: %s); XLA's "
                        "functions are computed by the NumPy emulation", entry,
                        type(err).__name__, str(err).split("\n")[0])
            xla_cpu_math.COMPILED[0] = None
            return False
        self._first.discard(entry)
        self._after(True, entry)           # records the sums of numba's new files
        return True
