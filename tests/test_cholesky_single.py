"""Single-precision Cholesky is JAX's bit for bit: ``jnp.linalg.cholesky`` of
float32 and complex64 matrices (several sizes, batched, one not positive
definite: NaNs in the lower triangle), eagerly and under jit, against
tests/data/jax_cholesky_single.json, which tools/record_jax_cholesky.py
recorded once with real JAX 0.10.2.

fungrad factors them with LAPACK's single-precision ``potrf`` through SciPy
(the routine jaxlib's CPU Cholesky calls); SciPy is a test dependency,
imported here unconditionally: without it fungrad's float32 Cholesky is
NumPy's, ulps away from JAX's from 8x8 on, and this test must fail rather
than skip.
"""
import json
import os

import numpy as np
import pytest
import scipy  # noqa: F401  (required: see the module docstring)

import fungrad
import fungrad.numpy as fnp
from tests.test_qr_single import _array

with open(os.path.join(os.path.dirname(__file__), "data", "jax_cholesky_single.json")) as _f:
    REFERENCE = json.load(_f)


@pytest.mark.parametrize("case", REFERENCE["cases"],
                         ids=lambda c: f"{c['dtype']}-{'x'.join(map(str, c['shape']))}")
@pytest.mark.parametrize("under_jit", [False, True])
def test_single_precision_cholesky_is_jaxs(case, under_jit):
    a = _array(case["a"], case["shape"], case["dtype"])
    got = np.asarray((fungrad.jit(fnp.linalg.cholesky) if under_jit else fnp.linalg.cholesky)(a))
    want = _array(case["l"], case["shape"], case["dtype"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.nan_to_num(got).tobytes() == np.nan_to_num(want).tobytes(), (got, want)


def test_cholesky_gradient_unchanged_by_the_single_precision_kernel():
    """The derivative rules sit above the kernel: float32 gradients agree with
    float64 ones to float32 accuracy."""
    rng = np.random.default_rng(3)
    b = rng.normal(size=(6, 6))
    a = b @ b.T + 6 * np.eye(6)

    def loss(x):
        return fnp.sum(fnp.linalg.cholesky(x) ** 2)
    g32 = np.asarray(fungrad.grad(loss)(a.astype(np.float32)))
    g64 = np.asarray(fungrad.grad(loss)(a))
    np.testing.assert_allclose(g32, g64, rtol=2e-4, atol=2e-4)
