"""The layering of docs/architecture.md, enforced: every import inside fungrad/
(lazy imports in functions included) points to its own layer or a lower one.

The table in docs/architecture.md is the one place the layers are written
down; this test reads it, so the documentation and the check cannot drift.
"""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fungrad"


def _layers() -> list[tuple[str, list[str]]]:
    """(layer name, module prefixes) in order, from docs/architecture.md's table."""
    rows = []
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        m = re.match(r"\|\s*(\d+) (\w+)\s*\|(.*?)\|", line)
        if m:
            rows.append((int(m.group(1)), m.group(2), re.findall(r"`([\w.]+)`", m.group(3))))
    assert [r[0] for r in rows] == list(range(len(rows))), "layers must be numbered 0, 1, ..."
    return [(name, modules) for _, name, modules in rows]


LAYERS = _layers()


def _layer_of(module: str):
    """Index of the layer whose most specific row names ``module`` (or a parent package)."""
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.is_dir() or p.with_suffix(".py").exists()


def _imports(source: str, module: str, is_package: bool):
    """(imported fungrad module, line) for every import statement of ``source``,
    the text of ``module``, at any depth (functions included)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                # `from fungrad import lax` imports a module; `from fungrad import grad`
                # takes a name from the package itself (the face)
                full = f"{base}.{alias.name}"
                yield (full if _is_module(full) else base), node.lineno


def _all_modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    missing = [_module_name(p) for p in _all_modules() if _layer_of(_module_name(p)) is None]
    assert not missing, (f"modules that docs/architecture.md's layer table does not place: "
                         f"{missing}")


def test_imports_point_down():
    upward = []
    for path in _all_modules():
        src = _layer_of(_module_name(path))
        for target, line in _imports(path.read_text(), _module_name(path),
                                     path.name == "__init__.py"):
            if not (target == "fungrad" or target.startswith("fungrad.")):
                continue
            dst = _layer_of(target)
            if src is not None and dst is not None and dst > src:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({LAYERS[src][0]}) imports "
                              f"{target} ({LAYERS[dst][0]})")
    assert not upward, "imports that point to a higher layer:\n" + "\n".join(upward)


def test_the_check_sees_lazy_relative_and_face_imports():
    source = ("import numpy\n"
              "def f():\n"
              "    from fungrad import grad\n"          # a name of the face
              "    from fungrad import lax\n"           # a module
              "    from ..numpy import _methods\n"      # relative, two levels up
              "    import fungrad.api\n")
    found = list(_imports(source, "fungrad.lax.elementwise", is_package=False))
    assert found == [("numpy", 1), ("fungrad", 3), ("fungrad.lax", 4),
                     ("fungrad.numpy._methods", 5), ("fungrad.api", 6)]
    assert [_layer_of(m) for m, _ in found[1:]] == [7, 2, 3, 4]
