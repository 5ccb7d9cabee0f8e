"""The lax and numpy functions of issue 13 beyond what the generic cases check
(tests/cases/lax_api.py, condensed.py, numpy_functions.py): bad input and its
messages, the directives, I/O, and behaviours a value comparison misses."""
import io

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax


# --- lax.reduce ----------------------------------------------------------------------

def test_reduce_recognises_monoids_as_reductions():
    for comp, prim in [(lax.add, "reduce_sum"), (lambda a, b: a * b, "reduce_prod"),
                       (fnp.maximum, "reduce_max"), (lax.bitwise_and, "reduce_and")]:
        dtype = np.int32 if prim == "reduce_and" else np.float64
        init = {"reduce_sum": 0, "reduce_prod": 1, "reduce_max": -np.inf, "reduce_and": -1}[prim]
        jaxpr = fungrad.make_jaxpr(lambda x: lax.reduce(x, np.asarray(init, dtype), comp, (0,)))(
            np.ones((3, 2), dtype))
        assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == [prim]


def test_reduce_folds_in_order_and_folds_in_the_initial_value():
    # 2x2 matrix products: associative, not commutative, init not the identity
    mats = np.random.default_rng(0).normal(size=(6, 2, 2))
    parts = tuple(mats[:, i, j] for i in range(2) for j in range(2))

    def product(p, q):
        (a, b, c, d), (e, f, g, h) = p, q
        return (a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h)
    init = (2.0, 0.0, 0.0, 1.0)
    got = np.array([np.asarray(v) for v in lax.reduce(parts, init, product, (0,))]).reshape(2, 2)
    want = np.diag([2.0, 1.0])
    for m in mats:
        want = want @ m
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reduce_bad_input():
    x = np.ones(3)
    with pytest.raises(ValueError, match="tree structure"):
        lax.reduce((x, x), 0.0, lax.add, (0,))
    with pytest.raises(ValueError, match="scalars"):
        lax.reduce(x, np.zeros(2), lambda a, b: a * b + a, (0,))
    with pytest.raises(TypeError, match="dtype"):
        lax.reduce(x, np.float32(0), lambda a, b: a * b + a, (0,))
    with pytest.raises(TypeError, match="must return scalars"):
        lax.reduce(x, 0.0, lambda a, b: fnp.stack([a, b]), (0,))
    with pytest.raises(ValueError, match="out of bounds"):
        lax.reduce(x, 0.0, lax.add, (1,))


def test_reduce_window_still_recognises_its_monoids():
    x = np.arange(6.0).reshape(2, 3)
    out = lax.reduce_window(x, -np.inf, lambda a, b: fnp.maximum(a, b), (1, 2), (1, 1))
    np.testing.assert_array_equal(out, [[1, 2], [4, 5]])
    with pytest.raises(NotImplementedError, match="monoids add, max and min"):
        lax.reduce_window(x, 1.0, lax.mul, (1, 2), (1, 1))


# --- shape helpers, indexing, top-k ------------------------------------------------------

def test_split_empty_broadcast_shapes():
    with pytest.raises(ValueError, match="sum to the size"):
        lax.split(np.arange(5), (2, 2))
    out = lax.empty((2, 3), np.int8)
    assert out.shape == (2, 3) and out.dtype == np.int8
    assert lax.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    with pytest.raises(ValueError, match="incompatible"):
        lax.broadcast_shapes((2,), (3,))


def test_index_take_and_scatter_apply_errors():
    with pytest.raises(ValueError, match="one index vector per axis"):
        lax.index_take(np.ones((2, 2)), (np.array([0]),), (0, 1))
    with pytest.raises(TypeError, match="integers"):
        lax.index_take(np.ones((2, 2)), (np.array([0.0]),), (0,))
    with pytest.raises(TypeError, match="scalar of the same dtype"):
        lax.scatter_apply(np.ones(3), (np.array([0]),), lambda v: fnp.stack([v, v]))


def test_at_apply_repeats_for_repeated_indices():
    x = fnp.asarray(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.at[np.array([0, 0, 2])].apply(lambda v: v * 2), [4, 2, 6])


def test_approx_top_k_checks():
    with pytest.raises(ValueError, match="0 < k"):
        lax.approx_max_k(np.ones((2, 3)), 4)
    with pytest.raises(TypeError, match="floating-point"):
        lax.approx_min_k(np.ones(3, np.int32), 1)


def test_reduce_precision_and_bit_counts():
    assert lax.reduce_precision(np.float64(1 + 2.0 ** -30), 8, 23) == 1.0
    assert lax.reduce_precision(np.float64(1e39), 8, 23) == np.inf    # beyond float32
    with pytest.raises(TypeError, match="mantissa_bits"):
        lax.reduce_precision(np.ones(2), 8, -1)
    with pytest.raises(TypeError, match="integer"):
        lax.population_count(np.ones(2))
    np.testing.assert_array_equal(lax.clz(np.array([0, 1, 2**63 - 1], np.uint64)), [64, 63, 1])


# --- compiler directives ------------------------------------------------------------------

def test_optimization_barrier_keeps_computations_apart_under_jit():
    f = fungrad.jit(lambda x: lax.sin(lax.optimization_barrier(x)) + lax.sin(x))
    assert f.lower(1.0).source().count("np.sin(") == 2
    assert f(1.0) == pytest.approx(2 * np.sin(1.0))


def test_sharding_platform_and_composite():
    x = np.arange(3.0)
    assert lax.with_sharding_constraint(x, None) is x
    assert lax.platform_dependent(x, cpu=lambda v: v + 1, default=lambda v: v)[0] == 1
    assert lax.platform_dependent(x, tpu=lambda v: v, default=lambda v: v * 2)[1] == 2
    with pytest.raises(NotImplementedError, match="cpu"):
        lax.platform_dependent(x, tpu=lambda v: v)
    tangent = lax.composite(lambda v: lax.sin(v) / lax.cos(v), name="my.tan")
    assert tangent.composite_name == "my.tan"
    assert fungrad.grad(tangent)(0.3) == pytest.approx(1 / np.cos(0.3) ** 2)


# --- linear algebra --------------------------------------------------------------------------

def test_linalg_limits_raise_clearly():
    a = np.random.default_rng(0).normal(size=(3, 3))
    with pytest.raises(NotImplementedError, match="sort_eig_vals"):
        lax.linalg.schur(a, sort_eig_vals=True)
    with pytest.raises(NotImplementedError, match="not differentiable"):
        fungrad.grad(lambda m: lax.linalg.schur(m)[0].sum())(a)
    with pytest.raises(NotImplementedError, match="dynamic_shape"):
        lax.linalg.qdwh(a, dynamic_shape=(2, 2))
    with pytest.raises(ValueError, match="m >= n"):
        lax.linalg.qdwh(a[:2])
    with pytest.raises(NotImplementedError, match="perturb_singular"):
        lax.linalg.tridiagonal_solve(a[0], a[1], a[2], a, perturb_singular=True)
    with pytest.raises(ValueError, match="b must be"):
        lax.linalg.tridiagonal_solve(a[0], a[1], a[2], a[0])
    with pytest.raises(TypeError, match="real"):
        lax.linalg.cholesky_update(a.astype(complex), a[0].astype(complex))
    with pytest.raises(ValueError, match="m >= n"):
        lax.linalg.householder_product(a[:2], np.ones(1))
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(a, a[None], np.array([3]), group_offset=np.array([0]))


def test_schur_of_complex_eigenvalues_has_standard_blocks():
    rotation = np.array([[0.0, -2.0, 1.0], [1.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    t, z = lax.linalg.schur(rotation)
    np.testing.assert_allclose(z @ t @ z.T, rotation, atol=1e-12)
    eigs = np.sort_complex(np.linalg.eigvals(t))
    np.testing.assert_allclose(eigs, np.sort_complex(np.linalg.eigvals(rotation)), atol=1e-12)


def test_hessenberg_reflectors_give_q():
    a = np.random.default_rng(1).normal(size=(5, 5))
    packed, taus = lax.linalg.hessenberg(a)
    h = np.triu(np.asarray(packed), -1)
    # reflector i acts on rows i+1:, so Q = diag(1, householder_product of the shifted block)
    q = np.eye(5)
    q[1:, 1:] = lax.linalg.householder_product(np.asarray(packed)[1:, :-1], taus)
    np.testing.assert_allclose(q @ h @ q.T, a, atol=1e-12)


# --- numpy ----------------------------------------------------------------------------------

def test_place_put_need_inplace_false():
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.place(np.ones(3), np.ones(3, bool), [1.0])
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.put(np.ones(3), [0], [1.0])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.put(np.ones(3), [5], [1.0], mode="raise", inplace=False)
    with pytest.raises(ValueError, match="same size"):
        fnp.place(np.ones(3), np.ones(2, bool), [1.0], inplace=False)
    with pytest.raises(TypeError, match="inplace=False"):
        fungrad.jit(lambda x: np.put(x, [0], [1.0]))(np.ones(3))


def test_place_with_a_traced_mask_under_jit():
    f = fungrad.jit(lambda a, m: fnp.place(a, m, np.array([7.0, 8.0]), inplace=False))
    a, m = np.arange(5.0), np.array([True, False, True, True, False])
    want = a.copy()
    np.place(want, m, [7.0, 8.0])
    np.testing.assert_array_equal(f(a, m), want)


def test_mask_indices_and_kaiser_small():
    for got, want in zip(fnp.mask_indices(4, np.tril, -1), np.mask_indices(4, np.tril, -1)):
        np.testing.assert_array_equal(got, want)
    rows, _ = fungrad.jit(lambda: fnp.mask_indices(3, fnp.triu, size=6))()
    assert rows.shape == (6,)
    np.testing.assert_array_equal(fnp.kaiser(1, 3.0), np.kaiser(1, 3.0))
    assert fnp.kaiser(0, 3.0).shape == (0,)


def test_gradient_and_unwrap_errors():
    with pytest.raises(ValueError, match="too small"):
        fnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(TypeError, match="spacing arguments"):
        fnp.gradient(np.ones((3, 3)), 1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="1-d array of length"):
        fnp.gradient(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="edge_order"):
        fnp.gradient(np.ones(4), edge_order=3)
    with pytest.raises(ValueError, match="complex"):
        fnp.unwrap(np.ones(3, complex))
    assert isinstance(np.gradient(fungrad.numpy.ones((2, 2))), tuple)


def test_bits_errors():
    with pytest.raises(TypeError, match="integer or boolean"):
        fnp.packbits(np.ones(3))
    with pytest.raises(TypeError, match="uint8"):
        fnp.unpackbits(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="bitorder"):
        fnp.packbits(np.ones(3, bool), bitorder="middle")
    with pytest.raises(TypeError, match="real"):
        fnp.i0(np.ones(2, complex))


def test_piecewise_needs_matching_funclist():
    with pytest.raises(ValueError, match="funclist must have"):
        fnp.piecewise(np.ones(3), [np.ones(3, bool)], [0, 1, 2])


def test_frompyfunc_methods_and_errors():
    add = fnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(add.reduce(x, axis=(0, 1)), 15.0)
    np.testing.assert_allclose(add.reduce(x, axis=1, keepdims=True), [[3.0], [12.0]])
    np.testing.assert_allclose(add.reduce(np.zeros((0,))), 0.0)
    for indices in ([0, 4, 1, 5], [0, 2]):      # (an empty slice takes x[begin])
        v = np.arange(8.0)
        np.testing.assert_allclose(add.reduceat(v, indices), np.add.reduceat(v, indices))
    np.testing.assert_allclose(add.reduceat(x, [0, 2], axis=1), np.add.reduceat(x, [0, 2], axis=1))
    assert "ufunc" in repr(add)
    with pytest.raises(ValueError, match="no identity"):
        fnp.frompyfunc(lambda a, b: a * b + a, 2, 1).reduce(np.zeros((0,)))
    with pytest.raises(ValueError, match="inplace=False"):
        add.at(x, (0, 0), 1.0)
    with pytest.raises(ValueError, match="two arguments"):
        fnp.frompyfunc(np.negative, 1, 1).reduce(x)
    neg = fnp.frompyfunc(lambda a: -a, 1, 1)
    np.testing.assert_allclose(neg.at(np.arange(3.0), np.array([1, 1]), inplace=False),
                               [0.0, 1.0, 2.0])


def test_io_round_trips_and_printing(tmp_path):
    x = np.arange(4.0)
    buffer = io.BytesIO()
    fnp.save(buffer, fnp.asarray(x))
    buffer.seek(0)
    loaded = fnp.load(buffer)
    assert isinstance(loaded, fungrad.Array)
    np.testing.assert_array_equal(loaded, x)
    path = tmp_path / "a.npz"
    fnp.savez(path, x, y=x * 2)
    with fnp.load(path) as archive:
        np.testing.assert_array_equal(archive["y"], x * 2)
    raw = tmp_path / "raw.bin"
    x.tofile(raw)
    np.testing.assert_array_equal(fnp.fromfile(raw), x)
    np.testing.assert_array_equal(fnp.frombuffer(x.tobytes()), x)
    np.testing.assert_array_equal(fnp.fromiter(iter([1, 2]), np.int64), [1, 2])
    np.testing.assert_array_equal(fnp.fromstring("1,2", sep=","), [1.0, 2.0])
    assert fnp.array_repr(fnp.asarray(x)).startswith("Array(")
    assert fnp.array_str(x) == np.array_str(x)
    with fnp.printoptions(precision=1):
        assert fnp.get_printoptions()["precision"] == 1
    with pytest.raises(fungrad.errors.TracerArrayConversionError):
        fungrad.jit(lambda v: fnp.save(io.BytesIO(), v))(x)
    text = fungrad.jit(lambda v: (fnp.array_repr(v), v)[1])(x)
    np.testing.assert_array_equal(text, x)


def test_index_tricks():
    np.testing.assert_array_equal(fnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])
    assert isinstance(fnp.mgrid[0:2], fungrad.Array)
    for got, want in zip(fnp.ogrid[0:2, 0:3], np.ogrid[0:2, 0:3]):
        np.testing.assert_array_equal(got, want)
    assert fnp.s_[1:3, None] == np.s_[1:3, None] and fnp.index_exp[2] == np.index_exp[2]
    np.testing.assert_array_equal(fnp.r_["0,2,1", [1, 2], [3, 4]], np.r_["0,2,1", [1, 2], [3, 4]])
    with pytest.raises(NotImplementedError, match="matrix"):
        fnp.r_["r", [1, 2]]
    with pytest.raises(ValueError, match="first entry"):
        fnp.r_[[1], "0"]
    with pytest.raises(ValueError, match="directive"):
        fnp.r_["x", [1]]


def test_top_k_modes():
    x = np.array([[3, 1, 2], [-128, 127, 0]], np.int8)
    values, indices = fnp.top_k(x, 2, mode="smallest")
    np.testing.assert_array_equal(values, [[1, 2], [-128, 0]])
    np.testing.assert_array_equal(indices, [[1, 2], [0, 2]])
    with pytest.raises(ValueError, match="mode"):
        fnp.top_k(x, 1, mode="middle")
