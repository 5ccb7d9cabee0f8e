"""Pure-NumPy special functions of the gamma and zeta family: incomplete gamma
and beta functions, exponentially scaled Bessel functions, the Hurwitz zeta
function and the inverse normal CDF.

Like every kernel, this module needs only NumPy, the standard library and
its sibling kernels (``fungrad.export`` copies its source, and that of
``kernels/special.py`` whose ``lgamma``/``digamma`` for positive arguments it
uses, into exported code).  The methods are textbook ones:

* ``igamma``/``igammac`` (regularized P and Q): the power series of P for
  x <= a + 1, Legendre's continued fraction for Q (modified Lentz) beyond;
  for a < 1 in the series region Q is summed directly as
  ``1 - x^a/Gamma(a+1) - x^a/Gamma(a) sum_{n>=1} (-x)^n/(n!(a+n))`` so that a
  small Q keeps its relative accuracy.  The prefactor x^a e^-x / Gamma(a) uses
  Stirling's form ``sqrt(a/2pi) exp(a(log1p(t) - t) - mu(a))`` for a >= 10;
* ``igamma_grad_a`` and ``random_gamma_grad``: the same series and continued
  fraction differentiated term by term with respect to a (forward-mode
  Lentz);
* ``betainc``: the classic continued fraction for I_x(a, b) with the
  symmetry I_x(a, b) = 1 - I_{1-x}(b, a) past the mean;
* ``bessel_i0e``/``bessel_i1e``: the power series times e^-|x| for |x| < 20,
  Hankel's asymptotic series beyond;
* ``zeta``: Euler-Maclaurin summation;
* ``ndtri``: an Abramowitz-Stegun first guess refined by Halley steps on
  ``math.erfc`` in the tails, Halley steps on ``math.erf`` from the linear
  term within 1/4 of p = 1/2 (relative accuracy there: ndtri(1/2) = 0).

Accuracy (float64): about 1e-14 relative for igamma/igammac/betainc with
parameters up to a few hundred (limited by the prefactor), 1e-15 for the
Bessel functions, zeta and ndtri.  Lower precision inputs are computed in
float64 and rounded back.  Loops run over series terms, never elements.
"""
from __future__ import annotations

import math

import numpy as np

from fungrad.lax.kernels.special import polygamma as _polygamma
from fungrad.lax.kernels.special import (bernoulli_even, digamma_positive, lgamma1p,
                                         lgamma_positive)

__all__ = ["igamma", "igammac", "igamma_grad_a", "igamma_da", "gamma_density_da",
           "random_gamma_grad", "betainc",
           "bessel_i0e", "bessel_i1e", "zeta", "ndtri"]

_EPS = 1e-16
_TINY = 1e-300
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_ITERATIONS = {}     # last iteration counts (diagnostics for tests)

_B2K = bernoulli_even(14)
# Stirling: lgamma(a) = (a - 1/2) log a - a + log sqrt(2 pi) + sum_k c_k a^(1-2k)
_STIRLING = [b / ((2 * k + 2) * (2 * k + 1)) for k, b in enumerate(_B2K[:9])]


def _f64(*args):
    """float64 arrays broadcast together, and the dtype to round back to."""
    arrays = [np.asarray(a) for a in args]
    dtype = np.result_type(*arrays)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    return [a.astype(np.float64) for a in np.broadcast_arrays(*arrays)], dtype


def _out(value, dtype):
    return np.asarray(value, dtype=np.float64).astype(dtype)


# ----------------------------------------------------------------------------
# Hurwitz zeta (also gives the Taylor coefficients of lgamma(1 + z))
# ----------------------------------------------------------------------------

def _hurwitz(s, q):
    """sum_k (q + k)^-s for s > 1, q > 0 (no domain checks): direct sum up to
    w = q + N >= max(12, s), then Euler-Maclaurin with 14 Bernoulli terms."""
    n = np.clip(np.ceil(np.maximum(12.0, s) - q), 0, 500)
    total = np.zeros(np.shape(s))
    with np.errstate(over="ignore", under="ignore"):
        for k in range(int(n.max(initial=0))):
            total += np.where(k < n, (q + k) ** -s, 0.0)
        w = q + n
        total += w ** (1 - s) / (s - 1) + 0.5 * w ** -s
        rising, power, fact = s, w ** (-s - 1), 2.0
        for j, b in enumerate(_B2K, start=1):
            total += b / fact * rising * power
            rising = rising * (s + 2 * j - 1) * (s + 2 * j)
            power = power / (w * w)
            fact *= (2 * j + 1) * (2 * j + 2)
    return total


def _stirling_mu(a):
    """lgamma(a) - [(a - 1/2) log a - a + log sqrt(2 pi)] for a >= 10."""
    inv2 = 1.0 / (a * a)
    total = np.zeros(np.shape(a))
    for c in reversed(_STIRLING):
        total = total * inv2 + c
    return total / a


# ----------------------------------------------------------------------------
# Incomplete gamma: P, Q, dP/da and the implicit derivative of gamma samples
# ----------------------------------------------------------------------------

def _log_prefix(a, x):
    """log(x^a e^-x / Gamma(a)) for a > 0, x >= 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        small = a * np.log(x) - x - lgamma_positive(a)
        ab = np.maximum(a, 10.0)
        t = (x - ab) / ab
        big = ab * (np.log1p(t) - t) + 0.5 * np.log(ab / (2 * np.pi)) - _stirling_mu(ab)
    return np.where(a >= 10, big, small)


def _gamma_series(a, x):
    """P = e^lp / a * S and dP/da = e^lp / a * (S (log x - psi(a+1)) + dS/da),
    S = sum_n x^n / ((a+1)...(a+n)).  Returns (S, dS/da)."""
    term, dterm = np.ones(a.shape), np.zeros(a.shape)
    s, ds = np.ones(a.shape), np.zeros(a.shape)
    harmonic = np.zeros(a.shape)
    for n in range(1, 20000):
        term = term * x / (a + n)
        harmonic = harmonic + 1.0 / (a + n)
        dterm = -term * harmonic
        s, ds = s + term, ds + dterm
        if np.all((term <= _EPS * s) & (np.abs(dterm) <= _EPS * np.abs(ds) + _TINY)):
            break
    return s, ds


def _gamma_fraction(a, x):
    """F with Q = e^lp F (Legendre's fraction 1/(x+1-a- 1(1-a)/(x+3-a- ...))),
    and dF/da; forward-mode derivative of the modified Lentz iteration."""
    f = x + 1 - a
    df = -np.ones(a.shape)
    c, dc = f, df
    d, dd = np.zeros(a.shape), np.zeros(a.shape)
    done = np.zeros(a.shape, bool)
    for n in range(1, 20000):
        an, dan = -n * (n - a), float(n)
        bn = x + 2 * n + 1 - a
        draw = bn + an * d
        draw = np.where(np.abs(draw) < _TINY, _TINY, draw)
        ddraw = -1.0 + dan * d + an * dd
        d, dd = 1.0 / draw, -ddraw / (draw * draw)
        dc = -1.0 + dan / c - an * dc / (c * c)
        c = bn + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        delta, ddelta = c * d, dc * d + c * dd
        # converged entries stay frozen: multiplying by 1 +- ulp forever drifts
        f, df = np.where(done, f, f * delta), np.where(done, df, df * delta + f * ddelta)
        done = done | ((np.abs(delta - 1) <= _EPS)
                       & (np.abs(ddelta) <= 4 * _EPS * (np.abs(dc * d) + np.abs(c * dd))))
        if done.all():
            break
    _ITERATIONS["gamma_fraction"] = n
    return 1.0 / f, -df / (f * f)


def _q_small_a(a, x):
    """Q for a < 1, x <= a + 1 without cancellation:
    -expm1(a log x - lgamma(1+a)) - x^a/Gamma(a) sum_{n>=1} (-x)^n / (n! (a+n))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lg1 = np.where(a < 0.5, lgamma1p(np.minimum(a, 0.5)), lgamma_positive(a + 1))
        head = -np.expm1(a * np.log(x) - lg1)
        total, term = np.zeros(a.shape), np.ones(a.shape)
        for n in range(1, 80):
            term = term * -x / n
            total = total + term / (a + n)
        return head - np.exp(a * np.log(x) - lgamma_positive(a)) * total


def _igamma_parts(a, x):
    """(P, Q, dP/da, dx/da of a Gamma(a) sample at x) for a > 0, x > 0."""
    lp = _log_prefix(a, x)
    use_series = x <= a + 1
    xs = np.where(use_series, x, 0.0)
    s, ds = _gamma_series(np.where(use_series, a, 1.0), xs)
    xf = np.where(use_series, 2.0 + a, x)
    frac, dfrac = _gamma_fraction(np.where(use_series, 1.0, a), xf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.exp(lp)
        lx = np.log(x)
        series_d = s * (lx - digamma_positive(a + 1)) + ds
        frac_d = frac * (lx - digamma_positive(a)) + dfrac
        p_series = scale / a * s
        q_frac = scale * frac
        small_a = use_series & (a < 1)
        q_small = _q_small_a(np.where(small_a, a, 0.5), np.where(small_a, x, 0.5))
        p = np.where(use_series, p_series, 1 - q_frac)
        q = np.where(small_a, q_small, np.where(use_series, 1 - p_series, q_frac))
        dp_da = np.where(use_series, scale / a * series_d, -scale * frac_d)
        sample_grad = np.where(use_series, -x / a * series_d, x * frac_d)
    return p, q, dp_da, sample_grad


def _igamma_all(a, x):
    """_igamma_parts with the domain handled: nan for a <= 0 or x < 0 (or nan),
    P = 0 at x = 0, P = 1 at x = inf."""
    (a, x), dtype = _f64(a, x)
    bad = ~((a > 0) & (x >= 0))
    zero, inf = (x == 0) & ~bad, np.isinf(x) & ~bad & np.isfinite(a)
    ok = ~(bad | zero | inf) & np.isfinite(a)
    parts = _igamma_parts(np.where(ok, a, 1.0), np.where(ok, x, 1.0))
    p, q, dp, sg = (np.where(ok, v, np.nan) for v in parts)
    p = np.where(zero, 0.0, np.where(inf, 1.0, p))
    q = np.where(zero, 1.0, np.where(inf, 0.0, q))
    dp = np.where(zero | inf, 0.0, dp)
    sg = np.where(zero, 0.0, sg)
    return p, q, dp, sg, dtype


def igamma(a, x):
    """Regularized lower incomplete gamma P(a, x)."""
    p, _, _, _, dtype = _igamma_all(a, x)
    return _out(p, dtype)


def igammac(a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    _, q, _, _, dtype = _igamma_all(a, x)
    return _out(q, dtype)


def igamma_grad_a(a, x):
    """dP(a, x)/da."""
    _, _, dp, _, dtype = _igamma_all(a, x)
    return _out(dp, dtype)


def random_gamma_grad(a, x):
    """d sample / d a for a Gamma(a, 1) sample x: -(dP/da) / (dP/dx)."""
    _, _, _, sg, dtype = _igamma_all(a, x)
    return _out(sg, dtype)


# ----------------------------------------------------------------------------
# Derivatives of P(a, x) and of the gamma density of any order in a, by
# Taylor-mode arithmetic: a "jet" is the array (c_0, ..., c_K) of Taylor
# coefficients in eps of a quantity at a + eps (leading axis), and the series and
# continued fraction above are run on jets; the k-th derivative is k! c_k.
# ----------------------------------------------------------------------------

def _jet_mul(u, v):
    """Coefficients of the product of two jets (truncated at the same order)."""
    out = np.zeros(np.broadcast_shapes(u.shape, v.shape))
    for k in range(out.shape[0]):
        out[k] = sum(u[i] * v[k - i] for i in range(k + 1))
    return out


def _jet_recip(u):
    out = np.zeros(u.shape)
    out[0] = 1.0 / u[0]
    for k in range(1, u.shape[0]):
        out[k] = -sum(u[i] * out[k - i] for i in range(1, k + 1)) / u[0]
    return out


def _jet_exp(u):
    out = np.zeros(u.shape)
    out[0] = np.exp(u[0])
    for k in range(1, u.shape[0]):
        out[k] = sum(i * u[i] * out[k - i] for i in range(1, k + 1)) / k
    return out


def _linear_jet(value, slope, order):
    """The jet of value + slope * eps."""
    out = np.zeros((order + 1,) + np.shape(value))
    out[0] = value
    if order:
        out[1] = slope
    return out


def _log_gamma_tail_jet(a, order):
    """Coefficients k >= 2 of -lgamma(a + eps): -psi^(k-1)(a) / k!, in a jet."""
    out = np.zeros((order + 1,) + a.shape)
    for k in range(2, order + 1):
        out[k] = -_polygamma(np.full(a.shape, k - 1.0), a) / math.factorial(k)
    return out


def _series_jet(a, x, order):
    """S(a + eps), S = sum_n x^n / ((a+1)...(a+n)), as a jet."""
    term = _linear_jet(np.ones(a.shape), 0.0, order)
    total = term.copy()
    for n in range(1, 20000):
        # 1/(a + n + eps) = sum_k (-1)^k eps^k / (a + n)^(k+1)
        inverse = np.stack([(-1.0) ** k / (a + n) ** (k + 1) for k in range(order + 1)])
        term = _jet_mul(term, x * inverse)
        total = total + term
        if np.all(np.abs(term) <= _EPS * np.abs(total) + _TINY):
            break
    return total


def _fraction_jet(a, x, order):
    """1/f(a + eps) for Legendre's fraction (Q = e^lp / f), as a jet, by the
    modified Lentz iteration on jets (converged entries are frozen)."""
    f = _linear_jet(x + 1 - a, -1.0, order)
    c, d = f.copy(), np.zeros(f.shape)
    done = np.zeros(a.shape, bool)
    for n in range(1, 20000):
        an = _linear_jet(-n * (n - a), float(n), order)
        bn = _linear_jet(x + 2 * n + 1 - a, -1.0, order)
        d = _jet_recip(bn + _jet_mul(an, d))
        c = bn + _jet_mul(an, _jet_recip(c))
        delta = _jet_mul(c, d)
        f = np.where(done, f, _jet_mul(f, delta))
        settled = (np.abs(delta[0] - 1) <= _EPS) & np.all(np.abs(delta[1:]) <= _EPS * 4, axis=0)
        done = done | settled
        if done.all():
            break
    return _jet_recip(f)


def igamma_da(a, x, *, order):
    """d^order P(a, x) / da^order (order >= 1), by jets of the power series
    (x <= a + 1) or of Legendre's continued fraction (beyond)."""
    (a, x), dtype = _f64(a, x)
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    a1, x1 = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
    use_series = x1 <= a1 + 1
    log_x = np.log(x1)
    with np.errstate(all="ignore"):
        prefix = _log_gamma_tail_jet(a1, order)
        prefix[0] = _log_prefix(a1, x1)
        if order:
            prefix[1] = log_x - digamma_positive(a1)
        scale = _jet_exp(prefix)
        series = _jet_mul(scale, _jet_mul(_series_jet(np.where(use_series, a1, 1.0),
                                                      np.where(use_series, x1, 0.0), order),
                                          _jet_recip(_linear_jet(a1, 1.0, order))))
        upper = _jet_mul(scale, _fraction_jet(np.where(use_series, 1.0, a1),
                                              np.where(use_series, 3.0 + a1, x1), order))
    coefficient = np.where(use_series, series[order], -upper[order])
    out = np.where(ok, coefficient * math.factorial(order), np.nan)
    out = np.where(((x == 0) | (x == np.inf)) & (a > 0) & np.isfinite(a), 0.0, out)
    return _out(out, dtype)


def gamma_density_da(a, x, *, order):
    """d^order/da^order of the gamma density x^(a-1) e^-x / Gamma(a)."""
    (a, x), dtype = _f64(a, x)
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    a1, x1 = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
    with np.errstate(all="ignore"):
        log_density = _log_gamma_tail_jet(a1, order)
        log_density[0] = _log_prefix(a1, x1) - np.log(x1)
        if order:
            log_density[1] = np.log(x1) - digamma_positive(a1)
        value = _jet_exp(log_density)[order] * math.factorial(order)
    out = np.where(ok, value, np.nan)
    out = np.where((x == np.inf) & (a > 0), 0.0, out)
    return _out(out, dtype)


# ----------------------------------------------------------------------------
# Regularized incomplete beta
# ----------------------------------------------------------------------------

def _beta_fraction(a, b, x, y):
    """I_x(a, b) by its continued fraction (good for x < (a+1)/(a+b+2)); y = 1-x."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        log_front = (a * np.log(x) + b * np.log(y) - lgamma_positive(a) - lgamma_positive(b)
                     + lgamma_positive(a + b))
        f = np.ones(a.shape)
        c = np.ones(a.shape)
        d = 1.0 - (a + b) * x / (a + 1)
        d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
        f = d
        done = np.zeros(a.shape, bool)
        for m in range(1, 20000):
            done_pair = np.ones(a.shape, bool)
            for coef in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                         -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
                d = 1.0 + coef * d
                d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
                c = 1.0 + coef / c
                c = np.where(np.abs(c) < _TINY, _TINY, c)
                delta = c * d
                f = np.where(done, f, f * delta)
                done_pair = done_pair & (np.abs(delta - 1) <= _EPS)
            done = done | done_pair
            if done.all():
                break
        return np.exp(log_front) * f / a


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b); nan outside a, b > 0, 0 <= x <= 1."""
    (a, b, x), dtype = _f64(a, b, x)
    ok = (a > 0) & (b > 0) & (x > 0) & (x < 1) & np.isfinite(a) & np.isfinite(b)
    a1, b1 = np.where(ok, a, 1.0), np.where(ok, b, 1.0)
    x1 = np.where(ok, x, 0.5)
    flip = x1 > (a1 + 1) / (a1 + b1 + 2)
    aa, bb = np.where(flip, b1, a1), np.where(flip, a1, b1)
    xx, yy = np.where(flip, 1 - x1, x1), np.where(flip, x1, 1 - x1)
    value = _beta_fraction(aa, bb, xx, yy)
    value = np.where(flip, 1 - value, value)
    edge = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    out = np.where(ok, value, np.nan)
    out = np.where(edge & (x == 0), 0.0, np.where(edge & (x == 1), 1.0, out))
    return _out(out, dtype)


# ----------------------------------------------------------------------------
# Exponentially scaled modified Bessel functions I0, I1
# ----------------------------------------------------------------------------

_BESSEL_SERIES_BELOW = 20.0


def _bessel_series(nu, ax):
    """e^-x I_nu(x) for 0 <= x < 20 (nu = 0, 1): sum (x/2)^(2k+nu) / (k!(k+nu)!)."""
    q = ax * ax / 4
    term = (ax / 2) ** nu
    total = term.copy()
    for k in range(1, 200):
        term = term * q / (k * (k + nu))
        total = total + term
        if np.all(term <= _EPS * total):
            break
    return total * np.exp(-ax)


def _bessel_asymptotic(nu, ax):
    """e^-x I_nu(x) for x >= 20: (2 pi x)^-1/2 sum_k prod_j ((2j-1)^2 - 4nu^2)/(8 j x)."""
    term = np.ones(ax.shape)
    total = term.copy()
    for j in range(1, 60):
        term = term * ((2 * j - 1) ** 2 - 4 * nu * nu) / (8 * j * ax)
        total = total + term
        if np.all(np.abs(term) <= _EPS * np.abs(total)):
            break
    return total / np.sqrt(2 * np.pi * ax)


def _bessel_scaled(nu, x):
    (x,), dtype = _f64(x)
    ax = np.abs(x)
    small = ax < _BESSEL_SERIES_BELOW
    value = np.where(small, _bessel_series(nu, np.where(small, ax, 0.0)),
                     _bessel_asymptotic(nu, np.where(small | ~np.isfinite(ax),
                                                     _BESSEL_SERIES_BELOW, ax)))
    value = np.where(np.isinf(ax), 0.0, np.where(np.isnan(x), np.nan, value))
    if nu == 1:
        value = np.sign(x) * value
    return _out(value, dtype)


def bessel_i0e(x):
    """exp(-|x|) I0(x)."""
    return _bessel_scaled(0, x)


def bessel_i1e(x):
    """exp(-|x|) I1(x)."""
    return _bessel_scaled(1, x)


# ----------------------------------------------------------------------------
# Hurwitz zeta and the inverse normal CDF
# ----------------------------------------------------------------------------

def zeta(x, q):
    """Hurwitz zeta sum_k (q + k)^-x: inf at x == 1, nan for x < 1 or q <= 0."""
    (x, q), dtype = _f64(x, q)
    ok = (x > 1) & (q > 0) & np.isfinite(q)
    value = _hurwitz(np.where(ok, x, 2.0), np.where(ok, q, 1.0))
    value = np.where(ok, value, np.nan)
    value = np.where((x == 1) & (q > 0), np.inf, value)
    value = np.where(np.isinf(q) & (q > 0) & (x > 1), 0.0, value)
    return _out(value, dtype)


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _ndtri_lower(p):
    """x with Phi(x) = p for 0 < p <= 0.5: A&S 26.2.23 guess, 3 Halley steps."""
    t = np.sqrt(-2 * np.log(p))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(3):
        phi = 0.5 * np.asarray(_erfc(-x / math.sqrt(2)), dtype=np.float64)
        density = np.exp(-0.5 * x * x - _HALF_LOG_2PI)
        u = (phi - p) / density
        x = x - u / (1 + 0.5 * x * u)
    return x


_erf = np.frompyfunc(math.erf, 1, 1)


def _ndtri_central(y):
    """x with Phi(x) - 1/2 = y for |y| <= 1/4 (y = p - 1/2, exact): 4 Halley
    steps on erf(x / sqrt 2) / 2 = y from sqrt(2 pi) y.  Relative accuracy
    near p = 1/2, where the tails' form, through Phi(x) - p, has only an
    absolute one (and ndtri(1/2) is exactly 0)."""
    x = y * math.sqrt(2 * math.pi)
    for _ in range(4):
        half_erf = 0.5 * np.asarray(_erf(x / math.sqrt(2)), dtype=np.float64)
        density = np.exp(-0.5 * x * x - _HALF_LOG_2PI)
        u = (half_erf - y) / density
        x = x - u / (1 + 0.5 * x * u)
    return x


def ndtri(p):
    """Inverse of the standard normal CDF; -inf at 0, inf at 1, nan outside."""
    (p,), dtype = _f64(p)
    ok = (p > 0) & (p < 1)
    lower = p <= 0.5
    central = np.abs(p - 0.5) <= 0.25
    q = np.where(ok & ~central, np.where(lower, p, 1 - p), 0.1)
    x = _ndtri_lower(q)
    x = np.where(lower, x, -x)
    x = np.where(central, _ndtri_central(np.where(central, p - 0.5, 0.0)), x)
    x = np.where(ok, x, np.nan)
    x = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, x))
    return _out(x, dtype)
