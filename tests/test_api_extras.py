"""The small modules JAX programs import (dtypes, typing, errors, profiler,
experimental) and the remaining top-level API (custom_gradient,
closure_convert, ensure_compile_time_eval, named_scope/named_call,
clear_caches, live_arrays, default_device)."""
import os

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import dtypes, errors


# ----------------------------------------------------------------------------
# dtypes, typing, errors
# ----------------------------------------------------------------------------

def test_dtypes():
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    with fungrad.enable_x64(False):
        assert dtypes.canonicalize_dtype(np.float64) == np.float32
        assert dtypes.canonicalize_dtype("int64") == np.int32
        assert dtypes.result_type(1.0, np.int32(1)) == np.float32
    assert dtypes.float0 == fungrad.float0
    assert dtypes.issubdtype(np.float32, np.floating)
    assert dtypes.issubdtype(dtypes.float0, dtypes.float0)
    assert not dtypes.issubdtype(dtypes.float0, np.floating)
    assert not dtypes.issubdtype(fungrad.random.PRNGKey(0).dtype, dtypes.prng_key)
    assert dtypes.issubdtype(dtypes.prng_key, dtypes.extended)
    assert dtypes.result_type(np.float32, np.int8) == np.float32
    assert dtypes.result_type(np.ones(2, np.float32), 2.0) == np.float32
    assert dtypes.result_type(2.0, return_weak_type_flag=True) == (np.float64, True)
    assert dtypes.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert dtypes.iinfo(np.int8).max == 127
    assert dtypes.dtype(fnp.ones(2, np.float32)) == np.float32


def test_typing_annotations():
    from fungrad.typing import ArrayLike, DTypeLike

    def f(x: ArrayLike, dtype: DTypeLike = np.float32) -> ArrayLike:
        return fnp.asarray(x, dtype)
    assert f([1, 2]).dtype == np.float32
    assert fungrad.Array in ArrayLike.__args__ and np.dtype in DTypeLike.__args__


def test_errors_are_the_classes_fungrad_raises():
    with pytest.raises(errors.TracerBoolConversionError):
        fungrad.jit(lambda x: 1 if x > 0 else 2)(1.0)
    with pytest.raises(errors.TracerIntegerConversionError):
        fungrad.jit(lambda x: fnp.ones(int(x)))(3.0)
    with pytest.raises(errors.TracerArrayConversionError):
        fungrad.jit(lambda x: np.asarray(x))(1.0)
    with pytest.raises(errors.ConcretizationTypeError):     # the base of all three
        fungrad.jit(lambda x: 1 if x > 0 else 2)(1.0)
    leaked = []
    fungrad.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(errors.UnexpectedTracerError):
        fnp.sin(leaked[0])
    assert issubclass(errors.ConcretizationTypeError, TypeError)
    assert issubclass(errors.KeyReuseError, Exception)
    assert fungrad.ConcretizationTypeError is errors.ConcretizationTypeError


# ----------------------------------------------------------------------------
# profiler
# ----------------------------------------------------------------------------

def test_profiler_trace_writes_a_timing_report(tmp_path):
    f = fungrad.jit(lambda x: fnp.sin(x) @ x)
    x = np.ones((20, 20))

    @fungrad.profiler.annotate_function
    def step(v):
        return fnp.tanh(v) + f(v)
    with fungrad.profiler.trace(str(tmp_path)) as session:
        with fungrad.profiler.TraceAnnotation("setup"):
            y = fnp.exp(x)
        step(y)
        with fungrad.named_scope("layer"):
            fungrad.grad(lambda v: fnp.sum(fnp.cos(v)))(x)
        fungrad.named_call(fnp.square, name="sq")(x)
    report = open(session.path).read()
    assert os.path.dirname(session.path) == str(tmp_path)
    for row in ("exp", "tanh", "jit(lambda)", "cos", "[setup]", "[layer]", "[sq]"):
        assert row in report, row
    assert "step" in report and "calls" in report
    # tracing is off again
    np.testing.assert_allclose(fnp.sin(1.0), np.sin(1.0), rtol=4 * np.finfo(float).eps)
    with pytest.raises(RuntimeError, match="no trace is running"):
        fungrad.profiler.stop_trace()
    fungrad.profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already running"):
        fungrad.profiler.start_trace(str(tmp_path))
    assert os.path.exists(fungrad.profiler.stop_trace())


def test_named_scope_is_also_a_decorator(tmp_path):
    # as jax.named_scope (a contextlib context manager): equinox decorates
    # its layers' __call__ with it; recursion must not confuse the timings
    @fungrad.named_scope("block")
    def power(x, n):
        return x if n == 1 else x * power(x, n - 1)

    np.testing.assert_allclose(fungrad.grad(power)(1.5, 3), 3 * 1.5 ** 2)
    with fungrad.profiler.trace(str(tmp_path)) as session:
        fungrad.jit(power, static_argnums=1)(2.0, 3)
    assert "[block]" in open(session.path).read()


# ----------------------------------------------------------------------------
# experimental
# ----------------------------------------------------------------------------

def test_experimental_aliases():
    from fungrad.experimental.ode import odeint
    from fungrad.experimental import checkify
    assert odeint is fungrad.ode.odeint and checkify.checkify is fungrad.checkify.checkify
    with fungrad.experimental.disable_x64():
        assert fnp.zeros(1).dtype == np.float32
        with fungrad.experimental.enable_x64():
            assert fnp.zeros(1).dtype == np.float64
    from fungrad.experimental.shard_map import shard_map     # JAX's older spelling
    from fungrad.sharding import Mesh, P
    mesh = Mesh(np.array(fungrad.devices(), dtype=object), ("i",))
    np.testing.assert_allclose(shard_map(lambda v: v * 2, mesh, P("i"), P("i"))(np.arange(3.0)),
                               [0.0, 2.0, 4.0])
    with pytest.raises(NotImplementedError, match="auto"):
        shard_map(lambda v: v, mesh, P("i"), P("i"), auto=frozenset({"i"}))


def test_one_process_device_and_sharding_api():
    from fungrad.sharding import Mesh, NamedSharding, P, SingleDeviceSharding
    assert fungrad.devices("cpu") == fungrad.devices() and fungrad.device_count("cpu") == 1
    with pytest.raises(RuntimeError, match="Unknown backend gpu.*cpu"):
        fungrad.devices("gpu")
    x = fnp.arange(6.0).reshape(2, 3)
    (shard,) = x.addressable_shards
    assert shard.device is fungrad.devices()[0] and shard.index == (slice(None), slice(None))
    assert x.addressable_data(0) is x and x.is_fully_addressable and x.is_fully_replicated
    with pytest.raises(IndexError, match="one shard"):
        x.addressable_data(1)
    mesh = Mesh(np.array(fungrad.devices(), dtype=object), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    assert sharding.is_fully_addressable and SingleDeviceSharding(fungrad.devices()[0]).is_fully_addressable
    asked = []
    full = np.arange(12.0).reshape(4, 3)

    def block(index):
        asked.append(index)
        return full[index]
    y = fungrad.make_array_from_callback((4, 3), sharding, block)
    np.testing.assert_array_equal(np.asarray(y), full)
    assert len(asked) == 1
    with pytest.raises(ValueError, match=r"returned shape \(2,\).*is \(4, 3\)"):
        fungrad.make_array_from_callback((4, 3), sharding, lambda idx: np.zeros(2))
    with pytest.raises(TypeError, match="must be a Sharding"):
        fungrad.make_array_from_callback((4, 3), "data", block)


# ----------------------------------------------------------------------------
# custom_gradient, closure_convert
# ----------------------------------------------------------------------------

def test_custom_gradient():
    @fungrad.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * 10 * x,)
    assert float(f(3.0)) == 9.0
    assert float(fungrad.grad(f)(3.0)) == 30.0
    assert float(fungrad.jit(fungrad.grad(f))(3.0)) == 30.0
    np.testing.assert_allclose(fungrad.vmap(fungrad.grad(f))(np.arange(3.0)), [0.0, 10.0, 20.0])

    @fungrad.custom_gradient
    def clip_gradient(x, y):
        return x * y, lambda g: (fnp.clip(g * y, -1, 1), fnp.clip(g * x, -1, 1))
    gx, gy = fungrad.grad(clip_gradient, argnums=(0, 1))(5.0, 0.5)
    assert (float(gx), float(gy)) == (0.5, 1.0)
    with pytest.raises(TypeError, match="vjp function"):
        fungrad.grad(fungrad.custom_gradient(lambda x: (x, 1.0)))(1.0)


def test_closure_convert_for_custom_vjp():
    # JAX's example: a custom_vjp solver whose function closes over a traced value
    def outer(a, x):
        f = lambda v: fnp.sin(a * v)
        g, consts = fungrad.closure_convert(f, x)
        assert len(consts) == 1                     # ``a`` (traced), hoisted
        return apply(g, x, *consts)

    @fungrad.custom_vjp
    def apply_raw(x, a):
        return fnp.sin(a * x)

    def apply(g, x, a):
        return apply_raw(x, a)

    apply_raw.defvjp(lambda x, a: (fnp.sin(a * x), (x, a)),
                     lambda res, ct: (ct * res[1] * fnp.cos(res[1] * res[0]),
                                      ct * res[0] * fnp.cos(res[1] * res[0])))
    np.testing.assert_allclose(fungrad.grad(outer)(2.0, 0.5), 0.5 * np.cos(1.0))

    scale = np.arange(3.0)
    g, consts = fungrad.closure_convert(lambda v: fnp.sum(v * scale), np.ones(3))
    assert len(consts) == 1 and consts[0] is scale
    assert float(g(np.ones(3), *consts)) == 3.0
    assert float(g(np.ones(3), np.ones(3))) == 3.0   # the constant is now an argument
    with pytest.raises(TypeError, match="hoisted"):
        g(np.ones(3))


# ----------------------------------------------------------------------------
# ensure_compile_time_eval, clear_caches, live_arrays, default_device
# ----------------------------------------------------------------------------

def test_ensure_compile_time_eval_gives_concrete_values_inside_jit():
    @fungrad.jit
    def f(x):
        with fungrad.ensure_compile_time_eval():
            table = fnp.cumsum(fnp.arange(4.0))      # concrete: Python can branch on it
            big = bool(table[-1] > 5)
            y = x * 2                                 # traced: staged as usual
        return y + (table[-1] if big else 0.0)
    assert float(f(1.0)) == 8.0
    assert "cumsum" not in f.lower(1.0).source()


def test_clear_caches_and_live_arrays():
    calls = []
    f = fungrad.jit(lambda x: calls.append(1) or x + 1)
    f(1.0)
    f(1.0)
    fungrad.clear_caches()
    f(1.0)
    assert len(calls) == 2
    marker = fnp.asarray(np.arange(7.0) * 3.25)
    assert any(a is marker for a in fungrad.live_arrays())


def test_print_environment_info(capsys):
    fungrad.print_environment_info()
    out = capsys.readouterr().out
    assert "fungrad:" in out and np.__version__ in out and "config:" in out
