"""Loop nests of the compiled backend (``interpreters/numba_fusion.py``):
elementwise chains whose operands broadcast, and reductions fused with their
producers and consumers, against eager fungrad (properties: shapes with
size-1, empty and missing axes, 0-d, NaN/inf, non-contiguous and
negative-stride inputs, integer and bool dtypes, keepdims), what the nests
look like, and the model workloads of issue 24 against the NumPy backend.
Skipped only when numba is not installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

numba = pytest.importorskip("numba")

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad.interpreters import numba_backend  # noqa: E402
from tests.test_numba_backend import _close  # noqa: E402


@pytest.fixture(autouse=True)
def _in_memory(monkeypatch):
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")


def numba_jit(f):
    return fungrad.jit(f, backend="numba")


def _close_reduced(got, want, terms, what):
    """Reductions add in another order than NumPy's pairwise sums: within
    ``terms`` ulps of the largest magnitude; NaN and infinities where they are."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    eps = np.finfo(got.dtype).eps
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)],
                                  want[~finite & ~np.isnan(want)], err_msg=what)
    scale = np.max(np.abs(want[finite]), initial=1.0)
    np.testing.assert_allclose(got[finite], want[finite], rtol=4 * terms * eps,
                               atol=4 * terms * eps * scale, err_msg=what)


# ----------------------------------------------------------------------------
# Inputs: values, special values, memory layouts
# ----------------------------------------------------------------------------

def _values(rng, shape, dtype, specials):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, size=shape).astype(dtype)
    x = rng.normal(size=shape).astype(dtype)
    if specials and x.size:
        flat = x.reshape(-1)
        picks = rng.integers(0, x.size, size=min(3, x.size))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf], size=len(picks))
    return x


def _laid_out(x, layout):
    """``x``'s values in another memory layout (the nest reads any strides)."""
    if x.ndim == 0 or layout == "c":
        return x
    if layout == "reversed":                       # negative strides
        return np.flip(np.flip(x).copy())
    if layout == "fortran":
        return np.asfortranarray(x)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)   # a step of 2
    wide[..., ::2] = x
    return wide[..., ::2]


@st.composite
def _broadcast_operands(draw, dtypes):
    """An output shape and three operands broadcasting to it NumPy's way
    (leading axes dropped, axes of size 1)."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    specials = draw(st.booleans())
    layout = draw(st.sampled_from(["c", "reversed", "fortran", "strided"]))
    operands = []
    for k in range(3):
        dropped = draw(st.integers(0, len(shape))) if k else 0   # (one has the full rank)
        own = tuple(1 if draw(st.booleans()) and k else d for d in shape[dropped:])
        operands.append(_laid_out(_values(rng, own, dtype, specials), layout))
    return operands


# ----------------------------------------------------------------------------
# Broadcasting chains
# ----------------------------------------------------------------------------

def _float_chain(a, b, c):
    t = fnp.where(a > b, a * b - c, fnp.maximum(a, c) + 1.0)
    return t * fnp.exp(-fnp.abs(c)) + fnp.tanh(b), t - a


def _int_chain(a, b, c):
    return fnp.where(a > b, a * b - c, fnp.maximum(a, c) + 1), fnp.minimum(a, b) * 3


def _bool_chain(a, b, c):
    return (a & b) | ~c, fnp.where(c, a, b) ^ a


@settings(max_examples=12)
@given(_broadcast_operands([np.float64, np.float32]))
def test_broadcasting_float_chain_equals_eager(operands):
    with np.errstate(all="ignore"):
        want = _float_chain(*operands)
        got = numba_jit(_float_chain)(*operands)
    for k, (g, w) in enumerate(zip(got, want)):
        _close(g, w, f"output {k}")


@settings(max_examples=8)
@given(_broadcast_operands([np.int32, np.int64]))
def test_broadcasting_integer_chain_equals_eager(operands):
    for g, w in zip(numba_jit(_int_chain)(*operands), _int_chain(*operands)):
        _close(g, w, "int chain")


@settings(max_examples=6)
@given(_broadcast_operands([np.bool_]))
def test_broadcasting_bool_chain_equals_eager(operands):
    for g, w in zip(numba_jit(_bool_chain)(*operands), _bool_chain(*operands)):
        _close(g, w, "bool chain")


def test_zero_d_operands_and_results():
    f = lambda a, b: (a * b + fnp.sin(a), fnp.sum(a * b))
    a, b = np.float64(0.5), np.array([[1.0, -2.0, np.nan]])
    for g, w in zip(numba_jit(f)(a, b), f(a, b)):
        _close(g, w, "0-d")
    g = lambda a: fnp.exp(a) * 2.0 - a
    _close(numba_jit(g)(np.array(1.5)), g(np.array(1.5)), "0-d chain")


# ----------------------------------------------------------------------------
# Reductions fused with their producers and consumers
# ----------------------------------------------------------------------------

def _softmax(x):
    e = fnp.exp(x - fungrad.lax.stop_gradient(fnp.max(x, axis=-1, keepdims=True)))
    return e / fnp.sum(e, axis=-1, keepdims=True)


def _layer_norm(x):
    xc = x - fnp.mean(x, axis=-1, keepdims=True)
    return xc / fnp.sqrt(fnp.mean(xc * xc, axis=-1, keepdims=True) + 1e-5)


REDUCTIONS = {
    "softmax": _softmax,
    "layer norm": _layer_norm,
    "leading sum": lambda x: fnp.sum(x * 2.0 + 1.0, axis=0),
    "sum keepdims": lambda x: fnp.sum(fnp.abs(x), axis=-1, keepdims=True) * x,
    "total": lambda x: fnp.sum(x * x),
    "max": lambda x: fnp.max(x * 3.0, axis=-1),
    "min keepdims": lambda x: x - fnp.min(x, axis=0, keepdims=True),
    "middle max": lambda x: fnp.max(fnp.tanh(x), axis=(0,) if x.ndim < 3 else (1,)),
}


@settings(max_examples=20)
@given(st.sampled_from(sorted(REDUCTIONS)),
       st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
       st.sampled_from([np.float64, np.float32]), st.integers(0, 2**32 - 1),
       st.booleans(), st.sampled_from(["c", "reversed", "fortran", "strided"]))
def test_fused_reductions_equal_eager(name, shape, dtype, seed, specials, layout):
    f = REDUCTIONS[name]
    if 0 in shape and name in ("max", "min keepdims", "middle max", "softmax"):
        shape = tuple(d or 1 for d in shape)     # (max/min of nothing is an error)
    x = _laid_out(_values(np.random.default_rng(seed), shape, dtype, specials), layout)
    with np.errstate(all="ignore"):
        want = f(x)
        got = numba_jit(f)(x)
    _close_reduced(got, want, max(x.size, 1), f"{name} of {shape} {np.dtype(dtype).name}")


def test_max_propagates_nan_wherever_it_is():
    f = lambda x: fnp.max(x + 0.0, axis=-1)
    x = np.array([[np.nan, 1.0, 2.0], [1.0, np.nan, 0.5], [1.0, 2.0, np.nan],
                  [-np.inf, -np.inf, -np.inf]])
    _close(numba_jit(f)(x), f(x), "max with NaN")


# ----------------------------------------------------------------------------
# What the nests look like
# ----------------------------------------------------------------------------

def _segments(f, *args) -> str:
    source = numba_jit(f).lower(*args).source()
    return source[:source.index("\ndef fn(")]


def test_softmax_is_one_nest_without_temporaries():
    """max, subtract, exp, sum and divide: one segment, loops over the rows with
    the row's reductions in registers: no array calls, broadcasts or copies."""
    src = _segments(_softmax, np.ones((3, 4, 5)))
    assert src.count("@numba.njit") == 1
    for array_code in ("np.sum(", "np.max(", "np.broadcast_to", "np.where", "ascontiguousarray",
                       "np.full("):
        assert array_code not in src, array_code
    # the result, and the exponentials, kept for the divide (not computed twice)
    assert src.count("np.empty(") == 2


def test_broadcast_operands_are_read_in_place():
    src = _segments(lambda a, b: fnp.exp(a - b) * 2.0, np.ones((4, 5)), np.ones((4, 1)))
    assert "np.broadcast_to" not in src and "ascontiguousarray" not in src
    assert "[" in src and ", 0]" in src           # b read as b[i, 0]


def test_integer_pow_multiplies_in_compiled_code():
    src = _segments(lambda x: fnp.tanh(x ** 3 + x ** -2), np.ones(4))
    assert "np.power" not in src


# ----------------------------------------------------------------------------
# The model workloads (issue 24), small: the compiled backend against jit
# ----------------------------------------------------------------------------

def _both_backends(loss, params):
    vg = fungrad.value_and_grad(loss)
    got, want = numba_jit(vg)(params), fungrad.jit(vg)(params)
    for g, w in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


def test_transformer_block_equals_numpy_backend():
    from benchmarks import model_workloads as mw
    params, x, target = mw.transformer_setup(batch=2, seq=8, width=16)
    _both_backends(lambda p: mw._transformer_loss(fnp, fungrad.lax.stop_gradient, p, x,
                                                  target), params)


def test_cnn_step_equals_numpy_backend():
    from benchmarks import model_workloads as mw
    params, x, onehot = mw.cnn_setup(batch=2)
    _both_backends(lambda p: mw._cnn_loss(fnp, fungrad.lax, fungrad.lax.stop_gradient, p, x,
                                          onehot), params)


def test_large_top_level_tanh_is_a_numpy_call():
    """NumPy's SIMD tanh/exp beat numba's per-element C calls on large arrays
    (numba_backend.NUMPY_FASTER): the nest stops there and the driver calls NumPy."""
    f = lambda x: fnp.tanh(x * 2.0) * x + 1.0
    x = np.linspace(-3.0, 3.0, numba_backend.NUMPY_FASTER_SIZE)
    source = numba_jit(f).lower(x).source()
    driver = source[source.index("\ndef fn("):]
    assert "np.tanh(" in driver and "np.tanh(" not in source[:source.index("\ndef fn(")]
    _close(numba_jit(f)(x), f(x), "tanh between segments")


# ----------------------------------------------------------------------------
# NumPy's tanh/exp called from compiled loops (numba_backend.NUMPY_FASTER)
# ----------------------------------------------------------------------------

def _scan_cell(W, h0, xs):
    """An RNN-like scan whose body has tanh and exp on whole per-step arrays
    (one of them of a transposed view) and log inside a fused nest."""
    def step(h, x):
        z = h @ W + x
        h = fnp.tanh(z) + 0.25 * fnp.exp(-(z * z)).T.T
        return h, fnp.log(1.0 + h * h) + fnp.exp(x.T).T
    h, ys = fungrad.lax.scan(step, h0, xs)
    return fnp.sum(h * h) + fnp.mean(ys)


def _scan_cell_inputs(rng, rows, cols, steps, dtype):
    W = (rng.normal(size=(cols, cols)) / np.sqrt(cols)).astype(dtype)
    h0 = rng.normal(size=(rows, cols)).astype(dtype)
    xs = rng.normal(size=(steps, rows, cols)).astype(dtype)
    return W, h0, xs


# (4 examples: each compiles a new numba program, ~2.7 s on CI's 2 cores)
@settings(max_examples=4, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 3),
       st.sampled_from([np.float64, np.float32]), st.integers(0, 2**32 - 1))
def test_numpy_calls_in_scan_bodies_equal_numpy_backend(rows, cols, steps, dtype, seed):
    """The loss and its gradient, against the NumPy backend, on both sides of
    the size at which tanh/exp become NumPy calls (lowered here to 8 elements
    so that small shapes compile quickly): the calls are in the compiled loop
    exactly when the arrays are that large."""
    W, h0, xs = _scan_cell_inputs(np.random.default_rng(seed), rows, cols, steps, dtype)
    f = fungrad.value_and_grad(_scan_cell, argnums=(0, 1, 2))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numba_backend, "NUMPY_FASTER_SIZE", 8)
        source = numba_jit(f).lower(W, h0, xs).source()
        got = numba_jit(f)(W, h0, xs)
    segments = source[:source.index("\ndef fn(")]
    assert ("numba.objmode" in segments) == (rows * cols >= 8), segments
    want = fungrad.jit(f)(W, h0, xs)
    what = f"scan cell {rows}x{cols}, {steps} steps, {np.dtype(dtype).name}"
    for g, w in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        _close_reduced(g, w, 4 * (rows + cols + steps), what)


def test_numpy_calls_in_while_and_cond_bodies_equal_numpy_backend(monkeypatch):
    monkeypatch.setattr(numba_backend, "NUMPY_FASTER_SIZE", 8)

    def f(x):
        def body(k, c):
            c = fungrad.lax.cond(fnp.sum(c) > 0.0, lambda v: fnp.exp(-v * v), fnp.tanh, c)
            return c * 1.5 - 0.5
        return fungrad.lax.while_loop(lambda kc: kc[0] < 5, lambda kc: (kc[0] + 1, body(*kc)),
                                      (0, x))[1]
    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    source = numba_jit(f).lower(x).source()
    assert source.count("numba.objmode") == 2 and "# NumPy" not in source
    _close(numba_jit(f)(x), fungrad.jit(f)(x), "fori_loop with cond")


def test_rnn_grad_equals_numpy_backend():
    """The benchmark's RNN (issue 23) at its sizes (per-step tanh on 32 x 64:
    NumPy calls in the compiled scan), a few steps, both the scan and the
    unrolled loop."""
    from benchmarks import workloads
    W, U, xs = workloads._rnn_setup(steps=4)
    for loss in (workloads._rnn_loss, workloads._rnn_loop_loss):
        g = fungrad.grad(loss, argnums=(0, 1))
        source = numba_jit(g).lower(W, U, xs).source()
        assert "np.tanh(" in source and "np.tanh(o_s" not in source, loss.__name__
        for got, want in zip(numba_jit(g)(W, U, xs), fungrad.jit(g)(W, U, xs)):
            _close(got, want, loss.__name__)
        for got, want in zip(numba_jit(g)(W, U, xs), workloads._rnn_grad_numpy(W, U, xs)):
            _close_reduced(got, want, 100, f"{loss.__name__} against hand-written BPTT")


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_carry_history_equals_numpy_backend(reverse):
    """A per-step output that is the incoming carry lives in a history of one
    slot more than the steps (lax/control_flow/scan.py): the compiled loop
    copies each new carry there."""
    from tests.test_control_flow import _scan_carry_history
    rng = np.random.default_rng(3)
    c0, W, xs = rng.normal(size=3), rng.normal(size=(3, 3)) / 2, rng.normal(size=(5, 3))
    for by_ufunc in (True, False):
        f = lambda c0, W, xs: _scan_carry_history(c0, W, xs, reverse, by_ufunc)
        assert "np.empty((6, 3)" in numba_jit(f).lower(c0, W, xs).source()
        for got, want in zip(fungrad.tree_util.tree_leaves(numba_jit(f)(c0, W, xs)),
                             fungrad.tree_util.tree_leaves(fungrad.jit(f)(c0, W, xs))):
            _close(got, want, f"carry history, reverse={reverse}, by_ufunc={by_ufunc}")


# ----------------------------------------------------------------------------
# Cheap values recomputed in the segment that reads them (numba_remat)
# ----------------------------------------------------------------------------

def _segment_results(source: str) -> list:
    """The names each segment call of the driver returns, call by call."""
    driver = source[source.index("\ndef fn("):]
    return [[name for name in line.split("=")[0].strip(" ()").replace(" ", "").split(",")
             if name]
            for line in driver.splitlines() if "# compiled by numba" in line and "=" in line]


def _without_remat(monkeypatch, f, *args) -> str:
    from fungrad.interpreters import numba_remat
    with monkeypatch.context() as m:
        m.setattr(numba_remat, "remat_cheap_values", lambda *a: None)
        # (a new function: jit's cache has f's code with the recomputation)
        return numba_jit(lambda *xs: f(*xs)).lower(*args).source()


def _across_a_dot(a, b):
    # (a batched matmul: a NumPy call between two segments)
    t1, t2, t3 = a * 2.0, a * a, a - b
    m = t1 @ fnp.swapaxes(t3, -1, -2)
    return (m + t1) * t2 - t3


@settings(max_examples=10)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans(),
       st.sampled_from(["c", "reversed", "fortran", "strided"]))
def test_values_recomputed_across_a_dot_equal_eager(n, seed, specials, layout):
    rng = np.random.default_rng(seed)
    a, b = (_laid_out(_values(rng, (2, n, n), np.float64, specials), layout)
            for _ in range(2))
    with np.errstate(all="ignore"):
        want = _across_a_dot(a, b)
        got = numba_jit(_across_a_dot)(a, b)
    _close(got, want, "recomputed across a dot")


def test_cheap_values_are_recomputed_not_stored(monkeypatch):
    """The segment after the dot reads ``a`` and ``b`` again instead of three
    stored products; without the recomputation the first segment returns them."""
    a = b = np.ones((2, 3, 3))
    with_remat = numba_jit(_across_a_dot).lower(a, b).source()
    without = _without_remat(monkeypatch, _across_a_dot, a, b)
    assert sum(map(len, _segment_results(with_remat))) < \
        sum(map(len, _segment_results(without)))


def _gelu_mlp(params, x):
    w1, b1, w2 = params
    u = x @ w1 + b1
    f = 0.5 * u * (1.0 + fnp.tanh(0.7978845608028654 * (u + 0.044715 * u ** 3)))
    return fnp.sum((f @ w2) ** 2)


def test_gelu_backward_recomputes_from_the_dense_output(monkeypatch):
    """A tanh-GELU between two GEMMs, large enough for tanh to be a NumPy call:
    the nest before tanh stores only tanh's argument (not 0.5 u, 3 u**2), the
    backward nest recomputes them from the GEMM's output and tanh's result,
    and the gradient equals the NumPy backend's."""
    rng = np.random.default_rng(0)
    params = [rng.normal(size=(8, 16)) / 3, rng.normal(size=16), rng.normal(size=(16, 4)) / 4]
    # (sequences of rows, as a transformer's: the dense layers are NumPy
    # matmuls between segments)
    x = rng.normal(size=(5, numba_backend.NUMPY_FASTER_SIZE // 80 + 1, 8))
    vg = fungrad.value_and_grad(_gelu_mlp)
    source = numba_jit(vg).lower(params, x).source()
    driver = source[source.index("\ndef fn("):]
    tanh_line = next(line for line in driver.splitlines() if "np.tanh(" in line)
    tanh_arg = tanh_line.split("np.tanh(")[1].split(")")[0]
    before_tanh = driver[:driver.index(tanh_line)]
    assert [tanh_arg] in _segment_results("\ndef fn(" + before_tanh.split("\ndef fn(", 1)[1])
    assert sum(map(len, _segment_results(source))) < \
        sum(map(len, _segment_results(_without_remat(monkeypatch, vg, params, x))))
    got, want = numba_jit(vg)(params, x), fungrad.jit(vg)(params, x)
    for g, w in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------
# Reshapes that add or drop size-1 axes are views in compiled array code
# ----------------------------------------------------------------------------

def test_unit_axes_index():
    from fungrad.lax.structural import _unit_axes_index
    assert _unit_axes_index((8, 64, 1, 4, 32), (8, 64, 4, 32)) == [":", ":", "0", ":", ":"]
    assert _unit_axes_index((8, 4, 32), (8, 1, 4, 32)) == [":", "None", ":", ":"]
    assert _unit_axes_index((1, 3), (3, 1)) == ["0", ":", "None"]
    assert _unit_axes_index((2, 3), (3, 2)) is None
    assert _unit_axes_index((6,), (2, 3)) is None


def _unit_reshapes(x):
    # a strided slice, its unit axis dropped and put back elsewhere, then
    # array code (concatenate): the reshapes are the numba lowering's, not
    # index maps of a loop nest
    n, _, m = x.shape
    r = fnp.reshape(x[:, 1:2, ::2], (n, (m + 1) // 2))
    s = fnp.reshape(r, (n, 1, (m + 1) // 2))
    return fnp.concatenate([s, fnp.reshape(x[:, 0:1, ::2], (n, 1, (m + 1) // 2))], axis=1)


@settings(max_examples=8)
@given(st.integers(1, 5), st.integers(2, 4), st.integers(1, 7),
       st.sampled_from(["c", "reversed", "fortran", "strided"]))
def test_unit_axis_reshapes_of_strided_views_equal_eager(n, k, m, layout):
    x = _laid_out(np.arange(n * k * m, dtype=np.float64).reshape(n, k, m), layout)
    got = numba_jit(_unit_reshapes)(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_unit_reshapes(x)))


def test_unit_axis_reshapes_are_views_not_copies():
    src = _segments(_unit_reshapes, np.ones((3, 2, 5)))
    assert "None" in src and ", 0, :]" in src
    assert "ascontiguousarray" not in src.split("np.concatenate")[0]
