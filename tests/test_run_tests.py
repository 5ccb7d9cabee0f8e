"""./run-tests, the README's one test command: it refuses to install into a
Python that is not a virtual environment (issue 27's bad input)."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_refuses_outside_a_virtual_environment():
    base_python = os.path.join(sys.base_prefix, "bin", "python3")
    out = subprocess.run([str(ROOT / "run-tests"), "--version"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHON=base_python), timeout=60)
    assert out.returncode == 2
    assert "not inside a virtual environment" in out.stderr and "python3 -m venv" in out.stderr


def test_ci_runs_the_readme_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\n./run-tests\n" in ci and "./run-tests" in readme
