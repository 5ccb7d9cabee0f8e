"""fungrad.ode.odeint: values against closed forms, adjoint gradients against
closed forms and forward mode, and every transform."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, jvp, vmap
from fungrad.ode import odeint

TS = np.linspace(0.0, 2.0, 5)
K = 0.7


def _decay(y, t, k):
    return -k * y


def _decay_loss(y0, k, ts=TS):
    return fnp.sum(odeint(_decay, y0, ts, k) ** 2)


def _decay_loss_exact(y0, k, ts=TS):
    return fnp.sum((y0 * fnp.exp(-k * (ts - ts[0]))) ** 2)


def test_values_match_closed_forms():
    np.testing.assert_allclose(odeint(_decay, 1.5, TS, K), 1.5 * np.exp(-K * TS), rtol=1e-7)
    # a pytree state, a non-autonomous field, a closed-over parameter
    w = 2.0
    x, v = odeint(lambda s, t: (s[1], -w ** 2 * s[0]), (1.0, 0.0), TS)
    np.testing.assert_allclose(x, np.cos(w * TS), atol=1e-7)
    np.testing.assert_allclose(v, -w * np.sin(w * TS), atol=1e-7)
    y = odeint(lambda y, t: fnp.cos(t) * fnp.ones(3), np.zeros(3), TS)
    np.testing.assert_allclose(y, np.sin(TS)[:, None] * np.ones(3), atol=1e-7)
    # tighter tolerances give more digits
    tight = odeint(_decay, 1.5, TS, K, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tight, 1.5 * np.exp(-K * TS), rtol=1e-11)


def test_adjoint_gradients_match_closed_forms():
    got = grad(_decay_loss, (0, 1))(1.5, K)
    want = grad(_decay_loss_exact, (0, 1))(1.5, K)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # w.r.t. the output times (the first one shifts the whole trajectory)
    np.testing.assert_allclose(grad(lambda ts: _decay_loss(1.5, K, ts))(TS),
                               grad(lambda ts: _decay_loss_exact(1.5, K, ts))(TS),
                               rtol=1e-6, atol=1e-9)
    # w.r.t. a value the field closes over
    g = grad(lambda w: fnp.sum(odeint(lambda s, t: (s[1], -w ** 2 * s[0]),
                                      (1.0, 0.0), TS)[0]))(2.0)
    np.testing.assert_allclose(g, grad(lambda w: fnp.sum(fnp.cos(w * TS)))(2.0), rtol=1e-6)


def test_transforms_jit_vmap_jvp_and_second_order():
    np.testing.assert_allclose(jit(lambda y0: odeint(_decay, y0, TS, K))(1.5),
                               odeint(_decay, 1.5, TS, K), rtol=1e-14)
    np.testing.assert_allclose(jit(grad(_decay_loss, (0, 1)))(1.5, K),
                               grad(_decay_loss, (0, 1))(1.5, K), rtol=1e-12)
    y0s = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(vmap(lambda y0: odeint(_decay, y0, TS, K))(y0s),
                               [odeint(_decay, y0, TS, K) for y0 in y0s], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(_decay_loss), (0, None))(y0s, K),
                               [grad(_decay_loss)(y0, K) for y0 in y0s], rtol=1e-12)
    np.testing.assert_allclose(jvp(lambda k: odeint(_decay, 1.5, TS, k), (K,), (1.0,))[1],
                               -TS * 1.5 * np.exp(-K * TS), rtol=1e-6, atol=1e-9)
    ts = np.linspace(0.0, 1.0, 3)
    second = grad(grad(lambda k: fnp.sum(odeint(_decay, 1.5, ts, k))))(K)
    np.testing.assert_allclose(second, np.sum(1.5 * ts ** 2 * np.exp(-K * ts)), rtol=1e-6)


def test_mass_spring_fit_through_odeint():
    """Seed example 6 with the exact ODE instead of Euler steps."""
    import fungrad.optim as optim
    ts = np.linspace(0.0, 2.0, 21)
    spring = lambda s, t, k: (s[1], -k * s[0])
    observed = odeint(spring, (1.0, 0.0), ts, 4.0)[0]
    step = jit(fungrad.value_and_grad(
        lambda k: fnp.mean((odeint(spring, (1.0, 0.0), ts, k)[0] - observed) ** 2)))
    opt, k = optim.adam(0.1), np.asarray(3.0)
    state = opt.init(k)
    for _ in range(100):
        _, g = step(k)
        updates, state = opt.update(g, state, k)
        k = optim.apply_updates(k, updates)
    assert abs(k - 4.0) < 1e-2


def test_bad_input():
    with pytest.raises(ValueError, match="increasing"):
        odeint(_decay, 1.0, np.array([0.0, 2.0, 1.0]), K)
    with pytest.raises(ValueError, match="1-d array"):
        odeint(_decay, 1.0, 0.5, K)
    with pytest.raises(TypeError, match="callable"):
        odeint(3, 1.0, TS)
    with pytest.raises(TypeError, match="structure and shapes of y0"):
        odeint(lambda y, t: fnp.ones(3), np.zeros(2), TS)
    with pytest.raises(TypeError, match="float arrays"):
        odeint(lambda y, t, n: -y * n, 1.0, TS, 2)
