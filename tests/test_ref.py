"""Mutable array refs (``fungrad.ref``: ``jax.new_ref``, ``jax.Ref``,
``jax.freeze``, ``jax.ref.get/set/swap/addupdate``), eagerly, against NumPy
arrays mutated in place; under transformations they raise naming the
transformation."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import ref as fref

finite = st.floats(-100, 100, allow_nan=False)


def test_read_write_and_freeze():
    r = fungrad.new_ref(fnp.arange(5.0))
    assert isinstance(r, fungrad.Ref) and not isinstance(r, fungrad.Array)
    assert r.shape == (5,) and r.dtype == np.float64 and r.ndim == 1 and len(r) == 5
    r[1:3] = fnp.array([7.0, 8.0])
    r[0] = 5.0                                  # a Python scalar takes the ref's dtype
    np.testing.assert_array_equal(r[...], [5.0, 7.0, 8.0, 3.0, 4.0])
    assert float(r[2]) == 8.0
    np.testing.assert_array_equal(fungrad.freeze(r), [5.0, 7.0, 8.0, 3.0, 4.0])
    assert repr(r) == "Ref([5., 7., 8., 3., 4.])"


def test_typeof_is_an_abstract_ref():
    r = fungrad.new_ref(fnp.zeros((2, 3), np.float32))
    ty = fungrad.typeof(r)
    assert isinstance(ty, fref.AbstractRef) and ty.inner_aval == fungrad.core.ShapedArray((2, 3), np.float32)
    assert ty.shape == (2, 3) and ty == fref.AbstractRef(ty.inner_aval)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6), finite), max_size=8))
def test_index_writes_match_numpy(writes):
    expected = np.linspace(-1.0, 1.0, 6)
    r = fungrad.new_ref(expected.copy())
    for start, stop, value in writes:
        expected[start:stop] = value
        r[start:stop] = np.full(len(expected[start:stop]), value)
    np.testing.assert_array_equal(r[...], expected)


def test_array_indices():
    r = fungrad.new_ref(fnp.arange(4.0))
    r[np.array([0, 2])] = fnp.array([9.0, 8.0])
    np.testing.assert_array_equal(r[np.array([2, 0])], [8.0, 9.0])
    np.testing.assert_array_equal(r[...], [9.0, 1.0, 8.0, 3.0])


def test_swap_addupdate_get_set():
    r = fungrad.new_ref(fnp.ones(3))
    old = fref.swap(r, (), fnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(old, np.ones(3))
    fref.addupdate(r, slice(0, 2), fnp.array([10.0, 20.0]))
    r.addupdate(fnp.ones(3))
    fref.set(r, 2, 0.5)
    np.testing.assert_array_equal(fref.get(r), [12.0, 23.0, 0.5])


def test_writes_keep_shape_and_dtype_as_jax():
    r = fungrad.new_ref(fnp.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        r[...] = 1.0                            # no broadcasting, as in JAX
    with pytest.raises(ValueError, match="dtype"):
        r[...] = fnp.zeros(3, np.int32)
    with pytest.raises(TypeError, match="not an array"):
        np.asarray(r)


def test_free_ref_and_empty_ref():
    r = fref.empty_ref(fungrad.ShapeDtypeStruct((2,), np.float32))
    assert r.shape == (2,) and r.dtype == np.float32
    fref.free_ref(r)
    with pytest.raises(ValueError, match="freed"):
        r[...]


def test_refs_of_typed_keys():
    keys = fungrad.random.split(fungrad.random.key(0), 3)
    r = fungrad.new_ref(keys)
    assert fungrad.typeof(r).inner_aval.dtype == keys.dtype and r.shape == (3,)
    r[...] = fungrad.random.split(fungrad.random.key(1), 3)
    np.testing.assert_array_equal(fungrad.random.key_data(r[...]),
                                  fungrad.random.key_data(fungrad.random.split(fungrad.random.key(1), 3)))


@pytest.mark.parametrize("transform", [fungrad.jit, fungrad.grad, fungrad.vmap])
def test_refs_under_transformations_raise_naming_them(transform):
    r = fungrad.new_ref(fnp.zeros(()))

    def reads(x):
        return r[...] + x

    def creates(x):
        return fungrad.new_ref(x)[...]

    for f in (reads, creates):
        with pytest.raises(NotImplementedError, match=r"under a transformation \(\w+.*eagerly only"):
            transform(f)(fnp.ones(()) if transform is not fungrad.vmap else fnp.ones(2))


def test_a_ref_as_a_jit_argument_raises():
    r = fungrad.new_ref(fnp.zeros(2))
    with pytest.raises(NotImplementedError, match="eagerly only"):
        fungrad.jit(lambda ref: ref)(r)
