"""``jax.interpreters.mlir`` (fungrad.jax_compat.mlir): ``register_lowering``
with ``lower_fun`` installs a NumPy lowering (the function's jaxpr inlined
into jit's generated code), platforms other than the CPU are accepted and
ignored as on a CPU-only JAX, and a hand-written MLIR rule (``hlo`` ops on
``ir.Value``s) is run while staging, its ops computed with ``lax``, unless it
uses an op fungrad does not interpret: then jit calls the primitive's impl."""
import logging

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.extend.core import Primitive, ShapedArray
from fungrad.interpreters import ad, batching
from fungrad.jax_compat import mlir

floats = hnp.arrays(np.float64, st.integers(1, 4),
                    elements=st.floats(-3, 3, allow_nan=False, width=64))


def _counting_primitive(name, multiple_results=False):
    """``cube(x) = x**3``, whose impl counts its calls (to see who computes)."""
    p = Primitive(name, multiple_results=multiple_results)
    calls = []

    def impl(x):
        calls.append(1)
        out = np.asarray(x) ** 3
        return [out] if multiple_results else out
    p.def_impl(impl)
    p.def_abstract_eval(lambda x: [ShapedArray(x.shape, x.dtype)] if multiple_results
                        else ShapedArray(x.shape, x.dtype))
    return p, calls


def _cube(x):
    return x * x * x


@given(floats)
def test_lower_fun_is_inlined_into_jit_code(x):
    p, calls = _counting_primitive("cube_inlined")
    mlir.register_lowering(p, mlir.lower_fun(_cube, multiple_results=False))
    f = fungrad.jit(lambda v: fnp.sin(p.bind(v)))
    np.testing.assert_allclose(f(x), np.sin(x ** 3), rtol=1e-14, atol=1e-14)
    assert calls == []                                   # the lowering computed it
    source = f.lower(x).source()
    assert "_impl" not in source and source.count("*") >= 2


def test_lower_fun_with_multiple_results_and_params():
    p = Primitive("scaled_pair", multiple_results=True)
    p.def_impl(lambda x, *, scale: [scale * x, x + scale])
    p.def_abstract_eval(lambda x, *, scale: [ShapedArray(x.shape, x.dtype)] * 2)
    mlir.register_lowering(p, mlir.lower_fun(lambda x, *, scale: [scale * x, x + scale]))
    x = np.arange(3.0)
    a, b = fungrad.jit(lambda v: p.bind(v, scale=2.5))(x)
    np.testing.assert_allclose(a, 2.5 * x, rtol=1e-15)
    np.testing.assert_allclose(b, x + 2.5, rtol=1e-15)


def test_lowered_primitive_inside_grad_and_vmap_of_jit():
    p, calls = _counting_primitive("cube_transformed")
    mlir.register_lowering(p, mlir.lower_fun(_cube, multiple_results=False))
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(primals[0]),
                                                      3 * primals[0] ** 2 * tangents[0])
    batching.primitive_batchers[p] = lambda args, dims: (p.bind(args[0]), dims[0])
    x = np.array([0.5, -1.5, 2.0])
    g = fungrad.jit(fungrad.vmap(fungrad.grad(lambda v: p.bind(v))))(x)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-14)
    assert calls == []


def test_other_platforms_are_accepted_and_ignored():
    p, calls = _counting_primitive("cube_platforms")
    mlir.register_lowering(p, mlir.lower_fun(_cube, multiple_results=False))
    for platform in ("cuda", "rocm", "gpu", "tpu", "oneapi"):
        # a rule computing something else: never used on the CPU
        mlir.register_lowering(p, mlir.lower_fun(lambda x: -x, multiple_results=False),
                               platform=platform)
    np.testing.assert_allclose(fungrad.jit(p.bind)(2.0), 8.0)
    with pytest.raises(NotImplementedError, match="unknown platform metal. Known platforms"):
        mlir.register_lowering(p, mlir.lower_fun(_cube, False), platform="metal")


def test_cpu_rule_takes_precedence_over_the_rule_for_every_platform():
    p, _ = _counting_primitive("cube_cpu")
    mlir.register_lowering(p, mlir.lower_fun(_cube, False), platform="cpu")
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x, False))
    np.testing.assert_allclose(fungrad.jit(p.bind)(2.0), 8.0)


def test_an_uninterpreted_mlir_rule_leaves_jit_calling_the_impl(caplog):
    from fungrad._jax_private.lib.mlir.dialects import hlo
    p, calls = _counting_primitive("cube_mlir")

    def mlir_rule(ctx, x):       # an op fungrad does not run: a custom call into C
        return hlo.CustomCallOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [x]).results
    mlir.register_lowering(p, mlir_rule)
    with fungrad.log_compiles(True), caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        np.testing.assert_allclose(fungrad.jit(lambda v: p.bind(v) + 1.0)(2.0), 9.0)
    assert calls == [1] and mlir.mlir_rules[p] is mlir_rule
    assert "lowers primitive 'cube_mlir' to its impl" in caplog.text
    assert "hlo.CustomCallOp is not interpreted" in caplog.text
    # a later lower_fun rule replaces it, as registering again does in JAX
    mlir.register_lowering(p, mlir.lower_fun(_cube, False))
    np.testing.assert_allclose(fungrad.jit(lambda v: p.bind(v) - 1.0)(2.0), 7.0)
    assert calls == [1] and p not in mlir.mlir_rules


def _multiply_add_primitive(name):
    """The "Primitives in JAX" tutorial's multiply_add, lowered in hlo ops."""
    from fungrad._jax_private.lib.mlir.dialects import hlo
    p = Primitive(name)
    calls = []
    p.def_impl(lambda x, y, z: calls.append(1) or np.add(np.multiply(x, y), z))
    p.def_abstract_eval(lambda x, y, z: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, lambda ctx, xc, yc, zc: [hlo.AddOp(hlo.MulOp(xc, yc), zc).result],
                           platform="cpu")
    return p, calls


@given(floats)
def test_an_mlir_rule_in_hlo_ops_is_what_jit_runs(x):
    p, calls = _multiply_add_primitive("multiply_add_hlo")
    f = fungrad.jit(lambda a, b: p.bind(a, a, b))
    np.testing.assert_allclose(f(x, 10.0 + x), x * x + 10.0 + x, rtol=1e-15)
    assert calls == []
    source = f.lower(x, x).source()
    assert "_impl" not in source and "*" in source and "+" in source
    # under transformations of jit, with JAX-style rules of one's own
    ad.primitive_jvps[p] = lambda primals, tangents: (
        p.bind(*primals), sum(t * d for t, d in zip(tangents, (primals[1], primals[0], 1.0))
                              if type(t) is not ad.Zero))
    g = [fungrad.jit(fungrad.grad(lambda a: p.bind(a, a, 1.0)))(v) for v in x]
    np.testing.assert_allclose(g, 2 * x, rtol=1e-15)
    assert calls == []


def _lowered_by(rule, x, out_aval=None):
    """jit of a fresh primitive whose only lowering is the MLIR ``rule``."""
    p = Primitive("hlo_rule")
    p.def_impl(lambda *a, **k: (_ for _ in ()).throw(AssertionError("impl ran")))
    p.def_abstract_eval(lambda *avals: out_aval or avals[0])
    mlir.register_lowering(p, rule)
    return fungrad.jit(lambda *a: p.bind(*a))(*x)


# StableHLO's elementwise ops and NumPy's functions of the same meaning
_UNARY = {"AbsOp": np.abs, "CeilOp": np.ceil, "CosineOp": np.cos, "ExpOp": np.exp,
          "Expm1Op": np.expm1, "FloorOp": np.floor, "LogOp": np.log, "Log1pOp": np.log1p,
          "LogisticOp": lambda x: 1 / (1 + np.exp(-x)), "NegOp": np.negative,
          "RsqrtOp": lambda x: 1 / np.sqrt(x), "SignOp": np.sign, "SineOp": np.sin,
          "SqrtOp": np.sqrt, "CbrtOp": np.cbrt, "TanhOp": np.tanh, "TanOp": np.tan}
_BINARY = {"AddOp": np.add, "SubtractOp": np.subtract, "MulOp": np.multiply,
           "DivOp": np.divide, "RemOp": np.fmod, "PowOp": np.power, "MaxOp": np.maximum,
           "MinOp": np.minimum, "Atan2Op": np.arctan2}
_POSITIVE = hnp.arrays(np.float64, (3,), elements=st.floats(0.1, 3, width=64))


@given(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)), _POSITIVE, _POSITIVE)
def test_hlo_elementwise_ops_compute_as_numpy(op_name, a, b):
    from fungrad._jax_private.lib.mlir.dialects import hlo
    op = getattr(hlo, op_name)
    args = (a,) if op_name in _UNARY else (a, b)
    got = _lowered_by(lambda ctx, *vs: [op(*vs).result], args)
    want = {**_UNARY, **_BINARY}[op_name](*args)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def test_hlo_ops_with_types_and_attributes():
    from fungrad._jax_private.lib.mlir import ir
    from fungrad._jax_private.lib.mlir.dialects import hlo
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])

    def relu_as_f32_sum_rows(ctx, xv):     # convert, constant, compare, select, reshape...
        f32 = ir.RankedTensorType.get(xv.type.shape, ir.F32Type.get())
        y = hlo.ConvertOp(f32, xv)
        zero = hlo.BroadcastInDimOp(f32, mlir.ir_constant(np.float32(0)),
                                    ir.DenseI64ArrayAttr.get([]))
        pos = hlo.CompareOp(y, zero, hlo.ComparisonDirectionAttr.get("GT"))
        r = hlo.SelectOp(pos, y, zero)
        t = hlo.TransposeOp(r, ir.DenseI64ArrayAttr.get([1, 0]))
        return [hlo.ReshapeOp(mlir.aval_to_ir_type(ctx.avals_out[0]), t).result]
    got = _lowered_by(relu_as_f32_sum_rows, (x,), ShapedArray((6,), np.dtype(np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.maximum(x, 0).T.reshape(6).astype(np.float32))
    const = _lowered_by(lambda ctx, xv: [hlo.AddOp(xv, hlo.ConstantOp(
        ir.DenseElementsAttr.get(np.array([1.0, 2.0, 3.0])))).result], (x[0],))
    np.testing.assert_array_equal(const, x[0] + [1, 2, 3])


def test_hlo_refuses_mixed_types_and_unknown_ops():
    from fungrad._jax_private.lib.mlir.dialects import hlo
    with pytest.raises(TypeError, match="one element type .StableHLO does not promote"):
        _lowered_by(lambda ctx, a, b: [hlo.AddOp(a, b).result],
                    (np.ones(2), np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="unknown comparison direction 'LESS'"):
        _lowered_by(lambda ctx, a: [hlo.CompareOp(a, a, hlo.ComparisonDirectionAttr.get(
            "LESS")).result], (np.ones(2),), ShapedArray((2,), np.dtype(bool)))
    with pytest.raises(NotImplementedError, match="hlo.WhileOp is not interpreted"):
        hlo.WhileOp


def test_the_primitives_tutorial_imports_resolve_through_the_hook():
    with fungrad.jax_compat.installed():
        from jax._src.lib.mlir.dialects import hlo as jhlo
        from jax._src.lax import lax as jlax
        from jax._src import api
        from jax._src.util import safe_map, safe_zip
        from fungrad._jax_private.lib.mlir.dialects import hlo
        assert jhlo.AddOp is hlo.AddOp and jlax.add is lax.add and api.jit is fungrad.jit
        assert safe_map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
        with pytest.raises(ValueError, match="length mismatch"):
            safe_zip([1, 2], [3])


def test_lowering_that_disagrees_with_abstract_eval_is_an_error():
    p, _ = _counting_primitive("cube_wrong")
    mlir.register_lowering(p, mlir.lower_fun(lambda x: fnp.stack([x, x]), False))
    with pytest.raises(TypeError, match="must compute what the primitive's abstract_eval"):
        fungrad.jit(p.bind)(np.ones(2))


def test_bad_arguments():
    with pytest.raises(TypeError, match="prim must be a Primitive"):
        mlir.register_lowering("sin", mlir.lower_fun(_cube))
    with pytest.raises(TypeError, match="fun must be a function"):
        mlir.lower_fun(3)
    with pytest.raises(TypeError, match="rule must be mlir.lower_fun"):
        mlir.register_lowering(lax.sin_p, 3)


def test_the_hook_maps_jax_interpreters_mlir_here():
    with fungrad.jax_compat.installed() as jax:
        import jax.interpreters.mlir as jmlir
        assert jmlir.register_lowering is mlir.register_lowering
        assert jax.interpreters.mlir.lower_fun is mlir.lower_fun

