"""Compiled code runs on plain ndarrays (issue 28): fungrad Arrays enter jitted
code as ndarray views of their buffers (no copy), constants captured at trace
time are stored as plain ndarrays, results leave as read-only Arrays once, and
eager primitives' impls see plain ndarrays too.  NumPy's ufuncs cost about
twice as much on an ndarray subclass, so this is what makes a jitted function
as fast on the Arrays users pass as on NumPy arrays.  The no-aliasing and
read-only guarantees of README "Choices" are unchanged."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.numpy as fnp
from fungrad import core, jitting
from fungrad.interpreters import codegen


class _Marked(np.ndarray):
    """An ndarray subclass of the user's (not fungrad's)."""


@pytest.fixture
def seen(monkeypatch):
    """The types and arrays every newly compiled function is called with."""
    calls = []
    compile_source = codegen.compile_source

    def spying_compile_source(*args, **kwargs):
        fn = compile_source(*args, **kwargs)

        def spy(*xs):
            calls.append(xs)
            return fn(*xs)
        return spy
    monkeypatch.setattr(codegen, "compile_source", spying_compile_source)
    return calls


def _chain(x):
    for _ in range(3):
        x = fnp.sin(x) * 1.0001
        x = fnp.cos(x) + 0.1
    return fnp.sum(x)


_floats = st.floats(-3, 3, allow_nan=False)


@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=4), elements=_floats))
def test_arrays_and_ndarrays_give_the_same_results(x):
    fungrad.clear_caches()
    g = fungrad.jit(fungrad.value_and_grad(_chain))
    v_nd, g_nd = g(x)
    v_arr, g_arr = g(fnp.asarray(x))
    np.testing.assert_allclose(v_arr, v_nd, rtol=1e-15, atol=0)
    np.testing.assert_allclose(g_arr, g_nd, rtol=1e-15, atol=0)
    for out in (v_arr, g_arr):
        assert type(out) is fungrad.Array and not out.flags.writeable


def test_arrays_enter_compiled_code_as_plain_views_without_a_copy(seen):
    c = fnp.arange(4.0)                       # captured at trace time: a constant
    x = fnp.asarray(np.linspace(-1, 1, 4))
    out = fungrad.jit(lambda x: fnp.sin(x) * c + fnp.sum(c * x))(x)
    (args,) = seen
    assert [type(a) for a in args] == [np.ndarray, np.ndarray]
    const, arg = args
    assert np.shares_memory(arg, x) and not arg.flags.writeable
    np.testing.assert_array_equal(const, np.arange(4.0))
    assert type(out) is fungrad.Array
    np.testing.assert_allclose(out, np.sin(x) * c + np.sum(c * x), rtol=1e-14)


def test_constants_of_nested_blocks_are_plain(seen):
    c = fnp.asarray([1.0, 2.0])

    def f(x):
        return fungrad.lax.cond(x[0] > 0, lambda y: y * c, lambda y: y - c, x)
    out = fungrad.jit(f)(fnp.asarray([1.0, 1.0]))
    np.testing.assert_allclose(out, [1.0, 2.0])
    assert seen and all(type(a) is np.ndarray for call in seen for a in call)
    comp = codegen.compiled(fungrad.make_jaxpr(f)(np.ones(2)))
    assert all(type(c) is not fungrad.Array for c in comp.consts)


def test_other_ndarray_subclasses_keep_todays_behaviour(seen):
    x = np.arange(3.0).view(_Marked)
    out = fungrad.jit(lambda x: x * 2.0)(x)
    assert type(seen[0][0]) is _Marked        # passed as it is, as before
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert type(out) is fungrad.Array


@pytest.mark.parametrize("f", [lambda x: x, lambda x: x.T, lambda x: x[1:], lambda x: x * 2.0],
                         ids=["identity", "transpose", "slice", "product"])
def test_aliasing_guarantees_are_unchanged(f):
    base = np.arange(6.0).reshape(2, 3)
    writeable = base.copy()
    out = fungrad.jit(f)(writeable)               # never a view of a writeable argument
    assert not np.shares_memory(out, writeable)
    shared = fnp.asarray(base)
    out = fungrad.jit(f)(shared)
    assert type(out) is fungrad.Array and not out.flags.writeable
    np.testing.assert_array_equal(out, f(base))
    with pytest.raises((TypeError, ValueError)):
        out[(0,) * out.ndim] = 1.0                 # read-only either way


def test_the_callers_buffer_is_never_written():
    buffer = np.linspace(0.0, 1.0, 8)
    before = buffer.copy()
    x = core.wrap_array(buffer)                   # an Array over the caller's memory
    g = fungrad.jit(fungrad.grad(_chain))
    for arg in (x, buffer):
        g(arg)
        np.testing.assert_array_equal(buffer, before)


def test_compiled_code_arguments_is_the_one_entry_conversion():
    x = fnp.asarray([1.0, 2.0])
    plain, scalar, other = jitting.compiled_code_arguments([x, 3.0, np.ones(1).view(_Marked)],
                                                            True)
    assert type(plain) is np.ndarray and not plain.flags.writeable
    assert plain.ctypes.data == x.ctypes.data and plain.strides == x.strides   # a view
    assert type(scalar) is np.float64
    assert type(other) is _Marked
    assert type(jitting.compiled_code_arguments([x], False)[0]) is np.ndarray


@pytest.mark.parametrize("name, call", [
    ("sin", lambda x: fungrad.lax.sin(x)),
    ("mul", lambda x: fungrad.lax.mul(x, x)),
    ("dot_general", lambda x: fungrad.lax.dot(x, x)),
])
def test_eager_impls_see_plain_ndarrays(monkeypatch, name, call):
    prim = core.primitives[name]
    seen_types = []
    impl = prim.impl

    def spy(*xs, **params):
        seen_types.extend(map(type, xs))
        return impl(*xs, **params)
    monkeypatch.setattr(prim, "impl", spy)
    out = call(fnp.asarray([0.5, 1.0]))
    assert seen_types and set(seen_types) == {np.ndarray}
    assert type(out) is fungrad.Array and not out.flags.writeable

