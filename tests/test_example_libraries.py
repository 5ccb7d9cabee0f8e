"""fungrad.example_libraries (jax.example_libraries): the optimizers follow
their published update rules (written here once more in plain NumPy, float64)
over pytrees, eagerly and under jit/scan; stax layers compute what their
definitions say and report the shapes they produce."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, random
from fungrad.example_libraries import optimizers, stax

# ----------------------------------------------------------------------------
# optimizers: every rule against its closed form, step by step
# ----------------------------------------------------------------------------


def numpy_rule(name, **hp):
    """(init, update) of the optimizer ``name`` on one NumPy array."""
    lr = 0.1
    if name == "sgd":
        return (lambda x: [x], lambda i, g, s: [s[0] - lr * g])
    if name in ("momentum", "nesterov"):
        mass = 0.8

        def update(i, g, s):
            v = mass * s[1] + g
            return [s[0] - lr * (v if name == "momentum" else mass * v + g), v]
        return (lambda x: [x, 0 * x], update)
    if name == "adagrad":
        def update(i, g, s):
            gsq = s[1] + g ** 2
            m = 0.1 * g / np.sqrt(gsq) + 0.9 * s[2]
            return [s[0] - lr * m, gsq, m]
        return (lambda x: [x, 0 * x, 0 * x], update)
    if name == "rmsprop":
        def update(i, g, s):
            a = 0.9 * s[1] + 0.1 * g ** 2
            return [s[0] - lr * g / np.sqrt(a + 1e-8), a]
        return (lambda x: [x, 0 * x], update)
    if name == "rmsprop_momentum":
        def update(i, g, s):
            a = 0.9 * s[1] + 0.1 * g ** 2
            m = 0.9 * s[2] + lr * g / np.sqrt(a + 1e-8)
            return [s[0] - m, a, m]
        return (lambda x: [x, 0 * x, 0 * x], update)
    if name == "adam":
        def update(i, g, s):
            m = 0.1 * g + 0.9 * s[1]
            v = 0.001 * g ** 2 + 0.999 * s[2]
            step = (m / (1 - 0.9 ** (i + 1))) / (np.sqrt(v / (1 - 0.999 ** (i + 1))) + 1e-8)
            return [s[0] - lr * step, m, v]
        return (lambda x: [x, 0 * x, 0 * x], update)
    if name == "adamax":
        def update(i, g, s):
            m = 0.1 * g + 0.9 * s[1]
            u = np.maximum(0.999 * s[2], np.abs(g))
            return [s[0] - lr / (1 - 0.9 ** (i + 1)) * m / (u + 1e-8), m, u]
        return (lambda x: [x, 0 * x, 0 * x], update)
    raise AssertionError(name)


MAKERS = {"sgd": lambda: optimizers.sgd(0.1),
          "momentum": lambda: optimizers.momentum(0.1, mass=0.8),
          "nesterov": lambda: optimizers.nesterov(0.1, mass=0.8),
          "adagrad": lambda: optimizers.adagrad(0.1),
          "rmsprop": lambda: optimizers.rmsprop(0.1),
          "rmsprop_momentum": lambda: optimizers.rmsprop_momentum(0.1),
          "adam": lambda: optimizers.adam(0.1),
          "adamax": lambda: optimizers.adamax(0.1)}


def quadratic_grad(params):
    """The gradient of sum((w - 1)^2) + sum(b^2 * 3), by hand."""
    return {"w": 2 * (params["w"] - 1), "b": 6 * params["b"]}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_optimizer_matches_its_update_rule_over_a_pytree(name):
    params = {"w": np.array([[0.5, -1.0], [2.0, 0.0]]), "b": np.array([0.3, -0.2, 1.5])}
    opt_init, opt_update, get_params = MAKERS[name]()
    state = opt_init(params)
    init, update = numpy_rule(name)
    expected = {k: init(v) for k, v in params.items()}
    for i in range(5):
        grads = quadratic_grad(get_params(state))
        state = opt_update(i, grads, state)
        expected_grads = quadratic_grad({k: s[0] for k, s in expected.items()})
        expected = {k: update(i, expected_grads[k], s) for k, s in expected.items()}
        for k in params:
            np.testing.assert_allclose(get_params(state)[k], expected[k][0], rtol=1e-12,
                                       atol=1e-14)


@pytest.mark.parametrize("name", ["adam", "sm3", "momentum"])
def test_optimizer_state_is_a_pytree_through_jit_and_scan(name):
    maker = {"sm3": lambda: optimizers.sm3(0.1), **MAKERS}[name]
    opt_init, opt_update, get_params = maker()
    params = {"w": np.array([[0.5, -1.0], [2.0, 0.0]]), "b": np.array(0.3)}
    eager = opt_init(params)
    for i in range(4):
        eager = opt_update(i, quadratic_grad(get_params(eager)), eager)

    def step(state, i):
        return opt_update(i, quadratic_grad(get_params(state)), state), None
    scanned, _ = fungrad.jit(lambda s: lax.scan(step, s, fnp.arange(4)))(opt_init(params))
    for k in params:
        np.testing.assert_allclose(get_params(scanned)[k], get_params(eager)[k], rtol=1e-12)
        assert np.shape(get_params(scanned)[k]) == np.shape(params[k])


def test_sm3_update_rule_on_a_matrix():
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = np.array([[0.5, -1.0], [2.0, 0.25]])
    opt_init, opt_update, get_params = optimizers.sm3(0.1, momentum=0.5)
    state = opt_update(0, g, opt_init(x))
    # first step: per-axis accumulators are 0, so accum = g^2 and m = 0.5 g / |g|
    np.testing.assert_allclose(get_params(state), x - 0.1 * 0.5 * np.sign(g), rtol=1e-14)
    state = opt_update(1, g, state)
    rows, cols = (g ** 2).max(1), (g ** 2).max(0)
    accum = np.minimum(rows[:, None], cols[None, :]) + g ** 2
    m = 0.5 * g / np.sqrt(accum) + 0.5 * (0.5 * np.sign(g))
    np.testing.assert_allclose(get_params(state), x - 0.05 * np.sign(g) - 0.1 * m, rtol=1e-13)


@given(st.integers(0, 50))
def test_schedules_closed_forms(i):
    np.testing.assert_allclose(optimizers.exponential_decay(0.5, 10, 0.3)(i), 0.5 * 0.3 ** (i / 10))
    np.testing.assert_allclose(optimizers.inverse_time_decay(0.5, 10, 0.3)(i), 0.5 / (1 + 0.03 * i))
    np.testing.assert_allclose(optimizers.inverse_time_decay(0.5, 10, 0.3, staircase=True)(i),
                               0.5 / (1 + 0.3 * (i // 10)))
    np.testing.assert_allclose(optimizers.polynomial_decay(1.0, 20, 0.1, power=2.0)(i),
                               (1 - min(i, 20) / 20) ** 2 * 0.9 + 0.1)
    sched = optimizers.piecewise_constant([5, 20], [1.0, 0.5, 0.1])
    assert float(sched(i)) == (1.0 if i <= 5 else 0.5 if i <= 20 else 0.1)
    assert optimizers.make_schedule(0.25)(i) == 0.25


def test_schedule_step_size_and_errors():
    opt_init, opt_update, get_params = optimizers.sgd(lambda i: 0.1 / (i + 1))
    state = opt_init(np.array(1.0))
    for i in range(3):
        state = opt_update(i, np.array(1.0), state)
    np.testing.assert_allclose(get_params(state), 1 - 0.1 * (1 + 1 / 2 + 1 / 3))
    with pytest.raises(TypeError, match="step_size must be a scalar or a schedule"):
        optimizers.sgd(np.ones(2))
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [1.0])
    opt_init, opt_update, _ = optimizers.adam(0.1)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        opt_update(0, [np.ones(2)], opt_init({"a": np.ones(2)}))


def test_clip_grads_l2_norm_and_pack_unpack():
    tree = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    np.testing.assert_allclose(optimizers.l2_norm(tree), 5.0)
    clipped = optimizers.clip_grads(tree, 1.0)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0])
    np.testing.assert_allclose(optimizers.clip_grads(tree, 10.0)["b"], [[4.0]])
    opt_init, opt_update, get_params = optimizers.momentum(0.1, 0.9)
    state = opt_update(0, tree, opt_init(tree))
    marked = optimizers.unpack_optimizer_state(state)
    assert isinstance(marked["a"], optimizers.JoinPoint)
    repacked = optimizers.pack_optimizer_state(marked)
    assert repacked.tree_def == state.tree_def
    np.testing.assert_array_equal(get_params(repacked)["b"], get_params(state)["b"])


# ----------------------------------------------------------------------------
# stax
# ----------------------------------------------------------------------------

def test_stax_serial_dense_relu_computes_its_definition():
    init, apply = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(2), stax.LogSoftmax)
    out_shape, params = init(random.PRNGKey(0), (-1, 3))
    assert out_shape == (-1, 2)
    (W1, b1), (), (W2, b2), () = params
    assert W1.shape == (3, 4) and b2.shape == (2,)
    x = np.linspace(-1, 1, 15).reshape(5, 3)
    h = np.maximum(x @ W1 + b1, 0) @ W2 + b2
    expected = h - np.log(np.exp(h).sum(-1, keepdims=True))
    np.testing.assert_allclose(apply(params, x), expected, rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(apply)(params, x), expected, rtol=1e-12)


def test_stax_fanout_parallel_fanin_and_shapes():
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                              stax.FanInConcat())
    out_shape, params = init(random.PRNGKey(1), (-1, 2))
    assert out_shape == (-1, 5)
    x = np.array([[1.0, 2.0]])
    (W, b), () = params[1]
    np.testing.assert_allclose(apply(params, x), np.concatenate([x @ W + b, x], -1), rtol=1e-12)
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Tanh, stax.Exp), stax.FanInSum)
    _, params = init(random.PRNGKey(1), (4,))
    np.testing.assert_allclose(apply(params, np.arange(4.0)), np.tanh(np.arange(4.0))
                               + np.exp(np.arange(4.0)), rtol=1e-12)


def test_stax_conv_pool_flatten_batchnorm_dropout():
    init, apply = stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.BatchNorm(),
                              stax.AvgPool((2, 2), strides=(2, 2)), stax.Flatten)
    out_shape, params = init(random.PRNGKey(2), (2, 4, 4, 1))
    assert out_shape == (2, 8)
    x = np.arange(32.0).reshape(2, 4, 4, 1) / 10
    out = apply(params, x)
    assert out.shape == (2, 8)
    conv = fungrad.lax.conv_general_dilated(x, params[0][0], (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
    conv = conv + params[0][1]
    z = (conv - conv.mean((0, 1, 2))) / np.sqrt(conv.var((0, 1, 2)) + 1e-5)
    pooled = z.reshape(2, 2, 2, 2, 2, 2).mean((2, 4))
    np.testing.assert_allclose(out, pooled.reshape(2, 8), rtol=1e-10, atol=1e-12)
    _, maxpool = stax.MaxPool((2, 2), strides=(2, 2))
    np.testing.assert_allclose(maxpool((), x)[..., 0], x.reshape(2, 2, 2, 2, 2).max((2, 4)))
    d_init, d_apply = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="PRNG key"):
        d_apply((), x)
    kept = d_apply((), np.ones((100,)), rng=random.PRNGKey(3))
    assert set(np.unique(np.asarray(kept))) <= {0.0, 2.0}
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x, rng=random.PRNGKey(0)), x)
