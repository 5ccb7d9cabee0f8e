"""The generated API table and the jax namespace count are current, fungrad.numpy covers >= 250 functions, and
the README tour runs."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool(name="gen_api_table"):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "tools", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_table_is_current():
    tool = _tool()
    with open(tool.OUT) as fh:
        assert fh.read() == tool.render(), "run: python tools/gen_api_table.py"


def test_jax_namespace_count_is_current():
    """docs/jax_coverage.md counts JAX's top-level names (recorded from JAX)
    against what fungrad has today."""
    tool = _tool("gen_jax_namespace")
    with open(tool.DOC) as fh:
        assert fh.read() == tool.updated_doc(), "run: python tools/gen_jax_namespace.py"


def test_numpy_api_coverage():
    import fungrad.numpy as fnp
    assert len(_tool().public_functions(fnp)) >= 250


def test_readme_tour_runs(tmp_path):
    """The README's 'A short tour' code block runs as written."""
    import re
    import subprocess
    import sys
    with open(os.path.join(ROOT, "README.md")) as fh:
        block = re.search(r"## A short tour\n\n```python\n(.*?)```", fh.read(), re.S).group(1)
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f_grad.py").exists()      # the tour's export call
