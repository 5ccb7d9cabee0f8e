"""flax.linen 0.12.8, unmodified, on fungrad through the jax import hook
(issue 21 item 3): Dense, Conv, LayerNorm, BatchNorm with mutable
batch_stats, Dropout with rngs, init/apply, a TrainState + optax loop under
jax.jit, nn.scan, nn.remat, nn.vmap and MultiHeadDotProductAttention.

Each workflow is compared with the same model written directly on fungrad
(or in NumPy) from the parameters flax's ``init`` produced, so the checks
hold whatever random stream ``jax.random`` follows.  ``test_jax_recorded_numbers``
also reruns tests/flax_reference_programs.py (explicit NumPy parameters) and
compares with tests/data/flax_reference.npz, recorded once on JAX 0.10.2 +
flax 0.12.8 in float64 by tools/record_flax_reference.py, and
``test_init_and_dropout_from_keys_give_jaxs_numbers`` checks flax's own
initialization and dropout from keys (legacy and typed) against JAX's.

flax is installed without its dependencies::

    pip install --no-deps flax==0.12.8 treescope==0.1.10 opt_einsum==3.4.0 \\
        ml_dtypes==0.7.0 rich==15.0.0 markdown-it-py==4.0.0 mdurl==0.1.2 \\
        pygments==2.21.0 msgpack==1.2.4 PyYAML==6.0.4 typing_extensions==4.16.0 \\
        optax==0.2.8 absl-py==2.5.1

(flax.nnx, and nn.tabulate, are covered by tests/test_eco_nnx.py.)
"""
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("flax") is None:    # (importing it needs the hook: see fx)
    pytest.skip("flax is not installed", allow_module_level=True)

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad import lax  # noqa: E402
from fungrad.jax_compat import installed as aliased_jax  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 3))


@pytest.fixture(scope="module")
def fx():
    """(jax, nn, optax, train_state) with jax = fungrad, for this module only."""
    with aliased_jax(forget=("flax", "optax", "treescope")) as jax:
        import flax.linen as nn
        import optax
        from flax.training import train_state
        yield jax, nn, optax, train_state


def np_tree(tree):
    return fungrad.tree_util.tree_map(np.asarray, tree)


def layer_norm(x, scale, bias, eps=1e-6):
    mean = x.mean(-1, keepdims=True)
    var = np.maximum((x * x).mean(-1, keepdims=True) - mean ** 2, 0.0)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def batch_stats(x):
    mean = x.mean(0)
    return mean, np.maximum((x * x).mean(0) - mean ** 2, 0.0)


# ----------------------------------------------------------------------------
# Dense, LayerNorm, BatchNorm, Dropout: init/apply against NumPy
# ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mlp(fx):
    jax, nn, _, _ = fx

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.Dense(5)(x)
            x = nn.LayerNorm()(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
            x = nn.Dropout(0.5, deterministic=not train)(x)
            return nn.Dense(2)(x)
    model = MLP()
    return model, model.init(jax.random.PRNGKey(0), X)


def mlp_numpy(params, stats, x, train=False, mask=None):
    p = np_tree(params)
    h = x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]
    h = layer_norm(h, p["LayerNorm_0"]["scale"], p["LayerNorm_0"]["bias"])
    mean, var = batch_stats(h) if train else (stats["mean"], stats["var"])
    h = (h - mean) / np.sqrt(var + 1e-5) * p["BatchNorm_0"]["scale"] + p["BatchNorm_0"]["bias"]
    h = np.maximum(h, 0.0)
    if mask is not None:
        h = np.where(mask, h / 0.5, 0.0)
    return h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"]


def test_init_makes_the_documented_variables(mlp):
    _, variables = mlp
    shapes = fungrad.tree_util.tree_map(np.shape, variables)
    assert shapes["params"]["Dense_0"] == {"kernel": (3, 5), "bias": (5,)}
    assert shapes["params"]["Dense_1"] == {"kernel": (5, 2), "bias": (2,)}
    assert shapes["batch_stats"]["BatchNorm_0"] == {"mean": (5,), "var": (5,)}
    np.testing.assert_array_equal(variables["params"]["Dense_0"]["bias"], np.zeros(5))
    np.testing.assert_array_equal(variables["batch_stats"]["BatchNorm_0"]["var"], np.ones(5))


def test_apply_in_eval_mode_matches_numpy(mlp):
    model, variables = mlp
    out = model.apply(variables, X)
    expected = mlp_numpy(variables["params"], np_tree(variables["batch_stats"]["BatchNorm_0"]), X)
    # LayerNorm's E[x^2] - E[x]^2 over 5 features cancels: 1e-11 relative is rounding
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-12)


def test_batchnorm_updates_batch_stats_and_dropout_uses_its_rng(fx, mlp):
    jax, _, _, _ = fx
    model, variables = mlp
    key = jax.random.PRNGKey(3)
    out, updates = model.apply(variables, X, train=True, rngs={"dropout": key},
                               mutable=["batch_stats"])
    again, _ = model.apply(variables, X, train=True, rngs={"dropout": key},
                           mutable=["batch_stats"])
    np.testing.assert_array_equal(out, again)          # same rng, same mask
    # the batch statistics the running averages moved towards (momentum 0.99)
    p = np_tree(variables["params"])
    h = layer_norm(X @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"],
                   p["LayerNorm_0"]["scale"], p["LayerNorm_0"]["bias"])
    mean, var = batch_stats(h)
    new = updates["batch_stats"]["BatchNorm_0"]
    np.testing.assert_allclose(new["mean"], 0.01 * mean, rtol=1e-9, atol=1e-14)
    # flax keeps batch_stats in float32: 0.99 * var is a float32 product (weak
    # Python scalar times a float32 array), as in JAX
    assert variables["batch_stats"]["BatchNorm_0"]["var"].dtype == np.float32
    np.testing.assert_allclose(new["var"], np.float32(0.99) * np.float32(1.0) + 0.01 * var,
                               rtol=1e-9)
    # dropout zeroes some units and scales the rest by 1/keep: recover the mask
    # from the output of the hidden layer and check the result with it
    hidden_model_out = mlp_numpy(variables["params"], None, X, train=True,
                                 mask=np.ones((6, 5), bool))
    assert not np.allclose(out, hidden_model_out)
    masks = _dropout_mask_candidates(model, variables, key, jax)
    np.testing.assert_allclose(out, mlp_numpy(variables["params"], None, X, train=True,
                                              mask=masks), rtol=1e-9, atol=1e-12)


def _dropout_mask_candidates(model, variables, key, jax):
    """The dropout mask flax drew, read back through a capture of the layer's
    intermediate values (``capture_intermediates``)."""
    _, state = model.apply(variables, X, train=True, rngs={"dropout": key},
                           mutable=["batch_stats", "intermediates"],
                           capture_intermediates=True)
    dropped = np.asarray(state["intermediates"]["Dropout_0"]["__call__"][0])
    relu_out = np.asarray(state["intermediates"]["BatchNorm_0"]["__call__"][0])
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], np.maximum(relu_out, 0)[kept] / 0.5, rtol=1e-13)
    assert 0 < kept.mean() < 1
    return kept | (np.maximum(relu_out, 0) == 0)


def test_conv_matches_conv_general_dilated(fx):
    jax, nn, _, _ = fx
    conv = nn.Conv(features=4, kernel_size=(3, 3))
    x = RNG.normal(size=(2, 5, 5, 2))
    variables = conv.init(jax.random.PRNGKey(1), x)
    k, b = variables["params"]["kernel"], variables["params"]["bias"]
    assert k.shape == (3, 3, 2, 4) and k.dtype == np.float32    # flax's param_dtype
    twin = lax.conv_general_dilated(x, fnp.asarray(k, np.float64), (1, 1), "SAME",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC")) + b
    np.testing.assert_allclose(conv.apply(variables, x), twin, rtol=1e-12, atol=1e-13)


# ----------------------------------------------------------------------------
# a TrainState + optax.adam loop under jax.jit, against Adam by hand
# ----------------------------------------------------------------------------

def test_train_state_adam_loop_under_jit(fx):
    jax, nn, optax, train_state = fx
    jnp = jax.numpy

    class Regressor(nn.Module):
        @nn.compact
        def __call__(self, x):
            # float64 parameters (flax's default param_dtype is float32 even under
            # x64; the hand-written Adam below is float64 throughout)
            hidden = nn.Dense(4, name="hidden", param_dtype=jnp.float64)
            return nn.Dense(1, name="out", param_dtype=jnp.float64)(nn.tanh(hidden(x)))
    y = np.sin(X.sum(1, keepdims=True))
    model = Regressor()
    params = model.init(jax.random.PRNGKey(0), X)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params,
                                          tx=optax.adam(0.05))

    @jax.jit
    def step(state, x, y):
        def loss_fn(p):
            return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    def twin_loss(p):
        h = fnp.tanh(X @ p["hidden"]["kernel"] + p["hidden"]["bias"])
        return fnp.mean((h @ p["out"]["kernel"] + p["out"]["bias"] - y) ** 2)
    p = np_tree(params)
    m = fungrad.tree_util.tree_map(np.zeros_like, p)
    v = fungrad.tree_util.tree_map(np.zeros_like, p)
    losses = []
    for t in range(1, 5):
        state, loss = step(state, X, y)
        losses.append(float(loss))
        twin, g = fungrad.value_and_grad(twin_loss)(p)
        np.testing.assert_allclose(loss, twin, rtol=1e-12)
        m = fungrad.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * np.asarray(g), m, g)
        v = fungrad.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * np.asarray(g) ** 2, v, g)
        p = fungrad.tree_util.tree_map(
            lambda p, m, v: p - 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8),
            p, m, v)
    assert int(state.step) == 4 and losses[-1] < losses[0]
    fungrad.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10,
                                                                       atol=1e-12),
                               np_tree(state.params), p)


# ----------------------------------------------------------------------------
# lifted transforms: nn.scan, nn.remat, nn.vmap
# ----------------------------------------------------------------------------

def test_nn_scan_matches_a_python_loop(fx):
    jax, nn, _, _ = fx
    jnp = jax.numpy

    class Cell(nn.Module):
        @nn.compact
        def __call__(self, carry, x):
            carry = jnp.tanh(nn.Dense(3)(x) + carry)
            return carry, 2.0 * carry
    Scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False},
                   in_axes=0, out_axes=0)
    xs = RNG.normal(size=(5, 2))
    model = Scan()
    variables = model.init(jax.random.PRNGKey(0), np.zeros(3), xs)
    carry, ys = model.apply(variables, np.zeros(3), xs)
    dense = np_tree(variables["params"]["Dense_0"])
    k, b = dense["kernel"], dense["bias"]
    assert k.shape == (2, 3)          # broadcast: one set of params for every step
    c, expected = np.zeros(3), []
    for x in xs:
        c = np.tanh(x @ k + b + c)
        expected.append(2.0 * c)
    np.testing.assert_allclose(carry, c, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(ys, np.stack(expected), rtol=1e-13, atol=1e-14)


def test_nn_remat_gives_the_same_values_and_gradients(fx):
    jax, nn, _, _ = fx

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(nn.gelu(nn.Dense(4)(x)))
    plain, remat = Block(), nn.remat(Block)()
    variables = plain.init(jax.random.PRNGKey(0), X)
    loss = lambda m: lambda v: (m.apply(v, X) ** 2).sum()
    np.testing.assert_allclose(remat.apply(variables, X), plain.apply(variables, X), rtol=1e-13)
    g_plain, g_remat = jax.grad(loss(plain))(variables), jax.grad(loss(remat))(variables)
    fungrad.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12),
                               g_remat, g_plain)


def test_nn_vmap_ensemble_has_one_member_per_row(fx):
    jax, nn, _, _ = fx
    Ensemble = nn.vmap(nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True},
                       in_axes=0, out_axes=0)
    model = Ensemble(features=2)
    xs = RNG.normal(size=(4, 3))
    variables = model.init(jax.random.PRNGKey(0), xs)
    k, b = np.asarray(variables["params"]["kernel"]), np.asarray(variables["params"]["bias"])
    assert k.shape == (4, 3, 2) and b.shape == (4, 2)
    assert not np.allclose(k[0], k[1])                 # split rngs: members differ
    expected = np.stack([xs[i] @ k[i] + b[i] for i in range(4)])
    np.testing.assert_allclose(model.apply(variables, xs), expected, rtol=1e-13)


# ----------------------------------------------------------------------------
# MultiHeadDotProductAttention
# ----------------------------------------------------------------------------

def test_multi_head_attention_matches_numpy(fx):
    jax, nn, _, _ = fx
    attention = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4, out_features=3)
    q_in, kv_in = RNG.normal(size=(2, 3, 5)), RNG.normal(size=(2, 4, 5))
    variables = attention.init(jax.random.PRNGKey(0), q_in, kv_in)
    out = attention.apply(variables, q_in, kv_in)
    p = np_tree(variables["params"])
    project = lambda x, name: np.einsum("bsf,fhd->bshd", x, p[name]["kernel"]) + p[name]["bias"]
    q, k, v = project(q_in, "query"), project(kv_in, "key"), project(kv_in, "value")
    logits = np.einsum("bqhd,bkhd->bhqk", q / np.sqrt(q.shape[-1]), k)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    heads = np.einsum("bhqk,bkhd->bqhd", weights, v)
    expected = np.einsum("bqhd,hdf->bqf", heads, p["out"]["kernel"]) + p["out"]["bias"]
    assert out.shape == (2, 3, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12)


# ----------------------------------------------------------------------------
# JAX's numbers: the programs of tests/flax_reference_programs.py, recorded on
# JAX 0.10.2 + flax 0.12.8 in float64 by tools/record_flax_reference.py
# ----------------------------------------------------------------------------

def test_jax_recorded_numbers(fx):
    import os
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    try:
        from flax_reference_programs import run_all
    finally:
        sys.path.remove(os.path.dirname(__file__))
    recorded = np.load(os.path.join(os.path.dirname(__file__), "data", "flax_reference.npz"))
    assert str(recorded["jax_version"]) == "0.10.2" and str(recorded["flax_version"]) == "0.12.8"
    ours = run_all(*fx)
    for name, value in ours.items():
        assert value.dtype == recorded[name].dtype, name      # float32 batch_stats included
        # BatchNorm in eval mode takes rsqrt of its float32 running variance in
        # float32 (as in JAX): XLA's and NumPy's float32 rsqrt round differently
        # in the last bit, so that output agrees to float32 precision
        rtol = FLOAT32_PATH.get(name, 1e-9)
        np.testing.assert_allclose(value, recorded[name], rtol=rtol, atol=1e-12, err_msg=name)


FLOAT32_PATH = {"mlp_eval": 1e-6}


def test_init_and_dropout_from_keys_give_jaxs_numbers(fx):
    """flax's init from ``PRNGKey(0)`` and ``random.key(1)`` (typed) and a dropout
    mask: JAX's random stream through flax's key splitting and initializers.
    The parameters are JAX's bit for bit (the samplers compute XLA's CPU
    functions exactly); the dropout outputs go through attention, whose float32
    arithmetic is NumPy's, so they agree to float32 precision."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    try:
        from flax_reference_programs import run_init
    finally:
        sys.path.remove(os.path.dirname(__file__))
    recorded = np.load(os.path.join(os.path.dirname(__file__), "data", "flax_reference.npz"))
    jax, nn, _, _ = fx
    assert jax.random.key(1).dtype != np.uint32        # a typed key
    ours = run_init(jax, nn)
    assert sorted(ours) == sorted(k for k in recorded.files if k.startswith(("init_", "dropout_")))
    for name, value in ours.items():
        assert value.dtype == recorded[name].dtype, name
        if name.startswith("init_"):
            np.testing.assert_array_equal(value, recorded[name], err_msg=name)
        else:
            np.testing.assert_allclose(value, recorded[name], rtol=1e-6, atol=1e-6, err_msg=name)
