"""optax 0.2.8, unmodified, on fungrad: ``import jax`` is aliased to fungrad
(fungrad.jax_compat, the public import hook) and optax's optimizers, schedules, combinators, tree
utilities and losses run under ``jit`` and give the numbers of their
published update rules (written here in NumPy, float64) or of fungrad.optim.

optax is installed without its dependencies (``pip install --no-deps
optax==0.2.8 absl-py``; its jax/jaxlib requirement is what the alias replaces).
"""
import math

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import optim
from fungrad.jax_compat import installed as aliased_jax

def test_alias_leaves_fungrad_modules_as_they_were():
    # first in the module: the module-scoped `ox` alias is not active yet
    import sys
    with aliased_jax() as jax:
        import jax.lax
        import jax.numpy as jnp
        assert jax.grad is fungrad.grad and jnp.sin is fnp.sin and jax.lax.scan is fungrad.lax.scan
        assert sys.modules["jax.lax"].cond is fungrad.lax.cond
    assert "jax" not in sys.modules and "jax.numpy" not in sys.modules
    assert fungrad.__spec__.name == "fungrad" and fnp.__spec__.name == "fungrad.numpy"
    assert fungrad.lax.__spec__.name == "fungrad.lax"


@pytest.fixture(scope="module")
def ox():
    """(jax, optax) with jax = fungrad, for this module only."""
    with aliased_jax(forget=("optax",)) as jax:
        import optax
        yield jax, optax


# ----------------------------------------------------------------------------
# the problem: least squares, W (3, 2) and b (2,), closed-form gradients
# ----------------------------------------------------------------------------

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = X @ np.array([[1.0, -2.0], [0.5, 0.0], [-1.5, 3.0]]) + np.array([0.3, -0.7]) \
    + 0.1 * RNG.normal(size=(40, 2))
PARAMS0 = {"W": np.array([[0.2, -0.1], [0.0, 0.3], [0.1, 0.1]]), "b": np.array([0.0, 0.5])}
STEPS = 8


def loss_fn(params):
    residual = X @ params["W"] + params["b"] - Y
    return fnp.mean(residual ** 2)


def closed_form_grads(params):
    residual = X @ params["W"] + params["b"] - Y
    scale = 2.0 / residual.size
    return {"W": scale * X.T @ residual, "b": scale * residual.sum(0)}


def train_with(jax, optimizer, steps=STEPS):
    """``steps`` jitted steps of ``optimizer`` from PARAMS0; the final params."""
    import optax
    params = {k: fnp.asarray(v) for k, v in PARAMS0.items()}
    state = optimizer.init(params)

    @jax.jit
    def step(params, state):
        grads = jax.grad(loss_fn)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    for _ in range(steps):
        params, state = step(params, state)
    return {k: np.asarray(v) for k, v in params.items()}


def train_reference(update, init, steps=STEPS):
    """The same training with a NumPy update rule applied leaf by leaf:
    ``init(p) -> state``, ``update(g, state, p, t) -> (step, state)``, t = 1, 2, ..."""
    params = {k: v.copy() for k, v in PARAMS0.items()}
    states = {k: init(v) for k, v in params.items()}
    grads_of = closed_form_grads
    for t in range(1, steps + 1):
        grads = grads_of(params)
        for k in params:
            delta, states[k] = update(grads[k], states[k], params[k], t)
            params[k] = params[k] + delta
    return params


# ----------------------------------------------------------------------------
# the update rules (optax's documented defaults)
# ----------------------------------------------------------------------------

LR = 0.05


def _zeros2(p):
    return (np.zeros_like(p), np.zeros_like(p))


def _adam_like(g, state, t, b1=0.9, b2=0.999, nesterov=False):
    m, v = state
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    if nesterov:
        m_hat = b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1 ** t)
    else:
        m_hat = m / (1 - b1 ** t)
    return m_hat, v / (1 - b2 ** t), (m, v)


def adam_rule(eps=1e-8, weight_decay=0.0, nesterov=False):
    def update(g, state, p, t):
        m_hat, v_hat, state = _adam_like(g, state, t, nesterov=nesterov)
        return -LR * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * p), state
    return _zeros2, update


def sgd_rule(momentum=None, nesterov=False):
    def update(g, trace, p, t):
        if momentum is None:
            return -LR * g, trace
        trace = g + momentum * trace
        return -LR * (g + momentum * trace if nesterov else trace), trace
    return np.zeros_like, update


def rmsprop_rule(decay=0.9, eps=1e-8):
    def update(g, nu, p, t):
        nu = decay * nu + (1 - decay) * g * g
        return -LR * g / np.sqrt(nu + eps), nu
    return np.zeros_like, update


def adagrad_rule(initial=0.1, eps=1e-7):
    def update(g, total, p, t):
        total = total + g * g
        return -LR * g / np.sqrt(total + eps), total
    return (lambda p: np.full_like(p, initial)), update


def adamax_rule(b1=0.9, b2=0.999, eps=1e-8):
    def update(g, state, p, t):
        m, u = state
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        return -LR * m / (1 - b1 ** t) / u, (m, u)
    return _zeros2, update


def lion_rule(b1=0.9, b2=0.99, weight_decay=1e-3):
    def update(g, m, p, t):
        direction = np.sign((1 - b1) * g + b1 * m)
        m = b2 * m + (1 - b2) * g
        return -LR * (direction + weight_decay * p), m
    return np.zeros_like, update


def yogi_rule(b1=0.9, b2=0.999, eps=1e-3, initial=1e-6):
    def update(g, state, p, t):
        m, v = state
        m = b1 * m + (1 - b1) * g
        v = v - (1 - b2) * np.sign(v - g * g) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        return -LR * m_hat / (np.sqrt(v_hat) + eps), (m, v)
    return (lambda p: (np.full_like(p, initial), np.full_like(p, initial))), update


def amsgrad_rule(eps=1e-8):
    def update(g, state, p, t):
        adam_state, v_max = state
        m_hat, v_hat, adam_state = _adam_like(g, adam_state, t)
        v_max = np.maximum(v_max, v_hat)
        return -LR * m_hat / (np.sqrt(v_max) + eps), (adam_state, v_max)
    return (lambda p: (_zeros2(p), np.zeros_like(p))), update


def adabelief_rule(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16):
    def update(g, state, p, t):
        m, s = state
        m = b1 * m + (1 - b1) * g
        s = b2 * s + (1 - b2) * (g - m) ** 2 + eps_root
        m_hat, s_hat = m / (1 - b1 ** t), s / (1 - b2 ** t)
        return -LR * m_hat / (np.sqrt(s_hat) + eps), (m, s)
    return _zeros2, update


def sign_sgd_rule():
    return (lambda p: None), (lambda g, s, p, t: (-LR * np.sign(g), None))


# name -> (optax optimizer, reference rule)
CLOSED_FORMS = {
    "sgd": (lambda o: o.sgd(LR), sgd_rule()),
    "sgd_nesterov": (lambda o: o.sgd(LR, momentum=0.9, nesterov=True), sgd_rule(0.9, True)),
    "adam": (lambda o: o.adam(LR), adam_rule()),
    "adamw": (lambda o: o.adamw(LR), adam_rule(weight_decay=1e-4)),
    "nadam": (lambda o: o.nadam(LR), adam_rule(nesterov=True)),
    "rmsprop": (lambda o: o.rmsprop(LR), rmsprop_rule()),
    "adagrad": (lambda o: o.adagrad(LR), adagrad_rule()),
    "adamax": (lambda o: o.adamax(LR), adamax_rule()),
    "lion": (lambda o: o.lion(LR), lion_rule()),
    "yogi": (lambda o: o.yogi(LR), yogi_rule()),
    "amsgrad": (lambda o: o.amsgrad(LR), amsgrad_rule()),
    "adabelief": (lambda o: o.adabelief(LR), adabelief_rule()),
    "sign_sgd": (lambda o: o.sign_sgd(LR), sign_sgd_rule()),
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_optimizer_matches_its_update_rule_under_jit(ox, name):
    jax, optax = ox
    make, (init, update) = CLOSED_FORMS[name]
    got = train_with(jax, make(optax))
    want = train_reference(update, init)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-14, err_msg=f"{name} {k}")
    # the training made progress (the references are not trivially equal)
    assert not np.allclose(got["W"], PARAMS0["W"])


FUNGRAD_TWINS = {
    "sgd_momentum": (lambda o: o.sgd(LR, momentum=0.8), optim.sgd(LR, momentum=0.8)),
    "adam": (lambda o: o.adam(LR, b1=0.8, eps=1e-6), optim.adam(LR, b1=0.8, eps=1e-6)),
    "adamw": (lambda o: o.adamw(LR, weight_decay=0.01), optim.adamw(LR, weight_decay=0.01)),
    "rmsprop": (lambda o: o.rmsprop(LR, momentum=0.5), optim.rmsprop(LR, momentum=0.5)),
    "chain": (lambda o: o.chain(o.clip_by_global_norm(0.5), o.add_decayed_weights(1e-3),
                                o.scale_by_adam(), o.scale(-LR)),
              optim.chain(optim.clip_by_global_norm(0.5), optim.add_decayed_weights(1e-3),
                          optim.scale_by_adam(), optim.scale(-LR))),
    "adam_schedule": (lambda o: o.adam(o.cosine_decay_schedule(LR, 6, alpha=0.1)),
                      optim.adam(optim.cosine_decay_schedule(LR, 6, alpha=0.1))),
}


@pytest.mark.parametrize("name", sorted(FUNGRAD_TWINS))
def test_optimizer_matches_fungrad_optim(ox, name):
    jax, optax = ox
    make, twin = FUNGRAD_TWINS[name]
    got = train_with(jax, make(optax))
    want = train_with(jax, twin)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-14, err_msg=f"{name} {k}")


def test_lbfgs_reaches_the_least_squares_solution(ox):
    jax, optax = ox
    solver = optax.lbfgs()
    params = {k: fnp.asarray(v) for k, v in PARAMS0.items()}
    state = solver.init(params)
    value_and_grad = optax.value_and_grad_from_state(loss_fn)

    @jax.jit
    def step(params, state):
        value, grad = value_and_grad(params, state=state)
        updates, state = solver.update(grad, state, params, value=value, grad=grad,
                                       value_fn=loss_fn)
        return optax.apply_updates(params, updates), state

    for _ in range(25):
        params, state = step(params, state)
    design = np.hstack([X, np.ones((len(X), 1))])
    solution = np.linalg.lstsq(design, Y, rcond=None)[0]
    np.testing.assert_allclose(params["W"], solution[:3], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(params["b"], solution[3], rtol=1e-9, atol=1e-10)


# ----------------------------------------------------------------------------
# schedules (evaluated under jit with a traced step)
# ----------------------------------------------------------------------------

def _cosine(init, steps, alpha, t):
    t = min(t, steps)
    return init * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t / steps)) + alpha)


SCHEDULES = {
    "constant": (lambda o: o.constant_schedule(0.3), lambda t: 0.3),
    "exponential_staircase": (lambda o: o.exponential_decay(1.0, 3, 0.5, staircase=True),
                              lambda t: 0.5 ** (t // 3)),
    "exponential_begin": (lambda o: o.exponential_decay(2.0, 4, 0.1, transition_begin=2),
                          lambda t: 2.0 * 0.1 ** (max(t - 2, 0) / 4)),
    "cosine": (lambda o: o.cosine_decay_schedule(1.0, 10, alpha=0.1),
               lambda t: _cosine(1.0, 10, 0.1, t)),
    "linear": (lambda o: o.linear_schedule(1.0, 0.2, 8), lambda t: 1.0 - 0.8 * min(t, 8) / 8),
    "polynomial": (lambda o: o.polynomial_schedule(1.0, 0.1, 2, 10),
                   lambda t: (1.0 - 0.1) * (1 - min(t, 10) / 10) ** 2 + 0.1),
    "piecewise_constant": (lambda o: o.piecewise_constant_schedule(1.0, {3: 0.5, 6: 0.1}),
                           lambda t: 1.0 * (0.5 if t >= 3 else 1) * (0.1 if t >= 6 else 1)),
    "warmup_cosine": (lambda o: o.warmup_cosine_decay_schedule(0.0, 1.0, 4, 12, end_value=0.1),
                      lambda t: t / 4 if t < 4 else 0.1 + 0.9 * 0.5 * (
                          1 + math.cos(math.pi * min(t - 4, 8) / 8))),
    "join": (lambda o: o.join_schedules([o.constant_schedule(1.0),
                                         o.linear_schedule(1.0, 0.0, 5)], [3]),
             lambda t: 1.0 if t < 3 else 1.0 - min(t - 3, 5) / 5),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_values_under_jit(ox, name):
    jax, optax = ox
    make, closed_form = SCHEDULES[name]
    schedule = jax.jit(make(optax))
    got = [float(schedule(fnp.asarray(t))) for t in range(15)]
    np.testing.assert_allclose(got, [closed_form(t) for t in range(15)], rtol=1e-13, atol=1e-15)


def test_schedules_match_fungrad_optim(ox):
    jax, optax = ox
    pairs = [(optax.cosine_decay_schedule(0.7, 9, alpha=0.2, exponent=2.0),
              optim.cosine_decay_schedule(0.7, 9, alpha=0.2, exponent=2.0)),
             (optax.exponential_decay(1.0, 2, 0.3, transition_begin=1, end_value=0.2),
              optim.exponential_decay(1.0, 2, 0.3, transition_begin=1, end_value=0.2)),
             (optax.polynomial_schedule(2.0, 0.5, 3, 7, transition_begin=2),
              optim.polynomial_schedule(2.0, 0.5, 3, 7, transition_begin=2))]
    steps = fnp.arange(14)
    for ours, theirs in pairs:
        np.testing.assert_allclose(jax.vmap(ours)(steps), jax.vmap(theirs)(steps), rtol=1e-14)


# ----------------------------------------------------------------------------
# combinators: multi_transform, MultiSteps, inject_hyperparams, masked
# ----------------------------------------------------------------------------

def test_multi_transform_is_each_optimizer_on_its_leaves(ox):
    jax, optax = ox
    tx = optax.multi_transform({"fast": optax.adam(LR), "slow": optax.sgd(LR)},
                               {"W": "fast", "b": "slow"})
    got = train_with(jax, tx)
    adam_init, adam_update = adam_rule()
    sgd_init, sgd_update = sgd_rule()
    want = train_reference(
        lambda g, s, p, t: (adam_update if p.ndim == 2 else sgd_update)(g, s, p, t),
        lambda p: (adam_init if p.ndim == 2 else sgd_init)(p))
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12)


def test_multi_steps_accumulates_k_gradients(ox):
    jax, optax = ox
    k = 3
    tx = optax.MultiSteps(optax.adam(LR), every_k_schedule=k, accumulator_dtype=fnp.float64)
    got = train_with(jax, tx, steps=2 * k)
    # reference: the gradient is taken at the params of every mini-step, but the
    # params change only every k-th step, by Adam on the mean of the k gradients
    init, update = adam_rule()
    params = {kk: v.copy() for kk, v in PARAMS0.items()}
    states = {kk: init(v) for kk, v in params.items()}
    accumulated = {kk: np.zeros_like(v) for kk, v in params.items()}
    for mini in range(1, 2 * k + 1):
        grads = closed_form_grads(params)
        accumulated = {kk: accumulated[kk] + grads[kk] for kk in params}
        if mini % k == 0:
            for kk in params:
                delta, states[kk] = update(accumulated[kk] / k, states[kk], params[kk], mini // k)
                params[kk] = params[kk] + delta
            accumulated = {kk: np.zeros_like(v) for kk, v in params.items()}
    for kk in params:
        np.testing.assert_allclose(got[kk], params[kk], rtol=1e-12)


def test_inject_hyperparams_follows_the_schedule(ox):
    jax, optax = ox
    schedule = optax.linear_schedule(LR, LR / 10, 5)
    injected = optax.inject_hyperparams(optax.adam)(learning_rate=schedule)
    plain = optax.adam(schedule)
    for k, v in train_with(jax, plain).items():
        np.testing.assert_allclose(train_with(jax, injected)[k], v, rtol=1e-13)
    state = injected.init({k: fnp.asarray(v) for k, v in PARAMS0.items()})
    assert float(state.hyperparams["learning_rate"]) == pytest.approx(LR)
    state = optax.tree_utils.tree_set(state, learning_rate=0.2)
    assert float(state.hyperparams["learning_rate"]) == pytest.approx(0.2)


def test_masked_and_apply_if_finite(ox):
    jax, optax = ox
    masked = optax.masked(optax.sgd(LR), {"W": True, "b": False})
    got = train_with(jax, optax.chain(masked))
    # b is not touched by the masked sgd: apply_updates adds the raw gradient
    # to it (optax's masked passes unmasked updates through unchanged)
    params = {k: v.copy() for k, v in PARAMS0.items()}
    for _ in range(STEPS):
        grads = closed_form_grads(params)
        params = {"W": params["W"] - LR * grads["W"], "b": params["b"] + grads["b"]}
    for k in params:
        np.testing.assert_allclose(got[k], params[k], rtol=1e-12)
    guarded = optax.apply_if_finite(optax.sgd(LR), max_consecutive_errors=2)
    state = guarded.init({k: fnp.asarray(v) for k, v in PARAMS0.items()})
    bad = {"W": fnp.full((3, 2), np.nan), "b": fnp.zeros(2)}
    updates, state = jax.jit(guarded.update)(bad, state)
    assert float(fnp.abs(updates["W"]).sum()) == 0 and int(state.notfinite_count) == 1


# ----------------------------------------------------------------------------
# tree utilities and fungrad features optax relies on
# ----------------------------------------------------------------------------

def test_tree_utilities(ox):
    jax, optax = ox
    tu = optax.tree_utils
    a = {"W": fnp.asarray(PARAMS0["W"]), "b": fnp.asarray(PARAMS0["b"])}
    b = {"W": fnp.ones((3, 2)), "b": fnp.array([2.0, -1.0])}
    flat_a = np.concatenate([PARAMS0["W"].ravel(), PARAMS0["b"]])
    flat_b = np.concatenate([np.ones(6), [2.0, -1.0]])
    np.testing.assert_allclose(jax.jit(tu.tree_vdot)(a, b), flat_a @ flat_b, rtol=1e-14)
    np.testing.assert_allclose(tu.tree_norm(b), np.linalg.norm(flat_b), rtol=1e-14)
    np.testing.assert_allclose(tu.tree_sum(b), flat_b.sum(), rtol=1e-14)
    np.testing.assert_allclose(tu.tree_max(b), 2.0)
    np.testing.assert_allclose(tu.tree_add(a, b)["b"], PARAMS0["b"] + [2.0, -1.0])
    np.testing.assert_allclose(tu.tree_sub(a, b)["W"], PARAMS0["W"] - 1)
    np.testing.assert_allclose(tu.tree_scale(3.0, b)["b"], [6.0, -3.0])
    np.testing.assert_allclose(tu.tree_clip(b, -0.5, 0.5)["b"], [0.5, -0.5])
    assert tu.tree_zeros_like(a)["W"].shape == (3, 2)
    assert tu.tree_cast(a, fnp.float32)["b"].dtype == np.float32
    noise = tu.tree_random_like(jax.random.PRNGKey(0), a)
    assert noise["W"].shape == (3, 2) and noise["b"].dtype == np.float64
    state = optax.adam(LR).init(a)
    assert int(tu.tree_get(state, "count")) == 0


def test_isinstance_of_tracers_inside_jit_grad_vmap(ox):
    jax, optax = ox
    seen = []

    def f(x):
        seen.append((isinstance(x, jax.numpy.ndarray), isinstance(x, jax.Array)))
        return (x * x).sum()

    jax.jit(f)(fnp.ones(3))
    jax.grad(f)(fnp.ones(3))
    jax.vmap(f)(fnp.ones((2, 3)))
    assert seen == [(True, True)] * 3


def test_like_functions_take_shape_dtype_structs(ox):
    jax, optax = ox
    struct = jax.eval_shape(lambda x: fnp.sum(x, axis=0), fnp.ones((4, 3), np.float32))
    for like in (fnp.zeros_like, fnp.ones_like, fnp.empty_like):
        out = like(struct)
        assert out.shape == (3,) and out.dtype == np.float32
    np.testing.assert_array_equal(fnp.full_like(struct, 7.0), np.full(3, 7.0, np.float32))
    assert fnp.zeros_like(struct, dtype=np.int32, shape=(2,)).dtype == np.int32
    aval = jax.typeof(fnp.ones((2, 5)))
    assert (aval.shape, aval.dtype) == ((2, 5), np.float64)
    assert fnp.zeros_like(aval).shape == (2, 5)
    assert aval.sharding.is_fully_replicated


def test_small_jax_names_optax_uses(ox):
    jax, optax = ox
    assert jax.lax.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    with pytest.raises(ValueError, match=r"\(2,\), \(3,\)"):
        jax.lax.broadcast_shapes((2,), (3,))
    assert jax.lax.Precision("highest") is jax.lax.Precision.HIGHEST
    assert str(jax.lax.Precision.DEFAULT) == "DEFAULT"
    with pytest.raises(ValueError, match="lax.Precision"):
        jax.lax.Precision("best")
    assert jax.P("x", None) == jax.sharding.PartitionSpec("x", None)
    # reductions of concrete arrays read where=None as "no mask" (NumPy: a False mask)
    values = fnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert float(values.sum(where=None)) == 10.0 and float(values.max(where=None)) == 4.0
    np.testing.assert_allclose(values.mean(axis=-1, where=None, keepdims=True), [[1.5], [3.5]])
    with pytest.raises(TypeError, match="not a valid fungrad"):
        jax.typeof(object())
    # lax.cond's keyword operand (optax's apply_if_finite uses it)
    assert float(jax.lax.cond(True, lambda v: v + 1, lambda v: v - 1, operand=2.0)) == 3.0
    with pytest.raises(TypeError, match="operand"):
        jax.lax.cond(True, lambda v: v, lambda v: v, 1.0, operand=2.0)


def test_hungarian_algorithm_matches_scipy_under_jit_and_vmap(ox):
    # optax.assignment runs while_loops whose carries start as Python scalars
    import scipy.optimize
    jax, optax = ox
    costs = np.random.default_rng(2).uniform(size=(3, 5, 6))
    rows, cols = jax.jit(jax.vmap(optax.assignment.hungarian_algorithm))(costs)
    for c, r, k in zip(costs, np.asarray(rows), np.asarray(cols)):
        best_r, best_k = scipy.optimize.linear_sum_assignment(c)
        np.testing.assert_allclose(c[r, k].sum(), c[best_r, best_k].sum(), rtol=1e-14)
        assert len(set(k.tolist())) == 5


# ----------------------------------------------------------------------------
# losses
# ----------------------------------------------------------------------------

LOGITS = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0], [-0.3, 0.0, 0.3]])
ONE_HOT = np.eye(3)[[1, 2, 0]]


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_classification_losses(ox):
    jax, optax = ox
    labels = np.array([1, 2, 0])
    ce = -(ONE_HOT * _log_softmax(LOGITS)).sum(-1)
    np.testing.assert_allclose(jax.jit(optax.softmax_cross_entropy)(LOGITS, ONE_HOT), ce,
                               rtol=1e-14)
    np.testing.assert_allclose(
        optax.softmax_cross_entropy_with_integer_labels(LOGITS, labels), ce, rtol=1e-14)
    targets = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.5], [0.2, 0.9, 1.0]])
    bce = -(targets * np.log(1 / (1 + np.exp(-LOGITS)))
            + (1 - targets) * np.log(1 - 1 / (1 + np.exp(-LOGITS))))
    np.testing.assert_allclose(optax.sigmoid_binary_cross_entropy(LOGITS, targets), bce,
                               rtol=1e-13)
    np.testing.assert_allclose(optax.hinge_loss(LOGITS[:, 0], np.array([1.0, -1.0, 1.0])),
                               np.maximum(0, 1 - LOGITS[:, 0] * [1, -1, 1]), rtol=1e-14)
    smoothed = optax.smooth_labels(ONE_HOT, 0.1)
    np.testing.assert_allclose(smoothed, ONE_HOT * 0.9 + 0.1 / 3, rtol=1e-14)
    log_p = _log_softmax(LOGITS)
    np.testing.assert_allclose(optax.kl_divergence(log_p, ONE_HOT * 0.9 + 0.1 / 3),
                               ((ONE_HOT * 0.9 + 0.1 / 3) * (np.log(ONE_HOT * 0.9 + 0.1 / 3)
                                                             - log_p)).sum(-1), rtol=1e-13)
    # the gradient of softmax cross entropy is softmax - labels, under jit
    grad = jax.jit(jax.grad(lambda z: optax.softmax_cross_entropy(z, ONE_HOT).sum()))(LOGITS)
    np.testing.assert_allclose(grad, np.exp(log_p) - ONE_HOT, rtol=1e-13, atol=1e-15)


def test_regression_losses(ox):
    jax, optax = ox
    pred, target = LOGITS, ONE_HOT
    diff = pred - target
    np.testing.assert_allclose(optax.squared_error(pred, target), diff ** 2, rtol=1e-15)
    np.testing.assert_allclose(optax.l2_loss(pred, target), 0.5 * diff ** 2, rtol=1e-15)
    delta = 0.7
    huber = np.where(np.abs(diff) <= delta, 0.5 * diff ** 2, delta * (np.abs(diff) - 0.5 * delta))
    np.testing.assert_allclose(jax.jit(lambda p, t: optax.huber_loss(p, t, delta=delta))(pred, target),
                               huber, rtol=1e-14)
    np.testing.assert_allclose(optax.log_cosh(pred, target), np.log(np.cosh(diff)), rtol=1e-13)
    cosine = (pred * target).sum(-1) / (np.linalg.norm(pred, axis=-1)
                                        * np.linalg.norm(target, axis=-1))
    np.testing.assert_allclose(optax.cosine_similarity(pred, target), cosine, rtol=1e-13)


def test_ctc_loss_is_minus_log_of_summed_alignments(ox):
    jax, optax = ox
    # T = 4 frames, K = 3 classes (blank 0), label [1, 2]: sum over all 3**4 paths
    # whose collapse (merge repeats, drop blanks) is [1, 2]
    logits = np.random.default_rng(1).normal(size=(1, 4, 3))
    log_p = _log_softmax(logits[0])
    total = 0.0
    for path in np.ndindex(3, 3, 3, 3):
        collapsed = [c for i, c in enumerate(path) if c != 0 and (i == 0 or path[i - 1] != c)]
        if collapsed == [1, 2]:
            total += math.exp(sum(log_p[t, c] for t, c in enumerate(path)))
    loss = jax.jit(optax.ctc_loss)(logits, np.zeros((1, 4)), np.array([[1, 2]]), np.zeros((1, 2)))
    np.testing.assert_allclose(loss, [-math.log(total)], rtol=1e-12)
