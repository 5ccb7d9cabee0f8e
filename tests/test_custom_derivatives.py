"""custom_jvp: the rule is used, composes with every transform, JAX's conventions."""
import functools

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jit, jvp, vmap, hessian


def test_rule_is_used_and_gives_a_stable_gradient():
    calls = []

    @fungrad.custom_jvp
    def log1pexp(x):
        return fnp.log1p(fnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        calls.append(1)
        return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))

    assert grad(log1pexp)(1000.0) == 1.0          # the rule's stable form
    assert len(calls) == 1
    np.testing.assert_allclose(jit(grad(log1pexp))(2.0), 1 / (1 + np.exp(-2.0)), rtol=1e-14)
    np.testing.assert_allclose(vmap(grad(log1pexp))(np.array([0.0, 2.0])),
                               1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-14)
    np.testing.assert_allclose(grad(lambda v: fnp.sum(vmap(log1pexp)(v)))(np.array([0.0, 2.0])),
                               1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-14)
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(grad(grad(log1pexp))(0.5), s * (1 - s), rtol=1e-14)


def test_rule_that_differs_from_the_function_is_what_autodiff_sees():
    @fungrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), 2.0 * t[0]))   # deliberately not cos
    assert grad(f)(0.3) == 2.0
    assert jvp(f, (0.3,), (1.5,))[1] == 3.0
    np.testing.assert_allclose(hessian(lambda x: f(x) * x)(0.3), 4.0)


def test_nondiff_argnums_and_pytrees():
    @fungrad.custom_jvp
    def power_sum(n, d):
        return fnp.sum(d["a"] ** n) + d["b"]

    power_sum.nondiff_argnums = (0,)

    @power_sum.defjvp
    def power_sum_jvp(n, primals, tangents):
        (d,), (t,) = primals, tangents
        return power_sum(n, d), fnp.sum(n * d["a"] ** (n - 1) * t["a"]) + t["b"]

    d = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    g = grad(lambda d: power_sum(3, d))(d)
    np.testing.assert_allclose(g["a"], 3 * d["a"] ** 2)
    assert g["b"] == 1.0


def test_missing_rule_is_an_error():
    f = fungrad.custom_jvp(lambda x: x * 2.0)
    with pytest.raises(TypeError, match="defjvp"):
        f(1.0)


# ----------------------------------------------------------------------------
# custom_vjp
# ----------------------------------------------------------------------------

def _make_scaled_grad(calls):
    @fungrad.custom_vjp
    def f(x, y):
        return fnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (fnp.cos(x), fnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        calls.append(1)
        return (cos_x * g * y, sin_x * g)
    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_vjp_bwd_is_used_under_every_transform():
    calls = []
    f = _make_scaled_grad(calls)
    x, y = 0.3, 2.0
    np.testing.assert_allclose(grad(f, argnums=(0, 1))(x, y), (np.cos(x) * y, np.sin(x)))
    assert len(calls) == 1
    np.testing.assert_allclose(jit(grad(f))(x, y), np.cos(x) * y)
    np.testing.assert_allclose(vmap(grad(f))(np.array([0.1, 0.3]), np.array([1.0, 2.0])),
                               np.cos([0.1, 0.3]) * np.array([1.0, 2.0]))
    np.testing.assert_allclose(grad(lambda v: fnp.sum(vmap(f)(v, np.ones(2))))(np.array([0.1, 0.3])),
                               np.cos([0.1, 0.3]))


def test_custom_vjp_forward_mode_beyond_jax():
    f = _make_scaled_grad([])
    x, y = 0.3, 2.0
    np.testing.assert_allclose(jvp(f, (x, y), (1.0, 0.0))[1], np.cos(x) * y)
    np.testing.assert_allclose(hessian(f)(x, y), -np.sin(x) * y)
    np.testing.assert_allclose(jit(lambda x: jvp(f, (x, y), (1.0, 0.0))[1])(x), np.cos(x) * y)
    np.testing.assert_allclose(jit(hessian(f))(x, y), -np.sin(x) * y)


def test_custom_vjp_gradient_clipping_trick():
    @fungrad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1.0, 1.0),))
    assert grad(lambda x: 5.0 * clip_gradient(x))(2.0) == 1.0


def test_custom_vjp_bad_bwd_structure():
    @fungrad.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g,))
    with pytest.raises(TypeError, match="bwd returned cotangents with structure"):
        grad(f)(1.0, 2.0)


def test_custom_jvp_symbolic_zeros_skip_unperturbed_inputs():
    from fungrad.custom_derivatives import SymbolicZero
    seen = []

    @fungrad.custom_jvp
    def f(x, y):
        return fnp.sin(x) * y

    @functools.partial(f.defjvp, symbolic_zeros=True)
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
        out = f(x, y)
        t = 0.0 * out
        if type(tx) is not SymbolicZero:
            t = t + fnp.cos(x) * tx * y
        if type(ty) is not SymbolicZero:
            assert ty.shape == fnp.shape(y)
            t = t + fnp.sin(x) * ty
        return out, t
    x, y = 0.3, 2.0
    np.testing.assert_allclose(fungrad.grad(f)(x, y), np.cos(x) * y, rtol=1e-15)
    assert seen[-1] == (False, True)      # y is not differentiated: a symbolic zero
    np.testing.assert_allclose(fungrad.grad(f, 1)(x, y), np.sin(x), rtol=1e-15)
    assert seen[-1] == (True, False)
    np.testing.assert_allclose(fungrad.grad(fungrad.grad(f))(x, y), -np.sin(x) * y, rtol=1e-14)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(f, (0, 1)))(x, y),
                               (np.cos(x) * y, np.sin(x)), rtol=1e-15)
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(f))(np.array([x, 1.0]), np.array([y, y])),
                               np.cos([x, 1.0]) * y, rtol=1e-15)
    # a rule may return a symbolic zero as the output tangent
    @fungrad.custom_jvp
    def g(x):
        return fnp.floor(x)
    g.defjvp(lambda p, t: (g(*p), SymbolicZero(fungrad.core.get_aval(p[0]))),
             symbolic_zeros=True)
    assert fungrad.grad(g)(1.5) == 0.0


def _symbolic_zeros_custom_vjp(seen):
    """(sin(x)·y, x + y) whose fwd/bwd record what JAX's symbolic_zeros passes them."""
    from fungrad.custom_derivatives import CustomVJPPrimal, SymbolicZero

    @fungrad.custom_vjp
    def f(x, y):
        return fnp.sin(x) * y, x + y

    def fwd(x, y):
        assert type(x) is CustomVJPPrimal and type(y) is CustomVJPPrimal
        seen.append(("fwd", x.perturbed, y.perturbed))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, cts):
        (x, y), (a, b) = res, cts
        seen.append(("bwd", type(a) is SymbolicZero, type(b) is SymbolicZero))
        gx, gy = 0.0 * x, SymbolicZero(fungrad.core.get_aval(y))
        if type(a) is not SymbolicZero:
            gx, gy = gx + fnp.cos(x) * y * a, fnp.sin(x) * a
        if type(b) is not SymbolicZero:
            gx = gx + b
            gy = b if type(gy) is SymbolicZero else gy + b
        return gx, gy
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


def test_custom_vjp_symbolic_zeros_as_jax():
    # the flags are what JAX 0.10.2 passes in the same calls (recorded by hand)
    seen = []
    f = _symbolic_zeros_custom_vjp(seen)
    x, y = 0.3, 2.0
    np.testing.assert_allclose(grad(lambda x, y: f(x, y)[0])(x, y), np.cos(x) * y, rtol=1e-15)
    assert seen == [("fwd", True, False), ("bwd", False, True)]
    seen.clear()
    assert grad(lambda x, y: f(x, y)[1], 1)(x, y) == 1.0        # bwd's SymbolicZero gy
    assert seen == [("fwd", False, True), ("bwd", True, False)]
    seen.clear()
    np.testing.assert_allclose(jit(grad(lambda x, y: f(x, y)[0] + f(x, y)[1]))(x, y),
                               np.cos(x) * y + 1, rtol=1e-15)
    assert seen == [("fwd", True, False)] * 2 + [("bwd", True, False), ("bwd", False, True)]
    seen.clear()
    xs = np.array([0.3, 1.0])
    np.testing.assert_allclose(vmap(grad(lambda x, y: f(x, y)[0]))(xs, np.full(2, y)),
                               np.cos(xs) * y, rtol=1e-15)
    np.testing.assert_allclose(f(x, y), (np.sin(x) * y, x + y), rtol=1e-15)
    assert ("fwd", True, False) in seen and ("bwd", False, True) in seen
    # the symbolic zeros of vmap-then-grad reach bwd as zeros (batched rules are arrays)
    np.testing.assert_allclose(
        grad(lambda v: fnp.sum(vmap(lambda a: f(a, y)[0])(v)))(xs), np.cos(xs) * y, rtol=1e-15)


def test_custom_vjp_python_scalar_residuals_stay_python_values():
    # as JAX: a bool or int saved by fwd reaches bwd as that Python value, also
    # under jit (equinox saves the perturbed flags and branches on them in bwd)
    seen = []

    @fungrad.custom_vjp
    def f(x):
        return 2.0 * x

    def fwd(x):
        return f(x), (x, True, 3)

    def bwd(res, g):
        x, flag, n = res
        seen.append((type(flag), type(n)))
        return (g * n if flag else g,)
    f.defvjp(fwd, bwd)
    for transform, x in ((lambda h: h, 0.5), (jit, 0.5), (vmap, np.array([0.5, 1.0]))):
        seen.clear()
        np.testing.assert_allclose(transform(grad(f))(x), np.full(np.shape(x), 3.0))
        assert seen == [(bool, int)]


def test_custom_vjp_primal_tree_values():
    from fungrad.custom_derivatives import CustomVJPPrimal, custom_vjp_primal_tree_values
    tree = {"a": CustomVJPPrimal(1.0, True), "b": [CustomVJPPrimal(2.0, False)]}
    assert custom_vjp_primal_tree_values(tree) == {"a": 1.0, "b": [2.0]}


def test_custom_vjp_bwd_may_return_none_for_a_zero_cotangent():
    @fungrad.custom_vjp
    def clip_grad(x, lo, hi):
        return x

    clip_grad.defvjp(lambda x, lo, hi: (x, (lo, hi)),
                     lambda res, g: (fnp.clip(g, res[0], res[1]), None, None))
    x = np.array([0.5, 3.0, -12.0])
    f = lambda x, lo, hi: fnp.sum(clip_grad(x, lo, hi) * x)
    np.testing.assert_allclose(grad(f)(x, -1.0, 1.0), np.clip(x, -1.0, 1.0) + x)
    np.testing.assert_array_equal(grad(f, (1, 2))(x, -1.0, 1.0), (0.0, 0.0))


# ----------------------------------------------------------------------------
# Custom rules see concrete values when they exist (JAX's behaviour)
# ----------------------------------------------------------------------------

def _branching_custom_jvp(calls):
    @fungrad.custom_jvp
    def f(x):
        calls.append("f")
        return fnp.sin(x) if x > 0 else fnp.cos(x)      # Python control flow on x

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("rule")
        (x,), (t,) = primals, tangents
        return f(x), (2.0 if x > 0 else 3.0) * t
    return f


@pytest.mark.parametrize("x,slope", [(1.0, 2.0), (-1.0, 3.0)])
def test_custom_jvp_function_and_rule_branch_on_concrete_values(x, slope):
    calls = []
    f = _branching_custom_jvp(calls)
    np.testing.assert_allclose(f(x), np.sin(x) if x > 0 else np.cos(x))
    assert calls == ["f"]                       # no transformation: just called
    assert grad(f)(x) == slope
    assert calls == ["f", "rule", "f"]          # the rule runs once, calling f
    assert jvp(f, (x,), (1.0,))[1] == slope
    assert fungrad.vjp(f, x)[1](1.0)[0] == slope
    assert fungrad.linearize(f, x)[1](2.0) == 2 * slope
    assert grad(grad(f))(x) == 0.0              # the rule's tangent is linear in t
    assert fungrad.value_and_grad(lambda v: f(v) * v)(x)[1] == pytest.approx(
        (np.sin(x) if x > 0 else np.cos(x)) + slope * x)


def test_custom_jvp_stages_under_jit_vmap_make_jaxpr():
    calls = []
    f = _branching_custom_jvp(calls)
    for transformed, arg in [(jit(grad(f)), 1.0), (vmap(grad(f)), np.ones(2)),
                             (fungrad.make_jaxpr(f), 1.0), (jit(f), 1.0)]:
        with pytest.raises(fungrad.ConcretizationTypeError):
            transformed(arg)

    @fungrad.custom_jvp
    def g(x):
        return fnp.sin(x)
    g.defjvp(lambda p, t: (g(p[0]), fnp.cos(p[0]) * t[0]))
    np.testing.assert_allclose(jit(grad(g))(0.3), np.cos(0.3))
    np.testing.assert_allclose(vmap(grad(g))(np.array([0.3, 0.4])), np.cos([0.3, 0.4]))
    assert "custom_jvp_call" in str(fungrad.make_jaxpr(g)(0.3))


def test_custom_jvp_closing_over_a_differentiated_value_is_an_error():
    def loss(w):
        @fungrad.custom_jvp
        def f(x):
            return x * w
        f.defjvp(lambda p, t: (f(p[0]), t[0] * w))
        return f(2.0)
    with pytest.raises(TypeError, match="closes over a value being differentiated"):
        grad(loss)(3.0)

    def not_differentiated(x, c):            # closes over c, differentiated in x only
        @fungrad.custom_jvp
        def f(x):
            return fnp.sin(x) * c
        f.defjvp(lambda p, t: (f(p[0]), fnp.cos(p[0]) * c * t[0]))
        return f(x)
    for fn in (grad(not_differentiated), jit(grad(not_differentiated))):
        np.testing.assert_allclose(fn(1.0, 2.0), 2 * np.cos(1.0))


def test_custom_jvp_eager_path_keeps_pytrees_nondiff_args_and_python_values():
    @functools.partial(fungrad.custom_jvp, nondiff_argnums=(0,))
    def apply(fn, pt):
        return {"a": pt[0] ** 2, "b": fn(pt[1])}

    @apply.defjvp
    def apply_jvp(fn, primals, tangents):
        (pt,), (dpt,) = primals, tangents
        return apply(fn, pt), {"a": 2 * pt[0] * dpt[0], "b": 10.0 * dpt[1]}
    out = apply(fnp.sin, (1.5, 0.5))
    assert out["a"] == 2.25 and type(out["a"]) is float   # the function, called as is
    g = grad(lambda pt: apply(fnp.sin, pt)["a"] + apply(fnp.sin, pt)["b"])((1.5, 0.5))
    np.testing.assert_allclose(g, (3.0, 10.0))


def test_custom_vjp_fun_fwd_bwd_see_concrete_values():
    calls = []

    @fungrad.custom_vjp
    def f(x):
        calls.append("f")
        return fnp.sin(x) if x > 0 else fnp.cos(x)

    def f_fwd(x):
        calls.append("fwd")
        return f(x), x

    def f_bwd(x, g):
        calls.append("bwd")
        return ((2.0 if x > 0 else 3.0) * g,)   # branches on the residual
    f.defvjp(f_fwd, f_bwd)
    np.testing.assert_allclose(f(1.0), np.sin(1.0), rtol=4 * np.finfo(float).eps)
    assert calls == ["f"]
    assert grad(f)(1.0) == 2.0 and grad(f)(-1.0) == 3.0
    assert calls[1:4] == ["fwd", "f", "bwd"]
    y, pullback = fungrad.vjp(f, -1.0)
    np.testing.assert_allclose(y, np.cos(-1.0), rtol=4 * np.finfo(float).eps)
    assert pullback(1.0)[0] == 3.0
    np.testing.assert_allclose(fungrad.jacrev(lambda v: fnp.stack([f(v[0]), f(v[1])]))(
        np.array([1.0, -1.0])), np.diag([2.0, 3.0]))
    np.testing.assert_allclose(jvp(f, (1.0,), (1.0,))[1], np.cos(1.0))   # beyond JAX
    with pytest.raises(fungrad.ConcretizationTypeError):
        jit(grad(f))(1.0)


def test_custom_rules_see_concrete_values_under_jacobians():
    # jacfwd/jacrev/hessian batch tangents or cotangents, not the primal point,
    # so the rule and the function still get concrete values (as in JAX)
    f = _branching_custom_jvp([])
    g = lambda v: fnp.stack([f(v[0]) * v[1], f(v[1])])
    v = np.array([1.0, -1.0])
    want = np.array([[2.0 * -1.0, np.sin(1.0)], [0.0, 3.0]])
    np.testing.assert_allclose(fungrad.jacfwd(g)(v), want)
    np.testing.assert_allclose(fungrad.jacrev(g)(v), want)
    np.testing.assert_allclose(hessian(lambda v: f(v[0]) * f(v[1]))(v),
                               [[0.0, 6.0], [6.0, 0.0]])
    with pytest.raises(fungrad.ConcretizationTypeError):
        vmap(f)(v)                    # the primal itself is batched: no concrete value


# ----------------------------------------------------------------------------
# custom_vjp inside jit: reverse mode through jit's JVP rule uses bwd
# ----------------------------------------------------------------------------

@fungrad.custom_vjp
def _sin_with_doubled_slope(x):
    return fnp.sin(x)


_sin_with_doubled_slope.defvjp(lambda x: (fnp.sin(x), x), lambda x, g: (2.0 * g,))

_REVERSE_THROUGH_JIT = {
    "grad(jit(f))": lambda f: fungrad.grad(fungrad.jit(f)),
    "jit(grad(f))": lambda f: fungrad.jit(fungrad.grad(f)),
    "grad(jit(jit(f)))": lambda f: fungrad.grad(fungrad.jit(fungrad.jit(f))),
    "vjp(jit(f))": lambda f: (lambda x: fungrad.vjp(fungrad.jit(f), x)[1](1.0)[0]),
    "grad(jit(f)) numba": lambda f: fungrad.grad(fungrad.jit(f, backend="numba")),
}


@pytest.mark.parametrize("how", sorted(_REVERSE_THROUGH_JIT))
def test_reverse_mode_through_jit_uses_the_custom_bwd(how):
    # (grad(jit(f)) used to differentiate the primal function inside jit's JVP
    # rule, ignoring bwd: cos(0.5) * 0.5 + sin(0.5) instead of the value below)
    f = lambda x: _sin_with_doubled_slope(x) * x            # noqa: E731
    expected = 2.0 * 0.5 + np.sin(0.5)                       # bwd's slope 2, times x; plus h(x)
    np.testing.assert_allclose(_REVERSE_THROUGH_JIT[how](f)(0.5), expected, rtol=1e-15)


def test_forward_mode_through_jit_is_the_functions_own_derivative():
    # (beyond JAX, which refuses jvp of a custom_vjp function: the function's JVP)
    for fn in (fungrad.jvp(fungrad.jit(_sin_with_doubled_slope), (0.5,), (1.0,))[1],
               fungrad.jit(lambda x: fungrad.jvp(_sin_with_doubled_slope, (x,), (1.0,))[1])(0.5),
               fungrad.jacfwd(fungrad.jit(_sin_with_doubled_slope))(0.5)):
        np.testing.assert_allclose(fn, np.cos(0.5), rtol=1e-15)
    # second order: the outer grad differentiates the inner backward pass
    g2 = fungrad.grad(fungrad.grad(fungrad.jit(lambda x: _sin_with_doubled_slope(x) * x)))(0.5)
    np.testing.assert_allclose(g2, 2.0 + np.cos(0.5), rtol=1e-14)
