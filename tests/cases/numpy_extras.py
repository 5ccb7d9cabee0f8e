"""Cases for fungrad.numpy's composite functions (polynomials, cov/corrcoef, histogram weights,
convolve/interp/trapezoid, vectorize): composed functions, so prims=()."""
import numpy as np

import fungrad.numpy as fnp
import fungrad.numpy as E
from tests.harness import Arg, Case

RC = ("float64", "complex128")

X6 = np.linspace(-1.0, 1.0, 6)
DATA = np.random.default_rng(0).normal(size=20)
XP = np.array([-2.0, -0.5, 0.5, 2.0])
POSITIVE = Arg((20,), low=0.5, high=2.0)


def _dot(a, b):
    return fnp.sum(a * b)


CASES = [
    Case("extras.polyval", E.polyval, np.polyval, [Arg("vec", RC), Arg("any", RC)]),
    Case("extras.polymul", E.polymul, np.polymul, [Arg("vec", RC), Arg("vec", RC)]),
    Case("extras.polyder", lambda p: E.polyder(p, 2), lambda p: np.polyder(p, 2),
         [Arg("vec", RC)]),
    Case("extras.polyint", lambda p: E.polyint(p, 2, k=[1.0, -2.0]),
         lambda p: np.polyint(p, 2, k=[1.0, -2.0]), [Arg("vec")]),
    Case("extras.polyfit", lambda y: E.polyfit(X6, y, 2), lambda y: np.polyfit(X6, y, 2),
         [Arg((6,))]),
    Case("extras.cov", E.cov, np.cov, [Arg((3, 5), RC)]),
    Case("extras.cov_aweights", lambda m, w: E.cov(m, aweights=w),
         lambda m, w: np.cov(m, aweights=w), [Arg((2, 5), RC), Arg((5,), low=0.5, high=2.0)]),
    Case("extras.corrcoef", E.corrcoef, np.corrcoef, [Arg((3, 5))], grad_rtol=1e-4,
         grad_atol=1e-4),
    Case("extras.histogram_weights", lambda w: E.histogram(DATA, 5, weights=w, density=True)[0],
         lambda w: np.histogram(DATA, 5, weights=w, density=True)[0], [POSITIVE]),
    Case("extras.convolve_interp", lambda a, fp: E.interp(E.convolve(a, fp, "same"), XP, fp),
         lambda a, fp: np.interp(np.convolve(a, fp, "same"), XP, fp),
         [Arg((3,), low=-1.0, high=1.0), Arg((4,), low=-0.5, high=0.5)]),
    Case("extras.vectorize", lambda x, y: E.vectorize(_dot, signature="(n),(n)->()")(x, y)
         + E.vectorize(lambda a: fnp.sin(a) * a)(y[0]),
         lambda x, y: np.einsum("...n,...n->...", x, y) + np.sin(y[0]) * y[0],
         [Arg((2, 3)), Arg((3,))]),
]
