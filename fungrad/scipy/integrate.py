"""``fungrad.scipy.integrate``: ``trapezoid`` (``jax.scipy.integrate.trapezoid``),
the trapezoidal rule of ``fungrad.numpy.trapezoid`` with SciPy's signature."""
from __future__ import annotations

import fungrad.numpy as fnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points
    ``x`` (same length as ``y`` along ``axis``, or 1-d) or with spacing ``dx``."""
    return fnp.trapezoid(y, x=x, dx=dx, axis=axis)
