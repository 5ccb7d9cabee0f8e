"""Documented limits: options fungrad does not support raise NotImplementedError
with a message naming the option (and, where there is one, what to do instead),
never a wrong answer."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
import fungrad.scipy.linalg as fsl
from fungrad import lax
from fungrad.scipy import special
from fungrad.sharding import Mesh, P


def _two_axis_mesh():
    from fungrad.distributed import simulated_devices
    return Mesh(np.array(simulated_devices(4), dtype=object).reshape(2, 2), ("a", "b"))


@pytest.mark.parametrize("call, message", [
    (lambda: fnp.geomspace(1 + 1j, 10 + 10j, 3), "geomspace: complex endpoints"),
    (lambda: fnp.sort(np.ones(3), order="x"), r"order= \(structured arrays\)"),
    (lambda: fnp.argsort(np.ones(3), order="x"), r"order= \(structured arrays\)"),
    (lambda: fnp.quantile(np.ones(3), 0.5, weights=np.ones(3)), "quantile: weights="),
    (lambda: fnp.nanquantile(np.ones(3), 0.5, weights=np.ones(3)), "nanquantile: weights="),
    (lambda: lax.linalg.qr(np.eye(3), pivoting=True), "pivoting=True"),
    (lambda: fsl.qr(np.eye(3), pivoting=True), "pivoting=True"),
    (lambda: fsl.polar(np.eye(3), method="qdwh"), "only method='svd'"),
    (lambda: special.factorial(3, exact=True), "exact=True.*math.factorial"),
    (lambda: special.zeta(3.0), r"q=None.*pass q=1"),
    (lambda: fnp.unique(np.ones(3), size=2, return_index=True), "unique with size="),
    (lambda: fungrad.nn.scaled_dot_general(np.ones((2, 2)), np.ones((2, 2)),
                                           (((1,), (0,)), ((), ())), configs=[object()]),
     "quantization configs"),
    (lambda: lax.platform_dependent(1.0, tpu=lambda v: v), "no branch for the platform 'cpu'"),
    (lambda: fungrad.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]),
                          axis_name="i")(np.ones(2)), "axis_index_groups"),
    (lambda: lax.reduce_window((np.ones(4), np.ones(4)), (0.0, 0.0), lax.add, (2,), (1,),
                               "VALID"), "one operand array"),
    (lambda: fungrad.shard_map(lambda v: v, mesh=_two_axis_mesh(), in_specs=P("a"),
                               out_specs=P("a"), axis_names={"a"}), "axis_names"),
])
def test_unsupported_options_say_so(call, message):
    with pytest.raises(NotImplementedError, match=message):
        call()
