"""jax_debug_nans / jax_debug_infs provenance: the first NaN (inf) produced in the
forward or the backward pass is reported with its primitive, the user's line that
created it, the transformations, and the inputs -- eagerly, under grad, vmap and
jit, inside scan/while bodies and custom rules (issue 18 item 4).

Each expected line is marked in this file with a ``# <- name`` comment; ``_at``
finds it, so the tests do not depend on line numbers.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import core, lax
from fungrad.interpreters.codegen import compiled

_SOURCE = open(__file__).read().splitlines()


def _at(marker: str) -> str:
    """``this_file:line`` of the line ending in ``# <- marker``."""
    lines = [i + 1 for i, text in enumerate(_SOURCE) if text.rstrip().endswith(f"# <- {marker}")]
    assert len(lines) == 1, marker
    return f"{__file__}:{lines[0]}"


@pytest.fixture(autouse=True)
def _nans_on():
    with np.errstate(all="ignore"), fungrad.debug_nans(True):
        yield


def _error(fn, *args) -> str:
    with pytest.raises(FloatingPointError) as info:
        fn(*args)
    return str(info.value)


# ----------------------------------------------------------------------------
# The functions under test (the marked lines create the NaN/inf)
# ----------------------------------------------------------------------------

def softmax(x, temperature):
    e = fnp.exp(x / temperature)
    return e / fnp.sum(e)                               # <- softmax


def sqrt_times_zero(x):
    return fnp.sqrt(x) * 0.0                            # <- sqrt


def log_of(x):
    return fnp.log(x)                                   # <- log


def scan_body(c, x):
    c = fnp.sqrt(c) * x                                 # <- scan body
    return c, c


def scan_loss(x):
    _, ys = lax.scan(scan_body, x, np.array([1.0, 0.0, 2.0]))
    return fnp.sum(ys)


def scan_log(x):
    def body(c, y):
        c = c * y
        return c, fnp.log(c)                            # <- scan log
    return lax.scan(body, x, np.array([1.0, 2.0, -1.0]))[1]


def while_log(x):
    def body(carry):
        i, v = carry
        return i + 1, fnp.log(v - 1.5)                  # <- while body
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


@fungrad.custom_jvp
def with_jvp_rule(x):
    return fnp.sin(x)


@with_jvp_rule.defjvp
def _jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return with_jvp_rule(x), fnp.log(x - 2.0) * t       # <- jvp rule


@fungrad.custom_vjp
def with_vjp_rule(x):
    return fnp.sin(x)


def _fwd(x):
    return with_vjp_rule(x), x


def _bwd(x, ct):
    return (fnp.log(x - 1.0) * ct,)                     # <- bwd rule


with_vjp_rule.defvjp(_fwd, _bwd)


# ----------------------------------------------------------------------------
# Eager
# ----------------------------------------------------------------------------

def test_eager_names_primitive_line_and_inputs():
    msg = _error(log_of, np.array([1.0, -1.0]))
    assert msg.startswith("invalid value (nan) encountered in log (jax_debug_nans is on)")
    assert _at("log") in msg and "return fnp.log(x)" in msg
    assert "no transformation" in msg and "inputs: f64[2] (finite)" in msg


def test_eager_softmax_with_an_extreme_temperature():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(softmax(x, 1.0).sum(), 1.0)     # a sane temperature passes
    msg = _error(softmax, x, 1e-3)
    assert "encountered in numpy.divide" in msg and _at("softmax") in msg
    assert "f64[3] (already holds inf)" in msg                 # exp overflowed before


def test_numpy_operators_on_arrays_are_checked_while_on():
    e = fnp.exp(np.array([1000.0, 1.0]))
    msg = _error(lambda: e / e.sum())                   # <- operator
    assert "numpy.divide" in msg and _at("operator") in msg
    with fungrad.debug_nans(False):
        assert np.isnan(e / e.sum()).any()             # NumPy's own result, no hook
        assert "__array_ufunc__" not in core.Array.__dict__


def test_numpy_operators_keep_their_result_types_while_checked():
    a, s = fnp.ones(3), fnp.asarray(2.0)
    cases = [lambda: a + 1, lambda: a.sum(), lambda: s * s, lambda: np.divmod(a, 2),
             lambda: a.sum(keepdims=True), lambda: a @ a, lambda: np.sin(a)]
    with fungrad.debug_nans(False):
        want = [tuple(map(type, r)) if isinstance(r, tuple) else type(r) for r in
                (c() for c in cases)]
    got = [tuple(map(type, r)) if isinstance(r, tuple) else type(r) for r in (c() for c in cases)]
    assert got == want


# ----------------------------------------------------------------------------
# grad: the forward and the backward pass
# ----------------------------------------------------------------------------

def test_grad_backward_pass_names_the_primal_line():
    msg = _error(fungrad.grad(sqrt_times_zero), 0.0)
    assert "encountered in mul" in msg and _at("sqrt") in msg
    assert "in the backward pass" in msg and "grad/vjp" in msg
    assert "f64[] (already holds inf)" in msg                  # the cotangent of sqrt at 0


def test_grad_forward_pass():
    msg = _error(fungrad.grad(lambda x: softmax(x, 1e-3)[0]), np.array([1.0, 2.0, 3.0]))
    assert _at("softmax") in msg and "in the forward pass" in msg


def test_grad_custom_jvp_rule_line():
    for wrap in (lambda f: f, fungrad.jit):
        msg = _error(wrap(fungrad.grad(with_jvp_rule)), 1.0)
        assert _at("jvp rule") in msg and "encountered in log" in msg


def test_grad_custom_vjp_bwd_line():
    for wrap in (lambda f: f, fungrad.jit):
        msg = _error(wrap(fungrad.grad(with_vjp_rule)), 0.0)
        assert _at("bwd rule") in msg and "in the backward pass" in msg


# ----------------------------------------------------------------------------
# vmap
# ----------------------------------------------------------------------------

def test_vmap_names_the_line_and_the_batched_input():
    msg = _error(fungrad.vmap(log_of), np.array([1.0, -1.0]))
    assert _at("log") in msg and "under: vmap" in msg and "inputs: f64[2]" in msg
    msg = _error(fungrad.vmap(fungrad.jit(log_of)), np.array([1.0, -1.0]))
    assert _at("log") in msg and "vmap" in msg and "jit(log_of)" in msg


def test_vmap_of_grad_through_scan():
    msg = _error(fungrad.vmap(fungrad.grad(scan_loss)), np.array([1.0, 2.0]))
    assert _at("scan body") in msg and "in the backward pass" in msg and "vmap" in msg


# ----------------------------------------------------------------------------
# jit: the generated code checks each equation
# ----------------------------------------------------------------------------

def test_jit_maps_the_failure_to_the_line():
    for x in (np.array([1.0, 2.0, 3.0]), fnp.array([1.0, 2.0, 3.0])):    # (ndarray, Array)
        msg = _error(fungrad.jit(softmax), x, 1e-3)
        assert "encountered in div (" in msg and _at("softmax") in msg
        assert "under: jit(softmax)" in msg


def test_jit_of_grad_backward_pass():
    msg = _error(fungrad.jit(fungrad.grad(sqrt_times_zero)), 0.0)
    assert _at("sqrt") in msg and "in the backward pass" in msg
    assert "under: jit(sqrt_times_zero)" in msg and "grad/vjp" in msg


def test_grad_of_jit():
    msg = _error(fungrad.grad(fungrad.jit(sqrt_times_zero)), 0.0)
    assert _at("sqrt") in msg and "in the backward pass" in msg


def test_checks_only_while_on_and_off_gives_the_fast_code_again():
    traces = []

    def f(x):
        traces.append(1)
        return fnp.exp(fnp.reshape(x, (2,))) * 2.0
    jitted = fungrad.jit(f)
    x = np.ones(2)
    with fungrad.debug_nans(False):
        fast = jitted.lower(x).source()
        jitted(x)
    checked = jitted.lower(x).source()                  # traced again, with checks
    assert "_nonfinite" not in fast and "isnan" not in fast
    # exp and mul can create one; the reshape cannot: two checks
    assert checked.count("np.isnan(") == 2
    jitted(x)
    n = len(traces)
    with fungrad.debug_nans(False):
        jitted(x)
        assert jitted.lower(x).source() == fast and len(traces) == n   # cached, not retraced
    jitted(x)
    assert len(traces) == n


def test_nan_that_came_in_with_the_arguments():
    msg = _error(fungrad.jit(lambda x: fnp.sin(x)), np.array([np.nan, 1.0]))
    assert "encountered in sin" in msg and "f64[2] (already holds nan)" in msg
    msg = _error(fungrad.jit(lambda x: x[::-1]), np.array([np.nan, 1.0]))
    assert "the output of jit" in msg and "came in with the arguments" in msg


def test_jit_on_python_scalars_and_pytrees():
    f = fungrad.jit(lambda d: {"y": fnp.log(d["x"]) + d["n"]})
    np.testing.assert_allclose(f({"x": 2.0, "n": 1})["y"], np.log(2.0) + 1)
    assert "encountered in log" in _error(f, {"x": -2.0, "n": 1})


@given(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=5))
def test_checking_code_gives_the_same_values(values):
    def f(x):
        y = fnp.log(x) * fnp.exp(-x)
        return fnp.cumsum(fnp.sqrt(y * y + 1.0)) / fnp.sum(x)
    x = np.array(values)
    with fungrad.debug_nans(False):
        want = fungrad.jit(f)(x)
    np.testing.assert_allclose(fungrad.jit(f)(x), want, rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(lambda v: f(v).sum()))(x),
                               fungrad.grad(lambda v: f(v).sum())(x), rtol=1e-12)


# ----------------------------------------------------------------------------
# Loop bodies: the line inside the body
# ----------------------------------------------------------------------------

def test_scan_body_line_eager_and_jit():
    for fn in (scan_log, fungrad.jit(scan_log)):
        msg = _error(fn, 1.0)
        assert _at("scan log") in msg and "scan body" in msg and "inputs: f64[] (finite)" in msg


def test_grad_through_scan_names_the_body_line():
    for fn in (fungrad.grad(scan_loss), fungrad.jit(fungrad.grad(scan_loss))):
        msg = _error(fn, 1.0)
        assert _at("scan body") in msg and "in the backward pass" in msg


def test_while_body_line_eager_and_jit():
    for fn in (while_log, fungrad.jit(while_log)):
        msg = _error(fn, 3.0)
        assert _at("while body") in msg and "while_loop body" in msg


# ----------------------------------------------------------------------------
# jax_debug_infs, sources, the environment variable
# ----------------------------------------------------------------------------

def test_debug_infs_names_the_line():
    def f(x):
        return fnp.exp(x) + 1.0                         # <- exp
    with fungrad.debug_nans(False), fungrad.debug_infs(True):
        for fn in (f, fungrad.jit(f), fungrad.grad(f)):
            msg = _error(fn, 1000.0)
            assert msg.startswith("invalid value (inf) encountered in exp") and _at("exp") in msg
            assert "jax_debug_infs" in msg
        assert np.isnan(fungrad.jit(log_of)(-1.0))      # NaNs are jax_debug_nans' business


def test_sources_are_recorded_only_while_on():
    jaxpr = fungrad.make_jaxpr(sqrt_times_zero)(1.0)
    file, line, function, transforms = jaxpr.eqns[0].source
    assert f"{file}:{line}" == _at("sqrt") and function == "sqrt_times_zero"
    assert transforms[0][0] == "staging"
    with fungrad.debug_nans(False):
        assert all(e.source is None for e in fungrad.make_jaxpr(sqrt_times_zero)(1.0).eqns)


def test_optimised_code_keeps_the_sources():
    closed = fungrad.make_jaxpr(lambda x: fungrad.grad(sqrt_times_zero)(x) + 0.0)(1.0)
    comp = compiled(closed)
    assert comp.jaxpr.eqns and all(e.source is not None for e in comp.jaxpr.eqns)


def test_environment_variable_turns_it_on_at_import():
    code = ("import numpy as np, fungrad.numpy as fnp\n"
            "np.seterr(all='ignore')\n"
            "try:\n    fnp.log(-1.0)\nexcept FloatingPointError as e:\n    print('raised', e)")
    env = dict(os.environ, JAX_DEBUG_NANS="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert re.search(r"raised invalid value \(nan\) encountered in log", out.stdout), out.stderr
