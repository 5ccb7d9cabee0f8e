"""Cases for reductions and cumulative ops: the lax primitives and the
fungrad.numpy functions built on them (see tests/harness.py)."""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case, JAX_INEXACT

NONEMPTY = Arg("nonempty")
UNIQUE = Arg("nonempty", unique=True)
UNIQUE_ANY = Arg("any", unique=True)
VEC, MAT = Arg("vec"), Arg("mat")
BOOLS = Arg("any", dtype="bool", diff=False)
INTS = Arg("any", dtype=("int8", "int32", "int64"), low=-5, high=5)
MASK = Arg("same", dtype="bool", diff=False)
RC = ("float64", "complex128")      # sums, products, means, variances take complex too


def _every_other(x):
    """Reduce over axes 0, 2, ...: exercises (), one and several axes by rank."""
    return tuple(range(0, x.ndim, 2))


def _last(x):
    return (x.ndim - 1,) if x.ndim else ()


def _some_false(rng, shape, p=0.3):
    """Random mask, False with probability ``p`` but never in the first row or
    column, so no slice of a matrix is all masked (its result would be NaN)."""
    drop = rng.random(shape) < p
    if len(shape) == 2:
        drop[0, :] = drop[:, 0] = False
    return drop


def _with_nans(rng, shape, dtype):
    x = rng.uniform(-3, 3, shape)
    return np.where(_some_false(rng, shape), np.nan, x).astype(dtype)


def _nans_unique(rng, shape, dtype):
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1
    return np.where(_some_false(rng, shape), np.nan, x).astype(dtype)


def _two_valid_per_row(rng, shape, dtype):
    """NaNs, but two numbers in every row: a std of one number is 0, where
    sqrt has no derivative."""
    x = _with_nans(rng, shape, dtype)
    x[:, :2] = rng.uniform(-3, 3, (shape[0], 2))
    return x


def _mostly_true(rng, shape, dtype):
    return ~_some_false(rng, shape, 0.2)


def _with_zeros(rng, shape, dtype):
    x = rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape)
    return np.where(rng.random(shape) < 0.3, 0.0, x).astype(dtype)


def _np_cum(fn, axis, reverse):
    def ref(x):
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis), axis)
        return fn(x, axis)
    return ref


LAX_CASES = [
    Case("lax.reduce_sum", lambda x: lax.reduce_sum(x, _every_other(x)),
         lambda x: np.sum(x, axis=_every_other(x)), [Arg(dtype=RC)], prims=("reduce_sum",)),
    Case("lax.reduce_sum_int", lambda x: lax.reduce_sum(x, _every_other(x)),
         lambda x: np.sum(x, axis=_every_other(x), dtype=x.dtype), [INTS], grad_order=0),
    Case("lax.reduce_max", lambda x: lax.reduce_max(x, _every_other(x)),
         lambda x: np.max(x, axis=_every_other(x)), [UNIQUE], prims=("reduce_max",)),
    Case("lax.reduce_min", lambda x: lax.reduce_min(x, _last(x)),
         lambda x: np.min(x, axis=_last(x)), [UNIQUE], prims=("reduce_min",)),
    Case("lax.reduce_max_int", lambda x: lax.reduce_max(x, _every_other(x)),
         lambda x: np.max(x, axis=_every_other(x), initial=np.iinfo(x.dtype).min), [INTS],
         grad_order=0),
    Case("lax.reduce_prod", lambda x: lax.reduce_prod(x, _every_other(x)),
         lambda x: np.prod(x, axis=_every_other(x)), [Arg(dtype=RC, low=-1.5, high=1.5)],
         prims=("reduce_prod",)),
    Case("lax.reduce_prod_zeros", lambda x: lax.reduce_prod(x, (0,)),
         lambda x: np.prod(x, axis=0), [Arg("mat", make=_with_zeros)], prims=("reduce_prod",)),
    Case("lax.reduce_and", lambda x: lax.reduce_and(x, _every_other(x)),
         lambda x: np.all(x, axis=_every_other(x)), [BOOLS], prims=("reduce_and",),
         grad_order=0),
    Case("lax.reduce_or", lambda x: lax.reduce_or(x, _last(x)),
         lambda x: np.any(x, axis=_last(x)), [BOOLS], prims=("reduce_or",), grad_order=0),
    Case("lax.reduce_xor", lambda x: lax.reduce_xor(x, _every_other(x)),
         lambda x: np.bitwise_xor.reduce(x, axis=_every_other(x)),
         [Arg("any", dtype=("bool", "int32"), low=0, high=9, diff=False)],
         prims=("reduce_xor",), grad_order=0),
    Case("lax.argmax", lambda x: lax.argmax(x, 0, np.int32),
         lambda x: np.argmax(x, axis=0).astype(np.int32), [Arg("mat", unique=True)],
         prims=("argmax",), grad_order=0),
    Case("lax.argmin", lambda x: lax.argmin(x, -1, np.int64),
         lambda x: np.argmin(x, axis=-1), [Arg("mat", unique=True)], prims=("argmin",),
         grad_order=0),
]

for _name, _fn, _np_fn, _arg in [
        ("cumsum", lax.cumsum, np.cumsum, Arg("mat", dtype=RC)),
        ("cumprod", lax.cumprod, np.cumprod, Arg("mat", dtype=RC, low=-1.5, high=1.5)),
        ("cummax", lax.cummax, np.maximum.accumulate, Arg("mat", unique=True)),
        ("cummin", lax.cummin, np.minimum.accumulate, Arg("mat", unique=True)),
        ("cumlogsumexp", lax.cumlogsumexp, np.logaddexp.accumulate, MAT)]:
    for _axis, _rev in [(0, False), (1, True)]:
        LAX_CASES.append(Case(
            f"lax.{_name}_axis{_axis}{'_rev' if _rev else ''}",
            lambda x, f=_fn, a=_axis, r=_rev: f(x, a, r), _np_cum(_np_fn, _axis, _rev),
            [_arg], prims=(_name,)))

LAX_CASES += [
    Case("lax.cumprod_zeros", lambda x: lax.cumprod(x, 0),
         lambda x: np.cumprod(x, 0), [Arg((6,), make=_with_zeros)], prims=("cumprod",)),
    Case("lax.cumprod_vec_rev", lambda x: lax.cumprod(x, 0, reverse=True),
         _np_cum(np.cumprod, 0, True), [Arg((7,), RC, low=-1.5, high=1.5)], prims=("cumprod",)),
    Case("lax.cumsum_int", lambda x: lax.cumsum(x, 0),
         lambda x: np.cumsum(x, 0, dtype=x.dtype), [Arg("vec", dtype=("int8", "int64"))],
         grad_order=0),
]


# --- fungrad.numpy -----------------------------------------------------------------

def _np_where(fn):
    return lambda x, m: fn(x, m)


NP_CASES = [
    Case("fnp.sum", lambda x: fnp.sum(x), np.sum, [Arg(dtype=RC)]),
    Case("fnp.sum_axis_keepdims", lambda x: fnp.sum(x, axis=-1, keepdims=True),
         lambda x: np.sum(x, axis=-1, keepdims=True), [Arg("mat", RC)]),
    Case("fnp.sum_axis_tuple", lambda x: fnp.sum(x, axis=(0, -1)),
         lambda x: np.sum(x, axis=(0, -1)), [Arg("mat")]),
    Case("fnp.sum_ints", lambda x: fnp.sum(x, axis=0), lambda x: np.sum(x, axis=0),
         [Arg("mat", dtype=("bool", "int8", "uint8", "int32"), low=0, high=5)],
         grad_order=0),
    Case("fnp.sum_dtype", lambda x: fnp.sum(x, dtype=np.float32),
         lambda x: np.sum(x, dtype=np.float32), [Arg(dtype="int32", low=-5, high=5)],
         grad_order=0, rtol=1e-6),
    Case("fnp.sum_where_initial", lambda x, m: fnp.sum(x, axis=0, where=m, initial=1.5),
         lambda x, m: np.sum(x, axis=0, where=m, initial=1.5), [Arg("mat", RC), MASK]),
    Case("fnp.prod", lambda x: fnp.prod(x, axis=0), lambda x: np.prod(x, axis=0),
         [Arg("mat", RC, low=-1.5, high=1.5)]),
    Case("fnp.prod_zeros", lambda x: fnp.prod(x), np.prod, [Arg("vec", make=_with_zeros)]),
    Case("fnp.prod_where", lambda x, m: fnp.prod(x, where=m, keepdims=True),
         lambda x, m: np.prod(x, where=m, keepdims=True), [Arg(dtype=RC, low=-1.5, high=1.5),
                                                           MASK]),
    Case("fnp.prod_ints", lambda x: fnp.prod(x), np.prod,
         [Arg(dtype=("int8", "int32"), low=-2, high=2)], grad_order=0),
    Case("fnp.max", lambda x: fnp.max(x), np.max, [UNIQUE]),
    Case("fnp.max_axis", lambda x: fnp.max(x, axis=0, keepdims=True),
         lambda x: np.max(x, axis=0, keepdims=True), [Arg("mat", unique=True)]),
    Case("fnp.amin_axis", lambda x: fnp.amin(x, axis=-1), lambda x: np.amin(x, axis=-1),
         [Arg("mat", unique=True)]),
    Case("fnp.max_where_initial", lambda x, m: fnp.max(x, axis=0, where=m, initial=-10.0),
         lambda x, m: np.max(x, axis=0, where=m, initial=-10.0), [Arg("mat", unique=True), MASK]),
    Case("fnp.min_initial", lambda x: fnp.min(x, initial=10.0),
         lambda x: np.min(x, initial=10.0), [UNIQUE_ANY]),
    Case("fnp.max_ints_bools", lambda x: fnp.max(x, axis=0), lambda x: np.max(x, axis=0),
         [Arg("mat", dtype=("bool", "int8", "uint16"), low=0, high=9)], grad_order=0),
    Case("fnp.ptp", lambda x: fnp.ptp(x, axis=0), lambda x: np.ptp(x, axis=0),
         [Arg("mat", unique=True)]),
    Case("fnp.argmax", lambda x: fnp.argmax(x), np.argmax, [UNIQUE], grad_order=0),
    Case("fnp.argmin_axis_keepdims", lambda x: fnp.argmin(x, axis=1, keepdims=True),
         lambda x: np.argmin(x, axis=1, keepdims=True), [Arg("mat", unique=True)],
         grad_order=0),
    Case("fnp.all", lambda x: fnp.all(x, axis=0), lambda x: np.all(x, axis=0),
         [Arg("mat", dtype=("bool", "int32", "float64"), low=0, high=1)], grad_order=0),
    Case("fnp.any_where", lambda x, m: fnp.any(x, where=m), lambda x, m: np.any(x, where=m),
         [Arg(dtype="bool"), MASK], grad_order=0),
    Case("fnp.all_keepdims", lambda x: fnp.all(x, keepdims=True),
         lambda x: np.all(x, keepdims=True), [BOOLS], grad_order=0),
    Case("fnp.count_nonzero", lambda x: fnp.count_nonzero(x, axis=0),
         lambda x: np.count_nonzero(x, axis=0),
         [Arg("mat", dtype=("int32", "bool"), low=0, high=2)], grad_order=0),
    Case("fnp.mean", lambda x: fnp.mean(x, axis=0), lambda x: np.mean(x, axis=0),
         [Arg("mat", ("float64", "complex128", "complex64"))], rtol=1e-6),
    Case("fnp.mean_all", lambda x: fnp.mean(x), np.mean, [Arg("nonempty", RC)]),
    # JAX's dtypes: integers up to 32 bits (and bool) give float32 (NumPy: float64)
    Case("fnp.mean_ints", lambda x: fnp.mean(x, axis=-1),
         lambda x: np.mean(x, axis=-1).astype(JAX_INEXACT[x.dtype]),
         [Arg("mat", dtype=("int8", "bool", "int64"), low=-4, high=4)], grad_order=0, rtol=1e-6),
    Case("fnp.mean_where", lambda x, m: fnp.mean(x, axis=0, where=m),
         lambda x, m: np.mean(x, axis=0, where=m),
         [Arg("mat", RC), Arg("same", dtype="bool", diff=False, make=_mostly_true)]),
    Case("fnp.mean_float32", lambda x: fnp.mean(x, axis=0), lambda x: np.mean(x, axis=0),
         [Arg("mat", dtype="float32")], rtol=1e-5),
    Case("fnp.var", lambda x: fnp.var(x, axis=0), lambda x: np.var(x, axis=0),
         [Arg("mat", RC)]),
    Case("fnp.var_ddof", lambda x: fnp.var(x, ddof=1, keepdims=True),
         lambda x: np.var(x, ddof=1, keepdims=True), [Arg((5, 2), RC)]),
    Case("fnp.var_correction", lambda x: fnp.var(x, axis=-1, correction=1),
         lambda x: np.var(x, axis=-1, correction=1), [Arg((3, 4))]),
    Case("fnp.std", lambda x: fnp.std(x, axis=-1), lambda x: np.std(x, axis=-1),
         [Arg((3, 4), RC, unique=True)]),
    Case("fnp.std_where", lambda x, m: fnp.std(x, where=m),
         lambda x, m: np.std(x, where=m),
         [Arg((3, 4), unique=True), Arg((3, 4), dtype="bool", diff=False, make=_mostly_true)]),
    Case("fnp.var_ints", lambda x: fnp.var(x), lambda x: np.var(x).astype(np.float32),
         [Arg("nonempty", dtype="int32", low=-5, high=5)], grad_order=0, rtol=1e-5),
    Case("fnp.average", lambda x: fnp.average(x, axis=0), lambda x: np.average(x, axis=0),
         [Arg("mat", RC)]),
    Case("fnp.average_weights", lambda x, w: fnp.average(x, axis=1, weights=w),
         lambda x, w: np.average(x, axis=1, weights=w),
         [Arg((2, 3), RC), Arg((3,), low=0.5, high=2)]),
    Case("fnp.average_returned", lambda x, w: fnp.average(x, weights=w, returned=True),
         lambda x, w: np.average(x, weights=w, returned=True),
         [Arg("mat"), Arg("same", low=0.5, high=2)]),
    Case("fnp.nansum", lambda x: fnp.nansum(x, axis=0), lambda x: np.nansum(x, axis=0),
         [Arg("mat", make=_with_nans)]),
    Case("fnp.nanprod", lambda x: fnp.nanprod(x), np.nanprod, [Arg("mat", make=_with_nans)]),
    Case("fnp.nanmean", lambda x: fnp.nanmean(x, axis=0), lambda x: np.nanmean(x, axis=0),
         [Arg("mat", make=_with_nans)]),
    Case("fnp.nanmax", lambda x: fnp.nanmax(x, axis=1), lambda x: np.nanmax(x, axis=1),
         [Arg("mat", make=_with_nans)]),
    Case("fnp.nanmin", lambda x: fnp.nanmin(x), np.nanmin, [Arg("mat", make=_with_nans)]),
    Case("fnp.nanvar", lambda x: fnp.nanvar(x, axis=0), lambda x: np.nanvar(x, axis=0),
         [Arg("mat", make=_with_nans)]),
    Case("fnp.nanstd", lambda x: fnp.nanstd(x, axis=1, ddof=0), lambda x: np.nanstd(x, axis=1),
         [Arg((2, 5), make=_two_valid_per_row)], grad_order=1),
    Case("fnp.nanargmax", lambda x: fnp.nanargmax(x, axis=0), lambda x: np.nanargmax(x, axis=0),
         [Arg((4, 3), make=_nans_unique)],
         grad_order=0),
    Case("fnp.nanargmin", lambda x: fnp.nanargmin(x), np.nanargmin,
         [Arg((5,), make=lambda r, s, d: np.where(np.arange(5) == 2, np.nan, r.permutation(5)))],
         grad_order=0),
    Case("fnp.median", lambda x: fnp.median(x), np.median, [Arg("nonempty", unique=True)]),
    Case("fnp.median_axis", lambda x: fnp.median(x, axis=0, keepdims=True),
         lambda x: np.median(x, axis=0, keepdims=True), [Arg("mat", unique=True)]),
    Case("fnp.median_ints", lambda x: fnp.median(x, axis=-1),
         lambda x: np.median(x, axis=-1).astype(np.float32),
         [Arg("mat", dtype="int32", low=-9, high=9)], grad_order=0),
    Case("fnp.nanmedian", lambda x: fnp.nanmedian(x, axis=0), lambda x: np.nanmedian(x, axis=0),
         [Arg((5, 3), make=_nans_unique)]),
    Case("fnp.percentile", lambda x: fnp.percentile(x, 30.0, axis=0),
         lambda x: np.percentile(x, 30.0, axis=0), [Arg("mat", unique=True)]),
    Case("fnp.nanquantile", lambda x: fnp.nanquantile(x, 0.7, axis=1),
         lambda x: np.nanquantile(x, 0.7, axis=1),
         [Arg((3, 5), make=_nans_unique)]),
    Case("fnp.quantile_traced_q", lambda x, q: fnp.quantile(x, q, axis=-1),
         lambda x, q: np.quantile(x, q, axis=-1),
         [Arg("mat", unique=True), Arg((2,), low=0.05, high=0.95,
                                       make=lambda r, s, d: r.uniform(0.05, 0.95, s))],
         eps=1e-6),
    Case("fnp.cumsum", lambda x: fnp.cumsum(x), np.cumsum, [Arg(dtype=RC)]),
    # JAX's cumsum keeps integer dtypes (NumPy widens int8 to int64); bool counts as int
    Case("fnp.cumsum_axis_ints", lambda x: fnp.cumsum(x, axis=0),
         lambda x: np.cumsum(x, axis=0, dtype=np.int64 if x.dtype == np.bool_ else x.dtype),
         [Arg("nonempty", dtype=("int8", "bool"), low=0, high=3)],
         grad_order=0),
    Case("fnp.cumprod", lambda x: fnp.cumprod(x, axis=-1), lambda x: np.cumprod(x, axis=-1),
         [Arg("mat", RC, low=-1.5, high=1.5)]),
    Case("fnp.nancumsum", lambda x: fnp.nancumsum(x, axis=0), lambda x: np.nancumsum(x, axis=0),
         [Arg("mat", make=_with_nans)]),
    Case("fnp.nancumprod", lambda x: fnp.nancumprod(x), np.nancumprod,
         [Arg("mat", make=_with_nans)]),
    Case("fnp.cumulative_sum", lambda x: fnp.cumulative_sum(x, axis=1, include_initial=True),
         lambda x: np.cumulative_sum(x, axis=1, include_initial=True), [Arg("mat", RC)]),
    Case("fnp.cumulative_prod", lambda x: fnp.cumulative_prod(x),
         lambda x: np.cumulative_prod(x), [Arg("vec", RC, low=-1.5, high=1.5)]),
    Case("fnp.diff", lambda x: fnp.diff(x), np.diff, [Arg("mat", RC)]),
    Case("fnp.diff_n2_axis0", lambda x: fnp.diff(x, n=2, axis=0),
         lambda x: np.diff(x, n=2, axis=0), [Arg("mat")]),
    Case("fnp.diff_prepend_append", lambda x: fnp.diff(x, prepend=0.5, append=-1.0),
         lambda x: np.diff(x, prepend=0.5, append=-1.0), [Arg("mat", RC)]),
    Case("fnp.diff_bool", lambda x: fnp.diff(x), np.diff, [Arg("vec", dtype="bool")],
         grad_order=0),
    Case("fnp.ediff1d", lambda x: fnp.ediff1d(x, to_begin=-1.0, to_end=[2.0, 3.0]),
         lambda x: np.ediff1d(x, to_begin=-1.0, to_end=[2.0, 3.0]), [Arg(dtype=RC)]),
]

CASES = LAX_CASES + NP_CASES
