"""Library functions written against the array API, run on fungrad values and
differentiated (check_grads: finite differences against jvp and vjp), vmapped
and jitted.  Not collected by the main run: tests/test_array_api_consumers.py
runs this file in a subprocess with SCIPY_ARRAY_API=1 set before SciPy is
imported.  docs/array_api.md lists what works and why the rest does not.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

assert os.environ.get("SCIPY_ARRAY_API") == "1", "run through tests/test_array_api_consumers.py"

import scipy.fft  # noqa: E402
import scipy.integrate  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad.test_util import check_grads  # noqa: E402

X = np.array([0.3, -1.2, 2.0, 0.7])
XS = np.stack([X, 0.5 * X - 0.2])

# name -> (scalar function of a vector, transforms it works under)
ALL = ("grad", "jit", "vmap")
FUNCTIONS = {
    "scipy.special.softmax": (lambda t: fnp.sum(scipy.special.softmax(t) ** 2), ALL),
    "scipy.special.xlogy": (lambda t: fnp.sum(scipy.special.xlogy(t, t ** 2 + 1)), ALL),
    "scipy.stats.moment": (lambda t: scipy.stats.moment(t, order=3), ("grad", "vmap")),
    "scipy.stats.skew": (lambda t: scipy.stats.skew(t), ALL),
    "scipy.stats.kurtosis": (lambda t: scipy.stats.kurtosis(t), ALL),
    "scipy.stats.gmean": (lambda t: scipy.stats.gmean(t ** 2 + 1), ALL),
    "scipy.stats.hmean": (lambda t: scipy.stats.hmean(t ** 2 + 1), ("grad",)),
    "scipy.stats.pmean": (lambda t: scipy.stats.pmean(t ** 2 + 1, 2.5), ("grad",)),
    "scipy.stats.sem": (lambda t: scipy.stats.sem(t), ALL),
    "scipy.stats.describe": (lambda t: scipy.stats.describe(t).variance, ALL),
    "scipy.stats.zmap": (lambda t: fnp.sum(scipy.stats.zmap(t, t ** 2) ** 3), ALL),
    "scipy.stats.circmean": (lambda t: scipy.stats.circmean(t), ALL),
    "scipy.stats.circstd": (lambda t: scipy.stats.circstd(t), ALL),
    "scipy.stats.tvar": (lambda t: scipy.stats.tvar(t), ("grad",)),
    "scipy.fft.fft": (lambda t: fnp.sum(fnp.abs(scipy.fft.fft(t)) ** 2 * fnp.arange(4)), ALL),
    "scipy.fft.rfft": (lambda t: fnp.sum(fnp.imag(scipy.fft.rfft(t)) ** 2), ALL),
    "scipy.integrate.trapezoid": (lambda t: scipy.integrate.trapezoid(t ** 3), ALL),
    "scipy.optimize.rosen": (lambda t: scipy.optimize.rosen(t), ALL),
    "scipy.signal.fftconvolve": (lambda t: fnp.sum(scipy.signal.fftconvolve(t, t ** 2) ** 2), ALL),
    "scipy.signal.oaconvolve": (lambda t: fnp.sum(scipy.signal.oaconvolve(t, t[:2]) ** 2), ALL),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_differentiated_vmapped_jitted(name):
    f, works_under = FUNCTIONS[name]
    check_grads(f, (X,), order=1, rtol=1e-5, atol=1e-7)
    g = fungrad.grad(f)
    if "jit" in works_under:
        np.testing.assert_allclose(fungrad.jit(g)(X), g(X), rtol=1e-10)
    if "vmap" in works_under:
        np.testing.assert_allclose(fungrad.vmap(g)(XS), np.stack([g(x) for x in XS]),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["scipy.stats.hmean", "scipy.stats.pmean", "scipy.stats.tvar"])
def test_value_dependent_branches_need_concrete_values(name):
    """They test the data (``if xp.any(a < 0)``, boolean masks): fine under grad,
    the concretization error under jit."""
    f, _ = FUNCTIONS[name]
    with pytest.raises(fungrad.core.ConcretizationTypeError):
        fungrad.jit(f)(X)


def test_on_concrete_fungrad_arrays_scipy_gives_numpys_values():
    x = fnp.asarray(X)
    np.testing.assert_allclose(scipy.special.logsumexp(x), np.log(np.sum(np.exp(X))))
    np.testing.assert_allclose(scipy.stats.moment(x, order=2), np.var(X))
    np.testing.assert_allclose(scipy.special.erf(x), scipy.special.erf(X))


def test_in_place_updates_raise_fungrads_error_on_tracers():
    """SciPy's logsumexp and log_softmax update arrays through array_api_extra's
    ``at``, which writes in place for every library but JAX."""
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set"):
        fungrad.grad(lambda t: scipy.special.logsumexp(t))(X)
