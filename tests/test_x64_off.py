"""The generic suite with jax_enable_x64=False (JAX's 32-bit defaults).

A representative sample of the generic cases (one or two per family of
primitives) runs with its 64-bit inputs drawn as float32/int32/complex64:
values against NumPy on the same inputs at float32 tolerance, with the dtype
JAX would give (NumPy's, 64-bit ones made 32-bit), jit against eager, and
first-order derivatives against finite differences.  The whole generic suite
passes this way except cases that name a 64-bit dtype themselves (e.g.
``lax.iota(np.float64, n)``) or whose NumPy reference promotes eagerly (see
the README's Choices).
"""
import numpy as np
import pytest
from hypothesis import given, settings

import fungrad
from fungrad.test_util import check_grads
from fungrad.tree_util import tree_flatten
from tests.test_generic import CASES, _diff_argnums, case_inputs

SAMPLE = [
    "lax.sin", "lax.log1p", "lax.sqrt", "lax.integer_pow_3", "lax.add_scalar",
    "fnp.add", "fnp.true_divide", "fnp.power", "fnp.multiply_weak_float", "fnp.clip_scalars",
    "fnp.where_scalar", "lax.reduce_sum", "lax.reduce_max", "lax.cumsum_axis0",
    "lax.argmax", "numpy.matmul_mat_mat", "numpy.einsum_matmul", "lax.dot_general_batched",
    "linalg.solve_matrix", "linalg.inv", "linalg.det", "lax.cholesky", "linalg.eigh",
    "fnp.reshape_flat", "fnp.concatenate", "fnp.transpose_axes", "fnp.moveaxis",
    "lax.gather_axis0", "lax.scatter_add", "lax.dynamic_slice", "getitem_basic",
    "cond_scalar_pred", "scan_cumulative", "scan_rnn_reverse", "fori_loop", "while_power",
    "custom_jvp_softplus", "custom_vjp_sin", "checkpoint_nothing_saveable", "rfft_power",
    "conv_1d", "reduce_window_sum_1d_stride_pad", "fnp.sort", "lax.top_k",
    "scipy.stats.norm_logpdf", "jit_elementwise", "psum", "sparse_plus",
    "debug_callback_observes", "pure_callback_sequential", "check_passing",
]
BY_NAME = {c.name: c for c in CASES}
SAMPLED = [BY_NAME[n] for n in SAMPLE]
_TO_32 = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32,
          np.dtype(np.complex128): np.complex64, np.dtype(np.uint64): np.uint32}


def _x32(dtype) -> np.dtype:
    return np.dtype(_TO_32.get(np.dtype(dtype), dtype))


def _x32_inputs(inputs):
    return [np.asarray(a).astype(_x32(np.asarray(a).dtype)) for a in inputs[0]]


@pytest.fixture(autouse=True)
def _x64_off():
    with fungrad.enable_x64(False):
        yield


def test_sample_names_exist_and_default_is_restored_after():
    assert len(SAMPLED) == len(SAMPLE)
    assert fungrad.config.jax_enable_x64 is False


def _assert_x32_close(got, want, case, what):
    g_leaves, w_leaves = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(g_leaves) == len(w_leaves), what
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: output {i} shape {g.shape} vs {w.shape}"
        assert g.dtype == _x32(w.dtype), \
            f"{what}: output {i} dtype {g.dtype}, JAX gives {_x32(w.dtype)}"
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            np.testing.assert_allclose(g, w.astype(g.dtype), rtol=max(case.rtol, 2e-5),
                                       atol=max(case.atol, 2e-5), equal_nan=True, err_msg=what)


@pytest.mark.parametrize("case", SAMPLED, ids=SAMPLE)
def test_values_jit_and_grads_with_32_bit_defaults(case):
    @settings(max_examples=2)
    @given(case_inputs(case))
    def run(inputs):
        args = _x32_inputs(inputs)
        out = case.fun(*args)
        if case.ref is not None:
            with np.errstate(all="ignore"):
                _assert_x32_close(out, case.ref(*args), case, f"{case.name} vs NumPy")
        _assert_x32_close(fungrad.jit(case.fun)(*args), out, case, f"{case.name} jit")
        nums = _diff_argnums(case, args)
        if case.grad_order and nums:
            def f(*diff_args):
                full = list(args)
                for i, a in zip(nums, diff_args):
                    full[i] = a
                return case.fun(*full)
            check_grads(f, tuple(args[i] for i in nums), order=1, modes=case.modes)
    run()
