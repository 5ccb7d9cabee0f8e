"""Floats converted to integers as XLA and jax.numpy convert them: truncated
toward zero, saturated at the integer type's range (infinities too), NaN to
0 -- where NumPy's astype is undefined (fungrad/lax/kernels/convert.py).
Eagerly (``x.astype``, ``fnp.astype``, ``lax.convert_element_type``) and
under ``jit``, for every integer type, against that rule and against values
JAX 0.10.2 gave."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import lax

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _rule(values, dtype):
    info = np.iinfo(dtype)
    out = []
    for v in values:
        if math.isnan(v):
            out.append(0)
        elif v >= info.max + 1:
            out.append(info.max)
        elif v <= info.min - 1:
            out.append(info.min)
        else:
            out.append(max(info.min, min(info.max, math.trunc(v))))
    return np.array(out, dtype)


CONVERSIONS = {
    "method": lambda x, d: x.astype(d),
    "fnp.astype": fnp.astype,
    "lax": lax.convert_element_type,
    "jit": lambda x, d: fungrad.jit(lambda v: v.astype(d))(x),
}


@pytest.mark.parametrize("how", sorted(CONVERSIONS))
@pytest.mark.parametrize("dtype", INTS)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64) |
                       st.sampled_from([2.0 ** 31, 2.0 ** 31 - 1, -2.0 ** 31, 2.0 ** 63,
                                        -2.0 ** 63, 255.9, -0.9, 65535.5, -1.0]),
                       min_size=1, max_size=12))
def test_floats_saturate_and_nan_is_zero(how, dtype, values):
    x = fnp.asarray(np.array(values))
    out = np.asarray(CONVERSIONS[how](x, np.dtype(dtype)))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, _rule(values, dtype))


def test_the_values_jax_gives():
    # x.astype(int32) / astype(uint8) on JAX 0.10.2 (x64), recorded once
    x = fnp.asarray([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7])
    np.testing.assert_array_equal(x.astype(np.int32), [0, 2147483647, -2147483648, 2147483647,
                                                       -2147483648, 2, -2])
    u = fnp.asarray([np.nan, -1.0, 300.0, 2.7])
    np.testing.assert_array_equal(u.astype(np.uint8), [0, 0, 255, 2])


def test_float32_sources_and_in_range_values_are_plain_truncation():
    x = np.array([1.5, -1.5, 126.9, -127.9, 2.0 ** 24], np.float32)
    np.testing.assert_array_equal(fnp.asarray(x).astype(np.int32), x.astype(np.int32))
    assert fnp.asarray(x).astype(np.float64).dtype == np.float64   # (floats: NumPy's astype)
