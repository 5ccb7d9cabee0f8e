"""Choosing jit's backend: per function (``jit(f, backend=...)``), per process
(``fungrad.config.update("fungrad_jit_backend", ...)``) and from the
environment (``FUNGRAD_JIT_BACKEND``), and the errors for an unknown name or
a missing numba.  These tests need no numba (its absence is simulated); the
compiled backend itself is tested in tests/test_numba_backend.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp


def _no_numba(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "numba" else real(name, *a, **k))


@pytest.mark.parametrize("name", ["jax", "NUMPY", "llvm", "", 3])
def test_unknown_backend_name_lists_the_backends(name):
    with pytest.raises(ValueError, match="'numpy', 'numba'"):
        fungrad.jit(fnp.sin, backend=name)
    with pytest.raises(ValueError, match="'numpy', 'numba'"):
        fungrad.config.update("fungrad_jit_backend", name)
    assert fungrad.config.fungrad_jit_backend == "numpy"


def test_numba_backend_without_numba_names_the_extra(monkeypatch):
    _no_numba(monkeypatch)
    with pytest.raises(ImportError, match=r'pip install "fungrad\[numba\]"'):
        fungrad.jit(fnp.sin, backend="numba")
    with pytest.raises(ImportError, match=r'pip install "fungrad\[numba\]"'):
        fungrad.config.update("fungrad_jit_backend", "numba")
    assert fungrad.config.fungrad_jit_backend == "numpy"


@pytest.mark.parametrize("backend", [None, "cpu", "numpy"])
def test_numpy_backend_names(backend):
    f = fungrad.jit(lambda x: fnp.sin(x) * 2, backend=backend)
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(f(x), np.sin(x) * 2, rtol=1e-15)
    assert "np.sin" in f.lower(x).source()


def test_environment_variable_sets_the_default():
    code = ("import fungrad; print(fungrad.config.fungrad_jit_backend)")
    env = dict(os.environ, FUNGRAD_JIT_BACKEND="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == "numpy", out.stderr
    env["FUNGRAD_JIT_BACKEND"] = "llvm"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode != 0 and "FUNGRAD_JIT_BACKEND" in out.stderr


class _backend:
    """The process-wide default backend, set while active."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        fungrad.config.update("fungrad_jit_backend", self.name)

    def __exit__(self, *exc):
        fungrad.config.update("fungrad_jit_backend", "numpy")


def test_config_default_reaches_jit_without_a_backend():
    pytest.importorskip("numba")
    f = fungrad.jit(lambda x: fnp.sin(x) * 2 + 1)
    x = np.linspace(0, 1, 5)
    assert "numba" not in f.lower(x).source()
    with _backend("numba"):
        assert "@numba.njit" in f.lower(x).source()
        pinned = fungrad.jit(lambda x: fnp.sin(x) * 2 + 1, backend="numpy")
        assert "numba" not in pinned.lower(x).source()
    assert "numba" not in f.lower(x).source()


def test_export_writes_numpy_code_under_the_numba_default():
    pytest.importorskip("numba")
    from fungrad.export import export
    x = np.linspace(0, 1, 3)
    with _backend("numba"):
        src = export(fungrad.jit(lambda x: fnp.sin(x) * 2 + 1), x)
    assert "njit" not in src and "import numba" not in src and "np.sin" in src
