"""fungrad.numpy as a Python array API namespace (the standard's 2024.12 revision).

What the standard adds to the ``jax.numpy`` API: ``__array_api_version__``,
``__array_namespace_info__()`` (capabilities, devices, dtypes, default dtypes),
``isdtype``, ``from_dlpack``, ``finfo``/``iinfo`` that take arrays and give
Python numbers, and ``x.__array_namespace__()`` / ``x.device`` /
``x.to_device()`` on fungrad arrays and tracers (installed by ``install()``).
Everything else is fungrad.numpy's own functions, whose signatures follow the
standard (positional-only arrays; keyword-only parameters are also accepted
by position where NumPy and JAX accept them, as the standard allows).

There is one device, ``"cpu"``, as in NumPy.  Boolean indexing and other
data-dependent shapes work on concrete arrays (and under ``grad``/``jvp``,
where values exist); under ``jit`` and ``vmap`` they raise the concretization
error, as in JAX.
"""
from __future__ import annotations

import numpy as np
from fungrad._dtype_classes import finfo as dtype_finfo, iinfo as dtype_iinfo, kind as dtype_kind

from fungrad import core

__all__ = ["__array_api_version__", "__array_namespace_info__", "isdtype", "from_dlpack",
           "finfo", "iinfo"]

__array_api_version__ = "2024.12"
_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
CPU = "cpu"

# the standard's dtypes (no float16), by kind
# the standard's kind names as dtype kind letters (fungrad._dtype_classes.kind:
# float16, bfloat16 and the float8 types are real floating, int4 integral, as JAX)
_STANDARD_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float32", "float64", "complex64", "complex128")
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def default_dtypes() -> dict:
    """The dtypes fungrad.numpy gives values that name none: read here by
    ``__array_namespace_info__().default_dtypes()`` (NumPy's: 64-bit)."""
    return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}


def _check_device(device, where):
    if device is not None and device != CPU:
        raise ValueError(f"{where}: fungrad has one device, 'cpu'; got device={device!r}")


class __array_namespace_info__:  # noqa: N801 (the standard's name)
    """The standard's inspection namespace: ``fungrad.numpy.__array_namespace_info__()``."""

    __module__ = "fungrad.numpy"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self):
        return CPU

    def devices(self) -> list:
        return [CPU]

    def default_dtypes(self, *, device=None) -> dict:
        _check_device(device, "default_dtypes")
        return default_dtypes()

    def dtypes(self, *, device=None, kind=None) -> dict:
        _check_device(device, "dtypes")
        if kind is not None:
            isdtype(np.dtype(bool), kind)              # an unknown kind name raises
        return {n: np.dtype(n) for n in _STANDARD_DTYPES
                if kind is None or isdtype(np.dtype(n), kind)}


def _kind_letters(kind) -> str:
    if kind not in _KINDS:
        raise ValueError(f"unknown dtype kind {kind!r}; the standard's kinds are "
                         f"{sorted(_KINDS)}")
    return _KINDS[kind]


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    ("bool", "signed integer", "unsigned integer", "integral", "real floating",
    "complex floating", "numeric") or a tuple of them."""
    if isinstance(dtype, type) and (issubclass(dtype, np.generic)
                                    or isinstance(getattr(dtype, "dtype", None), np.dtype)):
        dtype = np.dtype(dtype)        # np.float32, fnp.float32, fnp.bfloat16 ...
    if not isinstance(dtype, np.dtype):
        raise TypeError(f"isdtype: dtype must be a dtype, got {type(dtype).__name__} "
                        f"{dtype!r:.40}; pass x.dtype")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        return dtype_kind(dtype) in _kind_letters(kind)
    return dtype == np.dtype(kind)


def from_dlpack(x, /, *, device=None, copy=None):
    """A read-only fungrad Array from any object with ``__dlpack__`` (no copy
    unless ``copy=True``)."""
    _check_device(device, "from_dlpack")
    return core.wrap_array(np.from_dlpack(x, copy=copy))


def _dtype_of(type_, what):
    if isinstance(type_, (np.ndarray, core.Tracer)):
        return type_.dtype
    try:
        return np.dtype(type_)
    except TypeError:
        raise TypeError(f"{what}: expected a dtype or an array, got "
                        f"{type(type_).__name__}") from None


class _finfo:
    """NumPy's finfo with the standard's Python-float attributes."""

    def __init__(self, info):
        self._info = info
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = info.dtype

    def __getattr__(self, name):   # tiny, resolution, precision, ...: NumPy's
        return getattr(self._info, name)

    def __repr__(self):
        return repr(self._info)


def finfo(type, /):  # noqa: A002 (the standard's name)
    """Machine limits of a floating dtype (or of an array's dtype)."""
    return _finfo(dtype_finfo(_dtype_of(type, "finfo")))


class _iinfo:
    """NumPy's iinfo with the standard's Python-int attributes."""

    def __init__(self, info):
        self._info = info
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = info.dtype

    def __getattr__(self, name):
        return getattr(self._info, name)

    def __repr__(self):
        return repr(self._info)


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (or of an array's dtype)."""
    return _iinfo(dtype_iinfo(_dtype_of(type, "iinfo")))


# ----------------------------------------------------------------------------
# The array object's part: on fungrad Arrays and tracers
# ----------------------------------------------------------------------------

def _array_namespace(self, /, *, api_version=None):
    if api_version is not None and api_version not in _API_VERSIONS:
        raise ValueError(f"fungrad.numpy implements the array API versions {_API_VERSIONS}, "
                         f"not {api_version!r}")
    import fungrad.numpy
    return fungrad.numpy


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """NumPy's ``__dlpack__``; a read-only Array is exported through a copy where
    the consumer's DLPack version cannot mark it read-only (unless copy=False)."""
    kwargs = dict(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    try:
        return np.ndarray.__dlpack__(self, **kwargs)
    except BufferError:
        if copy is False or self.flags.writeable:
            raise
        return np.array(self).__dlpack__(**dict(kwargs, copy=None))


def _to_device(self, device, /, *, stream=None):
    _check_device(device, "to_device")
    return self


def install():
    """``__array_namespace__`` on fungrad Arrays and tracers; ``device`` and
    ``to_device`` on tracers (Arrays have NumPy's); DLPack export of read-only
    Arrays."""
    core.Array.__array_namespace__ = _array_namespace
    core.Array.__dlpack__ = _dlpack
    core.Tracer.__array_namespace__ = _array_namespace
    core.Tracer.device = property(lambda self: CPU)
    core.Tracer.to_device = _to_device
