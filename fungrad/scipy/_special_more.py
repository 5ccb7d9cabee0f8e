"""The rest of ``jax.scipy.special`` (re-exported by ``fungrad.scipy.special``):
``loggamma``, ``erfcx``, ``bessel_jn``, ``comb``, ``hyp1f1``, ``hyp2f1``,
``exp1``, ``expi``, ``expn``, ``sici``, ``fresnel``, ``dawsn``, ``spence``,
``owens_t``, ``wofz``, ``sph_harm_y``, ``bernoulli``, ``boxcox``, ``boxcox1p``.

The transcendental ones are primitives of ``fungrad.lax.special_functions``
(kernels checked against mpmath to about 1e-14); the others are compositions.
All are differentiable where JAX's are (``hyp1f1``/``hyp2f1`` in x only,
``expn`` in x only), vmappable and jittable; values follow SciPy's
conventions (``sici(x)`` gives Ci(|x|) for x < 0, ``spence(x) = Li2(1 - x)``,
``loggamma`` of a negative real is nan).
"""
from __future__ import annotations

import math
import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
from fungrad import lax
from fungrad.core import Tracer
from fungrad.lax import special_functions as _sf
from fungrad.lax.kernels.special_functions import bernoulli_numbers
import fungrad.numpy as fnp
from fungrad.scipy._special_extra import _promote_inexact, _real_only, gammasgn

__all__ = ["loggamma", "erfcx", "bessel_jn", "comb", "hyp1f1", "hyp2f1", "exp1", "expi",
           "expn", "sici", "fresnel", "dawsn", "spence", "owens_t", "wofz", "sph_harm_y",
           "bernoulli", "boxcox", "boxcox1p"]


@_real_only
def loggamma(x):
    """log Gamma(x) for real x > 0 (inf at 0; nan for x < 0, as SciPy's real loggamma)."""
    (x,) = _promote_inexact(x)
    return fnp.where(x < 0, np.nan, lax.lgamma(fnp.where(x < 0, 1.0, x)))


@_real_only
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    (x,) = _promote_inexact(x)
    return _sf.erfcx(x)


@_real_only
def exp1(x):
    """The exponential integral E1(x) = int_1^inf e^(-x t) / t dt (x > 0)."""
    (x,) = _promote_inexact(x)
    return _sf.expn(fnp.ones_like(x), x)


@_real_only
def expi(x):
    """The exponential integral Ei(x) (principal value; -E1(-x) for x < 0)."""
    (x,) = _promote_inexact(x)
    return _sf.expi(x)


@_real_only
def expn(n, x):
    """The generalized exponential integral E_n(x) (n >= 0, truncated to an
    integer as SciPy does); differentiable in x."""
    n, x = _promote_inexact(n, x)
    return _sf.expn(lax.stop_gradient(n), x)


@_real_only
def sici(x):
    """(Si(x), Ci(x)): the sine and cosine integrals (Ci(|x|) for x < 0, as SciPy)."""
    (x,) = _promote_inexact(x)
    return _sf.sici_si(x), _sf.sici_ci(x)


@_real_only
def fresnel(x):
    """(S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    (x,) = _promote_inexact(x)
    return _sf.fresnel_s(x), _sf.fresnel_c(x)


@_real_only
def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    (x,) = _promote_inexact(x)
    return _sf.dawsn(x)


@_real_only
def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x) (x >= 0)."""
    (x,) = _promote_inexact(x)
    return _sf.spence(x)


@_real_only
def owens_t(h, a):
    """Owen's T function 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt."""
    h, a = _promote_inexact(h, a)
    return _sf.owens_t(h, a)


@_real_only
def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function M(a, b, x); differentiable in x."""
    a, b, x = _promote_inexact(a, b, x)
    return _sf.hyp1f1(lax.stop_gradient(a), lax.stop_gradient(b), x)


@_real_only
def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a, b; c; x) for x < 1 (accurate for
    x <= 0.9; the series converges slowly towards 1); differentiable in x."""
    a, b, c, x = _promote_inexact(a, b, c, x)
    return _sf.hyp2f1(lax.stop_gradient(a), lax.stop_gradient(b), lax.stop_gradient(c), x)


@_real_only
def bessel_jn(z, *, v, n_iter=50):
    """J_0(z) .. J_v(z), stacked: shape ``(v + 1, *z.shape)``. ``n_iter`` is
    accepted for JAX's signature: the backward recurrence starts high enough
    for full double precision whatever it is."""
    if isinstance(v, Tracer) or not isinstance(v, (int, np.integer)) or v < 0:
        raise TypeError(f"scipy.special.bessel_jn: `v` (the largest order) must be a "
                        f"non-negative Python int, got {v!r}.")
    (z,) = _promote_inexact(z)
    return _sf.bessel_jn(z, int(v) + 1)


@_real_only
def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda = 0."""
    x, lmbda = _promote_inexact(x, lmbda)
    return _boxcox_of_log(fnp.log(x), lmbda)


@_real_only
def boxcox1p(x, lmbda):
    """Box-Cox of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda = 0."""
    x, lmbda = _promote_inexact(x, lmbda)
    return _boxcox_of_log(fnp.log1p(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
    """expm1(lmbda log x) / lmbda; for |lmbda log x| < 1e-4 its Taylor series
    log x (1 + v/2 + v^2/6 + v^3/24 + v^4/120), v = lmbda log x (the rest is
    below 1e-22), which has the right derivatives in lmbda at 0."""
    v = lmbda * log_x
    small = fnp.abs(v) < 1e-4
    series = log_x * (1 + v * (1 / 2 + v * (1 / 6 + v * (1 / 24 + v / 120))))
    safe = fnp.where(small, 1.0, lmbda)
    return fnp.where(small, series, fnp.expm1(safe * log_x) / safe)


def comb(N, k, *, exact=False, repetition=False):
    """The number of combinations of N things taken k at a time (SciPy's
    ``comb``): Gamma functions for real N, k (0 where k < 0 or k > N);
    ``exact=True`` gives a Python int from concrete integers."""
    if exact:
        return _comb_exact(N, k, repetition)
    N, k = _promote_inexact(N, k)
    if repetition:
        N = N + k - 1
    outside = (k < 0) | (k > N) | (N < 0)
    log_value = lax.lgamma(N + 1) - lax.lgamma(k + 1) - lax.lgamma(N - k + 1)
    sign = gammasgn(N + 1) * gammasgn(k + 1) * gammasgn(N - k + 1)
    value = sign * fnp.exp(log_value)
    # whole N and k give a whole count: round it (exp(lgamma) is a few ulps off),
    # keeping the derivative of the smooth formula
    whole = (fnp.floor(N) == N) & (fnp.floor(k) == k)
    value = value + lax.stop_gradient(fnp.where(whole, fnp.round(value) - value, 0.0))
    return fnp.where(outside, 0.0, value)


def _comb_exact(N, k, repetition):
    values = []
    for name, value in (("N", N), ("k", k)):
        if isinstance(value, Tracer) or np.ndim(value) != 0 or float(value) != int(value):
            raise TypeError(f"scipy.special.comb(exact=True): `{name}` must be a concrete "
                            f"integer, got {value!r}; use exact=False for arrays or traced "
                            "values.")
        values.append(int(value))
    n, kk = values
    if repetition:
        n = n + kk - 1
    return math.comb(n, kk) if 0 <= kk <= n else 0


def bernoulli(n):
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), float64, shape (n + 1,)."""
    if isinstance(n, Tracer) or not isinstance(n, (int, np.integer)) or n < 0:
        raise TypeError(f"scipy.special.bernoulli: `n` must be a non-negative Python int, "
                        f"got {n!r}.")
    return fnp.asarray(np.array(bernoulli_numbers(int(n) + 1)))


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-i z) (complex; real input
    is taken as complex128)."""
    z = fnp.asarray(z)
    if not dtype_issubdtype(z.dtype, np.complexfloating):
        z = z.astype(np.complex64 if z.dtype == np.float32 else np.complex128)
    return _sf.wofz(z)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """Spherical harmonics Y_n^m(theta, phi) (theta the polar angle), with the
    Condon-Shortley phase, as SciPy's ``sph_harm_y``. ``n_max`` (static) bounds
    the degrees; by default it is max(n), which needs a concrete ``n``.
    ``diff_n`` is not supported (as in JAX)."""
    if diff_n is not None:
        raise NotImplementedError("scipy.special.sph_harm_y: diff_n is not supported (as in "
                                  "JAX); differentiate with fungrad.grad/jacfwd instead.")
    n, m = fnp.asarray(n), fnp.asarray(m)
    if n_max is None:
        if isinstance(n, Tracer):
            raise TypeError("scipy.special.sph_harm_y: pass n_max (a Python int) when `n` "
                            "is traced (under jit or vmap).")
        n_max = int(np.max(np.asarray(n), initial=0))
    theta, phi = _promote_inexact(theta, phi)
    n, m, theta, phi = fnp.broadcast_arrays(n, m, theta, phi)
    legendre = _normalized_legendre(n, fnp.abs(m), fnp.cos(theta), fnp.sin(theta), n_max)
    y = legendre * fnp.exp(1j * fnp.abs(m) * phi)
    # Y_n^-m = (-1)^m conj(Y_n^m)
    parity = fnp.where(fnp.remainder(fnp.abs(m), 2) == 1, -1.0, 1.0)
    return fnp.where(m < 0, parity * fnp.conj(y), y)


def _normalized_legendre(n, m, x, s, n_max):
    """sqrt((2n+1)/(4 pi) (n-m)!/(n+m)!) P_n^m(x) (Condon-Shortley phase) at
    each element's own (n, m), by the stable recurrences in n from the diagonal
    P_m^m; s = sqrt(1 - x^2) >= 0."""
    out = fnp.zeros_like(x)
    diagonal = fnp.full_like(x, 1.0 / math.sqrt(4 * math.pi))
    for mm in range(n_max + 1):
        if mm > 0:
            diagonal = -math.sqrt((2 * mm + 1) / (2 * mm)) * s * diagonal
        previous, current = fnp.zeros_like(x), diagonal
        for nn in range(mm, n_max + 1):
            if nn > mm:
                a = math.sqrt((4 * nn * nn - 1) / (nn * nn - mm * mm))
                b = math.sqrt(((nn - 1) ** 2 - mm * mm) / (4 * (nn - 1) ** 2 - 1))
                previous, current = current, a * (x * current - b * previous)
            out = fnp.where((n == nn) & (m == mm), current, out)
    return out
