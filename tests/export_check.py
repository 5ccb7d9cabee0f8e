"""Run an exported module the way its users do: imported in a fresh Python in
which ``fungrad`` cannot be imported, called on the given arguments, and its
results compared with ``jit(fun)``'s.

    from tests.export_check import check_exported
    source = check_exported(fungrad.grad(f), x, tmp_path=tmp_path, name="g")
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import fungrad
from fungrad.tree_util import tree_flatten, tree_map, tree_structure

_RUNNER = r"""
import pickle, sys
sys.modules['fungrad'] = None            # the module must not need fungrad
sys.path.insert(0, sys.argv[1])
import numpy as np
module = __import__(sys.argv[2])
with open(sys.argv[3], 'rb') as fh:
    calls = pickle.load(fh)
outs = [getattr(module, sys.argv[4])(*args) for args in calls]
with open(sys.argv[5], 'wb') as fh:
    pickle.dump(outs, fh)
"""


def _plain(tree):
    """Arguments as plain NumPy (fungrad's Array class cannot be unpickled there)."""
    return tree_map(lambda x: np.array(x) if isinstance(x, np.ndarray) else x, tree)


def run_exported(path, name: str, calls):
    """The results of ``module.name(*args)`` for each ``args`` in ``calls``,
    computed in a subprocess where ``import fungrad`` fails."""
    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        ins, outs = Path(tmp) / "in.pkl", Path(tmp) / "out.pkl"
        ins.write_bytes(pickle.dumps([_plain(tuple(a)) for a in calls]))
        run = subprocess.run([sys.executable, "-c", _RUNNER, str(path.parent), path.stem,
                              str(ins), name, str(outs)], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return pickle.loads(outs.read_bytes())


def check_exported(fun, *example_args, tmp_path, name="run", calls=None,
                   rtol=1e-12, atol=1e-14, module=None):
    """Export ``fun`` into ``tmp_path``, run the module without fungrad on
    ``calls`` (default: the example arguments), compare with ``jit(fun)``
    (structure, dtypes and values) and return the module's source."""
    module = module or f"exported_{name}_{abs(hash((name, id(fun)))) % 10**8}"
    path = Path(tmp_path) / f"{module}.py"
    source = fungrad.export(fun, *example_args, path=path, name=name)
    code = _code_of(source)
    assert "import fungrad" not in code and "from fungrad" not in code
    calls = calls or [example_args]
    for args, got in zip(calls, run_exported(path, name, calls)):
        want = fungrad.jit(fun)(*args)
        assert tree_structure(got) == tree_structure(want), (got, want)
        for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0]):
            assert np.asarray(g).dtype == np.asarray(w).dtype, (g, w)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return source


def _code_of(source: str) -> str:
    """The module without its docstring (which names the exported function)."""
    import ast
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[0], ast.Expr):
        tree.body = tree.body[1:]
    return ast.unparse(tree)
