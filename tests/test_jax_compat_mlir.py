"""``jax.interpreters.mlir`` (fungrad.jax_compat.mlir): ``register_lowering``
with ``lower_fun`` installs a NumPy lowering (the function's jaxpr inlined
into jit's generated code), platforms other than the CPU are accepted and
ignored as on a CPU-only JAX, and a hand-written MLIR rule leaves jit
calling the primitive's impl."""
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


def test_an_mlir_rule_leaves_jit_calling_the_impl():
    p, calls = _counting_primitive("cube_mlir")

    def mlir_rule(ctx, x):       # would emit hlo operations in JAX
        raise AssertionError("fungrad never runs an MLIR rule")
    mlir.register_lowering(p, mlir_rule)
    np.testing.assert_allclose(fungrad.jit(lambda v: p.bind(v) + 1.0)(2.0), 9.0)
    assert calls == [1] and mlir.mlir_rules[p] is mlir_rule
    # a later lower_fun rule replaces it, as registering again does in JAX
    mlir.register_lowering(p, mlir.lower_fun(_cube, False))
    np.testing.assert_allclose(fungrad.jit(lambda v: p.bind(v) - 1.0)(2.0), 7.0)
    assert calls == [1] and p not in mlir.mlir_rules


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
