"""``fungrad.numpy``: the ``jax.numpy`` API built on ``fungrad.lax``.

Dtype promotion is jax.numpy's (JAX's lattice, weak Python scalars); other
array semantics are NumPy 2's (broadcasting, float64 default); results are
read-only ``fungrad.Array``s.
Each submodule's ``__all__`` is re-exported here.
"""
import numpy as _np

from fungrad.numpy._ufuncs import *  # noqa: F401,F403
from fungrad.numpy._creation import *  # noqa: F401,F403
from fungrad.numpy._shape import *  # noqa: F401,F403
from fungrad.numpy._padding import *  # noqa: F401,F403
from fungrad.numpy._reductions import *  # noqa: F401,F403
from fungrad.numpy._indexing import *  # noqa: F401,F403
from fungrad.numpy._products import *  # noqa: F401,F403
from fungrad.numpy._sorting import *  # noqa: F401,F403
from fungrad.numpy._setops import *  # noqa: F401,F403
from fungrad.numpy._histograms import *  # noqa: F401,F403
from fungrad.numpy._polynomial import *  # noqa: F401,F403
from fungrad.numpy._interpolation import *  # noqa: F401,F403
from fungrad.numpy._windows import *  # noqa: F401,F403
from fungrad.numpy._statistics import *  # noqa: F401,F403
from fungrad.numpy._vectorize import *  # noqa: F401,F403
from fungrad.numpy._convolve import *  # noqa: F401,F403
from fungrad.numpy._differences import *  # noqa: F401,F403
from fungrad.numpy._bits import *  # noqa: F401,F403
from fungrad.numpy._ufunc_api import *  # noqa: F401,F403
from fungrad.numpy._io import *  # noqa: F401,F403
from fungrad.numpy._index_tricks import *  # noqa: F401,F403
from fungrad.numpy import linalg  # noqa: F401
from fungrad.numpy import fft  # noqa: F401
from fungrad.numpy import _methods as _methods_module
_methods_module.install()   # tracers' operators and methods, Array.at
from fungrad.numpy import _dispatch as _dispatch_module
_dispatch_module.install()  # NumPy's own functions on tracers (NEP 13/18)

# dtypes and constants, as jax.numpy re-exports them
from numpy import (dtype, pi, e, inf, nan, newaxis,  # noqa: F401
                   integer, floating, inexact, number, complexfloating, signedinteger,
                   unsignedinteger, generic)
from fungrad.numpy._dtypes import issubdtype  # noqa: E402,F401
from fungrad.numpy._scalar_types import scalar_type as _scalar_type  # noqa: E402
# JAX's scalar types: float32(x) is a 0-d array, float32.dtype a NumPy dtype
(float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
 complex64, complex128) = [_scalar_type(t) for t in (
    _np.float16, _np.float32, _np.float64, _np.int8, _np.int16, _np.int32, _np.int64,
    _np.uint8, _np.uint16, _np.uint32, _np.uint64, _np.complex64, _np.complex128)]
bool_ = _scalar_type(_np.bool_)
from fungrad.core import Array as ndarray  # noqa: F401
bool = bool_  # noqa: A001
# the machine-learning dtypes (bfloat16, float8_*, int4, ...: ml_dtypes' types, as JAX's)
from fungrad import _dtype_classes as _dtype_classes  # noqa: E402
for _small in (*_dtype_classes.SMALL_FLOATS, *_dtype_classes.SMALL_SIGNED,
               *_dtype_classes.SMALL_UNSIGNED):
    globals()[_small.name] = _scalar_type(_small.type)
del _small
euler_gamma = _np.euler_gamma

# the array API standard's additions (finfo/iinfo replace NumPy's: they take arrays)
from fungrad.numpy._array_api import *  # noqa: F401,F403,E402
from fungrad.numpy import _array_api as _array_api_module  # noqa: E402
_array_api_module.install()
