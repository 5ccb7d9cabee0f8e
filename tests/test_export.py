"""``fungrad.export`` is safe to run and its output is safe to import: user text
never becomes code, names and dict keys are checked, files are created (never
overwritten or followed through links) with the user's umask, and the function
is traced abstractly.  Every module is run without fungrad (tests/export_check.py)."""
from __future__ import annotations

import ast
import dataclasses
import enum
import os
import stat

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from tests.export_check import check_exported

_PAYLOADS = ['"""\nimport os; os._exit(3)\n"""', "'''; raise SystemExit(4) #", "\\", "a\nb",
             "x\x00y", '"', "\u2028import os"]


@pytest.mark.parametrize("payload", _PAYLOADS)
def test_a_hostile_qualname_stays_text(tmp_path, payload):
    def f(x):
        return fnp.sin(x) * 2.0
    f.__qualname__ = payload
    f.__name__ = payload
    source = check_exported(f, np.arange(3.0), tmp_path=tmp_path)
    tree = ast.parse(source)
    assert payload not in ast.get_docstring(tree, clean=False)
    assert [type(n).__name__ for n in tree.body] == ["Expr", "Import", "FunctionDef",
                                                     "FunctionDef"]
    derived = fungrad.export(f, np.arange(3.0))       # the wrapper's name from __name__
    assert ast.parse(derived).body[-1].name.isidentifier()


class _Sneaky(str):
    def __repr__(self):
        return "__import__('os')._exit(5)"


@pytest.mark.parametrize("name", ["class", "np", "_compiled", "_k0", "args", "print", "1a",
                                  "a b", "", _Sneaky("ok"), 3])
def test_name_must_be_a_free_identifier(name):
    with pytest.raises(ValueError, match="name="):
        fungrad.export(lambda x: x * np.ones(2), np.ones(2), name=name)


def test_a_crafted_dunder_name_is_not_used():
    f = lambda x: x + 1.0
    f.__name__ = _Sneaky("g")
    source = fungrad.export(f, 1.0)
    assert "_exit" not in source


class Color(enum.Enum):
    RED = 1


@dataclasses.dataclass(frozen=True)
class Point:
    x: int


@pytest.mark.parametrize("key", [Color.RED, Point(1), float("nan"), float("inf"),
                                 _Sneaky("w"), (1, Color.RED), frozenset({1})])
def test_dict_keys_that_cannot_be_written_back_are_refused(key):
    with pytest.raises(TypeError, match="dict key"):
        fungrad.export(lambda d: {key: d[key] * 2.0}, {key: np.ones(2)})


def test_literal_dict_keys_round_trip(tmp_path):
    keys = ["w", 'q"uote', "new\nline", 3, -1, True, 2.5, b"raw", None, (1, "a")]
    params = {k: np.full(2, float(i)) for i, k in enumerate(keys)}

    def f(p):
        return {k: fnp.sum(v) * 2.0 for k, v in p.items()}
    check_exported(f, params, tmp_path=tmp_path, name="f")


def test_existing_files_and_links_are_left_alone(tmp_path):
    target = tmp_path / "m.py"
    target.write_text("keep = 1\n")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        fungrad.export(lambda x: x * 2.0, 1.0, path=target)
    assert target.read_text() == "keep = 1\n"
    fungrad.export(lambda x: x * 2.0, 1.0, path=target, overwrite=True)
    assert "def " in target.read_text()
    link = tmp_path / "link.py"
    victim = tmp_path / "victim.txt"
    victim.write_text("secret")
    link.symlink_to(victim)
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="symbolic link"):
            fungrad.export(lambda x: x * 2.0, 1.0, path=link, overwrite=overwrite)
    assert victim.read_text() == "secret"


def test_files_are_created_with_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        fungrad.export(lambda x: x * 2.0, 1.0, path=tmp_path / "u.py")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "u.py").st_mode) == 0o640


def test_export_traces_abstractly(tmp_path):
    calls = []

    def f(x):
        calls.append(type(x))
        return fnp.sum(x.at[1].set(5.0) ** 2)      # a NumPy input has no .at
    check_exported(fungrad.value_and_grad(f), np.arange(3.0), tmp_path=tmp_path, name="vg",
                   calls=[(np.arange(3.0),), (np.ones(3),)])
    assert len(calls) == 1 and not issubclass(calls[0], np.ndarray)


def test_non_native_constants_and_structured_constants(tmp_path):
    c = np.arange(3.0).astype(">f8")
    check_exported(lambda x: x * c, np.ones(3), tmp_path=tmp_path, name="scale")
    from fungrad.export import _const_source
    with pytest.raises(TypeError, match="structured"):
        _const_source("_k0", np.zeros(2, dtype=[("a", "f8")]))
    with pytest.raises(TypeError, match="not NumPy data"):
        _const_source("_k0", np.array([object()], dtype=object))
