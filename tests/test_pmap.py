"""fungrad.pmap on one process: the numbers of a named vmap (collectives
included), one lane per device, and JAX's error when the mapped axis is
longer than the number of devices."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax


def test_pmap_equals_named_vmap_with_collectives():
    n = fungrad.local_device_count()
    xs = np.arange(n * 3.0).reshape(n, 3) + 1.0

    def f(x, scale):
        return fnp.sin(x) * scale / lax.psum(x.sum(), "i")
    expected = fungrad.vmap(f, in_axes=(0, None), axis_name="i")(xs, 2.0)
    out = fungrad.pmap(f, axis_name="i", in_axes=(0, None))(xs, 2.0)
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    np.testing.assert_allclose(out, np.sin(xs) * 2.0 / xs.sum(), rtol=1e-14)
    # a static argument is handed to every lane as it is; kwargs map over axis 0
    g = fungrad.pmap(lambda x, power, y: x ** power + y, static_broadcasted_argnums=1)
    np.testing.assert_allclose(g(xs, 2, y=xs), xs ** 2 + xs)
    grads = fungrad.grad(lambda x: fungrad.pmap(fnp.sin)(x).sum())(xs)
    np.testing.assert_allclose(grads, np.cos(xs), rtol=1e-14)


def test_pmap_refuses_more_lanes_than_devices():
    n = fungrad.local_device_count()
    with pytest.raises(ValueError, match=f"requires {n + 1} logical devices"):
        fungrad.pmap(fnp.sin)(np.ones((n + 1, 2)))
    with pytest.raises(TypeError, match="callable"):
        fungrad.pmap(3)
