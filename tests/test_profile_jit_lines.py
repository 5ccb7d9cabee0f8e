"""tools/profile_jit_lines.py: each line of a jitted function's generated code
timed on its own (the developers' tool behind the Performance section's floor)."""
import contextlib
import io

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from tools import profile_jit_lines


def _loss(w, x):
    return fnp.sum(fnp.tanh(x @ w) ** 2)


def test_every_line_is_timed_and_the_results_are_unchanged():
    w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 2, 20).reshape(5, 4)
    jitted = fungrad.jit(fungrad.value_and_grad(_loss))
    expected = jitted(w, x)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        times = profile_jit_lines.profile(jitted, w, x, repeats=3)
    body = jitted.lower(w, x).source().splitlines()[1:]
    statements = [line.strip() for line in body if line.strip() and not line.strip()
                  .startswith("del ")]
    assert len(times) == len(statements) + sum(1 for line in body if "del " in line)
    assert all(0 <= t < 1 for t in times.values())
    text = out.getvalue()
    assert "sum of per-line minima" in text and "GEMM and convolution" in text
    # the instrumented copy ran in the function's own namespace: the jitted
    # function still gives its results
    value, grad = jitted(w, x)
    np.testing.assert_allclose(value, expected[0])
    np.testing.assert_allclose(grad, expected[1])


def test_the_numba_backends_driver_times_each_compiled_segment_as_a_line():
    pytest.importorskip("numba")
    w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 2, 20).reshape(5, 4)
    jitted = fungrad.jit(fungrad.value_and_grad(_loss), backend="numba")
    expected = fungrad.jit(fungrad.value_and_grad(_loss))(w, x)
    with contextlib.redirect_stdout(io.StringIO()):
        times = profile_jit_lines.profile(jitted, w, x, repeats=2)
    assert any("_seg" in line for line in times)
    value, grad = jitted(w, x)
    np.testing.assert_allclose(value, expected[0], rtol=1e-12)
    np.testing.assert_allclose(grad, expected[1], rtol=1e-12)
