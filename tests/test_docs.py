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


# tools/run_jax_docs.py: how JAX's own tutorials are judged (docs/jax_coverage.md)

_NOTEBOOK = '''
# A page

```{code-cell} ipython3
:tags: [raises-exception]

x = 1
```

Some text.

```{code-cell}
---
id: abc
---
%timeit -n 3 y = x + 1
!pip install something
%%capture
```
'''


def test_jax_docs_runner_reads_myst_cells_and_ipython_lines():
    tool = _tool("run_jax_docs")
    cells = tool.code_cells(_NOTEBOOK)
    assert [c.strip() for c in cells] == [
        "x = 1", "%timeit -n 3 y = x + 1\n!pip install something\n%%capture"]
    assert tool.strip_ipython(cells[1].strip()) == "y = x + 1\npass\npass"
    assert tool.strip_ipython("%%timeit\nz = 2") == "z = 2"
    assert tool.strip_ipython("%%bash\necho hi") == ""


def test_jax_docs_runner_judges_cells_as_jax_does():
    tool = _tool("run_jax_docs")
    ok, err = {"status": "ok", "source": "a"}, {"status": "error", "type": "E", "source": "b"}
    jax_run = {"page": [ok, err, ok], "gone": {"missing": True}}
    mine = {"page": [ok, dict(err, type="TypeError"), err]}
    judged, passed, failures = tool.compare(jax_run, mine)
    assert (judged, passed) == (3, 2) and [f[1] for f in failures] == [2]
