"""Small helpers shared by the composite ``fungrad.numpy`` functions (set
operations, histograms, polynomials, statistics, ``vectorize``): shapes and
dtypes of arrays and tracers alike, static-integer arguments, and the error
for outputs whose size would depend on traced values."""
from __future__ import annotations

import operator

from fungrad import lax
from fungrad.core import ConcretizationTypeError, get_aval
from fungrad.numpy._dtypes import asarray_operand

_builtin_range, _builtin_max = range, max   # histogram* take an argument named range


def _fnp():
    import fungrad.numpy as fnp   # late: fungrad.numpy imports this module
    return fnp


def _at(x):
    """``x.at`` for arrays of any kind (plain ndarrays included)."""
    from fungrad.numpy._indexing import _IndexUpdateHelper
    return _IndexUpdateHelper(asarray_operand(x))


def _ravel(x):
    x = asarray_operand(x)
    return lax.reshape(x, (get_aval(x).size,))


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _static_int(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a static Python integer, got {value!r}") from None


def _concretization_error(name, hint):
    return ConcretizationTypeError(
        f"fungrad.numpy.{name}: the size of the result depends on the values of a traced "
        f"array, which are not known under this transformation (jit, vmap, grad). Pass a "
        f"static {hint} so the output shape is fixed, or call it outside the transformation.")
