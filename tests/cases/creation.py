"""Cases for fungrad.numpy array creation (fungrad/numpy/_creation.py).

Creation functions of traced values (full/full_like with a traced fill value,
linspace/logspace/geomspace of traced endpoints, diag, array of a list of
tracers) are checked like any differentiable function; creation functions of
static arguments only (arange, eye, zeros, ...) are checked for values and
staging with no array arguments at all.
"""
import numpy as np

import fungrad.numpy as fnp
from tests.harness import Arg, Case

ANY_DTYPE = ("float64", "float32", "int32", "bool")


def _static(name, fun, ref):
    """A creation function of static arguments only: values and staging."""
    return Case(name, fun, ref, [], grad_order=0, vmap=False)


CASES = [
    # --- array / asarray / astype ----------------------------------------------------
    Case("fnp.array_of_scalars", lambda x, y: fnp.array([x, y, x]),
         lambda x, y: np.array([x, y, x]), [Arg(()), Arg(())], prims=("concatenate",)),
    Case("fnp.array_nested", lambda x, y: fnp.array([[x, 1.0], [y, x]]),
         lambda x, y: np.array([[x, 1.0], [y, x]]), [Arg(()), Arg(())]),
    Case("fnp.array_of_arrays", lambda x, y: fnp.array((x, y)), lambda x, y: np.array((x, y)),
         [Arg("any", dtype=ANY_DTYPE), Arg("same", dtype=ANY_DTYPE)]),
    Case("fnp.array_dtype_ndmin", lambda x: fnp.array(x, dtype=np.float32, ndmin=3),
         lambda x: np.array(x, dtype=np.float32, ndmin=3), [Arg("any")],
         grad_rtol=1e-2, grad_atol=1e-2),
    Case("fnp.asarray", fnp.asarray, np.asarray, [Arg("any", dtype=ANY_DTYPE)]),
    Case("fnp.copy", fnp.copy, np.copy, [Arg("any", dtype=ANY_DTYPE)]),
    Case("fnp.astype_int", lambda x: fnp.astype(x, np.int32), lambda x: x.astype(np.int32),
         [Arg("any", dtype=ANY_DTYPE)], prims=("convert_element_type",), grad_order=0),
    Case("fnp.astype_float32", lambda x: fnp.astype(x, np.float32),
         lambda x: x.astype(np.float32), [Arg("any")], grad_order=1,
         grad_rtol=1e-3, grad_atol=1e-3),
    Case("fnp.astype_bool", lambda x: fnp.astype(x, bool), lambda x: x.astype(bool),
         [Arg("any", dtype=ANY_DTYPE, low=-1, high=1)], grad_order=0),
    # --- filled arrays -----------------------------------------------------------------
    Case("fnp.zeros_like", fnp.zeros_like, np.zeros_like, [Arg("any", dtype=ANY_DTYPE)]),
    Case("fnp.ones_like", fnp.ones_like, np.ones_like, [Arg("any", dtype=ANY_DTYPE)]),
    Case("fnp.empty_like_shape", lambda x: fnp.empty_like(x, shape=(2, 3)),
         lambda x: np.zeros_like(x, shape=(2, 3)), [Arg("any", dtype=ANY_DTYPE)],
         np_fun=False),  # np.empty_like's values are uninitialised: no NumPy twin
    Case("fnp.zeros_like_dtype", lambda x: fnp.zeros_like(x, dtype=np.int8),
         lambda x: np.zeros_like(x, dtype=np.int8), [Arg("any")]),
    Case("fnp.full_like", lambda x: fnp.full_like(x, 2.7), lambda x: np.full_like(x, 2.7),
         [Arg("any", dtype=ANY_DTYPE)]),
    Case("fnp.full_like_traced", lambda x, c: fnp.full_like(x, c),
         lambda x, c: np.full_like(x, c), [Arg("any"), Arg(())]),
    Case("fnp.full_traced", lambda c: fnp.full((2, 3), c), lambda c: np.full((2, 3), c),
         [Arg((), dtype=ANY_DTYPE)]),
    Case("fnp.full_broadcast", lambda v: fnp.full((2, 3), v, dtype=np.float32),
         lambda v: np.full((2, 3), v, dtype=np.float32), [Arg((3,))],
         grad_rtol=1e-2, grad_atol=1e-2),
    Case("fnp.zeros_of_shape", lambda x: fnp.zeros(x.shape, np.int32) + x,
         lambda x: np.zeros(x.shape, np.int32) + x, [Arg("any")]),
    _static("fnp.zeros", lambda: fnp.zeros((2, 3)), lambda: np.zeros((2, 3))),
    _static("fnp.ones_int", lambda: fnp.ones(4, dtype=int), lambda: np.ones(4, dtype=int)),
    _static("fnp.full_static", lambda: fnp.full((3,), 7), lambda: np.full((3,), 7)),
    _static("fnp.empty", lambda: fnp.empty((0, 2)), lambda: np.empty((0, 2))),
    # --- ranges ----------------------------------------------------------------------
    _static("fnp.arange_int", lambda: fnp.arange(5), lambda: np.arange(5)),
    _static("fnp.arange_float", lambda: fnp.arange(1, 4.0, 0.5), lambda: np.arange(1, 4.0, 0.5)),
    _static("fnp.arange_neg", lambda: fnp.arange(5, -3, -2, dtype=np.int8),
            lambda: np.arange(5, -3, -2, dtype=np.int8)),
    Case("fnp.linspace", lambda a, b: fnp.linspace(a, b, 5), lambda a, b: np.linspace(a, b, 5),
         [Arg(()), Arg(())]),
    Case("fnp.linspace_arrays", lambda a, b: fnp.linspace(a, b, 4, axis=-1),
         lambda a, b: np.linspace(a, b, 4, axis=-1), [Arg("any"), Arg("bcast")]),
    Case("fnp.linspace_no_endpoint", lambda a, b: fnp.linspace(a, b, 3, endpoint=False, retstep=True),
         lambda a, b: np.linspace(a, b, 3, endpoint=False, retstep=True), [Arg((2,)), Arg(())]),
    Case("fnp.linspace_one", lambda a, b: fnp.linspace(a, b, 1), lambda a, b: np.linspace(a, b, 1),
         [Arg(()), Arg(())]),
    Case("fnp.linspace_float32", lambda a: fnp.linspace(a, 2, 6), lambda a: np.linspace(a, 2, 6),
         [Arg((), dtype="float32")], rtol=1e-6),
    Case("fnp.linspace_int_dtype", lambda a, b: fnp.linspace(a, b, 7, dtype=int),
         lambda a, b: np.linspace(a, b, 7, dtype=int), [Arg((), low=-9, high=9), Arg((), low=-9, high=9)],
         grad_order=0),
    Case("fnp.logspace", lambda a, b: fnp.logspace(a, b, 4), lambda a, b: np.logspace(a, b, 4),
         [Arg((), low=-1, high=1), Arg((), low=-1, high=1)]),
    Case("fnp.logspace_base", lambda a, b: fnp.logspace(a, b, 3, base=b + 3.5, axis=-1),
         lambda a, b: np.logspace(a, b, 3, base=b + 3.5, axis=-1),
         [Arg((2,), low=-1, high=1), Arg((2,), low=-1, high=1)]),
    Case("fnp.geomspace", lambda a, b: fnp.geomspace(a, b, 5), lambda a, b: np.geomspace(a, b, 5),
         [Arg((), low=0.5, high=4), Arg((), low=0.5, high=4)]),
    Case("fnp.geomspace_negative", lambda a, b: fnp.geomspace(-a, -b, 3, endpoint=False),
         lambda a, b: np.geomspace(-a, -b, 3, endpoint=False),
         [Arg((2,), low=0.5, high=4), Arg((2,), low=0.5, high=4)]),
    # --- matrices ----------------------------------------------------------------------
    _static("fnp.eye", lambda: fnp.eye(3, 4, k=1), lambda: np.eye(3, 4, k=1)),
    _static("fnp.identity", lambda: fnp.identity(3, dtype=int), lambda: np.identity(3, dtype=int)),
    _static("fnp.tri", lambda: fnp.tri(3, 5, -1), lambda: np.tri(3, 5, -1)),
    Case("fnp.diag", fnp.diag, np.diag, [Arg("vec", dtype=ANY_DTYPE)], prims=("pad",)),
    Case("fnp.diag_k", lambda v: fnp.diag(v, 2), lambda v: np.diag(v, 2), [Arg("vec")]),
    Case("fnp.diag_negative_k", lambda v: fnp.diag(v, -1), lambda v: np.diag(v, -1), [Arg("vec")]),
    Case("fnp.diag_of_matrix", lambda m: fnp.diag(m, -1), lambda m: np.diag(m, -1), [Arg("mat")]),
    Case("fnp.diagflat", lambda m: fnp.diagflat(m, 1), lambda m: np.diagflat(m, 1), [Arg("mat")]),
    # --- grids ---------------------------------------------------------------------------
    Case("fnp.meshgrid", fnp.meshgrid, np.meshgrid, [Arg("vec"), Arg("vec"), Arg("vec")]),
    Case("fnp.meshgrid_ij", lambda x, y: fnp.meshgrid(x, y, indexing="ij"),
         lambda x, y: np.meshgrid(x, y, indexing="ij"), [Arg("vec"), Arg("vec")]),
    Case("fnp.meshgrid_sparse", lambda x, y: fnp.meshgrid(x, y, sparse=True),
         lambda x, y: np.meshgrid(x, y, sparse=True), [Arg("vec"), Arg("vec")]),
    _static("fnp.fromfunction", lambda: fnp.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
            lambda: np.fromfunction(lambda i, j: i * 10 + j, (2, 3))),
]
