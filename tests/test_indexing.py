"""Focused tests for indexing and the structural primitives: NumPy's indexing
semantics, ``.at`` updates, gradients with repeated indices, vmap with batched
indices, concretization errors, error messages and the NumPy lowerings."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.core import ConcretizationTypeError, primitives
from fungrad.interpreters import codegen
from fungrad.numpy._indexing import getitem, _IndexUpdateHelper
from fungrad.test_util import check_grads

RNG = np.random.default_rng(0)
X = np.arange(60.0).reshape(3, 4, 5)
I2 = np.array([[0, 2], [1, -1]])

# (description, index) pairs checked against NumPy's own x[idx]
INDEX_TABLE = [
    ("int", 1), ("negative int", -1), ("ints", (1, 2)), ("int int int", (2, -1, 0)),
    ("slice", slice(1, 3)), ("slice step", (slice(None), slice(None, None, 2))),
    ("negative step", slice(None, None, -1)),
    ("negative step bounds", (slice(None), slice(3, 0, -2), slice(-1, 0, -3))),
    ("empty slice", slice(5, 9)), ("reversed empty", slice(0, 2, -1)),
    ("newaxis", (None, 0)), ("newaxis middle", (0, None, Ellipsis, None)),
    ("ellipsis", (Ellipsis, 2)), ("ellipsis alone", Ellipsis), ("empty tuple", ()),
    ("list", [0, 2]), ("list negative", [-1, 0, -3]), ("nested list", [[0, 1], [2, 2]]),
    ("array 2-d", (slice(None), I2)),
    ("advanced adjacent", (slice(None), [0, 1], [1, 2])),
    ("advanced separated", ([0, 2], slice(None), [1, 3])),
    ("advanced separated by newaxis", ([0, 1], None, [1, 2])),
    ("int counts as advanced", (0, slice(None), [1, 3])),
    ("int adjacent to array", (slice(None), 0, [1, 3])),
    ("array + negative step", (I2, slice(None, None, -2))),
    ("array + newaxis + int", (slice(None), I2, None, 2)),
    ("broadcast arrays", (np.array([[0], [2]]), slice(1, 3), np.array([1, 3]))),
    ("0-d array", (np.array(1), slice(None))),
    ("bool mask 1-d", (np.array([True, False, True]),)),
    ("bool mask 3-d", (X > 30,)),
    ("bool mask on later dims", (slice(None), X[0] > 7)),
    ("bool mask list", ([True, False, True],)),
    ("bool scalar True", (True,)), ("bool scalar False", (False,)),
    ("int and True", (0, True)), ("bool scalars", (True, Ellipsis, False)),
    ("array and bool scalar", (1, [0, 1], True)),
    ("empty list", ([],)), ("empty int array", (np.array([], int), 1)),
]


@pytest.mark.parametrize("name,idx", INDEX_TABLE, ids=[n for n, _ in INDEX_TABLE])
def test_getitem_matches_numpy(name, idx):
    want = X[idx]
    for x in (X, lax.neg(lax.neg(X))):           # ndarray and fungrad Array
        got = getitem(x, idx)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if not _has_mask(idx):
        staged = fungrad.jit(lambda x: x[idx])(X)  # tracer __getitem__
        np.testing.assert_array_equal(staged, want)


def _has_mask(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(np.asarray(i).dtype == bool and np.ndim(i) > 0 for i in items
               if i is not None and i is not Ellipsis and not isinstance(i, slice))


def test_basic_indexing_uses_no_gather():
    jaxpr = fungrad.make_jaxpr(lambda x: x[1, ::-2, None, -3:])(X)
    names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
    assert names <= {"slice", "rev", "reshape"}, names
    jaxpr = fungrad.make_jaxpr(lambda x, i: x[i, 1:])(X, 2)
    names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
    assert "gather" not in names and "dynamic_slice" in names


def test_traced_scalar_index_wraps_and_clamps_like_jax():
    f = fungrad.jit(lambda x, i: x[i])
    np.testing.assert_array_equal(f(X, -1), X[-1])
    np.testing.assert_array_equal(f(X, 7), X[2])      # clamped, as JAX
    np.testing.assert_array_equal(f(X, -9), X[0])


def test_index_arrays_clamp_out_of_bounds():
    np.testing.assert_array_equal(getitem(X, ([5, -7],)), X[[2, 0]])


def test_static_int_out_of_bounds_raises():
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        getitem(X, (0, 4))


@pytest.mark.parametrize("idx,match", [
    ((0, 0, 0, 0), "too many indices"),
    ((Ellipsis, 0, Ellipsis), "single ellipsis"),
    ((np.array([1.5]),), "valid indices"),
    ((np.array([True, False]),), "boolean index of shape"),
    ((slice(0, 1.5),), "slice indices must be integers"),
])
def test_bad_indices_raise_clear_errors(idx, match):
    with pytest.raises((IndexError, TypeError), match=match):
        getitem(X, idx)


def test_boolean_mask_on_tracer_raises_concretization_error():
    with pytest.raises(ConcretizationTypeError, match="where"):
        fungrad.jit(lambda x: x[x > 0])(X)
    with pytest.raises(ConcretizationTypeError, match="size="):
        fungrad.vmap(lambda x: x[x > 0])(X)
    # under grad alone the mask is concrete (its tangent is zero), as in JAX
    g = fungrad.grad(lambda x: (x[x > 30.0] ** 2).sum())(X)
    np.testing.assert_allclose(g, np.where(X > 30, 2 * X, 0.0))
    with pytest.raises(ConcretizationTypeError, match="size="):
        fungrad.jit(lambda x: fnp.nonzero(x))(X)


def test_traced_slice_bound_raises_with_hint():
    with pytest.raises(IndexError, match="dynamic_slice"):
        fungrad.jit(lambda x, i: x[i:])(X, 1)


# ----------------------------------------------------------------------------
# Gradients
# ----------------------------------------------------------------------------

def test_grad_of_gather_with_repeated_indices_is_scatter_add():
    idx = (np.array([0, 2, 0, 0]), slice(None), np.array([1, 1, 1, 4]))
    w = RNG.normal(size=X[idx].shape)
    g = fungrad.grad(lambda x: (x[idx] * w).sum())(X)
    want = np.zeros_like(X)
    np.add.at(want, idx, w)
    np.testing.assert_allclose(g, want)


def test_scatter_set_gradient_goes_to_the_winning_duplicate():
    x = np.zeros(4)
    idx = np.array([1, 1, 3])
    u = np.array([10.0, 20.0, 30.0])
    out = x.copy()
    out[idx] = u
    np.testing.assert_array_equal(x.copy().view(fungrad.Array).at[idx].set(u), out)
    gx, gu = fungrad.grad(lambda x, u: (fnp.asarray(x).at[idx].set(u) * np.arange(1.0, 5.0)).sum(),
                          argnums=(0, 1))(x, u)
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 0.0])
    won = np.array([out[1] == u[0], out[1] == u[1], True], float)
    np.testing.assert_array_equal(gu, won * np.array([2.0, 2.0, 4.0]))


def test_scatter_max_ties_split_the_gradient():
    x = np.array([1.0, 2.0])
    g = fungrad.grad(lambda x, v: fnp.asarray(x).at[0].max(v).sum(), argnums=(0, 1))(x, 1.0)
    np.testing.assert_allclose(g[0], [0.5, 1.0])
    np.testing.assert_allclose(g[1], 0.5)


def test_scatter_mul_update_gradient_with_repeated_indices():
    # x[1] * u0 * u1: each update's derivative is x[1] times the other update
    x = np.arange(1.0, 5.0)
    f = lambda u: fnp.asarray(x).at[np.array([1, 1])].multiply(u).sum()
    np.testing.assert_allclose(fungrad.grad(f)(np.array([2.0, 3.0])), [2.0 * 3.0, 2.0 * 2.0])
    g = fungrad.grad(lambda u: fnp.asarray(x).at[np.array([0, 2])].multiply(u).sum())(
        np.array([2.0, 3.0]))
    np.testing.assert_allclose(g, [1.0, 3.0])


def test_scatter_mul_update_gradient_with_traced_indices_under_jit():
    # the indices are traced, so their uniqueness is unknown: the general rule applies
    x = np.arange(1.0, 4.0)
    f = lambda u, i: fnp.asarray(x).at[i].multiply(u).sum()
    for i in (np.array([0, 2]), np.array([1, 1])):
        np.testing.assert_allclose(fungrad.jit(fungrad.grad(f))(np.array([2.0, 3.0]), i),
                                   fungrad.grad(f)(np.array([2.0, 3.0]), i))
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(f))(np.array([2.0, 3.0]),
                                                            np.array([1, 1])), [6.0, 4.0])


@pytest.mark.parametrize("u", [[0.5, 0.7, 0.9, 1.3], [0.0, 0.7, 0.9, 1.3], [0.0, 0.7, 0.0, 1.3]],
                         ids=["no_zero", "one_zero", "two_zeros"])
def test_scatter_mul_repeated_indices_exact_at_zero_updates(u):
    # the co-factor of an update is computed without dividing by zero
    idx = np.array([0, 2, 0, 0])
    f = lambda x, u: fnp.asarray(x).at[idx].multiply(u)
    check_grads(f, (np.array([1.5, 2.0, 3.0, 4.0]), np.array(u)), order=2)
    traced_idx = lambda u, i: fnp.ones(4).at[i].multiply(u)     # uniqueness unknown
    check_grads(lambda u: traced_idx(u, idx), (np.array(u),), order=2)
    np.testing.assert_allclose(fungrad.jacrev(lambda u: fungrad.jit(traced_idx)(u, idx))(
        np.array(u)), fungrad.jacfwd(lambda u: traced_idx(u, idx))(np.array(u)))


def test_pad_transpose_gives_padding_value_cotangent():
    f = lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 0, 0)))
    x = RNG.normal(size=(3, 2))
    _, pullback = fungrad.vjp(f, x, 0.5)
    ct = RNG.normal(size=f(x, 0.5).shape)
    ct_x, ct_v = pullback(ct)
    mask = np.asarray(f(np.zeros_like(x), 1.0))     # 1 where padding landed
    np.testing.assert_allclose(ct_v, (ct * mask).sum())
    np.testing.assert_allclose(ct_x[:, 1:], ct[1:6:2, :])
    np.testing.assert_allclose(ct_x[:, 0], 0.0)      # cropped by the negative padding


# ----------------------------------------------------------------------------
# x.at[idx]
# ----------------------------------------------------------------------------

AT_INDICES = [(np.array([0, 2, 0]),), (slice(None), np.array([1, 1, -1])), (1, slice(1, 3)),
              (np.array([[0], [2]]), None, np.array([3, 3]))]


def _ufunc_at_ref(ufunc, x, idx, v):
    out = x.copy()
    ufunc.at(out, idx, np.broadcast_to(v, out[idx].shape))
    return out


@pytest.mark.parametrize("idx", AT_INDICES, ids=range(len(AT_INDICES)))
def test_at_updates_match_numpy_ufunc_at(idx):
    x = RNG.normal(size=(3, 4, 5))
    v = RNG.normal(size=X[idx].shape)
    for arr in (fnp.asarray(x), x):
        at = fnp.asarray(arr).at[idx]
        before = np.array(arr, copy=True)
        np.testing.assert_allclose(at.add(v), _ufunc_at_ref(np.add, x, idx, v))
        np.testing.assert_allclose(at.subtract(v), _ufunc_at_ref(np.subtract, x, idx, v))
        np.testing.assert_allclose(at.multiply(v), _ufunc_at_ref(np.multiply, x, idx, v))
        np.testing.assert_allclose(at.mul(v), _ufunc_at_ref(np.multiply, x, idx, v))
        np.testing.assert_allclose(at.divide(v), _ufunc_at_ref(np.divide, x, idx, v))
        np.testing.assert_allclose(at.min(v), _ufunc_at_ref(np.minimum, x, idx, v))
        np.testing.assert_allclose(at.max(v), _ufunc_at_ref(np.maximum, x, idx, v))
        np.testing.assert_allclose(at.get(), x[idx])
        negated = x.copy()
        np.negative.at(negated, idx)        # once per occurrence of an index, as JAX's apply
        np.testing.assert_allclose(at.apply(fnp.negative), negated)
        np.testing.assert_array_equal(arr, before)      # never mutated


def _set_ref(x, idx, v):
    out = x.copy()
    out[idx] = v
    return out


def test_at_set_and_power_and_scalar_values():
    x = fnp.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.at[:, 1].set(7), _set_ref(np.asarray(x), (slice(None), 1), 7))
    np.testing.assert_allclose(x.at[1].power(2.0), np.asarray(x) ** np.array([[1.0], [2.0]]))
    ints = fnp.asarray(np.arange(4))
    np.testing.assert_array_equal(ints.at[1].set(2.7), [0, 2, 2, 3])   # cast to int, as JAX
    with pytest.raises(TypeError, match="float"):
        ints.at[1].divide(2)


def test_at_modes():
    x = fnp.asarray(np.arange(5.0))
    idx = np.array([1, 7, -1, -9])
    np.testing.assert_array_equal(x.at[idx].add(1.0), [0, 2, 2, 3, 5])          # drop
    np.testing.assert_array_equal(x.at[idx].add(1.0, mode="clip"), [1, 2, 2, 3, 6])
    np.testing.assert_array_equal(x.at[idx].get(), [1, 4, 4, 0])               # clamp
    np.testing.assert_array_equal(x.at[idx].get(mode="fill", fill_value=-1.0), [1, -1, 4, -1])
    assert np.isnan(x.at[9].get(mode="fill"))
    np.testing.assert_array_equal(x.at[idx].get(mode="promise_in_bounds"), [1, 4, 4, 0])
    with pytest.raises(ValueError, match="mode"):
        x.at[0].get(mode="bogus")


def test_at_on_tracers_and_under_transformations():
    x = RNG.normal(size=(4, 3))
    f = lambda x, i: x.at[i, 1].add(1.0).at[0].set(x[1])
    want = f(fnp.asarray(x), np.array([0, 0, 3]))
    np.testing.assert_allclose(fungrad.jit(f)(x, np.array([0, 0, 3])), want)
    g = fungrad.grad(lambda x: f(x, np.array([0, 0, 3])).sum())(x)
    want_g = np.ones_like(x)
    want_g[0] = 0.0
    want_g[1] += 1.0
    np.testing.assert_allclose(g, want_g)


def test_setitem_on_tracer_is_refused():
    def f(x):
        x[0] = 1.0
        return x
    with pytest.raises(TypeError, match="at\\[idx\\]"):
        fungrad.jit(f)(np.zeros(3))


# ----------------------------------------------------------------------------
# vmap with batched indices
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("x_axis,i_axis", [(0, 0), (None, 0), (1, 0), (0, 1), (2, None)])
def test_vmap_of_indexing_with_batched_indices(x_axis, i_axis):
    batch = 3
    xs = RNG.normal(size=(batch, 4, 5, 2))
    idx = RNG.integers(-4, 4, size=(batch, 2, 3))
    x_in = np.moveaxis(xs, 0, x_axis) if x_axis is not None else xs[0]
    i_in = np.moveaxis(idx, 0, i_axis) if i_axis is not None else idx[0]
    # getitem/_IndexUpdateHelper: x may be a plain ndarray (x_axis=None), whose
    # own x[tracer] is NumPy's and cannot take tracers
    f = lambda x, i: getitem(x, (i, slice(None), None, 1))
    got = fungrad.vmap(f, in_axes=(x_axis, i_axis))(x_in, i_in)
    want = np.stack([xs[b if x_axis is not None else 0][idx[b if i_axis is not None else 0],
                                                         :, None, 1] for b in range(batch)])
    np.testing.assert_allclose(got, want)
    g = lambda x, i, u: _IndexUpdateHelper(x)[:, i].add(u)
    u = RNG.normal(size=(batch, 4, 2, 3, 2))
    got = fungrad.vmap(g, in_axes=(x_axis, i_axis, 0))(x_in, i_in, u)
    for b in range(batch):
        ref = xs[b if x_axis is not None else 0].copy()
        np.add.at(ref, (slice(None), idx[b if i_axis is not None else 0]), u[b])
        np.testing.assert_allclose(got[b], ref)


def test_vmap_of_traced_scalar_index_is_a_single_gather():
    xs = RNG.normal(size=(3, 4))
    i = np.array([0, -1, 9])
    jaxpr = fungrad.make_jaxpr(fungrad.vmap(lambda x, i: x[i]))(xs, i)
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert names.count("gather") <= 2 and "while" not in names
    np.testing.assert_allclose(fungrad.vmap(lambda x, i: x[i])(xs, i),
                               [xs[0, 0], xs[1, -1], xs[2, 3]])


# ----------------------------------------------------------------------------
# Index functions
# ----------------------------------------------------------------------------

def test_take_modes():
    a = np.arange(6.0)
    idx = np.array([0, 5, 6, -1, -7])
    np.testing.assert_array_equal(fnp.take(a, idx, mode="clip"), [0, 5, 5, 5, 0])
    np.testing.assert_array_equal(fnp.take(a, idx, mode="wrap"), np.take(a, idx, mode="wrap"))
    filled = np.asarray(fnp.take(a, idx))
    np.testing.assert_array_equal(filled[[0, 1, 3]], [0, 5, 5])
    assert np.isnan(filled[[2, 4]]).all()
    np.testing.assert_array_equal(fnp.take(X, 2, axis=1), np.take(X, 2, axis=1))
    with pytest.raises(NotImplementedError, match="raise"):
        fnp.take(a, idx, mode="raise")


def test_take_along_axis_and_put_along_axis():
    a = RNG.normal(size=(3, 4))
    idx = np.argsort(a, axis=1)
    np.testing.assert_array_equal(fnp.take_along_axis(a, idx, axis=1),
                                  np.take_along_axis(a, idx, axis=1))
    np.testing.assert_array_equal(fnp.take_along_axis(a.ravel(), idx.ravel(), axis=None),
                                  np.take_along_axis(a.ravel(), idx.ravel(), axis=None))
    want = a.copy()
    np.put_along_axis(want, idx[:, :2], 0.0, axis=1)
    np.testing.assert_array_equal(fnp.put_along_axis(a, idx[:, :2], 0.0, 1, inplace=False), want)
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.put_along_axis(a, idx, 0.0, 1)


def test_nonzero_family_concrete_and_sized():
    m = np.array([[0, 3, 0], [4, 0, 5]])
    for got, want in zip(fnp.nonzero(m), np.nonzero(m)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fnp.argwhere(m), np.argwhere(m))
    np.testing.assert_array_equal(fnp.flatnonzero(m), np.flatnonzero(m))
    rows, cols = fungrad.jit(lambda m: fnp.nonzero(m, size=5, fill_value=-1))(m)
    np.testing.assert_array_equal(rows, [0, 1, 1, -1, -1])
    np.testing.assert_array_equal(cols, [1, 0, 2, -1, -1])
    np.testing.assert_array_equal(fungrad.jit(lambda m: fnp.argwhere(m, size=2))(m),
                                  np.argwhere(m)[:2])
    batched = fungrad.vmap(lambda r: fnp.flatnonzero(r, size=2))(m)
    np.testing.assert_array_equal(batched, [[1, 0], [0, 2]])
    with pytest.raises(ValueError, match="0-d"):
        fnp.nonzero(np.float64(1.0))


def test_select_choose_compress_extract():
    x = np.arange(6.0) - 2
    got = fnp.select([x < 0, x > 1], [-x, x ** 2], default=9.0)
    np.testing.assert_array_equal(got, np.select([x < 0, x > 1], [-x, x ** 2], default=9.0))
    with pytest.raises(ValueError, match="same length"):
        fnp.select([x < 0], [x, x])
    a = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(fnp.choose(a, [x[:4], -x[:4]]), np.choose(a, [x[:4], -x[:4]]))
    np.testing.assert_array_equal(fnp.choose(np.array([3, -1]), [[1, 2], [3, 4]], mode="wrap"),
                                  np.choose(np.array([3, -1]), [[1, 2], [3, 4]], mode="wrap"))
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(fnp.compress(cond, X, axis=1), np.compress(cond, X, axis=1))
    np.testing.assert_array_equal(fnp.extract(X > 50, X), np.extract(X > 50, X))
    sized = fungrad.jit(lambda c, x: fnp.compress(c, x, size=3, fill_value=-1.0))(cond, x)
    np.testing.assert_array_equal(sized, [-2.0, 0.0, -1.0])


def test_index_constructors_match_numpy():
    for got, want in [(fnp.diag_indices(3), np.diag_indices(3)),
                      (fnp.tril_indices(4, -1), np.tril_indices(4, -1)),
                      (fnp.triu_indices(3, 1, 5), np.triu_indices(3, 1, 5)),
                      (fnp.triu_indices_from(np.zeros((3, 4))), np.triu_indices_from(np.zeros((3, 4)))),
                      (fnp.ix_([0, 2], [True, False, True]), np.ix_([0, 2], [True, False, True])),
                      (fnp.unravel_index(np.array([3, 7]), (2, 4)), np.unravel_index([3, 7], (2, 4)))]:
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(fnp.indices((2, 3)), np.indices((2, 3)))
    np.testing.assert_array_equal(fnp.ravel_multi_index((np.array([1, 0]), np.array([2, 3])), (2, 4)),
                                  np.ravel_multi_index(([1, 0], [2, 3]), (2, 4)))


def test_traced_unravel_and_ravel_multi_index():
    idx = np.array([3, 7, -1, 11])
    got = fungrad.jit(lambda i: fnp.unravel_index(i, (2, 4)))(idx)
    want = np.unravel_index(np.array([3, 7, 7, 7]), (2, 4))   # clamped and wrapped, as JAX
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    rows, cols = np.array([1, 0, 5]), np.array([2, 3, -1])
    for mode in ("wrap", "clip"):
        got = fungrad.jit(lambda r, c: fnp.ravel_multi_index((r, c), (2, 4), mode=mode))(rows, cols)
        np.testing.assert_array_equal(got, np.ravel_multi_index((rows, cols), (2, 4), mode=mode))
    with pytest.raises(ConcretizationTypeError, match="wrap"):
        fungrad.jit(lambda r: fnp.ravel_multi_index((r, r), (2, 4)))(rows)


# ----------------------------------------------------------------------------
# lax-level errors and semantics
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("fn,match", [
    (lambda: lax.squeeze(np.zeros((2, 3)), (0,)), "not 1"),
    (lambda: lax.slice(np.zeros((2, 3)), (0, 2), (2, 1)), "start <= limit"),
    (lambda: lax.slice(np.zeros((2, 3)), (0,), (2,)), "needs 2"),
    (lambda: lax.pad(np.zeros(3), 0.0, ((-4, 0, 0),)), "negative padding"),
    (lambda: lax.pad(np.zeros(3), 0.0, ((0, 0, -1),)), "interior"),
    (lambda: lax.pad(np.zeros(3), np.zeros(2), ((1, 0, 0),)), "scalar"),
    (lambda: lax.concatenate([np.zeros((2, 3)), np.zeros((2, 4))], 0), "must agree"),
    (lambda: lax.concatenate([np.zeros(2), np.zeros(2, np.int32)], 0), "same dtype"),
    (lambda: lax.dynamic_slice(np.zeros((2, 3)), (0, 0), (3, 1)), "within the operand"),
    (lambda: lax.dynamic_slice(np.zeros((2, 3)), (0,), (1, 1)), "needs 2"),
    (lambda: lax.dynamic_slice(np.zeros(3), (0.5,), (1,)), "integer scalars"),
    (lambda: lax.scatter_add(np.zeros(3), (np.array([0, 1]),), np.ones(3)), "cannot be broadcast"),
    (lambda: lax.gather(np.zeros(3), (np.array([0.5]),)), "integer"),
    (lambda: lax.gather(np.zeros((2, 2)), (np.zeros(2, int), np.zeros(3, int))), "broadcast"),
])
def test_lax_errors_name_the_problem(fn, match):
    with pytest.raises((TypeError, ValueError, IndexError), match=match):
        fn()


def test_dynamic_slice_clamps_like_jax():
    x = np.arange(5)
    np.testing.assert_array_equal(lax.dynamic_slice(x, (4,), (3,)), [2, 3, 4])
    np.testing.assert_array_equal(lax.dynamic_slice(x, (-2,), (2,)), [3, 4])
    np.testing.assert_array_equal(lax.dynamic_update_slice(np.zeros(6), np.ones(3), (5,)),
                                  [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(X, 3, 2, axis=1), X[:, 2:4])


def test_gather_docstring_examples():
    i = np.array([1, 0])
    np.testing.assert_array_equal(lax.gather(X, (slice(None), i, None, 2)), X[:, i, None, 2])
    out = lax.scatter_add(np.zeros((3, 4)), (np.array([0, 0]), np.array([1, 1])), 1.0)
    want = np.zeros((3, 4))
    np.add.at(want, (np.array([0, 0]), np.array([1, 1])), 1.0)
    np.testing.assert_array_equal(out, want)


# ----------------------------------------------------------------------------
# Lowerings: the NumPy source of each primitive computes what its impl does
# ----------------------------------------------------------------------------

def _lowered(prim, args, **params):
    names = [f"a{k}" for k in range(len(args))]
    env = dict(zip(names, args), np=np)
    source, modules = codegen.lowered_source(primitives[prim], names, **params)
    return eval(source, {**env, **modules})


LOWERING_CASES = [
    ("squeeze", [np.zeros((2, 1, 3))], dict(dimensions=(1,))),
    ("rev", [X], dict(dimensions=(0, 2))),
    ("slice", [X], dict(start_indices=(1, 0, 1), limit_indices=(3, 4, 5), strides=(1, 2, 3))),
    ("pad", [X, np.float64(1.5)], dict(padding_config=((1, 2, 1), (-1, 0, 0), (0, -2, 2)))),
    ("concatenate", [X, X[:, :1]], dict(dimension=1)),
    ("dynamic_slice", [X, np.array(-1), np.array(9), np.array(0)],
     dict(slice_sizes=(2, 2, 5), allow_negative=(True, True, True))),
    ("dynamic_update_slice", [X, np.ones((1, 2, 2)), np.array(5), np.array(-1), np.array(2)],
     dict(allow_negative=(True, True, True))),
]


def _gather_params(idx, mode, fill_value=None):
    from fungrad.lax.indexing import build_indexer
    indexer, arrays = build_indexer(X.shape, idx)
    return [X] + arrays, dict(indexer=indexer, mode=mode, fill_value=fill_value)


for _idx in [(slice(None), I2, None, 2), (np.array([7, -9]), slice(1, None, 2)),
             (np.array([[0], [2]]), 0, np.array([1, 6]))]:
    for _mode in ("clip", "fill"):
        _args, _params = _gather_params(_idx, _mode)
        LOWERING_CASES.append(("gather", _args, _params))
    for _name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
        for _mode in ("clip", "drop"):
            _args, _params = _gather_params(_idx, _mode)
            _shape = lax.gather(X, _idx).shape
            LOWERING_CASES.append((_name, _args + [RNG.normal(size=_shape)],
                                   dict(indexer=_params["indexer"], mode=_mode,
                                        unique_indices=False)))


_XI = np.arange(12, dtype=np.int32).reshape(3, 4)
for _name in ("scatter", "scatter_add", "scatter_min", "scatter_max"):
    for _mode in ("clip", "drop"):
        LOWERING_CASES.append((_name, [_XI, np.array([0, 5, -1, 0]), np.arange(16, dtype=np.int32)
                                       .reshape(4, 4)],
                               dict(indexer=(("array", 0), ("slice", 0, None, 1)), mode=_mode,
                                    unique_indices=False)))
        LOWERING_CASES.append((_name, [np.zeros((0, 2)), np.array([0, 1]), np.zeros((2, 2))],
                               dict(indexer=(("array", 0), ("slice", 0, None, 1)), mode=_mode,
                                    unique_indices=False)))


@pytest.mark.parametrize("prim,args,params", LOWERING_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOWERING_CASES)])
def test_lowering_matches_impl(prim, args, params):
    want = primitives[prim].impl(*args, **params)
    got = _lowered(prim, args, **params)
    np.testing.assert_array_equal(got, want)


def test_at_get_modes_apply_to_static_out_of_bounds_integers():
    # x[11] is a bug (IndexError), but .at[11].get(mode=...) asks for JAX's out-of-bounds read
    x = fnp.arange(10.0)
    with pytest.raises(IndexError, match="index 11 is out of bounds"):
        x[11]
    assert x.at[11].get(mode="clip") == 9.0
    assert np.isnan(x.at[11].get(mode="fill"))
    assert x.at[-11].get(mode="fill", fill_value=-1.0) == -1.0
    m = fnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(m.at[5, 1:].get(mode="clip"), [4.0, 5.0])
    assert fungrad.grad(lambda v: v.at[12].get(mode="clip"))(x)[9] == 1.0
    assert fungrad.jit(lambda v: v.at[12].get(mode="clip"))(x) == 9.0


# ----------------------------------------------------------------------------
# JAX's XLA-style call: (operand, scatter_indices, updates, ScatterDimensionNumbers)
# ----------------------------------------------------------------------------

def _xla_scatter_reference(operand, indices, updates, dnums, combine):
    """XLA's scatter written as its definition: for every update element, the
    operand position is the scattered start plus the window offset."""
    out = np.array(operand, dtype=float)
    windows, inserted, to_operand = (tuple(dnums.update_window_dims),
                                     tuple(dnums.inserted_window_dims),
                                     tuple(dnums.scatter_dims_to_operand_dims))
    scatter_axes = [u for u in range(updates.ndim) if u not in windows]
    operand_windows = [d for d in range(out.ndim) if d not in inserted]
    for u in np.ndindex(updates.shape):
        start = indices[tuple(u[a] for a in scatter_axes)]
        pos = [(start[to_operand.index(d)] if d in to_operand else 0)
               + (u[windows[operand_windows.index(d)]] if d in operand_windows else 0)
               for d in range(out.ndim)]
        if all(0 <= p < n for p, n in zip(pos, out.shape)):
            out[tuple(pos)] = combine(out[tuple(pos)], updates[u])
    return out


_DN = lax.ScatterDimensionNumbers
XLA_SCATTERS = [
    # numpyro's vec_to_tril_matrix, batched: updates (2, 6) into (2, 9) at flat positions
    ((2, 9), np.array([[0], [3], [4], [6], [7], [8]]), (2, 6),
     _DN(update_window_dims=(0,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,))),
    # points of a matrix, with a repeated and an out-of-bounds (negative) index
    ((4, 5), np.array([[0, 1], [3, 4], [0, 1], [-1, 2]]), (4,),
     _DN(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1))),
    # whole rows
    ((4, 5), np.array([[2], [0]]), (2, 5),
     _DN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    # 2x3 windows starting at two corners of a (5, 4) operand
    ((5, 4), np.array([[0, 1], [3, 0]]), (2, 2, 3),
     _DN(update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1))),
]


@pytest.mark.parametrize("case", range(len(XLA_SCATTERS)))
@pytest.mark.parametrize("which", ["scatter_add", "scatter", "scatter_mul", "scatter_max"])
def test_xla_style_scatter_matches_its_definition(case, which):
    operand_shape, indices, updates_shape, dnums = XLA_SCATTERS[case]
    rng = np.random.default_rng(case)
    operand = rng.normal(size=operand_shape)
    updates = rng.normal(size=updates_shape)
    if which == "scatter" and case == 1:
        indices = indices[[0, 1, 3]]             # unique indices: the result is defined
        updates = updates[:3]
    combine = {"scatter_add": np.add, "scatter": lambda a, b: b,
               "scatter_mul": np.multiply, "scatter_max": np.maximum}[which]
    expected = _xla_scatter_reference(operand, indices, updates, dnums, combine)
    fn = getattr(lax, which)
    np.testing.assert_allclose(fn(operand, indices, updates, dnums), expected, rtol=1e-15)
    jitted = fungrad.jit(lambda o, i, u: fn(o, i, u, dnums))(operand, indices, updates)
    np.testing.assert_allclose(jitted, expected, rtol=1e-15)


def test_xla_style_scatter_add_gradient_and_errors():
    operand_shape, indices, updates_shape, dnums = XLA_SCATTERS[0]
    w = np.arange(18.0).reshape(2, 9)
    # d/d updates of sum(w * scatter_add(0, idx, u)) = w at the scattered positions
    grad = fungrad.grad(lambda u: fnp.sum(w * lax.scatter_add(np.zeros(operand_shape), indices,
                                                                u, dnums)))(np.ones(updates_shape))
    np.testing.assert_array_equal(grad, w[:, indices[:, 0]])
    with pytest.raises(TypeError, match="ScatterDimensionNumbers"):
        lax.scatter_add(np.zeros(3), np.zeros((1, 1), int), np.ones(1), {"a": 1})
    with pytest.raises(ValueError, match="do not fit"):
        lax.scatter_add(np.zeros((2, 9)), indices, np.ones((2, 6)),
                        _DN(update_window_dims=(), inserted_window_dims=(1,),
                            scatter_dims_to_operand_dims=(1,)))
    with pytest.raises(NotImplementedError, match="operand_batching_dims"):
        lax.scatter_add(np.zeros((2, 9)), indices, np.ones((2, 6)),
                        _DN((0,), (1,), (1,), operand_batching_dims=(0,)))


def test_lax_dtype():
    assert lax.dtype(1.0) == np.float64 and lax.dtype(True) == np.bool_
    assert lax.dtype(np.float32(1.0)) == np.float32 and lax.dtype("int8") == np.int8
    assert fungrad.jit(lambda x: fnp.zeros((), lax.dtype(x)))(np.float32(2)).dtype == np.float32
    with pytest.raises(TypeError, match="cannot determine the dtype"):
        lax.dtype(object())


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_jit_scatter_add_dropping_an_update_keeps_signed_zeros(dtype):
    """An out-of-bounds update of a scatter-add is dropped; jit's NumPy code
    adds the identity at the clamped position instead, which must be -0.0
    for floats (adding +0.0 turned a -0.0 there into +0.0; eager kept it)."""
    x = fnp.asarray(np.array([1, 2, complex(-0.0, -0.0)]).astype(dtype)
                    if dtype == np.complex128 else np.array([1, 2, -0.0]).astype(dtype))
    idx = np.array([0, 5])

    def f(x, i):
        return x.at[i].add(np.ones(2, x.dtype))
    eager, jitted = np.asarray(f(x, idx)), np.asarray(fungrad.jit(f)(x, idx))
    np.testing.assert_array_equal(jitted, eager)
    np.testing.assert_array_equal(np.signbit(jitted.real), np.signbit(eager.real))
    np.testing.assert_array_equal(np.signbit(np.imag(jitted)), np.signbit(np.imag(eager)))
