"""Record jax.image.resize / scale_and_translate results from real JAX.

    /path/to/jax-venv/bin/python tools/gen_image_reference.py

writes tests/data/image_reference.json (JAX version, x64 on): a fixed 2-D
image and a batched NHWC image resized up and down by every method, with and
without antialiasing, scale_and_translate with fractional scales and
translations, and the gradient of a weighted sum with respect to the image,
the scale and the translation.
"""
import json
import os

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "image_reference.json")
METHODS = ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]


def image_2d():
    return np.cos(np.arange(35.0).reshape(5, 7) * 0.7) + 0.1 * np.arange(35.0).reshape(5, 7)


def enc(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": a.dtype.name,
            "values": [repr(float(v)) for v in a.ravel()]}


def main():
    img = image_2d()
    resized = []
    for method in METHODS:
        for shape in [(9, 4), (3, 11), (5, 7), (2, 2)]:
            for antialias in (True, False):
                out = jax.image.resize(img, shape, method, antialias=antialias)
                resized.append({"method": method, "shape": list(shape),
                                "antialias": antialias, "out": enc(out)})
    batched = np.arange(2 * 4 * 6 * 3, dtype=np.float64).reshape(2, 4, 6, 3) ** 0.5
    nhwc = [{"method": m, "out": enc(jax.image.resize(batched, (2, 7, 3, 3), m))}
            for m in ("linear", "cubic", "nearest")]
    ints = np.arange(20, dtype=np.int32).reshape(4, 5)
    int_cases = [{"method": m, "out": enc(jax.image.resize(ints, (6, 3), m))}
                 for m in ("nearest", "linear")]
    st = []
    for method in ("linear", "cubic", "lanczos3", "area", "cubic-pytorch"):
        for antialias in (True, False):
            scale, trans = np.array([1.7, 0.6]), np.array([-0.8, 1.3])
            f = lambda im, s, t: jax.image.scale_and_translate(  # noqa: E731
                im, (8, 5), (0, 1), s, t, method, antialias=antialias)
            w = np.sin(np.arange(40.0)).reshape(8, 5)
            grads = jax.grad(lambda im, s, t: jnp.sum(w * f(im, s, t)), argnums=(0, 1, 2))(
                img, scale, trans)
            st.append({"method": method, "antialias": antialias, "scale": scale.tolist(),
                       "translation": trans.tolist(), "out": enc(f(img, scale, trans)),
                       "weights": w.tolist(),
                       "grads": [enc(g) for g in grads]})
    with open(OUT, "w") as fh:
        json.dump({"made_by": "tools/gen_image_reference.py", "jax": jax.__version__,
                   "image": img.tolist(), "resize": resized, "batched": batched.tolist(),
                   "resize_nhwc": nhwc, "ints": ints.tolist(), "resize_ints": int_cases,
                   "scale_and_translate": st}, fh, indent=0)


if __name__ == "__main__":
    main()
