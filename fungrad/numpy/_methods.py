"""Array operators and methods of tracers (``x + y``, ``x.sum()``, ``x.T``, ``x.at``...),
installed on ``core.Tracer`` and ``core.Array`` by ``install()``.

core defines the classes; what their array operations mean is fungrad.numpy's
(as JAX's numpy installs the methods of its arrays and tracers), so core never
imports this layer.  Every method is one line forwarding to the fungrad.numpy
function of the same meaning.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import is_inexact, kind as dtype_kind
import fungrad.numpy as fnp
from fungrad import core
from fungrad.core import Tracer
from fungrad.lax.kernels.convert import float_to_int


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


def _tracer_getattr(x, name):
    getter = _ATTRIBUTES.get(name)
    if getter is None:
        raise AttributeError(f"{type(x).__name__} has no attribute {name!r}")
    return getter(x)


def _getitem(x, idx):
    from fungrad.numpy._indexing import getitem
    return getitem(x, idx)


def _at_helper(x):
    from fungrad.numpy._indexing import _IndexUpdateHelper
    return _IndexUpdateHelper(x)


def _array_getitem(x, idx):
    # NumPy indexing, unless the index is traced (e.g. a closed-over array
    # indexed inside jit): then it must go through fungrad's gather.
    if isinstance(idx, Tracer) or (type(idx) is tuple and any(isinstance(i, Tracer) for i in idx)):
        return _getitem(x, idx)
    out = core.np.ndarray.__getitem__(x, idx)
    if x.weak_type:     # a part of a weakly typed Array is weak too (an element a 0-d Array)
        return core.with_weak_type(core.wrap_array(out), True)
    return out


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
    "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
    "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
}
# dunder -> (fungrad.numpy function, operand order: False x op y, True y op x, None unary)
_OPERATORS = {f"__{k}__": (v, False) for k, v in _BINARY.items()}
_OPERATORS.update({f"__r{k}__": (v, True) for k, v in _BINARY.items()})
_OPERATORS.update({"__lt__": ("less", False), "__le__": ("less_equal", False),
                   "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
                   "__eq__": ("equal", False), "__ne__": ("not_equal", False),
                   "__neg__": ("negative", None), "__pos__": ("positive", None),
                   "__abs__": ("abs", None), "__invert__": ("invert", None)})


# Array's operators that JAX's promotion changes (comparisons and unary ones
# give NumPy's dtypes already; matmul is _array_matmul)
_ARRAY_PROMOTING = {"add", "subtract", "multiply", "true_divide", "floor_divide", "remainder",
                    "power", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                    "right_shift"}


def _operator(dunder, fname, swap):
    fn = getattr(fnp, fname)
    # operators never pass NumPy's out=/where=: call under the keyword guard
    fn = getattr(fn, "__wrapped__", fn)
    if swap is None:
        def op(self):
            return fn(self)
    elif swap:
        def op(self, other):
            return fn(other, self)
    else:
        def op(self, other):
            return fn(self, other)
    op.__name__ = dunder
    return op


def _array_matmul(x, y):
    # NumPy's operator for operands of one dtype, with fungrad.numpy's error
    # (both shapes, the contracted axes) instead of the gufunc signature NumPy
    # reports on a shape mismatch; mixed dtypes promote as JAX (fnp.matmul)
    if not _same_dtype_arrays(x, y):
        return fnp.matmul(x, y)
    try:
        return core.np.ndarray.__matmul__(x, y)
    except ValueError:
        _explain_matmul(x, y)
        raise


def _array_rmatmul(x, y):
    if not _same_dtype_arrays(x, y):
        return fnp.matmul(y, x)
    try:
        return core.np.ndarray.__rmatmul__(x, y)
    except ValueError:
        _explain_matmul(y, x)
        raise


def _same_dtype_arrays(x, y) -> bool:
    return type(y) in _NDARRAYS and y.dtype == x.dtype


# ----------------------------------------------------------------------------
# Arithmetic operators of eager Arrays: JAX's promotion (f32 + i64 is f32)
# ----------------------------------------------------------------------------
_NDARRAYS = (core.np.ndarray, core.Array)
_fast_ops_allowed = [True]   # no promotion checks, no NaN/inf checks


def _set_fast_ops(_=None):
    from fungrad import _config
    _fast_ops_allowed[0] = (_config.numpy_rank_promotion.value == "allow"
                            and _config.numpy_dtype_promotion.value != "strict")


def _array_operator(dunder, fname, swap):
    """``Array.<dunder>``: NumPy's own operator where its result is JAX's (one
    dtype NumPy's loop takes as it is, or a Python int/float with a numeric
    array, which NEP 50 keeps weak), else the fungrad.numpy function, which
    promotes as JAX does."""
    fn = getattr(fnp, fname)
    fn = getattr(fn, "__wrapped__", fn)
    ufunc = getattr(core.np, fname)
    native = getattr(core.np.ndarray, dunder)
    from fungrad.numpy._ufunc_dtypes import _native_loop
    # dtype -> (NumPy's operator is JAX's with the same dtype, with a Python int,
    # with a Python float)
    fast: dict = {}

    # ``x ** 3`` is JAX's integer_pow (repeated multiplication: fnp.power),
    # not NumPy's pow() per element (100x slower on float arrays, other bits)
    int_scalar_native = not (fname == "power" and not swap)

    def fast_cases(dtype):
        same = _native_loop(ufunc, dtype, 2)
        cases = (same, same and int_scalar_native and dtype_kind(dtype) in "iufc",
                 same and is_inexact(dtype))
        fast[dtype] = cases
        return cases

    def op(self, other):
        # (NumPy's operator is checked for NaN/inf by its hook; a weakly typed
        # Array's result may be weak: fungrad.numpy's function says)
        if _fast_ops_allowed[0] and not self.weak_type:
            t = type(other)
            cases = fast.get(self.dtype) or fast_cases(self.dtype)
            if t in _NDARRAYS or isinstance(other, core.np.generic):
                if cases[0] and other.dtype == self.dtype:
                    return native(self, other)
            elif (t is int and cases[1]) or (t is float and cases[2]):
                return native(self, other)
        return fn(other, self) if swap else fn(self, other)
    op.__name__ = dunder
    core.OPERATOR_CODES.add(op.__code__)
    return op


_OPERANDS = (int, float, complex, core.np.ndarray, core.np.generic, Tracer)
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_WEAK_RANK = {int: 1, float: 2, complex: 3}


def _promotes_to_weak(x, other) -> bool:
    """Does JAX's lattice make ``x`` (a strong Array) and ``other`` a weak type?
    It does when ``other`` is weak (a Python number, a weak Array) of a higher
    kind (``int32_array > 2.5``: both become a weak float, so the bool is weak)."""
    t = type(other)
    rank = _WEAK_RANK.get(t)
    if rank is None:
        if t is not core.Array or not other.weak_type:
            return False
        rank = _KIND_RANK[other.dtype.kind]
    if rank <= _KIND_RANK.get(x.dtype.kind, 3):
        return False        # (the common case, without the lattice)
    from fungrad.numpy._dtypes import weak_result_type
    return weak_result_type(x, other)[1]


def _weak_comparison(out):
    return core.with_weak_type(out, True) if type(out) is core.Array else out


def _eager() -> bool:
    return core._tls.trace is core.EVAL_TRACE


def _array_weak_aware(dunder, fname, swap):
    """``Array.<dunder>`` of a unary operator or a comparison: NumPy's own
    (whose dtype is JAX's), or for a weakly typed Array the fungrad.numpy
    function, whose result is weak too, as JAX's (``-w``, ``w > 1``)."""
    fn = getattr(fnp, fname)
    fn = getattr(fn, "__wrapped__", fn)
    native = getattr(core.np.ndarray, dunder)
    # (only eagerly: under a transformation fungrad's own code compares concrete
    # values, e.g. a weakly typed literal of a jaxpr, and needs concrete answers)
    if swap is None:
        def op(self):
            return fn(self) if self.weak_type and _eager() else native(self)
    else:
        def op(self, other):
            if self.weak_type and _eager() and isinstance(other, _OPERANDS):
                return fn(self, other)     # (other objects: NumPy's, e.g. pytest.approx)
            out = native(self, other)
            return _weak_comparison(out) if _promotes_to_weak(self, other) else out
    op.__name__ = dunder
    core.OPERATOR_CODES.add(op.__code__)
    return op


def _explain_matmul(x, y):
    try:
        fnp.matmul(x, y)
    except ValueError as clear:
        raise clear from None


def _round(x, ndigits=None):
    return fnp.round(x, 0 if ndigits is None else ndigits)


def _numpy_reduction(name):
    """ndarray.<name> reading ``where=None`` as "no mask", as JAX (and
    fungrad.numpy) do; NumPy itself reads None as a False mask (a sum of 0)."""
    reduce = getattr(core.np.ndarray, name)

    def method(self, *args, **kwargs):
        if "where" in kwargs and kwargs["where"] is None:
            kwargs["where"] = True
        if name in _INTEGER_ACCUMULATING and len(args) < 2 and "dtype" not in kwargs:
            kwargs["dtype"] = _accumulator(self.dtype)
        return reduce(self, *args, **kwargs)
    method.__name__ = name
    return method


_INTEGER_ACCUMULATING = ("sum", "prod")


def _accumulator(dtype):
    """The dtype of an integer or boolean sum, as JAX's: NumPy's (int64 or
    uint64 for narrower integers), canonicalized (int32/uint32 with x64 off),
    so that the sum also wraps where JAX's does. None (NumPy's) for others."""
    if dtype.kind not in "biu":
        return None
    return core.canonicalize_dtype(core.np.uint64 if dtype.kind == "u" else core.np.int64)


def _array_astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """ndarray's ``astype``, except that floats convert to integers as XLA and
    ``jax.numpy`` convert them (saturating, NaN to 0: kernels/convert.py), where
    NumPy's result is undefined."""
    new = np.dtype(dtype) if dtype is not None else self.dtype
    if self.dtype.kind == "f" and new.kind in "iu":
        return core.wrap_array(float_to_int(np.asarray(self), new_dtype=new))
    return np.ndarray.astype(self, dtype, order=order, casting=casting, subok=subok, copy=copy)


def install():
    """Give tracers their operators, methods and indexing, and fungrad Arrays
    ``.at`` and traced-index indexing."""
    for dunder, (fname, swap) in _OPERATORS.items():
        setattr(Tracer, dunder, _operator(dunder, fname, swap))
    Tracer.__getattr__ = _tracer_getattr
    Tracer.__getitem__ = _getitem
    core.Array.at = property(_at_helper)
    core.Array.__getitem__ = _array_getitem
    for dunder, (fname, swap) in _OPERATORS.items():
        if fname in _ARRAY_PROMOTING:
            setattr(core.Array, dunder, _array_operator(dunder, fname, swap))
        elif swap is not True:
            setattr(core.Array, dunder, _array_weak_aware(dunder, fname, swap))
    from fungrad import _config
    _config.numpy_rank_promotion.hooks.append(_set_fast_ops)
    _config.numpy_dtype_promotion.hooks.append(_set_fast_ops)
    _set_fast_ops()
    core.Array.__matmul__ = _array_matmul
    core.Array.__rmatmul__ = _array_rmatmul
    core.OPERATOR_CODES.update((_array_matmul.__code__, _array_rmatmul.__code__))
    for name in ("sum", "mean", "prod", "max", "min", "any", "all", "var", "std"):
        setattr(core.Array, name, _numpy_reduction(name))
    # Python's round(x): an array, as jax.Array's (ndarray has no __round__)
    Tracer.__round__ = core.Array.__round__ = _round
    core.Array.astype = _array_astype
