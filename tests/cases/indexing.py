"""Cases for indexing: the gather/scatter/dynamic-slice primitives
(fungrad/lax/indexing.py) and NumPy indexing in fungrad.numpy (``x[idx]``,
``x.at[idx]``, take, ...).  Index arrays are drawn in range (negative
entries included) so that NumPy's own indexing is the reference."""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from fungrad.numpy._indexing import getitem, _IndexUpdateHelper as at
from tests.harness import Arg, Case

# ``getitem(x, idx)`` is ``x[idx]`` for tracers; calling it directly also runs
# fungrad's indexing on the concrete arrays of the eager value test.

RC = ("float64", "complex128")       # gathers and scatters are linear: complex draws too
X = Arg((3, 4, 5), RC)
ANY_DTYPE = ("float64", "float32", "int32", "bool", "complex128")


def _ints(low, high):
    """Integer index values in [low, high] (valid and negative indices)."""
    return Arg("any", dtype="int64", low=low, high=high, diff=False)


def _scalar_int(low, high):
    return Arg((), dtype="int64", low=low, high=high, diff=False)


def _unique_rows(rng, shape, dtype):
    """Distinct indices into an axis of size 5, negative ones included."""
    n = int(np.prod(shape, dtype=np.int64))
    picks = rng.permutation(5)[:n] - rng.integers(0, 2, n) * 5
    return picks.reshape(shape).astype(dtype)


UNIQUE = Arg((3,), dtype="int64", diff=False, make=_unique_rows)


def _np_at(ufunc):
    def ref(x, idx, u):
        out = np.array(x, copy=True)
        ufunc.at(out, idx, np.broadcast_to(u, out[idx].shape))
        return out
    return ref


def _np_set(x, idx, u):
    out = np.array(x, copy=True)
    out[idx] = u
    return out


def _np_dynamic_slice(x, starts, sizes):
    clamped = [min(max(s + n if s < 0 else s, 0), n - k)
               for s, n, k in zip(starts, x.shape, sizes)]
    return x[tuple(slice(s, s + k) for s, k in zip(clamped, sizes))]


def _np_dus(x, u, starts):
    out = np.array(x, copy=True)
    clamped = [min(max(s + n if s < 0 else s, 0), n - k)
               for s, n, k in zip(starts, x.shape, u.shape)]
    out[tuple(slice(s, s + k) for s, k in zip(clamped, u.shape))] = u
    return out


CASES = [
    # --- lax.gather: NumPy indexing with integer arrays --------------------------------
    Case("lax.gather_axis0", lambda i, x: lax.gather(x, (i,)), lambda i, x: x[i],
         [_ints(-3, 2), X], prims=("gather",)),
    Case("lax.gather_separated", lambda i, x: lax.gather(x, (i, slice(1, 3), i)),
         lambda i, x: x[i, 1:3, i], [_ints(-3, 2), X], prims=("gather",)),
    Case("lax.gather_adjacent", lambda i, j, x: lax.gather(x, (slice(None), i, j)),
         lambda i, j, x: x[:, i, j], [_ints(-4, 3), Arg("bcast", dtype="int64", low=0,
                                                          high=4, diff=False), X],
         prims=("gather",)),
    Case("lax.gather_newaxis_int", lambda i, x: lax.gather(x, (None, 1, Ellipsis, i)),
         lambda i, x: x[None, 1, ..., i], [_ints(-5, 4), X], prims=("gather",)),
    Case("lax.gather_dtypes", lambda x, i: lax.gather(x, (i,)), lambda x, i: x[i],
         [Arg((4,), dtype=ANY_DTYPE), _ints(-4, 3)], prims=("gather",)),
    Case("lax.gather_clamped", lambda i, x: lax.gather(x, (i,)),
         lambda i, x: x[np.clip(np.where(i < 0, i + 3, i), 0, 2)], [_ints(-6, 6), X],
         prims=("gather",)),
    Case("lax.gather_fill", lambda i, x: lax.gather(x, (i,), mode="fill", fill_value=-1.0),
         lambda i, x: np.where(((i >= -3) & (i < 3))[(...,) + (None,) * 2],
                               x[np.clip(np.where(i < 0, i + 3, i), 0, 2)], -1.0),
         [_ints(-6, 6), X], prims=("gather",)),
    # --- scatters ------------------------------------------------------------------------
    Case("lax.scatter_add", lambda x, i, u: lax.scatter_add(x, (i, slice(None)), u[..., None]),
         lambda x, i, u: _np_at(np.add)(x, (i, slice(None)), u[..., None]),
         [Arg((5, 2), RC), _ints(-5, 4), Arg("same", "same")], prims=("scatter_add",)),
    Case("lax.scatter_add_separated",
         lambda x, i, u: lax.scatter_add(x, (i, slice(None), 1), u),
         lambda x, i, u: _np_at(np.add)(x, (i, slice(None), 1), u),
         [X, Arg((2,), dtype="int64", low=-3, high=2, diff=False), Arg((2, 4), "same")],
         prims=("scatter_add",)),
    Case("lax.scatter_set", lambda x, i, u: lax.scatter(x, (i,), u),
         lambda x, i, u: _np_set(x, (i,), u),
         [Arg((5,), RC), _ints(-5, 4), Arg("same", "same")], prims=("scatter",)),
    Case("lax.scatter_set_broadcast", lambda x, i, v: lax.scatter(x, (slice(None), i), v),
         lambda x, i, v: _np_set(x, (slice(None), i), v),
         [X, Arg((2,), dtype="int64", low=-4, high=3, diff=False), Arg((5,), "same")],
         prims=("scatter",)),
    Case("lax.scatter_mul", lambda x, i, u: lax.scatter_mul(x, (i,), u),
         lambda x, i, u: _np_at(np.multiply)(x, (i,), u), [Arg((5,), RC), UNIQUE, Arg((3,), "same")],
         prims=("scatter_mul",)),
    # repeated indices: differentiable in the operand only (as JAX)
    Case("lax.scatter_mul_repeated", lambda x, i, u: lax.scatter_mul(x, (i,), u),
         lambda x, i, u: _np_at(np.multiply)(x, (i,), u),
         [Arg((5,), RC), _ints(-5, 4), Arg("same", "same", diff=False)], prims=("scatter_mul",)),
    Case("lax.scatter_min", lambda x, i, u: lax.scatter_min(x, (i,), u),
         lambda x, i, u: _np_at(np.minimum)(x, (i,), u),
         [Arg((5,), unique=True), _ints(-5, 4), Arg("same", unique=True)],
         prims=("scatter_min",)),
    Case("lax.scatter_max", lambda x, i, u: lax.scatter_max(x, (i, 2), u),
         lambda x, i, u: _np_at(np.maximum)(x, (i, 2), u),
         [Arg((5, 3), unique=True), _ints(-5, 4), Arg("same", unique=True)],
         prims=("scatter_max",)),
    Case("lax.scatter_add_drop", lambda x, i, u: lax.scatter_add(x, (i,), u),
         lambda x, i, u: _np_at(np.add)(x, (np.where((i >= -5) & (i < 5), i, 0),),
                                        np.where((i >= -5) & (i < 5), u, 0)),
         [Arg((5,), RC), _ints(-8, 8), Arg("same", "same")], prims=("scatter_add",)),
    # --- dynamic_slice / dynamic_update_slice ------------------------------------------
    Case("lax.dynamic_slice", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
         lambda x, i, j: _np_dynamic_slice(x, (int(i), int(j)), (2, 3)),
         [Arg((4, 5), RC), _scalar_int(-6, 6), _scalar_int(-6, 6)], prims=("dynamic_slice",)),
    Case("lax.dynamic_slice_in_dim",
         lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1),
         lambda x, i: _np_dynamic_slice(x, (0, int(i)), (x.shape[0], 2)),
         [Arg((3, 4), dtype=ANY_DTYPE), _scalar_int(-5, 5)], prims=("dynamic_slice",)),
    Case("lax.dynamic_index_in_dim",
         lambda x, i: lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False),
         lambda x, i: _np_dynamic_slice(x, (int(i), 0), (1, x.shape[1]))[0],
         [Arg((3, 4), RC), _scalar_int(-4, 4)], prims=("dynamic_slice", "squeeze")),
    Case("lax.dynamic_update_slice",
         lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
         lambda x, u, i, j: _np_dus(x, u, (int(i), int(j))),
         [Arg((4, 5), RC), Arg((2, 3), "same"), _scalar_int(-6, 6), _scalar_int(-6, 6)],
         prims=("dynamic_update_slice",)),
    Case("lax.dynamic_update_index_in_dim",
         lambda x, u, i: lax.dynamic_update_index_in_dim(x, u, i, 0),
         lambda x, u, i: _np_dus(x, u[None], (int(i), 0)),
         [Arg((3, 4), RC), Arg((4,), "same"), _scalar_int(-4, 4)], prims=("dynamic_update_slice",)),
    Case("lax.dynamic_update_slice_int",
         lambda x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, 1),
         lambda x, u, i: _np_dus(x, u, (0, int(i))),
         [Arg((3, 4), dtype="int32"), Arg((3, 2), dtype="int32"), _scalar_int(-4, 4)],
         prims=("dynamic_update_slice",)),
    # --- x[idx] --------------------------------------------------------------------------
    Case("getitem_basic", lambda x: getitem(x, (1, slice(None, None, -2), None, slice(-3, None))),
         lambda x: x[1, ::-2, None, -3:], [X], prims=("slice", "rev", "reshape")),
    Case("getitem_ellipsis", lambda x: getitem(x, (Ellipsis, slice(1, None), None)),
         lambda x: x[..., 1:, None], [Arg("mat", dtype=ANY_DTYPE)]),
    Case("getitem_int_list", lambda x: getitem(x, [0, -1, 0]), lambda x: x[[0, -1, 0]],
         [Arg("vec", dtype=ANY_DTYPE)], prims=("gather",)),
    Case("getitem_mixed", lambda x, i: getitem(x, (i, slice(None), [1, 3])),
         lambda x, i: x[i, :, [1, 3]],
         [X, Arg((2, 1), dtype="int64", low=-3, high=2, diff=False)], prims=("gather",)),
    Case("getitem_adjacent_negative_step",
         lambda x, i: getitem(x, (slice(None, None, -1), i, slice(1, None))),
         lambda x, i: x[::-1, i, 1:],
         [X, Arg((2, 2), dtype="int64", low=-4, high=3, diff=False)], prims=("gather",)),
    Case("getitem_traced_scalar", lambda x, i: getitem(x, (i, slice(1, None))),
         lambda x, i: x[i, 1:], [Arg((4, 3), RC), _scalar_int(-4, 3)], prims=("dynamic_slice",)),
    Case("getitem_traced_scalars_2", lambda x, i: getitem(x, (slice(None), i, None, i)),
         lambda x, i: x[:, i, None, i], [X, _scalar_int(-4, 3)], prims=("dynamic_slice",)),
    Case("getitem_concrete_mask", lambda x: getitem(x, np.array([True, False, True])),
         lambda x: x[np.array([True, False, True])], [Arg((3, 2), dtype=ANY_DTYPE)]),
    Case("getitem_bool_scalars", lambda x: getitem(x, (True, Ellipsis, False)),
         lambda x: x[True, ..., False], [Arg("any", RC)]),
    Case("getitem_bool_with_array", lambda x: getitem(x, (1, [0, 1], True)),
         lambda x: x[1, [0, 1], True], [Arg((2, 3, 4), RC)], prims=("gather",)),
    # --- x.at[idx] -----------------------------------------------------------------------
    Case("at_set", lambda x, u: at(x)[1, ::2].set(u),
         lambda x, u: _np_set(x, (1, slice(None, None, 2)), u), [Arg((3, 4), RC), Arg((2,), "same")],
         prims=("scatter",)),
    Case("at_add_repeated", lambda x, u: at(x)[[0, 2, 0]].add(u),
         lambda x, u: _np_at(np.add)(x, ([0, 2, 0],), u), [Arg((3, 2), RC), Arg((2,), "same")],
         prims=("scatter_add",)),
    Case("at_multiply_repeated", lambda x, u: at(x)[[0, 2, 0]].multiply(u),
         lambda x, u: _np_at(np.multiply)(x, ([0, 2, 0],), u), [Arg((3, 2)), Arg((3, 2))],
         prims=("scatter_mul",)),
    Case("at_divide_repeated_traced_index", lambda x, i, u: at(x)[i].divide(u),
         lambda x, i, u: x / _np_at(np.multiply)(np.ones_like(x), (i,), u),
         [Arg((4,)), Arg((5,), dtype="int64", low=-4, high=3, diff=False),
          Arg((5,), avoid=(0.0,), margin=0.3)], prims=("scatter_mul",)),
    Case("at_max_traced_index", lambda x, i, u: at(x)[i].max(u),
         lambda x, i, u: _np_at(np.maximum)(x, (i,), u),
         [Arg((4,), unique=True), _ints(-4, 3), Arg("same", unique=True)],
         prims=("scatter_max",)),
    Case("at_get_fill", lambda x, i: at(x)[i].get(
        mode="fill", fill_value=0.0),
         lambda x, i: np.where((i >= -4) & (i < 4), x[np.clip(i, -4, 3)], 0.0),
         [Arg((4,), RC), _ints(-6, 6)], prims=("gather",)),
    # --- index functions -----------------------------------------------------------------
    Case("fnp.take_axis1", lambda x, i: fnp.take(x, i, axis=1), lambda x, i: np.take(x, i, 1),
         [X, _ints(-4, 3)], prims=("gather",)),
    Case("fnp.take_flat_fill", lambda x, i: fnp.take(x, i, fill_value=0.0),
         lambda x, i: np.where((i >= -6) & (i < 6), np.take(x, np.clip(i, -6, 5)), 0.0),
         [Arg((2, 3), RC), _ints(-8, 8)], prims=("gather",), np_fun=False),  # JAX-only fill_value
    Case("fnp.take_along_axis",
         lambda x, i: fnp.take_along_axis(x, i, axis=1),
         lambda x, i: np.take_along_axis(x, i, axis=1),
         [Arg((3, 4), RC), Arg((3, 2), dtype="int64", low=-4, high=3, diff=False)],
         prims=("gather",)),
    Case("fnp.select", lambda c1, c2, a, b: fnp.select([c1, c2], [a, b], -1.0),
         lambda c1, c2, a, b: np.select([c1, c2], [a, b], -1.0),
         [Arg("any", dtype="bool", diff=False), Arg("same", dtype="bool", diff=False),
          Arg("same", RC), Arg("same", RC)]),
    Case("fnp.nonzero_size", lambda x: fnp.nonzero(x, size=4, fill_value=-1),
         lambda x: tuple(np.concatenate([n[:4], np.full(max(4 - len(n), 0), -1)])
                         for n in np.nonzero(x)),
         [Arg((2, 3), dtype="int32", low=0, high=1)], grad_order=0, np_fun=False),  # JAX-only size
    Case("fnp.flatnonzero_size", lambda x: fnp.flatnonzero(x, size=3),
         lambda x: np.concatenate([np.flatnonzero(x)[:3], np.zeros(max(3 - np.count_nonzero(x), 0), int)]),
         [Arg("vec", dtype="bool")], grad_order=0, np_fun=False),  # JAX-only size
    Case("fnp.choose", lambda a, x, y: fnp.choose(a, [x, y], mode="clip"),
         lambda a, x, y: np.choose(a, [x, y], mode="clip"),
         [Arg("any", dtype="int64", low=-1, high=2, diff=False), Arg("same", RC),
          Arg("same", RC)]),
]
