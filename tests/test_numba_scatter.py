"""The compiled backend's scatters, gathers and dynamic slices (the numba
rules of lax/indexing_numba.py) against the NumPy backend and eager fungrad:
``x.at[idx].set/add/mul/min/max`` and ``x[idx]`` with scalar, 1-D and 2-D
indices (repeated, negative, out of bounds: dropped or filled, or clamped in
mode "clip"), integer, float and bool dtypes, at the top level and in the
bodies of ``fori_loop`` and ``cond`` (compiled loops).  Each program compiles once (about a second) and runs on
several generated inputs of its shapes (tests/test_numba_integer_ops.py uses
the same helpers).  Skipped only when numba is not installed.
"""
from __future__ import annotations

import contextlib
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

numba = pytest.importorskip("numba")

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad import lax  # noqa: E402


@pytest.fixture(autouse=True)
def _in_memory(monkeypatch):
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")


_NUMBA, _NUMPY = {}, {}


def _jitted(f):
    """One compiled (numba) and one NumPy-backend jit per function: each
    program compiles once for all the examples of its shapes."""
    if f not in _NUMBA:
        _NUMBA[f], _NUMPY[f] = fungrad.jit(f, backend="numba"), fungrad.jit(f)
    return _NUMBA[f], _NUMPY[f]


class _FallbackLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _no_fallback():
    """Fails if a segment fell back to its NumPy twin (numba rejected it)."""
    handler, logger = _FallbackLog(), logging.getLogger("fungrad.jit")
    logger.addHandler(handler)
    try:
        with fungrad.log_compiles(True):
            yield
    finally:
        logger.removeHandler(handler)
    assert not [m for m in handler.messages if "could not compile" in m], handler.messages


def _run_compiled(f, *args):
    """``f`` compiled with numba (all of it in compiled segments, none falling
    back), and on the NumPy backend, and eagerly."""
    numba_f, numpy_f = _jitted(f)
    source = numba_f.lower(*args).source()
    assert "@numba.njit" in source and "# NumPy" not in source, source
    with _no_fallback():
        got = numba_f(*args)
    # (eagerly a concrete scalar index is static, and out of bounds an IndexError:
    # fungrad's documented choice; the NumPy backend is the reference there)
    static = any(np.ndim(a) == 0 and np.asarray(a).dtype.kind in "iu" for a in args)
    eager = numpy_f(*args) if static else f(*map(fnp.asarray, args))
    return got, numpy_f(*args), eager


def _assert_same(got, want, what, exact=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if exact or got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want, err_msg=what)    # (NaN where NaN)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=what)


OPS = ("set", "add", "mul", "min", "max")


def _check_all_ops(f, *args):
    got, on_numpy, eager = _run_compiled(f, *args)
    for op, g, n, e in zip(OPS, got, on_numpy, eager):
        exact = op != "add"            # (NumPy's add_at may sum repeats in another order)
        _assert_same(g, n, f"{op}: numba vs NumPy backend", exact)
        _assert_same(g, e, f"{op}: numba vs eager", exact)


# ----------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------

DTYPES = (np.float64, np.int32, np.int64)


@st.composite
def _values(draw, shape, dtype):
    """Small integers (products do not overflow), or floats with NaN, -0.0 and
    infinities now and then."""
    n = int(np.prod(shape, dtype=np.int64))
    if np.dtype(dtype).kind == "i":
        vals = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
    else:
        vals = draw(st.lists(st.one_of(st.floats(-3, 3, width=64), st.sampled_from(
            [np.nan, -0.0, np.inf, -np.inf])), min_size=n, max_size=n))
    return np.array(vals, dtype).reshape(shape)


def _indices(draw, shape, size, dtype=np.int64):
    """Indices of an axis of ``size``: in bounds, negative, out of bounds, repeated."""
    n = int(np.prod(shape, dtype=np.int64))
    vals = draw(st.lists(st.integers(-size - 3, size + 3), min_size=n, max_size=n))
    return np.array(vals, dtype).reshape(shape)


# ----------------------------------------------------------------------------
# Forms of x.at[index].op(updates)
# ----------------------------------------------------------------------------

def _all(at, u):
    return at.set(u), at.add(u), at.mul(u), at.min(u), at.max(u)


def _vector(x, i, u):           # x[i] with i of shape (5,) into a (6,) array
    return _all(x.at[i], u)


def _row(x, i, u):              # x[i] with a scalar i: a row of a (4, 3) array
    return _all(x.at[i], u)


def _column_of_array(x, i, u):  # x[:, i] (a slice, then an index array)
    return _all(x.at[:, i], u)


def _array_and_int(x, i, u):    # x[i, 1]
    return _all(x.at[i, 1], u)


def _broadcast_arrays(x, i, u):  # x[i[:, None], i[None, :3]]: index arrays broadcast
    return _all(x.at[i[:, None], i[None, :3] % 3], u)


def _separated_arrays(x, i, u):  # x[i, 1:3, j]: the advanced dims lead x[index]
    return _all(x.at[i, 1:3, i + 1], u)


def _reversed_slice(x, i, u):   # x[::-2, i]: a slice with a negative step
    return _all(x.at[::-2, i], u)


def _scalar_update(x, i, u):    # x[i] = u with a scalar u broadcast to x[i]'s shape
    return _all(x.at[i], u[0])


def _clip(x, i, u):             # lax's scatters in mode "clip": indices clamped
    index = (i,)
    return (lax.scatter(x, index, u, mode="clip"), lax.scatter_add(x, index, u, mode="clip"),
            lax.scatter_mul(x, index, u, mode="clip"), lax.scatter_min(x, index, u, mode="clip"),
            lax.scatter_max(x, index, u, mode="clip"))


# (function, operand shape, index shape, size of the indexed axis, updates shape)
FORMS = {
    "vector": (_vector, (6,), (5,), 6, (5,)),
    "row": (_row, (4, 3), (), 4, (3,)),
    "column_of_array": (_column_of_array, (4, 3), (4,), 3, (4, 4)),
    "array_and_int": (_array_and_int, (4, 3), (5,), 4, (5,)),
    "broadcast_arrays": (_broadcast_arrays, (4, 3), (4,), 4, (4, 3)),
    "scalar_update": (_scalar_update, (6,), (5,), 6, (1,)),
    "separated_arrays": (_separated_arrays, (3, 4, 5), (4,), 3, (4, 2)),
    "reversed_slice": (_reversed_slice, (4, 3), (2,), 3, (2, 2)),
    "clip": (_clip, (6,), (5,), 6, (5,)),
}


@st.composite
def _form_inputs(draw, form):
    f, x_shape, i_shape, size, u_shape = FORMS[form]
    dtype = draw(st.sampled_from(DTYPES))
    return (f, draw(_values(x_shape, dtype)), _indices(draw, i_shape, size),
            draw(_values(u_shape, dtype)))


@pytest.mark.parametrize("form", sorted(FORMS))
@settings(max_examples=6)
@given(data=st.data())
def test_scatter_forms_equal_numpy_backend_and_eager(form, data):
    f, x, i, u = data.draw(_form_inputs(form))
    with np.errstate(all="ignore"):
        _check_all_ops(f, x, i, u)


def test_the_scatters_are_loops_in_the_compiled_segment():
    x, i, u = np.zeros((4, 3)), np.int64(2), np.ones(3)
    source = fungrad.jit(_row, backend="numba").lower(x, i, u).source()
    segment = source.split("def fn(")[0]
    assert segment.count(".copy()") == 5 and "for " in segment
    for update in ("np.add(", "np.multiply(", "np.minimum(", "np.maximum("):
        assert update in segment


def test_boolean_scatters():
    """Booleans: ``set`` compiles; add/mul/min/max (NumPy's or/and, numba's
    integers) stay on the NumPy backend, with its results."""
    x, i, u = np.array([True, False, False, True]), np.array([0, 2, 2, 9]), np.ones(4, bool)
    set_ = lambda x, i, u: lax.scatter(x, (i,), u) ^ x
    got, on_numpy, eager = _run_compiled(set_, x, i, u)
    _assert_same(got, on_numpy, "bool set")
    _assert_same(got, eager, "bool set")
    add = lambda x, i, u: lax.scatter_add(x, (i,), u) ^ x
    assert "@numba.njit" not in fungrad.jit(add, backend="numba").lower(x, i, u).source()
    _assert_same(fungrad.jit(add, backend="numba")(x, i, u), add(x, i, u), "bool add")


# ----------------------------------------------------------------------------
# Scatters inside compiled loops and branches (numpyro's NUTS: r_ckpts.at[idx].set(r))
# ----------------------------------------------------------------------------

def _in_fori_loop(x, i, u):
    """Each op applied at every step k, at the index i[k], in a fori_loop."""
    def body(k, xs):
        return tuple(getattr(x.at[i[k]], op)(u[k]) for x, op in zip(xs, OPS))
    return lax.fori_loop(0, i.shape[0], body, (x,) * len(OPS))


def _in_cond(x, i, u):
    """r_ckpts.at[idx].set(r) under lax.cond, as numpyro's NUTS writes it."""
    def branch(op):
        return lambda x: getattr(x.at[i], op)(u)
    return tuple(lax.cond(u[0] > 0, branch(op), lambda x: x, x) for op in OPS)


@settings(max_examples=8)
@given(data=st.data())
def test_scatters_in_fori_loop_equal_numpy_backend(data):
    dtype = data.draw(st.sampled_from((np.float64, np.int64)))
    x = data.draw(_values((5,), dtype))
    i = _indices(data.draw, (4,), 5)
    u = data.draw(_values((4,), dtype))
    with np.errstate(all="ignore"):
        _check_all_ops(_in_fori_loop, x, i, u)
    assert "for " in fungrad.jit(_in_fori_loop, backend="numba").lower(x, i, u).source()


@settings(max_examples=8)
@given(data=st.data())
def test_scatters_in_cond_equal_numpy_backend(data):
    x = data.draw(_values((10, 8), np.float64))
    i = _indices(data.draw, (), 10, np.int32)
    u = data.draw(_values((8,), np.float64))
    with np.errstate(all="ignore"):
        _check_all_ops(_in_cond, x, i, u)


# ----------------------------------------------------------------------------
# Gathers: x[index] in modes "clip" (jnp indexing) and "fill"
# ----------------------------------------------------------------------------

def _gathers(x, i, j):
    return (x[i], x[i, 1], x[::-2, i], x[j], lax.gather(x, (i,), mode="fill"),
            lax.gather(x, (i, i + 1), mode="fill", fill_value=-1),
            lax.gather(x, (slice(None), i), mode="fill"),
            lax.gather(x, (j, j), mode="fill"), lax.gather(x, (i[:, None], i[None, :2] % 3)))


@settings(max_examples=10)
@given(data=st.data())
def test_gathers_equal_numpy_backend_and_eager(data):
    dtype = data.draw(st.sampled_from((np.float64, np.int32, np.bool_)))
    x = data.draw(_values((4, 3), dtype)) if dtype != np.bool_ else \
        np.array(data.draw(st.lists(st.booleans(), min_size=12, max_size=12))).reshape(4, 3)
    i, j = _indices(data.draw, (5,), 4), _indices(data.draw, (), 4, np.int32)
    got, on_numpy, eager = _run_compiled(_gathers, x, i, j)
    for k, (g, n, e) in enumerate(zip(got, on_numpy, eager)):
        _assert_same(g, n, f"gather {k}: numba vs NumPy backend")
        _assert_same(g, e, f"gather {k}: numba vs eager")


# ----------------------------------------------------------------------------
# Dynamic slices (reads x[i] of a traced i, and writes of windows)
# ----------------------------------------------------------------------------

def _windows(x, s, u):
    return (lax.dynamic_slice(x, (s[0], s[1]), (2, 3)),
            lax.dynamic_slice(x, (s[1], s[0]), (3, 1), allow_negative_indices=False),
            lax.dynamic_update_slice(x, u, (s[0], s[1])),
            lax.dynamic_update_slice(x, u, (s[1], s[0]), allow_negative_indices=False),
            lax.dynamic_index_in_dim(x, s[0], 0, keepdims=False) * 2)


@settings(max_examples=10)
@given(data=st.data())
def test_dynamic_slices_equal_numpy_backend(data):
    dtype = data.draw(st.sampled_from((np.float64, np.int32)))
    x = data.draw(_values((4, 5), dtype))
    starts = _indices(data.draw, (2,), 4, np.int32 if dtype == np.int32 else np.int64)
    u = data.draw(_values((2, 3), dtype))
    got, on_numpy, eager = _run_compiled(_windows, x, starts, u)
    for k, (g, n, e) in enumerate(zip(got, on_numpy, eager)):
        _assert_same(g, n, f"window {k}: numba vs NumPy backend")
        _assert_same(g, e, f"window {k}: numba vs eager")
