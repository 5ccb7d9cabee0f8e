"""More ``jax.scipy.special`` functions (re-exported by ``fungrad.scipy.special``):
incomplete gamma/beta, beta and gamma functions with signs, polygamma, zeta,
modified Bessel functions, ndtri, relative entropy, Pochhammer, factorial.

All are built on ``fungrad.lax`` (the primitives of ``fungrad.lax.special``),
so they are differentiable, vmappable and jittable.  Derivative rules follow
JAX: ``betainc`` has no derivative in a, b; ``zeta`` none in x;
``gammainc``/``gammaincc`` differentiate to any order in a and x (beyond JAX,
which stops at the first derivative in a).

Deviations from JAX:

* ``zeta(x)`` with ``q=None`` raises NotImplementedError, as JAX does.
* ``gammasgn`` is nan at the poles 0, -1, -2, ... (scipy: +-1 at +-0).
* ``multigammaln`` does not check ``a > (d - 1) / 2`` (JAX does not either).
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from fungrad._dtype_classes import is_inexact, issubdtype as dtype_issubdtype
from fungrad import lax
from fungrad.lax import special as _lax_special
import fungrad.numpy as fnp

__all__ = ["gammainc", "gammaincc", "betainc", "betaln", "beta", "gamma", "gammasgn",
           "multigammaln", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri",
           "rel_entr", "kl_div", "poch", "factorial"]


def _real_only(fun):
    """``fun`` is defined for real arguments only (as in JAX): a complex argument
    raises a TypeError naming the function and the dtype, instead of an error
    from a primitive deep inside or a meaningless complex result."""
    @functools.wraps(fun)
    def real_only(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            if a is None or isinstance(a, (str, bool)):
                continue
            dtype = fnp.result_type(a)
            if dtype_issubdtype(dtype, np.complexfloating):
                raise TypeError(f"scipy.special.{fun.__name__} is defined for real inputs "
                                f"only (as in JAX), got {dtype.name}; pass the real part "
                                "(x.real) or the modulus (abs(x)) if that is what you mean.")
        return fun(*args, **kwargs)
    return real_only


def _promote_inexact(*args):
    """One common floating dtype (integers and bools become float64), with
    NumPy 2's weak Python scalars, broadcast to a common shape."""
    dtype = fnp.result_type(*args)
    if not is_inexact(dtype):
        dtype = np.dtype(np.float64)
    arrays = [fnp.asarray(a, dtype=dtype) for a in args]
    return fnp.broadcast_arrays(*arrays) if len(arrays) > 1 else arrays


# ----------------------------------------------------------------------------
# Incomplete gamma and beta
# ----------------------------------------------------------------------------

@_real_only
def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x)."""
    a, x = _promote_inexact(a, x)
    return _lax_special.igamma(a, x)


@_real_only
def gammaincc(a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    a, x = _promote_inexact(a, x)
    return _lax_special.igammac(a, x)


@_real_only
def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b) (differentiable in x only, as in JAX)."""
    a, b, x = _promote_inexact(a, b, x)
    return _lax_special.betainc(a, b, x)


# ----------------------------------------------------------------------------
# Gamma and beta functions with signs
# ----------------------------------------------------------------------------

@_real_only
def gammasgn(x):
    """Sign of Gamma(x): 1 for x > 0, (-1)^ceil(-x) for non-integer x < 0, ±1
    at ±0 (Gamma's sign on that side of the pole), nan at the negative
    integers, -inf and nan (JAX's and SciPy's)."""
    (x,) = _promote_inexact(x)
    floor = fnp.floor(x)
    odd = fnp.remainder(floor, 2) == 1
    negative_sign = fnp.where(odd, -1.0, 1.0).astype(x.dtype)
    sign = fnp.where(x > 0, fnp.ones_like(x), negative_sign)
    sign = fnp.where(x == 0, fnp.copysign(fnp.ones_like(x), x), sign)
    pole = (x < 0) & (floor == x)
    return lax.stop_gradient(fnp.where(pole | fnp.isnan(x), np.nan, sign))


@_real_only
def gamma(x):
    """Gamma(x) = gammasgn(x) exp(gammaln(x))."""
    (x,) = _promote_inexact(x)
    return gammasgn(x) * fnp.exp(lax.lgamma(x))


@_real_only
def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    a, b = _promote_inexact(a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


@_real_only
def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), with its sign."""
    a, b = _promote_inexact(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * fnp.exp(betaln(a, b))


@_real_only
def multigammaln(a, d):
    """log of the multivariate gamma function of dimension ``d`` (static int):
    d(d-1)/4 log(pi) + sum_{j<d} gammaln(a - j/2)."""
    d = operator.index(d)
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    (a,) = _promote_inexact(a)
    total = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        total = total + lax.lgamma(a - j / 2)
    return total


@_real_only
def poch(z, m):
    """Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z), with signs; 1 at m == 0."""
    z, m = _promote_inexact(z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    value = sign * fnp.exp(lax.lgamma(z + m) - lax.lgamma(z))
    return fnp.where(m == 0, fnp.ones_like(value), value)


@_real_only
def factorial(n, exact=False):
    """n! = Gamma(n + 1) (0 for n < 0), as floats; ``exact=True`` is not
    supported (as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True is not supported "
                                  "(as in JAX); use math.factorial for exact integers")
    (n,) = _promote_inexact(n)
    safe = fnp.where(n < 0, 0.0, n)
    return fnp.where(n < 0, 0.0, fnp.exp(lax.lgamma(safe + 1)))


# ----------------------------------------------------------------------------
# Polygamma and Hurwitz zeta
# ----------------------------------------------------------------------------

@_real_only
def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative integer)."""
    n, x = _promote_inexact(n, x)
    return lax.polygamma(n, x)


@_real_only
def zeta(x, q=None):
    """Hurwitz zeta sum_k (k + q)^-x (x > 1, q > 0)."""
    if q is None:
        raise NotImplementedError("zeta: the Riemann zeta function (q=None) is not "
                                  "implemented, as in JAX; pass q=1 for x > 1")
    x, q = _promote_inexact(x, q)
    return _lax_special.zeta(x, q)


# ----------------------------------------------------------------------------
# Modified Bessel functions of orders 0 and 1
# ----------------------------------------------------------------------------

@_real_only
def i0e(x):
    """exp(-|x|) I0(x)."""
    (x,) = _promote_inexact(x)
    return _lax_special.bessel_i0e(x)


@_real_only
def i1e(x):
    """exp(-|x|) I1(x)."""
    (x,) = _promote_inexact(x)
    return _lax_special.bessel_i1e(x)


@_real_only
def i0(x):
    """I0(x) = exp(|x|) i0e(x)."""
    (x,) = _promote_inexact(x)
    return fnp.exp(fnp.abs(x)) * _lax_special.bessel_i0e(x)


@_real_only
def i1(x):
    """I1(x) = exp(|x|) i1e(x)."""
    (x,) = _promote_inexact(x)
    return fnp.exp(fnp.abs(x)) * _lax_special.bessel_i1e(x)


# ----------------------------------------------------------------------------
# Inverse normal CDF and relative entropies
# ----------------------------------------------------------------------------

@_real_only
def ndtri(p):
    """The inverse of the standard normal CDF: ndtr(ndtri(p)) = p."""
    (p,) = _promote_inexact(p)
    return _lax_special._ndtri(p)


def _entropy_terms(p, q):
    """(inside, p_zero, safe_p, safe_q): the region p > 0, q > 0, the region
    p == 0, q >= 0, and inputs on which every branch is finite."""
    inside = (p > 0) & (q > 0)
    safe_p = fnp.where(inside, p, 1.0)
    safe_q = fnp.where(inside, q, 1.0)
    return inside, (p == 0) & (q >= 0), safe_p, safe_q


@_real_only
def rel_entr(p, q):
    """p log(p/q) for p, q > 0; 0 for p == 0, q >= 0; inf otherwise."""
    p, q = _promote_inexact(p, q)
    inside, p_zero, sp, sq = _entropy_terms(p, q)
    value = sp * fnp.log(sp / sq)
    return fnp.where(inside, value, fnp.where(p_zero, 0.0, np.inf))


@_real_only
def kl_div(p, q):
    """p log(p/q) - p + q for p, q > 0; q for p == 0, q >= 0; inf otherwise."""
    p, q = _promote_inexact(p, q)
    inside, p_zero, sp, sq = _entropy_terms(p, q)
    value = sp * fnp.log(sp / sq) - sp + sq
    return fnp.where(inside, value, fnp.where(p_zero, q, np.inf))
