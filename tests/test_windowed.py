"""Focused tests of fungrad.lax.windowed (reduce_window and its primitives).

The generic runner (tests/test_generic.py, cases in tests/cases/windowed.py)
covers values, staging, jit, check_grads and vmap of fixed configurations;
here: random configurations against the loop reference, the transpose
identity of reduce_window_sum, JAX's first-maximum convention on ties,
second derivatives, transformations, export and errors.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as jnp
from fungrad import lax
from fungrad.lax.windowed import (reduce_window, reduce_window_max, reduce_window_min,
                                  reduce_window_sum, window_gather_p, window_scatter_add_p)
from fungrad.test_util import check_grads
from tests.cases.windowed import (ref_reduce_window, ref_select_index, ref_window_gather,
                                  ref_window_scatter_add)

_MONOID = {"sum": (lax.add, 0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


def _same_pads(shape, window, strides, wdil, lower=False):
    pads = []
    for n, k, s, d in zip(shape, window, strides, wdil):
        kd = (k - 1) * d + 1
        total = max((-(-n // s) - 1) * s + kd - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((big, small) if lower else (small, big))
    return pads


@st.composite
def configs(draw, max_rank=2):
    rank = draw(st.integers(1, max_rank))
    ints = lambda lo, hi: tuple(draw(st.integers(lo, hi)) for _ in range(rank))
    shape, window, strides = ints(0, 5), ints(1, 3), ints(1, 3)
    base, wdil = ints(1, 2), ints(1, 2)
    padding = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER", "pairs"]))
    if padding == "pairs":
        pads = [tuple(draw(st.integers(-1, 2)) for _ in range(2)) for _ in range(rank)]
        padding = pads
    elif padding == "VALID":
        pads = [(0, 0)] * rank
    else:
        pads = _same_pads(shape, window, strides, wdil, lower=padding == "SAME_LOWER")
    return shape, window, strides, padding, pads, base, wdil


@settings(max_examples=60, deadline=None)
@given(configs(), st.sampled_from(["sum", "max", "min"]), st.sampled_from(["float64", "int32"]),
       st.integers(0, 2**31 - 1))
def test_values_against_loop_reference(config, kind, dtype, seed):
    shape, window, strides, padding, pads, base, wdil = config
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=shape).astype(dtype)     # small ints: ties included
    comp, init = _MONOID[kind]
    init = init if dtype == "float64" or kind == "sum" else (
        np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max)
    f = lambda x: reduce_window(x, np.asarray(init, dtype), comp, window, strides, padding,
                                base, wdil)
    want = ref_reduce_window(kind, x, window, strides, pads, base, wdil)
    for got in (f(x), fungrad.jit(f)(x)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(configs(max_rank=3), st.integers(0, 2**31 - 1))
def test_sum_transpose_identity(config, seed):
    # <A x, c> == <x, A^T c> for A = reduce_window_sum, A^T from vjp
    shape, window, strides, padding, _, base, wdil = config
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    f = lambda x: reduce_window_sum(x, window, strides, padding, base, wdil)
    y, pullback = fungrad.vjp(f, x)
    c = rng.normal(size=y.shape)
    (xt,) = pullback(c)
    assert xt.shape == x.shape
    np.testing.assert_allclose(np.sum(y * c), np.sum(x * xt), rtol=1e-10, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(configs(max_rank=3), st.integers(0, 2**31 - 1))
def test_tap_gather_and_scatter_against_loops(config, seed):
    # the max-pool tangent (window_gather) and gradient (window_scatter_add) at
    # random window positions, overlapping, disjoint, padded and dilated windows
    shape, window, strides, _, pads, base, wdil = config
    rng = np.random.default_rng(seed)
    t = rng.normal(size=shape)
    out_shape = ref_reduce_window("sum", t, window, strides, pads, base, wdil).shape
    idx = rng.integers(0, int(np.prod(window)), size=out_shape)
    c = rng.normal(size=out_shape)
    params = dict(window_dimensions=tuple(window), window_strides=tuple(strides),
                  padding=tuple(map(tuple, pads)), base_dilation=tuple(base),
                  window_dilation=tuple(wdil))
    want_g = ref_window_gather(t, idx, window, strides, pads, base, wdil)
    want_s = ref_window_scatter_add(c, idx, shape, window, strides, pads, base, wdil)
    gather = lambda t: window_gather_p.bind(t, idx, **params)
    scatter = lambda c: window_scatter_add_p.bind(c, idx, operand_shape=tuple(shape), **params)
    for g, s in ((gather(t), scatter(c)), (fungrad.jit(gather)(t), fungrad.jit(scatter)(c))):
        assert g.shape == want_g.shape and s.shape == want_s.shape
        np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s, want_s, rtol=1e-12, atol=1e-12)
    # each is the other's transpose
    (ct,) = fungrad.vjp(gather, t)[1](c)
    np.testing.assert_allclose(ct, want_s, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(configs(max_rank=2), st.sampled_from(["max", "min"]), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_select_index_tap_by_tap_is_first_extremum(config, kind, with_nan, seed):
    # the tap-by-tap search against argmax/argmin over the (windows, taps) copy:
    # ties (small ints) and NaN (taken first, as argmax does) included
    from fungrad.lax.kernels import window as kernel
    shape, window, strides, _, pads, base, wdil = config
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, size=shape).astype(float)
    if with_nan and x.size:
        x.flat[rng.integers(0, x.size)] = np.nan
    params = dict(kind=kind, window_dimensions=tuple(window), window_strides=tuple(strides),
                  padding=tuple(map(tuple, pads)), base_dilation=tuple(base),
                  window_dilation=tuple(wdil))
    got = kernel.select_index(x, **params)
    # given the windows' extremum (a max-pool's JVP passes reduce_window's result)
    extremum = kernel.reduce_window(x, **params)
    np.testing.assert_array_equal(kernel.select_index(x, extremum, **params), got)
    win, out_shape = kernel._windows(x, kind, window_dimensions=tuple(window),
                                     window_strides=tuple(strides),
                                     padding=tuple(map(tuple, pads)),
                                     base_dilation=tuple(base), window_dilation=tuple(wdil))
    if win is None:
        assert got.shape == out_shape and not got.any()
        return
    pick = np.argmax if kind == "max" else np.argmin
    np.testing.assert_array_equal(got, pick(win.reshape(out_shape + (-1,)), axis=-1))


def test_select_index_with_extremum_under_vmap_and_bad_extremum():
    from fungrad.lax.windowed import window_select_index_p
    params = dict(kind="max", window_dimensions=(2, 2), window_strides=(2, 1),
                  padding=((0, 0), (1, 0)), base_dilation=(1, 1), window_dilation=(1, 1))
    pool = lambda x: reduce_window(x, -np.inf, lax.max, (2, 2), (2, 1), ((0, 0), (1, 0)))
    xs = np.random.default_rng(1).integers(0, 3, (3, 4, 5)).astype(float)
    both = lambda x: window_select_index_p.bind(x, pool(x), **params)
    want = np.stack([window_select_index_p.bind(x, **params) for x in xs])
    np.testing.assert_array_equal(fungrad.vmap(both)(xs), want)
    np.testing.assert_array_equal(fungrad.vmap(both, in_axes=1)(xs.transpose(1, 0, 2)), want)
    staged = fungrad.jit(lambda x, e: window_select_index_p.bind(x, e, **params))
    with pytest.raises(TypeError, match="optional second operand is the windows' max"):
        staged(xs[0], np.zeros((2, 5), np.float32))


def test_max_pool_gradient_of_infinite_cotangent_stays_at_the_maximum():
    # an inf/nan cotangent lands on each window's maximum only (0 elsewhere, as
    # XLA's select_and_scatter_add), for disjoint and overlapping windows
    x = np.array([[1.0, 3.0, 2.0, 0.0], [0.0, 1.0, 5.0, 4.0]])
    for window, strides in (((1, 2), (1, 2)), ((1, 2), (1, 1))):
        pool = lambda x: reduce_window(x, -np.inf, lax.max, window, strides, "VALID")
        y, pullback = fungrad.vjp(pool, x)
        ct = np.full(y.shape, np.inf)
        ct[0, 0] = np.nan
        (g,) = pullback(ct)
        want = ref_window_scatter_add(ct, ref_select_index("max", x, window, strides,
                                                           [(0, 0), (0, 0)]),
                                      x.shape, window, strides, [(0, 0), (0, 0)], (1, 1),
                                      (1, 1))
        np.testing.assert_array_equal(g, want)


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_scatter_add_of_tiling_windows_writes_every_element(k0, k1, m, extra, inf_ct, seed):
    # windows that tile the operand (stride == window) skip the zero fill: every
    # element must still be written (the chosen tap's cotangent, 0 elsewhere);
    # with ``extra`` rows/columns the windows leave a remainder, which stays 0
    from fungrad.lax.kernels import window as kernel
    rng = np.random.default_rng(seed)
    shape = (k0 * m + extra, k1 * m)
    x = rng.integers(0, 3, shape).astype(float)             # ties in most windows
    window = strides = (k0, k1)
    pads = [(0, 0), (0, 0)]
    idx = kernel.select_index(x, kind="max", window_dimensions=window, window_strides=strides,
                              padding=pads, base_dilation=(1, 1), window_dilation=(1, 1))
    ct = rng.standard_normal(idx.shape)
    if inf_ct:
        ct.flat[0] = np.inf
    for _ in range(2):           # reused memory must not leak into the result
        got = kernel.scatter_add_taps(ct, idx, operand_shape=shape, window_dimensions=window,
                                      window_strides=strides, padding=pads,
                                      base_dilation=(1, 1), window_dilation=(1, 1))
        want = ref_window_scatter_add(ct, ref_select_index("max", x, window, strides, pads),
                                      shape, window, strides, pads, (1, 1), (1, 1))
        np.testing.assert_array_equal(got, want)
        np.full(shape, np.nan)   # freed at once: NaN-filled memory for the next np.empty


def test_tap_primitives_reject_bad_index():
    params = dict(window_dimensions=(2,), window_strides=(2,), padding=((0, 0),),
                  base_dilation=(1,), window_dilation=(1,))
    staged = lambda prim, **kw: fungrad.jit(lambda a, i: prim.bind(a, i, **kw, **params))
    with pytest.raises(TypeError, match="integer"):
        staged(window_gather_p)(np.ones(4), np.zeros(2))
    with pytest.raises(TypeError, match=r"shape \(3,\).*shape \(2,\)"):
        staged(window_gather_p)(np.ones(4), np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="operand of shape"):
        staged(window_scatter_add_p, operand_shape=(6,))(np.ones(2), np.zeros(2, np.int64))


def _first_extreme_grad(kind, x, window, strides, pads, base=None, wdil=None):
    """d sum(pool(x)) / dx under the first-max convention, from the loop reference."""
    nd = x.ndim
    base, wdil = base or (1,) * nd, wdil or (1,) * nd
    idx = ref_select_index(kind, x, window, strides, pads, base, wdil)
    grad = np.zeros_like(x)
    for pos in np.ndindex(idx.shape):
        tap = np.unravel_index(idx[pos], window)
        src = [p * s + t * d - lo for p, s, t, d, (lo, _) in zip(pos, strides, tap, wdil, pads)]
        if all(j >= 0 and j % b == 0 and j // b < n for j, b, n in zip(src, base, x.shape)):
            grad[tuple(j // b for j, b in zip(src, base))] += 1
    return grad


def test_max_pool_gradient_goes_to_first_maximum():
    pool = lambda x: reduce_window(x, -np.inf, lax.max, (2,), (1,), "VALID")
    np.testing.assert_array_equal(fungrad.grad(lambda x: pool(x).sum())(np.ones(3)),
                                  [1.0, 1.0, 0.0])
    x = np.ones((4, 4))          # non-overlapping 2x2: all of a window's gradient to its corner
    g = fungrad.grad(lambda x: reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2),
                                             "VALID").sum())(x)
    np.testing.assert_array_equal(g, np.kron(np.ones((2, 2)), [[1.0, 0.0], [0.0, 0.0]]))
    # unlike reduce_max, which splits ties equally
    assert fungrad.grad(lambda x: lax.reduce_max(x, (0,)))(np.ones(2)).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("config", [
    ((3, 3), (1, 1), [(1, 1), (1, 1)], None, None),
    ((2, 3), (2, 1), [(0, 1), (1, 0)], (1, 2), (2, 1)),
    ((3, 2), (1, 2), [(0, 0), (0, 0)], None, (1, 2)),
])
def test_tied_gradients_match_select_and_scatter(kind, config):
    window, strides, pads, base, wdil = config
    x = np.random.default_rng(0).integers(0, 2, size=(5, 6)).astype(float)   # many ties
    pool = reduce_window_max if kind == "max" else reduce_window_min
    f = lambda x: pool(x, window, strides, pads, base, wdil)
    want = _first_extreme_grad(kind, x, window, strides, pads, base, wdil)
    np.testing.assert_array_equal(fungrad.grad(lambda x: f(x).sum())(x), want)
    # forward mode: the tangent of each output is the tangent at its selected input
    _, t_out = fungrad.jvp(f, (x,), (np.arange(x.size, dtype=float).reshape(x.shape),))
    np.testing.assert_array_equal(np.sum(t_out), np.sum(want * np.arange(x.size).reshape(x.shape)))


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_second_order_away_from_ties(kind):
    rng = np.random.default_rng(1)
    x = rng.permutation(24).reshape(4, 6) + rng.uniform(-0.2, 0.2, (4, 6))
    comp, init = _MONOID[kind]
    f = lambda x: jnp.sin(reduce_window(x, init, comp, (2, 3), (2, 2), [(1, 0), (0, 1)],
                                        (1, 2), (1, 2)))
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    h = fungrad.hessian(lambda x: reduce_window_max(x, (2, 2), (1, 1), "SAME").sum())(x)
    np.testing.assert_array_equal(h, np.zeros((4, 6, 4, 6)))


def test_jit_and_vmap():
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(3, 5, 4))
    pool = lambda x: reduce_window_max(x, (2, 2), (2, 1), "SAME", None, (1, 2))
    grad = fungrad.grad(lambda x: pool(x).sum())
    want = np.stack([pool(x) for x in xs])
    want_grad = np.stack([grad(x) for x in xs])
    np.testing.assert_array_equal(fungrad.vmap(pool)(xs), want)
    np.testing.assert_array_equal(fungrad.vmap(pool, in_axes=2, out_axes=0)(
        np.moveaxis(xs, 0, 2)), want)
    np.testing.assert_array_equal(fungrad.vmap(grad)(xs), want_grad)
    np.testing.assert_array_equal(fungrad.jit(fungrad.vmap(grad))(xs), want_grad)
    np.testing.assert_array_equal(fungrad.jit(grad)(xs[0]), want_grad[0])
    s = lambda x: reduce_window_sum(x, (3,), (2,), [(2, 1)], (2,))
    sg = fungrad.grad(lambda x: (s(x) ** 2).sum())
    np.testing.assert_allclose(fungrad.vmap(sg, in_axes=1)(xs[:, :, 0].T),
                               np.stack([sg(x) for x in xs[:, :, 0]]), rtol=1e-12)


def test_init_values_and_computations():
    x = np.array([[1.0, -3.0, 2.0], [-4.0, -5.0, 0.5]])
    ref = ref_reduce_window("max", x, (1, 2), (1, 1), [(0, 0), (0, 0)])
    got = reduce_window(x, 0.0, lax.max, (1, 2), (1, 1), "VALID")      # non-identity init
    np.testing.assert_array_equal(got, np.maximum(ref, 0.0))
    jitted = fungrad.jit(lambda x, i: reduce_window(x, i, jnp.maximum, (1, 2), (1, 1), "VALID"))
    np.testing.assert_array_equal(jitted(x, np.float64(-1.0)), np.maximum(ref, -1.0))
    for comp in (lambda a, b: a + b, lambda a, b: lax.add(b, a), jnp.add):
        np.testing.assert_array_equal(
            reduce_window(x, 0.0, comp, (2, 2), (1, 1), "VALID"),
            ref_reduce_window("sum", x, (2, 2), (1, 1), [(0, 0), (0, 0)]))
    np.testing.assert_array_equal(
        reduce_window(x, np.inf, lambda a, b: jnp.minimum(a, b), (2, 1), (1, 1), "VALID"),
        x.min(0, keepdims=True))
    xi = np.array([3, 1, 4, 1, 5], np.int32)
    out = reduce_window(xi, np.iinfo(np.int32).min, lax.max, (3,), (1,), "SAME")
    assert out.dtype == np.int32 and out.tolist() == [3, 4, 4, 5, 5]


def test_bad_inputs():
    x = np.zeros((3, 4))
    with pytest.raises(NotImplementedError, match="add, max and min"):
        reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="add, max and min"):
        reduce_window(x, 0.0, lambda a, b: a * b + a, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="init_value 0"):
        reduce_window(x, 1.0, lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="one operand array"):
        reduce_window((x, x), (0.0, 0.0), lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(ValueError, match="window_dimensions must have one entry"):
        reduce_window(x, 0.0, lax.add, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="window_strides must be positive"):
        reduce_window_sum(x, (2, 2), (0, 1))
    with pytest.raises(ValueError, match="unknown padding 'FULL'"):
        reduce_window_max(x, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match="one \\(low, high\\) pair per"):
        reduce_window_min(x, (2, 2), (1, 1), [(0, 0)])
    with pytest.raises(TypeError, match="padding must be"):
        reduce_window_min(x, (2, 2), (1, 1), [0, 1])
    with pytest.raises(TypeError, match="init_value must be a scalar"):
        reduce_window(x, np.zeros(2), lax.max, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="init_value dtype int64"):
        reduce_window(x, np.int64(0), lax.max, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="not a value of the operand dtype int64"):
        reduce_window(np.arange(4), -np.inf, lax.max, (2,), (1,), "VALID")
    with pytest.raises(TypeError, match="reduce_window_max does not support .*complex128"):
        reduce_window_max(x + 1j, (2, 2))
    with pytest.raises(TypeError, match="int64"):
        fungrad.grad(lambda x: reduce_window_max(x, (2,)).sum())(np.arange(3))


def test_helper_module_needs_only_numpy():
    import ast
    import inspect
    from fungrad.lax.kernels import window as window_kernels
    tree = ast.parse(inspect.getsource(window_kernels))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"numpy"}


def test_export_max_pool_gradient(tmp_path):
    from tests.export_check import check_exported
    x = np.random.default_rng(3).normal(size=(4, 5))
    grad = fungrad.grad(lambda x: (reduce_window_max(x, (2, 2), (1, 2), "SAME") ** 2).sum())
    source = check_exported(grad, x, tmp_path=tmp_path, name="pool_grad")
    assert "__import__('fungrad" not in source
    np.testing.assert_allclose(fungrad.jit(grad)(x), grad(x), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(configs(max_rank=3))
def test_reduce_window_shape_tuple_is_the_output_shape(config):
    shape, window, strides, padding, pads, base, wdil = config
    got = lax.reduce_window_shape_tuple(shape, window, strides, padding, base, wdil)
    assert got == reduce_window_sum(np.ones(shape), window, strides, padding, base, wdil).shape
    assert got == lax.reduce_window_shape_tuple(shape, window, strides, pads, base, wdil)
    with pytest.raises(ValueError, match="window_strides must have one entry per operand"):
        lax.reduce_window_shape_tuple(shape, window, strides + (1,), padding)
