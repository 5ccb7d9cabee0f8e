"""Every notebook in notebooks/ runs top to bottom without errors (nbclient).

The notebooks are committed with their outputs; here they are re-executed in
memory (nothing is written), each within two minutes, with a kernel that runs
this test's own Python (a throwaway kernelspec), so the notebook sees the
fungrad under test.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory, monkeypatch_module):
    """A kernelspec that starts this interpreter, found first on JUPYTER_PATH."""
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / "fungrad-tests"
    spec_dir.mkdir(parents=True)
    repo = str(pathlib.Path(__file__).parent.parent)
    env = {"PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
           "MPLBACKEND": "Agg"}
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fungrad tests", "language": "python", "env": env}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch_module.setenv("JUPYTER_PATH", str(root) + os.pathsep + os.environ.get("JUPYTER_PATH", ""))
    monkeypatch_module.setenv("MPLBACKEND", "Agg")
    return "fungrad-tests"


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name=kernel_name,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for cell in nb.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
