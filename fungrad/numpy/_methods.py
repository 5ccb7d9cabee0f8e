"""Array methods and properties of tracers (``x.sum()``, ``x.T``, ``x.at``...).

Tracers look their attributes up here, so that every method is one line that
forwards to the fungrad.numpy function of the same meaning.
"""
from __future__ import annotations

import fungrad.numpy as fnp


def _method(name):
    def bound(self):
        fn = getattr(fnp, name)
        return lambda *args, **kwargs: fn(self, *args, **kwargs)
    return bound


# attribute name -> (tracer -> value)
_ATTRIBUTES = {
    "T": lambda x: fnp.transpose(x),
    "mT": lambda x: fnp.swapaxes(x, -1, -2),
    "at": lambda x: _at_helper(x),
    "real": lambda x: fnp.real(x),
    "imag": lambda x: fnp.imag(x),
    "astype": lambda x: lambda dtype, copy=False: fnp.astype(x, dtype),
    "reshape": lambda x: lambda *shape, order="C": fnp.reshape(
        x, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape, order=order),
    "transpose": lambda x: lambda *axes: fnp.transpose(
        x, None if not axes else axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes),
    "flatten": lambda x: lambda order="C": fnp.ravel(x, order=order),
}
for _name in ["sum", "mean", "var", "std", "prod", "max", "min", "argmax", "argmin",
              "all", "any", "cumsum", "cumprod", "ravel", "squeeze", "swapaxes",
              "clip", "round", "dot", "conj", "conjugate", "take", "repeat", "sort",
              "argsort", "diagonal", "trace", "nonzero", "ptp", "searchsorted", "copy"]:
    _ATTRIBUTES[_name] = _method(_name)


def _tracer_attribute(x, name):
    getter = _ATTRIBUTES.get(name)
    return None if getter is None else getter(x)


def _getitem(x, idx):
    from fungrad.numpy._indexing import getitem
    return getitem(x, idx)


def _at_helper(x):
    from fungrad.numpy._indexing import _IndexUpdateHelper
    return _IndexUpdateHelper(x)
