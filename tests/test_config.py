"""fungrad.config: JAX's interface, the options that mean something here, bad input."""
import logging
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, random


@pytest.fixture(autouse=True)
def _restore_config():
    before = dict(fungrad.config.values)
    yield
    for name, value in before.items():
        if fungrad.config.read(name) != value:
            fungrad.config.update(name, value)


# ----------------------------------------------------------------------------
# The interface
# ----------------------------------------------------------------------------

def test_update_and_attribute_reads():
    assert fungrad.config.jax_enable_x64 is True           # fungrad's default
    fungrad.config.update("jax_debug_nans", True)
    assert fungrad.config.jax_debug_nans is True
    assert fungrad.config.read("jax_debug_nans") is True
    assert fungrad.config.values["jax_debug_nans"] is True
    assert fungrad.config.x64_enabled is True
    fungrad.config.update("jax_debug_nans", False)
    assert fungrad.config.values["jax_debug_nans"] is False
    assert {"jax_enable_x64", "jax_disable_jit", "jax_debug_nans", "jax_debug_infs",
            "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion", "jax_log_compiles",
            "jax_default_matmul_precision", "jax_platforms",
            "jax_platform_name"} <= set(fungrad.config.values)


def test_unknown_option_names_the_closest():
    with pytest.raises(AttributeError, match="did you mean 'jax_enable_x64'"):
        fungrad.config.update("jax_enable_x46", True)
    with pytest.raises(AttributeError, match="jax_debug_nans"):
        fungrad.config.jax_debug_nan


def test_wrong_values_name_the_option_and_the_allowed_values():
    with pytest.raises(ValueError, match="jax_debug_nans.*True or False"):
        fungrad.config.update("jax_debug_nans", "yes")
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion.*'allow', 'warn', 'raise'"):
        fungrad.config.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(ValueError, match="jax_numpy_dtype_promotion.*'standard', 'strict'"):
        fungrad.config.update("jax_numpy_dtype_promotion", "loose")
    with pytest.raises(ValueError, match="jax_platforms.*'cpu'"):
        fungrad.config.update("jax_platforms", "gpu")
    with pytest.raises(ValueError, match="jax_default_matmul_precision"):
        fungrad.config.update("jax_default_matmul_precision", "ultra")
    with pytest.raises(AttributeError, match="update"):
        fungrad.config.jax_enable_x64 = False


def test_accepted_options():
    fungrad.config.update("jax_platforms", "cpu")
    fungrad.config.update("jax_platform_name", "cpu")
    fungrad.config.update("jax_default_matmul_precision", "highest")
    with fungrad.default_matmul_precision("bfloat16"):
        assert fungrad.config.jax_default_matmul_precision == "bfloat16"
        a = np.arange(6.0).reshape(2, 3)
        np.testing.assert_array_equal(fnp.matmul(a, a.T), a @ a.T)   # full precision
    assert fungrad.config.jax_default_matmul_precision == "highest"
    with fungrad.default_device("cpu"):
        assert fungrad.config.jax_default_device == "cpu"
        assert float(fnp.sin(0.0)) == 0.0


def test_context_managers_restore_and_decorate():
    with fungrad.disable_jit():
        assert fungrad.config.jax_disable_jit
        with fungrad.disable_jit(False):
            assert not fungrad.config.jax_disable_jit
        assert fungrad.config.jax_disable_jit
    assert not fungrad.config.jax_disable_jit

    @fungrad.debug_nans(True)
    def inside():
        return fungrad.config.jax_debug_nans
    assert inside() and not fungrad.config.jax_debug_nans
    with pytest.raises(TypeError, match="needs the new value"):
        fungrad.numpy_rank_promotion()


def _run(code, **env):
    full_env = dict(os.environ, PYTHONPATH=os.getcwd(), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_environment_variables_as_in_jax():
    code = ("import fungrad, fungrad.numpy as fnp; "
            "print(fungrad.config.jax_enable_x64, fnp.zeros(2).dtype, "
            "fungrad.config.jax_numpy_rank_promotion)")
    out = _run(code, JAX_ENABLE_X64="0", JAX_NUMPY_RANK_PROMOTION="raise")
    assert out.stdout.split() == ["False", "float32", "raise"], out.stderr
    out = _run(code, JAX_ENABLE_X64="maybe")
    assert out.returncode != 0 and "JAX_ENABLE_X64" in out.stderr


# ----------------------------------------------------------------------------
# jax_enable_x64=False: JAX's 32-bit defaults
# ----------------------------------------------------------------------------

def test_x64_off_creation_functions_and_python_scalars():
    with fungrad.enable_x64(False):
        assert fnp.zeros(3).dtype == fnp.ones((2, 2)).dtype == np.float32
        assert fnp.full(3, 1.5).dtype == fnp.eye(2).dtype == np.float32
        assert fnp.linspace(0, 1, 5).dtype == np.float32
        assert fnp.arange(4).dtype == np.int32 and fnp.arange(4.0).dtype == np.float32
        assert fnp.asarray(2.0).dtype == np.float32 and fnp.asarray([1, 2]).dtype == np.int32
        assert fnp.asarray(np.ones(2)).dtype == np.float32        # NumPy input converted
        assert fnp.asarray(1j).dtype == np.complex64
        assert fnp.sin(2.0).dtype == np.float32 and fnp.add(1, 2).dtype == np.int32
        assert fnp.true_divide(np.int32(3), np.int32(2)).dtype == np.float32
        assert fnp.mean(np.arange(4, dtype=np.int32)).dtype == np.float32
        assert fnp.sum(np.arange(4, dtype=np.int32)).dtype == np.int32
        assert fnp.ones(2, dtype=int).dtype == np.int32          # Python types: the defaults
        assert fnp.zeros(2, dtype=np.float64).dtype == np.float64  # explicit dtypes respected
        assert fnp.sin(np.ones(2)).dtype == np.float64             # as is data you bring
        with pytest.raises(OverflowError, match="int32"):
            fnp.asarray(2**40) + 1
    assert fnp.zeros(3).dtype == np.float64 and fnp.asarray(2.0).dtype == np.float64


def test_x64_off_random_samplers():
    key = random.PRNGKey(0)
    with fungrad.enable_x64(False):
        for sample in (random.uniform(key, (3,)), random.normal(key, (3,)),
                       random.gamma(key, 2.0, (3,)), random.exponential(key, (3,)),
                       random.beta(key, 2.0, 3.0, (3,)), random.truncated_normal(key, -1, 1, (3,))):
            assert sample.dtype == np.float32
        assert random.randint(key, (3,), 0, 5).dtype == np.int32
        assert random.poisson(key, 3.0, (3,)).dtype == np.int32
        assert random.permutation(key, 5).dtype == np.int32
    assert random.uniform(key, (3,)).dtype == np.float64


def test_x64_off_transforms_and_jit_cache():
    f = fungrad.jit(lambda x: x * 2.0 + fnp.ones(()))
    assert f(1.0).dtype == np.float64
    with fungrad.enable_x64(False):
        assert f(1.0).dtype == np.float32          # the cache was cleared: traced again
        assert fungrad.grad(lambda x: fnp.sin(x) * x)(1.0).dtype == np.float32
        assert fungrad.vmap(lambda x: x + 1.0)(fnp.arange(3.0)).dtype == np.float32
        assert fungrad.jit(lambda x: x + 1.0)(2.0).dtype == np.float32
        n = fungrad.lax.fori_loop(0, 3, lambda i, v: v + i * 0.5, fnp.zeros(()))
        assert n.dtype == np.float32 and float(n) == 1.5
    assert f(1.0).dtype == np.float64


# ----------------------------------------------------------------------------
# jax_disable_jit, jax_log_compiles
# ----------------------------------------------------------------------------

def test_disable_jit_runs_python_op_by_op():
    calls = []

    @fungrad.jit
    def f(x):
        calls.append(type(x).__name__)
        return fnp.sin(x) * 2
    f(1.0)
    f(2.0)
    assert len(calls) == 1 and "Tracer" in calls[0]      # traced once, then compiled code
    with fungrad.disable_jit():
        f(3.0)
        f(4.0)
    fungrad.config.update("jax_disable_jit", True)
    f(5.0)
    fungrad.config.update("jax_disable_jit", False)
    assert calls[1:] == ["float", "float", "float"]   # concrete values, every call
    np.testing.assert_allclose(f(1.0), 2 * np.sin(1.0))


def test_log_compiles_logs_each_trace_with_the_reason(caplog):
    f = fungrad.jit(lambda x: x + 1)
    with fungrad.log_compiles(True), caplog.at_level(logging.WARNING, logger="fungrad.jit"):
        f(np.ones(2))
        f(np.ones(2))
        f(np.ones(3))
    messages = [r.getMessage() for r in caplog.records if r.name == "fungrad.jit"]
    traces = [m for m in messages if "tracing" in m]
    assert len(traces) == 2 and "first call" in traces[0]
    assert "changed from ((2,), dtype('float64')) to ((3,), dtype('float64'))" in traces[1]
    assert sum("compiled" in m for m in messages) == 2


# ----------------------------------------------------------------------------
# jax_debug_nans, jax_debug_infs
# ----------------------------------------------------------------------------

def test_debug_nans_eager_names_the_operation():
    with np.errstate(all="ignore"):
        assert np.isnan(fnp.log(-1.0))                       # off by default
        with fungrad.debug_nans(True):
            with pytest.raises(FloatingPointError, match=r"invalid value \(nan\).*\blog\b"):
                fnp.log(-1.0)
            with pytest.raises(FloatingPointError, match="nan"):
                fungrad.grad(lambda x: fnp.sqrt(x) * 0.0)(-1.0)
            fnp.log(2.0)                                     # finite results pass


def test_debug_nans_jitted_call_is_rerun_to_name_the_operation():
    f = fungrad.jit(lambda x: fnp.exp(x) * fnp.sqrt(x - 2.0))
    with np.errstate(all="ignore"), fungrad.debug_nans(True):
        np.testing.assert_allclose(f(3.0), np.exp(3.0))
        with pytest.raises(FloatingPointError, match=r"nan.*\bsqrt\b"):
            f(1.0)


def test_debug_infs():
    with np.errstate(all="ignore"), fungrad.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\).*div"):
            fnp.true_divide(np.ones(2), np.zeros(2))
        with pytest.raises(FloatingPointError, match="inf"):
            fungrad.jit(lambda x: fnp.exp(x))(1000.0)
        assert np.isnan(fnp.log(-1.0))                       # NaNs are debug_nans' business


# ----------------------------------------------------------------------------
# jax_numpy_rank_promotion, jax_numpy_dtype_promotion
# ----------------------------------------------------------------------------

def test_rank_promotion():
    a, b = np.ones((2, 3)), np.ones(3)
    assert fnp.add(a, b).shape == (2, 3)
    with fungrad.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=r"add on shapes \(2, 3\) \(3,\).*'raise'"):
            fnp.add(a, b)
        with pytest.raises(ValueError, match="multiply"):
            fungrad.jit(lambda x, y: x * y)(a, b)
        assert fnp.add(a, 1.0).shape == (2, 3)               # scalars broadcast freely
        assert fnp.add(a, a[:1]).shape == (2, 3)             # same rank
    with fungrad.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion for subtract"):
            fnp.subtract(a, b)


def test_strict_dtype_promotion():
    f32, f64 = np.ones(2, np.float32), np.ones(2)
    with fungrad.numpy_dtype_promotion("strict"):
        with pytest.raises(fungrad.dtypes.TypePromotionError, match="strict"):
            fnp.add(f32, f64)
        with pytest.raises(ValueError, match="int32"):
            fnp.multiply(np.ones(2, np.int32), 2.5)
        assert fnp.add(f32, 2.0).dtype == np.float32           # weak scalars are fine
        assert fnp.add(f32, f32).dtype == np.float32
    assert fnp.add(f32, f64).dtype == np.float64


def test_print_environment_info_shows_changed_options():
    with fungrad.debug_nans(True), warnings.catch_warnings():
        info = fungrad.print_environment_info(return_string=True)
    assert "fungrad:" in info and "numpy:" in info and "'jax_debug_nans': True" in info


def test_disable_jit_runs_control_flow_in_python(capsys):
    def body(c, x):
        print("c", float(c), "x", float(x))          # Python print sees values
        return c + x, c * x
    with fungrad.disable_jit():
        carry, ys = fungrad.jit(lambda xs: lax.scan(body, 0.0, xs))(np.arange(3.0))
        assert float(carry) == 3.0 and list(np.asarray(ys)) == [0.0, 0.0, 2.0]
        assert float(lax.while_loop(lambda v: v < 5, lambda v: v * 2, 1.0)) == 8.0
        assert float(lax.cond(True, lambda v: v + 1, lambda v: v - 1, 2.0)) == 3.0
        assert float(lax.fori_loop(0, 3, lambda i, v: v + i, 0.0)) == 3.0
        g = fungrad.grad(lambda x: lax.scan(lambda c, _: (c * x, None), 1.0, None, length=3)[0])
        assert float(g(2.0)) == 12.0
        # traced predicates (vmap) fall back to the primitives, as in JAX
        np.testing.assert_array_equal(
            fungrad.vmap(lambda x: lax.while_loop(lambda v: v < 5, lambda v: v * 2, x))(
                np.array([1.0, 3.0])), [8.0, 6.0])
        with pytest.raises(ValueError, match="zero-length scan"):
            lax.scan(body, 0.0, np.zeros(0))
    assert capsys.readouterr().out.splitlines() == ["c 0.0 x 0.0", "c 0.0 x 1.0", "c 1.0 x 2.0"]


def test_check_tracer_leaks_false_is_accepted_true_says_what_fungrad_does():
    """flax.linen's nn.tabulate runs under ``jax.check_tracer_leaks(False)``."""
    with fungrad.check_tracer_leaks(False):
        assert fungrad.config.jax_check_tracer_leaks is False
        assert float(fungrad.jit(lambda x: x + 1)(1.0)) == 2.0
    with pytest.raises(NotImplementedError, match="UnexpectedTracerError"):
        fungrad.config.update("jax_check_tracer_leaks", True)
    with pytest.raises(NotImplementedError, match="leaked tracers"):
        fungrad.check_tracer_leaks()          # (the context manager's default is True)
    assert fungrad.config.jax_check_tracer_leaks is False
