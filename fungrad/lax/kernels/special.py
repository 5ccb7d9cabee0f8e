"""Pure-NumPy special functions: erf, erfc, erf_inv, lgamma, digamma, polygamma.

NumPy has no implementation of these, and fungrad must not depend on SciPy,
so they are written here from their textbook definitions:

* erf: the everywhere-positive series ``erf(x) = 2/sqrt(pi) e^{-x^2}
  sum_n (2x^2)^n x / (2n+1)!!`` for |x| < 3; erfc's continued fraction
  ``erfc(x) = e^{-x^2}/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))``
  for larger arguments (evaluated backwards at a fixed depth);
* erf_inv: rational approximations in x**2 (|x| <= 0.85) and in
  sqrt(-log(1 - |x|)) (beyond), near-minimax in relative error, fitted once
  with mpmath by ``tools/fit_erf_inv.py``;
* lgamma, digamma: Taylor series around 1 and 2 (coefficients from zeta
  values), the recurrences Gamma(x+1) = x Gamma(x) to reach that window or
  the Stirling/asymptotic series for large x, and the reflection formulas for
  negative x;
* polygamma(n, x), n >= 1: ``(-1)^(n+1) n! zeta(n+1, x)`` with the Hurwitz
  zeta function summed by Euler-Maclaurin, and the n-times differentiated
  reflection formula for negative x.

Accuracy is about 1e-15 relative in float64 away from the zeros of the
functions (where only an absolute error of ~1e-16 is meaningful).  Inputs of
lower precision are computed in float64 and rounded back.  Every function is
vectorised (loops run over series terms, never over elements) and uses only
NumPy, so jit's generated code can call it.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["erf", "erfc", "erf_inv", "erf_inv_into", "ErfInvWriter", "lgamma", "digamma",
           "polygamma"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_EULER_GAMMA = 0.57721566490153286061


def bernoulli_even(count: int) -> list[float]:
    """B_2, B_4, ..., B_{2 count} (exact rationals via the Akiyama-Tanigawa
    algorithm, then rounded to float)."""
    n_max = 2 * count
    row = [Fraction(0)] * (n_max + 1)
    numbers = []
    for m in range(n_max + 1):
        row[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        numbers.append(row[0])          # B_m (with B_1 = +1/2, unused)
    return [float(numbers[2 * k]) for k in range(1, count + 1)]


_B2K = bernoulli_even(12)   # B_2 .. B_24


def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 for integer k >= 2 (Euler-Maclaurin from n = 10)."""
    n = 10
    head = math.fsum(float(i) ** -k for i in range(2, n))
    tail = n ** (1.0 - k) / (k - 1) + 0.5 * n ** -float(k)
    rising = float(k)             # k (k+1) ... (k + 2j - 2)
    for j, b in enumerate(_B2K[:8], start=1):
        tail += b / math.factorial(2 * j) * rising * n ** (-k - 2.0 * j + 1)
        rising *= (k + 2 * j - 1) * (k + 2 * j)
    return head + tail


_ZETA_M1 = [0.0, 0.0] + [_zeta_minus_one(k) for k in range(2, 64)]   # index k


def _as_float64(x):
    """(float64 array, dtype to return) for an input of any float dtype."""
    x = np.asarray(x)
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    return x.astype(np.float64), out_dtype


def _apply(out, mask, fn, *args):
    """``out[mask] = fn(*(a[mask] for a in args))``; skips empty masks."""
    if np.any(mask):
        out[mask] = fn(*(a[mask] for a in args))


# ----------------------------------------------------------------------------
# erf, erfc
# ----------------------------------------------------------------------------

def _exp_minus_square(a):
    """exp(-a^2) without the rounding error of forming a^2 (matters for a > 5):
    a = hi + lo with hi a multiple of 1/16, so hi^2 is exact."""
    hi = np.round(a * 16.0) / 16.0
    return np.exp(-hi * hi) * np.exp(-(a - hi) * (a + hi))


def _erf_series(a):
    """erf(a) for 0 <= a < 3: all terms positive, so no cancellation."""
    a2x2 = 2.0 * a * a
    term = a.copy()
    total = a.copy()
    for n in range(1, 60):
        term = term * a2x2 / (2 * n + 1)
        total = total + term
    return _TWO_OVER_SQRT_PI * _exp_minus_square(a) * total


def _erfc_fraction(a, depth=80):
    """erfc(a) for a >= 1.5 by its continued fraction, evaluated bottom-up."""
    t = a.copy()
    for k in range(depth, 0, -1):
        t = a + (0.5 * k) / t
    return (_TWO_OVER_SQRT_PI / 2.0) * _exp_minus_square(a) / t


def erf(x):
    x, out_dtype = _as_float64(x)
    a = np.abs(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        _apply(out, a < 3.0, _erf_series, a)
        _apply(out, (a >= 3.0) & (a < np.inf), lambda v: 1.0 - _erfc_fraction(v, 40), a)
    out[a == np.inf] = 1.0
    return (np.copysign(out, x)).astype(out_dtype)


def erfc(x):
    x, out_dtype = _as_float64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        _apply(out, (x >= 0) & (x < 1.0), lambda v: 1.0 - _erf_series(v), x)
        _apply(out, (x < 0) & (x > -3.0), lambda v: 1.0 + _erf_series(-v), x)
        _apply(out, (x <= -3.0) & (x > -np.inf), lambda v: 2.0 - _erfc_fraction(-v, 40), x)
        _apply(out, (x >= 1.0) & (x < 1.5), lambda v: _erfc_fraction(v, 200), x)
        _apply(out, (x >= 1.5) & (x < np.inf), _erfc_fraction, x)
    out[x == np.inf] = 0.0
    out[x == -np.inf] = 2.0
    return out.astype(out_dtype)


# ----------------------------------------------------------------------------
# erf_inv: two rational approximations (tools/fit_erf_inv.py computes them)
# ----------------------------------------------------------------------------
# centre, |x| <= 0.85: erf_inv(x) = x P(r) / Q(r), r = 0.85**2 - x**2 (rel. error 7e-17)
_ERF_INV_EDGE = 0.85
_CENTRAL_P = (3.7539858785343203, 36.890540910318749, 136.57101455191095, 237.797104536136,
              198.81243606589588, 72.804458016650852, 9.0458247915675286, 0.16973019658019836)
_CENTRAL_Q = (3.1347679242340049, 33.160661978047538, 134.63611164575012, 264.21290762760464,
              259.76842325471275, 120.33402813467412, 21.987253370487164, 1.0)
# tails: erf_inv(x) = sign(x) P(v) / Q(v), v = sqrt(-log(1 - |x|)) - sqrt(-log(0.15)) (4e-17)
_TAIL_START = 1.3773597877409814
_TAIL_P = (17927.245635225373, 59704.945106279498, 83590.75437190496, 63425.647687108396,
           27883.355688500479, 7001.6233888679044, 924.38776583438835, 54.41137890504786,
           1.0000223931124363)
_TAIL_Q = (17611.948349278919, 40798.293929710602, 40109.704437302303, 20860.35898022497,
           5924.6566160711195, 854.02545857578591, 53.039213613613768, 1.0)


def _horner_into(coefficients, x, out):
    """``out = sum_k coefficients[k] x**k`` in place (``out`` is not ``x``).

    ``coefficients`` are 0-d arrays (``_constants``) and ``out`` is passed
    positionally: NumPy converts a Python float and parses ``out=`` on every
    call, which costs more than the arithmetic on a small piece."""
    multiply, add = np.multiply, np.add
    if coefficients[-1] == 1.0:                     # monic: one call saved
        add(x, coefficients[-2], out)
    else:
        multiply(x, coefficients[-1], out)
        add(out, coefficients[-2], out)
    for c in coefficients[-3::-1]:
        multiply(out, x, out)
        add(out, c, out)
    return out


def _constants(values):
    return tuple(np.asarray(v, np.float64) for v in values)


_CHUNK = 1 << 15      # elements per piece: the temporaries of a piece stay in cache


class ErfInvWriter:
    """Writes ``scale * erf_inv(x)`` piece by piece into the flat float64 array
    ``out``, for float64 pieces with |x| < 1 (callers handle +-1, nan and beyond).

    ``write(x, start)`` evaluates the centre's rational on every element of the
    piece (~30 in-place NumPy calls on cache-sized buffers, no log) and sets the
    tail elements (|x| > 0.85, 15% of uniform inputs) aside; they are evaluated
    together, with the logarithm and their own rational, whenever a piece's
    worth has gathered and at ``finish()``: on small pieces the per-call cost
    of NumPy would exceed their arithmetic. Accurate to ~4 ulps.
    """

    def __init__(self, out, scale=1.0):
        self.out = out
        self._central_p = _constants(c * scale for c in _CENTRAL_P)
        self._tail_p = _constants(c * scale for c in _TAIL_P)
        self._r = self._denominator = self._tails = None
        self._tail_positions, self._tail_x, self._pending = [], [], 0

    def write(self, x, start, overwrite_x=False):
        """The piece ``x`` (any shape) goes to ``out[start:start + x.size]``;
        ``overwrite_x``: x's buffer may hold a temporary (one buffer fewer in cache)."""
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
        out = self.out[start:start + x.size]
        if self._r is None or self._r.size < x.size:
            self._r, self._denominator = np.empty(x.size), np.empty(x.size)
        r = self._r[:x.size]
        np.multiply(x, x, r)
        np.subtract(_EDGE_SQUARED, r, r)            # >= 0 in the centre
        tail = np.flatnonzero(np.less(r, _ZERO))    # x**2 > 0.85**2
        if tail.size:
            self._tail_x.append(x.take(tail))
            tail += start
            self._tail_positions.append(tail)
            self._pending += tail.size
        with np.errstate(all="ignore"):             # tail elements: overwritten later
            _horner_into(self._central_p, r, out)
            np.multiply(out, x, out)
            denominator = x if overwrite_x else self._denominator[:x.size]
            np.divide(out, _horner_into(_CENTRAL_Q_0D, r, denominator), out=out)
        if self._pending >= _CHUNK:
            self._write_tails()

    def finish(self):
        self._write_tails()
        return self.out

    def _write_tails(self):
        n = self._pending
        if not n:
            return
        if self._tails is None or self._tails[0].size < n:    # reused: no page faults
            capacity = max(n, 2 * _CHUNK)
            self._tails = [np.empty(capacity) for _ in range(4)] + [np.empty(capacity, np.intp)]
        x, v, value, denominator, positions = (b[:n] for b in self._tails)
        np.concatenate(self._tail_x, out=x)
        np.concatenate(self._tail_positions, out=positions)
        np.abs(x, out=v)
        np.subtract(_ONE, v, out=v)                 # exact: |x| > 1/2
        np.log(v, out=v)
        np.negative(v, out=v)
        np.sqrt(v, out=v)
        np.subtract(v, _TAIL_START_0D, out=v)
        _horner_into(self._tail_p, v, value)
        np.divide(value, _horner_into(_TAIL_Q_0D, v, denominator), out=value)
        self.out[positions] = np.copysign(value, x, out=value)
        self._tail_positions, self._tail_x, self._pending = [], [], 0


_CENTRAL_Q_0D, _TAIL_Q_0D = _constants(_CENTRAL_Q), _constants(_TAIL_Q)
_EDGE_SQUARED, _ZERO, _ONE = np.asarray(_ERF_INV_EDGE ** 2), np.asarray(0.0), np.asarray(1.0)
_TAIL_START_0D = np.asarray(_TAIL_START)


def erf_inv_into(x, out, scale=1.0):
    """``out[...] = scale * erf_inv(x)`` for a float64 array ``x`` with |x| < 1
    (``out``: float64, x's shape); returns ``out``."""
    contiguous = out.flags.c_contiguous
    flat = out.reshape(-1) if contiguous else np.empty(out.size)
    writer = ErfInvWriter(flat, scale)
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    for start in range(0, x.size, _CHUNK):
        writer.write(x[start:start + _CHUNK], start)
    writer.finish()
    if not contiguous:
        out[...] = flat.reshape(out.shape)
    return out


def erf_inv(x):
    x, out_dtype = _as_float64(x)
    flat = x.reshape(-1)
    p = np.abs(flat)
    inside = p < 1.0
    out = np.empty(flat.shape)
    with np.errstate(all="ignore"):
        erf_inv_into(np.where(inside, flat, 0.0), out)
    out[~inside] = np.nan
    out[p == 1.0] = np.inf
    return np.copysign(out, flat).reshape(x.shape).astype(out_dtype, copy=False)


# ----------------------------------------------------------------------------
# lgamma, digamma: series around 1 and 2, recurrences, reflection
# ----------------------------------------------------------------------------

def _sinpi(x):
    """sin(pi x) with the argument reduced exactly to [-1/2, 1/2] first, so that
    it stays accurate for large x and near the integers."""
    nearest = np.round(x)
    sign = np.where(np.fmod(nearest, 2.0) == 0, 1.0, -1.0)
    return sign * np.sin(math.pi * (x - nearest))


def _tanpi(x):
    r = x - np.round(x)                            # tan has period 1
    return np.tan(math.pi * r)


def lgamma1p(z):
    """lgamma(1 + z), |z| <= 0.5: -gamma z + sum_k (-1)^k zeta(k)/k z^k."""
    total = np.zeros_like(z)
    for k in range(63, 1, -1):                     # Horner, smallest terms first
        total = (total + (-1) ** k * (_ZETA_M1[k] + 1.0) / k) * z
    return (total - _EULER_GAMMA) * z


def _lgamma_near_two(z):
    """lgamma(2 + z), |z| <= 0.75: (1-gamma) z + sum_k (-1)^k (zeta(k)-1)/k z^k."""
    total = np.zeros_like(z)
    for k in range(63, 1, -1):
        total = (total + (-1) ** k * _ZETA_M1[k] / k) * z
    return (total + 1.0 - _EULER_GAMMA) * z


def _lgamma_stirling(x):
    """lgamma(x) for x >= 10 (Stirling's series; error < 1e-17 relative)."""
    inv = 1.0 / x
    inv2 = inv * inv
    series = np.zeros_like(x)
    for k in range(8, 0, -1):
        series = series * inv2 + _B2K[k - 1] / (2 * k * (2 * k - 1))
    return (x - 0.5) * np.log(x) - x + 0.5 * math.log(2 * math.pi) + series * inv


def lgamma_positive(x):
    out = np.empty_like(x)
    _apply(out, x < 0.5, lambda v: lgamma1p(v) - np.log(v), x)
    _apply(out, (x >= 0.5) & (x < 1.25), lambda v: lgamma1p(v - 1.0), x)
    _apply(out, (x >= 1.25) & (x < 2.75), lambda v: _lgamma_near_two(v - 2.0), x)
    _apply(out, (x >= 2.75) & (x < 10.0), _lgamma_by_recurrence, x)
    _apply(out, x >= 10.0, _lgamma_stirling, x)
    return out


def _lgamma_by_recurrence(x):
    """2.75 <= x < 10: lgamma(x) = lgamma(x - n) + log((x-1)...(x-n)), x-n near 2."""
    steps = np.ceil(x - 2.75).astype(int)           # 1..8
    product = np.ones_like(x)
    for k in range(1, int(steps.max()) + 1):
        product = np.where(k <= steps, product * (x - k), product)
    return _lgamma_near_two(x - steps - 2.0) + np.log(product)


def lgamma(x):
    x, out_dtype = _as_float64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        positive = x > 0
        _apply(out, positive, lgamma_positive, x)
        negative = (x <= 0) & np.isfinite(x)
        pole = negative & (x == np.floor(x))
        _apply(out, negative & ~pole, lambda v: np.log(math.pi / np.abs(_sinpi(v)))
               - lgamma_positive(1.0 - v), x)
        out[pole | np.isinf(x)] = np.inf
    return out.astype(out_dtype)


def _digamma_near_one(z):
    """digamma(1 + z), |z| <= 0.5: -gamma + sum_k (-1)^k zeta(k) z^(k-1)."""
    total = np.zeros_like(z)
    for k in range(63, 1, -1):
        total = total * z + (-1) ** k * (_ZETA_M1[k] + 1.0)
    return total * z - _EULER_GAMMA


def _digamma_near_two(z):
    """digamma(2 + z), |z| <= 0.75: 1 - gamma + sum_k (-1)^k (zeta(k)-1) z^(k-1)."""
    total = np.zeros_like(z)
    for k in range(63, 1, -1):
        total = total * z + (-1) ** k * _ZETA_M1[k]
    return total * z + 1.0 - _EULER_GAMMA


def _digamma_asymptotic(x):
    """digamma(x) for x >= 10: log x - 1/(2x) - sum_k B_2k / (2k x^2k)."""
    inv2 = 1.0 / (x * x)
    series = np.zeros_like(x)
    for k in range(8, 0, -1):
        series = series * inv2 + _B2K[k - 1] / (2 * k)
    return np.log(x) - 0.5 / x - series * inv2


def _digamma_by_recurrence(x):
    """2.75 <= x < 10: digamma(x) = digamma(x - n) + sum_k 1/(x - k)."""
    steps = np.ceil(x - 2.75).astype(int)
    total = np.zeros_like(x)
    for k in range(1, int(steps.max()) + 1):
        total = np.where(k <= steps, total + 1.0 / (x - k), total)
    return _digamma_near_two(x - steps - 2.0) + total


def digamma_positive(x):
    out = np.empty_like(x)
    _apply(out, x < 0.5, lambda v: _digamma_near_one(v) - 1.0 / v, x)
    _apply(out, (x >= 0.5) & (x < 1.25), lambda v: _digamma_near_one(v - 1.0), x)
    _apply(out, (x >= 1.25) & (x < 2.75), lambda v: _digamma_near_two(v - 2.0), x)
    _apply(out, (x >= 2.75) & (x < 10.0), _digamma_by_recurrence, x)
    _apply(out, x >= 10.0, _digamma_asymptotic, x)
    return out


def digamma(x):
    x, out_dtype = _as_float64(x)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        _apply(out, x > 0, digamma_positive, x)
        negative = (x <= 0) & np.isfinite(x) & (x != np.floor(x))   # poles stay nan
        _apply(out, negative, lambda v: digamma_positive(1.0 - v)
               - math.pi / _tanpi(v), x)
        out[x == np.inf] = np.inf
    return out.astype(out_dtype)


# ----------------------------------------------------------------------------
# polygamma(n, x), n >= 1, via the Hurwitz zeta function
# ----------------------------------------------------------------------------

def _hurwitz_zeta(s, x):
    """zeta(s, x) = sum_k (x + k)^-s for s >= 2, x > 0 (Euler-Maclaurin, N = 10)."""
    total = np.zeros_like(x)
    for k in range(10):
        total = total + (x + k) ** -s
    a = x + 10.0
    total = total + a ** (1.0 - s) / (s - 1.0) + 0.5 * a ** -s
    rising = s.copy()                                  # s (s+1) ... (s + 2j - 2)
    power = a ** (-s - 1.0)
    inv2 = 1.0 / (a * a)
    for j in range(1, 13):
        total = total + _B2K[j - 1] / math.factorial(2 * j) * rising * power
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        power = power * inv2
    return total


def _cot_derivative_poly(n: int) -> np.ndarray:
    """Coefficients (increasing powers) of P_n with d^n/du^n cot(u) = P_n(cot u)."""
    poly = np.array([0.0, 1.0])                         # P_0(c) = c
    minus_one_plus_c2 = np.array([-1.0, 0.0, -1.0])     # d cot/du = -(1 + c^2)
    for _ in range(n):
        poly = np.polynomial.polynomial.polymul(
            np.polynomial.polynomial.polyder(poly), minus_one_plus_c2)
    return poly


def _polygamma_positive(n, x):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for x > 0, n >= 1."""
    sign = np.where(n % 2 == 1, 1.0, -1.0)
    factorial = np.exp(lgamma_positive(n + 1.0))
    factorial = np.where(n <= 20, np.round(factorial), factorial)   # exact for small n
    return sign * factorial * _hurwitz_zeta(n + 1.0, x)


def _polygamma_reflected(n, x):
    """x < 0: psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1) P_n(cot(pi x))."""
    cot = 1.0 / _tanpi(x)
    out = np.empty_like(x)
    for order in np.unique(n).astype(int):
        m = n == order
        poly_value = np.polynomial.polynomial.polyval(cot[m], _cot_derivative_poly(order))
        out[m] = ((-1.0) ** order * _polygamma_positive(n[m], 1.0 - x[m])
                  - math.pi ** (order + 1) * poly_value)
    return out


def polygamma(n, x):
    """The n-th derivative of digamma; n must be a non-negative integer (else nan)."""
    n, x = np.broadcast_arrays(*(np.asarray(v) for v in (n, x)))
    x64, out_dtype = _as_float64(x)
    n64 = n.astype(np.float64)
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        valid = (n64 >= 0) & (n64 == np.floor(n64))
        _apply(out, valid & (n64 == 0), digamma, x64)
        higher = valid & (n64 >= 1)
        _apply(out, higher & (x64 > 0), _polygamma_positive, n64, x64)
        finite_neg = higher & (x64 <= 0) & np.isfinite(x64)
        pole = finite_neg & (x64 == np.floor(x64))
        _apply(out, finite_neg & ~pole, _polygamma_reflected, n64, x64)
        # at a pole psi^(n) ~ (-1)^(n+1) n! / (x-k)^(n+1): +inf for odd n
        out[pole] = np.where(n64[pole] % 2 == 1, np.inf, np.nan)
        out[higher & (x64 == np.inf)] = 0.0
    return out.astype(out_dtype)
