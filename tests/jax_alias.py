"""``import jax`` answered by fungrad, for running JAX libraries unmodified.

``aliased_jax()`` puts a finder first on ``sys.meta_path`` that resolves
``jax`` to ``fungrad`` and every ``jax.x.y`` to ``fungrad.x.y`` (the same
module objects, so ``jax.numpy is fungrad.numpy``). On exit it removes the
finder and every ``jax``/``jax.*`` module, and the modules of the packages
named in ``forget`` (imported through the alias, they hold fungrad), so the
rest of the test session sees neither.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys


class _FungradAsJax(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader in one: ``jax[.rest]`` is ``fungrad[.rest]``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "jax" or fullname.startswith("jax."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def __init__(self):
        self._real_specs = {}

    def create_module(self, spec):
        # an ImportError here names the fungrad module that is missing
        module = importlib.import_module("fungrad" + spec.name[len("jax"):])
        self._real_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # already imported as the fungrad module; importlib has just set its
        # __spec__ to the alias's (named "jax..."): give it back its own
        module.__spec__ = self._real_specs.pop(module.__name__)


def _drop_modules(*prefixes):
    for name in [n for n in sys.modules if n.split(".")[0] in prefixes]:
        del sys.modules[name]


@contextlib.contextmanager
def aliased_jax(forget=()):
    """While active, ``import jax`` (and ``jax.numpy``, ...) gives fungrad."""
    if "jax" in sys.modules:
        raise RuntimeError("aliased_jax: a real `jax` is already imported in this process")
    finder = _FungradAsJax()
    sys.meta_path.insert(0, finder)
    try:
        yield importlib.import_module("jax")
    finally:
        sys.meta_path.remove(finder)
        _drop_modules("jax", *forget)
