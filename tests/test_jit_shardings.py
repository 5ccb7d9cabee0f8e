"""jit(f, in_shardings=..., out_shardings=...) in one process: the arguments are
checked against the shardings (tree prefix, mesh axes dividing dimensions),
the outputs placed by out_shardings; values are jit's (the cluster case is in
tests/test_distributed.py)."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad.distributed import simulated_devices
from fungrad.sharding import Mesh, NamedSharding, P

MESH = Mesh(np.array(fungrad.devices(), dtype=object), ("data",))
BATCH = NamedSharding(MESH, P("data"))


def test_values_are_jits_and_outputs_carry_their_sharding():
    f = fungrad.jit(lambda w, x: (x @ w, fnp.sum(x)), in_shardings=(None, BATCH),
                    out_shardings=(BATCH, None))
    w, x = np.arange(3.0), np.ones((4, 3))
    y, total = f(w, x)
    np.testing.assert_array_equal(np.asarray(y), x @ w)
    assert y.sharding == BATCH and float(total) == 12.0
    # under grad and vmap the shardings are placement only
    g = fungrad.grad(lambda w: fnp.sum(f(w, x)[0]))(w)
    np.testing.assert_array_equal(g, x.sum(0))
    single = fungrad.jit(lambda x: x * 2, in_shardings=BATCH)   # one sharding for every leaf
    np.testing.assert_array_equal(single(np.ones(2)), [2.0, 2.0])


def test_bad_shardings_name_the_argument_shape_and_mesh():
    two = Mesh(np.array(simulated_devices(2), dtype=object), ("data",))
    f = fungrad.jit(lambda x: x * 2, in_shardings=NamedSharding(two, P("data")))
    with pytest.raises(ValueError, match=r"argument \[0\] \(shape \(3,\), mesh \{'data': 2\}\)"
                                         r".*not divisible by 2"):
        f(np.ones(3))
    g = fungrad.jit(lambda x, y: x * y, in_shardings=(BATCH, BATCH, BATCH))
    with pytest.raises(ValueError, match="in_shardings must be a Sharding or a pytree prefix"):
        g(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        fungrad.jit(lambda x: x, in_sharding=BATCH)
