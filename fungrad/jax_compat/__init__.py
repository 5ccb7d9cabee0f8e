"""Run JAX programs, and the libraries they import, on fungrad unmodified.

Three ways to switch it on, all the same hook::

    import fungrad.jax_compat; fungrad.jax_compat.install()    # in a program
    python -m fungrad run script.py [args]                    # or: run -m module [args]
    PYTHONPATH=$(python -m fungrad jax-path) python script.py # an environment switch
                                                              # (subprocesses inherit it)

Once on, ``import jax``, ``import jax.numpy as jnp``, ``from jax import lax``
and every ``jax.x.y`` resolve to fungrad, in the program and in every library
it imports (flax, equinox, haiku, optax, numpyro, blackjax).  Real ``jax`` and
``jaxlib`` are never imported behind it, even when installed.

How names map (``_hook.py``):

* ``jax`` and ``jax.x.y`` are views of ``fungrad`` and ``fungrad.x.y``: every
  attribute is fungrad's own object (``jax.numpy.sin is fungrad.numpy.sin``,
  ``jax.Array is fungrad.Array``); ``jax.__version__`` is the JAX release
  whose API and numbers fungrad follows.
* JAX's private modules that libraries import anyway (``jax._src.x``) are
  views of ``fungrad._jax_private.x``, the one package that holds such
  compatibility code (each of its modules names the libraries that need it).
* A name fungrad lacks raises ``ImportError``/``AttributeError`` saying that
  fungrad stands in for JAX, naming the ``jax.*`` name and the library line
  that asked for it, and pointing to docs/jax_coverage.md.
"""
from __future__ import annotations

import contextlib
import os
import sys

from fungrad.jax_compat._hook import (JAX_VERSION, JaxFinder, ModuleView, drop_modules,
                                      real_jax_imported)

__all__ = ["install", "uninstall", "installed", "is_installed", "shim_path", "JAX_VERSION"]

_finder: JaxFinder | None = None


def install() -> None:
    """Make ``import jax`` (and ``jaxlib``) resolve to fungrad in this process.

    Idempotent.  Raises ``RuntimeError`` if a real ``jax`` is already imported:
    two JAXes in one process would hand each other arrays neither understands.
    """
    global _finder
    if _finder is not None:
        return
    if real_jax_imported():
        raise RuntimeError(
            "fungrad.jax_compat.install(): the real `jax` is already imported in this "
            "process, so fungrad cannot stand in for it; install the hook before anything "
            "imports jax (first lines of the program, or `python -m fungrad run script.py`)")
    _finder = JaxFinder()
    sys.meta_path.insert(0, _finder)


def uninstall(forget: tuple[str, ...] = ()) -> None:
    """Remove the hook and every ``jax``/``jaxlib`` module it made; also forget
    the modules of the packages named in ``forget`` (libraries imported
    through the hook hold fungrad's objects)."""
    global _finder
    if _finder is not None:
        sys.meta_path.remove(_finder)
        _finder = None
    drop_modules("jax", "jaxlib", *forget)


def is_installed() -> bool:
    return _finder is not None


@contextlib.contextmanager
def installed(forget: tuple[str, ...] = ()):
    """``with installed() as jax: ...``: the hook for the block only (tests)."""
    install()
    try:
        import jax  # noqa: F401  (resolved by the hook)
        yield sys.modules["jax"]
    finally:
        uninstall(forget)


def shim_path() -> str:
    """The directory to put on ``PYTHONPATH`` to switch the hook on from the
    environment: it holds a ``jax`` package whose import installs the hook."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")
