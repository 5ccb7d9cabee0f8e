"""equinox 0.13.8, unmodified, on fungrad through the jax import hook (issue
21 item 3): eqx.nn.MLP/Linear/Conv2d/LayerNorm, filter_jit, filter_grad,
filter_value_and_grad, filter_jvp, filter_vmap, partition/combine, tree_at, an optax
training loop, eqx.error_if and the primitives equinox defines itself in
eqx.internal (unvmap_any/unvmap_all, nondifferentiable, noinline, and the
checkpointed while_loop, whose custom_vjp uses symbolic zeros).

equinox's layers initialise their weights with jax.random, so every check
compares a model with the same computation written directly on fungrad (or
NumPy) from that model's own weights: the checks hold whatever random stream
jax.random follows.  Loop results are compared with the recurrence run in
Python, and gradients with fungrad.grad of the fungrad twin.  The programs
of tests/eqx_haiku_reference_programs.py (parameters from NumPy) are also
compared with the numbers real JAX 0.10.2 gave for them
(tests/data/eqx_haiku_reference.npz, recorded by
tools/record_eqx_haiku_reference.py).

equinox is installed without its dependencies::

    pip install --no-deps equinox==0.13.8 jaxtyping==0.3.11 wadler-lindig==0.1.8 \\
        typing_extensions optax==0.2.8 absl-py
"""
import importlib.util
import os

import numpy as np
import pytest

if importlib.util.find_spec("equinox") is None:    # (importing it needs the hook: see ex)
    pytest.skip("equinox is not installed", allow_module_level=True)

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad.jax_compat import installed as aliased_jax  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(7, 3))
Y = RNG.normal(size=(7, 2))


@pytest.fixture(scope="module")
def ex():
    """(jax, eqx, eqxi, optax) with jax = fungrad, for this module only."""
    with aliased_jax(forget=("equinox", "jaxtyping", "optax")) as jax:
        import equinox as eqx
        import equinox.internal as eqxi
        import optax
        yield jax, eqx, eqxi, optax


@pytest.fixture(scope="module")
def mlp(ex):
    jax, eqx, _, _ = ex
    return eqx.nn.MLP(3, 2, width_size=8, depth=2, key=jax.random.PRNGKey(0))


def mlp_params(model):
    """The MLP's weights as a list of (W, b) NumPy arrays."""
    return [(np.asarray(layer.weight), np.asarray(layer.bias)) for layer in model.layers]


def twin_mlp(params, x):
    """eqx.nn.MLP's forward pass written on fungrad: relu hidden layers, linear out."""
    for i, (w, b) in enumerate(params):
        x = w @ x + b
        if i < len(params) - 1:
            x = fungrad.nn.relu(x)
    return x


def twin_loss(params, xs, ys):
    preds = fungrad.vmap(lambda x: twin_mlp(params, x))(xs)
    return fnp.mean((preds - ys) ** 2)


# ----------------------------------------------------------------------------
# Layers against their formulas, with the layers' own weights
# ----------------------------------------------------------------------------

def test_mlp_and_filter_vmap_match_the_fungrad_twin(ex, mlp):
    jax, eqx, _, _ = ex
    params = mlp_params(mlp)
    assert [w.shape for w, _ in params] == [(8, 3), (8, 8), (2, 8)]
    np.testing.assert_allclose(mlp(X[0]), twin_mlp(params, X[0]), rtol=1e-13, atol=1e-14)
    batched = eqx.filter_vmap(mlp)(X)
    np.testing.assert_allclose(batched, np.stack([twin_mlp(params, x) for x in X]),
                               rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(jax.vmap(mlp)(X), batched, rtol=1e-15, atol=1e-15)


def test_linear_conv2d_and_layernorm(ex):
    jax, eqx, _, _ = ex
    k1, k2 = jax.random.split(jax.random.PRNGKey(1))
    linear = eqx.nn.Linear(3, 4, key=k1)
    w, b = np.asarray(linear.weight), np.asarray(linear.bias)
    np.testing.assert_allclose(linear(X[1]), w @ X[1] + b, rtol=1e-14)

    conv = eqx.nn.Conv2d(2, 3, kernel_size=3, padding=1, key=k2)
    image = RNG.normal(size=(2, 5, 6))
    kernel, bias = np.asarray(conv.weight), np.asarray(conv.bias)
    padded = np.pad(image, ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    expected = np.einsum("cijkl,ockl->oij", windows, kernel) + bias
    np.testing.assert_allclose(conv(image), expected, rtol=1e-13, atol=1e-14)

    norm = eqx.nn.LayerNorm(5)
    x = RNG.normal(size=5)
    expected = (x - x.mean()) / np.sqrt(x.var() + 1e-5) * np.asarray(norm.weight) \
        + np.asarray(norm.bias)
    np.testing.assert_allclose(norm(x), expected, rtol=1e-13, atol=1e-14)


# ----------------------------------------------------------------------------
# filter_jit, filter_grad, filter_value_and_grad, partition/combine, tree_at
# ----------------------------------------------------------------------------

def test_filter_jit_traces_once_and_agrees_with_eager(ex, mlp):
    jax, eqx, _, _ = ex
    traces = []

    @eqx.filter_jit
    def predict(model, xs, scale):       # scale: a Python float, static under filter_jit
        traces.append(1)
        return scale * jax.vmap(model)(xs)
    first = predict(mlp, X, 2.0)
    second = predict(mlp, X + 1.0, 2.0)
    assert len(traces) == 1
    np.testing.assert_allclose(first, 2.0 * eqx.filter_vmap(mlp)(X), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(second, 2.0 * eqx.filter_vmap(mlp)(X + 1.0), rtol=1e-14,
                               atol=1e-14)


def test_filter_grad_and_value_and_grad_match_fungrad_grad_of_the_twin(ex, mlp):
    jax, eqx, _, _ = ex

    def loss(model, xs, ys):
        return fnp.mean((jax.vmap(model)(xs) - ys) ** 2)
    params = mlp_params(mlp)
    twin_value, twin_grads = fungrad.value_and_grad(twin_loss)(params, X, Y)
    value, grads = eqx.filter_value_and_grad(loss)(mlp, X, Y)
    np.testing.assert_allclose(value, twin_value, rtol=1e-13)
    jitted = eqx.filter_jit(eqx.filter_grad(loss))(mlp, X, Y)
    for g in (grads, jitted):
        for layer, (tw, tb) in zip(g.layers, twin_grads):
            np.testing.assert_allclose(layer.weight, tw, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(layer.bias, tb, rtol=1e-12, atol=1e-14)
    # non-array fields (the activation functions) get no gradient
    assert grads.activation is None and grads.final_activation is None


def test_filter_jvp_takes_none_for_what_is_not_differentiated(ex, mlp):
    jax, eqx, _, _ = ex
    direction = RNG.normal(size=3)
    no_tangent = jax.tree_util.tree_map(lambda _: None, mlp)    # the model is not perturbed
    out, tangent = eqx.filter_jvp(lambda model, x: model(x), (mlp, X[3]),
                                  (no_tangent, direction))
    params = mlp_params(mlp)
    want_out, want_tangent = fungrad.jvp(lambda x: twin_mlp(params, x), (X[3],), (direction,))
    np.testing.assert_allclose(out, want_out, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12, atol=1e-14)


def test_partition_combine_and_tree_at(ex, mlp):
    jax, eqx, _, _ = ex
    arrays, static = eqx.partition(mlp, eqx.is_array)
    assert len(jax.tree_util.tree_leaves(arrays)) == 6
    # the rest: the activation functions (relu, identity), no arrays
    assert [callable(leaf) for leaf in jax.tree_util.tree_leaves(static)] == [True, True]
    rebuilt = eqx.combine(arrays, static)
    np.testing.assert_array_equal(rebuilt(X[2]), mlp(X[2]))
    # tree_at: a new output bias shifts the output by the difference
    new_bias = np.array([1.0, -2.0])
    moved = eqx.tree_at(lambda m: m.layers[-1].bias, mlp, new_bias)
    np.testing.assert_allclose(moved(X[2]) - mlp(X[2]), new_bias - np.asarray(mlp.layers[-1].bias),
                               rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(np.asarray(mlp.layers[-1].bias),
                                  mlp_params(mlp)[-1][1])          # the original is unchanged


def test_optax_training_loop_matches_the_twin(ex, mlp):
    # equinox's documented loop: filter_value_and_grad + optax.adam under filter_jit;
    # the twin runs the same optax optimizer on the weights as a plain pytree
    jax, eqx, _, optax = ex
    opt = optax.adam(1e-2)

    def loss(model, xs, ys):
        return fnp.mean((jax.vmap(model)(xs) - ys) ** 2)

    @eqx.filter_jit
    def step(model, state, xs, ys):
        value, grads = eqx.filter_value_and_grad(loss)(model, xs, ys)
        updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, value

    model, state = mlp, opt.init(eqx.filter(mlp, eqx.is_inexact_array))
    params = mlp_params(mlp)
    twin_state = opt.init(params)
    for _ in range(5):
        model, state, value = step(model, state, X, Y)
        twin_value, grads = fungrad.value_and_grad(twin_loss)(params, X, Y)
        updates, twin_state = opt.update(grads, twin_state, params)
        params = optax.apply_updates(params, updates)
        np.testing.assert_allclose(value, twin_value, rtol=1e-12)
    for (w, b), (tw, tb) in zip(mlp_params(model), params):
        np.testing.assert_allclose(w, tw, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(b, tb, rtol=1e-11, atol=1e-13)
    assert value < twin_loss(mlp_params(mlp), X, Y)


# ----------------------------------------------------------------------------
# eqx.error_if and the primitives of eqx.internal
# ----------------------------------------------------------------------------

def test_error_if_under_filter_jit_jit_and_vmap(ex):
    jax, eqx, _, _ = ex

    def checked_log(x):
        x = eqx.error_if(x, x <= 0, "log of a non-positive number")
        return fnp.log(x)
    for transform in (eqx.filter_jit, jax.jit, lambda f: jax.vmap(f), lambda f: f):
        f = transform(checked_log)
        x = np.array([1.0, 2.5]) if transform is not eqx.filter_jit else 2.5
        np.testing.assert_allclose(f(x), np.log(x), rtol=1e-15)
        with pytest.raises(Exception, match="log of a non-positive number"):
            f(-x)


def test_unvmap_primitives_reduce_over_the_batch(ex):
    jax, _, eqxi, _ = ex
    xs = np.array([0.5, 2.0, -1.0])
    any_big = jax.vmap(lambda x: eqxi.unvmap_any(x > 1.0))(xs)
    all_big = jax.vmap(lambda x: eqxi.unvmap_all(x > 1.0))(xs)
    biggest = jax.vmap(lambda x: eqxi.unvmap_max(x))(xs)
    np.testing.assert_array_equal(any_big, [True] * 3)
    np.testing.assert_array_equal(all_big, [False] * 3)
    np.testing.assert_array_equal(biggest, [2.0] * 3)
    # outside vmap they are the plain reductions, and jit runs their registered
    # lowering (mlir.lower_fun), inlined into the generated NumPy code
    assert bool(eqxi.unvmap_any(xs > 1.0)) and not bool(eqxi.unvmap_all(xs > 1.0))
    f = jax.jit(lambda x: eqxi.unvmap_any(x > 1.0))
    assert bool(f(xs)) and not bool(f(xs - 5.0))
    assert "call_impl" not in f.lower(xs).source()


def test_nondifferentiable_refuses_a_derivative(ex):
    jax, _, eqxi, _ = ex
    np.testing.assert_array_equal(eqxi.nondifferentiable(np.arange(3.0)), np.arange(3.0))
    with pytest.raises(RuntimeError, match="cannot be autodifferentiated"):
        jax.grad(lambda x: eqxi.nondifferentiable(x) ** 2)(1.0)


def test_noinline_under_jit_grad_and_vmap(ex):
    # noinline's own MLIR lowering emits a Python callback (mlir.emit_python_callback):
    # fungrad's jit runs that rule, so the staged program calls back as JAX's does
    jax, _, eqxi, _ = ex
    g = eqxi.noinline(lambda x, y: fnp.sin(x) * y)
    np.testing.assert_allclose(g(1.0, 2.0), 2 * np.sin(1.0), rtol=1e-15)
    np.testing.assert_allclose(jax.jit(g)(1.0, 2.0), 2 * np.sin(1.0), rtol=1e-15)
    assert "pure_callback" in jax.jit(g).lower(1.0, 2.0).source()
    np.testing.assert_allclose(jax.grad(g)(1.0, 2.0), 2 * np.cos(1.0), rtol=1e-15)
    np.testing.assert_allclose(jax.vmap(g)(np.array([1.0, 2.0]), np.array([2.0, 3.0])),
                               [2 * np.sin(1.0), 3 * np.sin(2.0)], rtol=1e-15)


@pytest.mark.parametrize("kind", ["checkpointed", "bounded", "lax"])
def test_internal_while_loop_and_its_gradient(ex, kind):
    # x_{t+1} = x_t + θ sin(x_t) for 6 steps: value and d/dθ against the Python loop
    jax, _, eqxi, _ = ex

    def body(carry):
        i, x, theta = carry
        return i + 1, x + theta * fnp.sin(x), theta

    def run(theta, x0=1.0):
        out = eqxi.while_loop(lambda c: c[0] < 6, body, (0, x0, theta), max_steps=10,
                              kind=kind, **({"checkpoints": 2} if kind == "checkpointed" else {}))
        return out[1]

    def python_loop(theta, x0=1.0):
        x = x0
        for _ in range(6):
            x = x + theta * fnp.sin(x)
        return x
    theta = 0.7
    np.testing.assert_allclose(run(theta), python_loop(theta), rtol=1e-14)
    want = fungrad.grad(python_loop)(theta)
    np.testing.assert_allclose(jax.grad(run)(theta), want, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(run))(theta), want, rtol=1e-12)
    if kind == "checkpointed":
        np.testing.assert_allclose(jax.vmap(jax.grad(run))(np.array([0.7, 0.2])),
                                   [want, fungrad.grad(python_loop)(0.2)], rtol=1e-12)


# ----------------------------------------------------------------------------
# JAX's own numbers
# ----------------------------------------------------------------------------

def test_equinox_programs_give_jaxs_numbers(ex):
    # tests/eqx_haiku_reference_programs.py, recorded on JAX 0.10.2 + equinox
    # 0.13.8 (float64) by tools/record_eqx_haiku_reference.py, rerun here
    from tests.eqx_haiku_reference_programs import equinox_programs
    jax, eqx, eqxi, optax = ex
    reference = np.load(os.path.join(os.path.dirname(__file__), "data",
                                     "eqx_haiku_reference.npz"))
    assert str(reference["equinox_version"]) == "0.13.8"
    got = equinox_programs(jax, eqx, eqxi, optax)
    for name, value in got.items():
        np.testing.assert_allclose(value, reference[name], rtol=1e-12, atol=1e-14,
                                   err_msg=name)
