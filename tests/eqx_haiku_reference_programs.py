"""Programs written for JAX with equinox and haiku, run once on real JAX
0.10.2 (tools/record_eqx_haiku_reference.py, which saves
tests/data/eqx_haiku_reference.npz) and by tests/test_eco_equinox.py and
tests/test_eco_haiku.py on fungrad through the import hook.

Every parameter comes from NumPy (fixed seeds), never from jax.random, so the
two runs compute the same thing whatever random stream either follows.  The
modules (jax, eqx/hk, optax) are arguments: this file imports no JAX.
"""
import numpy as np

RNG = np.random.default_rng(42)
X = RNG.normal(size=(7, 3))
Y = RNG.normal(size=(7, 2))
MLP_SHAPES = [(8, 3), (8, 8), (2, 8)]        # equinox stores (out, in)
MLP_WEIGHTS = [(RNG.normal(size=s) / np.sqrt(s[1]), 0.1 * RNG.normal(size=s[0]))
               for s in MLP_SHAPES]
HK_PARAMS = {
    "linear": {"w": RNG.normal(size=(3, 8)) / np.sqrt(3), "b": 0.1 * RNG.normal(size=8)},
    "batch_norm": {"scale": 1.0 + 0.1 * RNG.normal(size=(1, 8)),
                   "offset": 0.1 * RNG.normal(size=(1, 8))},
    "linear_1": {"w": RNG.normal(size=(8, 2)) / np.sqrt(8), "b": 0.1 * RNG.normal(size=2)},
}
RNN_PARAMS = {"linear": {"w": RNG.normal(size=(3, 3)) / np.sqrt(3), "b": 0.1 * RNG.normal(size=3)}}
XS = RNG.normal(size=(5, 3))


def equinox_programs(jax, eqx, eqxi, optax) -> dict:
    """An MLP's output, loss gradient and five adam steps under filter_jit; the
    checkpointed while loop's value and gradient."""
    jnp = jax.numpy
    model = eqx.nn.MLP(3, 2, width_size=8, depth=2, key=jax.random.PRNGKey(0))
    for i, (w, b) in enumerate(MLP_WEIGHTS):
        model = eqx.tree_at(lambda m, i=i: (m.layers[i].weight, m.layers[i].bias), model,
                            (jnp.asarray(w), jnp.asarray(b)))

    def loss(m, xs, ys):
        return jnp.mean((jax.vmap(m)(xs) - ys) ** 2)
    out = {"eqx_outputs": eqx.filter_vmap(model)(X)}
    _, grads = eqx.filter_value_and_grad(loss)(model, X, Y)
    out["eqx_grad_w0"] = grads.layers[0].weight
    opt = optax.adam(1e-2)

    @eqx.filter_jit
    def step(m, state):
        value, g = eqx.filter_value_and_grad(loss)(m, X, Y)
        updates, state = opt.update(g, state, eqx.filter(m, eqx.is_array))
        return eqx.apply_updates(m, updates), state, value
    state, losses = opt.init(eqx.filter(model, eqx.is_inexact_array)), []
    for _ in range(5):
        model, state, value = step(model, state)
        losses.append(value)
    out["eqx_losses"] = jnp.stack(losses)
    out["eqx_trained_w2"] = model.layers[2].weight

    def run(theta):
        def body(carry):
            i, x, th = carry
            return i + 1, x + th * jnp.sin(x), th
        return eqxi.while_loop(lambda c: c[0] < 6, body, (0, 1.0, theta), max_steps=10,
                               kind="checkpointed", checkpoints=2)[1]
    thetas = jnp.array([0.7, 0.2])
    out["eqx_loop"] = jax.vmap(run)(thetas)
    out["eqx_loop_grad"] = jax.jit(jax.vmap(jax.grad(run)))(thetas)
    return {k: np.asarray(v) for k, v in out.items()}


def haiku_programs(jax, hk, optax) -> dict:
    """An MLP with BatchNorm: three SGD-momentum steps under jax.jit (losses,
    parameters, moving averages), evaluation from the averages; hk.remat's
    gradient; an hk.scan RNN."""
    jnp = jax.numpy

    def net(x, is_training):
        x = hk.Linear(8)(x)
        x = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(x, is_training)
        return hk.Linear(2)(jax.nn.relu(x))
    f = hk.transform_with_state(net)
    _, state = f.init(jax.random.PRNGKey(0), X, True)
    params = jax.tree_util.tree_map(jnp.asarray, HK_PARAMS)
    opt = optax.sgd(0.1, momentum=0.9)

    def loss(p, st):
        pred, st = f.apply(p, st, None, X, True)
        return jnp.mean((pred - Y) ** 2), st

    @jax.jit
    def step(p, st, opt_state):
        (value, st), g = jax.value_and_grad(loss, has_aux=True)(p, st)
        updates, opt_state = opt.update(g, opt_state)
        return optax.apply_updates(p, updates), st, opt_state, value
    opt_state, losses = opt.init(params), []
    for _ in range(3):
        params, state, opt_state, value = step(params, state, opt_state)
        losses.append(value)
    out = {"hk_losses": jnp.stack(losses), "hk_trained_w": params["linear_1"]["w"],
           "hk_mean_ema": state["batch_norm/~/mean_ema"]["average"],
           "hk_var_ema": state["batch_norm/~/var_ema"]["average"],
           "hk_eval": f.apply(params, state, None, X, False)[0]}

    remat = hk.transform(lambda x: hk.remat(lambda h: jnp.tanh(hk.Linear(8)(h)) * 2.0)(x))
    remat_params = {"linear": HK_PARAMS["linear"]}
    out["hk_remat_grad"] = jax.grad(
        lambda p: jnp.sum(remat.apply(p, None, X) ** 2))(remat_params)["linear"]["w"]

    def rnn(xs):
        cell = hk.Linear(3)

        def body(carry, x):
            carry = jnp.tanh(cell(carry) + x)
            return carry, carry
        return hk.scan(body, jnp.zeros(3), xs)[1]
    out["hk_scan"] = hk.transform(rnn).apply(RNN_PARAMS, None, XS)
    return {k: np.asarray(v) for k, v in out.items()}
