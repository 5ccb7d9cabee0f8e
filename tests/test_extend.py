"""fungrad.extend: the IR as a public API, every primitive as ``lax.<name>_p``,
primitives of one's own with every rule (define_primitive and JAX's rule
registries), and the errors for a missing rule."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.numpy as fnp
from fungrad import core, lax
from fungrad.extend import core as jex
from fungrad.extend.core import ShapedArray, define_primitive, is_undefined_primal
from fungrad.interpreters import ad, batching
from fungrad.test_util import check_grads


# ----------------------------------------------------------------------------
# Two primitives of our own: a nonlinear elementwise one, a linear one with a param
# ----------------------------------------------------------------------------

def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus_p.bind(x), lax.mul(t, lax.logistic(x))


softplus_p = define_primitive(
    "softplus", impl=lambda x: np.logaddexp(0.0, x),
    abstract_eval=lambda x: ShapedArray(x.shape, x.dtype),
    jvp=_softplus_jvp, batch="elementwise", lowering="np.logaddexp(0.0, {0})")


def _running_sum_transpose(ct, x, *, axis):
    assert is_undefined_primal(x)      # linear in its only argument
    return [lax.rev(running_sum_p.bind(lax.rev(ct, (axis,)), axis=axis), (axis,))]


def _running_sum_batch(args, dims, *, axis):
    (x,), (d,) = args, dims
    return running_sum_p.bind(x, axis=axis + (d <= axis)), d


running_sum_p = define_primitive(
    "running_sum", impl=lambda x, axis: np.cumsum(x, axis=axis),
    abstract_eval=lambda x, axis: ShapedArray(x.shape, x.dtype),
    jvp=lambda primals, tangents, axis: (running_sum_p.bind(primals[0], axis=axis),
                                         running_sum_p.bind(tangents[0], axis=axis)),
    transpose=_running_sum_transpose, batch=_running_sum_batch)   # no lowering: jit calls impl


def model(x):
    return fnp.sum(softplus_p.bind(running_sum_p.bind(x, axis=1)) ** 2)


arrays = hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4)),
                    elements=st.floats(-2, 2))


@given(arrays)
def test_user_primitives_evaluate_and_check_grads(x):
    want = np.sum(np.logaddexp(0.0, np.cumsum(x, axis=1)) ** 2)
    np.testing.assert_allclose(model(x), want, rtol=1e-12)
    check_grads(model, (x,), order=2, modes=("fwd", "rev"))


@given(arrays)
def test_user_primitives_under_jit_and_vmap(x):
    np.testing.assert_allclose(fungrad.jit(model)(x), model(x), rtol=1e-12)
    per_row = lambda r: model(r[None])
    np.testing.assert_allclose(fungrad.vmap(per_row)(x), [per_row(r) for r in x], rtol=1e-12)
    xs = np.stack([x, 0.5 * x, -x], axis=2)          # mapped along the last axis
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(model), in_axes=2)(xs),
                               [fungrad.grad(model)(xs[..., j]) for j in range(3)], rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(model))(x), fungrad.grad(model)(x),
                               rtol=1e-12)


def test_lowering_is_the_template_or_a_call_of_the_impl():
    source = fungrad.jit(model).lower(np.ones((2, 3))).source()
    assert "np.logaddexp(0.0, " in source                       # the given template
    assert "call_impl(a, axis=1, primitive_key='running_sum_" in source   # the impl fallback
    assert "softplus" in str(fungrad.make_jaxpr(model)(np.ones((2, 3))))


def test_user_primitives_stay_out_of_fungrads_registry():
    assert "softplus" not in core.primitives and "running_sum" not in core.primitives
    again = jex.Primitive("softplus")          # names of one's own may repeat
    assert again is not softplus_p
    with pytest.raises(ValueError, match=r"'sin' is the name of one of fungrad's.*lax.sin_p"):
        jex.Primitive("sin")
    with pytest.raises(ValueError, match="Python identifier"):
        jex.Primitive("my op")


# ----------------------------------------------------------------------------
# Bad input: a rule a transformation needs is missing
# ----------------------------------------------------------------------------

def _partial_primitive():
    p = jex.Primitive("half_done")
    return p, (lambda x: p.bind(x))


@pytest.mark.parametrize("given_rules,transform,rule", [
    ((), lambda f: f, "impl"),
    (("impl",), fungrad.jit, "abstract_eval"),
    (("impl", "abstract_eval"), lambda f: lambda x: fungrad.jvp(f, (x,), (x,)), "jvp"),
    (("impl", "abstract_eval"), fungrad.grad, "jvp"),
    (("impl", "abstract_eval", "linear_jvp"), fungrad.grad, "transpose"),
    (("impl", "abstract_eval"), fungrad.vmap, "batch"),
])
def test_missing_rule_names_primitive_rule_and_transformation(given_rules, transform, rule):
    p, f = _partial_primitive()
    if "impl" in given_rules:
        p.def_impl(lambda x: 3.0 * x)
    if "abstract_eval" in given_rules:
        p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    if "linear_jvp" in given_rules:
        ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), p.bind(*tangents))
    x = np.ones(2) if transform is fungrad.vmap else 1.0
    with pytest.raises(NotImplementedError,
                       match=rf"primitive 'half_done' has no {rule} rule, needed by .*"):
        transform(f)(x)


def test_missing_rule_message_says_how_to_give_it():
    p, f = _partial_primitive()
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match=r"jvp, grad.*primitive_jvps\[p\] = rule"):
        fungrad.grad(f)(1.0)
    with pytest.raises(TypeError, match="batch must be a rule or 'elementwise'"):
        define_primitive("bad", impl=np.sin, abstract_eval=lambda x: x, batch="rowwise")


# ----------------------------------------------------------------------------
# JAX's rule registries are views of the primitives' rules
# ----------------------------------------------------------------------------

def test_rule_registries_set_and_read_the_rules():
    p, f = _partial_primitive()
    p.def_impl(lambda x: 2.0 * x)
    p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    assert p not in ad.primitive_jvps and lax.sin_p in ad.primitive_jvps
    jvp = lambda primals, tangents: (p.bind(*primals), p.bind(*tangents))
    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = lambda ct, x: [2.0 * ct]
    batching.primitive_batchers[p] = lambda args, dims: (p.bind(*args), dims[0])
    assert ad.primitive_jvps[p] is jvp and p in ad.primitive_transposes and p.linear
    assert fungrad.grad(lambda x: f(x) ** 2)(3.0) == pytest.approx(24.0)
    np.testing.assert_allclose(fungrad.vmap(f)(np.arange(3.0)), [0.0, 2.0, 4.0])
    del batching.primitive_batchers[p]
    with pytest.raises(NotImplementedError, match="no batch rule"):
        fungrad.vmap(f)(np.arange(3.0))
    with pytest.raises(KeyError):
        batching.primitive_batchers[p]
    with pytest.raises(TypeError, match="keyed by primitives"):
        ad.primitive_jvps["sin"] = jvp


def test_impl_called_from_jit_code_gets_numpy_values_for_literals():
    # jit writes scalar constants as Python numbers; the impl must still get NumPy
    # values, as outside jit (equinox's noinline calls .item() on its operand)
    p = jex.Primitive("needs_numpy")
    p.def_impl(lambda i, x: x * (i.item() + 1) + x.dtype.itemsize)
    p.def_abstract_eval(lambda i, x: x)
    f = lambda x: p.bind(np.int64(2), x) + p.bind(np.int64(0), np.float64(1.5))
    x = np.float64(1.0)
    assert f(x) == pytest.approx(3.0 + 8 + 1.5 + 8)
    assert fungrad.jit(f)(x) == pytest.approx(3.0 + 8 + 1.5 + 8)


def test_axis_primitive_batchers_get_the_axis_size_and_name():
    # JAX's axis_primitive_batchers: rule(axis_size, axis_name, trace_type, args, dims)
    p, f = _partial_primitive()
    p.def_impl(lambda x: 2.0 * x)
    p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    seen = []

    def rule(axis_size, axis_name, trace_type, args, dims):
        seen.append((axis_size, axis_name, trace_type))
        return p.bind(*args), dims[0]
    batching.axis_primitive_batchers[p] = rule
    assert batching.axis_primitive_batchers[p] is rule and p in batching.primitive_batchers
    out = fungrad.vmap(fungrad.vmap(f, axis_name="i"), in_axes=1, axis_name="j")(
        np.ones((2, 3)))
    np.testing.assert_allclose(out, 2.0 * np.ones((3, 2)))
    assert seen == [(2, "i", None), (3, "j", None)]


@given(st.lists(st.integers(1, 4), max_size=3), st.integers(1, 5), st.data())
def test_mapped_and_unmapped_aval_are_inverse(shape, size, data):
    aval = ShapedArray(tuple(shape), np.float32)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    stacked = jex.unmapped_aval(size, axis, aval)
    assert stacked.shape == np.stack([np.zeros(shape)] * size, axis=axis).shape
    assert jex.mapped_aval(size, axis, stacked) == aval
    assert jex.unmapped_aval(size, None, aval) is aval and jex.mapped_aval(size, None, aval) is aval
    with pytest.raises(ValueError, match="does not have size"):
        jex.mapped_aval(size + 1, axis, stacked)


def test_take_and_set_current_trace():
    # take_current_trace hands out the current trace (evaluation inside the block);
    # set_current_trace makes one current: an interpreter binds on its parent so
    def f(x):
        with jex.take_current_trace() as outer:
            assert core.current_trace() is core.EVAL_TRACE and outer is not core.EVAL_TRACE
            with jex.set_current_trace(outer):
                y = lax.sin(x)
        assert core.current_trace() is outer
        return y
    np.testing.assert_allclose(fungrad.grad(f)(0.3), np.cos(0.3), rtol=1e-15)
    np.testing.assert_allclose(fungrad.jit(f)(0.3), np.sin(0.3), rtol=1e-15)


def test_find_top_trace_and_trace_main_identify_the_running_transformation():
    # as JAX (equinox's filter_jvp): the tracers of the innermost transformation
    # are those whose trace's main is the top trace's main
    mine = []

    def f(x, y):
        top = jex.find_top_trace([x])
        mine.append([v._trace.main is top.main for v in (x, y)])
        return x * y
    fungrad.jvp(lambda x: fungrad.vmap(lambda y: f(x, y))(np.ones(2)), (1.0,), (1.0,))
    assert mine == [[False, True]]          # y is the vmap's, x the outer jvp's
    assert jex.find_top_trace([]) is core.current_trace()


# ----------------------------------------------------------------------------
# The IR: names and constructors of jax.extend.core, lax.<name>_p
# ----------------------------------------------------------------------------

def test_every_primitive_is_exported_from_lax_as_name_p():
    from fungrad.extend.core import primitives
    for name, prim in core.primitives.items():
        assert getattr(lax, f"{name}_p") is prim, name
        assert getattr(primitives, f"{name}_p") is prim, name
    from fungrad.lax import checkpoint_p, custom_jvp_call_p, exp_p  # noqa: F401
    from fungrad.extend.core.primitives import add_p, while_p  # noqa: F401
    assert "add_p" in dir(primitives)
    for namespace in (lax, primitives):
        with pytest.raises(AttributeError):
            namespace.no_such_primitive_p


def test_jaxpr_fields_have_jaxs_names():
    closed = fungrad.make_jaxpr(lambda x, y: fnp.exp(x) * y + 1.0)(1.0, np.ones(3))
    assert isinstance(closed, jex.ClosedJaxpr) and isinstance(closed.jaxpr, jex.Jaxpr)
    assert closed.literals is closed.consts
    assert closed.invars == closed.jaxpr.invars and closed.outvars == closed.jaxpr.outvars
    jex.check_jaxpr(closed)
    eqn = closed.jaxpr.eqns[0]
    assert isinstance(eqn, jex.JaxprEqn) and eqn.primitive is lax.exp_p
    assert eqn.invars == [closed.jaxpr.invars[0]] and isinstance(eqn.outvars[0], jex.Var)
    assert any(isinstance(a, jex.Literal) for e in closed.jaxpr.eqns for a in e.invars)
    np.testing.assert_allclose(jex.jaxpr_as_fun(closed)(0.0, np.ones(3))[0], 2.0)


def test_building_a_jaxpr_with_jaxs_constructors_and_transforming_it():
    x, y, out = jex.Var(ShapedArray((), np.float64)), jex.Var(ShapedArray((), np.float64)), \
        jex.Var(ShapedArray((), np.float64))
    s = jex.Var(ShapedArray((), np.float64))
    eqns = [jex.new_jaxpr_eqn([x], [s], lax.sin_p, {}, None),
            jex.new_jaxpr_eqn([s, y], [out], lax.mul_p, {}, None)]
    jaxpr = jex.Jaxpr([], [x, y], [out], eqns)
    core.typecheck_jaxpr(jaxpr)
    fun = lambda a, b: jex.jaxpr_as_fun(jex.ClosedJaxpr(jaxpr, []))(a, b)[0]
    np.testing.assert_allclose(fun(0.5, 2.0), 2 * np.sin(0.5))
    np.testing.assert_allclose(fungrad.grad(fun)(0.5, 2.0), 2 * np.cos(0.5))
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(fun, (0, None)))(np.array([0.5, 1.0]), 2.0),
                               2 * np.sin([0.5, 1.0]))
    assert "sin" in str(jaxpr)
    with pytest.raises(TypeError, match="takes a ClosedJaxpr"):
        jex.jaxpr_as_fun(jaxpr)


def test_var_and_literal_print_as_jax_s():
    # JAX's custom-interpreters notebook prints them: Var(id=...):float64[5], Literal(2.0)
    import re
    jaxpr = fungrad.make_jaxpr(lambda x: fungrad.numpy.exp(x) + 2.0)(np.ones(5)).jaxpr
    assert re.fullmatch(r"Var\(id=\d+\):float64\[5\]", repr(jaxpr.invars[0]))
    assert repr(jaxpr.eqns[-1].invars[1]) == "Literal(2.0)"
    assert re.fullmatch(r"Var\(id=\d+\):int32\[2,3\]",
                        repr(jex.Var(ShapedArray((2, 3), np.int32))))
