"""Cases for sorting: lax.sort/top_k/searchsorted, the gather/scatter-add pair
used by their derivatives, and the fungrad.numpy sorting functions."""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case

RC = ("float64", "complex128")   # complex numbers sort lexicographically (NumPy, JAX)
UNIQUE = Arg("nonempty", unique=True)
MAT_U = Arg("mat", RC, unique=True)   # complex: distinct real parts, so no ties


def _indices_below(n):
    """make= for indices in [-n, n) (negative ones count from the end, as NumPy)."""
    return lambda rng, shape, dtype: rng.integers(-n, n, size=shape).astype(dtype)


def _perm_rows(rng, shape, dtype):
    return np.argsort(rng.random(shape), axis=-1).astype(dtype)


def _ties(rng, shape, dtype):
    return rng.integers(0, 3, size=shape).astype(dtype)


def _np_sort_pair(x, y, axis=-1):
    perm = np.argsort(x, axis=axis, kind="stable")
    return (np.take_along_axis(x, perm, axis), np.take_along_axis(y, perm, axis))


def _np_top_k(x, k):
    perm = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, perm, -1), perm.astype(np.int32)


def _np_argsort_desc(x):
    return np.flip(x.shape[-1] - 1 - np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)


LAX_CASES = [
    Case("lax.sort", lambda x: lax.sort(x), lambda x: np.sort(x, axis=-1),
         [MAT_U], prims=("sort",)),
    Case("lax.sort_dim0", lambda x: lax.sort(x, dimension=0), lambda x: np.sort(x, axis=0),
         [Arg((4, 3, 2), RC, unique=True)], prims=("sort",)),
    Case("lax.sort_ties_stable", lambda x: lax.sort_key_val(x, lax.broadcasted_iota(np.int64, x.shape, 0), 0),
         lambda x: (np.sort(x, 0, kind="stable"), np.argsort(x, 0, kind="stable")),
         [Arg("mat", dtype="int32", make=_ties)], grad_order=0, prims=("sort",)),
    Case("lax.sort_key_val", lambda k, v: lax.sort_key_val(k, v),
         _np_sort_pair, [MAT_U, Arg("same")], prims=("sort",)),
    Case("lax.sort_num_keys2", lambda a, b, c: lax.sort((a, b, c), dimension=0, num_keys=2),
         lambda a, b, c: tuple(np.take_along_axis(o, np.lexsort((b, a), axis=0), 0)
                               for o in (a, b, c)),
         [Arg("mat", dtype="int32", make=_ties, diff=False),
          Arg("same", dtype="int32", make=_ties, diff=False), Arg("same")],
         prims=("sort",)),
    Case("lax.top_k", lambda x: lax.top_k(x, 2), lambda x: _np_top_k(x, 2),
         [Arg((3, 5), unique=True)], prims=("top_k",)),
    Case("lax.top_k_vec", lambda x: lax.top_k(x, 4), lambda x: _np_top_k(x, 4),
         [Arg((4,), unique=True)], prims=("top_k",)),
    Case("lax.take_along_axis", lambda x, i: lax.take_along_axis(x, i, 1),
         lambda x, i: np.take_along_axis(x, i, 1),
         [Arg((4, 3), RC), Arg((4, 5), dtype="int64", make=_indices_below(3), diff=False)],
         prims=("take_along_axis",)),
    Case("lax.put_along_axis_add", lambda u, i: lax.put_along_axis_add(u, i, 0, (4, 4)),
         lambda u, i: _np_put_add(u, i, 0, (4, 4)),
         [Arg((5, 4), RC), Arg((5, 4), dtype="int64", make=_indices_below(4), diff=False)],
         prims=("put_along_axis_add",)),
    Case("lax.searchsorted", lambda a, v: lax.searchsorted(a, v),
         lambda a, v: np.searchsorted(a, v), [Arg((6,), make=lambda r, s, d: np.sort(r.uniform(-3, 3, s))), Arg("any")],
         prims=("searchsorted",), grad_order=0),
    Case("lax.searchsorted_right", lambda a, v: lax.searchsorted(a, v, side="right"),
         lambda a, v: np.searchsorted(a, v, side="right"),
         [Arg((5,), dtype="int64", make=lambda r, s, d: np.sort(r.integers(0, 4, s))),
          Arg("any", dtype="int64", low=-1, high=5)], prims=("searchsorted",), grad_order=0),
]


def _np_put_add(u, i, axis, shape):
    out = np.zeros(shape, u.dtype)
    idx = list(np.ix_(*[np.arange(n) for n in i.shape]))
    idx[axis] = i
    np.add.at(out, tuple(idx), u)
    return out


NP_CASES = [
    Case("fnp.sort", lambda x: fnp.sort(x), lambda x: np.sort(x), [MAT_U]),
    Case("fnp.sort_axis0", lambda x: fnp.sort(x, axis=0), lambda x: np.sort(x, axis=0),
         [Arg((3, 4, 2), RC, unique=True)]),
    Case("fnp.sort_none", lambda x: fnp.sort(x, axis=None), lambda x: np.sort(x, axis=None),
         [Arg("any", RC, unique=True)]),
    Case("fnp.sort_descending", lambda x: fnp.sort(x, descending=True),
         lambda x: np.flip(np.sort(x, axis=-1), -1), [MAT_U],
         np_fun=False),  # NumPy: no descending=
    Case("fnp.sort_ints", lambda x: fnp.sort(x, axis=0), lambda x: np.sort(x, axis=0),
         [Arg("mat", dtype=("int8", "bool", "uint32"), low=0, high=5)], grad_order=0),
    Case("fnp.argsort", lambda x: fnp.argsort(x), lambda x: np.argsort(x, kind="stable"),
         [Arg("mat", dtype="int32", make=_ties)], grad_order=0),
    Case("fnp.argsort_none", lambda x: fnp.argsort(x, axis=None),
         lambda x: np.argsort(x, axis=None, kind="stable"), [Arg("any", RC, unique=True)],
         grad_order=0),
    Case("fnp.argsort_descending", lambda x: fnp.argsort(x, descending=True),
         _np_argsort_desc, [Arg("mat", dtype="int32", make=_ties)], grad_order=0,
         np_fun=False),  # NumPy: no descending=
    Case("fnp.lexsort", lambda a, b: fnp.lexsort((a, b)), lambda a, b: np.lexsort((a, b)),
         [Arg("vec", dtype="int32", make=_ties), Arg("same", dtype="int32", make=_ties)],
         grad_order=0),
    Case("fnp.searchsorted", lambda a, v: fnp.searchsorted(a, v, side="right"),
         lambda a, v: np.searchsorted(a, v, side="right"),
         [Arg((6,), dtype="int32", make=lambda r, s, d: np.sort(r.integers(0, 5, s)).astype(d)),
          Arg("any", low=-1, high=6)], grad_order=0),
    Case("fnp.searchsorted_sorter", lambda a, v: fnp.searchsorted(a, v, sorter=fnp.argsort(a)),
         lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)),
         [Arg((5,), unique=True), Arg("any")], grad_order=0),
    Case("fnp.partition_kth", lambda x: lax.slice(fnp.partition(x, 2, axis=-1), (0, 2), (x.shape[0], 3)),
         lambda x: np.partition(x, 2, axis=-1)[:, 2:3], [Arg((3, 4), unique=True)]),
    Case("fnp.argpartition_kth", lambda x: lax.slice(fnp.argpartition(x, 1), (0, 1), (x.shape[0], 2)),
         lambda x: np.argpartition(x, 1)[:, 1:2], [Arg((3, 4), unique=True)], grad_order=0),
]

CASES = LAX_CASES + NP_CASES
