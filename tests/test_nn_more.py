"""fungrad.nn's identity, tanh, log1mexp, logmeanexp, scaled_matmul and
scaled_dot_general: values at the edges, JAX's derivative rules, dtypes and
bad input. (Every transform of each is also checked by tests/cases/nn_more.py.)"""
import math

import mpmath
import numpy as np
import pytest

import fungrad
import fungrad.nn as nn
import fungrad.numpy as fnp


def test_log1mexp_is_accurate_at_both_ends():
    x = np.array([1e-300, 1e-12, 1e-5, 0.3, math.log(2), 0.7, 5.0, 40.0, 700.0])
    with mpmath.workdps(400):     # 1 - exp(-x) keeps its digits from 1e-300 to 1e-304
        want = [float(mpmath.log(1 - mpmath.exp(-mpmath.mpf(v)))) for v in x]
    np.testing.assert_allclose(nn.log1mexp(x), want, rtol=2e-16)
    assert np.isnan(nn.log1mexp(-1.0)) and nn.log1mexp(np.inf) == 0.0
    assert nn.log1mexp(np.float32(0.5)).dtype == np.float32


def test_log1mexp_derivative_is_jax_rule_to_second_order():
    x = np.array([1e-6, 0.2, 0.69, 3.0, 30.0])
    grad = fungrad.vmap(fungrad.grad(nn.log1mexp))
    np.testing.assert_allclose(grad(x), 1 / np.expm1(x), rtol=1e-14)
    second = fungrad.vmap(fungrad.grad(fungrad.grad(nn.log1mexp)))
    np.testing.assert_allclose(second(x), -np.exp(x) / np.expm1(x) ** 2, rtol=1e-12)
    # at 0 the derivative is +inf (no nan from the unused branch)
    assert fungrad.grad(nn.log1mexp)(0.0) == np.inf


def test_logmeanexp_is_stable_and_counts_the_mask():
    big = np.array([1000.0, 1000.0 + math.log(3.0)])
    np.testing.assert_allclose(nn.logmeanexp(big), 1000.0 + math.log(2.0), rtol=1e-15)
    x = np.arange(6.0).reshape(2, 3)
    where = np.array([[True, False, True], [False, False, True]])
    got = nn.logmeanexp(x, axis=1, where=where)
    np.testing.assert_allclose(got, [math.log((1 + math.e ** 2) / 2), 5.0], rtol=1e-14)
    assert nn.logmeanexp(x, axis=(0, 1), keepdims=True).shape == (1, 1)
    np.testing.assert_allclose(fungrad.jit(nn.logmeanexp, static_argnums=1)(x, 0),
                               np.log(np.exp(x).mean(0)), rtol=1e-14)
    # the gradient is the softmax over the averaged entries
    g = fungrad.grad(lambda v: nn.logmeanexp(v, where=where[0]))(x[0])
    np.testing.assert_allclose(g, [1 / (1 + math.e ** 2), 0, math.e ** 2 / (1 + math.e ** 2)],
                               rtol=1e-14)


def test_identity_and_tanh():
    assert nn.identity([1, 2]).dtype == np.int64
    np.testing.assert_array_equal(nn.identity(np.arange(3.0)), np.arange(3.0))
    assert nn.tanh is fnp.tanh
    np.testing.assert_allclose(fungrad.grad(nn.tanh)(0.5), 1 - math.tanh(0.5) ** 2, rtol=1e-15)


def test_scaled_matmul_follows_jax_example_and_dtype():
    a = np.array([1.0, 2.0, 3.0]).reshape(1, 1, 3)
    b = np.array([4.0, 5.0, 6.0]).reshape(1, 1, 3)
    scales = np.array([0.5]).reshape(1, 1, 1)
    out = nn.scaled_matmul(a, b, scales, scales)
    assert out.dtype == np.float32 and out.shape == (1, 1, 1) and float(out[0, 0, 0]) == 8.0
    # one scale per block of K // K_scales entries of the contracting axis
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8))
    sa, sb = rng.uniform(1, 2, (2, 3, 4)), rng.uniform(1, 2, (2, 5, 4))
    want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 2, -1), b * np.repeat(sb, 2, -1))
    np.testing.assert_allclose(nn.scaled_matmul(a, b, sa, sb, np.float64), want, rtol=1e-13)


@pytest.mark.parametrize("shapes, match", [
    (((2, 3), (2, 4, 3), (2, 2, 1), (2, 4, 1)), "3-dimensional"),
    (((2, 2, 3), (2, 4, 5), (2, 2, 1), (2, 4, 1)), "contracting K"),
    (((2, 2, 4), (2, 3, 4), (2, 2, 2), (2, 3, 1)), "scales must have the same"),
    (((2, 2, 4), (2, 3, 4), (2, 1, 2), (2, 3, 2)), "non-contracting"),
    (((2, 2, 4), (2, 3, 4), (2, 2, 3), (2, 3, 3)), "multiple"),
])
def test_scaled_matmul_shape_errors(shapes, match):
    with pytest.raises(ValueError, match=match):
        nn.scaled_matmul(*[np.ones(s) for s in shapes])


def test_scaled_dot_general_without_configs_is_dot_general():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    out = nn.scaled_dot_general(a, b, (((1,), (0,)), ((), ())))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, (a @ b).astype(np.float32), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="float8"):
        nn.scaled_dot_general(a, b, (((1,), (0,)), ((), ())), configs=[object()] * 3)
