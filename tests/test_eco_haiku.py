"""dm-haiku 0.0.17, unmodified, on fungrad through the jax import hook (issue
21 item 3): hk.transform/transform_with_state of an MLP with BatchNorm (its
moving averages in the state), an optax step under jax.jit, hk.remat, hk.scan
and hk.vmap.

haiku initialises parameters with jax.random, so every check compares a
haiku model with the same computation written directly on fungrad (or NumPy)
from the parameters haiku's ``init`` made: the checks hold whatever random
stream jax.random follows.  The programs of
tests/eqx_haiku_reference_programs.py (parameters from NumPy) are also
compared with the numbers real JAX 0.10.2 gave for them
(tests/data/eqx_haiku_reference.npz, recorded by
tools/record_eqx_haiku_reference.py).

haiku 0.0.17 is the newest release, and the one that runs on JAX 0.10.2's
API (0.0.16 calls ``jax.core.TraceTag``, which JAX 0.10 removed; 0.0.17
branches on ``jax.__version_info__``).  It is installed without its
dependencies::

    pip install --no-deps dm-haiku==0.0.17 jmp==0.0.4 tabulate==0.10.0 \\
        optax==0.2.8 absl-py

(haiku imports flax's interop module when flax is installed: see
tests/test_eco_flax.py for flax's install line.)
"""
import importlib.util
import os

import numpy as np
import pytest

if importlib.util.find_spec("haiku") is None:    # (importing it needs the hook: see hx)
    pytest.skip("dm-haiku is not installed", allow_module_level=True)

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad.jax_compat import installed as aliased_jax  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=(6, 2))
DECAY, EPS = 0.9, 1e-5


@pytest.fixture(scope="module")
def hx():
    """(jax, hk, optax) with jax = fungrad, for this module only."""
    with aliased_jax(forget=("haiku", "optax", "jmp", "flax", "treescope")) as jax:
        import haiku as hk
        import optax
        yield jax, hk, optax


def np_tree(tree):
    return fungrad.tree_util.tree_map(np.asarray, tree)


# ----------------------------------------------------------------------------
# transform_with_state: an MLP with BatchNorm, against a fungrad twin
# ----------------------------------------------------------------------------

def mlp_with_batchnorm(hk, jax):
    def net(x, is_training):
        x = hk.Linear(8)(x)
        x = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=DECAY)(
            x, is_training)
        return hk.Linear(2)(jax.nn.relu(x))
    return hk.transform_with_state(net)


def twin(params, x, mean=None, var=None):
    """The same network on fungrad; batch statistics unless mean/var are given."""
    h = x @ params["linear"]["w"] + params["linear"]["b"]
    if mean is None:
        mean = fnp.mean(h, 0, keepdims=True)
        var = fnp.mean(h * h, 0, keepdims=True) - mean ** 2
    bn = params["batch_norm"]
    h = (h - mean) * (bn["scale"] / fnp.sqrt(var + EPS)) + bn["offset"]
    return fungrad.nn.relu(h) @ params["linear_1"]["w"] + params["linear_1"]["b"]


@pytest.fixture(scope="module")
def bn_model(hx):
    jax, hk, _ = hx
    f = mlp_with_batchnorm(hk, jax)
    params, state = f.init(jax.random.PRNGKey(0), X, True)
    return f, np_tree(params), np_tree(state)


def test_init_makes_haikus_parameters_and_state(bn_model):
    _, params, state = bn_model
    assert {k: {n: v.shape for n, v in p.items()} for k, p in params.items()} == {
        "linear": {"w": (3, 8), "b": (8,)}, "linear_1": {"w": (8, 2), "b": (2,)},
        "batch_norm": {"scale": (1, 8), "offset": (1, 8)}}
    assert sorted(state) == ["batch_norm/~/mean_ema", "batch_norm/~/var_ema"]
    np.testing.assert_array_equal(params["linear"]["b"], np.zeros(8))
    np.testing.assert_array_equal(params["batch_norm"]["scale"], np.ones((1, 8)))
    assert state["batch_norm/~/mean_ema"]["counter"].dtype == np.int32


def test_batchnorm_training_updates_the_moving_averages(hx, bn_model):
    jax, _, _ = hx
    f, params, state = bn_model
    out, state1 = f.apply(params, state, None, X, True)
    np.testing.assert_allclose(out, twin(params, X), rtol=1e-12, atol=1e-13)
    h = X @ params["linear"]["w"] + params["linear"]["b"]
    mean, var = h.mean(0, keepdims=True), (h * h).mean(0, keepdims=True) - h.mean(0) ** 2
    ema = state1["batch_norm/~/mean_ema"]
    assert int(ema["counter"]) == 1
    np.testing.assert_allclose(ema["hidden"], (1 - DECAY) * mean, rtol=1e-12)
    np.testing.assert_allclose(ema["average"], mean, rtol=1e-12, atol=1e-15)   # zero-debiased
    np.testing.assert_allclose(state1["batch_norm/~/var_ema"]["average"], var, rtol=1e-12)
    # a second step on other data: hidden = d·h1 + (1 - d)·m2, debiased by 1 - d²
    x2 = X[::-1] * 2.0
    _, state2 = jax.jit(f.apply, static_argnums=4)(params, state1, None, x2, True)
    h2 = x2 @ params["linear"]["w"] + params["linear"]["b"]
    hidden = DECAY * (1 - DECAY) * mean + (1 - DECAY) * h2.mean(0, keepdims=True)
    np.testing.assert_allclose(state2["batch_norm/~/mean_ema"]["average"],
                               hidden / (1 - DECAY ** 2), rtol=1e-12)
    # evaluation uses the averages, and leaves the state as it was
    out_eval, state3 = f.apply(params, state2, None, X, False)
    avg = state2["batch_norm/~/mean_ema"]["average"]
    avg_var = state2["batch_norm/~/var_ema"]["average"]
    np.testing.assert_allclose(out_eval, twin(params, X, avg, avg_var), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(state3["batch_norm/~/mean_ema"]["average"], avg)


def test_optax_step_under_jit_matches_the_twin(hx, bn_model):
    jax, _, optax = hx
    f, params, state = bn_model
    opt = optax.sgd(0.1, momentum=0.9)

    def loss(p, st, x, y):
        out, st = f.apply(p, st, None, x, True)
        return fnp.mean((out - y) ** 2), st

    @jax.jit
    def step(p, st, opt_state, x, y):
        (value, st), grads = jax.value_and_grad(loss, has_aux=True)(p, st, x, y)
        updates, opt_state = opt.update(grads, opt_state)
        return optax.apply_updates(p, updates), st, opt_state, value

    twin_loss = lambda p, x, y: fnp.mean((twin(p, x) - y) ** 2)
    p, st, opt_state = params, state, opt.init(params)
    tp, velocity = params, fungrad.tree_util.tree_map(np.zeros_like, params)
    for _ in range(3):
        p, st, opt_state, value = step(p, st, opt_state, X, Y)
        twin_value, grads = fungrad.value_and_grad(twin_loss)(tp, X, Y)
        np.testing.assert_allclose(value, twin_value, rtol=1e-12)
        velocity = fungrad.tree_util.tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
        tp = fungrad.tree_util.tree_map(lambda w, v: w - 0.1 * v, tp, velocity)
    for a, b in zip(fungrad.tree_util.tree_leaves(p), fungrad.tree_util.tree_leaves(tp)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
    assert int(st["batch_norm/~/mean_ema"]["counter"]) == 3


# ----------------------------------------------------------------------------
# hk.remat, hk.scan, hk.vmap
# ----------------------------------------------------------------------------

def mlp_twin(params, x, prefix="mlp/~/"):
    h = fungrad.nn.relu(x @ params[prefix + "linear_0"]["w"] + params[prefix + "linear_0"]["b"])
    return h @ params[prefix + "linear_1"]["w"] + params[prefix + "linear_1"]["b"]


def test_remat_gives_the_same_values_and_gradients(hx):
    jax, hk, _ = hx
    plain = hk.transform(lambda x: hk.nets.MLP([5, 2])(x))
    remat = hk.transform(lambda x: hk.remat(hk.nets.MLP([5, 2]))(x))
    params = np_tree(remat.init(jax.random.PRNGKey(1), X))
    assert jax.tree_util.tree_structure(params) == \
        jax.tree_util.tree_structure(plain.init(jax.random.PRNGKey(1), X))
    np.testing.assert_allclose(remat.apply(params, None, X), mlp_twin(params, X), rtol=1e-13)

    def loss(apply):
        return lambda p: fnp.sum(apply(p, None, X) ** 2)
    want = fungrad.grad(lambda p: fnp.sum(mlp_twin(p, X) ** 2))(params)
    for got in (jax.grad(loss(remat.apply))(params), jax.jit(jax.grad(loss(remat.apply)))(params),
                jax.grad(loss(plain.apply))(params)):
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_scan_is_the_python_loop(hx):
    jax, hk, _ = hx

    def rnn(xs):
        cell = hk.Linear(3)

        def body(carry, x):
            carry = fnp.tanh(cell(carry) + x)
            return carry, 2.0 * carry
        return hk.scan(body, fnp.zeros(3), xs)
    f = hk.transform(rnn)
    xs = RNG.normal(size=(5, 3))
    params = np_tree(f.init(jax.random.PRNGKey(2), xs))
    w, b = params["linear"]["w"], params["linear"]["b"]
    carry, ys = np.zeros(3), []
    for x in xs:
        carry = np.tanh(carry @ w + b + x)
        ys.append(2.0 * carry)
    final, stacked = jax.jit(f.apply)(params, None, xs)
    np.testing.assert_allclose(final, carry, rtol=1e-13)
    np.testing.assert_allclose(stacked, np.stack(ys), rtol=1e-13)


def test_vmap_shares_parameters_across_the_batch(hx):
    jax, hk, _ = hx
    f = hk.transform(lambda x: hk.vmap(lambda row: hk.Linear(4)(row), split_rng=False)(x))
    params = np_tree(f.init(jax.random.PRNGKey(3), X))
    assert params["linear"]["w"].shape == (3, 4)        # one Linear for every row
    np.testing.assert_allclose(f.apply(params, None, X),
                               X @ params["linear"]["w"] + params["linear"]["b"], rtol=1e-13)


# ----------------------------------------------------------------------------
# JAX's own numbers
# ----------------------------------------------------------------------------

def test_haiku_programs_give_jaxs_numbers(hx):
    # tests/eqx_haiku_reference_programs.py, recorded on JAX 0.10.2 + haiku
    # 0.0.17 (float64) by tools/record_eqx_haiku_reference.py, rerun here
    from tests.eqx_haiku_reference_programs import haiku_programs
    jax, hk, optax = hx
    reference = np.load(os.path.join(os.path.dirname(__file__), "data",
                                     "eqx_haiku_reference.npz"))
    assert str(reference["haiku_version"]) == "0.0.17"
    got = haiku_programs(jax, hk, optax)
    for name, value in got.items():
        np.testing.assert_allclose(value, reference[name], rtol=1e-12, atol=1e-14,
                                   err_msg=name)


# ----------------------------------------------------------------------------
# hk.experimental.jaxpr_info: a model's operations by module (name stacks)
# ----------------------------------------------------------------------------

# format_module's lines for an MLP([3, 2]) on a (4, 5) input, as JAX 0.10.2 +
# haiku 0.0.17 print them (x64 on; recorded by running this test's program on
# real JAX).  JAX's relu is a custom_jvp around a jit (three lines there:
# "custom_jvp", "relu", "max"); fungrad's is a select, so the lines between
# the two linear layers differ and are compared apart.
JAX_LINEAR_LINES = """\
  mlp 26 params
    linear_0 18 params
      dot_general in f64[4,5], f64[5,3], out f64[4,3]
      broadcast_in_dim in f64[3], out f64[4,3]
      add in f64[4,3], f64[4,3], out f64[4,3]
    linear_1 8 params
      dot_general in f64[4,3], f64[3,2], out f64[4,2]
      broadcast_in_dim in f64[2], out f64[4,2]
      add in f64[4,2], f64[4,2], out f64[4,2]""".splitlines()


def test_jaxpr_info_attributes_operations_to_haikus_modules(hx):
    jax, hk, _ = hx
    f = hk.transform(lambda x: hk.nets.MLP([3, 2])(x))
    x = fnp.ones((4, 5))
    params = f.init(jax.random.PRNGKey(0), x)
    info = hk.experimental.jaxpr_info
    text = info.format_module(info.make_model_info(f.apply)(params, None, x)).splitlines()
    assert text[0] == "apply_fn"
    assert [line for line in text if line.lstrip().startswith(("mlp", "linear", "dot", "add",
                                                               "broadcast_in_dim in f64[3]",
                                                               "broadcast_in_dim in f64[2]"))] \
        == JAX_LINEAR_LINES
    # relu: at the mlp level, between the two layers, as on JAX
    relu = text[text.index("    linear_0 18 params") + 4:text.index("    linear_1 8 params")]
    assert relu and all(line.startswith("    ") and not line.startswith("      ")
                        for line in relu)
