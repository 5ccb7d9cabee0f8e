"""cond / switch: semantics, closures, composition with every transform, errors."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, grad, jit, vmap, jvp, hessian
from fungrad.test_util import check_grads


def test_only_the_chosen_branch_runs_in_generated_code():
    calls = []

    def true_branch(x):
        calls.append("true")
        return x * 2.0
    f = jit(lambda p, x: lax.cond(p, true_branch, lambda x: x - 1.0, x))
    assert f(True, 3.0) == 6.0 and f(False, 3.0) == 2.0
    src = f.lower(True, 3.0).source()
    assert "if " in src and "else:" in src
    assert calls == ["true"]       # traced once, run as Python code afterwards


def test_switch_clamps_index_like_jax():
    branches = [lambda x: x, lambda x: x * 10.0, lambda x: x * 100.0]
    assert lax.switch(-5, branches, 1.0) == 1.0
    assert lax.switch(7, branches, 1.0) == 100.0
    assert jit(lambda i: lax.switch(i, branches, 1.0))(1) == 10.0


def test_gradient_through_closed_over_values():
    w = np.array([1.0, 2.0])

    def loss(w, x):
        return lax.cond(x > 0, lambda v: fnp.sum(w * v), lambda v: fnp.sum(w ** 2) * v, x)
    np.testing.assert_allclose(grad(loss)(w, 0.5), [0.5, 0.5])
    np.testing.assert_allclose(grad(loss)(w, -0.5), 2 * w * -0.5)
    np.testing.assert_allclose(grad(loss, argnums=1)(w, -0.5), np.sum(w ** 2))


def test_second_order_and_hessian():
    f = lambda x: lax.cond(x[0] > 0, lambda v: fnp.sum(fnp.sin(v) * v ** 2),
                           lambda v: fnp.prod(v), x)
    for x in (np.array([0.3, -1.2]), np.array([-0.4, 0.9])):
        check_grads(f, (x,), order=2)
        np.testing.assert_allclose(jit(hessian(f))(x), hessian(f)(x), rtol=1e-12)


def test_batched_predicate_selects_per_lane():
    f = lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v * 10.0, x)
    ps, xs = np.array([True, False, True]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(vmap(f)(ps, xs), [2.0, 20.0, 4.0])
    np.testing.assert_allclose(jit(vmap(grad(f, argnums=1)))(ps, xs), [1.0, 10.0, 1.0])


def test_nested_cond_and_jvp():
    def f(x):
        return lax.cond(x > 0, lambda v: lax.cond(v > 1, fnp.exp, fnp.sin, v),
                        lambda v: -v, x)
    for x in (2.0, 0.5, -1.0):
        want = np.exp(x) if x > 1 else np.sin(x) if x > 0 else -x
        dwant = np.exp(x) if x > 1 else np.cos(x) if x > 0 else -1.0
        out, t = jvp(f, (x,), (1.0,))
        np.testing.assert_allclose([out, t, grad(f)(x), jit(grad(f))(x)],
                                   [want, dwant, dwant, dwant], rtol=1e-14)


def test_branch_output_mismatch_shows_both():
    with pytest.raises(TypeError, match=r"false_fun returns.*f64\[3\].*true_fun returns.*f64\[2\]"):
        lax.cond(True, lambda x: x[:2], lambda x: x, np.ones(3))


def test_non_scalar_predicate_suggests_where():
    with pytest.raises(TypeError, match="where"):
        lax.cond(np.array([True, False]), lambda x: x, lambda x: x, 1.0)


def test_export_of_a_program_with_cond(tmp_path):
    import importlib.util
    f = lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)
    path = tmp_path / "condmod.py"
    fungrad.export(grad(f), 0.5, path=path, name="g")
    spec = importlib.util.spec_from_file_location("condmod", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.g(0.5) == 2.0 and module.g(-0.5) == -1.0
