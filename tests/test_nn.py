"""fungrad.nn (activations, softmax, one_hot, standardize, initializers) and
fungrad.scipy.special: values against NumPy / closed forms, JAX's derivatives
at kinks, numerical stability, check_grads, vmap and jit."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.nn as nn
import fungrad.nn.initializers as init
import fungrad.scipy.special as special
from fungrad.test_util import check_grads

# points away from every kink (0, ±1, 6, ±3) of the piecewise activations
X = np.array([-7.3, -2.5, -0.7, -0.2, 0.3, 0.8, 2.1, 4.5, 6.4])
EULER_GAMMA = 0.57721566490153286
EPS = np.finfo(np.float64).eps


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_ndtr(x):
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in np.ravel(x)]).reshape(np.shape(x))


# ----------------------------------------------------------------------------
# Values against closed forms
# ----------------------------------------------------------------------------

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

ACTIVATIONS = {  # name: (fungrad function, NumPy reference)
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "leaky_relu_0.2": (lambda x: nn.leaky_relu(x, negative_slope=0.2),
                       lambda x: np.where(x >= 0, x, 0.2 * x)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "elu_alpha": (lambda x: nn.elu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "celu": (lambda x: nn.celu(x, alpha=2.0),
             lambda x: np.maximum(x, 0) + 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
    "selu": (nn.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                             * (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: x * _np_ndtr(x)),
    "silu": (nn.silu, lambda x: x * _np_sigmoid(x)),
    "swish": (nn.swish, lambda x: x * _np_sigmoid(x)),
    "sigmoid": (nn.sigmoid, _np_sigmoid),
    "log_sigmoid": (nn.log_sigmoid, lambda x: np.log(_np_sigmoid(x))),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(x))),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "mish": (nn.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values(name):
    f, ref = ACTIVATIONS[name]
    np.testing.assert_allclose(f(X), ref(X), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_grads_order2(name):
    f, _ = ACTIVATIONS[name]
    check_grads(f, (X,), order=2)


@pytest.mark.parametrize("f", [f for f, _ in ACTIVATIONS.values()] + [
    nn.softmax, nn.log_softmax, nn.standardize, special.logsumexp, special.entr,
    special.log_ndtr, special.erfinv, lambda x: special.xlogy(x, x + 4)])
def test_float32_stays_float32(f):
    assert f(np.linspace(-0.9, 0.9, 6).astype(np.float32)).dtype == np.float32


def test_hard_swish_is_hard_silu():
    assert nn.hard_swish is nn.hard_silu and nn.swish is nn.silu


def test_relu_keeps_integer_dtype():
    out = nn.relu(np.array([-2, 0, 3]))
    assert out.dtype == np.int64 and list(out) == [0, 0, 3]


def test_glu():
    x = np.arange(8.0).reshape(2, 4) / 3
    want = x[:, :2] * _np_sigmoid(x[:, 2:])
    np.testing.assert_allclose(nn.glu(x), want, rtol=1e-14)
    np.testing.assert_allclose(nn.glu(x.T, axis=0), want.T, rtol=1e-14)
    check_grads(nn.glu, (x,), order=2)
    with pytest.raises(ValueError, match="odd size"):
        nn.glu(np.ones(3))


# ----------------------------------------------------------------------------
# Derivatives at kinks: JAX's values
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("f, x, want", [
    (nn.relu, 0.0, 0.0), (nn.relu, 1.0, 1.0), (nn.relu, -1.0, 0.0),
    (nn.relu6, 0.0, 0.0), (nn.relu6, 6.0, 0.0), (nn.relu6, 3.0, 1.0),
    (nn.leaky_relu, 0.0, 1.0), (nn.leaky_relu, -1.0, 0.01),
    (nn.hard_tanh, 1.0, 1.0), (nn.hard_tanh, -1.0, 1.0), (nn.hard_tanh, 1.5, 0.0), (nn.hard_tanh, 0.5, 1.0),
    (nn.hard_sigmoid, -3.0, 0.0), (nn.hard_sigmoid, 3.0, 0.0),
    (nn.elu, 0.0, 1.0), (nn.celu, 0.0, 1.0),
])
def test_derivative_at_kinks(f, x, want):
    assert fungrad.grad(f)(x) == want


# ----------------------------------------------------------------------------
# Softmax, log_softmax, logsumexp
# ----------------------------------------------------------------------------

def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


LOGITS = np.array([[0.3, -1.2, 2.0, 0.7], [1.5, 0.1, -0.4, -2.2], [0.0, 0.9, 0.8, -0.6]])


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_values_and_grads(axis):
    np.testing.assert_allclose(nn.softmax(LOGITS, axis=axis), _np_softmax(LOGITS, axis), rtol=1e-14)
    np.testing.assert_allclose(nn.log_softmax(LOGITS, axis=axis),
                               np.log(_np_softmax(LOGITS, axis)), rtol=1e-13)
    check_grads(lambda x: nn.softmax(x, axis=axis), (LOGITS,), order=2)
    check_grads(lambda x: nn.log_softmax(x, axis=axis), (LOGITS,), order=2)


def test_softmax_with_where_masks_entries():
    mask = np.array([[True, False, True, True]] * 3)
    out = nn.softmax(LOGITS, where=mask)
    want = np.zeros_like(LOGITS)
    want[:, mask[0]] = _np_softmax(LOGITS[:, mask[0]])
    np.testing.assert_allclose(out, want, rtol=1e-14)
    log_out = nn.log_softmax(LOGITS, where=mask)
    assert np.all(np.isneginf(log_out[:, 1]))
    np.testing.assert_allclose(log_out[:, mask[0]], np.log(want[:, mask[0]]), rtol=1e-13)
    g = fungrad.grad(lambda x: nn.softmax(x, where=mask)[:, 0].sum())(LOGITS)
    assert np.all(np.isfinite(g)) and np.all(g[:, 1] == 0)


@pytest.mark.parametrize("f", [nn.softmax, nn.log_softmax, special.logsumexp,
                               nn.log_sigmoid, nn.softplus, nn.sigmoid, nn.silu, nn.mish])
def test_stable_at_large_logits(f):
    x = np.array([1000.0, -1000.0, 3.0, -999.0])
    out = np.asarray(f(x))
    assert np.all(np.isfinite(out))
    g = fungrad.grad(lambda v: fungrad.numpy.sum(f(v) * np.arange(1.0, 5.0)))(x)
    assert np.all(np.isfinite(g))


def test_large_logit_values():
    x = np.array([1000.0, -1000.0])
    np.testing.assert_allclose(nn.softmax(x), [1.0, 0.0])
    np.testing.assert_allclose(nn.log_softmax(x), [0.0, -2000.0])
    assert special.logsumexp(x) == 1000.0
    np.testing.assert_allclose(nn.log_sigmoid(x), [0.0, -1000.0])
    np.testing.assert_allclose(nn.softplus(x), [1000.0, 0.0])


def test_logsumexp_values():
    a = LOGITS
    assert nn.logsumexp is special.logsumexp
    np.testing.assert_allclose(special.logsumexp(a), np.log(np.exp(a).sum()), rtol=1e-14)
    np.testing.assert_allclose(special.logsumexp(a, axis=1), np.log(np.exp(a).sum(1)), rtol=1e-14)
    np.testing.assert_allclose(special.logsumexp(a, axis=(0, 1), keepdims=True),
                               np.log(np.exp(a).sum(keepdims=True)), rtol=1e-14)
    assert special.logsumexp(a, axis=0, keepdims=True).shape == (1, 4)
    b = np.array([1.0, 2.0, 0.5, 3.0])
    np.testing.assert_allclose(special.logsumexp(a, axis=1, b=b),
                               np.log((b * np.exp(a)).sum(1)), rtol=1e-14)
    mask = LOGITS > 0
    np.testing.assert_allclose(special.logsumexp(a, axis=1, where=mask),
                               np.log(np.where(mask, np.exp(a), 0).sum(1)), rtol=1e-14)


def test_logsumexp_sign():
    a, b = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    out, sign = special.logsumexp(a, b=b, return_sign=True)
    np.testing.assert_allclose(out, np.log(np.exp(2) - np.exp(1)), rtol=1e-14)
    assert sign == -1.0
    assert np.isnan(special.logsumexp(a, b=b))


def test_logsumexp_minus_inf_entries():
    a = np.array([-np.inf, 0.0, 1.0])
    np.testing.assert_allclose(special.logsumexp(a), np.log(1 + np.e), rtol=1e-14)
    g = fungrad.grad(special.logsumexp)(a)
    np.testing.assert_allclose(g, [0.0, 1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-14)
    with np.errstate(divide="ignore"):     # log(0) is the intended -inf
        assert special.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf


def test_logsumexp_grads():
    b = np.array([1.0, 2.0, 0.5, 3.0])
    check_grads(lambda a: special.logsumexp(a, axis=1), (LOGITS,), order=2)
    check_grads(lambda a, b: special.logsumexp(a, axis=0, b=b), (LOGITS.T, b[:, None]), order=2)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                  elements=st.floats(-50, 50)))
def test_softmax_properties(x):
    s = np.asarray(nn.softmax(x))
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(nn.log_softmax(x), x - special.logsumexp(x, axis=-1, keepdims=True),
                               rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------
# standardize, one_hot
# ----------------------------------------------------------------------------

def test_standardize():
    x = LOGITS
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(nn.standardize(x), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10)
    np.testing.assert_allclose(nn.standardize(x, axis=0, mean=0.5, variance=2.0, epsilon=0.0),
                               (x - 0.5) / np.sqrt(2.0), rtol=1e-14)
    check_grads(nn.standardize, (x,), order=2)


def test_one_hot_values():
    out = nn.one_hot(np.array([0, 2, -1, 3]), 3)
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert out.dtype == np.float64
    out = nn.one_hot(np.array([[0, 1], [2, 2]]), 3, axis=0, dtype=np.int32)
    assert out.shape == (3, 2, 2) and out.dtype == np.int32
    np.testing.assert_array_equal(out, np.moveaxis(np.eye(3, dtype=np.int32)[[[0, 1], [2, 2]]], -1, 0))
    np.testing.assert_array_equal(nn.one_hot(1, 2), [0.0, 1.0])


def test_one_hot_errors():
    with pytest.raises(TypeError, match="integer class indices"):
        nn.one_hot(np.array([0.0, 1.0]), 3)
    with pytest.raises(TypeError, match="num_classes"):
        nn.one_hot(np.array([0, 1]), 3.0)
    with pytest.raises(ValueError, match="num_classes"):
        nn.one_hot(np.array([0, 1]), -2)
    with pytest.raises(ValueError, match="axis"):
        nn.one_hot(np.array([0, 1]), 3, axis=2)


# ----------------------------------------------------------------------------
# vmap and jit agree with eager
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("f", [nn.relu, nn.gelu, nn.softplus, nn.elu, nn.log_softmax,
                               nn.softmax, nn.standardize, special.logsumexp,
                               lambda x: special.xlogy(x, 2.0), special.log_ndtr])
def test_vmap_and_jit_equal_eager(f):
    x = np.concatenate([LOGITS, np.zeros((1, 4))])
    eager = np.stack([np.asarray(f(row)) for row in x])
    np.testing.assert_allclose(fungrad.vmap(f)(x), eager, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(fungrad.jit(f)(x[0]), eager[0], rtol=1e-14, atol=1e-300)
    g = fungrad.grad(lambda v: fungrad.numpy.sum(f(v) * v))
    np.testing.assert_allclose(fungrad.jit(g)(x[0]), g(x[0]), rtol=1e-13)


def test_one_hot_under_jit_and_vmap():
    labels = np.array([[0, 2], [1, 5]])
    eager = nn.one_hot(labels, 3)
    np.testing.assert_array_equal(fungrad.jit(lambda x: nn.one_hot(x, 3))(labels), eager)
    np.testing.assert_array_equal(fungrad.vmap(lambda x: nn.one_hot(x, 3))(labels), eager)


# ----------------------------------------------------------------------------
# scipy.special
# ----------------------------------------------------------------------------

def test_special_values():
    x = np.array([-2.3, -0.4, 0.0, 0.9, 3.1])
    np.testing.assert_allclose(special.erf(x), [math.erf(v) for v in x], rtol=1e-14)
    np.testing.assert_allclose(special.erfc(x), [math.erfc(v) for v in x], rtol=1e-14)
    np.testing.assert_allclose(special.erfinv(special.erf(x / 2)), x / 2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(special.expit(x), _np_sigmoid(x), rtol=1e-14)
    np.testing.assert_allclose(special.logit(special.expit(x)), x, rtol=1e-12, atol=1e-15)
    pos = np.array([0.3, 1.0, 2.5, 7.0])
    np.testing.assert_allclose(special.gammaln(pos), [math.lgamma(v) for v in pos], rtol=1e-13)
    np.testing.assert_allclose(special.digamma(np.array([1.0, 0.5])),
                               [-EULER_GAMMA, -EULER_GAMMA - 2 * math.log(2)], rtol=1e-13)
    # recurrence ψ(x + 1) = ψ(x) + 1/x
    np.testing.assert_allclose(special.digamma(pos + 1), special.digamma(pos) + 1 / pos, rtol=1e-13)
    np.testing.assert_allclose(special.ndtr(x), _np_ndtr(x), rtol=1e-14)
    assert special.erf(1).dtype == np.float64     # integers promote to float


def test_log_ndtr_both_tails():
    x = np.array([-35.0, -25.0, -20.000001, -19.999999, -3.0, 0.0, 2.0, 5.0])
    want = [math.log(0.5 * math.erfc(-v / math.sqrt(2))) for v in x[:6]]
    want += [math.log1p(-0.5 * math.erfc(v / math.sqrt(2))) for v in x[6:]]
    np.testing.assert_allclose(special.log_ndtr(x), want, rtol=1e-13)
    # far left tail: leading term -x²/2 - log(-x) - log√(2π)
    np.testing.assert_allclose(special.log_ndtr(-1e5), -5e9 - math.log(1e5)
                               - 0.5 * math.log(2 * math.pi), rtol=1e-15)
    g = fungrad.grad(special.log_ndtr)
    np.testing.assert_allclose(g(-30.0), 30.0, rtol=1e-2)   # ≈ -x for x << 0
    assert np.isfinite(g(-1000.0)) and np.isfinite(g(40.0))


def test_xlogy_and_friends_values():
    x, y = np.array([0.0, 0.0, 2.0, 1.5]), np.array([0.0, 3.0, 0.5, 2.0])
    np.testing.assert_allclose(special.xlogy(x, y), [0.0, 0.0, 2 * np.log(0.5), 1.5 * np.log(2)])
    np.testing.assert_allclose(special.xlog1py(x, y - 1), [0.0, 0.0, 2 * np.log(0.5), 1.5 * np.log(2)])
    np.testing.assert_allclose(special.entr(np.array([-1.0, 0.0, 0.5, 2.0])),
                               [-np.inf, 0.0, -0.5 * np.log(0.5), -2 * np.log(2)])


def test_xlogy_gradient_convention():
    # JAX: d/dx xlogy(x, y) = log(y) and d/dy = x / y, also at x == 0
    # (log values within a few ulps: NumPy's log and math.log may round differently)
    dx, dy = fungrad.grad(special.xlogy, argnums=(0, 1))(0.0, 3.0)
    np.testing.assert_allclose(dx, math.log(3.0), rtol=4 * EPS, atol=0)
    assert dy == 0.0
    dx, dy = fungrad.grad(special.xlog1py, argnums=(0, 1))(0.0, 2.0)
    np.testing.assert_allclose(dx, math.log1p(2.0), rtol=4 * EPS, atol=0)
    assert dy == 0.0
    # at (0, 0) the value is 0 and the derivatives JAX's formulas: log(0) and 0 / 0
    with np.errstate(divide="ignore", invalid="ignore"):
        dx, dy = fungrad.grad(special.xlogy, argnums=(0, 1))(0.0, 0.0)
    assert special.xlogy(0.0, 0.0) == 0.0 and dx == -np.inf and np.isnan(dy)
    # NaN in y propagates even where x == 0 (SciPy's rule); y = inf there gives 0
    assert np.isnan(special.xlogy(0.0, np.nan)) and special.xlogy(0.0, np.inf) == 0.0
    assert np.isnan(special.entr(np.nan)) and fungrad.grad(special.entr)(0.0) == np.inf
    # the mixed second derivative d²/dxdy = 1/y holds at x == 0 too
    assert fungrad.grad(fungrad.grad(special.xlogy), argnums=1)(0.0, 4.0) == 0.25


SPECIAL_GRAD_CASES = {
    "erf": (special.erf, (np.array([-1.3, 0.2, 0.9]),)),
    "erfc": (special.erfc, (np.array([-1.3, 0.2, 0.9]),)),
    "erfinv": (special.erfinv, (np.array([-0.6, 0.1, 0.7]),)),
    "expit": (special.expit, (np.array([-2.0, 0.3, 4.0]),)),
    "logit": (special.logit, (np.array([0.2, 0.5, 0.9]),)),
    "gammaln": (special.gammaln, (np.array([0.4, 1.7, 5.2]),)),
    "digamma": (special.digamma, (np.array([0.4, 1.7, 5.2]),)),
    "ndtr": (special.ndtr, (np.array([-2.0, 0.3, 1.5]),)),
    "log_ndtr": (special.log_ndtr, (np.array([-25.0, -2.0, 0.3, 3.0]),)),
    "xlogy": (special.xlogy, (np.array([0.5, 1.2, 2.0]), np.array([0.3, 2.0, 4.0]))),
    "xlog1py": (special.xlog1py, (np.array([0.5, 1.2, 2.0]), np.array([-0.3, 2.0, 4.0]))),
    "entr": (special.entr, (np.array([0.2, 1.0, 3.0]),)),
    "softmax": (special.softmax, (LOGITS,)),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_GRAD_CASES))
def test_special_grads_order2(name):
    f, args = SPECIAL_GRAD_CASES[name]
    check_grads(f, args, order=2)


def test_scipy_softmax_default_axis_is_all():
    np.testing.assert_allclose(special.softmax(LOGITS), np.exp(LOGITS) / np.exp(LOGITS).sum(),
                               rtol=1e-14)


# ----------------------------------------------------------------------------
# Initializers (integer seeds; see fungrad/nn/initializers.py for key kinds)
# ----------------------------------------------------------------------------

def test_constant_initializers():
    np.testing.assert_array_equal(init.zeros(0, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.ones(0, (4,), np.float32), np.ones(4, np.float32))
    assert init.ones(0, (4,), np.float32).dtype == np.float32
    np.testing.assert_array_equal(init.constant(-1.5)(0, (2, 2)), np.full((2, 2), -1.5))


@pytest.mark.parametrize("make, mean, std", [
    (lambda: init.normal(0.5), 0.0, 0.5),
    (lambda: init.uniform(2.0), 1.0, 2.0 / math.sqrt(12)),
    (lambda: init.truncated_normal(1.0), 0.0, 0.87962566103423978),
])
def test_simple_random_initializers_statistics(make, mean, std):
    w = np.asarray(make()(0, (400, 500)))
    assert w.shape == (400, 500) and w.dtype == np.float64
    assert abs(w.mean() - mean) < 0.01 and abs(w.std() - std) / std < 0.01


def test_truncated_normal_bounds():
    w = np.asarray(init.truncated_normal(1.0, lower=-1.0, upper=0.5)(3, (20000,)))
    assert w.min() >= -1.0 and w.max() <= 0.5
    assert w.min() < -0.99 and w.max() > 0.49


# (name, scale, fan used) for a (fan_in, fan_out) = (300, 500) weight
VARIANCE_SCALING_CASES = [
    ("glorot_uniform", 1.0, 400), ("glorot_normal", 1.0, 400),
    ("xavier_uniform", 1.0, 400), ("xavier_normal", 1.0, 400),
    ("he_uniform", 2.0, 300), ("he_normal", 2.0, 300),
    ("kaiming_uniform", 2.0, 300), ("kaiming_normal", 2.0, 300),
    ("lecun_uniform", 1.0, 300), ("lecun_normal", 1.0, 300),
]


@pytest.mark.parametrize("name, scale, fan", VARIANCE_SCALING_CASES)
def test_named_initializers_statistics(name, scale, fan):
    w = np.asarray(getattr(init, name)()(7, (300, 500)))
    assert w.shape == (300, 500) and w.dtype == np.float64
    want_std = math.sqrt(scale / fan)
    assert abs(w.mean()) < 0.02 * want_std * 10
    assert abs(w.std() - want_std) / want_std < 0.02
    if name.endswith("uniform"):
        assert np.abs(w).max() <= math.sqrt(3) * want_std
    else:   # truncated at 2 standard deviations of the untruncated normal
        assert np.abs(w).max() <= 2 * want_std / 0.87962566103423978 + 1e-12


def test_variance_scaling_fans_of_conv_kernel():
    # (h, w, in, out): fan_in = 3·3·16, fan_out = 3·3·32
    w = np.asarray(init.variance_scaling(1.0, "fan_out", "normal")(1, (3, 3, 16, 32)))
    assert abs(w.std() - math.sqrt(1 / (9 * 32))) / math.sqrt(1 / (9 * 32)) < 0.05
    w = np.asarray(init.variance_scaling(2.0, "fan_geo_avg", "uniform", in_axis=0, out_axis=1)(
        2, (200, 800)))
    assert abs(w.std() - math.sqrt(2 / 400)) / math.sqrt(2 / 400) < 0.02


def test_initializers_deterministic_and_dtype():
    glorot = init.glorot_normal()
    a, b, c = glorot(5, (30, 40)), glorot(5, (30, 40)), glorot(6, (30, 40))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert init.he_uniform(dtype=np.float32)(0, (3, 4)).dtype == np.float32
    assert init.normal()(0, (3,), np.float32).dtype == np.float32
    w = init.lecun_uniform()(np.random.default_rng(0), (5, 6))    # Generator keys too
    assert w.shape == (5, 6)


def test_initializer_errors():
    with pytest.raises(ValueError, match="mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="at least 2"):
        init.glorot_uniform()(0, (5,))
    with pytest.raises(TypeError, match="dtype"):
        init.normal()(0, (2, 2), np.int32)


def test_initializers_accept_fungrad_random_keys():
    import fungrad.random as random
    key = random.PRNGKey(0)
    glorot = init.glorot_normal()
    w = np.asarray(glorot(key, (300, 500)))
    np.testing.assert_array_equal(w, glorot(key, (300, 500)))
    assert abs(w.std() - math.sqrt(1 / 400)) / math.sqrt(1 / 400) < 0.02
    u = np.asarray(init.uniform(2.0)(key, (1000,), np.float32))
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 2.0


# ----------------------------------------------------------------------------
# orthogonal and delta_orthogonal initializers
# ----------------------------------------------------------------------------

def _as_matrix(w, column_axis):
    """The matrix view orthogonal() uses: columns along column_axis, rows the rest."""
    w = np.moveaxis(np.asarray(w, np.float64), column_axis, -1)
    return w.reshape(-1, w.shape[-1])


@pytest.mark.parametrize("shape, column_axis", [
    ((6, 4), -1), ((4, 6), -1), ((5, 5), -1), ((3, 4, 8), -1), ((2, 3, 4), 0),
    ((3, 3, 2, 16), -1), ((7, 2), 0)])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_orthogonal_gram_matrix_is_scaled_identity(shape, column_axis, scale):
    w = init.orthogonal(scale, column_axis)(np.int64(3), shape)
    assert w.shape == shape and w.dtype == np.float64
    m = _as_matrix(w, column_axis)
    # tall: orthonormal columns (QᵀQ = scale² I); wide: orthonormal rows (QQᵀ)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, scale**2 * np.eye(len(gram)), atol=1e-12)


def test_orthogonal_deterministic_dtype_and_fungrad_keys():
    import fungrad.random as random
    ortho = init.orthogonal()
    np.testing.assert_array_equal(ortho(5, (4, 3)), ortho(5, (4, 3)))
    assert not np.array_equal(ortho(5, (4, 3)), ortho(6, (4, 3)))
    w32 = init.orthogonal(dtype=np.float32)(0, (4, 4))
    assert w32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(w32).T @ np.asarray(w32), np.eye(4), atol=1e-6)
    key = random.PRNGKey(1)
    w = ortho(key, (5, 3))
    np.testing.assert_array_equal(w, ortho(key, (5, 3)))
    np.testing.assert_allclose(np.asarray(w).T @ np.asarray(w), np.eye(3), atol=1e-12)
    # jittable with a fungrad key (shape static)
    np.testing.assert_allclose(fungrad.jit(lambda k: ortho(k, (5, 3)))(key), w, atol=1e-12)


def test_orthogonal_is_haar_distributed_first_entry():
    # For a Haar-random n x n orthogonal matrix, E[Q_00^2] = 1/n and Q_00 is
    # symmetric about 0; without the sign fix from R's diagonal, Householder QR
    # (LAPACK) gives Q_00 = -|A_00| / ||A[:, 0]|| <= 0 every time.
    entries = np.array([np.asarray(init.orthogonal()(seed, (4, 4)))[0, 0] for seed in range(400)])
    assert abs((entries**2).mean() - 0.25) < 0.05
    assert abs(entries.mean()) < 0.1


def test_delta_orthogonal_kernel():
    for shape in [(3, 4, 6), (3, 3, 4, 4), (3, 5, 3, 2, 5)]:
        w = np.asarray(init.delta_orthogonal(2.0)(0, shape))
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        middle = w[centre]
        np.testing.assert_allclose(middle @ middle.T, 4.0 * np.eye(shape[-2]), atol=1e-12)
        assert np.abs(w).sum() == pytest.approx(np.abs(middle).sum())


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="at least 2"):
        init.orthogonal()(0, (5,))
    with pytest.raises(ValueError, match="column_axis"):
        init.orthogonal(column_axis=3)(0, (2, 3))
    with pytest.raises(TypeError, match="dtype"):
        init.orthogonal()(0, (2, 2), np.int32)
    with pytest.raises(ValueError, match="3-, 4- or 5-d"):
        init.delta_orthogonal()(0, (3, 3))
    with pytest.raises(ValueError, match="fan_in <= fan_out"):
        init.delta_orthogonal()(0, (3, 5, 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_initializers_with_keys_follow_jaxs_arithmetic(dtype):
    # with a fungrad.random key, an initializer is JAX's formula in `dtype`:
    # the sample of that dtype times a scale of that dtype (so flax's float32
    # parameters are JAX's bits)
    from fungrad import random
    from fungrad.nn import initializers as init
    key, shape = random.PRNGKey(3), (4, 3, 5)
    variance = np.asarray(1.0 / 12, dtype)          # lecun: fan_in = 4 * 3
    expected = random.truncated_normal(key, -2, 2, shape, dtype) * (
        np.sqrt(variance) / np.asarray(0.87962566103423978, dtype))
    got = init.lecun_normal()(key, shape, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(init.normal(0.5)(key, shape, dtype),
                                  random.normal(key, shape, dtype) * np.asarray(0.5, dtype))
    np.testing.assert_array_equal(
        init.glorot_uniform()(key, shape, dtype),
        random.uniform(key, shape, dtype, -1.0, 1.0) * np.sqrt(3 * np.asarray(1.0 / 16, dtype)))  # fan_avg 16


# ----------------------------------------------------------------------------
# NaN and infinities as JAX treats them (values and derivatives checked on
# JAX 0.10.2: its relu/relu6 are custom JVPs around maximum/minimum, and its
# softmax subtracts the plain max, so one +inf entry makes all entries NaN)
# ----------------------------------------------------------------------------

SPECIAL = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, -1.0, 1.0, 6.0])


@pytest.mark.parametrize("name, values, derivatives", [
    ("relu", [np.nan, 0, np.inf, 0, 0, 0, 1, 6], [0, 0, 1, 0, 0, 0, 1, 1]),
    ("relu6", [np.nan, 0, 6, 0, 0, 0, 1, 6], [0, 0, 0, 0, 0, 0, 1, 0]),
    ("hard_sigmoid", [np.nan, 0, 1, 0.5, 0.5, 2 / 6, 4 / 6, 1], [0, 0, 0] + [1 / 6] * 4 + [0]),
])
def test_piecewise_activations_propagate_nan_with_jaxs_derivatives(name, values, derivatives):
    f = getattr(nn, name)
    out = np.asarray(f(SPECIAL))
    np.testing.assert_allclose(out, values, rtol=1e-15, atol=0)
    assert not np.signbit(out[3:5]).any()          # relu(-0.0) is +0.0, as max(-0.0, 0)
    grads = fungrad.vmap(fungrad.grad(f))(SPECIAL)
    np.testing.assert_allclose(grads, derivatives, rtol=1e-15, atol=0)


def test_hard_silu_derivative_is_nan_at_nan():
    assert np.isnan(fungrad.grad(nn.hard_silu)(np.nan))


@pytest.mark.parametrize("f", [nn.softmax, nn.log_softmax, special.softmax])
def test_a_plus_infinity_makes_the_softmax_nan_and_minus_infinity_is_left_out(f):
    assert np.isnan(np.asarray(f(np.array([np.inf, 1.0, 2.0]), axis=-1))).all()
    finite = np.asarray(f(np.array([-np.inf, 1.0]), axis=-1))
    expected = [0.0, 1.0] if f is not nn.log_softmax else [-np.inf, 0.0]
    np.testing.assert_array_equal(finite, expected)
