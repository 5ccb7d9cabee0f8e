"""Array API consumers on fungrad values: array_api_compat's namespace lookup,
array_api_extra's functions (here), SciPy's array-API paths (in a subprocess:
SCIPY_ARRAY_API must be set before SciPy is imported, and must not leak into
the rest of the suite).
"""
from __future__ import annotations

import os
import subprocess
import sys

import array_api_compat
import array_api_extra as xpx
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad.test_util import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.array([0.3, -1.2, 2.0, 0.7])
XS = np.stack([X, 0.5 * X - 0.2])


def test_array_namespace_of_tracers_is_fungrad_numpy():
    seen = []

    def f(t):
        seen.append(array_api_compat.array_namespace(t, 1.0))
        return fnp.sum(t)
    fungrad.grad(f)(X)
    fungrad.jit(f)(X)
    fungrad.vmap(f)(XS)
    assert seen == [fnp, fnp, fnp]


def test_concrete_arrays_are_numpy_arrays_to_array_api_compat():
    """fungrad.Array is an ndarray subclass, and array_api_compat classifies
    every ndarray subclass as NumPy (its own NumPy wrapper namespace) before it
    asks for ``__array_namespace__``; results are NumPy's."""
    x = fnp.asarray(X)
    assert x.__array_namespace__() is fnp
    assert array_api_compat.array_namespace(x) is array_api_compat.numpy


XPX = {
    "cov": lambda t: fnp.sum(xpx.cov(fnp.stack([t, t ** 2, fnp.sin(t)])) ** 2),
    "sinc": lambda t: fnp.sum(xpx.sinc(t)),
    "kron": lambda t: fnp.sum(xpx.kron(t, t[:2]) ** 2),
    "atleast_nd": lambda t: fnp.sum(xpx.atleast_nd(t, ndim=3) ** 3),
    "expand_dims": lambda t: fnp.sum(fnp.sin(xpx.expand_dims(t, axis=(0, 2)))),
    "one_hot": lambda t: fnp.sum(xpx.one_hot(fnp.asarray([0, 3, 3]), 4) @ t ** 2),
    "broadcast_shapes": lambda t: fnp.sum(fnp.broadcast_to(
        t, xpx.broadcast_shapes((2, 1), t.shape)) ** 2),
}


@pytest.mark.parametrize("name", sorted(XPX))
def test_array_api_extra_functions(name):
    f = XPX[name]
    check_grads(f, (X,), order=1)
    g = fungrad.grad(f)
    np.testing.assert_allclose(fungrad.jit(g)(X), g(X), rtol=1e-12)
    np.testing.assert_allclose(fungrad.vmap(g)(XS), np.stack([g(x) for x in XS]), rtol=1e-12)


def test_xpx_at_takes_the_functional_path_for_read_only_arrays():
    x = fnp.asarray(X)
    y = xpx.at(x, 1).set(5.0)
    z = xpx.at(x, slice(0, 2)).add(1.0)
    np.testing.assert_array_equal(x, X)                   # the input is unchanged
    np.testing.assert_array_equal(y, [0.3, 5.0, 2.0, 0.7])
    np.testing.assert_allclose(z, X + [1, 1, 0, 0])
    with pytest.raises(ValueError, match="read-only"):
        xpx.at(x, 1).set(5.0, copy=False)


def test_xpx_at_on_a_tracer_raises_fungrads_immutability_error():
    """array_api_extra takes the functional path (x.at[...]) only for JAX; for
    any other library it writes in place, which tracers refuse."""
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set"):
        fungrad.grad(lambda t: fnp.sum(xpx.at(t, 0).set(1.0)))(X)


def test_scipy_array_api_functions_in_a_subprocess():
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         os.path.join(ROOT, "tests", "array_api_consumers.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
