"""jit's cache-hit path (``Jitted.__call__``: the key of plain positional
arguments, the one-entry inline cache, the generated runners, the numba
backend's direct segment call) against the general path and against JAX's
rule for when a jitted function is traced again.

JAX traces again when an argument's shape, dtype or weak type changes (or a
static argument, or an option that changes tracing); the pool below draws
arguments of each kind.  One difference is fungrad's by design and tested as
such: a Python scalar and a 0-d array of the same aval (``0.7`` and
``jnp.asarray(0.7)``; ``True`` and ``np.array(True)``) share one trace in JAX
(checked with JAX 0.10.2) and are compiled apart here, because the compiled
code takes Python scalars in a form of its own (the NumPy backend's
Python-float code, numba's scalars).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import core, jit, jitting


# (name, maker): each a new object per call, as user code passes them
POOL = {
    "float": lambda: 0.7,
    "int": lambda: 3,
    "bool": lambda: True,
    "np.float64": lambda: np.float64(0.7),
    "np.float32": lambda: np.float32(0.7),
    "f64[]": lambda: np.array(0.7),
    "f64[3]": lambda: np.linspace(0.1, 0.9, 3),
    "f64[2,3]": lambda: np.linspace(0.1, 0.9, 6).reshape(2, 3),
    "f32[3]": lambda: np.linspace(0.1, 0.9, 3).astype(np.float32),
    "i64[3]": lambda: np.arange(3),
    "Array f64[3]": lambda: fnp.asarray(np.linspace(0.1, 0.9, 3)),
    "weak Array f64[]": lambda: fnp.asarray(0.7),
}


def _jax_signature(x):
    """What JAX's trace cache tells apart: shape, dtype, weak type (and, the
    documented difference, whether it is a Python scalar)."""
    aval = core.get_aval(x)
    return (type(x) in (float, int, bool, complex), aval.shape, aval.dtype, aval.weak_type)


def _body(x, y):
    return x * 2 + 1, fnp.sin(x) * y


def _traced_counting(traces):
    def f(x, y):
        traces.append(None)          # runs while tracing only
        return _body(x, y)
    return f


def _same(a, b, weak=True):
    """``a`` (a jitted result: an Array) and ``b`` (one, or an eager result,
    which may be a Python scalar) agree in value, shape, dtype and (``weak``)
    weak type.  (Eager ``sin(0.7) * True`` is not weakly typed; JAX's and jit's
    is: eager's weak types are not what this file tests.)"""
    assert type(a) is core.Array
    want = core.get_aval(b)
    assert (a.shape, a.dtype) == (want.shape, want.dtype)
    assert a.weak_type == want.weak_type or not weak
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


calls = st.lists(st.tuples(st.sampled_from(sorted(POOL)), st.sampled_from(sorted(POOL))),
                 min_size=1, max_size=10)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@given(sequence=calls)
def test_fast_path_results_and_retraces_match_the_general_path_and_jax(backend, sequence):
    if backend == "numba":
        pytest.importorskip("numba")
    traces, general_traces = [], []
    fast = jit(_traced_counting(traces), backend=backend)
    counting = _traced_counting(general_traces)
    # a pytree argument takes the general path (flattening, _entry's key)
    general = jit(lambda xy: counting(*xy), backend=backend)
    seen = set()
    for x_name, y_name in sequence:
        x, y = POOL[x_name](), POOL[y_name]()
        got = fast(x, y)
        want = general((x, y))
        with fungrad.disable_jit():
            eager = _body(x, y)
        for g, w, e in zip(got, want, eager):
            _same(g, w)
            _same(g, e, weak=False)
        seen.add((_jax_signature(x), _jax_signature(y)))
        assert len(traces) == len(general_traces) == len(seen)


def test_inline_cache_keeps_the_lru_order_exact(monkeypatch):
    monkeypatch.setattr(jitting, "CACHE_SIZE", 2)
    traces = []
    f = jit(lambda x: (traces.append(None), x + 1)[1])
    a, b, c = np.ones(1), np.ones(2), np.ones(3)
    f(a), f(b), f(a), f(a)      # the last call is an inline hit of a
    f(c)                        # evicts b, the least recently used
    assert len(traces) == 3
    f(a)
    assert len(traces) == 3     # a was kept
    f(b)
    assert len(traces) == 4


def test_a_new_x64_setting_empties_the_inline_cache_too():
    traces = []
    f = jit(lambda x: (traces.append(None), x * 2)[1])
    assert f(0.5).dtype == np.float64
    f(0.5)
    try:
        fungrad.config.update("jax_enable_x64", False)
        out = f(0.5)
        assert out.dtype == np.float32 and out.weak_type
        assert len(traces) == 2
    finally:
        fungrad.config.update("jax_enable_x64", True)
    assert f(0.5).dtype == np.float64
    assert len(traces) == 3


def test_disable_jit_and_float_checks_leave_the_fast_path():
    traces = []
    f = jit(lambda x: (traces.append(None), fnp.log(x))[1])
    f(np.ones(2))
    f(np.ones(2))
    assert len(traces) == 1
    with fungrad.disable_jit():
        f(np.ones(2))               # the Python function, op by op
    assert len(traces) == 2
    with fungrad.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f(-np.ones(2))
    np.testing.assert_array_equal(np.isnan(f(-np.ones(2))), [True, True])   # off again


def test_static_arguments_keywords_and_tracers_take_the_general_path():
    traces = []

    def g(x, n):
        traces.append(None)
        return x ** n
    f = jit(g, static_argnums=1)
    assert float(f(2.0, 3)) == 8.0 and float(f(2.0, 3)) == 8.0
    assert float(f(2.0, n=3)) == 8.0
    assert float(f(2.0, 2)) == 4.0
    assert len(traces) == 3      # as JAX 0.10.2: by keyword is another call structure
    h = jit(lambda x: fnp.sin(x) * x)
    h(0.3)                           # cached eagerly, then called with tracers
    np.testing.assert_allclose(fungrad.grad(h)(0.3), np.cos(0.3) * 0.3 + np.sin(0.3))
    np.testing.assert_allclose(fungrad.vmap(h)(np.array([0.1, 0.3])),
                               np.sin([0.1, 0.3]) * np.array([0.1, 0.3]))


def test_log_compiles_says_each_trace_once(caplog):
    f = jit(lambda x: x + 1)
    with fungrad.log_compiles(True), caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        f(1.0), f(2.0), f(np.ones(2)), f(3.0)
    tracing = [r for r in caplog.records if "tracing for arguments" in r.getMessage()]
    assert len(tracing) == 2      # float, then f64[2]; the other calls hit


def test_outputs_passed_through_are_not_marked_weak_in_place():
    x = fnp.asarray(np.ones(3))
    f = jit(lambda a, s: (a, s * 1.0))
    a, s = f(x, 2.0)
    assert a is x or not a.weak_type          # the caller's Array is never marked
    assert s.weak_type and not x.weak_type


def test_an_int_too_large_is_named_on_the_fast_path():
    f = jit(lambda n: n + 1)
    f(3)
    with pytest.raises(OverflowError, match="argument"):
        f(2 ** 70)


def _seed(x):
    u = x * x + fnp.exp(x * x)
    return fnp.sqrt(u) + fnp.cos(u)


def test_numba_direct_segment_call_matches_the_numpy_backend(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")
    vg = fungrad.value_and_grad(_seed)
    f, reference = jit(vg, backend="numba"), jit(vg, backend="numpy")
    f(0.7)
    entry = next(iter(f._cache.entries.values()))
    assert getattr(entry.fn, "direct_segment", None) is not None    # no driver in between
    for x in (0.7, -1.3, np.float64(0.7), np.array(0.7), fnp.asarray(0.7),
              fnp.asarray(np.float64(0.2))):
        for got, want in zip(f(x), reference(x)):
            _same(got, want)
    try:
        fungrad.config.update("jax_enable_x64", False)
        for got, want in zip(f(0.7), reference(0.7)):
            assert got.dtype == np.float32
            _same(got, want)
    finally:
        fungrad.config.update("jax_enable_x64", True)


def test_a_direct_segment_falling_back_to_numpy_gets_numpy_scalars(monkeypatch):
    """The NumPy twin of a segment runs with NumPy's float semantics even though
    jit passes the direct segment Python floats (Python's 1.0 / 0.0 raises)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")
    f = jit(lambda x: 1.0 / (x * x) + fnp.sin(x), backend="numba")
    f(0.5)
    segment = f._cache.hit[1].__globals__["_segment"]
    with np.errstate(divide="ignore"):
        segment._give_up(RuntimeError("as if numba had failed"), (0.0,))
        out = f(0.0)
        assert np.isinf(float(out)) and type(out) is core.Array
        np.testing.assert_allclose(f(0.5), 4.0 + np.sin(0.5))
