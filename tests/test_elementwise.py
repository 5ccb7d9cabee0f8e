"""Focused tests for the elementwise primitives and fungrad.numpy's ufuncs.

What the generic runner (tests/test_generic.py) cannot express: JAX's values
at non-differentiable points, higher derivatives against closed forms,
special-function accuracy against known values, error messages on bad input,
NumPy 2 / NEP 50 dtype promotion, and the jit lowerings of the primitives.
"""
from __future__ import annotations

import math

import mpmath                  # test dependency (the "test" extra): reference values
import numpy as np

from fungrad.core import get_aval
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.lax import elementwise
from fungrad.lax.kernels import powers as power_kernels, special as special_kernels
from fungrad.core import primitives
from fungrad.interpreters import codegen

grad = fungrad.grad
EULER_GAMMA = 0.5772156649015329
ZETA3 = 1.2020569031595942


def nth_derivative(f, n):
    for _ in range(n):
        f = grad(f)
    return f


# ----------------------------------------------------------------------------
# JAX's values at non-differentiable points
# ----------------------------------------------------------------------------

class TestKinks:
    def test_abs_derivative_at_zero_is_one(self):
        assert grad(lax.abs)(0.0) == 1.0
        assert grad(fnp.abs)(0.0) == 1.0
        assert grad(fnp.absolute)(-0.0) == 1.0      # -0.0 >= 0, as in JAX
        assert grad(lax.abs)(-2.0) == -1.0

    def test_maximum_with_zero_splits_at_zero_like_jnp_maximum(self):
        # jnp.maximum(x, 0) has derivative 0.5 at 0 (jax.nn.relu uses a custom
        # rule to get 0 there); away from 0 it is the step function
        relu_like = lambda x: fnp.maximum(x, 0.0)
        assert grad(relu_like)(0.0) == 0.5
        assert grad(relu_like)(-1e-9) == 0.0
        assert grad(relu_like)(1e-9) == 1.0

    @pytest.mark.parametrize("op", [lax.max, lax.min, fnp.maximum, fnp.minimum])
    def test_ties_split_the_gradient(self, op):
        gx, gy = grad(op, argnums=(0, 1))(2.0, 2.0)
        assert (gx, gy) == (0.5, 0.5)
        assert grad(lambda x: op(x, x))(2.0) == 1.0

    def test_max_tie_in_arrays_and_reverse_mode(self):
        x = np.array([1.0, 2.0, 3.0])
        y = np.array([1.0, 5.0, 0.0])
        gx = grad(lambda a: lax.reduce_sum(fnp.maximum(a, y), (0,)))(x)
        np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0])
        _, tangent = fungrad.jvp(lambda a: lax.max(a, y), (x,), (np.ones(3),))
        np.testing.assert_array_equal(tangent, [0.5, 0.0, 1.0])

    @given(st.sampled_from(["max", "min"]), st.sampled_from(["float64", "float32", "float16"]),
           st.booleans(), st.booleans(), st.integers(0, 2**31 - 1))
    def test_max_min_derivative_is_jaxs_balanced_rule(self, op, dtype, scalar_y, jitted, seed):
        # JAX: d max(x, y)/dx = 1 where x wins, 0.5 at a tie, 0 where it loses or
        # either is NaN (select(x == z, select(y == z, 0.5, 1), 0) with z = max(x, y)),
        # including ties of infinities and of 0.0 with -0.0
        rng = np.random.default_rng(seed)
        pool = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], dtype)
        x = rng.choice(pool, (4, 5))
        y = pool[rng.integers(len(pool))] if scalar_y else rng.choice(pool, (4, 5))
        fn = lax.max if op == "max" else lax.min
        z = (np.maximum if op == "max" else np.minimum)(x, y)     # NaN-propagating
        want_x = np.where(x == z, np.where(y == z, 0.5, 1.0), 0.0).astype(dtype)
        want_y = np.where(y == z, np.where(x == z, 0.5, 1.0), 0.0).astype(dtype)
        total = lambda a, b: lax.reduce_sum(fn(a, b), tuple(range(np.ndim(fn(a, b)))))
        g = grad(total, argnums=(0, 1))
        g = fungrad.jit(g) if jitted else g
        with np.errstate(invalid="ignore"):            # the sum of inf and -inf
            gx, gy = g(x, y)
        np.testing.assert_array_equal(gx, want_x)
        np.testing.assert_array_equal(gy, np.sum(want_y) if scalar_y else want_y)
        _, tangent = fungrad.jvp(lambda a: fn(a, y), (x,), (np.ones_like(x),))
        np.testing.assert_array_equal(tangent, want_x)

    def test_clip_at_bounds_splits_with_the_bound(self):
        f = lambda x, lo, hi: fnp.clip(x, lo, hi)
        assert grad(f, argnums=(0, 1, 2))(1.0, -1.0, 1.0) == (0.5, 0.0, 0.5)
        assert grad(f, argnums=(0, 1, 2))(-1.0, -1.0, 1.0) == (0.5, 0.5, 0.0)
        assert grad(f, argnums=(0, 1, 2))(0.3, -1.0, 1.0) == (1.0, 0.0, 0.0)
        assert grad(f, argnums=(0, 1, 2))(4.0, -1.0, 1.0) == (0.0, 0.0, 1.0)

    def test_clamp_follows_lax_clamp_rule(self):
        f = lambda lo, x, hi: lax.clamp(lo, x, hi)
        # strictly inside: all to x; at a tie nobody gets the tangent (as JAX)
        assert grad(f, argnums=(0, 1, 2))(-1.0, 0.5, 1.0) == (0.0, 1.0, 0.0)
        assert grad(f, argnums=(0, 1, 2))(-1.0, -1.0, 1.0) == (0.0, 0.0, 0.0)
        assert grad(f, argnums=(0, 1, 2))(-1.0, 1.0, 1.0) == (0.0, 0.0, 0.0)
        assert grad(f, argnums=(0, 1, 2))(-1.0, -3.0, 1.0) == (1.0, 0.0, 0.0)
        assert grad(f, argnums=(0, 1, 2))(-1.0, 3.0, 1.0) == (0.0, 0.0, 1.0)

    @pytest.mark.parametrize("op", [lax.sign, lax.floor, lax.ceil, lax.round, fnp.sign,
                                    fnp.floor, fnp.ceil, fnp.trunc, fnp.rint, fnp.fix,
                                    lambda x: fnp.round(x, 2)])
    @pytest.mark.parametrize("x", [0.0, 1.0, -2.5, 0.7])
    def test_piecewise_constant_ops_have_zero_derivative(self, op, x):
        assert grad(op)(x) == 0.0

    def test_power_at_zero_base_follows_jax(self):
        assert grad(lambda x: lax.pow(x, 2.0))(0.0) == 0.0
        assert grad(lambda x: lax.pow(x, 1.0))(0.0) == 1.0
        assert grad(lambda y: lax.pow(0.0, y))(2.0) == 0.0       # log(0) x^y -> 0
        assert grad(lambda x: lax.pow(x, np.int64(0)))(0.0) == 0.0
        assert grad(lambda x: lax.integer_pow(x, 0))(0.0) == 0.0
        assert grad(lambda x: x ** 2)(0.0) == 0.0
        assert np.isinf(grad(lax.sqrt)(0.0))

    def test_rem_derivatives(self):
        gx, gy = grad(lax.rem, argnums=(0, 1))(7.5, 2.0)
        assert (gx, gy) == (1.0, -3.0)
        gx, gy = grad(lax.rem, argnums=(0, 1))(-7.5, 2.0)
        assert (gx, gy) == (1.0, 3.0)
        gx, gy = grad(fnp.remainder, argnums=(0, 1))(-7.5, 2.0)   # floor, not trunc
        assert (gx, gy) == (1.0, 4.0)

    def test_logaddexp_at_ties_and_infinities(self):
        assert grad(fnp.logaddexp, argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
        h = fungrad.hessian(lambda v: fnp.logaddexp(v[0], v[1]))(np.array([1.0, 1.0]))
        np.testing.assert_allclose(h, [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-14)
        assert grad(fnp.logaddexp, argnums=(0, 1))(-np.inf, 0.0) == (0.0, 1.0)
        assert fnp.logaddexp(-np.inf, -np.inf) == -np.inf
        assert fnp.logaddexp(np.inf, np.inf) == np.inf

    def test_sinc_derivatives_at_zero(self):
        np.testing.assert_allclose(fnp.sinc(0.0), 1.0)
        assert nth_derivative(fnp.sinc, 1)(0.0) == 0.0
        np.testing.assert_allclose(nth_derivative(fnp.sinc, 2)(0.0), -np.pi ** 2 / 3, rtol=1e-12)
        assert abs(nth_derivative(fnp.sinc, 3)(0.0)) < 1e-12
        np.testing.assert_allclose(nth_derivative(fnp.sinc, 4)(0.0), np.pi ** 4 / 5, rtol=1e-12)
        # continuous across the switch between the series and sin(pi x)/(pi x)
        for x in (0.999e-3, 1.001e-3):
            want = (np.pi * x * np.cos(np.pi * x) - np.sin(np.pi * x)) / (np.pi * x ** 2)
            np.testing.assert_allclose(grad(fnp.sinc)(x), want, rtol=1e-9)

    def test_where_does_not_leak_nan_from_the_unselected_branch_value(self):
        f = lambda x: fnp.where(x > 0, x, 0.0)
        assert grad(f)(-1.0) == 0.0 and grad(f)(2.0) == 1.0

    def test_stop_gradient_blocks_all_orders(self):
        f = lambda x: x * lax.stop_gradient(x)
        assert grad(f)(3.0) == 3.0
        assert grad(grad(f))(3.0) == 0.0

    def test_hypot_gradient_and_huge_values(self):
        np.testing.assert_allclose(grad(fnp.hypot, argnums=(0, 1))(3.0, 4.0), (0.6, 0.8),
                                   rtol=1e-15)
        # big * sqrt(2) rounds twice, libm's hypot once: a few ulps apart at most
        np.testing.assert_allclose(fnp.hypot(1e300, 1e300), np.hypot(1e300, 1e300),
                                   rtol=4 * np.finfo(float).eps)
        np.testing.assert_allclose(grad(fnp.hypot)(-1e300, 1e300), -np.sqrt(0.5))


# ----------------------------------------------------------------------------
# Higher derivatives against closed forms
# ----------------------------------------------------------------------------

THIRD_DERIVATIVES = [
    ("sin", lax.sin, lambda x: -np.cos(x)),
    ("exp", lax.exp, np.exp),
    ("log", lax.log, lambda x: 2 / x ** 3),
    ("tanh", lax.tanh, lambda x: -2 * (1 - np.tanh(x) ** 2) * (1 - 3 * np.tanh(x) ** 2)),
    ("logistic", lax.logistic, lambda x: (lambda s: s * (1 - s) * (1 - 6 * s + 6 * s * s))(
        1 / (1 + np.exp(-x)))),
    ("erf", lax.erf, lambda x: 2 / np.sqrt(np.pi) * (4 * x * x - 2) * np.exp(-x * x)),
    ("atan", lax.atan, lambda x: (6 * x * x - 2) / (1 + x * x) ** 3),
    ("integer_pow5", lambda x: lax.integer_pow(x, 5), lambda x: 60 * x ** 2),
    ("rsqrt", lax.rsqrt, lambda x: -15 / 8 * x ** -3.5),
    ("cbrt", lax.cbrt, lambda x: 10 / 27 * x ** (-8 / 3)),
    ("pow_x", lambda x: lax.pow(x, 2.5), lambda x: 2.5 * 1.5 * 0.5 * x ** -0.5),
    ("pow_y", lambda y: lax.pow(1.7, y), lambda y: math.log(1.7) ** 3 * 1.7 ** y),
    ("sinh", lax.sinh, np.cosh),
    ("asinh", lax.asinh, lambda x: (2 * x * x - 1) / (x * x + 1) ** 2.5),
    ("fnp.sinc_at_0.3", fnp.sinc, None),
]


@pytest.mark.parametrize("name,f,third", THIRD_DERIVATIVES, ids=[t[0] for t in THIRD_DERIVATIVES])
@pytest.mark.parametrize("x", [0.3, 1.7])
def test_third_derivative(name, f, third, x):
    got = nth_derivative(f, 3)(x)
    if third is None:   # compare with a finite difference of the exact second derivative
        h = 1e-5
        second = nth_derivative(f, 2)
        want = (second(x + h) - second(x - h)) / (2 * h)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        return
    np.testing.assert_allclose(got, third(x), rtol=1e-11, atol=1e-13)


def test_third_derivative_in_reverse_and_forward_mix():
    f = lambda x: lax.sin(x) * lax.exp(x)
    fwd = fungrad.jacfwd(fungrad.jacfwd(fungrad.jacfwd(f)))(0.4)
    rev = fungrad.jacrev(fungrad.jacrev(fungrad.jacrev(f)))(0.4)
    want = 2 * math.exp(0.4) * (math.cos(0.4) - math.sin(0.4))
    np.testing.assert_allclose([fwd, rev], [want, want], rtol=1e-12)


def test_lgamma_derivatives_are_polygammas():
    # lgamma' = digamma, lgamma'' = trigamma, lgamma''' = polygamma(2, .)
    assert abs(grad(lax.lgamma)(1.0) + EULER_GAMMA) < 1e-15
    np.testing.assert_allclose(nth_derivative(lax.lgamma, 2)(1.0), np.pi ** 2 / 6, rtol=1e-14)
    np.testing.assert_allclose(nth_derivative(lax.lgamma, 3)(1.0), -2 * ZETA3, rtol=1e-14)
    np.testing.assert_allclose(nth_derivative(lax.digamma, 2)(1.0), -2 * ZETA3, rtol=1e-14)
    np.testing.assert_allclose(nth_derivative(lax.lgamma, 4)(1.0), np.pi ** 4 / 15, rtol=1e-13)


def test_erf_inv_derivative():
    x = 0.3
    y = lax.erf_inv(x)
    np.testing.assert_allclose(grad(lax.erf_inv)(x), np.sqrt(np.pi) / 2 * np.exp(y * y),
                               rtol=1e-14)


# ----------------------------------------------------------------------------
# Special functions: accuracy against known values
# ----------------------------------------------------------------------------

def _rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300))


class TestSpecialFunctions:
    GRID = np.concatenate([np.linspace(-6, 6, 1201), [1e-300, -1e-300, 1e-10, 26.5, -26.5]])

    def test_erf_and_erfc_match_math(self):
        erf_ref = np.array([math.erf(v) for v in self.GRID])
        erfc_ref = np.array([math.erfc(v) for v in self.GRID])
        assert _rel(lax.erf(self.GRID), erf_ref) < 5e-15
        assert _rel(lax.erfc(self.GRID), erfc_ref) < 5e-14
        tail = np.linspace(5, 27, 100)          # erfc down to 1e-300: relative accuracy
        assert _rel(lax.erfc(tail), [math.erfc(v) for v in tail]) < 5e-14

    def test_erf_special_values(self):
        out = lax.erf(np.array([np.inf, -np.inf, np.nan, 0.0, -0.0]))
        np.testing.assert_array_equal(out[:2], [1.0, -1.0])
        assert np.isnan(out[2]) and out[3] == 0 and np.signbit(out[4])
        np.testing.assert_array_equal(lax.erfc(np.array([np.inf, -np.inf])), [0.0, 2.0])

    def test_erf_inv(self):
        np.testing.assert_allclose(lax.erf_inv(0.5), 0.4769362762044699, rtol=1e-15)
        p = np.linspace(-0.999, 0.999, 999)
        back = np.array([math.erf(v) for v in np.asarray(lax.erf_inv(p))])
        np.testing.assert_allclose(back, p, rtol=1e-14, atol=1e-16)
        q = np.logspace(-16, -1, 50)            # near 1: erfc(erf_inv(1 - q)) == q
        y = np.asarray(lax.erf_inv(1 - q))
        np.testing.assert_allclose([math.erfc(v) for v in y], 1 - (1 - q), rtol=1e-12)
        out = lax.erf_inv(np.array([1.0, -1.0, 1.5, np.nan]))
        assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and np.isnan(out[3])

    def test_erf_inv_within_a_few_ulps_of_mpmath(self):
        rng = np.random.default_rng(3)
        # both rational pieces, their seam at 0.85, and the gaps to +-1 down to
        # the last float below 1 (1 - 2**-53)
        gaps = 2.0 ** -rng.uniform(2.8, 53, 300)
        x = np.concatenate([rng.uniform(-1, 1, 700), 1 - gaps, -(1 - gaps),
                            np.linspace(0.8499, 0.8501, 41), [1 - 2**-53, 2**-53, 1e-300]])
        with mpmath.workdps(40):
            want = np.array([float(mpmath.erfinv(mpmath.mpf(float(v)))) for v in x])
        np.testing.assert_allclose(lax.erf_inv(x), want, rtol=5 * np.finfo(float).eps, atol=0)
        # the kernel the normal sampler calls, with its factor sqrt(2) folded in
        scaled = special_kernels.erf_inv_into(x, np.empty_like(x), math.sqrt(2))
        np.testing.assert_allclose(scaled, math.sqrt(2) * want, rtol=6 * np.finfo(float).eps)

    def test_lgamma_matches_math(self):
        xs = np.concatenate([np.linspace(0.01, 30, 1500), [1e-300, 1e-8, 1e5, 1e300],
                             -np.linspace(0.05, 9.95, 200) - 0.001])
        want = np.array([math.lgamma(v) for v in xs])
        # relative accuracy, except next to the zeros of lgamma (absolute there)
        np.testing.assert_allclose(lax.lgamma(xs), want, rtol=1e-13, atol=2e-15)
        # exact zeros and poles
        np.testing.assert_array_equal(lax.lgamma(np.array([1.0, 2.0])), [0.0, 0.0])
        assert np.all(np.isinf(lax.lgamma(np.array([0.0, -1.0, -2.0, np.inf, -np.inf]))))

    def test_digamma_known_values(self):
        np.testing.assert_allclose(lax.digamma(1.0), -EULER_GAMMA, rtol=1e-15)
        np.testing.assert_allclose(lax.digamma(0.5), -EULER_GAMMA - 2 * math.log(2), rtol=1e-15)
        np.testing.assert_allclose(lax.digamma(2.0), 1 - EULER_GAMMA, rtol=1e-15)
        np.testing.assert_allclose(lax.digamma(1 / 3), -EULER_GAMMA - math.pi / (2 * math.sqrt(3))
                                   - 1.5 * math.log(3), rtol=1e-14)
        x = np.linspace(-7.7, 40, 997)
        np.testing.assert_allclose(lax.digamma(x + 1), lax.digamma(x) + 1 / x, rtol=1e-12,
                                   atol=1e-13)
        # the positive root of digamma
        assert abs(lax.digamma(1.4616321449683623)) < 1e-15
        assert np.all(np.isnan(lax.digamma(np.array([0.0, -1.0, -5.0]))))

    def test_polygamma_known_values(self):
        np.testing.assert_allclose(lax.polygamma(1.0, 1.0), np.pi ** 2 / 6, rtol=1e-15)
        np.testing.assert_allclose(lax.polygamma(1.0, 0.5), np.pi ** 2 / 2, rtol=1e-15)
        np.testing.assert_allclose(lax.polygamma(2.0, 1.0), -2 * ZETA3, rtol=1e-15)
        np.testing.assert_allclose(lax.polygamma(3.0, 1.0), np.pi ** 4 / 15, rtol=1e-14)
        np.testing.assert_allclose(lax.polygamma(0.0, 3.0), lax.digamma(3.0), rtol=1e-15)
        # recurrence psi^(n)(x+1) = psi^(n)(x) + (-1)^n n! / x^(n+1), also for x < 0
        for n in (1, 2, 4, 7):
            x = np.linspace(-4.9, 12, 200) + 0.013
            lhs = lax.polygamma(float(n), x + 1)
            term = (-1) ** n * math.factorial(n) / x ** (n + 1)
            rhs = lax.polygamma(float(n), x) + term
            # relative to the size of the terms (near x = 0 the sum cancels)
            assert np.all(np.abs(lhs - rhs) <= 1e-12 * (np.abs(lhs) + np.abs(term)))
        assert np.isnan(lax.polygamma(1.5, 2.0)) and np.isnan(lax.polygamma(-1.0, 2.0))

    @pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.lgamma, lax.digamma, lax.erf_inv])
    def test_float32_in_float32_out(self, fn):
        x = np.array([0.25, 0.5, 0.75], np.float32)
        out = fn(x)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, fn(x.astype(np.float64)), rtol=1e-6)

    def test_logistic_tails_are_accurate(self):
        assert lax.logistic(-700.0) > 0
        np.testing.assert_allclose(lax.logistic(-700.0), math.exp(-700.0), rtol=1e-14)
        assert lax.logistic(800.0) == 1.0 and lax.logistic(-800.0) == 0.0


# ----------------------------------------------------------------------------
# Bad input: clear errors
# ----------------------------------------------------------------------------

class TestErrors:
    @pytest.mark.parametrize("op", [lax.sin, lax.exp, lax.log, lax.sqrt, lax.tanh, lax.erf,
                                    lax.lgamma, lax.floor, lax.round, lax.is_finite])
    def test_float_only_ops_reject_integers(self, op):
        with pytest.raises(TypeError, match=r"lax\.\w+ requires .*floating-point.*int64.*Convert"):
            op(np.arange(3))

    def test_mixed_dtypes_at_lax_level(self):
        with pytest.raises(TypeError, match="same dtype.*float32, float64.*fungrad.numpy"):
            lax.add(np.float32(1), np.float64(2))
        with pytest.raises(TypeError, match="exponent"):
            lax.pow(np.float32(2), np.float64(2))

    def test_integer_and_boolean_ops_reject_floats(self):
        with pytest.raises(TypeError, match="integer or boolean"):
            lax.bitwise_and(1.0, 2.0)
        with pytest.raises(TypeError, match="requires integer"):
            lax.shift_left(np.array([1.0]), np.array([1.0]))
        with pytest.raises(TypeError, match="non-boolean"):
            lax.sub(np.array([True]), np.array([False]))

    def test_select_n_checks_its_predicate(self):
        with pytest.raises(TypeError, match="boolean or integer"):
            lax.select_n(np.array([0.5]), np.array([1.0]), np.array([2.0]))
        with pytest.raises(TypeError, match="at most 2 cases"):
            lax.select_n(np.array([True]), 1.0, 2.0, 3.0)

    def test_integer_pow_checks_its_exponent(self):
        with pytest.raises(ValueError, match="negative power"):
            lax.integer_pow(np.arange(3), -1)
        with pytest.raises(TypeError, match="Python int"):
            elementwise.integer_pow_p.bind(np.ones(2), y=1.5)

    def test_round_rejects_unknown_methods(self):
        with pytest.raises(ValueError):
            lax.round(1.5, 7)

    def test_numpy_rejects_what_numpy_rejects(self):
        with pytest.raises(TypeError, match="subtract.*bool"):
            fnp.subtract(np.array([True]), np.array([False]))
        with pytest.raises(TypeError, match="bitwise_and"):
            fnp.bitwise_and(1.5, 2.5)
        with pytest.raises(TypeError, match="negative"):
            fnp.negative(np.array([True]))
        with pytest.raises(ValueError, match="negative integer powers"):
            fnp.power(np.arange(3), np.array([-1, 0, 1]))
        with pytest.raises(ValueError, match="negative"):
            fnp.power(np.arange(3), -1)
        with pytest.raises(OverflowError):
            fnp.add(np.array([1], np.uint8), 300)

    def test_out_and_where_keywords_are_refused_with_the_reason(self):
        x = np.ones(3)
        with pytest.raises(TypeError, match="out= is not supported because fungrad arrays are "
                                            "immutable"):
            fnp.exp(x, out=np.empty(3))
        with pytest.raises(TypeError, match=r"where= is not supported.*fnp\.where"):
            fnp.log(x, where=x > 0)
        with pytest.raises(TypeError, match="out="):
            fnp.add(x, x, out=x)
        with pytest.raises(TypeError):
            fnp.exp(x, casting="unsafe")

    def test_clip_and_where_argument_errors(self):
        with pytest.raises(TypeError, match="both"):
            fnp.clip(np.ones(2), 0.0, 1.0, min=0.0)
        with pytest.raises(TypeError, match="one argument .* or three"):
            fnp.where(np.ones(2) > 0, 1.0)

    def test_polygamma_order_is_not_differentiable(self):
        with pytest.raises(TypeError, match="order m"):
            grad(lambda m: lax.polygamma(m, 2.0))(1.0)

    def test_bitcast_needs_matching_last_dimension(self):
        with pytest.raises(TypeError, match="last dimension of size 2"):
            lax.bitcast_convert_type(np.zeros(3, np.int32), np.float64)


# ----------------------------------------------------------------------------
# NumPy 2 / NEP 50 promotion and result dtypes
# ----------------------------------------------------------------------------

class TestPromotion:
    def test_weak_python_scalars(self):
        f32 = np.ones(3, np.float32)
        assert fnp.multiply(f32, 2.0).dtype == np.float32
        assert fnp.add(f32, 2).dtype == np.float32
        assert fnp.multiply(np.arange(3), 2.5).dtype == np.float64
        assert fnp.add(np.arange(3, dtype=np.int8), 1).dtype == np.int8
        assert fnp.add(f32, np.ones(3)).dtype == np.float64
        # JAX's lattice: every integer type is below every float type (NumPy: float64)
        assert fnp.add(np.arange(3, dtype=np.int32), f32).dtype == np.float32

    def test_weak_scalars_under_transformations(self):
        f32 = np.ones(3, np.float32)
        jaxpr = fungrad.make_jaxpr(lambda x: x * 2.0 + 1)(f32)
        assert jaxpr.out_avals[0].dtype == np.float32
        assert fungrad.vmap(lambda x: x ** 2)(f32).dtype == np.float32
        g = grad(lambda x: fnp.sin(x * 2.0))(np.float32(1.0))
        assert np.asarray(g).dtype == np.float32

    # the dtypes JAX 0.10.2 gives (x64 on), recorded with real JAX; where they
    # differ from NumPy's, JAX makes small integers float32 (NumPy: float16)
    # and bools int32 (NumPy: int8)
    @pytest.mark.parametrize("name,args,jax_dtype", [
        ("true_divide", (np.arange(3), np.arange(1, 4)), "float64"),
        ("sin", (np.arange(3, dtype=np.int8),), "float32"),
        ("sqrt", (np.array([True, False]),), "float32"),
        ("abs", (np.arange(-2, 2),), "int64"),
        ("floor", (np.arange(3),), "int64"),
        ("ceil", (np.array([True]),), "bool"),
        ("power", (np.array([True]), np.array([True])), "int32"),
        ("floor_divide", (np.array([True]), np.array([True])), "int32"),
        ("square", (np.array([True]),), "int32"),
        ("less", (np.arange(3), 1.5), "bool"),
        ("ldexp", (np.float32(2.0), 3), "float32"),
        ("ldexp", (np.arange(3, dtype=np.int8), 3), "float32"),
        ("arctan2", (np.arange(3, dtype=np.uint8), np.arange(3, dtype=np.int8)), "float32"),
        ("float_power", (np.arange(3, dtype=np.int8), 2), "float32"),
        ("logical_and", (np.arange(3), 1.5), "bool"),
        ("copysign", (np.arange(3, dtype=np.int16), -1), "float32"),
        ("heaviside", (np.arange(-1, 2), 0.5), "float64"),
    ])
    def test_result_dtype_is_jaxs(self, name, args, jax_dtype):
        got = getattr(fnp, name)(*args)
        want = getattr(np, name)(*args)
        assert np.asarray(got).dtype == np.dtype(jax_dtype)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-3)

    def test_comparisons_with_out_of_range_python_ints(self):
        x = np.array([0, 200, 255], np.uint8)
        np.testing.assert_array_equal(fnp.less(x, 1000), np.less(x, 1000))
        np.testing.assert_array_equal(fnp.equal(x, -1), np.equal(x, -1))
        np.testing.assert_array_equal(fnp.greater(-5, x), np.greater(-5, x))

    def test_integer_division_semantics(self):
        a, b = np.array([-7, 7, -7, 7]), np.array([2, 2, -2, -2])
        np.testing.assert_array_equal(lax.div(a, b), [-3, 3, 3, -3])     # towards zero
        np.testing.assert_array_equal(lax.rem(a, b), [-1, 1, -1, 1])     # sign of dividend
        np.testing.assert_array_equal(fnp.floor_divide(a, b), a // b)
        np.testing.assert_array_equal(fnp.remainder(a, b), a % b)
        i8 = np.array([-128, 127, -127], np.int8)
        np.testing.assert_array_equal(lax.div(i8, np.array([3, -3, 2], np.int8)), [-42, -42, -63])

    def test_integer_power_wraps_like_numpy(self):
        x = np.array([2, 3, -3, 0, 1, -1], np.int64)
        y = np.array([63, 40, 5, 0, 100, 7], np.int64)
        np.testing.assert_array_equal(fnp.power(x, y), np.power(x, y))
        np.testing.assert_array_equal(fungrad.vmap(fnp.power)(x, y), np.power(x, y))

    def test_operators_on_tracers_use_these_functions(self):
        assert grad(lambda x: x ** 2)(3.0) == 6.0
        np.testing.assert_allclose(grad(lambda x: 2 ** x)(3.0), 8 * math.log(2))
        np.testing.assert_allclose(grad(lambda x: x ** 0.5)(4.0), 0.25)
        assert grad(lambda x: abs(-x))(2.0) == 1.0
        assert grad(lambda x: (x % 2.0) + (x // 2.0))(3.5) == 1.0


# ----------------------------------------------------------------------------
# integer_pow by repeated squaring (fungrad/lax/kernels/powers.py)
# ----------------------------------------------------------------------------

_POW_DTYPES = ["float64", "float32", "complex128", "int64", "int32", "int8", "uint8", "float16"]


@given(st.sampled_from(_POW_DTYPES), st.integers(-9, 70), st.sampled_from([(), (1,), (3, 4)]),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_integer_pow_kernel_matches_numpy_power(dtype, y, shape, strided, seed):
    dtype = np.dtype(dtype)
    if y < 0 and dtype.kind in "iu":
        y = -y                                   # negative powers of integers are rejected
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape + (2,)) * 1.5
    x = x + 1j * rng.standard_normal(x.shape) if dtype.kind == "c" else x
    x = (x * 40 if dtype.kind in "iu" else x).astype(dtype)
    x = x[..., 0] if strided else x.reshape(shape + (2,))     # a strided view or not
    before = x.copy()
    with np.errstate(all="ignore"):
        got, want = power_kernels.integer_pow(x, y=y), np.power(x, y)
    assert got.dtype == dtype and got.shape == x.shape
    assert not np.shares_memory(got, x)          # never aliases (or writes) its input
    np.testing.assert_array_equal(x, before)
    if dtype.kind in "iu":                       # exact, wrapping as NumPy's power
        np.testing.assert_array_equal(got, want)
    else:                                        # a few roundings of a multiplication chain
        rtol = {2: 1e-2, 4: 1e-5}.get(dtype.itemsize, 1e-5 if dtype == np.complex64 else 1e-12)
        np.testing.assert_allclose(got, want, rtol=rtol * max(abs(y), 1), atol=0)


def test_integer_pow_multiplies_in_jaxs_order():
    # JAX (XLA) computes x**3 as x * (x * x), x**-3 as 1 / that; exact on these
    x = np.array([0.1, 1 / 3, 1e-100, 1e200, -7.3])
    with np.errstate(over="ignore", under="ignore"):
        np.testing.assert_array_equal(power_kernels.integer_pow(x, y=3), x * (x * x))
        np.testing.assert_array_equal(power_kernels.integer_pow(x, y=-3), 1 / (x * (x * x)))
        np.testing.assert_array_equal(power_kernels.integer_pow(x, y=6),
                                      (x * x) * ((x * x) * (x * x)))
    assert power_kernels.integer_pow(np.float64(np.nan), y=0) == 1.0


def test_jit_of_integer_pow_calls_no_power_function():
    src = fungrad.jit(lambda x: x ** 3 + lax.integer_pow(x, -5)).lower(np.ones(3)).source()
    assert "np.power" not in src and "_powers.integer_pow" in src
    x = np.linspace(0.5, 2, 7)
    np.testing.assert_allclose(fungrad.jit(lambda x: x ** 3 + lax.integer_pow(x, -5))(x),
                               x ** 3 + x ** -5.0, rtol=1e-14)


# ----------------------------------------------------------------------------
# Array-level helpers
# ----------------------------------------------------------------------------

class TestArrayHelpers:
    def test_allclose_and_array_equal_are_traceable_0d_bools(self):
        a = np.array([1.0, 2.0])
        out = fungrad.jit(fnp.allclose)(a, a + 1e-9) if hasattr(fungrad, "jit") else \
            fnp.allclose(a, a + 1e-9)
        assert np.asarray(out).shape == () and bool(out)
        jaxpr = fungrad.make_jaxpr(fnp.allclose)(a, a)
        assert jaxpr.out_avals[0].dtype == np.bool_ and jaxpr.out_avals[0].shape == ()
        assert not bool(fnp.array_equal(np.ones(2), np.ones(3)))
        assert bool(fnp.array_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True))
        assert bool(fnp.array_equiv(np.ones((2, 3)), np.ones(3)))
        assert not bool(fnp.array_equiv(np.ones((2, 3)), np.ones(2)))

    def test_where_one_argument_is_nonzero(self):
        (idx,) = fnp.where(np.array([0, 3, 0, 5]))
        np.testing.assert_array_equal(idx, [1, 3])

    def test_frexp_and_ldexp_round_trip(self):
        x = np.array([5e-324, 1e-310, 0.1, 1.0, 3.0, -1e300, 1.7976931348623157e308])
        m, e = fnp.frexp(x)
        wm, we = np.frexp(x)
        np.testing.assert_array_equal(m, wm)
        np.testing.assert_array_equal(e, we)
        np.testing.assert_array_equal(fnp.ldexp(m, e), x)
        assert grad(lambda v: fnp.frexp(v)[0])(6.0) == 0.125

    def test_nan_to_num_gradient_passes_through_finite_values(self):
        f = lambda v: lax.reduce_sum(fnp.nan_to_num(v + np.array([1.0, np.inf, np.nan])), (0,))
        np.testing.assert_array_equal(grad(f)(2.0), 1.0)

    def test_gcd_lcm(self):
        a, b = np.array([12, -18, 0, 7, 0]), np.array([18, 12, 5, 0, 0])
        np.testing.assert_array_equal(fnp.gcd(a, b), np.gcd(a, b))
        np.testing.assert_array_equal(fnp.lcm(a, b), np.lcm(a, b))


# ----------------------------------------------------------------------------
# Structure: iota, select_n, complex parts, printing
# ----------------------------------------------------------------------------

class TestStructure:
    def test_iota(self):
        np.testing.assert_array_equal(lax.iota(np.int32, 4), np.arange(4, dtype=np.int32))
        out = lax.broadcasted_iota(np.float32, (2, 3), 1)
        np.testing.assert_array_equal(out, np.broadcast_to(np.arange(3.0), (2, 3)))
        assert out.dtype == np.float32
        np.testing.assert_array_equal(lax.broadcasted_iota(np.int64, (2, 3), -2),
                                      [[0, 0, 0], [1, 1, 1]])
        jaxpr = fungrad.make_jaxpr(lambda: lax.iota(np.int32, 3))()
        assert "iota" in str(jaxpr)

    def test_select_argument_order_is_jax(self):
        pred = np.array([True, False])
        np.testing.assert_array_equal(lax.select(pred, 1.0, 2.0), [1.0, 2.0])
        np.testing.assert_array_equal(lax.select_n(pred, 1.0, 2.0), [2.0, 1.0])
        which = np.array([2, 0, 1], np.int32)
        np.testing.assert_array_equal(lax.select_n(which, 0.0, 1.0, 2.0), [2.0, 0.0, 1.0])

    def test_select_n_transpose_sends_cotangents_to_the_chosen_case(self):
        which = np.array([0, 1, 2, 1])
        f = lambda a, b, c: lax.select_n(which, a, b, c)
        ones = np.ones(4)
        _, pullback = fungrad.vjp(f, ones, ones, 2.0)
        ga, gb, gc = pullback(np.array([1.0, 2.0, 3.0, 4.0]))
        np.testing.assert_array_equal(ga, [1, 0, 0, 0])
        np.testing.assert_array_equal(gb, [0, 2, 0, 4])
        assert gc == 3.0      # a scalar case receives the sum of its cotangents

    def test_complex_parts_follow_jax_transposes(self):
        z = np.array(1.0 + 2.0j)
        assert lax.complex(1.0, 2.0) == z
        assert lax.real(z) == 1.0 and lax.imag(z) == 2.0 and lax.conj(z) == 1.0 - 2.0j
        _, pullback = fungrad.vjp(lax.real, z)
        assert pullback(np.array(1.0))[0] == 1.0 + 0.0j
        _, pullback = fungrad.vjp(lax.imag, z)
        assert pullback(np.array(1.0))[0] == -1.0j
        assert fnp.real(np.arange(3)).dtype == np.int64
        assert fnp.abs(np.array([3 + 4j])).dtype == np.float64
        np.testing.assert_allclose(fnp.abs(np.array([3 + 4j])), [5.0])

    def test_jaxpr_names_the_primitives(self):
        text = str(fungrad.make_jaxpr(lambda x: lax.clamp(0.0, lax.erf(x), 1.0))(0.5))
        assert "erf" in text and "clamp" in text


# ----------------------------------------------------------------------------
# Lowerings: the NumPy source jit emits computes what the impl computes
# ----------------------------------------------------------------------------

_RNG = np.random.default_rng(0)
_F = _RNG.uniform(-3, 3, (3, 4))
_F32 = _F.astype(np.float32)
_I = _RNG.integers(-20, 20, (3, 4))
_NZ = np.where(_I == 0, 3, _I)
_B = _RNG.random((3, 4)) < 0.5

LOWERING_INPUTS = [
    ("div", (_I, _NZ), {}), ("div", (_I.astype(np.int8), _NZ.astype(np.int8)), {}),
    ("div", (_F, _F + 10), {}), ("rem", (_I, _NZ), {}),
    ("round", (_F * 2,), {"rounding_method": 0}), ("round", (_F * 2,), {"rounding_method": 1}),
    ("round", (np.array([0.5, -0.5, 2.5, -2.5, np.inf, np.nan]),), {"rounding_method": 0}),
    ("logistic", (_F * 100,), {}), ("rsqrt", (np.abs(_F) + 1,), {}),
    ("integer_pow", (_F32,), {"y": 3}), ("integer_pow", (_F,), {"y": -2}),
    ("pow", (np.abs(_F) + 0.5, _F), {}), ("pow", (np.abs(_F32) + 0.5, _I % 4), {}),
    ("shift_right_logical", (_I, np.abs(_I) % 70), {}),
    ("shift_right_logical", (_I.astype(np.int8), np.abs(_I).astype(np.int8) % 9), {}),
    ("shift_left", (_I, np.abs(_I) % 70), {}), ("shift_right_arithmetic", (_I, np.abs(_I) % 70), {}),
    ("select_n", (_B, _F, _F + 1), {}), ("select_n", (np.abs(_I) % 3, _F, _F + 1, 2.0), {}),
    ("select_n", (_B[0], _F), {}),
    ("clamp", (-1.0, _F, 1.0), {}), ("complex", (_F, _F + 1), {}), ("real", (_F + 2j,), {}),
    ("convert_element_type", (_F,), {"new_dtype": np.dtype(np.int32)}),
    ("convert_element_type", (2.5,), {"new_dtype": np.dtype(np.float32)}),
    ("bitcast_convert_type", (_F,), {"new_dtype": np.dtype(np.int32)}),
    ("bitcast_convert_type", (np.float64(1.5),), {"new_dtype": np.dtype(np.int64)}),
    ("bitcast_convert_type", (_I.astype(np.int32).reshape(6, 2),), {"new_dtype": np.dtype(np.float64)}),
    ("iota", (), {"dtype": np.dtype(np.int32), "shape": (2, 3), "dimension": 0}),
    ("erf", (_F,), {}), ("erfc", (_F,), {}), ("erf_inv", (_F / 4,), {}), ("lgamma", (_F,), {}),
    ("digamma", (_F,), {}), ("polygamma", (np.abs(_I) % 3 + 0.0, np.abs(_F) + 0.1), {}),
    ("stop_gradient", (_F,), {}), ("gcd", (_I, _NZ), {}), ("is_finite", (_F,), {}),
    ("not", (_B,), {}), ("and", (_I, _NZ), {}), ("eq", (_I, _NZ), {}), ("max", (_F, _F.T[:3, :1]), {}),
    ("population_count", (_I,), {}), ("clz", (_I.astype(np.uint16),), {}),
    ("mulhi", (_I * 10**8, _NZ * 10**9), {}),
    ("reduce_precision", (_F,), {"exponent_bits": 5, "mantissa_bits": 10}),
]


@pytest.mark.parametrize("name,args,params", LOWERING_INPUTS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOWERING_INPUTS)])
def test_lowering_matches_impl(name, args, params):
    prim = primitives[name]
    names = [f"a{i}" for i in range(len(args))]
    source, modules = codegen.lowered_source(prim, names, [get_aval(a) for a in args], **params)
    with np.errstate(all="ignore"):
        lowered = eval(source, {"np": np, **modules}, dict(zip(names, args)))  # noqa: S307 (test of codegen)
        want = prim.impl(*args, **params)
    lowered, want = np.asarray(lowered), np.asarray(want)
    assert lowered.dtype == want.dtype and lowered.shape == want.shape, source
    np.testing.assert_array_equal(lowered, want, err_msg=source)


SIMPLE_UNARY = ["neg", "sign", "floor", "ceil", "exp", "exp2", "log", "log1p", "expm1", "sin",
                "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                "atanh", "sqrt", "cbrt", "abs", "square", "imag", "conj"]
SIMPLE_BINARY = ["add", "sub", "mul", "atan2", "nextafter", "min", "ne", "lt", "le", "gt", "ge",
                 "or", "xor"]


@pytest.mark.parametrize("name", SIMPLE_UNARY + SIMPLE_BINARY)
def test_simple_lowerings(name):
    prim = primitives[name]
    args = [_F + 0j] if name in ("imag", "conj") else [_F] if name in SIMPLE_UNARY else \
        [_I, _NZ] if name in ("or", "xor") else [_F, _F.T[:3, :1]]
    names = [f"a{i}" for i in range(len(args))]
    with np.errstate(all="ignore"):
        lowered = eval(codegen.lowered_source(prim, names)[0], {"np": np},  # noqa: S307
                       dict(zip(names, args)))
        np.testing.assert_array_equal(lowered, prim.impl(*args))


def test_every_elementwise_primitive_has_a_lowering_test():
    mine = {getattr(elementwise, attr).name for attr in dir(elementwise) if attr.endswith("_p")}
    tested = {name for name, _, _ in LOWERING_INPUTS} | set(SIMPLE_UNARY) | set(SIMPLE_BINARY)
    assert mine - tested == set()


def test_special_math_is_pure_numpy():
    """The module the special lowerings call needs nothing but NumPy (and the stdlib)."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(special_kernels))
    modules = {alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom))
               for alias in (node.names if isinstance(node, ast.Import) else [node])
               if not isinstance(node, ast.ImportFrom)} | {
        node.module.split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module}
    assert modules <= {"numpy", "math", "fractions", "__future__"}


def test_integer_power_of_a_traced_exponent_is_jaxs_six_bit_loop():
    """A traced integer exponent is visited for JAX's six bits (a seventh
    would overflow every base but 0 and +-1, which the low bits and the start
    decide), with JAX's and NumPy's results: 64 bits made numpyro's NUTS
    program ~380 equations longer to compile."""
    x = np.array([0, 1, -1, 2, 3, 0, -1, 1, 0, 2, -3], np.int64)
    y = np.array([0, 5, 7, 10, 3, 64, 65, 64, 1, 63, 39], np.int64)
    got = fungrad.jit(fnp.power)(x, y)
    np.testing.assert_array_equal(np.asarray(got), np.power(x, y))
    jaxpr = fungrad.make_jaxpr(fnp.power)(x, y)
    assert sum(e.primitive.name == "mul" for e in jaxpr.eqns) == 12
