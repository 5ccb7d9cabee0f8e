"""The public `jax` import hook (fungrad.jax_compat): `import jax` answered by
fungrad in-process, through `python -m fungrad run`, and from the environment
(PYTHONPATH=$(python -m fungrad jax-path)); missing names say what happened."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import jax_compat

PROGRAM = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp
    from jax import lax
    import jax.numpy.linalg as la
    assert jax.__version__ == {version!r}, jax.__version__
    g = jax.jit(jax.grad(lambda x: jnp.sum(jnp.sin(x) * la.norm(x))))(jnp.arange(3.0))
    print(" ".join(repr(float(v)) for v in g), sys.argv[1:])
""").format(version=jax_compat.JAX_VERSION)


def expected_gradient():
    x = np.arange(3.0)
    n = np.linalg.norm(x)
    return np.cos(x) * n + np.sum(np.sin(x)) * x / n


def _run(args, env=None, tmp_path=None):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    full_env = dict(os.environ, **(env or {}))
    out = subprocess.run([sys.executable] + [a.replace("SCRIPT", str(script)) for a in args],
                         capture_output=True, text=True, env=full_env, timeout=120)
    assert out.returncode == 0, out.stderr
    values, argv = out.stdout.strip().split(" [")
    np.testing.assert_allclose([float(v) for v in values.split()], expected_gradient(),
                               rtol=1e-13)
    return argv


def test_in_process_names_are_fungrads_objects():
    with jax_compat.installed() as jax:
        import jax.numpy as jnp
        from jax import lax
        import jax.interpreters.batching as batching
        assert jax.grad is fungrad.grad and jnp.sin is fnp.sin and lax.scan is fungrad.lax.scan
        assert jax.Array is fungrad.Array
        assert batching.primitive_batchers is fungrad.interpreters.batching.primitive_batchers
        assert jax.__version_info__ == tuple(int(p) for p in jax_compat.JAX_VERSION.split("."))
        assert jnp.newaxis is None              # a name whose value is None is still a name
    # nothing is left behind, and fungrad's own modules gained no attributes
    assert not [m for m in sys.modules if m == "jax" or m.startswith(("jax.", "jaxlib"))]
    assert not hasattr(fungrad, "_src") and fungrad.__spec__.name == "fungrad"


def test_missing_names_say_fungrad_stands_in_for_jax():
    with jax_compat.installed() as jax:
        with pytest.raises(ImportError, match=r"jax\.not_a_module.*standing in for JAX.*"
                                              r"test_jax_compat\.py:\d+.*jax_coverage\.md"):
            import jax.not_a_module  # noqa: F401
        with pytest.raises(AttributeError, match=r"jax\.lax\.not_a_function.*jax_coverage"):
            jax.lax.not_a_function
        with pytest.raises(ImportError, match="jaxlib"):
            import jaxlib  # noqa: F401
        # a missing name of a module that is not a package (jax.core is fungrad.core):
        # an AttributeError too, so hasattr() answers False (equinox probes so)
        with pytest.raises(AttributeError, match=r"jax\.core\.not_a_name.*jax_coverage"):
            jax.core.not_a_name
        assert not hasattr(jax.core, "not_a_name")


def test_refuses_to_install_over_a_real_jax(monkeypatch):
    import types
    monkeypatch.setitem(sys.modules, "jax", types.ModuleType("jax"))
    with pytest.raises(RuntimeError, match="real `jax` is already imported"):
        jax_compat.install()
    assert not jax_compat.is_installed()


def test_python_m_fungrad_run(tmp_path):
    argv = _run(["-m", "fungrad", "run", "SCRIPT", "a", "--b"], tmp_path=tmp_path)
    assert argv == "'a', '--b']"


def test_environment_switch(tmp_path):
    shim = jax_compat.shim_path()
    path = os.pathsep.join([shim] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    assert _run(["SCRIPT", "x"], env={"PYTHONPATH": path}, tmp_path=tmp_path) == "'x']"


def test_run_reports_bad_usage(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fungrad", "run", str(tmp_path / "nope.py")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "no such script" in out.stderr


def test_missing_attribute_of_a_plain_module_names_it():
    # regression: a missing name on a module that is not a package (here
    # jax.nn.initializers) crashed inside importlib's find_spec instead
    with jax_compat.installed() as jax:
        import jax.nn.initializers
        with pytest.raises(AttributeError, match=r"jax\.nn\.initializers\.no_such_init"):
            jax.nn.initializers.no_such_init


def test_jax_test_util_create_mesh():
    import unittest
    from fungrad._jax_private import test_util as jtu
    mesh = jtu.create_mesh((1,), ("x",))
    assert mesh.axis_names == ("x",) and mesh.devices.shape == (1,)
    with pytest.raises(unittest.SkipTest, match="requires 2 global devices and found 1"):
        jtu.create_mesh((2,), ("x",))
    with pytest.raises(NotImplementedError, match="without axis_types"):
        jtu.create_mesh((1,), ("x",), axis_types=("explicit",))
