"""Core IR: printing, type checking, staging, partial evaluation, tracer errors, threads."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import fungrad
from fungrad import core, lax
import fungrad.numpy as fnp
from fungrad.core import ShapedArray, Var, Jaxpr, JaxprEqn, typecheck_jaxpr
from fungrad.lax.elementwise import sin_p
from fungrad.interpreters.partial_eval import partial_eval_jaxpr, dce_jaxpr


def test_pretty_print_golden_short():
    f = lambda x: lax.reduce_sum(lax.sin(x), (0,))
    text = str(fungrad.make_jaxpr(f)(np.ones(3)))
    assert text == ("{ lambda ; a:f64[3]. let b:f64[3] = sin a; "
                    "c:f64[] = reduce_sum[axes=(0,)] b in (c,) }")


def test_pretty_print_golden_long_with_consts_and_literals():
    w = np.arange(3.0)

    def f(x, y):
        a = lax.mul(lax.sin(x), w)
        b = lax.add(a, lax.mul(y, 2.0))
        c = lax.exp(lax.neg(b))
        return lax.reduce_sum(c, None), b
    text = str(fungrad.make_jaxpr(f)(np.ones(3, np.float32).astype(np.float64), np.ones(3)))
    assert text == (
        "{ lambda a:f64[3]; b:f64[3] c:f64[3]. let\n"
        "    d:f64[3] = sin b\n"
        "    e:f64[3] = mul d a\n"
        "    f:f64[3] = mul c 2.0\n"
        "    g:f64[3] = add e f\n"
        "    h:f64[3] = neg g\n"
        "    i:f64[3] = exp h\n"
        "    j:f64[] = reduce_sum[axes=(0,)] i\n"
        "  in (j, g) }")


def test_make_jaxpr_static_argnums_and_eval_shape():
    f = lambda x, n: lax.reduce_sum(lax.mul(x, float(n)), (0,))
    closed = fungrad.make_jaxpr(f, static_argnums=1)(np.ones(4), 3)
    assert "mul" in str(closed) and "3.0" in str(closed)
    out = fungrad.eval_shape(lambda x: (lax.sin(x), lax.reduce_sum(x, (1,))), np.ones((2, 5)))
    assert out[0] == fungrad.ShapeDtypeStruct((2, 5), np.float64)
    # as JAX: weak types are kept and compared; a struct keeps its sharding
    weak = fungrad.ShapeDtypeStruct((), np.float64, weak_type=True)
    assert weak != fungrad.ShapeDtypeStruct((), np.float64) and weak.sharding is None
    assert repr(weak) == "ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)"
    assert fungrad.eval_shape(lambda x: x, weak) == weak
    assert not fungrad.eval_shape(lambda x: x * 2, np.float64(1.0)).weak_type
    # an abstract value stands for an argument of its type, as in JAX
    aval = ShapedArray((3,), np.float32)
    assert fungrad.eval_shape(lambda x: x * 2, aval) == fungrad.ShapeDtypeStruct((3,), np.float32)
    (ct,) = fungrad.linear_transpose(lambda x: 3.0 * x, ShapedArray((2,), np.float64))(
        np.ones(2))
    np.testing.assert_allclose(ct, [3.0, 3.0])
    assert out[1].shape == (2,)


def test_eval_jaxpr_retraces_under_transforms():
    closed = fungrad.make_jaxpr(lambda x: lax.mul(lax.sin(x), x))(0.5)
    f = lambda x: core.eval_jaxpr(closed.jaxpr, closed.consts, x)[0]
    np.testing.assert_allclose(fungrad.grad(f)(0.5), np.cos(0.5) * 0.5 + np.sin(0.5))
    np.testing.assert_allclose(fungrad.vmap(f)(np.array([0.5, 1.0])),
                               np.sin([0.5, 1.0]) * np.array([0.5, 1.0]))


def test_typecheck_catches_bad_equation():
    a = Var(ShapedArray((3,), np.float64))
    b = Var(ShapedArray((4,), np.float64))   # wrong declared shape
    bad = Jaxpr([], [a], [JaxprEqn(sin_p, [a], {}, [b])], [b])
    with pytest.raises(TypeError, match="sin"):
        typecheck_jaxpr(bad)
    undefined = Jaxpr([], [], [JaxprEqn(sin_p, [a], {}, [b])], [b])
    with pytest.raises(TypeError, match="undefined"):
        typecheck_jaxpr(undefined)


def test_partial_eval_jaxpr_splits_known_and_unknown():
    closed = fungrad.make_jaxpr(lambda x, y: lax.mul(lax.sin(x), y))(0.3, 2.0)
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(closed, [False, True])
    assert out_unknowns == [True] and num_res == 1
    assert [e.primitive.name for e in known.jaxpr.eqns] == ["sin"]
    assert [e.primitive.name for e in unknown.jaxpr.eqns] == ["mul"]
    res = core.eval_jaxpr(known.jaxpr, known.consts, 0.3)
    out = core.eval_jaxpr(unknown.jaxpr, unknown.consts, *res, 2.0)
    np.testing.assert_allclose(out[0], np.sin(0.3) * 2.0)


def test_dce_removes_unused_equations():
    closed = fungrad.make_jaxpr(lambda x: (lax.sin(x), lax.cos(x)))(0.3)
    jaxpr, used = dce_jaxpr(closed.jaxpr, [True, False])
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin"] and used == [True]


def test_concretization_error_under_staging_names_the_fix():
    def f(x):
        if lax.sin(x) > 0:
            return x
        return -x
    with pytest.raises(fungrad.ConcretizationTypeError, match="lax.cond") as info:
        fungrad.make_jaxpr(f)(1.0)
    assert isinstance(info.value, TypeError)


def test_escaped_tracer_from_make_jaxpr():
    box = []
    fungrad.make_jaxpr(lambda x: box.append(x) or x)(1.0)
    with pytest.raises(fungrad.UnexpectedTracerError, match="escaped"):
        lax.sin(box[0])


def test_threads_do_not_see_each_others_tracers():
    errors, results = [], {}

    def work(i):
        try:
            for _ in range(50):
                g = fungrad.grad(lambda x: lax.mul(lax.sin(x), float(i)))(0.5)
            results[i] = float(g)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 5)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors
    for i in range(1, 5):
        assert results[i] == pytest.approx(np.cos(0.5) * i)


def test_primitive_names_are_unique():
    with pytest.raises(ValueError, match="already registered"):
        core.Primitive("sin")


def test_to_tangent_aval_is_jaxs():
    # floats are their own tangent type (weak type kept, as JAX); ints and bools: float0
    f = ShapedArray((2,), np.float32, weak_type=True)
    assert f.to_tangent_aval() == f
    assert ShapedArray((2, 3), np.complex128).to_tangent_aval() == ShapedArray((2, 3), np.complex128)
    for dt in (np.int32, np.bool_, np.uint8):
        assert ShapedArray((4,), dt).to_tangent_aval() == ShapedArray((4,), fungrad.float0)


def test_make_jaxpr_axis_env_binds_names_for_collectives():
    # as JAX: make_jaxpr(f, axis_env=[(name, size)]) stages collectives over that name
    from fungrad import lax
    closed = fungrad.make_jaxpr(lambda x: lax.psum(x, "i") * 2, axis_env=[("i", 4)])(1.0)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["psum", "mul"]
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        fungrad.make_jaxpr(lambda x: lax.psum(x, "i"))(1.0)


def test_shape_dtype_struct_like_takes_any_array_like():
    S = fungrad.ShapeDtypeStruct
    assert S.like(fnp.ones((2, 3), fnp.float32)) == S((2, 3), np.float32)
    assert S.like(np.arange(3)) == S((3,), np.int64)
    assert S.like(2.0) == S((), np.float64, weak_type=True)
    assert S.like(S((4,), np.complex64)) == S((4,), np.complex64)
    assert len(S.like(np.zeros((5, 2)))) == 5
    with pytest.raises(TypeError, match="len.. of unsized"):
        len(S.like(1.0))
    # what external callbacks declare for a result shaped like their input
    f = fungrad.jit(lambda x: fungrad.pure_callback(np.cos, S.like(x), x))
    np.testing.assert_allclose(f(fnp.arange(3.0)), np.cos(np.arange(3.0)), rtol=1e-15)
    shapes = []
    fungrad.vmap(lambda x: shapes.append(S.like(x)) or x)(fnp.ones((4, 2)))
    assert shapes == [S((2,), np.float64)]
