"""fungrad.optim: optax-style optimizers against hand-written NumPy formulas,
convergence on a quadratic and Rosenbrock, jit equals eager, schedules,
chain order, pytree mismatch errors, and the mass–spring seed (design.md §8.6)."""
from __future__ import annotations

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
import fungrad.optim as optim


def _params():
    return {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array([0.3, -0.7])}


def _grads(step):
    """A different, deterministic gradient pytree for every step."""
    rng = np.random.default_rng(step)
    return {"w": rng.normal(size=(2, 2)), "b": rng.normal(size=2)}


def _run(opt, steps, params=None):
    """Apply ``opt`` for ``steps`` steps with the gradients of ``_grads``."""
    params = _params() if params is None else params
    state = opt.init(params)
    history = []
    for t in range(steps):
        updates, state = opt.update(_grads(t), state, params)
        params = optim.apply_updates(params, updates)
        history.append(params)
    return history


def _assert_trees_close(got, want, rtol=1e-12, atol=1e-14):
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)


def _numpy_reference(step_fn, steps):
    """Run a NumPy update rule ``step_fn(t, g, p, slots) -> p`` leaf by leaf."""
    params, slots, history = _params(), {k: {} for k in _params()}, []
    for t in range(steps):
        g = _grads(t)
        params = {k: step_fn(t, g[k], params[k], slots[k]) for k in params}
        history.append(params)
    return history


# ----------------------------------------------------------------------------
# First steps against hand-computed formulas
# ----------------------------------------------------------------------------

def _adam_rule(lr, b1, b2, eps, wd=0.0):
    def step(t, g, p, s):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g ** 2
        m_hat, v_hat = s["m"] / (1 - b1 ** (t + 1)), s["v"] / (1 - b2 ** (t + 1))
        return p - lr * (m_hat / (np.sqrt(v_hat) + eps) + wd * p)
    return step


def test_adam_first_steps_match_formula():
    got = _run(optim.adam(0.01, b1=0.8, b2=0.99, eps=1e-6), 4)
    want = _numpy_reference(_adam_rule(0.01, 0.8, 0.99, 1e-6), 4)
    for g, w in zip(got, want):
        _assert_trees_close(g, w)


def test_adamw_decoupled_weight_decay():
    """AdamW: p ← p − lr·(adam_direction + wd·p), decay not fed into the moments."""
    got = _run(optim.adamw(0.05, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.1), 3)
    want = _numpy_reference(_adam_rule(0.05, 0.9, 0.999, 1e-8, wd=0.1), 3)
    for g, w in zip(got, want):
        _assert_trees_close(g, w)


@pytest.mark.parametrize("momentum,nesterov", [(None, False), (0.9, False), (0.9, True)])
def test_sgd_first_steps_match_formula(momentum, nesterov):
    lr = 0.1

    def step(t, g, p, s):
        if momentum is None:
            return p - lr * g
        s["tr"] = g + momentum * s.get("tr", 0.0)
        direction = g + momentum * s["tr"] if nesterov else s["tr"]
        return p - lr * direction

    got = _run(optim.sgd(lr, momentum=momentum, nesterov=nesterov), 4)
    for g, w in zip(got, _numpy_reference(step, 4)):
        _assert_trees_close(g, w)


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [None, 0.5])
def test_rmsprop_first_steps_match_formula(centered, momentum):
    lr, decay, eps = 0.01, 0.9, 1e-8

    def step(t, g, p, s):
        s["v"] = decay * s.get("v", 0.0) + (1 - decay) * g ** 2
        s["m"] = decay * s.get("m", 0.0) + (1 - decay) * g
        var = s["v"] - s["m"] ** 2 if centered else s["v"]
        scaled = -lr * g / np.sqrt(var + eps)      # eps inside the root, as optax
        if momentum is None:
            return p + scaled
        s["tr"] = scaled + momentum * s.get("tr", 0.0)  # momentum after the lr
        return p + s["tr"]

    got = _run(optim.rmsprop(lr, decay, eps, centered=centered, momentum=momentum), 4)
    for g, w in zip(got, _numpy_reference(step, 4)):
        _assert_trees_close(g, w, rtol=1e-10)


def test_schedule_learning_rate_starts_at_step_zero():
    """The first update uses schedule(0), the second schedule(1), ..."""
    lr = optim.exponential_decay(0.1, transition_steps=1, decay_rate=0.5)
    got = _run(optim.sgd(lr), 3)
    want = _numpy_reference(lambda t, g, p, s: p - 0.1 * 0.5 ** t * g, 3)
    for g, w in zip(got, want):    # the schedule is float32, as optax's under JAX:
        _assert_trees_close(g, w, rtol=1e-7)     # int32 count / int is float32


def test_float32_params_stay_float32():
    params = {k: v.astype(np.float32) for k, v in _params().items()}
    opt = optim.adamw(optim.cosine_decay_schedule(0.1, 10))
    state = opt.init(params)
    grads = {k: v.astype(np.float32) for k, v in _grads(0).items()}
    updates, state = opt.update(grads, state, params)
    new = optim.apply_updates(params, updates)
    assert all(u.dtype == np.float32 for u in updates.values())
    assert all(p.dtype == np.float32 for p in new.values())


# ----------------------------------------------------------------------------
# Minimisation with fungrad.grad
# ----------------------------------------------------------------------------

def _minimise(opt, loss, params, steps):
    @fungrad.jit
    def step(params, state):
        grads = fungrad.grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    state = opt.init(params)
    for _ in range(steps):
        params, state = step(params, state)
    return params


def _quadratic(p):
    a = np.array([[3.0, 0.5], [0.5, 1.0]])
    centre = np.array([1.0, -2.0])
    d = p["x"] - centre
    return 0.5 * d @ (a @ d) + (p["s"] - 0.5) ** 2


def _rosenbrock(p):
    return (1 - p["x"]) ** 2 + 100 * (p["y"] - p["x"] ** 2) ** 2


@pytest.mark.parametrize("opt", [
    optim.adam(optim.exponential_decay(0.1, 200, 0.3)),
    optim.sgd(0.1, momentum=0.9),
    optim.rmsprop(optim.exponential_decay(0.01, 200, 0.3), momentum=0.5),
], ids=["adam", "sgd_momentum", "rmsprop"])
def test_minimise_quadratic(opt):
    p = _minimise(opt, _quadratic, {"x": np.zeros(2), "s": np.asarray(3.0)}, 800)
    np.testing.assert_allclose(p["x"], [1.0, -2.0], atol=1e-4)
    np.testing.assert_allclose(p["s"], 0.5, atol=1e-4)


@pytest.mark.parametrize("opt,steps", [
    (optim.adam(optim.exponential_decay(0.05, 1000, 0.3)), 3000),
    (optim.sgd(1e-3, momentum=0.9), 3000),
    (optim.rmsprop(optim.exponential_decay(3e-3, 1000, 0.3), momentum=0.8), 4000),
], ids=["adam", "sgd_momentum", "rmsprop"])
def test_minimise_rosenbrock(opt, steps):
    p = _minimise(opt, _rosenbrock, {"x": np.asarray(-1.0), "y": np.asarray(1.0)}, steps)
    np.testing.assert_allclose([p["x"], p["y"]], [1.0, 1.0], atol=1e-3)


# ----------------------------------------------------------------------------
# jit and differentiability
# ----------------------------------------------------------------------------

def test_jit_training_step_equals_eager():
    opt = optim.chain(optim.clip_by_global_norm(1.0),
                      optim.adamw(optim.warmup_cosine_decay_schedule(0.0, 0.1, 3, 20)))

    def loss(p, x, y):
        return fnp.mean((fnp.tanh(x @ p["w"]) + p["b"] - y) ** 2)

    def step(params, state, x, y):
        value, grads = fungrad.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 2)), rng.normal(size=(8, 2))
    jitted = fungrad.jit(step)
    eager_p = jit_p = _params()
    eager_s = jit_s = opt.init(eager_p)
    for _ in range(5):
        eager_p, eager_s, eager_v = step(eager_p, eager_s, x, y)
        jit_p, jit_s, jit_v = jitted(jit_p, jit_s, x, y)
        np.testing.assert_allclose(jit_v, eager_v, rtol=1e-12)
    _assert_trees_close(jit_p, eager_p)
    eager_leaves = fungrad.tree_util.tree_leaves(eager_s)
    jit_leaves = fungrad.tree_util.tree_leaves(jit_s)
    assert fungrad.tree_util.tree_structure(eager_s) == fungrad.tree_util.tree_structure(jit_s)
    for a, b in zip(eager_leaves, jit_leaves):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)
        assert np.asarray(a).dtype == np.asarray(b).dtype


def test_update_is_differentiable_in_the_learning_rate():
    """Meta-gradient: d/dlr of L(p − lr·∇L(p)) = −∇L(p_new)·∇L(p)."""
    loss = lambda p: fnp.sum(p ** 3) + fnp.sum(p ** 2)
    dloss = lambda p: 3 * p ** 2 + 2 * p
    p = np.array([0.5, -1.0, 2.0])

    def after_one_step(lr):
        opt = optim.sgd(lr)
        updates, _ = opt.update(fungrad.grad(loss)(p), opt.init(p), p)
        return loss(optim.apply_updates(p, updates))

    lr = 0.05
    want = -dloss(p - lr * dloss(p)) @ dloss(p)
    np.testing.assert_allclose(fungrad.grad(after_one_step)(lr), want, rtol=1e-12)


# ----------------------------------------------------------------------------
# Clipping, chain, schedules
# ----------------------------------------------------------------------------

def test_global_norm_and_clip_by_global_norm():
    g = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    assert optim.global_norm(g) == 5.0
    clip = optim.clip_by_global_norm(2.5)
    clipped, _ = clip.update(g, clip.init(g))
    _assert_trees_close(clipped, {"a": np.array([1.5, 0.0]), "b": np.array([[2.0]])})
    np.testing.assert_allclose(optim.global_norm(clipped), 2.5)
    # below the threshold (and at zero) nothing changes
    for tree in (g, {"a": np.zeros(2), "b": np.zeros((1, 1))}):
        unchanged, _ = optim.clip_by_global_norm(10.0).update(tree, optim.EmptyState())
        _assert_trees_close(unchanged, tree)


def test_chain_applies_transforms_in_order():
    g = {"a": np.array([3.0, 4.0])}                       # norm 5
    scale_then_clip = optim.chain(optim.scale(2.0), optim.clip_by_global_norm(5.0))
    clip_then_scale = optim.chain(optim.clip_by_global_norm(5.0), optim.scale(2.0))
    u1, s1 = scale_then_clip.update(g, scale_then_clip.init(g))
    u2, _ = clip_then_scale.update(g, clip_then_scale.init(g))
    np.testing.assert_allclose(u1["a"], [3.0, 4.0])       # 2g has norm 10, clipped to 5
    np.testing.assert_allclose(u2["a"], [6.0, 8.0])       # g passes, then doubled
    assert isinstance(s1, tuple) and len(s1) == 2


def test_chain_threads_each_state():
    opt = optim.chain(optim.trace(0.5), optim.scale_by_schedule(lambda t: t + 1.0))
    p = {"a": np.array([1.0])}
    state = opt.init(p)
    u, state = opt.update({"a": np.array([1.0])}, state)   # trace 1,   scale 1
    np.testing.assert_allclose(u["a"], [1.0])
    u, state = opt.update({"a": np.array([1.0])}, state)   # trace 1.5, scale 2
    np.testing.assert_allclose(u["a"], [3.0])
    assert int(state[1].count) == 2


def test_schedules_values():
    exp = optim.exponential_decay(1.0, transition_steps=10, decay_rate=0.5)
    np.testing.assert_allclose([exp(0), exp(5), exp(10), exp(20)], [1, 0.5 ** 0.5, 0.5, 0.25])
    stair = optim.exponential_decay(1.0, 10, 0.5, staircase=True)
    np.testing.assert_allclose([stair(9), stair(10), stair(19)], [1.0, 0.5, 0.5])
    floor = optim.exponential_decay(1.0, 1, 0.5, end_value=0.2)
    np.testing.assert_allclose(floor(10), 0.2)
    delayed = optim.exponential_decay(1.0, 10, 0.5, transition_begin=5)
    np.testing.assert_allclose([delayed(3), delayed(15)], [1.0, 0.5])

    cos = optim.cosine_decay_schedule(2.0, decay_steps=100, alpha=0.1)
    np.testing.assert_allclose([cos(0), cos(50), cos(100), cos(1000)],
                               [2.0, 2.0 * (0.9 * 0.5 + 0.1), 0.2, 0.2])

    lin = optim.linear_schedule(1.0, 0.0, transition_steps=4, transition_begin=2)
    np.testing.assert_allclose([lin(0), lin(2), lin(3), lin(6), lin(99)],
                               [1.0, 1.0, 0.75, 0.0, 0.0])
    assert optim.constant_schedule(0.3)(123) == 0.3

    pw = optim.piecewise_constant_schedule(1.0, {10: 0.5, 20: 0.1})
    np.testing.assert_allclose([pw(0), pw(9), pw(10), pw(19), pw(20), pw(30)],
                               [1.0, 1.0, 0.5, 0.5, 0.05, 0.05])

    warm = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=110,
                                              end_value=0.1)
    np.testing.assert_allclose([warm(0), warm(5), warm(10), warm(60), warm(110), warm(500)],
                               [0.0, 0.5, 1.0, 0.9 * 0.5 + 0.1, 0.1, 0.1])


def test_schedules_trace_under_jit():
    for sched in (optim.exponential_decay(1.0, 3, 0.5, staircase=True),
                  optim.cosine_decay_schedule(1.0, 7),
                  optim.piecewise_constant_schedule(1.0, {2: 0.5}),
                  optim.warmup_cosine_decay_schedule(0.0, 1.0, 2, 9)):
        jitted = fungrad.jit(sched)
        for t in range(12):
            np.testing.assert_allclose(jitted(np.int32(t)), sched(t), rtol=1e-14)


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

def test_mismatched_updates_and_state_name_the_path_and_optimizer():
    opt = optim.adam(0.1)
    state = opt.init({"w": np.zeros(2), "b": np.zeros(1)})
    with pytest.raises(ValueError, match=r"optim\.adam") as info:
        opt.update({"w": np.zeros(2), "bias": np.zeros(1)}, state)
    message = str(info.value)
    assert "['bias']" in message and "['b']" in message and "state.mu" in message


def test_mismatched_params_name_the_path():
    opt = optim.adamw(0.1)
    params = {"w": np.zeros(2), "b": np.zeros(1)}
    state = opt.init(params)
    with pytest.raises(ValueError, match=r"(?s)optim\.adamw.*`params`") as info:
        opt.update(params, state, {"w": np.zeros(2), "nested": {"b": np.zeros(1)}})
    assert "['nested']['b']" in str(info.value)


def test_mismatched_leaf_shape_names_the_path():
    opt = optim.sgd(0.1, momentum=0.9)
    state = opt.init({"w": np.zeros(2)})
    with pytest.raises(ValueError, match=r"(?s)optim\.sgd.*\['w'\].*shape"):
        opt.update({"w": np.zeros(3)}, state)


def test_apply_updates_mismatch():
    with pytest.raises(ValueError, match=r"(?s)apply_updates.*only in `updates`: \['c'\]"):
        optim.apply_updates({"a": np.zeros(2)}, {"a": np.zeros(2), "c": np.zeros(2)})


def test_other_bad_input():
    with pytest.raises(ValueError, match="needs `params`"):
        opt = optim.adamw(0.1)
        opt.update({"a": np.ones(1)}, opt.init({"a": np.ones(1)}))
    with pytest.raises(ValueError, match="state tuple of 2 entries"):
        optim.adam(0.1).update({"a": np.ones(1)}, ())
    with pytest.raises(TypeError, match="learning_rate"):
        optim.sgd("0.1")
    with pytest.raises(TypeError, match="GradientTransformation"):
        optim.chain(optim.scale(1.0), 0.5)
    with pytest.raises(ValueError, match="decay_steps"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="max_norm"):
        optim.clip_by_global_norm(0.0)
    with pytest.raises(ValueError, match="b1"):
        optim.adam(0.1, b1=1.5)


# ----------------------------------------------------------------------------
# Seed example 6: mass–spring parameter fit with Adam
# ----------------------------------------------------------------------------

def _spring_trajectory(k, m=1.0, dt=0.01, steps=200):
    """Explicit Euler for x'' = -(k/m) x from x=1, v=0."""
    x, v = fnp.asarray(1.0), fnp.asarray(0.0)
    xs = []
    for _ in range(steps):
        x, v = x + dt * v, v - dt * (k / m) * x
        xs.append(x)
    return fnp.stack(xs)


def _spring_trajectory_scan(k, m=1.0, dt=0.01, steps=200):
    """The same simulation as one lax.scan primitive instead of 200 unrolled steps."""
    def euler(state, _):
        x, v = state
        x, v = x + dt * v, v - dt * (k / m) * x
        return (x, v), x
    return fungrad.lax.scan(euler, (fnp.asarray(1.0), fnp.asarray(0.0)), None, length=steps)[1]


@pytest.mark.parametrize("simulate", [_spring_trajectory, _spring_trajectory_scan])
def test_seed6_mass_spring_fit_recovers_k(simulate):
    observed = simulate(4.0)
    np.testing.assert_allclose(observed, _spring_trajectory(4.0), rtol=1e-14)
    loss = lambda k: fnp.mean((simulate(k) - observed) ** 2)
    prims = [e.primitive.name for e in fungrad.make_jaxpr(loss)(1.0).jaxpr.eqns]
    assert prims.count("scan") == (simulate is _spring_trajectory_scan)
    loss_and_grad = fungrad.jit(fungrad.value_and_grad(loss))
    opt = optim.adam(0.1)
    k = np.asarray(1.0)
    state = opt.init(k)
    for _ in range(250):
        _, g = loss_and_grad(k)
        updates, state = opt.update(g, state, k)
        k = optim.apply_updates(k, updates)
    assert abs(k - 4.0) < 1e-2
