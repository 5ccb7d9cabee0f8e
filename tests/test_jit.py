"""jit: compiled NumPy code, caching, composition with every transform, errors."""
from __future__ import annotations

import functools
import logging

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import jit, grad, vmap, jvp, vjp, hessian, lax
from fungrad.interpreters import codegen, passes


def f_mlp(params, x):
    w1, b1, w2 = params
    return fnp.sum(fnp.tanh(x @ w1 + b1) @ w2)


def _mlp_args(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3)), rng.normal(size=(5, 4))


def test_jit_equals_eager_and_caches():
    traces = []

    def f(x, y):
        traces.append(1)                 # side effect: runs at trace time only
        return fnp.sin(x) * y + fnp.exp(-x)
    jf = jit(f)
    x, y = np.linspace(0, 1, 4), np.arange(4.0)
    np.testing.assert_allclose(jf(x, y), f(x, y), rtol=1e-15)
    jf(x + 1, y)
    assert len(traces) == 2              # one eager call above + one trace
    jf(np.ones(5), np.ones(5))           # new shape: retrace
    assert len(traces) == 3
    jf(np.ones(5, np.float32), np.ones(5, np.float32))   # new dtype: retrace
    assert len(traces) == 4


def test_jit_static_argnums_and_argnames():
    def f(x, n, *, mode):
        for _ in range(n):
            x = fnp.sin(x) if mode == "sin" else fnp.cos(x)
        return x
    jf = jit(f, static_argnums=1, static_argnames="mode")
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(jf(x, 3, mode="sin"), np.sin(np.sin(np.sin(x))))
    np.testing.assert_allclose(jf(x, 2, mode="cos"), np.cos(np.cos(x)))


@pytest.mark.parametrize("transform", [
    "grad_of_jit", "jit_of_grad", "vmap_of_jit", "jit_of_vmap_of_grad", "nested_jit",
    "jvp_of_jit", "vjp_of_jit", "hessian_of_jit", "grad_of_grad_of_jit"])
def test_jit_composes_with_transforms(transform):
    params, x = _mlp_args()
    loss = lambda p: f_mlp(p, x)
    jloss = jit(loss)
    if transform == "grad_of_jit":
        got, want = grad(jloss)(params), grad(loss)(params)
    elif transform == "jit_of_grad":
        got, want = jit(grad(loss))(params), grad(loss)(params)
    elif transform == "vmap_of_jit":
        xs = np.stack([x, 2 * x])
        got = vmap(jit(f_mlp), in_axes=(None, 0))(params, xs)
        want = np.stack([f_mlp(params, xi) for xi in xs])
    elif transform == "jit_of_vmap_of_grad":
        per_ex = lambda p, xs: vmap(grad(f_mlp), in_axes=(None, 0))(p, xs[:, None, :])
        got, want = jit(per_ex)(params, x), per_ex(params, x)
    elif transform == "nested_jit":
        outer = jit(lambda p: jit(loss)(p) * 2.0 + jit(lambda q: fnp.sum(q[2]))(p))
        got, want = outer(params), loss(params) * 2.0 + np.sum(params[2])
    elif transform == "jvp_of_jit":
        t = tuple(np.ones_like(p) for p in params)
        got, want = jvp(jloss, (params,), (t,)), jvp(loss, (params,), (t,))
    elif transform == "vjp_of_jit":
        got, want = vjp(jloss, params)[1](2.0), vjp(loss, params)[1](2.0)
    elif transform == "hessian_of_jit":
        got, want = hessian(jit(lambda b: loss((params[0], b, params[2]))))(params[1]), \
            hessian(lambda b: loss((params[0], b, params[2])))(params[1])
    else:
        g = lambda s: jloss(tuple(p * s for p in params))
        got, want = grad(grad(g))(1.2), grad(grad(lambda s: loss(tuple(p * s for p in params))))(1.2)
    for a, b in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_lower_shows_jaxpr_and_deterministic_source():
    f = lambda x: fnp.sum(fnp.sin(x) * x)
    low1 = jit(grad(f)).lower(np.ones(3))
    low2 = jit(grad(f)).lower(np.ones(3))
    assert "sin" in low1.as_text() and "cos" in low1.as_text()
    src = low1.source()
    assert src.startswith("def fn(") and "np.cos" in src
    assert src == low2.source()
    compile(src, "<test>", "exec")


def test_python_scalars_are_weakly_typed_under_jit():
    out = jit(lambda x, s: x * s)(np.ones(3, np.float32), 2.0)
    assert out.dtype == np.float32
    assert jit(lambda x, s: x * s)(np.ones(3, np.int64), 2.5).dtype == np.float64


def test_concretization_error_names_argument_and_fix():
    def f(x, n):
        if n > 0:
            return x
        return -x
    with pytest.raises(fungrad.ConcretizationTypeError, match=r"argument 'n'.*static_argnums"):
        jit(f)(np.ones(2), 3)
    assert jit(f, static_argnums=1)(np.ones(2), 3).shape == (2,)


def test_unhashable_static_argument():
    with pytest.raises(TypeError, match="positional argument 1.*not hashable"):
        jit(lambda x, cfg: x, static_argnums=1)(np.ones(2), [1, 2])


def test_escaped_tracer_from_jit():
    box = []

    @jit
    def f(x):
        box.append(x)
        return x + 1.0
    f(np.ones(2))
    with pytest.raises(fungrad.UnexpectedTracerError, match="test_jit.py"):
        fnp.sin(box[0])


def test_cache_miss_explanation(caplog):
    jf = jit(lambda x: x * 2.0)
    with caplog.at_level(logging.DEBUG, logger="fungrad.jit"):
        jf(np.ones(3))
        jf(np.ones(4))
    assert any("changed from ((3,)" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------
# Passes: the optimised program computes the same values
# ----------------------------------------------------------------------------

def _random_program(draw_ops, x, y):
    ops = {"sin": fnp.sin, "cos": fnp.cos, "tanh": fnp.tanh, "neg": lambda a: -a,
           "mul1": lambda a: a * 1.0, "add0": lambda a: a + 0.0, "sq": lambda a: a * a}
    vals = [x, y]
    for name, i, j in draw_ops:
        a = vals[i % len(vals)]
        if name == "add":
            vals.append(a + vals[j % len(vals)])
        elif name == "mul":
            vals.append(a * vals[j % len(vals)])
        else:
            vals.append(ops[name](a))
    return fnp.sum(vals[-1]) + fnp.sum(vals[-2])


@given(st.lists(st.tuples(st.sampled_from(["sin", "cos", "tanh", "neg", "mul1", "add0", "sq",
                                           "add", "mul"]),
                          st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=12))
def test_passes_preserve_meaning(ops):
    x, y = np.linspace(-1, 1, 1200), np.linspace(0.5, 2, 1200)   # large enough for out=
    f = lambda a, b: _random_program(ops, a, b)
    for fun in (f, grad(f), grad(f, argnums=1), jit(grad(f))):
        closed = fungrad.make_jaxpr(fun)(x, y)
        flat = passes.inline_calls(closed)
        want = codegen.compile_closed(flat).fn(*flat.consts, x, y)
        candidates = [codegen.compile_jaxpr(p(flat.jaxpr), consts=flat.consts)
                      for p in (passes.simplify, passes.fold_constants, passes.cse, passes.dce)]
        candidates.append(codegen.compile_closed(passes.optimize(closed)))
        candidates.append(codegen.compile_jaxpr(flat.jaxpr, consts=flat.consts,
                                                reuse_buffers=False))
        for comp in candidates:
            got = comp.fn(*comp.consts, x, y)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15)


def test_simplify_keeps_square_transposes():
    f = lambda x: x.T * 2.0 + x
    x = np.arange(9.0).reshape(3, 3)
    np.testing.assert_allclose(jit(f)(x), x.T * 2.0 + x)


def test_buffer_reuse_writes_only_into_dead_temporaries():
    f = lambda x, y: fnp.sum(fnp.tanh(fnp.sin(x) * y + fnp.exp(x)) ** 2)
    x, y = np.linspace(0, 1, 2000), np.ones(2000)
    src = jit(grad(f)).lower(x, y).source()
    assert "out=" in src
    assert "out=" not in jit(grad(f)).lower(x[:5], y[:5]).source()   # tiny: allocate
    x0, y0 = x.copy(), y.copy()
    jit(grad(f))(x, y)
    np.testing.assert_array_equal(x, x0)       # inputs are never written
    np.testing.assert_array_equal(y, y0)


def test_a_gemm_result_takes_the_bias_add_in_place():
    # dot_general's lowering makes a new array (fresh_result): the bias is
    # added into it, never into an argument, a reshape of one or a shared view
    f = lambda x, w, b: fnp.tanh(x @ w + b)
    x, w, b = np.linspace(-1, 1, 4 * 64 * 16).reshape(4, 64, 16), np.ones((16, 32)) / 8, np.ones(32)
    src = jit(f).lower(x, w, b).source()
    assert "np.matmul(" in src and ", c, out=" in src     # (a, b, c: x, w, b)
    copies = [a.copy() for a in (x, w, b)]
    np.testing.assert_allclose(jit(f)(x, w, b), f(x, w, b), rtol=1e-14)
    for a, a0 in zip((x, w, b), copies):
        np.testing.assert_array_equal(a, a0)
    # the product used again later: not written into
    g = lambda x, w, b: (lambda y: fnp.sum(fnp.tanh(y + b)) + fnp.sum(y * y))(x @ w)
    x2 = np.linspace(-1, 1, 64 * 16).reshape(64, 16)
    np.testing.assert_allclose(jit(g)(x2, w, b), g(x2, w, b), rtol=1e-13)


def test_optimize_removes_autodiff_noise():
    f = lambda x: fnp.sum(fnp.sin(x) * x)
    closed = fungrad.make_jaxpr(grad(f))(np.ones(3))
    before = len(closed.jaxpr.eqns)
    after = passes.optimize(closed).jaxpr
    assert len(after.eqns) < before
    assert not any(e.primitive.name == "mul" and any(
        getattr(a, "val", None) == 1.0 for a in e.inputs) for e in after.eqns)


def test_export_standalone_module(tmp_path):
    from tests.export_check import check_exported

    def loss(params, x):
        return fnp.sum(fnp.tanh(x @ params["w"] + params["b"]) ** 2)
    params = {"w": np.linspace(-1, 1, 6).reshape(3, 2), "b": np.array([0.1, -0.2])}
    x = np.arange(6.0).reshape(2, 3) / 10
    other = ({"w": np.ones((3, 2)), "b": np.zeros(2)}, np.ones((2, 3)))
    src = check_exported(fungrad.value_and_grad(loss), params, x, tmp_path=tmp_path,
                         name="loss_grad", calls=[(params, x), other], rtol=1e-14)
    assert "fungrad" not in src.split('"""', 2)[2]          # only NumPy is imported


def test_export_embeds_pure_numpy_special_functions(tmp_path):
    from tests.export_check import check_exported
    f = lambda x: fnp.sum(fungrad.lax.erf(x) * fungrad.lax.lgamma(x + 2.0))
    x = np.linspace(0.1, 2.0, 5)
    src = check_exported(fungrad.grad(f), x, tmp_path=tmp_path, name="g", rtol=1e-13)
    assert "__import__" not in src
    np.testing.assert_allclose(jit(fungrad.grad(f))(x), fungrad.grad(f)(x), rtol=1e-13)


def test_every_kernel_module_embeds_as_numpy_only_code():
    """export embeds a kernel by following its imports: each kernel module
    imports only NumPy, the standard library and sibling kernels, and its
    embedded copy defines the same functions without importing fungrad."""
    import ast
    import importlib
    import pkgutil
    import fungrad.lax.kernels as kernels
    export_module = importlib.import_module("fungrad.export")
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"fungrad.lax.kernels.{info.name}")
        lines, aliases = export_module._embed_kernel_modules({"_m": module})
        assert aliases[-1] == f"_{info.name}"
        source = "import numpy as np\n" + "\n".join(lines)
        namespace = {}
        exec(source, namespace)
        copy = namespace[f"_{info.name}"]
        for name in module.__all__:
            assert callable(getattr(copy, name)), (info.name, name)
            assert getattr(copy, name) is not getattr(module, name)
        for code in (line for line in lines if line.startswith("exec(")):
            body = ast.parse(ast.parse(code).body[0].value.args[0].value)
            for node in ast.walk(body):
                if isinstance(node, ast.ImportFrom):
                    assert not (node.module or "").startswith("fungrad"), (info.name, node.module)
                if isinstance(node, ast.Import):
                    assert not any(a.name.startswith("fungrad") for a in node.names)


def test_export_refuses_code_that_calls_fungrad():
    """A lowering may only call NumPy or a kernel module; export says which
    module is in the way, and a module importing fungrad is never embedded."""
    import importlib
    from fungrad.core import Primitive, primitives
    from fungrad.interpreters.lowering import call
    from fungrad.lax import utils
    export_module = importlib.import_module("fungrad.export")
    p = Primitive("export_test_call")
    del primitives["export_test_call"]        # a test stand-in, not a real primitive
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    utils.def_lowering(p, lambda a: call(utils.as_operand, a[0]))
    with pytest.raises(TypeError, match="fungrad.lax.utils, which is not a NumPy-only kernel"):
        fungrad.export(lambda x: p.bind(x), np.ones(2))
    with pytest.raises(TypeError, match="neither NumPy, the standard library nor a kernel"):
        export_module._kernel_imports(utils)


@pytest.mark.parametrize("f", [
    lambda a, b: (a @ b.T).T @ a,
    lambda a, b: fnp.einsum("ij,kj->ik", a, b).T,
    lambda a, b: fnp.swapaxes(fnp.einsum("bij,bkj->bik", a[None] * 1.0, b[None] + 0.0), 1, 2),
    lambda a, b: fnp.tanh(a.T @ b) @ (b.T @ a).T,
])
def test_fold_transposes_preserves_values(f):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    g = lambda a, b: fnp.sum(f(a, b) ** 2)
    for fun in (f, grad(g, argnums=(0, 1))):
        closed = fungrad.make_jaxpr(fun)(a, b)
        flat = passes.inline_calls(closed)
        want = codegen.compile_closed(flat).fn(*flat.consts, a, b)
        folded = codegen.compile_jaxpr(passes.dce(passes.fold_transposes(flat.jaxpr)),
                                       consts=flat.consts)
        for x, y in zip(folded.fn(*flat.consts, a, b), want):
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-14)


_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
_LINALG_PROGRAMS = {
    "triangular_solve": lambda a: fnp.sum(lax.linalg.triangular_solve(
        a, a[:, :2] + 1.0, left_side=True, lower=True) ** 2),
    "triangular_solve_right_unit": lambda a: fnp.sum(lax.linalg.triangular_solve(
        a, a[:2] * 2.0, lower=False, transpose_a=True, unit_diagonal=True)),
    "cholesky": lambda a: fnp.sum(fnp.sin(lax.linalg.cholesky(a))),
    "lu": lambda a: fnp.sum(lax.linalg.lu(a)[0] ** 2) + fnp.sum(lax.linalg.lu(a)[2] * 1.0),
    "lu_pivots_to_permutation": lambda a: fnp.sum(
        lax.linalg.lu_pivots_to_permutation(lax.linalg.lu(a)[1], 3) * fnp.sum(a)),
    "linear_solve": lambda a: fnp.sum(fnp.linalg.solve(a, fnp.arange(3.0)) ** 2),
    "inv": lambda a: fnp.sum(fnp.linalg.inv(a) * a.T),
    "det_adjugate": lambda a: fnp.linalg.det(a) ** 2,
}


@pytest.mark.parametrize("name", sorted(_LINALG_PROGRAMS))
def test_export_linalg_primitives_needs_only_numpy(tmp_path, name):
    from tests.export_check import check_exported
    f = _LINALG_PROGRAMS[name]
    for fun, tag in ((f, "value"), (fungrad.grad(f), "grad")):
        src = check_exported(fun, _SPD, tmp_path=tmp_path, name="run",
                             module=f"exported_{name}_{tag}", calls=[(_SPD,), (np.eye(3) * 2.0,)])
        assert "__import__" not in src and "_impl[" not in src
        imports = {line.split()[1] for line in src.splitlines()
                   if line.startswith(("import ", "from "))}
        assert imports == {"numpy"}
        np.testing.assert_allclose(jit(fun)(_SPD), fun(_SPD), rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------
# Signatures: static arguments by name or position, methods, partials, the cache
# ----------------------------------------------------------------------------

def _counting(fn, counter):
    def wrapped(*args, **kwargs):
        counter.append(1)
        return fn(*args, **kwargs)
    return functools.wraps(fn)(wrapped)


def _power(x, n, *, scale=1.0):
    for _ in range(n):
        x = x * 2.0
    return x * scale


@pytest.mark.parametrize("spec", [dict(static_argnames="n"), dict(static_argnums=1),
                                  dict(static_argnames=("n",), static_argnums=(1,))],
                         ids=["names", "nums", "both"])
def test_a_static_argument_is_static_by_position_or_keyword(spec):
    jf = jit(_power, **spec)
    x = np.ones(2)
    for call in (lambda: jf(x, 3), lambda: jf(x, n=3), lambda: jf(x, 3, scale=0.5)):
        out = call()                     # a traced n would fail in range(n)
        assert out[0] in (8.0, 4.0)
    assert jf.static_argnums == (1,) and jf.static_argnames == ("n",)


def test_decorator_factory_defaults_and_keyword_only_arguments():
    @jit(static_argnames="k")
    def f(x, k=2, *, shift=0.0):
        return x ** k + shift
    x = np.array([1.5, 2.0])
    np.testing.assert_allclose(f(x), x ** 2)
    np.testing.assert_allclose(f(x, 3, shift=1.0), x ** 3 + 1.0)
    np.testing.assert_allclose(f(x, shift=np.array([1.0, 2.0])), x ** 2 + [1.0, 2.0])
    np.testing.assert_allclose(jit(static_argnums=1)(lambda x, n: x * n)(x, 4), 4 * x)


class _Scaler:
    def __init__(self, a):
        self.a = a

    def __hash__(self):
        return hash(self.a)

    def __eq__(self, other):
        return isinstance(other, _Scaler) and other.a == self.a

    @functools.partial(jit, static_argnums=0)
    def scale(self, x):
        return x * self.a

    @jit
    def not_static(self, x):
        return x * self.a

    def method(self, x):
        return x + self.a


def test_jit_on_methods_binds_like_a_method():
    x = np.ones(2)
    np.testing.assert_allclose(_Scaler(3.0).scale(x), 3.0 * x)
    np.testing.assert_allclose(_Scaler(4.0).scale(x), 4.0 * x)     # a new static self
    np.testing.assert_allclose(jit(_Scaler(2.0).method)(x), x + 2.0)
    with pytest.raises(TypeError, match=r"argument 'self' is a _Scaler.*static_argnums=0"):
        _Scaler(3.0).not_static(x)


class _Counter:
    def __init__(self):
        self.traces = 0

    def step(self, x):
        self.traces += 1                 # runs while tracing only
        return x + 1.0


def test_jit_of_a_partial_and_of_a_bound_method_in_a_loop_traces_once():
    obj, other = _Counter(), _Counter()
    for _ in range(3):                   # obj.step is a new bound method each time
        np.testing.assert_allclose(jit(obj.step)(np.ones(2)), 2.0)
    jit(other.step)(np.ones(2))          # another instance: its own cache
    assert (obj.traces, other.traces) == (1, 1)
    part = functools.partial(_power, n=2)
    np.testing.assert_allclose(jit(part, static_argnames="n")(np.ones(2)), 4.0)


def test_jit_inside_a_loop_traces_once_and_each_new_closure_is_new():
    traces = []
    f = _counting(lambda x: x + 1.0, traces)
    for _ in range(4):
        jit(f)(np.ones(3))
    assert len(traces) == 1
    for i in range(3):                   # a new closure each time: traced each time
        g = _counting(lambda x, i=i: x + i, traces)
        np.testing.assert_allclose(jit(g)(np.ones(3)), 1.0 + i)
    assert len(traces) == 4


def test_cache_is_bounded_and_dies_with_its_function(monkeypatch):
    import gc
    import weakref
    from fungrad import jitting
    monkeypatch.setattr(jitting, "CACHE_SIZE", 3)
    traces = []
    f = _counting(lambda x: x * 2.0, traces)
    jf = jit(f)
    for n in range(1, 6):                # five signatures: only three kept
        jf(np.ones(n))
    assert len(jf._cache.entries) == 3
    jf(np.ones(5))                       # most recent: still cached
    assert len(traces) == 5
    jf(np.ones(1))                       # evicted: traced again
    assert len(traces) == 6
    ref = weakref.ref(f)
    del f, jf
    gc.collect()
    assert ref() is None                 # the cache does not keep the function alive


def test_static_argument_errors_name_the_argument():
    with pytest.raises(ValueError,
                       match=r"static_argnames \['m'\].*parameters are \['x', 'n', 'scale'\]"):
        jit(_power, static_argnames="m")
    with pytest.raises(ValueError, match=r"static_argnums \[2\] out of range.*2 positional"):
        jit(_power, static_argnums=2)
    with pytest.raises(TypeError, match=r"argument 'n'.*not hashable"):
        jit(_power, static_argnames="n")(np.ones(2), [1])
    with pytest.raises(TypeError, match=r"argument 'n'.*not hashable"):
        jit(_power, static_argnums=1)(np.ones(2), n=[1])
    with pytest.raises(TypeError, match="static_argnums must be int"):
        jit(_power, static_argnums="n")
    # **kwargs and *args accept any name / position
    assert jit(lambda *a, **k: a[0], static_argnames="anything", static_argnums=3)(1.0) == 1.0


def test_accepted_options_and_lower_compile():
    f = lambda x, y: fnp.sin(x) * y
    jf = jit(f, donate_argnums=0, donate_argnames="y", keep_unused=True, inline=True)
    x = np.linspace(0, 1, 3)
    np.testing.assert_allclose(jf(x, 2.0), 2 * np.sin(x))
    compiled = jf.lower(x, 2.0).compile()
    np.testing.assert_allclose(compiled(x, 3.0), 3 * np.sin(x))
    assert "np.sin" in compiled.as_text()
    with pytest.raises(TypeError, match=r"(?s)Argument types differ.*compiled with float64\[3\] and called with float64\[4\]"):
        compiled(np.ones(4), 3.0)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        jit(f, donate=0)


def test_side_effects_of_a_jitted_method_run_while_tracing_only():
    class Counter:                      # the impure pattern: state mutated in the method
        def __init__(self):
            self.n = 0

        def count(self):
            self.n += 1
            return self.n
    counter = Counter()
    fast = jit(counter.count)
    assert [int(fast()) for _ in range(3)] == [1, 1, 1]    # baked in at trace time, as JAX
    step = jit(lambda n: (n + 1, n + 1))                   # explicit state instead
    state, seen = 0, []
    for _ in range(3):
        value, state = step(state)
        seen.append(int(value))
    assert seen == [1, 2, 3]


def test_each_new_partial_is_a_new_function_for_the_cache():
    traces = []
    body = _counting(lambda i: i + 1, traces)
    i = 0
    for _ in range(3):
        i = jit(functools.partial(body))(i)   # a new partial each time: traced each time
    for _ in range(3):
        i = jit(body)(i)                      # the same function: traced once
    assert int(i) == 6 and len(traces) == 4


def test_long_programs_are_emitted_and_compiled_in_parts(monkeypatch):
    # Python's compiler holds a whole function's syntax tree at once (kilobytes
    # per line): a long program becomes one function per CHUNK_SIZE equations,
    # each compiled on its own, called in turn by the main one
    from fungrad.interpreters import codegen
    monkeypatch.setattr(codegen, "CHUNK_SIZE", 4)

    def f(x, y):
        for i in range(12):
            x = fnp.sin(x) * y if i % 2 else fnp.cos(x) + 0.5
        return fnp.sum(x * y), x

    x, y = np.linspace(0.1, 1.0, 5), np.full(5, 0.9)
    g = jit(grad(f, argnums=(0, 1), has_aux=True))
    src = g.lower(x, y).source()
    assert "def _part0_fn(" in src and "def _part1_fn(" in src and "\ndef fn(" in src
    leaves = fungrad.tree_util.tree_leaves
    for got, want in zip(leaves(g(x, y)), leaves(grad(f, argnums=(0, 1), has_aux=True)(x, y))):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    # the text is compiled one top-level function at a time
    monkeypatch.setattr(codegen, "CHUNK_SIZE", 2)
    parts = codegen._top_level_functions(jit(lambda v: f(v, y)[0]).lower(x).source())
    assert len(parts) > 2 and all(p.startswith("def ") for p in parts)
