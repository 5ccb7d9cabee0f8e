"""Pure-NumPy special functions behind the rest of ``jax.scipy.special``: the
scaled complementary error function, exponential integrals, Dawson's
integral, sine/cosine and Fresnel integrals, Spence's function (dilogarithm),
Owen's T function, Kummer's and Gauss's hypergeometric functions and Bessel
functions of the first kind.

Like every kernel, this module needs only NumPy, the standard library and its
sibling kernels.  The methods are textbook ones (Abramowitz & Stegun,
Numerical Recipes ch. 6), chosen so that series have positive terms or are
short wherever possible:

* ``erfcx``: exp(x^2) erfc(x) below 1.5 (with exp(x^2) formed without the
  rounding of x^2), the continued fraction of erfc without its exp factor above;
* ``exp1``/``expn``: the power series for x <= 1, the continued fraction
  (modified Lentz) beyond; ``expi``: the positive power series up to 40, the
  asymptotic series beyond, -E1(-x) for x < 0;
* ``dawsn``: exp(-x^2) sum x^(2k+1)/(k!(2k+1)) (positive terms) for |x| < 7,
  the asymptotic series beyond;
* ``sici``, ``fresnel``: power series for small arguments, complex continued
  fractions (of E1(ix) and of erfc) beyond;
* ``spence``: Li2(1 - x) by the Bernoulli series in -log(1 - y) after the
  reflection and inversion formulas bring the argument into [-1, 1/2];
* ``owens_t``: Gauss-Legendre quadrature of its defining integral on panels
  scaled to the width of the integrand, after T(h, a) = ... - T(ah, 1/a) for
  |a| > 1;
* ``hyp1f1``: the power series after Kummer's transformation makes x >= 0;
  ``hyp2f1``: the power series after Pfaff's transformation makes x >= 0
  (accurate for x <= 0.9, slower towards 1);
* ``bessel_jn``: Miller's backward recurrence, normalised by
  J_0 + 2 sum J_2k = 1.

Accuracy (float64, checked against mpmath in tests/test_special_functions.py):
about 1e-14 relative, except near the zeros of a function (absolute there).
"""
from __future__ import annotations

import math

import numpy as np

from fungrad.lax.kernels.gamma_zeta import _f64
from fungrad.lax.kernels.special import erfc as _erfc

__all__ = ["erfcx", "exp1", "expi", "expn", "dawsn", "sici_si", "sici_ci", "fresnel_s",
           "fresnel_c", "spence", "owens_t", "hyp1f1", "hyp2f1", "bessel_jn"]

_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)
_TINY = 1e-300
_EPS = 1e-17


def _fill(out, mask, fn, *args):
    """``out[mask] = fn(*(a[mask] for a in args))``, skipping empty masks."""
    if np.any(mask):
        out[mask] = fn(*(a[mask] for a in args))


def _lentz_update(h, delta, done):
    """One step of the modified Lentz algorithm on a whole array: multiply the
    convergents of the elements still running by ``delta``, and mark those whose
    factor is 1 to rounding as done (their later factors only add rounding)."""
    h = np.where(done, h, h * delta)
    return h, done | (np.abs(delta - 1.0) <= 3e-16)


def _lentz_fraction(b, numerators, b_step):
    """The continued fraction 1/(b + a_1/(b + s + a_2/(b + 2s + ...))) on a
    whole array by the modified Lentz algorithm: partial numerators
    ``numerators`` (a_1, a_2, ...: an iterable, its length the most terms),
    denominators stepping by ``s = b_step``; iterated until every element has
    converged."""
    c = np.full(b.shape, 1.0 / _TINY, dtype=b.dtype)
    d = 1.0 / b
    h = d.copy()
    done = np.zeros(b.shape, bool)
    for an in numerators:
        b = b + b_step
        d = 1.0 / (an * d + b)
        c = b + an / c
        h, done = _lentz_update(h, c * d, done)
        if np.all(done):
            break
    return h


def _exp_square(a):
    """exp(a^2) without the rounding error of forming a^2: a = hi + lo with hi a
    multiple of 1/16, so hi^2 is exact."""
    hi = np.round(a * 16.0) / 16.0
    return np.exp(hi * hi) * np.exp((a - hi) * (a + hi))


# ----------------------------------------------------------------------------
# erfcx
# ----------------------------------------------------------------------------

def _erfcx_fraction(x, depth=80):
    """exp(x^2) erfc(x) for x >= 1.5: the continued fraction of erfc, bottom-up."""
    t = x.copy()
    for k in range(depth, 0, -1):
        t = x + (0.5 * k) / t
    return 1.0 / (_SQRT_PI * t)


def erfcx(x):
    (x,), dtype = _f64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(over="ignore", invalid="ignore"):
        _fill(out, x < 1.5, lambda v: _exp_square(v) * _erfc(v), x)
        _fill(out, (x >= 1.5) & (x < 1e8), _erfcx_fraction, x)
        _fill(out, x >= 1e8, lambda v: 1.0 / (_SQRT_PI * v), x)
    out[x == -np.inf] = np.inf
    return out.astype(dtype)


# ----------------------------------------------------------------------------
# exponential integrals
# ----------------------------------------------------------------------------

def _expn_fraction(n, x):
    """E_n(x) for x > 1 by the continued fraction (modified Lentz), all
    elements iterated until every one has converged."""
    h = _lentz_fraction(x + n, (-i * (n - 1 + i) for i in range(1, 2000)), 2.0)
    return h * np.exp(-x)


def _expn_series(n, x):
    """E_n(x) for 0 < x <= 1 and integer n >= 1 (A&S 5.1.12): the series, whose
    term k = n - 1 carries the log and digamma part."""
    nm1 = n - 1
    psi = -_EULER + np.array([math.fsum(1.0 / j for j in range(1, int(m) + 1))
                              for m in nm1.ravel()]).reshape(nm1.shape)
    log_x = np.log(x)
    total = np.where(nm1 != 0, 1.0 / np.where(nm1 != 0, nm1, 1.0), -log_x - _EULER)
    fact = np.ones_like(x)
    for i in range(1, 60):
        fact = fact * (-x / i)
        at_log = nm1 == i
        total = total + np.where(at_log, fact * (-log_x + psi),
                                 -fact / np.where(at_log, 1.0, i - nm1))
        if np.all(np.abs(fact) < _EPS * np.abs(total)):
            break
    return total


def expn(n, x):
    (n, x), dtype = _f64(n, x)
    n = np.trunc(n)                      # SciPy truncates a non-integer order
    out = np.full(x.shape, np.nan)
    valid = (n >= 0) & (x >= 0)
    with np.errstate(all="ignore"):
        _fill(out, valid & (n == 0) & (x > 0), lambda v: np.exp(-v) / v, x)
        _fill(out, valid & (x == 0), lambda m: np.where(m > 1, 1.0 / (m - 1), np.inf), n)
        _fill(out, valid & (n >= 1) & (x > 0) & (x <= 1), _expn_series, n, x)
        _fill(out, valid & (n >= 1) & (x > 1) & (x < np.inf), _expn_fraction, n, x)
    out[valid & (x == np.inf)] = 0.0
    return out.astype(dtype)


def exp1(x):
    (x,), dtype = _f64(x)
    return expn(np.ones_like(x), x).astype(dtype)


def _expi_series(x):
    """Ei(x) for 0 < x <= 40: gamma + log x + sum x^k / (k k!), positive terms."""
    term = np.ones_like(x)
    total = np.zeros_like(x)
    for k in range(1, 200):
        term = term * x / k
        total = total + term / k
        if np.all(term < _EPS * k * total):
            break
    return _EULER + np.log(x) + total


def _expi_asymptotic(x):
    """Ei(x) for x > 40: e^x / x sum_k k! / x^k (terms shrink to below 1e-17)."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, 60):
        term = term * k / x
        total = total + term
    with np.errstate(over="ignore"):
        return np.exp(x) / x * total


def expi(x):
    (x,), dtype = _f64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        _fill(out, (x > 0) & (x <= 40), _expi_series, x)
        _fill(out, x > 40, _expi_asymptotic, x)
        _fill(out, x < 0, lambda v: -expn(np.ones_like(v), -v), x)
    out[x == 0] = -np.inf
    return out.astype(dtype)


# ----------------------------------------------------------------------------
# Dawson's integral
# ----------------------------------------------------------------------------

def _dawsn_series(a):
    """F(a) for 0 <= a < 7: exp(-a^2) sum a^(2k+1) / (k! (2k+1)), positive terms."""
    a2 = a * a
    term = a.copy()
    total = a.copy()
    for k in range(1, 400):
        term = term * a2 / k
        total = total + term / (2 * k + 1)
        if np.all(term < _EPS * total):
            break
    return total / _exp_square(a)


def _dawsn_asymptotic(a):
    """F(a) for a >= 7: 1/(2a) sum (2k-1)!! / (2a^2)^k (smallest term < 1e-20)."""
    inv = 1.0 / (2.0 * a * a)
    term = np.ones_like(a)
    total = np.ones_like(a)
    for k in range(1, 40):
        term = term * (2 * k - 1) * inv
        total = total + term
    return total / (2.0 * a)


def dawsn(x):
    (x,), dtype = _f64(x)
    a = np.abs(x)
    out = np.full(x.shape, np.nan)
    _fill(out, a < 7, _dawsn_series, a)
    _fill(out, (a >= 7) & (a < np.inf), _dawsn_asymptotic, a)
    out[a == np.inf] = 0.0
    return np.copysign(out, x).astype(dtype)


# ----------------------------------------------------------------------------
# sine and cosine integrals
# ----------------------------------------------------------------------------

def _sici_series(a):
    """(Si, Ci - gamma - log) for 0 < a <= 4 by their power series."""
    si, ci = a.copy(), np.zeros_like(a)
    term = a.copy()                              # a^k / k!
    for k in range(2, 44, 2):                    # 4^42 / 42! < 1e-26
        term = term * a / k                      # a^k / k!, k even
        sign = -1.0 if k % 4 == 2 else 1.0
        ci = ci + sign * term / k
        term = term * a / (k + 1)                # a^(k+1) / (k+1)!
        si = si + sign * term / (k + 1)
    return si, ci + _EULER + np.log(a)


def _sici_fraction(a):
    """(Si, Ci) for a > 4 from E1(ia) = -Ci(a) + i (Si(a) - pi/2), by the
    continued fraction of E1 at a complex argument (modified Lentz)."""
    h = _lentz_fraction(1.0 + 1j * a, (-(i - 1.0) ** 2 for i in range(2, 1000)), 2.0)
    h = h * (np.cos(a) - 1j * np.sin(a))
    return 0.5 * np.pi + h.imag, -h.real


def _sici(x):
    (x,), dtype = _f64(x)
    a = np.abs(x)
    si = np.full(x.shape, np.nan)
    ci = np.full(x.shape, np.nan)
    small, large = (a > 0) & (a <= 4), (a > 4) & (a < np.inf)
    if np.any(small):
        si[small], ci[small] = _sici_series(a[small])
    if np.any(large):
        si[large], ci[large] = _sici_fraction(a[large])
    si[a == 0], ci[a == 0] = 0.0, -np.inf
    si[a == np.inf], ci[a == np.inf] = 0.5 * np.pi, 0.0
    return np.copysign(si, x).astype(dtype), ci.astype(dtype)   # Ci of |x|, as SciPy


def sici_si(x):
    return _sici(x)[0]


def sici_ci(x):
    return _sici(x)[1]


# ----------------------------------------------------------------------------
# Fresnel integrals S(x) = int_0^x sin(pi t^2 / 2) dt, C(x) likewise with cos
# ----------------------------------------------------------------------------

def _fresnel_series(a):
    """(S, C) for 0 <= a < 1.8: the power series in (pi/2) a^2 (A&S 7.3.11-13)."""
    z = 0.5 * np.pi * a * a
    term = a.copy()                      # a z^k / k!
    c, s = a.copy(), np.zeros_like(a)
    for k in range(1, 80):
        term = term * z / k
        sign = 1.0 if k % 4 in (0, 1) else -1.0
        if k % 2:
            s = s + sign * term / (2 * k + 1)
        else:
            c = c + sign * term / (2 * k + 1)
        if np.all(term < _EPS * np.maximum(a, _TINY) * 1e-2):
            break
    return s, c


def _fresnel_fraction(a):
    """(S, C) for a >= 1.8 by the continued fraction of erfc at a complex
    argument (Numerical Recipes' frenel), modified Lentz."""
    pix2 = np.pi * a * a
    h = _lentz_fraction(1.0 - 1j * pix2, (-k * (k + 1.0) for k in range(1, 1997, 2)), 4.0)
    h = h * (a - 1j * a)
    cs = (0.5 + 0.5j) * (1.0 - (np.cos(0.5 * pix2) + 1j * np.sin(0.5 * pix2)) * h)
    return cs.imag, cs.real


def _fresnel(x):
    (x,), dtype = _f64(x)
    a = np.abs(x)
    s = np.full(x.shape, np.nan)
    c = np.full(x.shape, np.nan)
    small, large = a < 1.8, (a >= 1.8) & (a < np.inf)
    if np.any(small):
        s[small], c[small] = _fresnel_series(a[small])
    if np.any(large):
        s[large], c[large] = _fresnel_fraction(a[large])
    s[a == np.inf], c[a == np.inf] = 0.5, 0.5
    return np.copysign(s, x).astype(dtype), np.copysign(c, x).astype(dtype)


def fresnel_s(x):
    return _fresnel(x)[0]


def fresnel_c(x):
    return _fresnel(x)[1]


# ----------------------------------------------------------------------------
# Spence's function spence(x) = Li2(1 - x) (SciPy's convention)
# ----------------------------------------------------------------------------

def bernoulli_numbers(count):
    """B_0 .. B_{count-1} (B_1 = -1/2) as floats, each the rounding of the exact
    fraction (Akiyama-Tanigawa, which gives B_1 = +1/2: its sign is flipped)."""
    from fractions import Fraction
    column, numbers = [], []
    for m in range(count):
        column.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            column[j - 1] = j * (column[j - 1] - column[j])
        numbers.append(column[0])
    if count > 1:
        numbers[1] = -numbers[1]
    return [float(b) for b in numbers]


_LI2_COEFFICIENTS = [b / math.factorial(n + 1) for n, b in enumerate(bernoulli_numbers(40))]


def _li2_from_u(u):
    """Li2(y) = sum_n B_n u^(n+1) / (n+1)!, u = -log(1 - y), |u| <= log 2."""
    total = np.zeros_like(u)
    for coefficient in reversed(_LI2_COEFFICIENTS):
        total = total * u + coefficient
    return total * u


def _spence_positive(x):
    """Li2(1 - x) for x > 0, using the argument itself (exact) wherever the
    reflection needs 1 - y."""
    out = np.empty_like(x)
    near_one = x <= 0.5                 # y = 1 - x in [1/2, 1): reflection
    middle = (x > 0.5) & (x <= 2.0)     # y in [-1, 1/2): direct, u = -log x
    far = x > 2.0                       # y < -1: inversion, then direct
    xs = x[near_one]
    out[near_one] = (np.pi ** 2 / 6 - np.log(xs) * np.log1p(-xs)
                     - _li2_from_u(-np.log1p(-xs)))
    out[middle] = _li2_from_u(-np.log(x[middle]))
    xf = x[far]
    out[far] = (-np.pi ** 2 / 6 - 0.5 * np.log(xf - 1.0) ** 2
                - _li2_from_u(np.log1p(-1.0 / xf)))
    return out


def spence(x):
    (x,), dtype = _f64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        _fill(out, (x > 0) & (x < np.inf), _spence_positive, x)
    out[x == 0] = np.pi ** 2 / 6
    out[x == 1] = 0.0
    out[x == np.inf] = -np.inf
    return out.astype(dtype)


# ----------------------------------------------------------------------------
# Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt
# ----------------------------------------------------------------------------

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)
_PANEL_EDGES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)      # in units of 1 / (h a)


def _owens_t_small_a(h, a):
    """T(h, a) for h >= 0, 0 <= a <= 1: Gauss-Legendre on panels [e_i, e_i+1] / (h a)
    (clipped to [0, a]), so that each panel resolves the Gaussian factor."""
    scale = 1.0 / np.maximum(h * a, 1.0)          # the integrand's width, as a fraction of a
    total = np.zeros_like(h)
    for lo, hi in zip(_PANEL_EDGES[:-1], _PANEL_EDGES[1:]):
        t_lo = np.minimum(lo * scale, 1.0)
        t_hi = np.minimum(hi * scale, 1.0) if hi != _PANEL_EDGES[-1] else 1.0
        half = 0.5 * (t_hi - t_lo)
        t = (t_lo + half)[..., None] + half[..., None] * _GL_NODES     # fractions of a
        x2 = (a[..., None] * t) ** 2
        f = np.exp(-0.5 * h[..., None] ** 2 * x2) / (1.0 + x2)
        total = total + half * (f @ _GL_WEIGHTS)
    # exp(-h^2 / 2) apart, without the rounding of h^2 (it matters for large h)
    return a * total * _exp_minus_half_square(h) / (2.0 * np.pi)


def _exp_minus_half_square(h):
    """exp(-h^2 / 2), with h = hi + lo and hi a multiple of 1/16 (hi^2 exact)."""
    hi = np.round(h * 16.0) / 16.0
    lo = h - hi
    return np.exp(-0.5 * hi * hi) * np.exp(-0.5 * lo * (2.0 * hi + lo))


def _upper_normal(z):
    """1 - Phi(z) = erfc(z / sqrt 2) / 2, without cancellation."""
    return 0.5 * _erfc(z / math.sqrt(2.0))


def owens_t(h, a):
    (h, a), dtype = _f64(h, a)
    sign = np.sign(a)
    h, a = np.abs(h), np.abs(a)
    out = np.full(h.shape, np.nan)
    with np.errstate(all="ignore"):
        _fill(out, a <= 1, _owens_t_small_a, h, a)
        big = (a > 1) & (a < np.inf)
        if np.any(big):
            hb, ab = h[big], a[big]
            ah = hb * ab
            qh, qah = _upper_normal(hb), _upper_normal(ah)
            # T(h, a) + T(ah, 1/a) = (Phi(h) Q(ah) + Phi(ah) Q(h)) / 2 for h >= 0
            out[big] = 0.5 * ((1 - qh) * qah + (1 - qah) * qh) - _owens_t_small_a(ah, 1.0 / ab)
        _fill(out, a == np.inf, lambda v: 0.5 * _upper_normal(v), h)
    out = np.where(np.isnan(h) | np.isnan(a), np.nan, out)
    return (sign * out).astype(dtype)


# ----------------------------------------------------------------------------
# hypergeometric functions
# ----------------------------------------------------------------------------

def _hyp_series(a_params, b_params, x, max_terms):
    """sum_k prod (a)_k / prod (b)_k x^k / k!, summed until every term is below
    1e-17 of the partial sum (or max_terms)."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(max_terms):
        ratio = x / (k + 1.0)
        for p in a_params:
            ratio = ratio * (p + k)
        for q in b_params:
            ratio = ratio / (q + k)
        term = term * ratio
        total = total + term
        if np.all(np.abs(term) <= _EPS * np.abs(total)):
            break
    return total


def hyp1f1(a, b, x):
    (a, b, x), dtype = _f64(a, b, x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        # Kummer: M(a, b, x) = e^x M(b - a, b, -x) keeps the argument >= 0
        positive = x >= 0
        aa = np.where(positive, a, b - a)
        out = _hyp_series([aa], [b], np.abs(x), 5000) * np.where(positive, 1.0, np.exp(x))
        out = np.where((b <= 0) & (b == np.floor(b)), np.nan, out)
        out = np.where(a == 0, 1.0, out)
    return out.astype(dtype)


def hyp2f1(a, b, c, x):
    (a, b, c, x), dtype = _f64(a, b, c, x)
    with np.errstate(all="ignore"):
        # Pfaff: F(a, b; c; x) = (1 - x)^-a F(a, c - b; c; x / (x - 1)) for x < 0
        negative = x < 0
        z = np.where(negative, x / (x - 1.0), x)
        bb = np.where(negative, c - b, b)
        out = _hyp_series([a, bb], [c], z, 100000) * np.where(negative, (1.0 - x) ** -a, 1.0)
        out = np.where((x >= 1) | ((c <= 0) & (c == np.floor(c))), np.nan, out)
        out = np.where((a == 0) | (b == 0), 1.0, out)
    return out.astype(dtype)


# ----------------------------------------------------------------------------
# Bessel functions of the first kind J_0 .. J_{count-1}
# ----------------------------------------------------------------------------

def bessel_jn(x, *, count):
    """J_0(x) .. J_{count-1}(x) stacked on a new leading axis, by Miller's
    backward recurrence J_{k-1} = (2k / x) J_k - J_{k+1} from an order well
    above both ``count`` and |x|, normalised with J_0 + 2 sum_k J_2k = 1."""
    (x,), dtype = _f64(x)
    a = np.abs(x)
    start = int(max(count, np.max(a, initial=0.0)) + 40 + 2 * np.sqrt(np.max(a, initial=0.0)))
    start += start % 2                                  # even, for the normalisation sum
    safe = np.where(a == 0, 1.0, a)
    table = np.zeros((count,) + x.shape)
    upper, current = np.zeros_like(a), np.full(a.shape, 1e-30)
    norm = np.zeros_like(a)
    for k in range(start, 0, -1):                       # current = J_k (unnormalised)
        if k < count:
            table[k] = current
        if k % 2 == 0:
            norm = norm + 2.0 * current
        lower = (2.0 * k / safe) * current - upper
        upper, current = current, lower
        big = np.abs(current) > 1e250                   # rescale to avoid overflow
        if np.any(big):
            factor = np.where(big, 1e-250, 1.0)
            current, upper, norm = current * factor, upper * factor, norm * factor
            table = table * factor
    table[0] = current
    norm = norm + current
    table = table / norm
    table = np.where(a == 0, (np.arange(count) == 0).reshape((count,) + (1,) * x.ndim) * 1.0,
                     table)
    odd = (np.arange(count) % 2 == 1).reshape((count,) + (1,) * x.ndim)
    table = np.where(odd & (x < 0), -table, table)       # J_n(-x) = (-1)^n J_n(x)
    return table.astype(dtype)


# ----------------------------------------------------------------------------
# the Faddeeva function w(z) = exp(-z^2) erfc(-i z)
# ----------------------------------------------------------------------------

def _weideman_coefficients(n_terms):
    """Coefficients of Weideman's (1994) rational expansion of w in the upper
    half-plane: w(z) = 2 p(Z) / (L - i z)^2 + 1 / (sqrt(pi) (L - i z)),
    Z = (L + i z) / (L - i z), p a polynomial of degree n_terms - 1 whose
    coefficients are the Fourier coefficients of exp(-t^2) (L^2 + t^2) on
    t = L tan(theta / 2)."""
    m = 2 * n_terms
    width = math.sqrt(n_terms / math.sqrt(2.0))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = width * np.tan(theta / 2)
    f = np.concatenate([[0.0], np.exp(-t * t) * (width * width + t * t)])
    a = np.real(np.fft.fftshift(np.fft.fft(np.fft.fftshift(f)))) / (2 * m)
    return width, a[m + 1:m + n_terms + 1][::-1]      # frequencies 1..n, highest first


_WEIDEMAN_L, _WEIDEMAN_A = _weideman_coefficients(48)


def _wofz_upper(z):
    """w(z) for Im z >= 0."""
    denominator = _WEIDEMAN_L - 1j * z
    big_z = (_WEIDEMAN_L + 1j * z) / denominator
    p = np.zeros_like(z)
    for coefficient in _WEIDEMAN_A:
        p = p * big_z + coefficient
    return 2 * p / denominator ** 2 + (1 / _SQRT_PI) / denominator


def _wofz_laplace(z, depth=40):
    """w(z) for |z| >= 8, Im z >= 0: Laplace's continued fraction
    i / sqrt(pi) / (z - (1/2) / (z - 1 / (z - (3/2) / (z - ...)))), bottom-up."""
    t = z.copy()
    for k in range(depth, 0, -1):
        t = z - (0.5 * k) / t
    return 1j / (_SQRT_PI * t)


def wofz(z):
    z = np.asarray(z)
    dtype = z.dtype if z.dtype.kind == "c" else np.dtype(np.complex128)
    z = z.astype(np.complex128)
    upper = np.where(z.imag >= 0, z, -z)
    out = np.empty_like(upper)
    far = np.abs(upper) >= 8
    with np.errstate(all="ignore"):
        _fill(out, far, _wofz_laplace, upper)
        _fill(out, ~far, _wofz_upper, upper)
        # w(z) = 2 exp(-z^2) - w(-z) below the real axis
        out = np.where(z.imag >= 0, out, 2 * np.exp(-z * z) - out)
    return out.astype(dtype)
