"""``fungrad.Array`` behaves like ``jax.Array`` where JAX programs rely on it:
augmented assignment rebinds (no in-place update), item assignment is a
``TypeError`` pointing to ``x.at[i].set(v)``, and ``isinstance(v,
fungrad.Array)`` holds for tracers inside transformations."""
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.numpy as fnp

FLOAT_OPS = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
             "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
             "**=": operator.ipow}
INT_OPS = {"&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
           "<<=": operator.ilshift, ">>=": operator.irshift}
BINARY = {operator.iadd: operator.add, operator.isub: operator.sub,
          operator.imul: operator.mul, operator.itruediv: operator.truediv,
          operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
          operator.ipow: operator.pow, operator.iand: operator.and_,
          operator.ior: operator.or_, operator.ixor: operator.xor,
          operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
          operator.imatmul: operator.matmul}

floats = hnp.arrays(np.float64, st.integers(0, 4), elements=st.floats(0.5, 3.0))


@pytest.mark.parametrize("name", FLOAT_OPS)
@given(x=floats, y=st.floats(0.5, 3.0))
def test_augmented_assignment_rebinds_and_keeps_other_references(name, x, y):
    iop = FLOAT_OPS[name]
    arr = fnp.asarray(x)
    alias = arr
    out = iop(arr, y)
    assert out is not alias
    np.testing.assert_array_equal(out, BINARY[iop](x, y))
    np.testing.assert_array_equal(alias, x)         # the old array is unchanged


@pytest.mark.parametrize("name", INT_OPS)
@given(x=hnp.arrays(np.int64, st.integers(0, 4), elements=st.integers(0, 50)),
       y=st.integers(0, 5))
def test_augmented_assignment_on_integer_arrays(name, x, y):
    iop = INT_OPS[name]
    arr = fnp.asarray(x)
    alias = arr
    arr = iop(arr, y)
    np.testing.assert_array_equal(arr, BINARY[iop](x, y))
    np.testing.assert_array_equal(alias, x)


def test_matmul_assignment_and_a_training_loop_keeps_its_history():
    w = fnp.ones((2, 2))
    w @= fnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(w, [[4.0, 6.0], [4.0, 6.0]])
    # the JAX idiom: params -= lr * grads, with earlier params kept in a list
    loss = lambda p: fnp.sum((p - 3.0) ** 2)
    params, history = fnp.zeros(3), []
    for _ in range(3):
        history.append(params)
        params -= 0.25 * fungrad.grad(loss)(params)
    np.testing.assert_allclose([h[0] for h in history], [0.0, 1.5, 2.25])
    np.testing.assert_allclose(params, 2.625)


def test_augmented_assignment_inside_transformations():
    def f(x):
        x += 1.0
        x *= x
        x /= 2.0
        return fnp.sum(x)
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(fungrad.grad(f)(x), x + 1.0)
    np.testing.assert_allclose(fungrad.jit(f)(x), f(x))
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(f))(np.stack([x, 2 * x])),
                               [x + 1.0, 2 * x + 1.0])


def test_augmented_assignment_with_a_tracer_operand_gives_a_tracer():
    c = fnp.asarray([1.0, 2.0])

    def f(t):
        y = c
        y += t          # Array += tracer: the tracer's operator runs
        return fnp.sum(y * y)
    np.testing.assert_allclose(fungrad.grad(f)(0.5), 2 * (1.5 + 2.5))


def test_item_assignment_raises_type_error_pointing_to_at():
    x = fnp.arange(3.0)
    with pytest.raises(TypeError, match=r"immutable.*x\.at\[idx\]\.set\(value\)"):
        x[0] = 5.0
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])

    def f(v):
        v[0] = 1.0
        return v
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set"):
        fungrad.jit(f)(np.zeros(2))


def test_numpy_functions_that_fill_their_own_buffers_still_work():
    # np.roll/np.piecewise/np.gradient assign into an empty_like() of their input
    x = fnp.arange(5.0)
    np.testing.assert_array_equal(np.roll(x, 1), np.roll(np.arange(5.0), 1))
    np.testing.assert_array_equal(np.gradient(x ** 2), np.gradient(np.arange(5.0) ** 2))
    np.testing.assert_array_equal(np.piecewise(x, [x > 2], [1.0, 0.0]), [0, 0, 0, 1, 1])


def test_isinstance_array_holds_for_results_and_tracers():
    seen = []

    def f(x):
        seen.append((isinstance(x, fungrad.Array), isinstance(x, fnp.ndarray),
                     isinstance(x, np.ndarray)))
        return fnp.sum(x * x)
    x = np.ones(2)
    for transform in (fungrad.grad, fungrad.jit, fungrad.vmap, fungrad.jacfwd,
                      fungrad.make_jaxpr):
        transform(f)(x)
    assert seen == [(True, True, False)] * 5
    assert isinstance(fnp.ones(2), fungrad.Array)
    assert isinstance(fungrad.grad(f)(x), fungrad.Array)
    assert not isinstance(np.ones(2), fungrad.Array)
    assert not isinstance(1.0, fungrad.Array)
    assert issubclass(fungrad.Array, np.ndarray)


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20), st.integers(-4, 7))
def test_power_by_a_python_int_is_integer_pow_eagerly_as_under_jit(values, exponent):
    # JAX's x ** n for a Python int n is integer_pow (repeated multiplication);
    # the eager operator took NumPy's pow() per element (other bits, 100x slower)
    x = fnp.asarray(np.array(values))
    eager = np.asarray(x ** exponent)
    np.testing.assert_array_equal(eager, np.asarray(fungrad.lax.integer_pow(x, exponent)))
    np.testing.assert_array_equal(eager, np.asarray(fungrad.jit(lambda v: v ** exponent)(x)))
