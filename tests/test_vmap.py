"""vmap: axes specs, nesting, composition with autodiff, collectives, errors."""
from __future__ import annotations

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, vmap, grad, jvp, vjp, jacfwd, jacrev, hessian


def _loop(f, *xs):
    return np.stack([np.asarray(f(*x)) for x in zip(*xs)])


def test_in_axes_ints_none_negative_and_out_axes():
    x = np.arange(12.0).reshape(3, 4)
    y = np.arange(4.0)
    f = lambda a, b: fnp.sin(a) * b
    np.testing.assert_allclose(vmap(f, in_axes=(0, None))(x, y), np.sin(x) * y)
    np.testing.assert_allclose(vmap(f, in_axes=(1, None))(x.T, y), np.sin(x) * y)
    np.testing.assert_allclose(vmap(f, in_axes=(-1, None))(x.T, y), np.sin(x) * y)
    np.testing.assert_allclose(vmap(f, in_axes=(0, None), out_axes=1)(x, y), (np.sin(x) * y).T)
    np.testing.assert_allclose(vmap(f, in_axes=(0, None), out_axes=-1)(x, y), (np.sin(x) * y).T)


def test_in_axes_pytree_prefix_and_kwargs():
    params = {"w": np.arange(3.0), "b": np.array(1.0)}
    xs = np.arange(6.0).reshape(2, 3)
    f = lambda p, x: fnp.sum(p["w"] * x) + p["b"]
    out = vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(out, xs @ params["w"] + 1.0)
    out = vmap(f, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(out, xs @ params["w"] + 1.0)
    # keyword arguments are mapped over their axis 0
    g = lambda x, *, scale: x * scale
    np.testing.assert_allclose(vmap(g)(xs, scale=np.array([2.0, 3.0])[:, None]),
                               xs * np.array([[2.0], [3.0]]))


def test_out_axes_pytree_and_none():
    xs = np.arange(6.0).reshape(2, 3)
    f = lambda x: {"a": x * 2, "c": np.float64(1.0)}
    out = vmap(f, out_axes={"a": 1, "c": None})(xs)
    np.testing.assert_allclose(out["a"], (xs * 2).T)
    assert np.shape(out["c"]) == ()


def test_axis_size_when_nothing_is_mapped():
    out = vmap(lambda x: x + 1.0, in_axes=None, axis_size=4)(np.float64(2.0))
    np.testing.assert_allclose(out, np.full(4, 3.0))


def test_nested_vmap_is_outer_product():
    f = lambda a, b: a * b
    out = vmap(vmap(f, in_axes=(None, 0)), in_axes=(0, None))(np.arange(3.0), np.arange(4.0))
    np.testing.assert_allclose(out, np.outer(np.arange(3.0), np.arange(4.0)))


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.log1p(fnp.exp(-y * (h @ w2 + b2)))


def _mlp_setup():
    rng = np.random.default_rng(0)
    params = (rng.normal(size=(5, 4)), rng.normal(size=4), rng.normal(size=4), 0.3)
    xs, ys = rng.normal(size=(7, 5)), np.where(rng.random(7) < 0.5, -1.0, 1.0)
    return params, xs, ys


def test_per_example_gradients_equal_loop_of_grad():
    params, xs, ys = _mlp_setup()
    per_ex = vmap(grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    loop = [grad(mlp_loss)(params, x, y) for x, y in zip(xs, ys)]
    for i in range(4):
        np.testing.assert_allclose(per_ex[i], np.stack([g[i] for g in loop]), rtol=1e-12)


def test_grad_of_vmap_equals_sum_of_grads():
    params, xs, ys = _mlp_setup()
    total = lambda p: fnp.sum(vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))
    g = grad(total)(params)
    loop = [grad(mlp_loss)(params, x, y) for x, y in zip(xs, ys)]
    for i in range(4):
        np.testing.assert_allclose(g[i], sum(l[i] for l in loop), rtol=1e-12)


def test_vmap_of_jvp_and_vjp():
    f = lambda x: fnp.sin(x) * x
    xs = np.linspace(-1, 1, 5)
    ts = np.linspace(0.5, 1.5, 5)
    _, jv = vmap(lambda x, t: jvp(f, (x,), (t,)))(xs, ts)
    np.testing.assert_allclose(jv, (np.cos(xs) * xs + np.sin(xs)) * ts, rtol=1e-13)
    cts = vmap(lambda x, u: vjp(f, x)[1](u)[0])(xs, ts)
    np.testing.assert_allclose(cts, (np.cos(xs) * xs + np.sin(xs)) * ts, rtol=1e-13)


def test_jacobians_and_hessian_batched_in_one_call():
    f = lambda x: fnp.stack([x[0] * x[1], fnp.sin(x[2]), x[0] ** 2])
    x = np.array([0.3, 1.2, -0.7])
    want = np.array([[x[1], x[0], 0], [0, 0, np.cos(x[2])], [2 * x[0], 0, 0]])
    np.testing.assert_allclose(jacfwd(f)(x), want, rtol=1e-13)
    np.testing.assert_allclose(jacrev(f)(x), want, rtol=1e-13)
    g = lambda x: fnp.sum(x ** 3) + x[0] * x[1]
    H = hessian(g)(x)
    np.testing.assert_allclose(H, np.diag(6 * x) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]))


def test_collectives_match_numpy():
    xs = np.array([1.0, 4.0, 2.0, 3.0])
    np.testing.assert_allclose(vmap(lambda x: lax.psum(x, "i"), axis_name="i")(xs), np.full(4, 10.0))
    np.testing.assert_allclose(vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(xs), xs / 10)
    np.testing.assert_allclose(vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(xs), np.full(4, 2.5))
    np.testing.assert_allclose(vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(xs), np.full(4, 4.0))
    np.testing.assert_allclose(vmap(lambda x: lax.pmin(x, "i"), axis_name="i")(xs), np.full(4, 1.0))
    np.testing.assert_array_equal(vmap(lambda x: lax.axis_index("i"), axis_name="i")(xs), np.arange(4))
    gathered = vmap(lambda x: lax.all_gather(x, "i"), axis_name="i")(xs)
    np.testing.assert_allclose(gathered, np.tile(xs, (4, 1)))


def test_collectives_nested_axes():
    x = np.arange(6.0).reshape(2, 3)
    f = lambda v: lax.psum(v, "rows")
    out = vmap(vmap(f, axis_name="cols"), axis_name="rows")(x)
    np.testing.assert_allclose(out, np.tile(x.sum(0), (2, 1)))
    out = vmap(vmap(lambda v: lax.psum(v, "cols"), axis_name="cols"), axis_name="rows")(x)
    np.testing.assert_allclose(out, np.tile(x.sum(1, keepdims=True), (1, 3)))


def test_grad_through_collective():
    xs = np.array([1.0, 2.0, 3.0])
    # per-lane normalisation x / psum(x): d/dx_i sum_j (x_j / S) = 0
    g = grad(lambda v: fnp.sum(vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(v)))(xs)
    np.testing.assert_allclose(g, np.zeros(3), atol=1e-15)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------

def test_inconsistent_sizes_list_each_argument():
    with pytest.raises(ValueError, match=r"(?s)inconsistent sizes.*args\[0\]: axis 0.*size 3.*args\[1\]: axis 0.*size 4"):
        vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))


def test_in_axes_structure_mismatch():
    with pytest.raises(ValueError, match="in_axes"):
        vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="prefix"):
        vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones(3)})


def test_axis_out_of_range():
    with pytest.raises(ValueError, match="out of bounds"):
        vmap(lambda a: a, in_axes=2)(np.ones((3, 2)))


def test_out_axes_none_for_batched_output():
    with pytest.raises(ValueError, match="out_axes=None"):
        vmap(lambda a: a * 2, out_axes=None)(np.ones(3))


def test_unknown_axis_name_names_bound_axes():
    with pytest.raises(NameError, match=r"'j'.*\['i'\]"):
        vmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.ones(3))


# ----------------------------------------------------------------------------
# Random compositions: vmap of grad / jvp / vjp equals a loop
# ----------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_OPS = {
    "sin": lambda a, b: fnp.sin(a), "tanh": lambda a, b: fnp.tanh(a),
    "mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
    "exp_neg_sq": lambda a, b: fnp.exp(-a * a), "sum_bcast": lambda a, b: a + fnp.sum(b),
    "max": lambda a, b: fnp.maximum(a, b * 0.5), "cumsum": lambda a, b: fnp.cumsum(a),
    "flip": lambda a, b: a[::-1] * b, "dot": lambda a, b: a * fnp.dot(a, b),
}


def _program(ops):
    def f(x, y):
        vals = [x, y]
        for name, i, j in ops:
            vals.append(_OPS[name](vals[i % len(vals)], vals[j % len(vals)]))
        return fnp.sum(vals[-1] ** 2) + fnp.sum(vals[-2])
    return f


_programs = st.lists(st.tuples(st.sampled_from(sorted(_OPS)), st.integers(0, 9),
                               st.integers(0, 9)), min_size=1, max_size=6)


@settings(max_examples=12)
@given(_programs, st.integers(0, 2**31 - 1))
def test_vmap_of_autodiff_of_random_programs(ops, seed):
    f = _program(ops)
    rng = np.random.default_rng(seed)
    xs, ys, ts = (rng.uniform(-1, 1, size=(3, 4)) for _ in range(3))
    g = vmap(grad(f, argnums=(0, 1)))(xs, ys)
    for k in range(3):
        want = grad(f, argnums=(0, 1))(xs[k], ys[k])
        np.testing.assert_allclose(g[0][k], want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g[1][k], want[1], rtol=1e-10, atol=1e-12)
    out, tan = vmap(lambda x, y, t: jvp(f, (x, y), (t, t)))(xs, ys, ts)
    for k in range(3):
        w_out, w_tan = jvp(f, (xs[k], ys[k]), (ts[k], ts[k]))
        np.testing.assert_allclose(tan[k], w_tan, rtol=1e-10, atol=1e-12)
    cts = vmap(lambda x, y, u: vjp(f, x, y)[1](u))(xs, ys, ts[:, 0])
    for k in range(3):
        want = vjp(f, xs[k], ys[k])[1](ts[k, 0])
        np.testing.assert_allclose(cts[0][k], want[0], rtol=1e-10, atol=1e-12)
    # and jit of the batched gradient equals it too
    gj = fungrad.jit(vmap(grad(f, argnums=(0, 1))))(xs, ys)
    np.testing.assert_allclose(gj[0], g[0], rtol=1e-12, atol=1e-14)
