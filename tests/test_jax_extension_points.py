"""JAX's extension points that flax, haiku, numpyro and equinox build on
(issue 21 item 2): ``jax.extend.linear_util``, ``jax.api_util``,
``jax.extend.core.get_opaque_trace_state``, ``jax.interpreters.partial_eval``'s
``PartialVal``/``trace_to_jaxpr_nounits``/``trace_to_jaxpr_dynamic``,
``jax.core.ShapedArray(..., sharding=None)``, ``jax._src.traceback_util``,
``jnp.einsum(..., _dot_general=...)`` and ``jax.checkpoint`` with keyword
arguments.  Each is checked for what it does (the transformation really
applies, the token really changes under a transformation, known values are
really computed), on fungrad and through the import hook.
"""
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import api_util, core, lax
from fungrad.extend import linear_util as lu
from fungrad.extend.core import OpaqueTraceState, get_opaque_trace_state
from fungrad.interpreters import partial_eval as pe
from fungrad.tree_util import tree_flatten, tree_unflatten

finite = st.floats(-10, 10, allow_nan=False)


# ----------------------------------------------------------------------------
# linear_util: WrappedFun and the two styles of transformation
# ----------------------------------------------------------------------------

def test_wrap_init_calls_f_with_params():
    fun = lu.wrap_init(lambda x, *, scale: x * scale, {"scale": 3})
    assert fun.call_wrapped(2) == 6
    assert fun.params == (("scale", 3),) and fun.f(1, scale=2) == 2
    assert fun.debug_info.traced_for == "linear_util.wrap_init"


def test_wrap_init_rejects_non_callables():
    with pytest.raises(TypeError, match="callable"):
        lu.wrap_init(3)


@lu.transformation2
def _add_then_double(f, shift, x):
    return 2 * f(x + shift)


@lu.transformation
def _generator_negate(x):
    out = yield (-x,), {}
    yield -out


@lu.transformation_with_aux
def _generator_with_aux(x):
    out = yield (x,), {}
    yield out + 1, "aux:" + str(out)


@given(finite, finite)
def test_transformations_compose_in_order(x, shift):
    fun = lu.wrap_init(lambda v: v * v)
    stacked = _generator_negate(_add_then_double(fun, shift))
    # outermost last applied: negate the input, add shift, square, double, negate
    assert stacked.call_wrapped(x) == pytest.approx(-(2 * (-x + shift) ** 2))
    assert [g.__name__ for g, _ in stacked.transforms][1] == "_add_then_double"
    assert stacked.f is fun.f


@lu.transformation_with_aux2
def _count_calls(f, store, x):
    out = f(x)
    store.store(("called with", x))
    return out


def test_aux_store_is_read_after_the_call_and_only_then():
    fun, aux = _count_calls(lu.wrap_init(lambda v: v + 1))
    with pytest.raises(lu.StoreException, match="empty"):
        aux()
    assert fun.call_wrapped(4) == 5 and aux() == ("called with", 4)
    with pytest.raises(lu.StoreException, match="occupied"):
        fun.call_wrapped(4)           # one call per transformation stack


def test_generator_style_aux():
    fun, aux = _generator_with_aux(lu.wrap_init(lambda v: 10 * v))
    assert fun.call_wrapped(2) == 21 and aux() == "aux:20"


def test_wrapped_funs_hash_and_compare_by_function_and_transforms():
    f = lambda v: v
    a, b = _add_then_double(lu.wrap_init(f), 1), _add_then_double(lu.wrap_init(f), 1)
    assert a == b and hash(a) == hash(b)
    assert a != _add_then_double(lu.wrap_init(f), 2)


def test_cache_replays_side_outputs():
    calls = []

    @lu.cache
    def run(fun, n):
        calls.append(n)
        return fun.call_wrapped(n)
    f = lambda v: [v, v]
    first, tree1 = api_util.flatten_fun_nokwargs(lu.wrap_init(f), tree_flatten((0,))[1])
    second, tree2 = api_util.flatten_fun_nokwargs(lu.wrap_init(f), tree_flatten((0,))[1])
    assert run(first, 3) == [3, 3] and run(second, 3) == [3, 3]
    assert calls == [3] and tree2() == tree1()


def test_merge_linear_aux_reports_which_store_was_written():
    s1, s2 = lu.Store(), lu.Store()
    s2.store("b")
    assert lu.merge_linear_aux(lambda: s1.val, lambda: s2.val) == (False, "b")
    s1.store("a")
    with pytest.raises(lu.StoreException, match="both"):
        lu.merge_linear_aux(lambda: s1.val, lambda: s2.val)


# ----------------------------------------------------------------------------
# api_util
# ----------------------------------------------------------------------------

@given(finite, finite)
def test_flatten_fun_takes_and_returns_leaves(x, y):
    def f(a, b=None, *, scale):
        return {"sum": a["u"] + b, "pair": (a["v"] * scale, b)}
    args = ({"u": x, "v": y},)
    kwargs = {"b": y, "scale": 2.0}
    leaves, in_tree = tree_flatten((args, kwargs))
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(f), in_tree)
    out_leaves = flat.call_wrapped(*leaves)
    assert tree_unflatten(out_tree(), out_leaves) == f(*args, **kwargs)


def test_flatten_fun_under_make_jaxpr_and_grad():
    f = lambda p: fnp.sin(p["w"]) * p["b"]
    leaves, in_tree = tree_flatten(({"w": 0.3, "b": 2.0},))
    flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(f), in_tree)
    closed = fungrad.make_jaxpr(flat.call_wrapped)(*leaves)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["sin", "mul"]
    flat, _ = api_util.flatten_fun_nokwargs(lu.wrap_init(f), in_tree)   # one call each
    g = fungrad.grad(lambda b, w: flat.call_wrapped(b, w)[0], argnums=1)(*leaves)  # b, w sorted
    np.testing.assert_allclose(g, 2.0 * np.cos(0.3), rtol=1e-14)


def test_debug_info_names_arguments_by_pytree_path():
    def step(params, batch, *, lr):
        return params
    dbg = api_util.debug_info("flax scan", step, ({"w": 1, "b": 2}, [3]), {"lr": 0.1})
    assert dbg.traced_for == "flax scan" and dbg.func_src_info.startswith("step at ")
    assert dbg.arg_names == ("params['b']", "params['w']", "batch[0]", "lr")
    static = api_util.debug_info("jit", step, (1, 2), {"lr": 3}, static_argnums=(1,))
    assert static.arg_names == ("params", "lr")


def test_argnums_partial_fixes_static_arguments():
    fun, dyn = api_util.argnums_partial(lu.wrap_init(lambda a, b, c: a * 100 + b * 10 + c),
                                        (0, 2), (1, 2, 3))
    assert dyn == (1, 3) and fun.call_wrapped(4, 5) == 425
    with pytest.raises(ValueError, match="not hashable"):
        api_util.argnums_partial(lu.wrap_init(lambda a, b: a), 0, (1, [2]))


def test_shaped_abstractify():
    assert api_util.shaped_abstractify(np.zeros((2, 3), np.float32)) == \
        core.ShapedArray((2, 3), np.float32)
    aval = core.ShapedArray((4,), np.int32)
    assert api_util.shaped_abstractify(aval) is aval


# ----------------------------------------------------------------------------
# get_opaque_trace_state
# ----------------------------------------------------------------------------

def test_trace_state_is_equal_outside_and_differs_inside_transformations():
    outside = get_opaque_trace_state(convention="flax")
    assert outside == get_opaque_trace_state() and hash(outside) == hash(get_opaque_trace_state())
    seen = {}

    def f(x):
        seen.setdefault("states", []).append(get_opaque_trace_state(convention="nnx"))
        return x * 2
    fungrad.jit(f)(1.0)
    fungrad.grad(f)(1.0)
    fungrad.vmap(f)(fnp.ones(3))
    inner = seen["states"]
    assert all(s != outside for s in inner) and len(set(map(id, inner))) == 3
    assert inner[0] != inner[1] != inner[2]
    assert isinstance(outside, OpaqueTraceState) and "eval" in repr(outside)


def test_trace_state_is_stable_within_one_transformation():
    def f(x):
        a = get_opaque_trace_state()
        y = fnp.sin(x)
        assert a == get_opaque_trace_state()
        return y
    fungrad.jit(fungrad.grad(f))(0.5)


# ----------------------------------------------------------------------------
# partial_eval: PartialVal, trace_to_jaxpr_nounits / _dynamic
# ----------------------------------------------------------------------------

def test_partial_val_known_and_unknown():
    aval = core.ShapedArray((2,), np.float64)
    unknown, known = pe.PartialVal.unknown(aval), pe.PartialVal.known(3.0)
    assert not unknown.is_known() and unknown.get_aval() == aval and unknown.get_known() is None
    assert known.is_known() and known.get_known() == 3.0 and known.get_aval().shape == ()
    pv, const = known
    assert pv is None and const == 3.0
    with pytest.raises(ValueError, match="known one"):
        pe.PartialVal((aval, 1.0))


@given(finite, finite)
def test_trace_to_jaxpr_nounits_computes_known_parts_now(a, b):
    # out0 depends only on the known input, out1 on the unknown one too
    def f(k, u):
        c = fnp.cos(k)
        return [c * 2.0, c * u + 1.0, 7.0]
    aval = core.ShapedArray((), np.float64)
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
        lu.wrap_init(f), [pe.PartialVal.known(np.float64(a)), pe.PartialVal.unknown(aval)])
    assert [pv.is_known() for pv in out_pvals] == [True, False, True]
    np.testing.assert_allclose(out_pvals[0].get_known(), 2 * np.cos(a), rtol=1e-14)
    assert out_pvals[2].get_known() == 7.0 and out_pvals[1].get_aval() == aval
    assert len(jaxpr.invars) == 1 and len(jaxpr.outvars) == 1
    assert "cos" not in str(jaxpr)            # the known cos ran, its value is a residual
    (out,) = core.eval_jaxpr(jaxpr, consts, b)
    np.testing.assert_allclose(out, np.cos(a) * b + 1.0, rtol=1e-14)


def test_trace_to_jaxpr_nounits_instantiate_and_all_unknown():
    aval = core.ShapedArray((3,), np.float64)
    f = lambda x: [x + 1.0, fnp.zeros(3)]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
        lu.wrap_init(f), [pe.PartialVal.unknown(aval)], instantiate=True)
    assert not any(pv.is_known() for pv in out_pvals) and len(jaxpr.outvars) == 2
    outs = core.eval_jaxpr(jaxpr, consts, np.arange(3.0))
    np.testing.assert_array_equal(outs[0], [1, 2, 3])
    np.testing.assert_array_equal(outs[1], np.zeros(3))


def test_trace_to_jaxpr_dynamic_and_convert_constvars():
    w = np.array([1.0, 2.0])
    aval = core.ShapedArray((2,), np.float64)
    jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(
        lu.wrap_init(lambda x, unused: [x * w]), [aval, aval], keep_inputs=[True, False])
    assert out_avals == [aval] and len(jaxpr.invars) == 1 and len(consts) == 1
    lifted = pe.convert_constvars_jaxpr(jaxpr)
    assert not lifted.constvars and len(lifted.invars) == 2
    np.testing.assert_array_equal(core.eval_jaxpr(lifted, [], *consts, np.ones(2))[0], w)


# ----------------------------------------------------------------------------
# core, traceback_util, einsum's _dot_general, checkpoint keyword arguments
# ----------------------------------------------------------------------------

def test_shaped_array_takes_jax_keywords_and_is_an_abstract_value():
    aval = core.ShapedArray(shape=(2,), dtype=np.float32, weak_type=False, sharding=None)
    assert aval == core.ShapedArray((2,), np.float32)
    assert isinstance(aval, core.AbstractValue)
    assert isinstance(fungrad.make_jaxpr(lambda x: x)(1.0).jaxpr.invars[0].aval, core.AbstractValue)


def test_api_boundary_drops_registered_library_frames(tmp_path):
    from fungrad._jax_private import traceback_util
    lib = tmp_path / "fakelib"
    lib.mkdir()
    (lib / "inner.py").write_text("def helper(x):\n    return deeper(x)\n"
                                  "def deeper(x):\n    raise ValueError('bad x')\n")
    sys.path.insert(0, str(lib))
    saved = core._excluded_paths
    try:
        import inner
        traceback_util.register_exclusion(str(lib))
        boundary = traceback_util.api_boundary(lambda x: inner.helper(x))
        with pytest.raises(ValueError, match="bad x") as info:
            boundary(1)
        files = [entry.path for entry in info.traceback]
        assert sum(str(lib) in str(f) for f in files) == 1   # only where it was raised
        assert core._user_frame().startswith(__file__)
    finally:
        core._excluded_paths = saved
        sys.path.remove(str(lib))
        sys.modules.pop("inner", None)


@given(st.integers(0, 3))
def test_einsum_uses_the_given_dot_general(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 5))
    calls = []

    def counting_dot_general(lhs, rhs, dimension_numbers, precision=None,
                             preferred_element_type=None):
        calls.append(dimension_numbers)
        return lax.dot_general(lhs, rhs, dimension_numbers, precision)
    out = fnp.einsum("bij,bjk->bik", a, b, _dot_general=counting_dot_general)
    np.testing.assert_allclose(out, np.einsum("bij,bjk->bik", a, b), rtol=1e-13)
    assert len(calls) == 1
    with pytest.raises(TypeError, match="_dot_general"):
        fnp.einsum("ij,jk", a[0], b[0], _dot_general=3)


@given(finite, st.floats(0.5, 4))
def test_checkpoint_passes_keyword_arguments(x, s):
    f = lambda x, s=1.0: fnp.sin(x) * s
    remat = fungrad.checkpoint(f)
    np.testing.assert_allclose(remat(x, s=s), np.sin(x) * s, rtol=1e-14)
    np.testing.assert_allclose(fungrad.grad(remat)(x, s=s), np.cos(x) * s, rtol=1e-14)
    np.testing.assert_allclose(fungrad.grad(lambda s: remat(x, s=s))(s), np.sin(x),
                               rtol=1e-14, atol=1e-300)


# ----------------------------------------------------------------------------
# the same names through the import hook, as the libraries import them
# ----------------------------------------------------------------------------

def test_names_resolve_through_the_hook():
    from fungrad.jax_compat import installed
    with installed() as jax:
        from jax.extend import linear_util as jlu
        from jax.extend import source_info_util
        from jax.interpreters import partial_eval as jpe
        from jax._src import traceback_util
        import jax.api_util
        import jax.core
        import jax.extend.core
        assert jlu.wrap_init is lu.wrap_init and jpe.PartialVal is pe.PartialVal
        assert jax.api_util.flatten_fun is api_util.flatten_fun
        assert jax.extend.core.get_opaque_trace_state is get_opaque_trace_state
        assert jax.core.ShapedArray((1,), np.float32, sharding=None).shape == (1,)
        assert jax.core.AbstractValue is core.AbstractValue
        assert source_info_util.register_exclusion is traceback_util.register_exclusion
        assert jax.__version_info__ >= (0, 10, 0)


# ----------------------------------------------------------------------------
# what `import flax.linen` reaches at import time
# ----------------------------------------------------------------------------

def test_abstract_mesh_and_the_empty_ambient_mesh():
    from fungrad import sharding
    empty = sharding.get_abstract_mesh()
    assert empty.empty and empty.axis_sizes == () and empty.size == 1
    mesh = sharding.make_mesh((1,), ("data",))
    abstract = mesh.abstract_mesh
    assert abstract == sharding.AbstractMesh((1,), ("data",)) and not abstract.empty
    assert abstract.shape == {"data": 1} and hash(abstract) == hash(mesh.abstract_mesh)
    with pytest.raises(ValueError, match="one size per name"):
        sharding.AbstractMesh((2,), ("a", "b"))


def test_layout_and_format_values():
    from fungrad.experimental.layout import Format, Layout
    from fungrad.sharding import SingleDeviceSharding
    dev = SingleDeviceSharding(core.cpu_device)
    fmt = Format(Layout((1, 0)), dev)
    assert fmt == Format(Layout([1, 0]), dev) and fmt.layout.major_to_minor == (1, 0)
    assert Format(Layout.AUTO).sharding is None and hash(fmt) == hash(Format(Layout((1, 0)), dev))
    with pytest.raises(ValueError, match="concrete sharding"):
        Format(Layout((0,)))
    with pytest.raises(TypeError, match="layout must be"):
        Format("row-major")


def test_private_core_and_dtypes():
    from fungrad._jax_private import core as private_core, dtypes as private_dtypes
    assert private_core.trace_state_clean()
    inside = []
    fungrad.jit(lambda x: inside.append(private_core.trace_state_clean()) or x)(1.0)
    assert inside == [False] and private_core.ShapedArray is core.ShapedArray
    assert private_dtypes.supports_inf(np.float32) and not private_dtypes.supports_inf(np.int32)

    class Meta(private_dtypes.ExtendedDType):
        type = private_dtypes.extended
    assert Meta().type is private_dtypes.extended
    with pytest.raises(TypeError):
        private_dtypes.ExtendedDType()         # abstract: `type` must be given


def test_initializer_protocol():
    from fungrad.nn import initializers
    assert isinstance(initializers.zeros, initializers.Initializer)
    assert isinstance(initializers.normal(0.1), initializers.Initializer)


def test_ml_dtypes_names():
    import ml_dtypes      # a dependency: JAX's scalar types stand for its types
    assert fnp.float8_e4m3fn == ml_dtypes.float8_e4m3fn and fnp.bfloat16 == ml_dtypes.bfloat16
    assert np.dtype(fnp.bfloat16) == np.dtype(ml_dtypes.bfloat16)
    assert fnp.finfo(fnp.float8_e5m2).bits == 8


def test_jax_version_module_and_scan_split_transpose():
    from fungrad.jax_compat import installed, JAX_VERSION
    with installed() as jax:
        assert jax.version.__version__ == JAX_VERSION == jax.__version__
        assert jax.version.__version_info__ == jax.__version_info__
    body = lambda c, x: (c + x, c * x)
    plain = lax.scan(body, 0.0, fnp.arange(4.0))
    split = lax.scan(body, 0.0, fnp.arange(4.0), _split_transpose=True)
    np.testing.assert_array_equal(plain[1], split[1])
