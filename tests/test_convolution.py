"""Tests of fungrad.lax.convolution and fungrad.numpy's convolve/correlate.

* values against an independent loop reference (tests/cases/convolution.py)
  over random configurations: 1-3 spatial dims, strides, (negative) padding,
  lhs/rhs dilation, feature and batch groups, empty sizes;
* the transpose identity <u, T v> = <T^T u, v> for both arguments, where the
  transpose rules derive their paddings;
* layouts (strings, ConvDimensionNumbers), padding strings, jit, vmap (lhs,
  rhs, both mapped, at any axis), the wrappers conv / conv_with_general_padding
  / conv_transpose, numpy.convolve/correlate in every mode, and bad input.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
from fungrad.interpreters import codegen
from fungrad.lax.convolution import (conv, conv_general_dilated, conv_transpose,
                                     conv_with_general_padding, ConvDimensionNumbers,
                                     conv_general_dilated_p)
from fungrad.numpy._convolve import convolve, correlate
from fungrad.test_util import check_grads
from tests.cases.convolution import ref_conv


@st.composite
def configs(draw, min_spatial=0, max_nd=3):
    """(lhs, rhs, kwargs) of a random NCHW/OIHW convolution."""
    nd = draw(st.integers(1, max_nd))
    kind = draw(st.sampled_from(["plain", "feature", "batch"]))
    groups = draw(st.integers(1, 3)) if kind != "plain" else 1
    g, b = (groups, 1) if kind == "feature" else (1, groups)
    n = draw(st.integers(0 if min_spatial == 0 else 1, 2)) * b
    i, o = draw(st.integers(1, 2)), draw(st.integers(1, 2)) * groups
    ints = lambda lo, hi: tuple(draw(st.lists(st.integers(lo, hi), min_size=nd, max_size=nd)))
    s_in, k = ints(min_spatial, 5), ints(1, 3)
    kw = dict(window_strides=ints(1, 3), lhs_dilation=ints(1, 2), rhs_dilation=ints(1, 2),
              padding=tuple(zip(ints(-1, 2), ints(-1, 2))),
              feature_group_count=g, batch_group_count=b)
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    return rng.standard_normal((n, i * g) + s_in), rng.standard_normal((o, i) + k), kw


def _ref(lhs, rhs, kw):
    return ref_conv(lhs, rhs, kw["window_strides"], kw["padding"], kw["lhs_dilation"],
                    kw["rhs_dilation"], kw["feature_group_count"], kw["batch_group_count"])


@settings(max_examples=60, deadline=None)
@given(configs())
def test_values_against_loop_reference(cfg):
    lhs, rhs, kw = cfg
    got = conv_general_dilated(lhs, rhs, **kw)
    want = _ref(lhs, rhs, kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(configs(), st.randoms(use_true_random=False), st.booleans())
def test_layouts_and_memory_orders_against_loop_reference(cfg, rnd, strided_memory):
    # the kernel works channels-last whatever the operands' layout: random
    # dimension_numbers, operands stored in another axis order or strided
    lhs, rhs, kw = cfg
    nd = lhs.ndim
    perms = [tuple(rnd.sample(range(nd), nd)) for _ in range(3)]
    want = _ref(lhs, rhs, kw)

    def stored(x, perm):                   # axis j holds x's (canonical) axis perm[j]
        y = np.transpose(x, perm)
        if strided_memory:                 # same values, non-contiguous memory
            y = np.repeat(y, 2, axis=-1)[..., ::2] if y.shape[-1] else y
        else:                              # another memory order of the same axes
            y = np.asfortranarray(y)
        return y
    lhs_spec = tuple(int(a) for a in np.argsort(perms[0]))
    rhs_spec = tuple(int(a) for a in np.argsort(perms[1]))
    out_spec = tuple(int(a) for a in np.argsort(perms[2]))
    dn = ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)
    f = lambda x, w: conv_general_dilated(x, w, dimension_numbers=dn, **kw)
    x, w = stored(lhs, perms[0]), stored(rhs, perms[1])
    for got in (f(x, w), fungrad.jit(f)(x, w)):
        np.testing.assert_allclose(np.transpose(got, out_spec), want,
                                   rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2), st.integers(8, 10), st.integers(1, 3), st.integers(0, 2),
       st.integers(0, 2**31 - 1), st.data())
def test_wide_inputs_tap_gemms_against_loop_reference(nd, i, o, n, seed, data):
    # 8+ input features and a small window take the one-GEMM-per-tap path
    # (kernels/conv.py): values, jit and both gradients
    ints = lambda lo, hi: tuple(data.draw(st.lists(st.integers(lo, hi), min_size=nd,
                                                   max_size=nd)))
    k, s_in = ints(1, 3), ints(1, 5)
    kw = dict(window_strides=ints(1, 2), lhs_dilation=ints(1, 2), rhs_dilation=ints(1, 2),
              padding=tuple(zip(ints(-1, 2), ints(-1, 2))), feature_group_count=1,
              batch_group_count=1)
    rng = np.random.default_rng(seed)
    lhs, rhs = rng.standard_normal((n, i) + s_in), rng.standard_normal((o, i) + k)
    want = _ref(lhs, rhs, kw)
    f = lambda x, w: conv_general_dilated(x, w, **kw)
    for got in (f(lhs, rhs), fungrad.jit(f)(lhs, rhs)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if want.size and n:
        u = rng.standard_normal(want.shape)
        ct_lhs, ct_rhs = fungrad.vjp(f, lhs, rhs)[1](u)
        v_lhs, v_rhs = rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape)
        np.testing.assert_allclose(np.vdot(u, f(v_lhs, rhs)), np.vdot(ct_lhs, v_lhs),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.vdot(u, f(lhs, v_rhs)), np.vdot(ct_rhs, v_rhs),
                                   rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(configs(min_spatial=1), st.integers(0, 2**31 - 1))
def test_transpose_identity_both_arguments(cfg, seed):
    lhs, rhs, kw = cfg
    rng = np.random.default_rng(seed)
    f = lambda x, w: conv_general_dilated(x, w, **kw)
    u = rng.standard_normal(f(lhs, rhs).shape)
    v_lhs, v_rhs = rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape)
    _, vjp_lhs = fungrad.vjp(lambda x: f(x, rhs), lhs)
    _, vjp_rhs = fungrad.vjp(lambda w: f(lhs, w), rhs)
    (ct_lhs,), (ct_rhs,) = vjp_lhs(u), vjp_rhs(u)
    assert ct_lhs.shape == lhs.shape and ct_rhs.shape == rhs.shape
    np.testing.assert_allclose(np.vdot(u, f(v_lhs, rhs)), np.vdot(ct_lhs, v_lhs), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.vdot(u, f(lhs, v_rhs)), np.vdot(ct_rhs, v_rhs), rtol=1e-9, atol=1e-9)


@settings(max_examples=8, deadline=None)
@given(configs(min_spatial=1, max_nd=2))
def test_check_grads_order_2(cfg):
    lhs, rhs, kw = cfg
    check_grads(lambda x, w: conv_general_dilated(x, w, **kw), (lhs, rhs), order=2)


@settings(max_examples=25, deadline=None)
@given(configs(), st.sampled_from([(0, None), (None, 0), (0, 0), (2, 1), (None, 3), (1, None)]),
       st.integers(1, 3))
def test_vmap_and_jit_against_loop(cfg, in_axes, size):
    lhs, rhs, kw = cfg
    f = lambda x, w: conv_general_dilated(x, w, **kw)
    rng = np.random.default_rng(0)
    xs = [lhs + rng.standard_normal(lhs.shape) for _ in range(size)]
    ws = [rhs + rng.standard_normal(rhs.shape) for _ in range(size)]
    bx = np.stack(xs, in_axes[0]) if in_axes[0] is not None else lhs
    bw = np.stack(ws, in_axes[1]) if in_axes[1] is not None else rhs
    want = np.stack([f(xs[j] if in_axes[0] is not None else lhs,
                       ws[j] if in_axes[1] is not None else rhs) for j in range(size)])
    np.testing.assert_allclose(fungrad.vmap(f, in_axes=in_axes)(bx, bw), want, atol=1e-10)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(f, in_axes=in_axes))(bx, bw), want,
                               atol=1e-10)
    np.testing.assert_allclose(fungrad.jit(f)(lhs, rhs), f(lhs, rhs), atol=1e-12)


def test_vmap_of_grad_and_layouts():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 2, 5, 4, 2)), rng.standard_normal((3, 2, 2, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    loss = lambda x, w: (conv_general_dilated(x, w, (2, 1), "SAME", None, (1, 2), dn) ** 2).sum()
    g = fungrad.vmap(fungrad.grad(loss, argnums=(0, 1)), in_axes=(0, None))(x, w)
    for j in range(3):
        gj = fungrad.grad(loss, argnums=(0, 1))(x[j], w)
        np.testing.assert_allclose(g[0][j], gj[0], atol=1e-10)
        np.testing.assert_allclose(g[1][j], gj[1], atol=1e-10)


@pytest.mark.parametrize("specs", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC"),
                                   ("HNCW", "IWHO", "CWNH"), ("NWHC", "OIHW", "NCHW")])
def test_layout_strings(specs):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 2, 5, 3)), rng.standard_normal((4, 2, 3, 2))  # NCHW, OIHW
    want = ref_conv(x, w, (2, 1), [(1, 0), (0, 1)], (1, 2), (2, 1))              # NCHW
    lhs_s, rhs_s, out_s = specs
    # spatial dims are named by the letters; the permutation orders them as in rhs_spec
    xl = np.transpose(x, ["NCHW".index(ch) for ch in lhs_s])
    wl = np.transpose(w, ["OIHW".index(ch) for ch in rhs_s])
    # (as JAX) the spatial parameters follow the order of the spatial letters in rhs_spec
    order = ["HW".index(ch) for ch in rhs_s if ch in "HW"]
    params = [tuple(p[j] for j in order) for p in ((2, 1), [(1, 0), (0, 1)], (1, 2), (2, 1))]
    got = conv_general_dilated(xl, wl, *params, specs)
    np.testing.assert_allclose(got, np.transpose(want, ["NCHW".index(ch) for ch in out_s]),
                               atol=1e-12)
    spatial = "".join(ch for ch in rhs_s if ch in "HW")
    dn = ConvDimensionNumbers(*(tuple(s.index(ch) for ch in p) for s, p in
                                zip(specs, ("NC" + spatial, "OI" + spatial, "NC" + spatial))))
    got2 = conv_general_dilated(xl, wl, *params, dn)
    np.testing.assert_allclose(got2, got, atol=1e-12)


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID", "same"])
def test_padding_strings(padding):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 1, 7, 6)), rng.standard_normal((1, 1, 2, 3))
    strides, rd = (2, 3), (2, 1)
    pads = []
    for n, k, s, r in zip((7, 6), (2, 3), strides, rd):
        kd = (k - 1) * r + 1
        total = max((-(-n // s) - 1) * s + kd - n, 0) if padding != "VALID" else 0
        lo = total // 2 if padding.upper() != "SAME_LOWER" else total - total // 2
        pads.append((lo, total - lo))
    got = conv_general_dilated(x, w, strides, padding, rhs_dilation=rd)
    np.testing.assert_allclose(got, ref_conv(x, w, strides, pads, None, rd), atol=1e-12)
    if padding != "VALID":
        assert got.shape[2:] == (4, 2)


def test_wrappers_and_preferred_element_type():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 2, 2))
    np.testing.assert_allclose(conv(x, w, (1, 2), [(1, 1), (0, 0)]),
                               ref_conv(x, w, (1, 2), [(1, 1), (0, 0)]), atol=1e-12)
    np.testing.assert_allclose(conv_with_general_padding(x, w, (1, 1), [(0, 1), (1, 0)], (2, 1), (1, 2)),
                               ref_conv(x, w, (1, 1), [(0, 1), (1, 0)], (2, 1), (1, 2)), atol=1e-12)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    out = conv(x32, w32, (1, 1), "VALID")
    assert out.dtype == np.float32
    out64 = conv(x32, w32, (1, 1), "VALID", preferred_element_type=np.float64)
    assert out64.dtype == np.float64
    assert fungrad.jit(lambda a, b: conv(a, b, (1, 1), "VALID", preferred_element_type=np.float64))(
        x32, w32).dtype == np.float64
    g = fungrad.grad(lambda a: conv(a, w32, (1, 1), "VALID", preferred_element_type=np.float64).sum())(x32)
    assert g.dtype == np.float32
    xi, wi = rng.integers(-3, 3, (1, 2, 4)), rng.integers(-3, 3, (2, 2, 2))
    np.testing.assert_array_equal(conv(xi, wi, (1,), "VALID"), ref_conv(xi, wi, (1,), [(0, 0)]))


@pytest.mark.parametrize("stride,k,size", [(1, 3, 5), (2, 2, 6), (2, 3, 7), (3, 3, 9)])
def test_conv_transpose_is_the_gradient_of_conv(stride, k, size):
    # with transpose_kernel=True and 'VALID', conv_transpose is the lhs-gradient of the
    # forward conv (NHC / HIO layouts, the default of conv_transpose) when k >= s
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, size, 3)), rng.standard_normal((k, 3, 4))
    dn = ("NHC", "HIO", "NHC")
    fwd = lambda a: conv_general_dilated(a, w, (stride,), "VALID", dimension_numbers=dn)
    y, vjp = fungrad.vjp(fwd, x)
    ct = rng.standard_normal(y.shape)
    got = conv_transpose(ct, w, (stride,), "VALID", transpose_kernel=True)
    np.testing.assert_allclose(got, vjp(ct)[0], atol=1e-12)


def test_conv_transpose_same_and_explicit():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((1, 3, 4, 2)), rng.standard_normal((3, 2, 2, 5))  # NHWC, HWIO
    out = conv_transpose(x, w, (2, 2), "SAME")
    assert out.shape == (1, 6, 8, 5)
    explicit = conv_transpose(x, w, (2, 2), [(2, 1), (1, 1)])
    want = conv_general_dilated(x, w, (1, 1), [(2, 1), (1, 1)], (2, 2), None,
                                ("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(explicit, want, atol=1e-12)
    consistent = conv_transpose(x, w, (2, 2), [(0, 1), (1, 0)], use_consistent_padding=True)
    np.testing.assert_allclose(consistent, conv_transpose(x, w, (2, 2), [(2, 1), (0, 1)]),
                               atol=1e-12)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
def test_numpy_convolve_correlate(mode, dtype):
    rng = np.random.default_rng(6)
    for m in range(1, 6):
        for n in range(1, 6):
            a, v = rng.standard_normal(m), rng.standard_normal(n)
            if dtype == "complex128":
                a, v = a + 1j * rng.standard_normal(m), v + 1j * rng.standard_normal(n)
            a, v = (a * 3).astype(dtype), (v * 3).astype(dtype)
            for ours, theirs in ((convolve, np.convolve), (correlate, np.correlate)):
                got, want = ours(a, v, mode), theirs(a, v, mode)
                assert got.shape == want.shape and got.dtype == want.dtype, (ours, m, n)
                np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12,
                                           atol=1e-5, err_msg=f"{ours.__name__} {m} {n}")


def test_numpy_convolve_grads_jit_vmap():
    rng = np.random.default_rng(7)
    a, v = rng.standard_normal(6), rng.standard_normal(3)
    for mode in ("full", "same", "valid"):
        check_grads(lambda a, v: correlate(a, v, mode), (a, v), order=2)
        check_grads(lambda a, v: convolve(v, a, mode), (a, v), order=1)
        np.testing.assert_allclose(fungrad.jit(lambda a, v: convolve(a, v, mode))(a, v),
                                   np.convolve(a, v, mode), atol=1e-12)
    batch = rng.standard_normal((4, 6))
    np.testing.assert_allclose(fungrad.vmap(lambda a: correlate(a, v, "same"))(batch),
                               np.stack([np.correlate(r, v, "same") for r in batch]), atol=1e-12)


def test_jit_lowering_calls_the_numpy_helper():
    text, modules = codegen.lowered_source(
        conv_general_dilated_p, ["x", "w"], window_strides=(1,), padding=((0, 0),),
        lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=((0, 1, 2),) * 3,
        feature_group_count=1, batch_group_count=1, preferred_element_type=None)
    assert modules["_conv"].__name__ == "fungrad.lax.kernels.conv"
    assert "_conv.conv_general_dilated(x, w" in text


@pytest.mark.parametrize("lhs_shape,rhs_shape,kwargs,exc,match", [
    ((1, 2, 5), (3, 2, 2, 2), {}, TypeError, "same rank"),
    ((1, 3, 5), (2, 2, 2), {}, TypeError, "feature dimension"),
    ((1, 4, 5), (3, 2, 2), {"feature_group_count": 2}, TypeError, "multiple"),
    ((3, 2, 5), (2, 2, 2), {"batch_group_count": 2}, TypeError, "multiple"),
    ((1, 2, 5), (2, 2, 2), {"padding": "FULL"}, ValueError, "unknown padding"),
    ((1, 2, 5), (2, 2, 2), {"padding": [(1, 1), (0, 0)]}, ValueError, "one .low, high. pair"),
    ((1, 2, 5), (2, 2, 2), {"window_strides": (1, 1)}, ValueError, "window_strides"),
    ((1, 2, 5), (2, 2, 2), {"window_strides": (0,)}, ValueError, "positive"),
    ((1, 2, 5), (2, 2, 2), {"dimension_numbers": ("NCH", "OIW", "NCH")}, TypeError, "spatial"),
    ((1, 2, 5), (2, 2, 2), {"dimension_numbers": ("NNH", "OIH", "NCH")}, TypeError, "once"),
])
def test_bad_input_errors(lhs_shape, rhs_shape, kwargs, exc, match):
    kw = dict(window_strides=(1,), padding="VALID")
    kw.update(kwargs)
    with pytest.raises(exc, match=match):
        conv_general_dilated(np.ones(lhs_shape), np.ones(rhs_shape), **kw)


def test_bad_input_errors_numpy_and_dtypes():
    with pytest.raises(TypeError, match="same dtype"):
        conv(np.ones((1, 1, 3)), np.ones((1, 1, 2), np.float32), (1,), "VALID")
    with pytest.raises(ValueError, match="cannot be empty"):
        convolve(np.ones(3), np.ones(0))
    with pytest.raises(ValueError, match="1-dimensional"):
        correlate(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="mode"):
        convolve(np.ones(3), np.ones(2), "wide")


# ----------------------------------------------------------------------------
# The shape helpers JAX client libraries call, and dtype rules per layer
# ----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2), st.sampled_from(["SAME", "VALID", "SAME_LOWER", "pairs"]),
       st.sampled_from([None, "strings"]),
       st.integers(0, 2**31 - 1))
def test_conv_general_shape_tuple_is_the_output_shape(nd, padding, layout, seed):
    rng = np.random.default_rng(seed)
    spatial, k = tuple(rng.integers(1, 6, nd)), tuple(rng.integers(1, 4, nd))
    strides = tuple(int(s) for s in rng.integers(1, 3, nd))
    pads = [tuple(int(p) for p in rng.integers(-1, 3, 2)) for _ in range(nd)] \
        if padding == "pairs" else padding
    lhs, rhs = np.ones((2, 3) + spatial), np.ones((4, 3) + k)
    dn = None
    if layout == "strings":         # channels last, as flax/haiku call it
        letters = "HW"[:nd]
        dn = fungrad.lax.conv_dimension_numbers(
            (2,) + spatial + (3,), k + (3, 4), ("N" + letters + "C", letters + "IO",
                                                 "N" + letters + "C"))
        lhs, rhs = np.moveaxis(lhs, 1, -1), np.moveaxis(np.moveaxis(rhs, 0, -1), 0, -2)
    got = fungrad.lax.conv_general_shape_tuple(lhs.shape, rhs.shape, strides, pads, dn)
    assert got == conv_general_dilated(lhs, rhs, strides, pads, dimension_numbers=dn).shape
    assert isinstance(got, tuple) and all(type(d) is int for d in got)


@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 2), (0, 1)]])
@pytest.mark.parametrize("strides", [(1, 1), (2, 3)])
def test_conv_transpose_shape_tuple_is_the_output_shape(padding, strides):
    dn = fungrad.lax.conv_dimension_numbers((1, 5, 4, 3), (3, 2, 3, 8),
                                            ("NHWC", "HWIO", "NHWC"))
    assert dn == fungrad.lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    x, w = np.ones((1, 5, 4, 3)), np.ones((3, 2, 3, 8))
    want = conv_transpose(x, w, strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert fungrad.lax.conv_transpose_shape_tuple(x.shape, w.shape, strides, padding,
                                                  dn) == want.shape


def test_padtype_to_pads_gives_same_output_sizes():
    pads = fungrad.lax.padtype_to_pads((5, 6), (3, 2), (2, 2), "SAME")
    assert pads == ((1, 1), (0, 0))
    assert fungrad.lax.padtype_to_pads((5, 6), (3, 2), (2, 2), "VALID") == ((0, 0), (0, 0))
    with pytest.raises(ValueError, match="unknown padding 'FULL'"):
        fungrad.lax.padtype_to_pads((5,), (3,), (1,), "FULL")


def test_mixed_dtypes_promote_in_fungrad_numpy_and_raise_in_lax():
    f32, f64 = np.ones(4, np.float32), np.ones(2)
    assert convolve(f32, f64).dtype == np.float64          # jax.numpy's promotion
    assert convolve(f32, np.ones(2, np.float32)).dtype == np.float32
    # JAX's lattice (JAX 0.10.2 gives complex64; NumPy complex128)
    assert correlate(np.ones(4, np.int32), np.ones(2, np.complex64)).dtype == np.complex64
    assert fungrad.scipy.signal.convolve2d(np.ones((3, 3), np.float32),
                                           np.ones((2, 2))).dtype == np.float64
    with pytest.raises(TypeError, match=r"same dtype.*float32 and float64.*convert_element_type"):
        conv_general_dilated(f32[None, None], f64[None, None], (1,), "VALID")
