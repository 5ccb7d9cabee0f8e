"""jax.numpy, jax.scipy.special and jax.nn functions at NaN, ±inf, ±0, huge values and
just outside their domains: values and derivatives against what JAX 0.10.2
computes there (tests/data/jax_special_points.json, recorded by
tools/record_special_points.py; the points and functions are that tool's).

Implementations part ways at exactly these points, so the recorded numbers
keep fungrad's NaN propagation, infinities and derivatives at kinks and
poles JAX's.  Where fungrad gives another answer on purpose, the point is
listed in KNOWN_DIFFERENCES with the reason; nothing else may differ.
Values compare to 1e-12 relative (transcendental functions round
differently across libraries), infinities and NaN exactly, signed zeros of
values exactly; the sign of a zero derivative is not compared.
"""
import json
import math
import os

import pytest

import fungrad
import fungrad.nn as fnn
import fungrad.numpy as fnp
import fungrad.scipy.special as special
from tools import record_special_points as points

DATA = os.path.join(os.path.dirname(__file__), "data", "jax_special_points.json")

def _listed(name, kind, pts, why):
    return {(name, kind, str(p)): why for p in pts}


_NAN, _INF = math.nan, math.inf
_NEGATIVES = [-_INF, -1.0, -0.5, -2.5, -1e300, -745.5]
_PAIRS_WITH_Y = lambda y: [(x, y) for x in points.BINARY_POINTS]       # noqa: E731
_PAIRS_WITH_X = lambda x: [(x, y) for y in points.BINARY_POINTS]       # noqa: E731

# (function, output, point) -> why fungrad's answer is another one
KNOWN_DIFFERENCES = {
    # fungrad's derivative is the function's; JAX's formula breaks down there
    **_listed("sp.digamma", "d/dx", [-745.5], "trigamma at negative non-integers by reflection "
              "(pi^2 / sin^2 - trigamma(1 - x)); JAX's series has no reflection"),
    **_listed("sp.digamma", "d/dx", [-_INF, _INF, 1e300], "trigamma's limits (nan at -inf, 0 at "
              "+inf, 1/x at 1e300); JAX: inf, nan, 0"),
    **_listed("sp.spence", "d/dx", [-0.0, 0.0, 1.0, 1e300, 2.0] + _NEGATIVES,
              "d/dz spence(z) = log(z) / (1 - z) (-1 at 1, -inf at 0, nan below 0); JAX's "
              "spence has derivative 0 (or nan)"),
    **_listed("sp.ndtri", "d/dx", [0.0, -0.0, 1.0], "1 / pdf(ndtri(p)) is inf at 0 and 1; JAX: 0"),
    **_listed("sp.log_ndtr", "d/dx", [-1e300, -745.5], "pdf/cdf ~ -x in the far left tail "
              "(JAX: nan at -1e300, 3.5e-9 off at -745.5)"),
    **_listed("jnp.arccosh", "d/dx", [-1.0, -1e300, -2.5, -745.5, -_INF],
              "nan where arccosh is nan (x < 1); JAX evaluates 1/sqrt(x^2 - 1) there"),
    **_listed("jnp.arccosh", "d/dx", [1e300], "1/sqrt(x^2 - 1) without overflow: 1e-300; JAX: 0"),
    **_listed("sp.entr", "d/dx", _NEGATIVES, "0 where entr is the constant -inf (x < 0); JAX: "
              "nan, its unused branch's log of a negative number"),
    **_listed("bin.logaddexp", "d/dx", [(x, _INF) for x in (-0.0, -1.0, -2.0, 0.0, 1.0, 2.5)],
              "exp(x - logaddexp(x, inf)) = 0; JAX's rule evaluates exp(x - y) against the "
              "finite one"),
    **_listed("bin.logaddexp", "d/dy", [(_INF, y) for y in (-0.0, -1.0, -2.0, 0.0, 1.0, 2.5)],
              "as d/dx, by symmetry"),
    **_listed("bin.logaddexp", "d/dx", [(_INF, _INF)], "nan at inf + inf; JAX: 1"),
    **_listed("bin.logaddexp", "d/dy", [(_INF, _INF)], "nan at inf + inf; JAX: 1"),
    **{(k[0].replace("logaddexp", "logaddexp2"), k[1], k[2]): "as logaddexp (base 2)"
       for k in [("bin.logaddexp", "d/dx", str((x, _INF))) for x in
                 (-0.0, -1.0, -2.0, 0.0, 1.0, 2.5, _INF)] +
       [("bin.logaddexp", "d/dy", str((_INF, y))) for y in (-0.0, -1.0, -2.0, 0.0, 1.0, 2.5,
                                                              _INF)]},
    **_listed("bin.logaddexp2", "value", [(-1.0, -1.0)], "exactly 0 (log2(2^-1 + 2^-1)); JAX: "
              "-4.8e-17"),
    # the function's limits where JAX's series give nan
    **_listed("sp.exp1", "value", [_INF, 710.0], "E1(inf) = 0, and E1(710) = 6.3e-312 "
              "(subnormal; XLA flushes it to 0)"),
    **_listed("sp.exp1", "d/dx", [_INF, 710.0, -0.0], "-exp(-x)/x: -0 at inf, -6.3e-312 at 710, "
              "-inf at -0 (JAX: nan, -0, inf)"),
    **_listed("sp.expi", "value", [0.0, -0.0, -_INF], "Ei(0) = -inf, Ei(-inf) = -0; JAX: nan"),
    **_listed("sp.spence", "value", [_INF], "spence(inf) = -inf; JAX: nan"),
    **_listed("sp.i1e", "d/dx", [_NAN], "nan at nan; JAX: 0.5"),
    **_listed("jnp.sinc", "d/dx", [1e300, -1e300], "nan: (pi x)^2 overflows in the quotient "
              "rule; JAX: the tiny cos(pi x)/x (not fixed yet)"),
    **_listed("bin.heaviside", "d/dx", _PAIRS_WITH_X(_NAN), "0 (a piecewise constant); JAX: 1 "
              "at a NaN x1, whose value it passes through"),
    **_listed("nn.log_sigmoid", "value", [710.0], "-4.5e-309, subnormal (XLA flushes it to -0)"),
    **_listed("nn.log_sigmoid", "d/dx", [710.0], "4.5e-309, subnormal (XLA flushes it to 0)"),
    **_listed("nn.soft_sign", "d/dx", [1e300, -1e300], "1 / (1 + |x|)^2 underflows to 0; JAX's "
              "quotient rule leaves 1e-300"),
    **_listed("nn.squareplus", "d/dx", [-745.5], "(1 + x / sqrt(x^2 + 4)) / 2 cancels: both "
              "keep ~11 digits, rounded differently"),
    # signed zeros that NumPy's functions give and XLA's do not
    **_listed("bin.floor_divide", "value", [(-0.0, -1.0), (-0.0, -2.0), (-0.0, -_INF),
                                            (-0.0, 1.0), (-0.0, 2.5), (-0.0, _INF),
                                            (-1.0, -2.0), (-1.0, -_INF), (-2.0, -_INF)],
              "a zero quotient has the sign of x / y (the array API standard's and NumPy's "
              "rule; tests/test_array_api.py); JAX's floor_divide differs"),
    **_listed("bin.remainder", "value", [(-0.0, 1.0), (-0.0, 2.5), (-0.0, _INF), (-1.0, 1.0),
                                         (-2.0, 1.0), (0.0, -1.0), (0.0, -2.0), (0.0, -_INF),
                                         (1.0, -1.0)],
              "a zero remainder has the divisor's sign (the array API standard's and "
              "NumPy's rule); JAX's keeps the dividend's"),
    **_listed("bin.maximum", "value", [(0.0, -0.0)], "np.maximum's zero of equal zeros (the "
              "second); XLA's max gives the first"),
    **_listed("bin.minimum", "value", [(-0.0, 0.0)], "np.minimum's zero of equal zeros"),
    **_listed("jnp.sign", "value", [-0.0], "np.sign(-0.0) is 0.0; XLA's sign keeps -0.0"),
    **_listed("sp.gammaln", "value", [1.0], "fungrad's lgamma kernel gives -0.0 at 1; JAX 0.0"),
    **_listed("sp.i1", "value", [-0.0], "fungrad's Bessel kernel gives +0.0 at -0.0; JAX -0.0 "
              "(i1 is odd)"),
    **_listed("sp.i1e", "value", [-0.0], "as i1"),
}


def _same(jax_value, ours, signed_zero: bool) -> bool:
    if isinstance(jax_value, str) or isinstance(ours, str):
        if jax_value == ours:
            return True
        if jax_value == "-0.0" or ours == "-0.0":      # a signed zero and a number
            return not signed_zero and float(jax_value) == 0 and float(ours) == 0
        return False
    return math.isclose(jax_value, ours, rel_tol=1e-12, abs_tol=0)


def _point_names(name):
    if name.startswith("bin."):
        return [(x, y) for x in points.BINARY_POINTS for y in points.BINARY_POINTS]
    return points.UNARY_POINTS


@pytest.fixture(scope="module")
def both():
    with open(DATA) as fh:
        recorded = json.load(fh)["values"]
    return recorded, points.compute(fungrad, fnp, special, fnn)


def differences(recorded, ours) -> dict:
    found = {}
    for name, outputs in recorded.items():
        kinds = ["value", "d/dx", "d/dy"] if name.startswith("bin.") else ["value", "d/dx"]
        for kind, theirs, mine in zip(kinds, outputs, ours[name]):
            for point, a, b in zip(_point_names(name), theirs, mine):
                if not _same(a, b, signed_zero=kind == "value"):
                    found[(name, kind, str(point))] = (a, b)
    return found


def test_fungrad_computes_what_jax_computes_at_special_points(both):
    recorded, ours = both
    found = differences(recorded, ours)
    unexplained = {k: v for k, v in found.items() if k not in KNOWN_DIFFERENCES}
    assert not unexplained, "\n".join(f"{k}: JAX {a!r}, fungrad {b!r}"
                                      for k, (a, b) in sorted(unexplained.items()))


def test_every_listed_difference_still_exists(both):
    """A difference fixed since is taken off the list."""
    found = differences(*both)
    stale = [k for k in KNOWN_DIFFERENCES if k not in found]
    assert not stale, stale
