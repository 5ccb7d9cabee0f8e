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
])
def test_unsupported_options_say_so(call, message):
    with pytest.raises(NotImplementedError, match=message):
        call()
