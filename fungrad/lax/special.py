"""Special-function primitives, part 2: incomplete gamma/beta, scaled Bessel
functions and Hurwitz zeta (JAX's ``lax.igamma``, ``lax.igammac``,
``lax.igamma_grad_a``, ``lax.random_gamma_grad``, ``lax.betainc``,
``lax.bessel_i0e``, ``lax.bessel_i1e``, ``lax.zeta``), plus the private
``ndtri`` primitive behind ``fungrad.scipy.special.ndtri``.

Each block is the primitive, then its JVP (written with lax functions so it
can be differentiated again).  Impl and lowering of each are one kernel
function of ``fungrad.lax.kernels.gamma_zeta``.  Derivative conventions (JAX's):

* igamma/igammac: d/dx is the gamma density x^(a-1) e^-x / Gamma(a); d/da is
  ``igamma_grad_a``, whose own d/da is the private ``igamma_da`` of order 2,
  and so on: P is differentiable in a to any order (beyond JAX, which raises
  at the second derivative in a).
* random_gamma_grad: d/dx in closed form; d/da (second derivatives in a) is
  not implemented and raises (JAX raises for both arguments, fungrad only for a).
* betainc: d/dx is the beta density; d/da and d/db raise, as in JAX.
* zeta(x, q): d/dq = -x zeta(x + 1, q); d/dx raises, as in JAX.
* bessel_i0e' = i1e - sign(x) i0e; bessel_i1e' = i0e - i1e (sign(x) + 1/x),
  which is 1/2 at x = 0.
"""
from __future__ import annotations

import math

from fungrad.interpreters.ad import defjvp, defjvp2
from fungrad.lax.kernels import gamma_zeta
from fungrad.lax.elementwise import (
    FLOAT, _nary, _unary, _operand, _operands, _const, _one, _ones, _zeros, _structural,
    add, sub, mul, div, neg, exp, log, log1p, lgamma, digamma, sign, square, eq, select)

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc",
           "bessel_i0e", "bessel_i1e", "zeta"]


def _unary_special(name):
    return _unary(name, getattr(gamma_zeta, name), FLOAT)


def _nary_special(name):
    return _nary(name, getattr(gamma_zeta, name), FLOAT)


def _not_differentiable(prim_name, arg, why="as in JAX"):
    def rule(g, *args):
        raise TypeError(f"lax.{prim_name}: the derivative with respect to {arg} is not "
                        f"implemented ({why}); differentiate with respect to the other "
                        "argument only, or wrap this argument in lax.stop_gradient.")
    return rule


# ----------------------------------------------------------------------------
# Incomplete gamma
# ----------------------------------------------------------------------------

def _gamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a), the x-derivative of igamma."""
    return exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a)))


igamma_p = _nary_special("igamma")
defjvp(igamma_p,
       lambda g, a, x: mul(g, igamma_grad_a(a, x)),
       lambda g, a, x: mul(g, _gamma_density(a, x)))

igammac_p = _nary_special("igammac")
defjvp(igammac_p,
       lambda g, a, x: neg(mul(g, igamma_grad_a(a, x))),
       lambda g, a, x: neg(mul(g, _gamma_density(a, x))))

# d/dx dP/da = d/da density = density * (log x - digamma(a)); d/da dP/da is
# the order-2 member of the family below
igamma_grad_a_p = _nary_special("igamma_grad_a")
defjvp(igamma_grad_a_p,
       lambda g, a, x: mul(g, igamma_da(a, x, 2)),
       lambda g, a, x: mul(g, mul(_gamma_density(a, x), sub(log(x), digamma(a)))))

# d^k P / da^k and d^k density / da^k, k >= 1 (kernels: Taylor-mode arithmetic
# on the series and the continued fraction), so P is differentiable in a to any
# order: d/da raises k by one; d/dx of the first is the second, and
#   d/dx d^k_a density = d^k_a [density ((a-1)/x - 1)]
#                      = d^k_a density ((a-1)/x - 1) + k d^(k-1)_a density / x
igamma_da_p = _nary("igamma_da", gamma_zeta.igamma_da, FLOAT)
defjvp(igamma_da_p,
       lambda g, a, x, order: mul(g, igamma_da(a, x, order + 1)),
       lambda g, a, x, order: mul(g, gamma_density_da(a, x, order)))


def _density_da_dx(g, a, x, order):
    one = _const(x, 1)
    slope = mul(gamma_density_da(a, x, order), sub(div(sub(a, one), x), one))
    if order:
        slope = add(slope, div(mul(_const(x, order), gamma_density_da(a, x, order - 1)), x))
    return mul(g, slope)


gamma_density_da_p = _nary("gamma_density_da", gamma_zeta.gamma_density_da, FLOAT)
defjvp(gamma_density_da_p,
       lambda g, a, x, order: mul(g, gamma_density_da(a, x, order + 1)),
       _density_da_dx)


def _random_gamma_grad_dx(g, ans, a, x):
    """r = -P_a / P_x; r_x = -(log x - digamma(a)) - r ((a - 1)/x - 1)."""
    slope = sub(div(sub(a, _const(a, 1)), x), _const(x, 1))
    return mul(g, neg(add(sub(log(x), digamma(a)), mul(ans, slope))))


random_gamma_grad_p = _nary_special("random_gamma_grad")
defjvp2(random_gamma_grad_p,
        _not_differentiable("random_gamma_grad", "a", "second derivative in a"),
        _random_gamma_grad_dx)


def igamma(a, x):
    """Regularized lower incomplete gamma P(a, x) (nan for a <= 0 or x < 0)."""
    return igamma_p.bind(*_operands(a, x))


def igammac(a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x), computed directly."""
    return igammac_p.bind(*_operands(a, x))


def igamma_grad_a(a, x):
    """dP(a, x)/da."""
    return igamma_grad_a_p.bind(*_operands(a, x))


def igamma_da(a, x, order):
    """d^order P(a, x) / da^order (order >= 1; private: jax.lax has no such op)."""
    return igamma_da_p.bind(*_operands(a, x), order=int(order))


def gamma_density_da(a, x, order):
    """d^order/da^order of x^(a-1) e^-x / Gamma(a) (order >= 0; private)."""
    return gamma_density_da_p.bind(*_operands(a, x), order=int(order))


def random_gamma_grad(a, x):
    """The derivative d x / d a of a Gamma(a, 1) sample x (implicit
    differentiation of P(a, x) = u): -(dP/da) / (dP/dx)."""
    return random_gamma_grad_p.bind(*_operands(a, x))


# ----------------------------------------------------------------------------
# Regularized incomplete beta (JAX's primitive name)
# ----------------------------------------------------------------------------

def _beta_density(a, b, x):
    one = _const(x, 1)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return exp(sub(add(mul(sub(a, one), log(x)), mul(sub(b, one), log1p(neg(x)))), log_beta))


betainc_p = _nary("regularized_incomplete_beta", gamma_zeta.betainc, FLOAT)
defjvp(betainc_p,
       _not_differentiable("betainc", "a"),
       _not_differentiable("betainc", "b"),
       lambda g, a, b, x: mul(g, _beta_density(a, b, x)))


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b) (nan outside a, b > 0, 0 <= x <= 1)."""
    return betainc_p.bind(*_operands(a, b, x))


# ----------------------------------------------------------------------------
# Exponentially scaled modified Bessel functions
# ----------------------------------------------------------------------------

bessel_i0e_p = _unary_special("bessel_i0e")
defjvp2(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e(x), mul(sign(x), ans))))


def _bessel_i1e_jvp(g, ans, x):
    at_zero = eq(x, _zeros(x))
    safe_x = select(at_zero, _ones(x), x)
    # (constants like x, of its weak type: JAX's reciprocal and full_like(x, 0.5))
    slope = sub(bessel_i0e(x), mul(ans, add(sign(x), div(_one(x), safe_x))))
    return mul(g, select(at_zero, _structural().full_like(x, 0.5), slope))


bessel_i1e_p = _unary_special("bessel_i1e")
defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


def bessel_i0e(x):
    """exp(-|x|) I0(x)."""
    return bessel_i0e_p.bind(_operand(x))


def bessel_i1e(x):
    """exp(-|x|) I1(x)."""
    return bessel_i1e_p.bind(_operand(x))


# ----------------------------------------------------------------------------
# Hurwitz zeta
# ----------------------------------------------------------------------------

zeta_p = _nary_special("zeta")
defjvp(zeta_p,
       _not_differentiable("zeta", "x"),
       lambda g, x, q: mul(g, neg(mul(x, zeta(add(x, _const(x, 1)), q)))))


def zeta(x, q):
    """Hurwitz zeta sum_k (q + k)^-x (x > 1, q > 0; inf at x = 1, nan elsewhere)."""
    return zeta_p.bind(*_operands(x, q))


# ----------------------------------------------------------------------------
# ndtri (private: jax.lax has none; fungrad.scipy.special.ndtri wraps it)
# ----------------------------------------------------------------------------

_SQRT_2PI = math.sqrt(2 * math.pi)

ndtri_p = _unary_special("ndtri")
defjvp2(ndtri_p, lambda g, ans, p: mul(g, mul(_const(p, _SQRT_2PI),
                                              exp(mul(_const(p, 0.5), square(ans))))))


def _ndtri(p):
    return ndtri_p.bind(_operand(p))
