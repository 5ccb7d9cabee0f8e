"""``jax.image``: resizing, scaling and translating images by separable kernels.

Every spatial dimension is resampled by one weight matrix of shape
``(input size, output size)`` whose columns are the kernel evaluated at the
distances between an output pixel's sample point and the input pixels,
normalised to sum to one (JAX's construction, half-centred pixels).  The
image is contracted with each matrix in turn, so every transform goes
through ``dot_general``'s rules, and the weights are built with
``fungrad.numpy``: ``scale_and_translate`` is differentiable in the scale and
translation too, as in JAX.

``antialias`` widens the kernel by the downscaling factor, so that it
averages over the input pixels an output pixel covers.  ``NEAREST`` picks
input pixels by JAX's float32 rule and keeps the input's dtype; every other
method computes in the inexact dtype of the image.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from fungrad.core import get_aval

__all__ = ["resize", "scale_and_translate", "ResizeMethod"]


class ResizeMethod(enum.Enum):
    """``jax.image.ResizeMethod``."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        for names, method in _METHOD_NAMES:
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"; use one of '
                         f'{sorted(n for names, _ in _METHOD_NAMES for n in names)}')


_METHOD_NAMES = (
    (("nearest",), ResizeMethod.NEAREST),
    (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
    (("lanczos3",), ResizeMethod.LANCZOS3),
    (("lanczos5",), ResizeMethod.LANCZOS5),
    (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
    (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
    (("area",), ResizeMethod.AREA),
)


# --- kernels: functions of the (non-negative) distance x ------------------------

def _triangle(fnp, x):
    return fnp.maximum(0, 1 - fnp.abs(x))


def _keys_cubic(fnp, x):
    """Keys' cubic convolution kernel with a = -0.5."""
    near = ((1.5 * x - 2.5) * x) * x + 1.
    far = ((-0.5 * x + 2.5) * x - 4.) * x + 2.
    return fnp.where(x >= 2., 0., fnp.where(x >= 1., far, near))


def _opencv_cubic(fnp, x):
    """The cubic kernel with a = -0.75 (OpenCV's and PyTorch's bicubic)."""
    a = -0.75
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return fnp.where(x >= 2.0, 0.0, fnp.where(x >= 1.0, far, near))


def _lanczos(radius):
    def kernel(fnp, x):
        y = radius * fnp.sin(np.pi * x) * fnp.sin(np.pi * x / radius)
        # sin(pi x)/(pi x) -> 1 at 0: the guarded division keeps its gradient finite
        ratio = fnp.divide(y, fnp.where(x != 0, np.pi ** 2 * x ** 2, 1))
        return fnp.where(x > radius, 0., fnp.where(x > 1e-3, ratio, 1))
    return kernel


_AREA = "area"      # not a kernel of the distance: overlaps of pixel intervals

#: method -> (radius, kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


# --- weight matrices --------------------------------------------------------

def _normalised(fnp, weights, axis_sums):
    """Columns divided by their sums; a column whose weights (nearly) cancel is 0."""
    tiny = 1000. * float(np.finfo(np.float32).eps)
    safe = fnp.where(axis_sums != 0, axis_sums, 1)
    return fnp.where(fnp.abs(axis_sums) > tiny, weights / safe, 0)


def _weight_matrix(fnp, in_size, out_size, scale, translation, method, antialias):
    """The ``(in_size, out_size)`` resampling matrix of one dimension."""
    radius, kernel = _KERNELS[method]
    dtype = fnp.result_type(scale, translation)
    inv_scale = 1. / scale
    edge_padding = method is ResizeMethod.CUBIC_PYTORCH and not antialias
    # (CUBIC_PYTORCH without antialiasing: the kernel never widens, so the
    # edges are repeated for `radius` pixels)
    pad = radius if edge_padding else 0
    positions = fnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        left = fnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        overlap = (fnp.minimum(right[None, :], positions[:, None] + 1.0)
                   - fnp.maximum(left[None, :], positions[:, None]))
        weights = fnp.maximum(0.0, overlap)
    else:
        kernel_scale = fnp.maximum(inv_scale, 1.) if antialias else 1.
        samples = ((fnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale
                   - translation * inv_scale - 0.5)
        weights = kernel(fnp, fnp.abs(samples[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        # fold the pixels past the edges onto the edge pixels they repeat
        clamped = np.clip(np.arange(-pad, in_size + pad), 0, in_size - 1)
        folding = (clamped[None, :] == np.arange(in_size)[:, None]).astype(dtype)
        weights = fnp.matmul(folding, weights)
        return _normalised(fnp, weights, fnp.sum(weights, axis=0, keepdims=True))
    weights = _normalised(fnp, weights, fnp.sum(weights, axis=0, keepdims=True))
    if kernel is _AREA:
        return weights
    samples = ((fnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale
               - translation * inv_scale - 0.5)
    inside = fnp.logical_and(samples >= -0.5, samples <= in_size - 0.5)
    return fnp.where(inside[None, :], weights, 0)


def _resample(fnp, image, out_shape, spatial_dims, scales, translations, method,
              antialias):
    """Contract each spatial dimension of ``image`` with its weight matrix."""
    out = image
    dtype = get_aval(image).dtype
    for d, scale, translation in zip(spatial_dims, scales, translations):
        in_size = get_aval(out).shape[d]
        weights = _weight_matrix(fnp, in_size, out_shape[d], scale, translation, method,
                                 antialias).astype(dtype)
        out = fnp.moveaxis(fnp.tensordot(out, weights, axes=([d], [0])), -1, d)
    return out


# --- public functions ---------------------------------------------------------

def _method(method) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a string or a jax.image.ResizeMethod, got {method!r}")
    return method


def _checked_shape(who, shape, image):
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{who}: shape must be a sequence of ints, got {shape!r}") from None
    if len(shape) != get_aval(image).ndim:
        raise ValueError(f"{who}: shape must have length equal to the number of dimensions "
                         f"of the image; {shape} vs {get_aval(image).shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{who}: shape must be non-negative, got {shape}")
    return shape


def _inexact_image(fnp, image):
    from fungrad.numpy._dtypes import inexact_dtype
    dtype = get_aval(image).dtype
    return image.astype(inexact_dtype(dtype, (image,))) if dtype.kind not in "fc" else image


def _resize_nearest(fnp, image, shape):
    """JAX's nearest pixel: ``floor((i + 0.5) * in / out)`` computed in float32."""
    for d, (m, n) in enumerate(zip(get_aval(image).shape, shape)):
        if m == n:
            continue
        offsets = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m)
        offsets = np.floor(offsets / np.float32(n)).astype(np.int32)
        image = fnp.take(image, offsets, axis=d, mode="clip")
    return image


def resize(image, shape, method, antialias: bool = True, precision=None):
    """``jax.image.resize``: ``image`` resampled to ``shape`` (every dimension;
    leave batch and channel sizes unchanged).  ``precision`` is accepted for
    JAX's signature; fungrad computes in the image's dtype."""
    import fungrad.numpy as fnp
    image = fnp.asarray(image)
    shape = _checked_shape("resize", shape, image)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(fnp, image, shape)
    image = _inexact_image(fnp, image)
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    in_shape = get_aval(image).shape
    dims = tuple(d for d in range(len(shape)) if in_shape[d] != shape[d])
    scales = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in dims]
    return _resample(fnp, image, shape, dims, scales, [0.] * len(dims), method, antialias)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias: bool = True, precision=None):
    """``jax.image.scale_and_translate``: the output pixel at ``y`` samples the
    input at ``(y - translation) / scale`` in each of ``spatial_dims`` (pixel
    centres at ``i + 0.5``); samples outside the input give 0.  ``scale`` and
    ``translation`` may be traced (and differentiated)."""
    import fungrad.numpy as fnp
    image = fnp.asarray(image)
    shape = _checked_shape("scale_and_translate", shape, image)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate: nearest-neighbour resampling is not "
                         "supported (as in JAX); use resize(..., 'nearest') or a kernel method")
    ndim = len(shape)
    spatial_dims = tuple(operator.index(d) % ndim if -ndim <= d < ndim else
                         _bad_dim(d, ndim) for d in spatial_dims)
    scale, translation = fnp.asarray(scale), fnp.asarray(translation)
    if get_aval(scale).shape != (len(spatial_dims),) or \
            get_aval(translation).shape != (len(spatial_dims),):
        raise ValueError(f"scale_and_translate: scale and translation need one entry per "
                         f"spatial dimension ({len(spatial_dims)}); got shapes "
                         f"{get_aval(scale).shape} and {get_aval(translation).shape}")
    image = _inexact_image(fnp, image)
    scale, translation = (a if get_aval(a).dtype.kind in "fc" else _inexact_image(fnp, a)
                          for a in (scale, translation))
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    return _resample(fnp, image, shape, spatial_dims, list(scale), list(translation),
                     method, antialias)


def _bad_dim(d, ndim):
    raise ValueError(f"scale_and_translate: spatial dimension {d} is out of range for an "
                     f"image of {ndim} dimensions")
