"""Decompositions jaxlib computes with LAPACK are JAX's bit for bit:
``jnp.linalg.eigh`` and ``jnp.linalg.svd`` of float32 and complex64 matrices
(several shapes, batched; full, reduced, values alone), ``lax.linalg.lu``,
``jnp.linalg.solve`` and ``jnp.linalg.inv`` in all four precisions (solve as
JAX composes it: LU, permutation, two triangular solves), eagerly and under jit, against
tests/data/jax_decompositions.json, which tools/record_jax_decompositions.py
recorded once with real JAX 0.10.2.

fungrad computes them with LAPACK's syevd/heevd, gesdd (single precision),
getrf and BLAS's trsm through SciPy (the routines jaxlib's CPU kernels call); SciPy is a
test dependency, imported here unconditionally: without it these are
NumPy's (or fungrad's blocked LU), ulps away, and this test must fail rather
than skip.  One exception, compared by value: JAX's complex64 eigenvectors
can hold +0.0 where LAPACK's (and fungrad's) imaginary part is -0.0 (so can
JAX's LU of a complex matrix whose imaginary parts are all zero).
"""
import json
import os

import numpy as np
import pytest
import scipy.linalg  # (required: see the module docstring)

import fungrad
import fungrad.numpy as fnp
from tests.test_qr_single import _array

with open(os.path.join(os.path.dirname(__file__), "data", "jax_decompositions.json")) as _f:
    REFERENCE = json.load(_f)
SINGLE = [c for c in REFERENCE["cases"] if c["fn"] in ("eigh", "svd", "svdvals")]
LU = [c for c in REFERENCE["cases"] if c["fn"] == "lu"]
SOLVES = [c for c in REFERENCE["cases"] if c["fn"] in ("solve", "inv")]


def _decompose(case):
    if case["fn"] == "eigh":
        return lambda a: fnp.linalg.eigh(a)[::-1]
    if case["fn"] == "svd":
        return lambda a: fnp.linalg.svd(a, full_matrices=case["full_matrices"])
    return lambda a: (fnp.linalg.svd(a, compute_uv=False),)


def _case_id(case):
    return (f"{case['fn']}-{case['dtype']}-{'x'.join(map(str, case['shape']))}"
            f"{'-full' if case.get('full_matrices') else ''}")


@pytest.mark.parametrize("case", SINGLE, ids=_case_id)
@pytest.mark.parametrize("under_jit", [False, True])
def test_single_precision_eigh_and_svd_are_jaxs(case, under_jit):
    a = _array(case["a"], case["shape"], case["dtype"])
    f = _decompose(case)
    outs = (fungrad.jit(f) if under_jit else f)(a)
    for k, (got, bits, shape) in enumerate(zip(outs, case["outs"], case["shapes"])):
        got = np.asarray(got)
        want = _array(bits, shape, got.dtype)
        assert got.shape == want.shape, (k, got.shape, want.shape)
        if case["fn"] == "eigh" and got.dtype.kind == "c":
            np.testing.assert_array_equal(got, want)       # (signed zeros: module doc)
        else:
            assert got.tobytes() == want.tobytes(), (k, got, want)


def _from_words(parts, shape, dtype):
    real_dtype = np.finfo(dtype).dtype
    real, *imag = [np.array(p, np.uint32).view(real_dtype) for p in parts]
    return np.asarray(real + 1j * imag[0] if imag else real, dtype).reshape(shape)


@pytest.fixture
def x64():
    saved = fungrad.config.read("jax_enable_x64")
    fungrad.config.update("jax_enable_x64", True)
    yield
    fungrad.config.update("jax_enable_x64", saved)


@pytest.mark.parametrize("case", LU, ids=_case_id)
@pytest.mark.parametrize("under_jit", [False, True])
def test_lu_is_jaxs(case, under_jit, x64):
    a = _from_words(case["a"], case["shape"], case["dtype"])
    lu, pivots, permutation = (fungrad.jit(fungrad.lax.linalg.lu) if under_jit
                               else fungrad.lax.linalg.lu)(a)
    want = _from_words(case["outs"][0], case["shape"], case["dtype"])
    assert np.asarray(lu).tobytes() == want.tobytes(), (lu, want)
    np.testing.assert_array_equal(pivots, case["outs"][1])
    np.testing.assert_array_equal(permutation, case["outs"][2])


def test_large_stacks_keep_the_batched_lu():
    """More than _LAPACK_LU_MAX_BATCH matrices: the blocked LU batched over the
    stack (a call per matrix would be slow), LAPACK's pivots, values within
    a few ulps of LAPACK's."""
    from fungrad.lax.kernels import linalg as kernels
    a = np.random.default_rng(4).normal(size=(kernels._LAPACK_LU_MAX_BATCH + 1, 5, 5))
    lu, pivots, _ = kernels.lu(a)
    each = [scipy.linalg.lu_factor(m) for m in a]
    np.testing.assert_array_equal(pivots, [p for _, p in each])
    np.testing.assert_allclose(lu, [f for f, _ in each], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", SOLVES, ids=_case_id)
@pytest.mark.parametrize("under_jit", [False, True])
def test_solve_and_inv_are_jaxs(case, under_jit, x64):
    a = _from_words(case["a"], case["shape"], case["dtype"])
    if case["fn"] == "solve":
        b = _from_words(case["b"], case["rhs"], case["dtype"])
        f = fnp.linalg.solve
        got = (fungrad.jit(f) if under_jit else f)(a, b)
        shape = case["rhs"]
    else:
        got = (fungrad.jit(fnp.linalg.inv) if under_jit else fnp.linalg.inv)(a)
        shape = case["shape"]
    want = _from_words(case["outs"][0], shape, case["dtype"])
    assert np.asarray(got).tobytes() == want.tobytes(), (got, want)
