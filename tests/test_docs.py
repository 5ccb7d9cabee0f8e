"""The generated API table is current, and fungrad.numpy covers >= 250 functions."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool():
    spec = importlib.util.spec_from_file_location(
        "gen_api_table", os.path.join(ROOT, "tools", "gen_api_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_table_is_current():
    tool = _tool()
    with open(tool.OUT) as fh:
        assert fh.read() == tool.render(), "run: python tools/gen_api_table.py"


def test_numpy_api_coverage():
    import fungrad.numpy as fnp
    assert len(_tool().public_functions(fnp)) >= 250
