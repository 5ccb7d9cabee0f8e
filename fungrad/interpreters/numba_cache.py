"""Compiling the compiled backend's segments with numba, cached on disk.

The segments of one program are written as one module file in a private
cache directory (``$FUNGRAD_NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/
fungrad/numba`` or ``~/.cache/fungrad/numba``), named by a hash of the
segments' source, the primitives they use and the numba, NumPy, fungrad and
Python versions; numba's own cache (``cache=True``) keeps the machine code
beside it, in ``__pycache__``, so a second process loads instead of compiling.

Nothing in the directory is trusted:

* it is used only if it is a directory this user owns, not a symbolic link,
  with no permissions for group or others (created so: 0700, files 0600);
  otherwise the segments compile in memory, as with ``FUNGRAD_NUMBA_CACHE_DIR=""``
  (no disk cache) or ``NUMBA_CACHE_DIR`` set (numba would keep the code in a
  place this module cannot check);
* the module file is never imported: its text is compared with the source
  generated now and compiled from that (in memory, ``codegen._check_names``
  applied); a file that differs is rewritten and numba's files dropped;
* numba's files are checked against the SHA-256 sums recorded when they were
  written (``<module>.sums``); a missing, extra or changed file drops them all,
  and numba compiles again.
"""
from __future__ import annotations

import hashlib
import os
import sys
import types

import numpy as np

from fungrad.interpreters.codegen import _check_names

__all__ = ["compile_segments", "cache_root", "FORMAT"]

NJIT_OPTIONS = {"error_model": "numpy"}   # float division by zero: inf/nan, as NumPy
FORMAT = 3                                # bump when the module layout changes

_HEADER = ("# fungrad jit, numba backend: generated code (a cache entry; see\n"
           "# fungrad/interpreters/numba_cache.py). Never imported: compared with the\n"
           "# code fungrad generates, and recompiled from that.\n")


def compile_segments(sources: list[str], names: list[str], primitives=(), preludes=()):
    """numba dispatchers of the segment functions (compiled on their first
    call, or loaded from the disk cache), numba's error class (what a failed
    compilation raises), and ``after(ok)``, which a segment calls after its
    first call: with ok, it records the sums of numba's files; otherwise it
    drops them and returns a dispatcher compiled in memory to try instead.
    ``preludes``: module-level source (kernel functions) the segments call."""
    import numba
    from numba.core.errors import NumbaError
    text = _module_text(list(preludes) + list(sources))
    root = cache_root()
    if root is None:
        return _in_memory(text, names), NumbaError, lambda ok, name: None
    key = _key(text, primitives)
    path = os.path.join(root, f"m{key[:32]}.py")
    namespace = _load(path, text)
    fns = [_cached_dispatcher(namespace[n]) for n in names]

    def after(ok: bool, name: str):
        if ok:
            return _record(path)
        _drop_numba_files(path)           # (a cache entry numba could not load)
        return _in_memory(text, [name])[0]
    return fns, NumbaError, after


def _cached_dispatcher(fn):
    """``numba.njit(cache=True)(fn)``, whose cache loads machine code without
    refreshing numba's registries first (``_loading_cache``)."""
    import numba
    dispatcher = numba.njit(cache=True, **NJIT_OPTIONS)(fn)
    cache_class = _loading_cache()
    if cache_class is not None and type(dispatcher._cache) is cache_class.__base__:
        dispatcher._cache = cache_class(dispatcher.py_func)
    return dispatcher


_LOADING_CACHE = []


def _loading_cache():
    """A subclass of numba's ``FunctionCache`` whose ``load_overload`` runs
    only the part of numba's ``target_context.refresh()`` (run before every
    load) that loaded code needs: the runtime (NRT: without it code that
    allocates arrays crashes).  The rest imports and registers numba's typing
    and lowering rules (array math, cffi, ...), which only compiling uses: on
    a warm start it was most of the first call (HMC: 0.26 s of 0.3 s CPU).
    numba's compiler refreshes both contexts before every compilation, so a
    function compiled later in the process (a miss, a new layout) still gets
    them.  None if this numba lacks the private methods it relies on (then
    numba's own class is kept)."""
    if not _LOADING_CACHE:
        try:
            from numba.core.caching import FunctionCache
            from numba.core.runtime import rtsys
        except ImportError:
            _LOADING_CACHE.append(None)
        else:
            class LoadingCache(FunctionCache):
                def load_overload(self, sig, target_context):
                    rtsys.initialize(target_context)
                    with self._guard_against_spurious_io_errors():
                        return self._load_overload(sig, target_context)
            private = ("_load_overload", "_guard_against_spurious_io_errors")
            _LOADING_CACHE.append(LoadingCache if all(hasattr(FunctionCache, n) for n in private)
                                  else None)
    return _LOADING_CACHE[0]


def _module_text(sources) -> str:
    # (numba: a segment may call NumPy through ``numba.objmode``)
    return _HEADER + "import numba\nimport numpy as np\n\n\n" + "\n\n".join(sources)


def _compile_text(text: str, filename: str, module: str) -> dict:
    """Compile ``text`` as the module ``module`` (entered in ``sys.modules``:
    numba's cached code finds its globals there when it is loaded)."""
    code = compile(text, filename, "exec")
    _check_names(code)
    mod = sys.modules.get(module)         # (the name is a hash of the text)
    if mod is None or getattr(mod, "__file__", None) != filename:
        mod = types.ModuleType(module)
        mod.__file__ = filename
        mod.np = np
        exec(code, mod.__dict__)
        sys.modules[module] = mod
    return mod.__dict__


def _in_memory(text, names):
    import numba
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    namespace = _compile_text(text, "<fungrad.numba>", f"fungrad_numba_memory_{digest}")
    return [numba.njit(**NJIT_OPTIONS)(namespace[n]) for n in names]


def _versions() -> str:
    import importlib.metadata
    import numba
    try:
        fungrad_version = importlib.metadata.version("fungrad")
    except importlib.metadata.PackageNotFoundError:     # (run from a source tree)
        fungrad_version = "unknown"
    return (f"format {FORMAT}; numba {numba.__version__}; numpy {np.__version__}; "
            f"fungrad {fungrad_version}; python {sys.version}")


def _key(text: str, primitives) -> str:
    h = hashlib.sha256()
    for part in (_versions(), ",".join(sorted(primitives)), text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# ----------------------------------------------------------------------------
# The directory
# ----------------------------------------------------------------------------

def cache_root() -> str | None:
    """The private cache directory (created 0700), or None when there is none
    to use (disabled, NUMBA_CACHE_DIR set, or not private: see module doc)."""
    root = os.environ.get("FUNGRAD_NUMBA_CACHE_DIR")
    if root == "" or os.environ.get("NUMBA_CACHE_DIR"):
        return None
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "fungrad", "numba")
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        pycache = os.path.join(root, "__pycache__")
        os.makedirs(pycache, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not (_private(root) and _private(pycache)):
        _warn(f"the numba cache directory {root} is not private to this user (owned by "
              "it, no group/other permissions, not a link); compiling in memory")
        return None
    return root


def _private(path: str) -> bool:
    import stat
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o077)


def _warn(message: str) -> None:
    import logging
    logging.getLogger("fungrad.jit").warning("%s", message)


# ----------------------------------------------------------------------------
# An entry: the module text, numba's files, their sums
# ----------------------------------------------------------------------------

def _load(path: str, text: str) -> dict:
    """The segments' namespace, compiled from ``text``; the file at ``path`` is
    (re)written if it is not exactly ``text``, and numba's files are dropped
    unless their sums match the record."""
    try:
        with open(path, encoding="utf-8") as fh:
            current = fh.read()
    except (OSError, UnicodeDecodeError):
        current = None
    if current != text:
        _drop_numba_files(path)
        _write_private(path, text.encode())
    elif not _sums_match(path):
        _drop_numba_files(path)
    module = "fungrad_numba_" + os.path.basename(path)[:-3]
    return _compile_text(text, path, module)


def _write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by this user only."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _numba_files(path: str) -> list[str]:
    """numba's cache files of the module at ``path`` (in its ``__pycache__``)."""
    stem = os.path.basename(path)[:-3] + "."
    pycache = os.path.join(os.path.dirname(path), "__pycache__")
    try:
        names = os.listdir(pycache)
    except OSError:
        return []
    return sorted(os.path.join(pycache, n) for n in names
                  if n.startswith(stem) and n.endswith((".nbi", ".nbc")))


def _sums_path(path: str) -> str:
    return path[:-3] + ".sums"


def _sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _sums(files) -> str:
    return "".join(f"{_sha256(f)}  {os.path.basename(f)}\n" for f in files)


def _sums_match(path: str) -> bool:
    try:
        with open(_sums_path(path), encoding="utf-8") as fh:
            recorded = fh.read()
        return recorded == _sums(_numba_files(path))
    except (OSError, UnicodeDecodeError):
        return False


def _drop_numba_files(path: str) -> None:
    for f in _numba_files(path) + [_sums_path(path)]:
        try:
            os.unlink(f)
        except OSError:
            pass


def _record(path: str) -> None:
    """After the segments ran: numba's files made owner-only, and their sums."""
    try:
        files = _numba_files(path)
        for f in files:
            os.chmod(f, 0o600)
        _write_private(_sums_path(path), _sums(files).encode())
    except OSError as err:
        _warn(f"could not record the numba cache entry {path}: {err}")
