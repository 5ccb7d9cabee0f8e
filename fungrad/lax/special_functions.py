"""Special-function primitives, part 3: the ones behind the rest of
``jax.scipy.special`` (jax.lax has none of these, so they are private here and
``fungrad.scipy.special`` wraps them): ``erfcx``, ``expn``, ``expi``,
``dawsn``, the sine/cosine integrals, the Fresnel integrals, ``spence``,
``owens_t``, ``hyp1f1``, ``hyp2f1`` and the table ``bessel_jn``.

Each block is the primitive, then its JVP written with lax functions (so it
can be differentiated again).  Impl and lowering are one kernel function of
``fungrad.lax.kernels.special_functions``.  Derivatives (JAX's where JAX has
them, the closed forms otherwise):

* erfcx' = 2 x erfcx - 2/sqrt(pi); expi' = e^x / x; dawsn' = 1 - 2 x dawsn;
* d/dx E_n(x) = -E_{n-1}(x) (E_0 = e^-x / x, whose derivative is
  -e^-x (x + 1) / x^2); no derivative in the order n;
* Si' = sin(x)/x (1 at 0), Ci' = cos(x)/x; S' = sin(pi x^2/2), C' = cos(pi x^2/2);
* spence'(x) = log(x) / (1 - x) (-1 at x = 1);
* Owen's T: dT/dh = -phi(h) erf(a h / sqrt 2) / 2, dT/da = e^(-h^2 (1+a^2)/2) / (2 pi (1+a^2));
* hyp1f1, hyp2f1: in x only (the contiguous functions a/b M(a+1, b+1, x) and
  ab/c F(a+1, b+1; c+1; x)); the parameters raise, as JAX's have no derivative;
* bessel_jn: J_0' = -J_1, J_n' = (J_{n-1} - J_{n+1}) / 2;
* wofz (complex, holomorphic): w'(z) = -2 z w(z) + 2i / sqrt(pi).
"""
from __future__ import annotations

import math

from fungrad.core import Primitive, ShapedArray
from fungrad.interpreters.ad import defjvp, defjvp2
from fungrad.lax.kernels import special_functions as kernels
from fungrad.lax.elementwise import (
    COMPLEX, FLOAT, _nary, _unary, _operand, _operands, _const, add, sub, mul, div, neg, exp, log,
    sin, cos, erf, square, eq, lt, select)
from fungrad.lax.elementwise import abs as lax_abs
from fungrad.lax.special import _not_differentiable
from fungrad.lax.utils import def_kernel

__all__ = ["erfcx", "expn", "expi", "dawsn", "sici_si", "sici_ci", "fresnel_s", "fresnel_c",
           "spence", "owens_t", "hyp1f1", "hyp2f1", "bessel_jn", "wofz"]


def _unary_kernel(name):
    return _unary(name, getattr(kernels, name), FLOAT)


def _nary_kernel(name, num_args=2):
    return _nary(name, getattr(kernels, name), FLOAT, num_args=num_args)


def _near(x, centre, radius, series, elsewhere):
    """``series(x - centre)`` within ``radius`` of ``centre`` (a truncated Taylor
    series, exact to rounding there and differentiable to any order, so that a
    removable singularity such as sin(x)/x at 0 has the right derivatives),
    ``elsewhere(x)`` outside, evaluated at a point away from ``centre`` inside
    (no 0/0 is ever formed)."""
    u = sub(x, _const(x, centre))
    close = lt(lax_abs(u), _const(x, radius))
    away = select(close, add(mul(x, _const(x, 0)), _const(x, centre + 2 * radius + 1)), x)
    return select(close, series(u), elsewhere(away))


def _polynomial(u, coefficients):
    total = add(mul(u, _const(u, 0)), _const(u, coefficients[-1]))
    for c in reversed(coefficients[:-1]):
        total = add(mul(total, u), _const(u, c))
    return total


# --- erfcx, expi, dawsn ---------------------------------------------------------

erfcx_p = _unary_kernel("erfcx")
defjvp2(erfcx_p, lambda g, ans, x: mul(g, sub(mul(_const(x, 2), mul(x, ans)),
                                              _const(x, 2 / math.sqrt(math.pi)))))

expi_p = _unary_kernel("expi")
defjvp(expi_p, lambda g, x: mul(g, div(exp(x), x)))

dawsn_p = _unary_kernel("dawsn")
defjvp2(dawsn_p, lambda g, ans, x: mul(g, sub(_const(x, 1), mul(_const(x, 2), mul(x, ans)))))


def erfcx(x):
    return erfcx_p.bind(_operand(x))


def expi(x):
    return expi_p.bind(_operand(x))


def dawsn(x):
    return dawsn_p.bind(_operand(x))


# --- E_n ------------------------------------------------------------------------

def _expn_dx(g, n, x):
    """-E_{n-1}(x); for n = 0, d/dx (e^-x / x) = -e^-x (x + 1) / x^2."""
    one = _const(n, 1)
    zeroth = neg(div(mul(exp(neg(x)), add(x, one)), square(x)))
    lower = neg(expn(select(eq(n, _const(n, 0)), add(n, one), sub(n, one)), x))
    return mul(g, select(eq(n, _const(n, 0)), zeroth, lower))


expn_p = _nary_kernel("expn")
defjvp(expn_p, _not_differentiable("expn", "the order n"), _expn_dx)


def expn(n, x):
    return expn_p.bind(*_operands(n, x))


# --- sine/cosine and Fresnel integrals ------------------------------------------

sici_si_p = _unary_kernel("sici_si")
# sin(x)/x = 1 - x^2/6 + x^4/120 - x^6/5040 + ... (|x| < 1e-3: the rest < 1e-24)
_SINC_SERIES = (1.0, 0.0, -1 / 6, 0.0, 1 / 120, 0.0, -1 / 5040)
defjvp(sici_si_p, lambda g, x: mul(g, _near(x, 0.0, 1e-3, lambda u: _polynomial(u, _SINC_SERIES),
                                            lambda s: div(sin(s), s))))

sici_ci_p = _unary_kernel("sici_ci")
defjvp(sici_ci_p, lambda g, x: mul(g, div(cos(x), x)))

fresnel_s_p = _unary_kernel("fresnel_s")
defjvp(fresnel_s_p, lambda g, x: mul(g, sin(mul(_const(x, math.pi / 2), square(x)))))

fresnel_c_p = _unary_kernel("fresnel_c")
defjvp(fresnel_c_p, lambda g, x: mul(g, cos(mul(_const(x, math.pi / 2), square(x)))))


def sici_si(x):
    return sici_si_p.bind(_operand(x))


def sici_ci(x):
    return sici_ci_p.bind(_operand(x))


def fresnel_s(x):
    return fresnel_s_p.bind(_operand(x))


def fresnel_c(x):
    return fresnel_c_p.bind(_operand(x))


# --- spence ---------------------------------------------------------------------

# log(x) / (1 - x) = -(1 + u/2 + u^2/3 + ...), u = 1 - x (|u| < 1e-3: the rest < 1e-20)
_SPENCE_SLOPE_SERIES = tuple(-((-1.0) ** k) / (k + 1) for k in range(7))


def _spence_dx(g, x):
    one = _const(x, 1)
    return mul(g, _near(x, 1.0, 1e-3, lambda u: _polynomial(u, _SPENCE_SLOPE_SERIES),
                        lambda s: div(log(s), sub(one, s))))


spence_p = _unary_kernel("spence")
defjvp(spence_p, _spence_dx)


def spence(x):
    return spence_p.bind(_operand(x))


# --- Owen's T -------------------------------------------------------------------

def _owens_t_dh(g, h, a):
    density = mul(_const(h, 1 / math.sqrt(2 * math.pi)), exp(mul(_const(h, -0.5), square(h))))
    return mul(g, mul(_const(h, -0.5), mul(density, erf(mul(a, mul(h, _const(h, 2 ** -0.5)))))))


def _owens_t_da(g, h, a):
    one_plus = add(_const(a, 1), square(a))
    return mul(g, div(exp(mul(_const(h, -0.5), mul(square(h), one_plus))),
                      mul(_const(a, 2 * math.pi), one_plus)))


owens_t_p = _nary_kernel("owens_t")
defjvp(owens_t_p, _owens_t_dh, _owens_t_da)


def owens_t(h, a):
    return owens_t_p.bind(*_operands(h, a))


# --- hypergeometric functions ---------------------------------------------------

hyp1f1_p = _nary_kernel("hyp1f1", num_args=3)
defjvp(hyp1f1_p, _not_differentiable("hyp1f1", "a"), _not_differentiable("hyp1f1", "b"),
       lambda g, a, b, x: mul(g, mul(div(a, b), hyp1f1(add(a, _const(a, 1)),
                                                       add(b, _const(b, 1)), x))))

hyp2f1_p = _nary_kernel("hyp2f1", num_args=4)
defjvp(hyp2f1_p, _not_differentiable("hyp2f1", "a"), _not_differentiable("hyp2f1", "b"),
       _not_differentiable("hyp2f1", "c"),
       lambda g, a, b, c, x: mul(g, mul(div(mul(a, b), c),
                                        hyp2f1(add(a, _const(a, 1)), add(b, _const(b, 1)),
                                               add(c, _const(c, 1)), x))))


def hyp1f1(a, b, x):
    return hyp1f1_p.bind(*_operands(a, b, x))


def hyp2f1(a, b, c, x):
    return hyp2f1_p.bind(*_operands(a, b, c, x))


# --- bessel_jn: the table J_0(x) .. J_{count-1}(x) on a new leading axis ---------

def _bessel_jn_shape(x, count):
    FLOAT.check("bessel_jn", x)
    return ShapedArray((count, *x.shape), x.dtype)


def _bessel_jn_jvp(primals, tangents, count):
    from fungrad.lax.indexing import slice_in_dim
    from fungrad.lax.structural import concatenate
    (x,), (t,) = primals, tangents
    wider = bessel_jn(x, count + 1)
    ans = slice_in_dim(wider, 0, count, axis=0)
    first = neg(slice_in_dim(wider, 1, 2, axis=0))
    if count == 1:
        derivative = first
    else:
        rest = mul(_const(x, 0.5), sub(slice_in_dim(wider, 0, count - 1, axis=0),
                                       slice_in_dim(wider, 2, count + 1, axis=0)))
        derivative = concatenate([first, rest], 0)
    return ans, mul(derivative, t)


def _bessel_jn_batch(axis_size, vals, dims, count):
    (x,), (d,) = vals, dims
    return bessel_jn_p.bind(x, count=count), d + 1      # the table axis comes first


bessel_jn_p = Primitive("bessel_jn")
bessel_jn_p.def_abstract_eval(_bessel_jn_shape)
def_kernel(bessel_jn_p, kernels.bessel_jn)
bessel_jn_p.jvp = _bessel_jn_jvp
bessel_jn_p.batch = _bessel_jn_batch


def bessel_jn(x, count):
    return bessel_jn_p.bind(_operand(x), count=int(count))


# --- the Faddeeva function (complex in, complex out; holomorphic) ---------------

wofz_p = _unary("wofz", kernels.wofz, COMPLEX)
defjvp2(wofz_p, lambda g, ans, z: mul(g, add(mul(_const(z, -2), mul(z, ans)),
                                             _const(z, 2j / math.sqrt(math.pi)))))


def wofz(z):
    return wofz_p.bind(_operand(z))
