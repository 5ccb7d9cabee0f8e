"""NumPy's own functions on tracers (NEP 13 / NEP 18, fungrad/numpy/_dispatch.py).

The generic suite runs every case a second time spelled with NumPy's functions
(tests/numpy_twins.py); this file checks what it cannot: code written only with
``import numpy as np`` under every transform, ufunc methods, mixed calls with
concrete arrays, the errors, the functions whose results have data-dependent
shapes, and that docs/numpy_dispatch.md lists what dispatches.
"""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import core
from fungrad.numpy import _dispatch
from fungrad.test_util import check_grads
from tests.numpy_twins import numpy_functions_called, numpy_twin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.array([0.3, -1.2, 2.0])


def plain_numpy(x):
    """Written by someone who never heard of fungrad."""
    a = np.outer(x, x) + 3.0 * np.eye(x.shape[0])
    y = np.linalg.solve(a, np.sin(x)) + np.fft.fft(x).real
    z = np.concatenate([np.where(x > 0, x, 0.1 * x), np.clip(x, -1.0, 1.0)])
    return (np.sum(np.tanh(y) ** 2) + np.einsum("i,i->", z, z) + np.dot(x, x)
            + np.linalg.norm(x) + np.maximum.reduce(x) + np.mean(np.exp(x), axis=0))


def fungrad_spelled(x):
    LA = fnp.linalg
    a = fnp.outer(x, x) + 3.0 * fnp.eye(x.shape[0])
    y = LA.solve(a, fnp.sin(x)) + fnp.fft.fft(x).real
    z = fnp.concatenate([fnp.where(x > 0, x, 0.1 * x), fnp.clip(x, -1.0, 1.0)])
    return (fnp.sum(fnp.tanh(y) ** 2) + fnp.einsum("i,i->", z, z) + fnp.dot(x, x)
            + LA.norm(x) + fnp.max(x, axis=0) + fnp.mean(fnp.exp(x), axis=0))


def test_plain_numpy_code_under_every_transform():
    g = fungrad.grad(fungrad_spelled)(X)
    np.testing.assert_allclose(fungrad.grad(plain_numpy)(X), g, rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(plain_numpy))(X), g, rtol=1e-12)
    np.testing.assert_allclose(fungrad.grad(fungrad.jit(plain_numpy))(X), g, rtol=1e-12)
    _, t = fungrad.jvp(plain_numpy, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, g.sum(), rtol=1e-12)
    out, pullback = fungrad.vjp(plain_numpy, X)
    np.testing.assert_allclose(out, plain_numpy(X), rtol=1e-12)
    np.testing.assert_allclose(pullback(1.0)[0], g, rtol=1e-12)
    xs = np.stack([X, 0.5 * X, -X])
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(plain_numpy))(xs),
                               fungrad.vmap(fungrad.grad(fungrad_spelled))(xs), rtol=1e-12)
    np.testing.assert_allclose(fungrad.hessian(plain_numpy)(X),
                               fungrad.hessian(fungrad_spelled)(X), rtol=1e-10)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(plain_numpy))(xs),
                               [plain_numpy(x) for x in xs], rtol=1e-12)
    check_grads(plain_numpy, (X,), order=2)


def test_concrete_arrays_keep_numpy_behaviour():
    a = fnp.asarray(X)
    out = np.sin(a)
    np.testing.assert_array_equal(out, np.sin(X))
    assert np.sum(a) == np.sum(X) and np.concatenate([a, a]).shape == (6,)
    assert fungrad.Array is core.Array and isinstance(np.add(a, a), np.ndarray)


@pytest.mark.parametrize("mixed", [
    lambda a, t: np.add(a, t), lambda a, t: np.add(t, a), lambda a, t: a + t,
    lambda a, t: np.asarray(X) * t, lambda a, t: np.concatenate([a, t]),
    lambda a, t: np.stack([X, t]), lambda a, t: np.where(a > 0, a, t)])
def test_the_tracer_wins_in_mixed_calls(mixed):
    a = fnp.asarray(X)
    f = lambda t: np.sum(mixed(a, t) ** 2)
    g = fungrad.grad(f)(2.0 * X)
    np.testing.assert_allclose(g, fungrad.grad(lambda t: fnp.sum(mixed(a, t) ** 2))(2.0 * X))
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(f))(2.0 * X), g)


@pytest.mark.parametrize("f, ref", [
    (lambda x: np.add.reduce(x, axis=1), lambda x: x.sum(1)),
    (lambda x: np.multiply.reduce(x, axis=None, keepdims=True),
     lambda x: np.prod(x, keepdims=True)),
    (lambda x: np.logaddexp.reduce(x, axis=0), lambda x: np.log(np.exp(x).sum(0))),
    (lambda x: np.subtract.reduce(x, axis=1, initial=1.0), lambda x: 1.0 - x.sum(1)),
    (lambda x: np.add.accumulate(x, axis=1), lambda x: np.cumsum(x, 1)),
    (lambda x: np.maximum.accumulate(x, axis=0), lambda x: np.maximum.accumulate(x, 0)),
    (lambda x: np.subtract.outer(x[0], x[1]), lambda x: x[0][:, None] - x[1][None, :]),
    (lambda x: np.add.reduceat(x, [0, 2, 1], axis=1), lambda x: np.add.reduceat(x, [0, 2, 1], 1)),
    (lambda x: np.multiply(x, x, dtype=np.float32), lambda x: (x * x).astype(np.float32)),
])
def test_ufunc_methods(f, ref):
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    out = fungrad.jit(f)(x)
    np.testing.assert_allclose(out, ref(x), rtol=1e-6)
    assert out.dtype == np.asarray(f(x)).dtype
    np.testing.assert_allclose(fungrad.vmap(f)(np.stack([x, -2 * x])),
                               np.stack([ref(x), ref(-2 * x)]), rtol=1e-6)
    if out.dtype == np.float64:
        check_grads(f, (x,), order=1)


def _raises(f, match, exc=TypeError):
    with pytest.raises(exc, match=match):
        fungrad.grad(f)(X)


def test_errors_name_the_function_and_the_fungrad_spelling():
    _raises(lambda x: np.sum(np.real_if_close(x)), r"numpy\.real_if_close .*no counterpart")
    _raises(lambda x: np.sum(np.sin(x, out=np.empty(3))), r"numpy\.sin\(\.\.\., out=")
    _raises(lambda x: np.sum(np.sum(x, out=np.empty(()))), r"numpy\.sum\(\.\.\., out=")
    _raises(lambda x: (np.add.at(x, [0], 1.0), 0.0)[1], r"x\.at\[indices\]\.add")
    _raises(lambda x: (np.fill_diagonal(np.diag(x), 0.0), 0.0)[1], r"inplace=False")

    def accumulates_into_numpy_array(x):
        y = np.ones(3)
        y += x
        return y.sum()
    _raises(accumulates_into_numpy_array, r"numpy\.add\(\.\.\., out=.*y = y \+ x")


def test_numpy_asarray_keeps_the_concretization_error():
    with pytest.raises(core.ConcretizationTypeError, match="derived from argument 'x'"):
        fungrad.jit(lambda x: np.asarray(x))(X)
    with pytest.raises(core.ConcretizationTypeError):
        fungrad.vmap(lambda x: np.array(x))(np.ones((2, 3)))


def test_leaked_tracer_gives_the_escaped_tracer_error():
    leaked = []
    fungrad.grad(lambda x: (leaked.append(x), np.sum(x))[1])(X)
    for use in (np.sin, lambda t: np.concatenate([X, t]), lambda t: np.add.reduce(t),
                lambda t: np.linalg.norm(t)):
        with pytest.raises(core.UnexpectedTracerError, match=r"test_numpy_dispatch\.py:\d+"):
            use(leaked[0])


def test_positional_only_parameters_may_be_numpy_keywords():
    # np.sum(a=x) is NumPy's spelling; fungrad.numpy.sum takes the array by position only
    g = fungrad.grad(lambda x: np.sum(a=x ** 2) + np.mean(a=x))(X)
    np.testing.assert_allclose(g, 2 * X + 1 / 3)


def test_numpy_linalg_results_are_numpys_named_tuples():
    a = np.array([[2.0, 0.3], [0.3, 1.0]])
    out = fungrad.jit(np.linalg.eigh)(a)
    assert type(out) is type(np.linalg.eigh(a))
    np.testing.assert_allclose(out.eigenvalues, np.linalg.eigvalsh(a))


# functions whose result shape depends on values: under grad (the values are
# known there), not under jit/vmap, so no generic twin; unique_* as
# fungrad.numpy.unique: concrete values only
DATA_DEPENDENT = {
    "numpy.union1d": lambda x: np.union1d(x, x[:2]),
    "numpy.intersect1d": lambda x: np.intersect1d(x, x[1:]),
    "numpy.setdiff1d": lambda x: np.setdiff1d(x, x[:1]),
    "numpy.setxor1d": lambda x: np.setxor1d(x, x[:1]),
    "numpy.extract": lambda x: np.extract(x > 0, x),
    "numpy.argwhere": lambda x: x[np.argwhere(x > 0)[:, 0]],
    "numpy.trim_zeros": lambda x: np.trim_zeros(np.concatenate([x * 0, x, x * 0])),
    "numpy.bincount": lambda x: np.bincount(np.array([0, 2, 2]), weights=x),
    "numpy.roots": lambda x: np.sort(np.roots(np.concatenate([np.ones(1), x])).real),
    "numpy.nonzero": lambda x: x[np.nonzero(x > 0)],
    "numpy.flatnonzero": lambda x: x[np.flatnonzero(x > 0)],
}


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_shapes_under_grad(name):
    f = DATA_DEPENDENT[name]
    assert numpy_functions_called(f) >= {name}
    np.testing.assert_allclose(fungrad.jvp(f, (X,), (np.ones(3),))[0], f(X), rtol=1e-12)
    check_grads(f, (X,), order=1, modes=("fwd",))


@pytest.mark.parametrize("name", ["unique", "unique_values", "unique_counts",
                                  "unique_inverse", "unique_all"])
def test_unique_needs_concrete_values(name):
    with pytest.raises(core.ConcretizationTypeError, match="fungrad.numpy.unique"):
        fungrad.grad(lambda x: np.sum(getattr(np, name)(x)[0]))(X)


# functions of shapes and dtypes: Python values, the same inside a transformation
M = np.arange(9.0).reshape(3, 3)
METADATA = {
    "numpy.shape": np.shape, "numpy.ndim": np.ndim, "numpy.size": np.size,
    "numpy.iscomplexobj": np.iscomplexobj, "numpy.isrealobj": np.isrealobj,
    "numpy.can_cast": lambda t: np.can_cast(t, np.float32),
    "numpy.einsum_path": lambda t: np.einsum_path("ij,jk->ik", t, t)[0],
    "numpy.diag_indices_from": lambda t: np.asarray(np.diag_indices_from(t)).tolist(),
    "numpy.tril_indices_from": lambda t: np.asarray(np.tril_indices_from(t, 1)).tolist(),
    "numpy.triu_indices_from": lambda t: np.asarray(np.triu_indices_from(t)).tolist(),
    "numpy.empty_like": lambda t: (np.empty_like(t).shape, np.empty_like(t).dtype),
}


@pytest.mark.parametrize("name", sorted(METADATA))
def test_shape_and_dtype_functions_inside_transformations(name):
    f = METADATA[name]
    assert numpy_functions_called(f) >= {name} or getattr(np, name[6:]) is f
    seen = []
    fungrad.jit(lambda t: (seen.append(f(t)), t)[1])(M)
    fungrad.vmap(lambda t: (seen.append(f(t)), t)[1])(M[None])
    assert seen == [f(M), f(M)]


# printing and saving: a traced value prints as its abstract value and cannot be saved
PRINT_AND_SAVE = {
    "numpy.array_repr": lambda t: np.array_repr(t), "numpy.array_str": lambda t: np.array_str(t),
    "numpy.save": lambda t: np.save(io.BytesIO(), t), "numpy.savez": lambda t: np.savez(
        io.BytesIO(), t),
}


@pytest.mark.parametrize("name", sorted(PRINT_AND_SAVE))
def test_printing_and_saving_traced_values(name):
    f = PRINT_AND_SAVE[name]
    assert numpy_functions_called(f) >= {name}
    if name in ("numpy.save", "numpy.savez"):
        with pytest.raises(fungrad.errors.TracerArrayConversionError):
            fungrad.jit(lambda t: (f(t), t)[1])(M)
        return
    seen = []
    fungrad.jit(lambda t: (seen.append(f(t)), t)[1])(M)
    assert "Traced<" in seen[0] and f(M) == getattr(np, name[6:])(M)


def _covered_by_twins() -> set:
    from tests.test_generic import CASES
    names = set()
    for case in CASES:
        if numpy_twin(case) is not None:
            names |= numpy_functions_called(case.np_fun or case.fun)
    return names


def test_every_dispatched_function_is_covered():
    covered = (_covered_by_twins() | set(DATA_DEPENDENT) | set(METADATA)
               | set(PRINT_AND_SAVE)) | {
        f"numpy.{n}" for n in ("unique", "unique_values", "unique_counts",
                               "unique_inverse", "unique_all")}
    missing = sorted({n for n, _ in _dispatch.dispatched_functions()} - covered)
    assert not missing, ("NumPy functions that dispatch but no twin (tests/cases) nor test "
                         f"here calls: {missing}")


def test_readme_plain_numpy_example_runs():
    import re
    with open(os.path.join(ROOT, "README.md")) as fh:
        block = re.search(r"## Unmodified NumPy code\n.*?```python\n(.*?)```", fh.read(),
                          re.S).group(1)
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    energy, x = namespace["energy"], namespace["x"]
    check_grads(energy, (x,), order=2)
    np.testing.assert_allclose(fungrad.jit(fungrad.hessian(energy))(x),
                               fungrad.hessian(energy)(x), rtol=1e-10)


def test_dispatch_docs_are_current():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gen_numpy_dispatch", os.path.join(ROOT, "tools", "gen_numpy_dispatch.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    with open(tool.OUT) as fh:
        assert fh.read() == tool.render(), "run: python tools/gen_numpy_dispatch.py"
