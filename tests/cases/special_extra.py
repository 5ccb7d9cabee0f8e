"""Cases for the primitives of fungrad/lax/special.py (incomplete gamma and
beta, scaled Bessel functions, Hurwitz zeta, ndtri).

References: ``scipy.special`` when it is importable, else independent
series evaluated elementwise with the ``math`` module (``_series_refs``).
Arguments whose derivatives JAX does not define (betainc's a and b, zeta's x,
second derivatives of igamma in a) are marked ``diff=False`` or their cases
use ``grad_order=1``.
"""
import math

import numpy as np

from fungrad.lax import special
from tests.harness import Arg, Case

try:
    import scipy.special as _sc
except ImportError:      # pragma: no cover - depends on the environment
    _sc = None


# ----------------------------------------------------------------------------
# References (float64, elementwise)
# ----------------------------------------------------------------------------

def _igamma_series(a, x):
    """P(a, x) by its power series (x <= a + 1) or 1 - Legendre's fraction."""
    if x == 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x <= a + 1:
        term = total = 1.0 / a
        n = 0
        while term > 1e-17 * total:
            n += 1
            term *= x / (a + n)
            total += term
        return math.exp(log_front) * total
    frac = 0.0                       # backward evaluation at a fixed depth
    for n in range(400, 0, -1):
        frac = n * (n - a) / (x + 2 * n + 1 - a - frac)
    return 1 - math.exp(log_front) / (x + 1 - a - frac)


def _betainc_series(a, b, x):
    """I_x(a, b) = x^a/(a B) * sum (1-b)_n x^n a / (n! (a+n)); symmetry past 1/2."""
    if x > 0.5:
        return 1 - _betainc_series(b, a, 1 - x)
    log_b = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    coef, total, n = 1.0, 1.0 / a, 0
    while True:
        n += 1
        coef *= (n - b) * x / n
        term = coef / (a + n)
        total += term
        if abs(term) < 1e-17 * abs(total):
            return math.exp(a * math.log(x) - log_b) * total


def _i_nu_e_series(nu, x):
    ax, q = abs(x), x * x / 4
    term = (ax / 2) ** nu / math.factorial(nu)
    terms, k = [term], 0
    while term > 1e-18 * sum(terms):
        k += 1
        term *= q / (k * (k + nu))
        terms.append(term)
    return math.copysign(1.0, x) ** nu * math.fsum(terms) * math.exp(-ax)


def _zeta_series(s, q):
    n = 40
    head = math.fsum((q + k) ** -s for k in range(n))
    w = q + n
    return (head + w ** (1 - s) / (s - 1) + 0.5 * w ** -s + s / 12 * w ** (-s - 1)
            - s * (s + 1) * (s + 2) / 720 * w ** (-s - 3))


def _vec(fn):
    def ref(*args):
        out = np.vectorize(fn, otypes=[np.float64])(*[np.asarray(a, np.float64) for a in args])
        return out.astype(np.result_type(*args))
    return ref


if _sc is not None:
    igamma_ref, igammac_ref = _sc.gammainc, _sc.gammaincc
    betainc_ref, zeta_ref = _sc.betainc, _sc.zeta
    i0e_ref, i1e_ref = _sc.i0e, _sc.i1e
else:
    igamma_ref = _vec(_igamma_series)
    igammac_ref = _vec(lambda a, x: 1 - _igamma_series(a, x))
    betainc_ref = _vec(_betainc_series)
    zeta_ref = _vec(_zeta_series)
    i0e_ref = _vec(lambda x: _i_nu_e_series(0, x))
    i1e_ref = _vec(lambda x: _i_nu_e_series(1, x))


def igamma_grad_a_ref(a, x, h=1e-5):
    return (igamma_ref(a + h, x) - igamma_ref(a - h, x)) / (2 * h)


def igamma_da2_ref(a, x, h=1e-4):
    """Second central difference in a of the reference P."""
    return (igamma_ref(a + h, x) - 2 * igamma_ref(a, x) + igamma_ref(a - h, x)) / (h * h)


def gamma_density_da1_ref(a, x):
    """d/da of x^(a-1) e^-x / Gamma(a) = density (log x - digamma(a))."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    log_gamma = np.vectorize(math.lgamma, otypes=[float])(a)
    density = np.exp((a - 1) * np.log(x) - x - log_gamma)
    digamma = _sc.digamma(a) if _sc is not None else np.vectorize(
        lambda v: (math.lgamma(v + 1e-6) - math.lgamma(v - 1e-6)) / 2e-6, otypes=[float])(a)
    return density * (np.log(x) - digamma)


def random_gamma_grad_ref(a, x):
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    density = np.exp((a - 1) * np.log(x) - x - np.vectorize(math.lgamma, otypes=[float])(a))
    return -igamma_grad_a_ref(a, x) / density


def _ndtri_check(out, args):
    """ndtr(ndtri(p)) == p with math.erfc."""
    (p,) = args
    back = np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)),
                        otypes=[np.float64])(np.asarray(out, np.float64))
    np.testing.assert_allclose(back, p, rtol=1e-13, atol=1e-15)
    assert np.asarray(out).dtype == p.dtype


A = Arg(low=0.5, high=5.0)
A_FIXED = Arg(low=0.5, high=5.0, diff=False)
X = Arg("bcast", low=0.1, high=6.0)

CASES = [
    Case("lax.igamma", special.igamma, igamma_ref, [A_FIXED, X], prims=("igamma",),
         rtol=1e-12),
    # differentiable in a to any order (beyond JAX): second derivatives checked
    Case("lax.igamma_da", special.igamma, igamma_ref, [A, X], prims=("igamma",),
         rtol=1e-12),
    Case("lax.igammac", special.igammac, igammac_ref, [A_FIXED, X], prims=("igammac",),
         rtol=1e-12),
    Case("lax.igammac_da", special.igammac, igammac_ref, [A, X], prims=("igammac",),
         rtol=1e-12),
    Case("lax.igamma_da_order2", lambda a, x: special.igamma_da(a, x, 2), igamma_da2_ref,
         [A, X], prims=("igamma_da",), rtol=1e-5, atol=1e-7),
    Case("lax.gamma_density_da", lambda a, x: special.gamma_density_da(a, x, 1),
         gamma_density_da1_ref, [A, X], prims=("gamma_density_da",), rtol=1e-12,
         atol=1e-14),
    Case("lax.igamma_grad_a", special.igamma_grad_a, igamma_grad_a_ref, [A_FIXED, X],
         prims=("igamma_grad_a",), rtol=1e-7, atol=1e-9),
    Case("lax.random_gamma_grad", special.random_gamma_grad, random_gamma_grad_ref,
         [A_FIXED, Arg("bcast", low=0.3, high=6.0)], prims=("random_gamma_grad",),
         rtol=1e-6, atol=1e-8),
    Case("lax.betainc", special.betainc, betainc_ref,
         [Arg(low=0.5, high=5.0, diff=False), Arg("bcast", low=0.5, high=5.0, diff=False),
          Arg("bcast", low=0.05, high=0.95)],
         prims=("regularized_incomplete_beta",), rtol=1e-12, atol=1e-14),
    Case("lax.bessel_i0e", special.bessel_i0e, i0e_ref, [Arg(low=-30, high=30, avoid=(0.0,))],
         prims=("bessel_i0e",), rtol=1e-13, atol=1e-15),
    Case("lax.bessel_i1e", special.bessel_i1e, i1e_ref, [Arg(low=-30, high=30, avoid=(0.0,))],
         prims=("bessel_i1e",), rtol=1e-13, atol=1e-15),
    Case("lax.zeta", special.zeta, zeta_ref,
         [Arg(low=1.5, high=8.0, diff=False), Arg("bcast", low=0.3, high=5.0)],
         prims=("zeta",), rtol=1e-12),
    # (away from the tails: ndtri's higher derivatives blow up there, and finite
    # differences with them)
    Case("scipy.ndtri", special._ndtri, None, [Arg(low=0.1, high=0.9)], prims=("ndtri",),
         check=_ndtri_check),
]
