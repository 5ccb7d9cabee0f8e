"""No silent wrong answers (issue 17 item 4): repeated argnums, eager/jit dtype
agreement, no outputs aliasing the caller's writeable arrays, closed-over
arrays captured by value, non-native byte orders, huge Python ints, and
wrap-time errors for things that are not functions."""
from __future__ import annotations

import operator
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import lax


@pytest.mark.parametrize("transform", [fungrad.grad, fungrad.value_and_grad, fungrad.jacfwd,
                                       fungrad.jacrev])
def test_repeated_argnums_are_refused(transform):
    # JAX fails on argnums=(0, 0) as well; a silent (0.0, 3.0) is never returned
    f = lambda x, y: x * 3.0 + y
    with pytest.raises(ValueError, match="more than once"):
        transform(f, argnums=(0, 0))(1.0, 2.0)
    with pytest.raises(ValueError, match="more than once"):
        transform(f, argnums=(1, -1))(1.0, 2.0)
    assert transform(f, argnums=(0, 1))(1.0, 2.0) is not None


@pytest.mark.parametrize("transform", [fungrad.jit, fungrad.grad, fungrad.value_and_grad,
                                       fungrad.vmap, fungrad.jacfwd, fungrad.jacrev,
                                       fungrad.hessian, fungrad.make_jaxpr])
@pytest.mark.parametrize("not_a_function", [3, "f", None, np.ones(2)])
def test_not_a_function_fails_when_wrapped(transform, not_a_function):
    if transform is fungrad.jit and not_a_function is None:
        return          # jit(None, static_argnames=...) is the decorator form
    with pytest.raises(TypeError, match="callable"):
        transform(not_a_function)


_DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64,
           np.complex64]
_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "truediv": operator.truediv, "pow2": lambda x, y: x ** 2, "pow3": lambda x, y: x ** 3,
        "powf": lambda x, y: x ** 2.0, "neg": lambda x, y: -x, "abs": lambda x, y: abs(x),
        "eq": operator.eq, "lt": lambda x, y: x < y, "scalar_add": lambda x, y: x + 1,
        "scalar_mul": lambda x, y: 2.5 * x, "rpow": lambda x, y: 2 ** x}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(_OPS)), st.sampled_from(_DTYPES), st.sampled_from(_DTYPES))
def test_eager_and_jit_give_the_same_dtypes(op, dx, dy):
    x = fnp.asarray(np.array([1, 0, 1]).astype(dx))
    y = fnp.asarray(np.array([1, 1, 0]).astype(dy))
    fun = _OPS[op]
    try:
        with np.errstate(all="ignore"):
            want = fun(x, y)
    except (TypeError, ValueError):       # NumPy refuses it eagerly: so must jit
        with pytest.raises((TypeError, ValueError)):
            fungrad.jit(fun)(x, y)
        return
    with np.errstate(all="ignore"):
        got = fungrad.jit(fun)(x, y)
        batched = fungrad.vmap(fun)(x, y)
    assert got.dtype == want.dtype, (op, dx, dy)
    assert batched.dtype == want.dtype, (op, dx, dy)


def test_bool_squared_is_int32_everywhere_as_in_jax():
    # JAX 0.10.2 (x64 on): bool ** 2, bool ** 3 and square(bool) are int32
    # (NumPy's: int8 and int64); 2 ** bool is the weak default int, int64
    b = np.array([True, False])
    want = (fnp.asarray(b) ** 2).dtype
    assert want == np.int32 == fnp.square(b).dtype
    assert fungrad.jit(lambda x: x ** 2)(b).dtype == want
    assert fungrad.vmap(lambda x: x ** 2)(b).dtype == want
    assert fungrad.jit(lambda x: x ** 3)(b).dtype == np.int32
    assert fungrad.jit(lambda x: 2 ** x)(b).dtype == np.int64


_VIEWS = {"identity": lambda x: x, "transpose": lambda x: x.T, "slice": lambda x: x[1:],
          "reshape": lambda x: x.reshape(-1), "broadcast": lambda x: fnp.broadcast_to(x, (2,) + x.shape),
          "astype_same": lambda x: x.astype(x.dtype), "pair": lambda x: (x, x[::-1]),
          "real": lambda x: fnp.real(x), "stop_gradient": lambda x: lax.stop_gradient(x),
          "cond": lambda x: lax.cond(True, lambda v: v, lambda v: v * 2.0, x)}


def _leaves(out):
    return fungrad.tree_util.tree_leaves(out)


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_outputs_are_never_views_of_the_callers_writeable_array(name):
    f = _VIEWS[name]
    a = np.arange(6.0).reshape(2, 3)
    results = {"jit": fungrad.jit(f)(a), "jit again": fungrad.jit(f)(a),
               "vmap": fungrad.vmap(f)(a), "vjp": fungrad.vjp(f, a)[0]}
    snapshot = {k: [np.array(o) for o in _leaves(v)] for k, v in results.items()}
    for where, out in results.items():
        for o in _leaves(out):
            assert not np.shares_memory(o, a), (name, where)
    a[...] = -1.0             # the caller changes its array in place
    for where, out in results.items():
        for o, before in zip(_leaves(out), snapshot[where]):
            np.testing.assert_array_equal(o, before)


@pytest.mark.parametrize("name", ["identity", "reshape", "real", "pair"])
def test_cotangents_out_of_a_pullback_are_never_views_of_the_callers_cotangent(name):
    # a linear path (identity, reshape) hands the cotangent back as it is
    f = {"identity": lambda x: x, "reshape": lambda x: x.reshape(3, 2),
         "real": lambda x: fnp.real(x), "pair": lambda x: (x, x)}[name]
    a = np.arange(6.0).reshape(2, 3)
    out, pullback = fungrad.vjp(f, a)
    pullbacks = {"vjp": pullback, "linear_transpose": fungrad.linear_transpose(f, a)}
    for where, pull in pullbacks.items():
        cts = fungrad.tree_util.tree_map(lambda o: np.ones(o.shape), out)
        res = pull(cts)
        for c in _leaves(cts):
            for o in _leaves(res):
                assert not np.shares_memory(o, c), (name, where)
        before = [np.array(o) for o in _leaves(res)]
        for c in _leaves(cts):
            c[...] = -5.0     # the caller reuses its cotangent buffer
        for o, b in zip(_leaves(res), before):
            np.testing.assert_array_equal(o, b)


def test_read_only_inputs_may_be_shared():
    # fungrad Arrays are immutable: passing them through costs no copy
    x = fnp.arange(4.0)
    assert np.shares_memory(fungrad.jit(lambda v: v)(x), x)


def test_closed_over_arrays_are_captured_by_value():
    c = np.ones(3)
    f = fungrad.jit(lambda x: x + c)
    g = fungrad.jit(fungrad.grad(lambda x: fnp.sum(x * c)))
    np.testing.assert_array_equal(f(1.0), [2.0] * 3)
    np.testing.assert_array_equal(g(np.ones(3)), [1.0] * 3)
    c[:] = 5.0                # later in-place changes do not reach compiled code
    np.testing.assert_array_equal(f(1.0), [2.0] * 3)
    np.testing.assert_array_equal(g(np.ones(3)), [1.0] * 3)
    # a 0-d array becomes a literal: also by value
    s = np.array(2.0)
    h = fungrad.jit(lambda x: x * s)
    assert h(1.0) == 2.0
    s[...] = 7.0
    assert h(1.0) == 2.0


_BYTE_ORDER_PROGRAMS = {
    "lax.add": lambda a, b: lax.add(a, b),
    "dot": lambda a, b: lax.dot(a, b),
    "cond": lambda a, b: lax.cond(True, lambda x: x + b, lambda x: x * 2.0, a),
    "fori": lambda a, b: lax.fori_loop(0, 2, lambda i, x: x + b, a),
    "scan": lambda a, b: lax.scan(lambda c, x: (c + x, c), a[0], b)[0],
}


@pytest.mark.parametrize("name", sorted(_BYTE_ORDER_PROGRAMS))
def test_non_native_byte_order_is_the_same_number_type(name):
    f = _BYTE_ORDER_PROGRAMS[name]
    native = np.array([1.0, 2.0, 3.0])
    swapped = native.astype(native.dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative
    want = f(native, native)
    loss = lambda a, b: fnp.sum(f(a, b) ** 2)
    for a, b in ((swapped, native), (native, swapped), (swapped, swapped)):
        for fun in (f, fungrad.jit(f)):
            np.testing.assert_allclose(fun(a, b), want, rtol=1e-15)
        np.testing.assert_allclose(fungrad.grad(loss)(a, b), fungrad.grad(loss)(native, native),
                                   rtol=1e-15)
    assert fungrad.make_jaxpr(f)(swapped, native).in_avals[0].dtype == np.float64


def test_huge_python_ints_raise_overflow_naming_the_argument():
    f = fungrad.jit(lambda x, y: x + y)
    with pytest.raises(OverflowError, match="argument 'y'.*too large"):
        f(1, 2 ** 70)
    assert f(1, 2) == 3                     # now cached for ints
    with pytest.raises(OverflowError, match="argument 'y'.*too large"):
        f(1, 2 ** 70)


@pytest.mark.parametrize("value", ["hello", b"raw", object(), (i for i in range(2)),
                                   np.array(["a"]), np.array([None])])
def test_outputs_that_are_not_arrays_raise_naming_the_output(value):
    with pytest.raises(TypeError, match="output 1"):
        fungrad.jit(lambda x: (x, value))(1.0)
    with pytest.raises(TypeError, match="not a valid array"):
        fungrad.vmap(lambda x: value)(np.ones(2))


@pytest.mark.parametrize("who, apply", [
    ("grad", lambda f: fungrad.grad(f)), ("value_and_grad", lambda f: fungrad.value_and_grad(f)),
    ("jvp", lambda f: fungrad.jvp(f, (1.0,), (1.0,))), ("vjp", lambda f: fungrad.vjp(f, 1.0)),
    ("linearize", lambda f: fungrad.linearize(f, 1.0)),
    ("linear_transpose", lambda f: fungrad.linear_transpose(f, 1.0)),
    ("vmap", lambda f: fungrad.vmap(f)), ("jacfwd", lambda f: fungrad.jacfwd(f)),
    ("jacrev", lambda f: fungrad.jacrev(f)), ("hessian", lambda f: fungrad.hessian(f)),
    ("make_jaxpr", lambda f: fungrad.make_jaxpr(f)), ("eval_shape", lambda f: fungrad.eval_shape(f, 1.0)),
    ("jit", lambda f: fungrad.jit(f)), ("checkpoint", lambda f: fungrad.checkpoint(f)),
    ("custom_jvp", lambda f: fungrad.custom_jvp(f)), ("custom_vjp", lambda f: fungrad.custom_vjp(f)),
    ("custom_jvp.defjvp", lambda f: fungrad.custom_jvp(np.sin).defjvp(f)),
    ("custom_vjp.defvjp", lambda f: fungrad.custom_vjp(np.sin).defvjp(f, f)),
])
def test_a_transform_of_something_not_callable_names_the_transform(who, apply):
    # (when the transformation is applied, not at the first call)
    with pytest.raises(TypeError, match=rf"^{re.escape(who)}\b.*expected a callable.*got str"):
        apply("f")
