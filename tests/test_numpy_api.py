"""Focused tests of fungrad.numpy creation and shape functions: error messages,
dtype semantics against NumPy, read-only results, untouched inputs, tracer
methods, and staging. (Values, derivatives and vmap of every function are
covered by tests/cases/shape.py and tests/cases/creation.py.)"""
import operator
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import ConcretizationTypeError, lax
from fungrad.lax.elementwise import convert_weak_type


# ----------------------------------------------------------------------------
# Error messages
# ----------------------------------------------------------------------------

def test_reshape_wrong_size_names_both_shapes_and_sizes():
    with pytest.raises(ValueError) as err:
        fnp.reshape(np.ones((2, 3)), (4, 2))
    msg = str(err.value)
    assert "(2, 3)" in msg and "(4, 2)" in msg and "size 6" in msg and "size 8" in msg


def test_reshape_wrong_size_under_trace_too():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(5, -1\)"):
        fungrad.make_jaxpr(lambda x: fnp.reshape(x, (5, -1)))(np.ones((2, 3)))


def test_reshape_minus_one_rules():
    with pytest.raises(ValueError, match="only specify one unknown dimension"):
        fnp.reshape(np.ones(6), (-1, -1))
    with pytest.raises(ValueError, match="negative"):
        fnp.reshape(np.ones(6), (-2, 3))
    assert fnp.reshape(np.ones(6), (3, -1)).shape == (3, 2)
    assert fnp.reshape(np.ones((0, 3)), (-1, 3)).shape == (0, 3)


def test_reshape_newshape_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="newshape"):
        out = fnp.reshape(np.arange(6), newshape=(2, 3))
    assert out.shape == (2, 3)
    with pytest.raises(TypeError, match="newshape"):
        fnp.reshape(np.arange(6), (2, 3), newshape=(3, 2))
    with pytest.raises(TypeError, match="shape"):
        fnp.reshape(np.arange(6))


def test_concatenate_mismatch_names_axis_dimension_and_shapes():
    with pytest.raises(ValueError) as err:
        fnp.concatenate([np.ones((2, 3)), np.ones((3, 4))], axis=0)
    msg = str(err.value)
    assert "axis (0)" in msg and "dimension 1" in msg
    assert "(2, 3)" in msg and "(3, 4)" in msg


def test_concatenate_other_errors():
    with pytest.raises(ValueError, match="same number of dimensions"):
        fnp.concatenate([np.ones((2, 3)), np.ones(3)])
    with pytest.raises(ValueError, match="zero-dimensional"):
        fnp.concatenate([np.float64(1.0), np.ones(3)])
    with pytest.raises(ValueError, match="at least one array"):
        fnp.concatenate([])
    with pytest.raises(TypeError, match="cannot cast"):
        fnp.concatenate([np.ones(2), np.ones(2)], dtype=np.int32, casting="safe")
    with pytest.raises(TypeError, match="out="):
        fnp.concatenate([np.ones(2)], out=np.empty(2))


@pytest.mark.parametrize("call", [
    lambda x: fnp.squeeze(x, 3),
    lambda x: fnp.moveaxis(x, 3, 0),
    lambda x: fnp.swapaxes(x, 0, -4),
    lambda x: fnp.concatenate([x, x], axis=3),
    lambda x: fnp.flip(x, 3),
    lambda x: fnp.diagonal(x, 0, 0, 3),
    lambda x: fnp.roll(x, 1, axis=3),
    lambda x: fnp.split(x, 1, axis=3),
    lambda x: fnp.repeat(x, 2, axis=3),
    lambda x: fnp.transpose(x, (0, 1, 3)),
    lambda x: fnp.unstack(x, axis=-4),
], ids=["squeeze", "moveaxis", "swapaxes", "concatenate", "flip",
        "diagonal", "roll", "split", "repeat", "transpose", "unstack"])
def test_bad_axis_raises_value_error_naming_axis_and_rank(call):
    x = np.ones((1, 2, 3))
    with pytest.raises(ValueError) as err:
        call(x)
    msg = str(err.value)
    assert re.search(r"axis -?[34]", msg) and "rank 3" in msg, msg
    assert isinstance(err.value, IndexError)   # AxisError, as NumPy


def test_stack_uses_the_result_rank_for_axis():
    assert fnp.stack([np.ones(2), np.ones(2)], axis=-1).shape == (2, 2)
    with pytest.raises(ValueError, match="rank 2"):
        fnp.stack([np.ones(2), np.ones(2)], axis=2)


def test_shape_errors():
    with pytest.raises(ValueError, match=r"axis 1 has size 3 in shape \(1, 3\)"):
        fnp.squeeze(np.ones((1, 3)), 1)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 3\)"):
        fnp.broadcast_to(np.ones((2, 3)), (4, 3))
    with pytest.raises(ValueError, match="same shape"):
        fnp.stack([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match="equal division"):
        fnp.split(np.ones(5), 2)
    with pytest.raises(ValueError, match="axis 4 .*rank 4"):   # axes index the result
        fnp.expand_dims(np.ones((1, 2, 3)), 4)
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.expand_dims(np.ones(2), (0, 0))
    with pytest.raises(ValueError, match="the same"):
        fnp.diagonal(np.ones((2, 2)), 0, 1, -1)
    with pytest.raises(ValueError, match="at least two dimensions"):
        fnp.trace(np.ones(3))
    with pytest.raises(ValueError, match="1-d or 2-d"):
        fnp.diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="different"):
        fnp.rot90(np.ones((2, 2)), axes=(0, -2))
    with pytest.raises(ValueError, match="negative"):
        fnp.zeros((2, -1))
    with pytest.raises(ValueError, match="negative"):
        fnp.repeat(np.ones(3), [1, -1, 2])
    with pytest.raises(ValueError, match="one per element"):
        fnp.repeat(np.ones(3), [1, 2])


def test_pad_errors():
    with pytest.raises(NotImplementedError, match="supported modes"):
        fnp.pad(np.ones(3), 1, mode="median")
    with pytest.raises(ValueError, match="unsupported keyword"):
        fnp.pad(np.ones(3), 1, mode="edge", constant_values=3)
    with pytest.raises(ValueError, match="negative"):
        fnp.pad(np.ones(3), -1)
    with pytest.raises(ValueError, match="empty axis 0"):
        fnp.pad(np.ones((0, 2)), 1, mode="reflect")
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        fnp.pad(np.ones((2, 2)), ((1, 1), (1, 1), (1, 1)))


def test_creation_errors():
    with pytest.raises(TypeError, match="strings"):
        fnp.array(["a", "b"])
    with pytest.raises(ValueError, match="non-negative"):
        fnp.linspace(0, 1, -1)
    with pytest.raises(ValueError, match="zero"):
        fnp.geomspace(0, 1, 3)
    with pytest.raises(ValueError, match="indexing"):
        fnp.meshgrid(np.ones(2), indexing="yx")


# ----------------------------------------------------------------------------
# Static arguments: traced values raise the concretization error
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda n: fnp.arange(n),
    lambda n: fnp.arange(0, n, 1),
    lambda n: fnp.zeros(n),
    lambda n: fnp.reshape(np.ones(6), (n, -1)),
    lambda n: fnp.repeat(np.ones(3), n),
    lambda n: fnp.roll(np.ones(3), n),
    lambda n: fnp.linspace(0.0, 1.0, n),
    lambda n: fnp.trim_zeros(n),
    lambda n: fnp.eye(n),
    lambda n: fnp.tile(np.ones(2), n),
], ids=["arange", "arange3", "zeros", "reshape", "repeat", "roll", "linspace_num",
        "trim_zeros", "eye", "tile"])
def test_traced_shape_arguments_raise_concretization_error(call):
    with pytest.raises(ConcretizationTypeError):
        fungrad.make_jaxpr(call)(3)


def test_arange_concretization_message_points_to_linspace():
    with pytest.raises(ConcretizationTypeError, match="linspace"):
        fungrad.make_jaxpr(lambda x: fnp.arange(x))(3.0)
    with pytest.raises(ConcretizationTypeError):
        fungrad.vmap(lambda n: fnp.arange(n))(np.arange(3))


def test_shape_arguments_with_concrete_values_under_grad():
    # under jvp/grad a tracer has a concrete primal, so shape arguments work (as in JAX)
    def f(x):
        n = x * 0 + 3
        return (fnp.arange(n) * x).sum() + fnp.tile(x, fnp.astype(n, int)).sum()
    assert fungrad.grad(f)(2.0) == 0 + 1 + 2 + 3
    g = fungrad.grad(lambda v: (fnp.trim_zeros(v) ** 2).sum())(np.array([0.0, 2.0, 0.0, 3.0, 0.0]))
    np.testing.assert_array_equal(g, [0.0, 4.0, 0.0, 6.0, 0.0])


# ----------------------------------------------------------------------------
# dtype semantics against NumPy
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    (5,), (2, 7), (1, 4, 0.5), (5.0,), (np.int32(3),), (np.float32(1), 4),
    (0, 10, 3), (10, 0, -2), (np.uint8(4),), (True, 3),
])
def test_arange_dtype_matches_numpy(args):
    got, want = fnp.arange(*args), np.arange(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_arange_dtype_argument():
    assert fnp.arange(4, dtype=np.float32).dtype == np.float32
    assert fnp.arange(4, dtype=float).dtype == np.float64


# jax_dtype: what JAX 0.10.2 gives (x64 on), recorded with real JAX; it differs
# from NumPy's float64 for small integer endpoints (JAX: float32)
@pytest.mark.parametrize("start, stop, kw, jax_dtype", [
    (0, 1, {}, "float64"), (0, 10, {"dtype": int}, "int64"), (np.float32(0), 1, {}, "float32"),
    (np.float16(0), 1.0, {}, "float16"), (np.int8(0), np.int8(5), {}, "float32"),
    (np.array([0, 1], np.int32), 5, {}, "float32"),
    (np.array([0.0], np.float32), np.array([2.0], np.float32), {"num": 4}, "float32"),
    (-5, 5, {"num": 4, "dtype": np.int32}, "int32"), (0, 1j, {"num": 3}, "complex128"),
    (1, 2, {"num": 1}, "float64"), (1, 2, {"num": 0}, "float64"),
    (3.0, 3.0, {"num": 4}, "float64"),
])
def test_linspace_dtype_is_jaxs_and_values_match_numpy(start, stop, kw, jax_dtype):
    got, want = fnp.linspace(start, stop, **kw), np.linspace(start, stop, **kw)
    assert got.dtype == np.dtype(jax_dtype) and got.shape == want.shape
    if got.dtype == want.dtype:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_linspace_retstep_matches_numpy():
    for endpoint in (True, False):
        (y, step), (y_np, step_np) = (f(0.0, 1.0, 5, endpoint=endpoint, retstep=True)
                                      for f in (fnp.linspace, np.linspace))
        np.testing.assert_array_equal(y, y_np)
        assert float(step) == float(step_np)
    assert np.isnan(fnp.linspace(0.0, 1.0, 1, retstep=True)[1])


def test_geomspace_and_logspace_dtypes_match_numpy():
    for args in [(1, 100), (np.float32(1), np.float32(8)), (-1.0, -16.0)]:
        got, want = fnp.geomspace(*args, num=5), np.geomspace(*args, num=5)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert got[0] == want[0] and got[-1] == want[-1]   # exact endpoints
    assert fnp.logspace(0, 2, 3, dtype=np.int64).dtype == np.int64
    assert np.logspace(np.float32(0), 2, 3).dtype == fnp.logspace(np.float32(0), 2, 3).dtype


# JAX 0.10.2's dtypes (recorded with real JAX); NumPy's differ in the first
# and last rows (float64: JAX puts every integer type below every float type)
@pytest.mark.parametrize("dtypes, jax_dtype", [
    (("float32", "int64"), "float32"), (("int8", "uint8"), "int16"),
    (("bool", "int16"), "int16"), (("float32", "float16"), "float32"),
    (("int32", "float32"), "float32"), (("bool", "bool"), "bool"),
    (("complex64", "float64"), "complex128"), (("uint64", "int64"), "float64"),
])
def test_concatenate_promotes_like_jax(dtypes, jax_dtype):
    arrays = [np.ones(2, d) for d in dtypes]
    for f_fn in [fnp.concatenate, fnp.stack, fnp.hstack, fnp.vstack]:
        assert f_fn(arrays).dtype == np.dtype(jax_dtype)


def test_concatenate_promotes_under_trace():
    jaxpr = fungrad.make_jaxpr(lambda x, y: fnp.concatenate([x, y]))(
        np.ones(2, np.float32), np.ones(3, np.int32))
    assert jaxpr.out_avals[0].dtype == np.float32


@pytest.mark.parametrize("value, dtype", [(1.5, np.float64), (3, np.int64), (True, np.bool_),
                                          (1j, np.complex128)])
def test_python_scalars_get_numpy_default_dtypes(value, dtype):
    for fn in (fnp.asarray, fnp.array):
        out = fn(value)
        assert out.dtype == dtype and out.shape == ()
    assert fnp.full((2,), value).dtype == dtype
    assert fnp.zeros_like(value).dtype == dtype
    assert fnp.reshape(value, (1,)).dtype == dtype


def test_array_of_tracers_uses_numpy_coercion_dtypes():
    def f(x):
        return fnp.array([x, 1.0])
    jaxpr = fungrad.make_jaxpr(f)(np.float32(2))
    assert jaxpr.out_avals[0].dtype == np.array([np.float32(2), 1.0]).dtype == np.float64
    jaxpr = fungrad.make_jaxpr(lambda x: fnp.array([x, x], dtype=np.float32, ndmin=3))(1.0)
    assert jaxpr.out_avals[0].shape == (1, 1, 2) and jaxpr.out_avals[0].dtype == np.float32


def test_filled_arrays_dtypes():
    assert fnp.zeros(3).dtype == np.float64 and fnp.ones((2,), int).dtype == np.int64
    np.testing.assert_array_equal(fnp.full_like(np.arange(3), 2.7), np.full_like(np.arange(3), 2.7))
    assert fnp.full((2,), np.float32(1)).dtype == np.float32
    assert fnp.empty_like(np.ones((2, 3), np.int8), shape=(4,)).dtype == np.int8
    assert fnp.eye(2).dtype == np.float64 and fnp.identity(2, int).dtype == np.int64


def test_trace_and_astype_dtypes_match_numpy():
    for dt in ("int8", "int32", "uint16", "bool", "float32"):
        x = np.ones((3, 3), dt)
        assert fnp.trace(x).dtype == np.trace(x).dtype
    x = np.array([-1.7, 0.0, 2.5])
    for dt in (np.int32, bool, np.float32, np.complex128):
        np.testing.assert_array_equal(fnp.astype(x, dt), x.astype(dt))
        assert fnp.astype(x, dt).dtype == np.dtype(dt)



@settings(max_examples=60)
@given(st.integers(0, 11), st.integers(0, 11), st.integers(-5, 5),
       st.sampled_from(["float32", "float64", "int32", "bool"]), st.integers(0, 2**32 - 1),
       st.booleans())
def test_trace_is_numpys_bit_for_bit(rows, cols, offset, dtype, seed, weak):
    # the select-and-sum form (a weak matrix whose diagonal spans its rows) and
    # the slice form both give NumPy's pairwise sum of the diagonal, to the bit
    x = (np.random.default_rng(seed).standard_normal((2, rows, cols)) * 10).astype(dtype)
    operand = convert_weak_type(fnp.asarray(x), x.dtype, True) if weak else x
    for axes in [(1, 2), (2, 1), (0, 2)]:
        got, want = np.asarray(fnp.trace(operand, offset, *axes)), np.trace(x, offset, *axes)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        staged = fungrad.jit(lambda m: fnp.trace(m, offset, *axes))(operand)
        assert np.asarray(staged).tobytes() == want.tobytes()


@pytest.mark.parametrize("shape,offset", [((3, 3), 0), ((3, 5), 1), ((5, 3), -2), ((2, 4, 4), 0)])
def test_trace_gradient_of_a_weak_matrix_is_weak_as_in_jax(shape, offset):
    # JAX's trace masks the planes with a select, whose transpose keeps the
    # cotangent weak (jnp.diagonal's gather, like a slice, makes it strong)
    weak = fnp.where(fnp.ones(shape, bool), 0.5, 0.0)
    assert fungrad.typeof(weak).weak_type
    g = fungrad.grad(lambda m: fnp.sum(fnp.trace(m, offset, -2, -1)))(weak)
    assert fungrad.typeof(g).weak_type
    np.testing.assert_array_equal(g, np.broadcast_to(np.eye(*shape[-2:], k=offset), shape))

def test_dtype_helpers():
    t_dtypes = []

    def f(x):
        t_dtypes.append((fnp.result_type(x, 1.0), fnp.result_type(x, np.float64),
                         fnp.can_cast(x, np.float64), fnp.iscomplexobj(x),
                         fnp.shape(x), fnp.ndim(x), fnp.size(x), fnp.size(x, 1),
                         fnp.isscalar(x)))
        return x
    fungrad.make_jaxpr(f)(np.ones((2, 3), np.float32))
    assert t_dtypes[0] == (np.float32, np.float64, True, False, (2, 3), 2, 6, 3, False)
    assert fnp.promote_types("int8", "uint8") == np.int16
    assert fnp.isscalar(1.0) and not fnp.isscalar(np.ones(()))
    assert fnp.iscomplexobj(np.ones(2, complex)) and fnp.isrealobj([1.0])


# ----------------------------------------------------------------------------
# Results are read-only fungrad Arrays; inputs are never touched
# ----------------------------------------------------------------------------

RESULT_CALLS = {
    "array": lambda x: fnp.array(x), "asarray": lambda x: fnp.asarray(x),
    "copy": lambda x: fnp.copy(x), "astype_same": lambda x: fnp.astype(x, x.dtype),
    "zeros_like": fnp.zeros_like, "full_like": lambda x: fnp.full_like(x, 3.0),
    "reshape_same": lambda x: fnp.reshape(x, x.shape), "reshape": lambda x: fnp.reshape(x, -1),
    "ravel": fnp.ravel, "transpose": fnp.transpose, "squeeze_noop": fnp.squeeze,
    "expand_dims": lambda x: fnp.expand_dims(x, 0), "broadcast_to": lambda x: fnp.broadcast_to(x, (2, 2, 3)),
    "atleast_2d": fnp.atleast_2d, "flip": fnp.flip, "roll0": lambda x: fnp.roll(x, 0),
    "concatenate1": lambda x: fnp.concatenate([x]), "stack": lambda x: fnp.stack([x]),
    "split": lambda x: fnp.split(x, 1)[0], "tile1": lambda x: fnp.tile(x, 1),
    "repeat1": lambda x: fnp.repeat(x, 1, axis=0), "pad0": lambda x: fnp.pad(x, 0),
    "pad_edge": lambda x: fnp.pad(x, 1, mode="edge"), "diagonal": fnp.diagonal,
    "tril": fnp.tril, "diag": lambda x: fnp.diag(x[0]), "linspace": lambda x: fnp.linspace(x, 2 * x, 3),
    "meshgrid": lambda x: fnp.meshgrid(x[0], x[1])[0], "delete_none": lambda x: fnp.delete(x, [], 0),
    "insert": lambda x: fnp.insert(x, 1, 0.0, axis=1), "trim_zeros": lambda x: fnp.trim_zeros(x[0]),
    "block": lambda x: fnp.block([[x]]), "rot90_0": lambda x: fnp.rot90(x, 0),
}


@pytest.mark.parametrize("name", sorted(RESULT_CALLS))
def test_results_are_read_only_and_inputs_untouched(name):
    x = np.arange(1.0, 7.0).reshape(2, 3)
    before = x.copy()
    out = RESULT_CALLS[name](x)
    assert isinstance(out, fungrad.Array), type(out)
    assert not out.flags.writeable
    with pytest.raises(TypeError, match="immutable"):   # as JAX: use out.at[...].set
        out[...] = 0
    np.testing.assert_array_equal(x, before)
    assert x.flags.writeable, "the caller's array must stay writable"


def test_array_and_asarray_take_a_snapshot_of_writable_inputs():
    x = np.arange(3.0)
    a, b, c = fnp.array(x), fnp.asarray(x), fnp.asarray(x, copy=False)
    x[0] = 100.0
    assert a[0] == 0.0 and b[0] == 0.0
    assert c[0] == 100.0   # copy=False: a read-only view, as requested
    assert not c.flags.writeable and x.flags.writeable
    already = fnp.asarray(x)
    assert fnp.asarray(already) is already
    assert fnp.array(already) is not already


def test_eager_creation_gives_contiguous_arrays():
    for out in (fnp.zeros((3, 4)), fnp.ones(5), fnp.full((2, 2), 7.0), fnp.zeros_like(np.ones(3))):
        assert out.flags.c_contiguous and all(s > 0 for s in out.strides)


def test_staged_creation_stays_small():
    jaxpr = fungrad.make_jaxpr(lambda x: fnp.zeros((1000,)) + fnp.ones_like(x) + x)(np.ones(1000))
    assert not jaxpr.consts, "zeros/ones should be staged as broadcasts of a scalar"
    assert all(e.primitive.name in ("broadcast_in_dim", "add") for e in jaxpr.eqns)


# ----------------------------------------------------------------------------
# Tracer methods that forward to these functions
# ----------------------------------------------------------------------------

def test_tracer_methods_match_numpy_methods():
    x = np.arange(24.0).reshape(2, 3, 4)

    def f(t):
        return (t.reshape(4, 6), t.reshape((6, 4)), t.reshape(-1, order="F"), t.T,
                t.transpose(1, 0, 2), t.transpose((2, 0, 1)), t.swapaxes(0, 2), t.ravel(),
                t.flatten(), t[:1].squeeze(0), t.repeat(2, axis=1), t.diagonal(1, 1, 2),
                t.trace(0, 1, 2), t.astype(np.float32), t.mT)
    want = (x.reshape(4, 6), x.reshape((6, 4)), x.reshape(-1, order="F"), x.T,
            x.transpose(1, 0, 2), x.transpose((2, 0, 1)), x.swapaxes(0, 2), x.ravel(),
            x.flatten(), x[:1].squeeze(0), x.repeat(2, axis=1), x.diagonal(1, 1, 2),
            x.trace(0, 1, 2), x.astype(np.float32), x.mT)
    closed = fungrad.make_jaxpr(f)(x)
    got = fungrad.core.eval_jaxpr(closed.jaxpr, closed.consts, x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_reduction_methods_on_every_tracer_kind():
    # a tracer's own attributes must not shadow array methods: StagingTracer's
    # slot `var` once made x.var() under jit/cond raise "'Var' object is not callable"
    x = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    methods = lambda t: (t.var(), t.std(1), t.var(0, keepdims=True), t.mean(), t.sum(1),
                         t.max(), t.min(0), t.prod(), t.any(), t.all())
    want = methods(x)
    for transform in (fungrad.jit, lambda f: lambda v: fungrad.vmap(f)(v[None])[0]):
        for got, w in zip(transform(methods)(x), want):
            np.testing.assert_allclose(got, w, rtol=1e-14)
    in_cond = fungrad.jit(lambda t: lax.cond(True, lambda: t.var(), lambda: t.std()))(x)
    np.testing.assert_allclose(in_cond, x.var(), rtol=1e-14)
    np.testing.assert_allclose(fungrad.grad(lambda t: t.var())(x), 2 * (x - x.mean()) / x.size,
                               rtol=1e-14)
    from fungrad.core import Tracer
    array_names = {n for n in dir(fungrad.Array) if not n.startswith("_")}

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    for cls in subclasses(Tracer):
        clash = set(getattr(cls, "__slots__", ())) & array_names
        assert not clash, f"{cls.__name__}'s attributes {clash} shadow array methods"


# ----------------------------------------------------------------------------
# Creation functions of traced values are differentiable
# ----------------------------------------------------------------------------

def test_linspace_derivatives_in_endpoints():
    n = 5
    d_start, d_stop = fungrad.grad(lambda a, b: fnp.linspace(a, b, n).sum(), (0, 1))(0.0, 1.0)
    assert np.isclose(d_start, n / 2) and np.isclose(d_stop, n / 2)
    jac = fungrad.jacfwd(lambda b: fnp.linspace(0.0, b, 4, endpoint=False))(2.0)
    np.testing.assert_allclose(jac, np.arange(4) / 4)


def test_array_of_tracers_is_differentiable():
    def f(x, y):
        v = fnp.array([[x, y * y], [1.0, x * y]])
        return (v * v).sum()
    gx, gy = fungrad.grad(f, (0, 1))(2.0, 3.0)
    # f = x^2 + y^4 + 1 + x^2 y^2
    assert np.isclose(gx, 2 * 2 + 2 * 2 * 9) and np.isclose(gy, 4 * 27 + 2 * 4 * 3)


def test_full_and_diag_of_traced_values():
    assert fungrad.grad(lambda c: fnp.full((2, 3), c).sum())(1.5) == 6.0
    assert fungrad.grad(lambda c: fnp.full_like(np.ones(4), c).sum())(1.5) == 4.0
    g = fungrad.grad(lambda v: (fnp.diag(v, -1) ** 2).sum())(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [2.0, 4.0, 6.0])
    out = fungrad.vmap(lambda v: fnp.diag(v, 1))(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out, np.stack([np.diag(r, 1) for r in np.arange(6.0).reshape(2, 3)]))


def test_pad_constant_values_traced_gets_a_gradient():
    g = fungrad.grad(lambda c: fnp.pad(np.ones((2, 2)), 1, constant_values=c).sum())(0.5)
    assert g == 16 - 4


# ----------------------------------------------------------------------------
# Semantics details
# ----------------------------------------------------------------------------

def test_pad_corners_take_the_later_axis_value_like_numpy():
    x = np.zeros((1, 1))
    got = fnp.pad(x, 1, constant_values=((1, 2), (3, 4)))
    np.testing.assert_array_equal(got, np.pad(x, 1, constant_values=((1, 2), (3, 4))))


def test_pad_empty_mode_is_zero_padding():
    np.testing.assert_array_equal(fnp.pad(np.ones(2), 2, mode="empty"), [0, 0, 1, 1, 0, 0])


def test_meshgrid_returns_a_list_and_concatenate_accepts_an_array():
    # a list, as JAX and the array API standard (NumPy 2: a tuple)
    assert isinstance(fnp.meshgrid(np.ones(2), np.ones(3)), list)
    assert isinstance(fnp.broadcast_arrays(np.ones(2), 1.0), list)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(fnp.concatenate(x), np.concatenate(x))
    np.testing.assert_array_equal(fnp.stack(x, axis=1), np.stack(x, axis=1))


def test_split_with_out_of_range_and_negative_points():
    x = np.arange(10.0)
    for points in ([3, 20], [-3, 2], [5, 5, 1], []):
        got, want = fnp.split(x, points), np.split(x, points)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_insert_delete_trim_zeros_match_numpy():
    x = np.arange(12.0).reshape(3, 4)
    for obj, axis in [(1, 0), ([0, 2, 2], 1), (-1, None), (slice(None, None, 2), 1),
                      (np.array([True, False, True]), 0)]:
        np.testing.assert_array_equal(fnp.insert(x, obj, -1.0, axis), np.insert(x, obj, -1.0, axis))
        np.testing.assert_array_equal(fnp.delete(x, obj, axis), np.delete(x, obj, axis))
    with pytest.raises(IndexError):
        fnp.insert(x, 9, 0.0, axis=0)
    z = np.array([0, 0, 1, 2, 0])
    for trim in ("fb", "f", "b"):
        np.testing.assert_array_equal(fnp.trim_zeros(z, trim), np.trim_zeros(z, trim))
    m = np.zeros((4, 5))
    m[1, 2] = m[2, 3] = 1.0
    for axis in (None, 0, -1):
        np.testing.assert_array_equal(fnp.trim_zeros(m, axis=axis), np.trim_zeros(m, axis=axis))
    for trim in ("fb", "f", "b"):
        assert fnp.trim_zeros(np.zeros(3), trim).shape == np.trim_zeros(np.zeros(3), trim).shape


def test_repeat_with_many_distinct_counts_uses_one_gather_or_slices():
    counts = np.arange(40) % 3
    x = np.arange(40.0)
    np.testing.assert_array_equal(fnp.repeat(x, counts), np.repeat(x, counts))
    g = fungrad.grad(lambda v: fnp.repeat(v, counts).sum())(x)
    np.testing.assert_array_equal(g, counts)


def test_reshape_order_and_ravel_order():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(fnp.reshape(x, (3, 2), order="F"), x.reshape((3, 2), order="F"))
    np.testing.assert_array_equal(fnp.ravel(x, "F"), x.ravel("F"))
    with pytest.raises(ValueError, match="order"):
        fnp.reshape(x, (6,), order="Z")


def test_block_errors_like_numpy():
    with pytest.raises(ValueError, match="depths are mismatched"):
        fnp.block([[np.ones(2)], np.ones(2)])
    with pytest.raises(ValueError, match="empty"):
        fnp.block([])
    with pytest.raises(TypeError, match="tuple"):
        fnp.block((np.ones(2), np.ones(2)))


def test_repeat_total_repeat_length_follows_jnp():
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(fnp.repeat(x, [1, 0, 2], total_repeat_length=3), [0.1, 0.3, 0.3])
    np.testing.assert_array_equal(fnp.repeat(x, [1, 0, 2], total_repeat_length=2), [0.1, 0.3])
    # a short result is completed with the axis' final value (jnp's scatter/cumsum recipe)
    np.testing.assert_array_equal(fnp.repeat(x[:2], [2, 0], total_repeat_length=4),
                                  [0.1, 0.1, 0.2, 0.2])
    with pytest.raises(ValueError, match="empty"):
        fnp.repeat(np.ones(0), 1, total_repeat_length=2)


def test_lax_top_k_along_any_axis():
    from fungrad import lax
    x = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    values, indices = lax.top_k(x, 1, axis=0)
    np.testing.assert_array_equal(values, [[4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(indices, [[1, 0, 1]])
    np.testing.assert_array_equal(
        fungrad.grad(lambda v: lax.top_k(v, 1, axis=0)[0].sum())(x), [[0, 1, 0], [1, 0, 1]])
    np.testing.assert_array_equal(lax.top_k(x, 2, axis=-1)[0], [[5.0, 3.0], [6.0, 4.0]])
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        lax.top_k(x, 1, axis=2)


# the commonest mistake: a shape mismatch in a product names both shapes and
# the sizes of the contracted axes, whatever spelling was used
_A, _B = np.ones((3, 4)), np.ones((5, 2))
_PRODUCT_MISTAKES = {
    "matmul": lambda: fnp.matmul(_A, _B),
    "operator @": lambda: fnp.asarray(_A) @ fnp.asarray(_B),
    "ndarray @ Array": lambda: _A @ fnp.asarray(_B),
    "Array @ ndarray": lambda: fnp.asarray(_A) @ _B,
    "@=": lambda: operator.imatmul(fnp.asarray(_A), _B),
    "jit @": lambda: fungrad.jit(lambda x, y: x @ y)(_A, _B),
    "vmap @": lambda: fungrad.vmap(lambda x: x @ _B)(np.ones((2, 3, 4))),
    "grad @": lambda: fungrad.grad(lambda x: fnp.sum(x @ _B))(_A),
    "dot": lambda: fnp.dot(_A, _B),
    "tensordot": lambda: fnp.tensordot(_A, _B, 1),
    "einsum": lambda: fnp.einsum("ij,jk->ik", _A, _B),
    "lax.dot_general": lambda: lax.dot_general(_A, _B, (((1,), (0,)), ((), ()))),
    "lax.dot": lambda: lax.dot(_A, _B),
}


@pytest.mark.parametrize("spelling", sorted(_PRODUCT_MISTAKES))
def test_product_shape_mismatch_names_shapes_and_contracted_sizes(spelling):
    with pytest.raises((ValueError, TypeError)) as info:
        _PRODUCT_MISTAKES[spelling]()
    message = str(info.value)
    assert "(3, 4)" in message and "(5, 2)" in message, message
    assert "4" in message.replace("(3, 4)", "") and "5" in message.replace("(5, 2)", "")
    assert "gufunc" not in message and "core dimension" not in message
