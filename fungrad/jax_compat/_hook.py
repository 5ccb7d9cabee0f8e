"""The import hook: a ``sys.meta_path`` finder that answers ``jax``, ``jax.*``
and ``jaxlib*`` with views of fungrad's modules (see the package docstring).

Why views and not fungrad's module objects themselves: importlib stores each
imported submodule as an attribute of its parent (``jax._src`` on ``jax``),
and a library's ``import jax.x.y as z`` reads that chain of attributes.  On
views those writes land on the view, so fungrad's own modules never grow
attributes, and the view's ``__getattr__`` can say which ``jax`` name is
missing and who asked for it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

#: the JAX release whose API and numbers fungrad follows (libraries branch on it)
JAX_VERSION = "0.10.2"

# jax names whose fungrad module is not "fungrad" + the rest of the name
_PREFIXES = (("jax._src", "fungrad._jax_private"),
             ("jax.interpreters.mlir", "fungrad.jax_compat.mlir"),
             ("jax.version", "fungrad.jax_compat.version"),
             ("jaxlib", "fungrad._jax_private.jaxlib"),
             ("jax", "fungrad"))


def fungrad_name(jax_name: str) -> str | None:
    """``jax.numpy.linalg`` -> ``fungrad.numpy.linalg``; None if not a jax name."""
    for prefix, target in _PREFIXES:
        if jax_name == prefix or jax_name.startswith(prefix + "."):
            return target + jax_name[len(prefix):]
    return None


def _asking_frame() -> str:
    """``file:line`` of the innermost frame outside fungrad and importlib: the
    library (or script) line that asked for the missing name."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen importlib") or "/fungrad/" in filename
                or "importlib" in filename):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def missing_message(jax_name: str, kind: str) -> str:
    return (f"{kind} `{jax_name}`: fungrad is standing in for JAX here (the jax import "
            f"hook, fungrad.jax_compat) and has no `{jax_name}`; asked for at "
            f"{_asking_frame()}. What fungrad covers of JAX, and what it lacks: "
            f"docs/jax_coverage.md in the fungrad repository.")


_ABSENT = object()


class ModuleView(types.ModuleType):
    """``jax.x`` as a view of ``fungrad.x``: attributes read through to it."""

    def __init__(self, jax_name: str, target: types.ModuleType):
        super().__init__(jax_name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_fungrad_module", target)
        if hasattr(target, "__path__"):
            self.__path__ = []          # a package: its submodules come through the hook
        if hasattr(target, "__all__"):
            self.__all__ = list(target.__all__)
        if hasattr(target, "__file__"):
            self.__file__ = target.__file__

    def __getattr__(self, name: str):
        target = object.__getattribute__(self, "_fungrad_module")
        try:
            value = getattr(target, name)
        except AttributeError:
            value = _ABSENT         # (not None: jnp.newaxis is None)
            if name.startswith("__"):
                raise
        if value is _ABSENT or isinstance(value, types.ModuleType):
            # a submodule: hand out its view (JAX imports most of them eagerly)
            sub = f"{self.__name__}.{name}"
            if value is not _ABSENT or _exists(fungrad_name(sub)):   # (not a package: no)
                return importlib.import_module(sub)
            raise AttributeError(missing_message(sub, "no attribute"))
        return value

    def __dir__(self):
        target = object.__getattribute__(self, "_fungrad_module")
        return sorted(set(dir(target)) | set(self.__dict__))

    def __repr__(self):
        target = object.__getattribute__(self, "_fungrad_module")
        return f"<module {self.__name__!r} (fungrad's {target.__name__})>"


_VIEWS: dict[str, ModuleView] = {}


def view_for(jax_name: str) -> ModuleView:
    view = _VIEWS.get(jax_name)
    if view is None:
        target = importlib.import_module(fungrad_name(jax_name))
        view = _VIEWS[jax_name] = ModuleView(jax_name, target)
        if jax_name == "jax":
            view.__version__ = JAX_VERSION
            view.__version_info__ = tuple(int(p) for p in JAX_VERSION.split("."))
    return view


def _exists(module_name: str) -> bool:
    try:
        return importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError:     # a parent package is missing
        return False


class JaxFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on ``sys.meta_path``: every jax/jaxlib name is answered here, so
    the finders behind it never reach an installed JAX."""

    def find_spec(self, fullname, path=None, target=None):
        target_name = fungrad_name(fullname)
        if target_name is None:
            return None
        if not _exists(target_name):
            raise ModuleNotFoundError(missing_message(fullname, "No module"), name=fullname)
        is_package = hasattr(importlib.import_module(target_name), "__path__")
        return importlib.util.spec_from_loader(fullname, self, is_package=is_package)

    def create_module(self, spec):
        return view_for(spec.name)

    def exec_module(self, module):
        pass                        # the fungrad module is already executed


def real_jax_imported() -> bool:
    module = sys.modules.get("jax")
    return module is not None and not isinstance(module, ModuleView)


def drop_modules(*prefixes: str) -> None:
    for name in [n for n in sys.modules if n.split(".")[0] in prefixes]:
        del sys.modules[name]
    for name in [n for n in _VIEWS if n.split(".")[0] in prefixes]:
        del _VIEWS[name]
