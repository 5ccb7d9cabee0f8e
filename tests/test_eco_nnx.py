"""flax.nnx 0.12.8, unmodified, on fungrad through the jax import hook
(issue 21 item 3): an nnx.Module MLP initialised from nnx.Rngs, with
nnx.BatchNorm and nnx.Dropout, an nnx.Optimizer with optax, nnx.jit /
nnx.value_and_grad / nnx.grad training steps, nnx.split / nnx.merge /
nnx.state, an nnx.vmap ensemble and nnx.scan over stacked layers, Conv,
LayerNorm, Embed, MultiHeadAttention, nnx.remat, nnx.cond, nnx.fori_loop and
nnx.bridge.ToNNX, plus the
eager ref and hijax Variables (``nnx.var_defaults(ref=True)`` / ``(hijax=True)``),
ref Variables trained under nnx.jit (against plain Variables), and the summary tables of ``nnx.tabulate`` and flax.linen's ``nn.tabulate``.

The numbers are compared with tests/data/nnx_reference.json, recorded once on
real JAX 0.10.2 + flax 0.12.8 + optax 0.2.8 in float64 (jax_enable_x64) by
tools/record_nnx_reference.py, which runs the same programs
(tests/nnx_reference_programs.py).  fungrad's PRNG reproduces JAX's streams,
so the initial parameters and dropout masks are JAX's too.

flax is installed without its dependencies (tests/ecosystem-requirements.txt
lists them; nnx needs no more than flax.linen does).
"""
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

if importlib.util.find_spec("flax") is None:    # (importing it needs the hook: see fx)
    pytest.skip("flax is not installed", allow_module_level=True)

from fungrad.jax_compat import installed as aliased_jax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# results that pass through float32 (flax's default parameter dtype): XLA's and
# NumPy's float32 kernels round differently in the last bits
FLOAT32_RTOL = 2e-6
# float64: the bias of the layer before BatchNorm gets a zero gradient up to
# rounding (BatchNorm subtracts the mean), which Adam scales up to ~1e-10
# updates of rounding noise; everything else agrees to ~1e-14
FLOAT64_ATOL = 1e-9
# BatchNorm's running statistics are float32 (in JAX too): in eval mode its
# rsqrt of the float32 running variance rounds differently in the last bit.
# jax.nn.dot_product_attention (nnx.MultiHeadAttention's) carries its softmax
# out in float32 whatever the input dtype on JAX, in the input dtype on fungrad.
FLOAT32_PATHS = {"merged_eval_out", "attention"}


@pytest.fixture(scope="module")
def fx():
    """(jax, nnx, optax) with jax = fungrad, for this module only."""
    with aliased_jax(forget=("flax", "optax", "treescope")) as jax:
        from flax import nnx
        import optax
        yield jax, nnx, optax


@pytest.fixture(scope="module")
def programs():
    sys.path.insert(0, HERE)
    try:
        import nnx_reference_programs
    finally:
        sys.path.remove(HERE)
    return nnx_reference_programs


@pytest.fixture(scope="module")
def reference_file():
    with open(os.path.join(HERE, "data", "nnx_reference.json")) as f:
        data = json.load(f)
    assert (data["jax_version"], data["flax_version"]) == ("0.10.2", "0.12.8")
    return data


@pytest.fixture(scope="module")
def recorded(reference_file):
    return {name: np.asarray(entry["value"], dtype=entry["dtype"]).reshape(entry["shape"])
            for name, entry in reference_file["results"].items()}


def assert_matches(ours: dict, recorded: dict, from_float32: bool = False) -> None:
    """``from_float32``: float64 results computed from float32 parameters."""
    assert ours, "no results"
    for name, value in ours.items():
        expected = recorded[name]
        assert value.dtype == expected.dtype, name
        if value.dtype == np.float32 or from_float32 or name in FLOAT32_PATHS:
            rtol, atol = FLOAT32_RTOL, 1e-7
        else:
            rtol, atol = 1e-10, FLOAT64_ATOL
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=name)


def test_mlp_init_train_optimizer_split_merge(fx, programs, recorded):
    jax, nnx, optax = fx
    ours = programs.run_mlp(jax, nnx, optax)
    assert_matches(ours, recorded)
    # the loop learns, and BatchNorm's train call moved its running statistics
    assert ours["losses"][-1] < ours["losses"][0]
    assert not np.allclose(ours["batch_stats['bn']['mean'].value"], 0.0)
    assert int(ours["optimizer_step"]) == 3


def test_grad_vmap_ensemble_scan(fx, programs, recorded):
    jax, nnx, _ = fx
    ours = programs.run_grad_vmap_scan(jax, nnx)
    assert_matches(ours, recorded)
    kernels = ours["ensemble_kernel"]
    assert kernels.shape == (3, 3, 2) and not np.allclose(kernels[0], kernels[1])


def test_layers_remat_cond_fori_loop_and_bridge(fx, programs, recorded):
    jax, nnx, _ = fx
    assert_matches(programs.run_layers_and_control_flow(jax, nnx), recorded)


def test_default_ref_and_hijax_variables_eagerly(fx, programs, recorded):
    jax, nnx, _ = fx
    ours = programs.run_variable_modes(jax, nnx)
    assert_matches(ours, recorded, from_float32=True)
    np.testing.assert_array_equal(ours["ref_kernel"], ours["default_kernel"])


def test_dropout_is_identity_in_eval_and_masks_half_in_train(fx):
    jax, nnx, _ = fx
    x = jax.numpy.ones((200,))
    dropout = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=4))
    dropout.eval()
    np.testing.assert_array_equal(np.asarray(dropout(x)), np.ones(200))
    dropout.train()
    kept = np.asarray(dropout(x))
    assert set(np.unique(kept)) <= {0.0, 2.0}          # kept values scaled by 1/(1-p)
    assert 70 < np.count_nonzero(kept) < 130


def test_jit_step_equals_eager_step(fx):
    """nnx.jit of an update step gives what the same step gives eagerly."""
    jax, nnx, optax = fx
    jnp = jax.numpy
    x = jnp.asarray(np.random.default_rng(1).normal(size=(5, 3)))

    def step(model, optimizer):
        loss, grads = nnx.value_and_grad(lambda m: jnp.sum(m(x) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    results = []
    for wrap in (lambda f: f, nnx.jit):
        model = nnx.Linear(3, 2, rngs=nnx.Rngs(5), param_dtype=jnp.float64)
        optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        losses = [float(wrap(step)(model, optimizer)) for _ in range(2)]
        results.append((losses, np.asarray(model.kernel[...])))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


def test_hijax_variables_under_jit_raise_clearly(fx):
    """fungrad runs hijax types eagerly only: under nnx.jit they raise
    NotImplementedError saying so (they fail under nnx.jit on JAX too)."""
    jax, nnx, _ = fx
    with nnx.var_defaults(hijax=True):
        linear = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    with pytest.raises(NotImplementedError, match="eagerly only"):
        nnx.jit(lambda m, x: m(x))(linear, jax.numpy.ones((1, 3)))


def _ref_training_run(jax, nnx, optax, ref: bool, wrap):
    """Four Adam steps of a two-layer MLP whose Variables are Refs (``ref``) or
    arrays, each step ``wrap``ped (nnx.jit or eager): the gradient of a pure
    loss of the parameters' values (nnx.grad refuses ref Variables on JAX
    too), the optimizer's in-place update, a counter Variable written."""
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    x, y = jnp.asarray(rng.normal(size=(5, 3))), jnp.asarray(rng.normal(size=(5, 2)))

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(3, 4, rngs=rngs, param_dtype=jnp.float64)
            self.l2 = nnx.Linear(4, 2, rngs=rngs, param_dtype=jnp.float64)
            self.count = nnx.Variable(jnp.zeros((), jnp.int32))

        def __call__(self, x):
            return self.l2(jnp.tanh(self.l1(x)))

    def step(model, optimizer):
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)
        values = jax.tree.map(lambda v: v[...], params)

        def loss(values):
            return jnp.mean((nnx.merge(graphdef, values, rest)(x) - y) ** 2)
        value, grads = jax.value_and_grad(loss)(values)
        optimizer.update(model, grads)
        model.count[...] += 1
        return value

    with nnx.var_defaults(ref=ref):
        model = MLP(nnx.Rngs(5))
        optimizer = nnx.Optimizer(model, optax.adam(0.05), wrt=nnx.Param)
    assert isinstance(model.l1.kernel.get_raw_value(), jax.Ref) == ref
    step = wrap(step)
    losses = [float(step(model, optimizer)) for _ in range(4)]
    return losses, np.asarray(model.l1.kernel[...]), int(model.count[...]), int(optimizer.step[...])


def test_ref_variables_under_nnx_jit_train_as_array_variables(fx):
    """nnx.var_defaults(ref=True) under nnx.jit: each call reads the Refs' new
    values and writes the updates back; the same as plain Variables under
    nnx.jit and as the Ref model stepped eagerly."""
    jax, nnx, optax = fx
    ref_jit = _ref_training_run(jax, nnx, optax, True, nnx.jit)
    for other in (_ref_training_run(jax, nnx, optax, False, nnx.jit),
                  _ref_training_run(jax, nnx, optax, True, lambda f: f)):
        np.testing.assert_allclose(ref_jit[0], other[0], rtol=1e-12)
        np.testing.assert_allclose(ref_jit[1], other[1], rtol=1e-12)
        assert ref_jit[2:] == other[2:] == (4, 4)
    assert ref_jit[0][-1] < ref_jit[0][0]


def test_summary_tables_are_jaxs(fx, programs, reference_file):
    """flax.linen's nn.tabulate (it sets jax.check_tracer_leaks(False)) and
    nnx.tabulate print the very tables they print on JAX."""
    jax, nnx, _ = fx
    import flax.linen as nn
    tables = programs.run_tabulate(jax, nn, nnx)
    assert "Total Parameters: 26 (104 B)" in tables["linen"]
    assert tables == reference_file["tables"]
