"""jax.ops (segment reductions) and jax.image (resize, scale_and_translate).

Values and gradients against numbers recorded from JAX 0.10.2
(tools/gen_segment_reference.py, tools/gen_image_reference.py), against a
NumPy loop (segments) and against closed forms (image kernels); every
transform against eager.
"""
import json
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as jnp
from fungrad import image, lax, ops
from fungrad.test_util import check_grads

DATA = os.path.join(os.path.dirname(__file__), "data")


def _load(name):
    with open(os.path.join(DATA, name)) as fh:
        return json.load(fh)


def _dec(rec):
    return np.array([float(v) for v in rec["values"]]).reshape(rec["shape"])


# --- segment reductions ---------------------------------------------------------

SEGMENTS = _load("segment_reference.json")


@pytest.mark.parametrize("rec", SEGMENTS["float_cases"],
                         ids=lambda r: f"{r['case']}-{r['op']}")
def test_segment_matches_jax(rec):
    fn = getattr(ops, f"segment_{rec['op']}")
    x, w = np.asarray(rec["data"]), np.asarray(rec["w"])

    def f(x):
        return fn(x, jnp.asarray(rec["ids"]), num_segments=rec["num_segments"],
                  bucket_size=rec["bucket_size"])
    want = np.array([float(v) for v in rec["value"]]).reshape(rec["shape"])
    np.testing.assert_allclose(f(x), want, rtol=1e-14)
    if rec["grad"] is not None:
        g = fungrad.grad(lambda x: jnp.sum(jnp.where(jnp.isfinite(f(x)), w * f(x), 0.0)))(x)
        np.testing.assert_allclose(g, np.array([float(v) for v in rec["grad"]])
                                   .reshape(x.shape), rtol=1e-13)


def test_segment_integers_match_jax():
    rec = SEGMENTS["int_case"]
    data = jnp.asarray(rec["data"], jnp.int32)
    for op in ("sum", "prod", "max", "min"):
        out = getattr(ops, f"segment_{op}")(data, jnp.asarray(rec["ids"]),
                                            num_segments=rec["num_segments"])
        assert out.dtype == np.int32
        assert out.tolist() == rec[op]


def _loop_reference(op, data, ids, n):
    reduce = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
    empty = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[op]
    out = np.full((n,) + data.shape[1:], empty)
    for k in range(n):
        rows = data[ids == k]
        if len(rows):
            out[k] = reduce(rows, axis=0)
    return out


segment_inputs = st.tuples(st.integers(0, 9), st.integers(1, 5), st.integers(0, 3)).flatmap(
    lambda t: st.tuples(
        st.lists(st.floats(-4, 4, allow_nan=False), min_size=t[0] * t[2] or t[0],
                 max_size=t[0] * t[2] or t[0]).map(
            lambda v, t=t: np.asarray(v, np.float64).reshape((t[0],) + ((t[2],) if t[2] else ()))),
        st.lists(st.integers(-2, t[1] + 1), min_size=t[0], max_size=t[0]).map(np.asarray),
        st.just(t[1])))


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@given(segment_inputs)
def test_segment_against_loop(op, args):
    data, ids, n = args
    ids = ids.astype(np.int64)
    out = getattr(ops, f"segment_{op}")(data, ids, num_segments=n)
    np.testing.assert_allclose(out, _loop_reference(op, data, ids, n), rtol=1e-12)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_segment_transforms(op):
    fn = getattr(ops, f"segment_{op}")
    rng = np.random.default_rng(0)
    data = rng.permutation(24).reshape(8, 3) / 7.0 + 0.5      # distinct: no max ties
    ids = np.array([2, 0, 2, 1, 0, 2, 3, 1])

    def f(x):
        return fn(x, ids, num_segments=5)[:4]               # segment 4 is empty
    check_grads(f, (data,), order=2)
    np.testing.assert_allclose(fungrad.jit(f)(data), f(data), rtol=1e-15)
    batch = np.stack([data, data[::-1], 2 * data])
    np.testing.assert_allclose(fungrad.vmap(f)(batch), np.stack([f(b) for b in batch]),
                               rtol=1e-15)
    # vmap over the ids too
    id_batch = np.stack([ids, ids[::-1], np.roll(ids, 1)])
    got = fungrad.vmap(lambda i: fn(data, i, num_segments=4))(id_batch)
    np.testing.assert_allclose(got, np.stack([fn(data, i, num_segments=4) for i in id_batch]),
                               rtol=1e-15)


def test_segment_modes_and_buckets():
    data = np.array([1.0, 2.0, 4.0, 8.0])
    ids = np.array([0, 5, -1, 1])
    np.testing.assert_array_equal(ops.segment_sum(data, ids, 2), [1.0, 8.0])
    np.testing.assert_array_equal(ops.segment_sum(data, ids, 2, mode="clip"), [5.0, 10.0])
    np.testing.assert_array_equal(
        ops.segment_sum(data, ids, 2, mode=lax.GatherScatterMode.CLIP), [5.0, 10.0])
    np.testing.assert_array_equal(ops.segment_sum(data, np.array([0, 2, 2, 1])), [1, 8, 6])
    x = np.linspace(-1, 1, 11)
    i = np.array([0, 1, 1, 2, 0, 0, 2, 1, 1, 0, 2])
    for op in ("sum", "max", "min", "prod"):
        fn = getattr(ops, f"segment_{op}")
        np.testing.assert_allclose(fn(x, i, 3, bucket_size=4), fn(x, i, 3), rtol=1e-13)


def test_segment_bad_input():
    with pytest.raises(fungrad.errors.ConcretizationTypeError, match="num_segments"):
        fungrad.jit(lambda i: ops.segment_sum(np.ones(3), i))(np.array([0, 1, 1]))
    with pytest.raises(TypeError, match="segment_ids must be integers"):
        ops.segment_sum(np.ones(3), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_max(np.ones((3, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="non-negative"):
        ops.segment_min(np.ones(3), np.array([0, 1, 1]), num_segments=-1)
    with pytest.raises(NotImplementedError, match="ONE_HOT"):
        ops.segment_sum(np.ones(3), np.array([0, 1, 1]), 2, mode=lax.GatherScatterMode.ONE_HOT)


# --- image --------------------------------------------------------------------

IMAGES = _load("image_reference.json")


@pytest.mark.parametrize("rec", IMAGES["resize"],
                         ids=lambda r: f"{r['method']}-{r['shape']}-{r['antialias']}")
def test_resize_matches_jax(rec):
    out = image.resize(np.asarray(IMAGES["image"]), rec["shape"], rec["method"],
                       antialias=rec["antialias"])
    assert out.shape == tuple(rec["out"]["shape"]) and out.dtype == rec["out"]["dtype"]
    np.testing.assert_allclose(out, _dec(rec["out"]), rtol=1e-12, atol=1e-13)


def test_resize_batched_and_integer_images_match_jax():
    batched = np.asarray(IMAGES["batched"])
    for rec in IMAGES["resize_nhwc"]:
        np.testing.assert_allclose(image.resize(batched, (2, 7, 3, 3), rec["method"]),
                                   _dec(rec["out"]), rtol=1e-12, atol=1e-12)
    ints = np.asarray(IMAGES["ints"], np.int32)
    for rec in IMAGES["resize_ints"]:
        out = image.resize(ints, (6, 3), rec["method"])
        assert out.dtype == rec["out"]["dtype"], rec["method"]
        np.testing.assert_allclose(out, _dec(rec["out"]), rtol=1e-6)


@pytest.mark.parametrize("rec", IMAGES["scale_and_translate"],
                         ids=lambda r: f"{r['method']}-{r['antialias']}")
def test_scale_and_translate_matches_jax(rec):
    img = np.asarray(IMAGES["image"])
    w = np.asarray(rec["weights"])

    def f(im, s, t):
        return image.scale_and_translate(im, (8, 5), (0, 1), s, t, rec["method"],
                                         antialias=rec["antialias"])
    s, t = np.asarray(rec["scale"]), np.asarray(rec["translation"])
    np.testing.assert_allclose(f(img, s, t), _dec(rec["out"]), rtol=1e-12, atol=1e-13)
    grads = fungrad.grad(lambda im, s, t: jnp.sum(w * f(im, s, t)), argnums=(0, 1, 2))(
        img, s, t)
    for got, want in zip(grads, rec["grads"]):
        np.testing.assert_allclose(got, _dec(want), rtol=1e-10, atol=1e-11)


def test_resize_closed_forms():
    ramp = np.arange(6.0)
    # linear upsampling of a ramp, away from the edges, is the ramp at the sample points
    up = image.resize(ramp, (12,), "linear")
    samples = (np.arange(12) + 0.5) / 2 - 0.5
    np.testing.assert_allclose(up[1:-1], samples[1:-1], rtol=1e-14)
    # area downsampling by 2 averages pairs; nearest keeps the dtype
    np.testing.assert_allclose(image.resize(ramp, (3,), "area"), [0.5, 2.5, 4.5], rtol=1e-14)
    assert image.resize(ramp.astype(np.int8), (3,), "nearest").dtype == np.int8
    # resizing to the same shape is the identity for every method
    img = np.random.default_rng(1).normal(size=(4, 5))
    for method in image.ResizeMethod:
        np.testing.assert_allclose(image.resize(img, (4, 5), method), img, rtol=1e-14)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "area", "nearest"])
def test_resize_transforms(method):
    img = np.random.default_rng(2).normal(size=(2, 5, 6))

    def f(x):
        return image.resize(x, (2, 3, 8), method)
    np.testing.assert_allclose(fungrad.jit(f)(img), f(img), rtol=1e-14)
    np.testing.assert_allclose(fungrad.vmap(lambda x: image.resize(x, (3, 8), method))(img),
                               f(img), rtol=1e-14)
    check_grads(f, (img,), order=1)


def test_image_bad_input():
    img = np.ones((4, 4))
    with pytest.raises(ValueError, match="length equal to the number of dimensions"):
        image.resize(img, (2,), "linear")
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(img, (2, 2), "bilinearr")
    with pytest.raises(ValueError, match="nearest"):
        image.scale_and_translate(img, (2, 2), (0, 1), np.ones(2), np.zeros(2), "nearest")
    with pytest.raises(ValueError, match="one entry per"):
        image.scale_and_translate(img, (2, 2), (0, 1), np.ones(3), np.zeros(2), "linear")
    with pytest.raises(TypeError, match="ResizeMethod"):
        image.resize(img, (2, 2), 3)


def test_available_as_jax_modules():
    from fungrad import jax_compat
    import importlib
    with jax_compat.installed():
        jax_ops = importlib.import_module("jax.ops")
        jax_image = importlib.import_module("jax.image")
        assert jax_ops.segment_sum is ops.segment_sum
        assert jax_image.resize is image.resize
