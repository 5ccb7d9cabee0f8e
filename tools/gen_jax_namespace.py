"""Count JAX's top-level ``jax`` namespace name by name against fungrad.

Two steps, because JAX and fungrad live in different environments:

    /path/to/jax-venv/bin/python tools/gen_jax_namespace.py record
        # writes tests/data/jax_namespace.json: every public name of `jax`
        # (dir(jax) without leading underscores) and its kind
    python tools/gen_jax_namespace.py          # rewrite the generated block of
                                               # docs/jax_coverage.md
    python tools/gen_jax_namespace.py --check  # exit 1 if that block is stale

A name counts as present when ``fungrad`` has it (``hasattr``, importing the
submodule for module names); the prose around the block says how each
behaves.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "jax_namespace.json")
DOC = os.path.join(ROOT, "docs", "jax_coverage.md")
BEGIN = "<!-- BEGIN jax namespace (tools/gen_jax_namespace.py) -->"
END = "<!-- END jax namespace -->"
KIND_TITLES = [("function", "Functions and transformations"),
               ("class", "Classes"),
               ("config", "Configuration options and their context managers"),
               ("module", "Submodules"),
               ("namespace", "Namespaces of names"),
               ("dtype", "Dtypes")]


def _kind(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if getattr(obj, "__module__", "") == "jax._src.config" or type(obj).__name__ == "State":
        return "config"
    if isinstance(obj, types.SimpleNamespace):
        return "namespace"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    return "dtype"


def record() -> None:
    import jax
    names = {n: _kind(getattr(jax, n)) for n in sorted(dir(jax)) if not n.startswith("_")}
    with open(DATA, "w") as fh:
        json.dump({"made_by": "tools/gen_jax_namespace.py record", "jax": jax.__version__,
                   "names": names}, fh, indent=1)
        fh.write("\n")


def fungrad_has(name: str, kind: str) -> bool:
    sys.path.insert(0, ROOT)
    import fungrad
    if hasattr(fungrad, name):
        return True
    if kind == "module":
        from fungrad.jax_compat._hook import fungrad_name   # where `import jax.<name>` goes
        try:
            importlib.import_module(fungrad_name(f"jax.{name}"))
            return True
        except ImportError:
            return False
    return False


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def render() -> str:
    with open(DATA) as fh:
        recorded = json.load(fh)
    names = recorded["names"]
    present = {n for n, k in names.items() if fungrad_has(n, k)}
    lines = [BEGIN, "",
             f"{len(present)} of the {len(names)} public names of JAX {recorded['jax']}'s "
             "`jax` namespace (`dir(jax)`, recorded in `tests/data/jax_namespace.json`):", "",
             "| kind | JAX | fungrad | missing |", "|---|---:|---:|---|"]
    for kind, title in KIND_TITLES:
        of_kind = sorted(n for n, k in names.items() if k == kind)
        if of_kind:
            missing = [n for n in of_kind if n not in present]
            lines.append(f"| {title} | {len(of_kind)} | {len(of_kind) - len(missing)} | "
                         f"{_names(missing)} |")
    lines += ["", END]
    return "\n".join(lines)


def present_count() -> tuple[int, int]:
    with open(DATA) as fh:
        names = json.load(fh)["names"]
    return sum(fungrad_has(n, k) for n, k in names.items()), len(names)


def updated_doc() -> str:
    with open(DOC) as fh:
        doc = fh.read()
    start, stop = doc.index(BEGIN), doc.index(END) + len(END)
    doc = doc[:start] + render() + doc[stop:]
    have, total = present_count()
    heading = doc[doc.index("## `jax` (top level)"):].split("\n", 1)[0]
    doc = doc.replace(heading, f"## `jax` (top level): {have} of {total} names", 1)
    # the Summary table's row
    return re.sub(r"^(\| `jax` \(top-level namespace[^|]*\| )\d+ \| \d+ \|",
                  lambda m: f"{m.group(1)}{total} | {have} |", doc, count=1, flags=re.M)


def main(argv) -> int:
    if argv[1:] == ["record"]:
        record()
        return 0
    new = updated_doc()
    if argv[1:] == ["--check"]:
        with open(DOC) as fh:
            if fh.read() != new:
                print("docs/jax_coverage.md's jax namespace block is stale: run "
                      "python tools/gen_jax_namespace.py")
                return 1
        return 0
    with open(DOC, "w") as fh:
        fh.write(new)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
