"""custom_vmap and sequential_vmap (jax.custom_batching): the rule runs under
vmap (nested, inside and outside jit), the function elsewhere; jvp composes
with the rule (JAX's construction); reverse mode through custom_vjp."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as jnp
from fungrad import lax
from fungrad.custom_batching import custom_vmap, sequential_vmap


def make_f(log):
    @custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        log.append((axis_size, tuple(in_batched)))
        return jnp.sin(xs) * ys, any(in_batched)   # the same function, batched by broadcasting
    return f


def test_jax_docstring_example_rule_replaces_the_function_under_vmap():
    @custom_vmap
    def f(x, y):
        return x + y

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        assert all(in_batched) and xs.shape[0] == axis_size and ys.shape[0] == axis_size
        return xs * ys, True
    xs, ys = jnp.arange(3.0), jnp.arange(1.0, 4.0)
    np.testing.assert_array_equal(fungrad.vmap(f)(xs, ys), [0.0, 2.0, 6.0])
    np.testing.assert_array_equal(fungrad.jit(fungrad.vmap(f))(xs, ys), [0.0, 2.0, 6.0])
    np.testing.assert_array_equal(fungrad.vmap(fungrad.jit(f))(xs, ys), [0.0, 2.0, 6.0])
    assert float(f(2.0, 3.0)) == 5.0 and float(fungrad.jit(f)(2.0, 3.0)) == 5.0


@settings(max_examples=20)
@given(st.integers(1, 4), st.sampled_from([(0, 0), (0, None), (None, 0), (1, 0)]))
def test_vmap_equals_a_loop(size, axes):
    log = []
    f = make_f(log)
    rng = np.random.default_rng(size)
    x = rng.normal(size=(size, 2) if axes[0] == 0 else (2, size) if axes[0] == 1 else (2,))
    y = rng.normal(size=(size, 2) if axes[1] == 0 else (2,))
    got = fungrad.vmap(f, in_axes=axes)(x, y)
    lanes = [np.sin(np.take(x, i, axes[0]) if axes[0] is not None else x)
             * (y[i] if axes[1] is not None else y) for i in range(size)]
    np.testing.assert_allclose(got, np.stack(lanes), rtol=1e-14)
    assert log[-1] == (size, (axes[0] is not None, axes[1] is not None))


def test_nested_vmap_the_rule_runs_innermost_and_is_batched_by_the_outer():
    log = []
    f = make_f(log)
    x = np.arange(6.0).reshape(2, 3)
    y = np.array([2.0, -1.0])
    got = fungrad.vmap(fungrad.vmap(f, in_axes=(0, None)), in_axes=(0, 0))(x, y)
    np.testing.assert_allclose(got, np.sin(x) * y[:, None], rtol=1e-14)
    assert log == [(3, (True, False))]
    got = fungrad.jit(fungrad.vmap(fungrad.vmap(f, in_axes=(0, None)), in_axes=(0, 0)))(x, y)
    np.testing.assert_allclose(got, np.sin(x) * y[:, None], rtol=1e-14)


def test_jvp_of_vmap_and_vmap_of_jvp():
    log = []
    f = make_f(log)
    x, y = np.array([0.1, 0.7, -1.2]), np.array([2.0, -1.0, 0.5])
    tx, ty = np.array([1.0, 0.5, -2.0]), np.array([0.3, 0.2, 0.1])
    want = np.cos(x) * tx * y + np.sin(x) * ty
    out, t = fungrad.jvp(fungrad.vmap(f), (x, y), (tx, ty))
    np.testing.assert_allclose(t, want, rtol=1e-13)
    assert log[-1] == (3, (True, True))
    # tangents not batched: the rule sees unbatched arguments, vmap maps the rest
    out, t = fungrad.vmap(lambda a, b: fungrad.jvp(f, (a, b), (1.0, 0.0)))(x, y)
    np.testing.assert_allclose(t, np.cos(x) * y, rtol=1e-13)
    assert log[-1] == (3, (False, False))
    np.testing.assert_allclose(fungrad.jacfwd(fungrad.vmap(f))(x, y), np.diag(np.cos(x) * y),
                               rtol=1e-13, atol=1e-15)
    # second order: the rule of the rule
    h = fungrad.vmap(lambda a: fungrad.jvp(lambda b: fungrad.jvp(f, (b, 1.0), (1.0, 0.0))[1],
                                           (a,), (1.0,))[1])
    np.testing.assert_allclose(h(x), -np.sin(x), rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(h)(x), -np.sin(x), rtol=1e-13)


def test_reverse_mode_through_custom_vjp_outside():
    @fungrad.custom_vjp
    @custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap                      # custom_vjp forwards def_vmap to the function inside
    def rule(axis_size, in_batched, xs, ys):
        return jnp.cos(xs) * ys, True

    f.defvjp(lambda x, y: (f(x, y), (jnp.cos(x), jnp.sin(x), y)),
             lambda res, g: (res[0] * g * res[2], res[1] * g))
    np.testing.assert_array_equal(fungrad.vmap(f)(jnp.zeros(3), jnp.ones(3)), np.ones(3))
    assert float(fungrad.grad(f)(0.0, 1.0)) == 1.0
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(f))(np.array([0.0, 0.5]), np.ones(2)),
                               np.cos([0.0, 0.5]), rtol=1e-14)


def test_bad_input():
    @custom_vmap
    def no_rule(x):
        return x
    with pytest.raises(AttributeError, match="No batching rule defined"):
        no_rule(1.0)
    with pytest.raises(TypeError, match="expected a callable"):
        custom_vmap(3)
    f = make_f([])
    with pytest.raises(TypeError, match="no reverse-mode derivative.*custom_vjp"):
        fungrad.grad(f)(1.0, 2.0)

    @custom_vmap
    def g(x):
        return x * 2

    @g.def_vmap
    def wrong_structure(axis_size, in_batched, xs):
        return (xs, xs), True
    with pytest.raises(ValueError, match="differ in structure"):
        fungrad.vmap(g)(np.ones(3))

    @g.def_vmap
    def wrong_shape(axis_size, in_batched, xs):
        return xs[0], True
    with pytest.raises(ValueError, match=r"output 0 has shape \(\); with out_batched=True "
                                         r"it must be \(3,\)"):
        fungrad.vmap(g)(np.ones(3))

    def closes_over(x):
        @custom_vmap
        def h(y):
            return x * y

        @h.def_vmap
        def rule(axis_size, in_batched, ys):
            return x * ys, True
        return h(1.0)
    with pytest.raises(TypeError, match="closes over a value that is being vmapped"):
        fungrad.vmap(closes_over)(np.ones(3))


def test_sequential_vmap_maps_one_lane_at_a_time():
    traced_shapes = []

    @sequential_vmap
    def f(x, y):
        traced_shapes.append(jnp.shape(x))
        return jnp.sum(x) * y
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(fungrad.vmap(f, in_axes=(0, None))(x, 2.0), x.sum(1) * 2.0)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(f))(x, np.arange(3.0)),
                               x.sum(1) * np.arange(3.0))
    assert traced_shapes[-1] == (2,)          # the function only ever sees one lane
    jaxpr = str(fungrad.make_jaxpr(fungrad.vmap(f))(x, np.arange(3.0)))
    assert "scan" in jaxpr
