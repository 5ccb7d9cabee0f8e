"""``fungrad.export``: write a jitted program as a standalone module that needs
only NumPy.

    fungrad.export(fungrad.grad(loss), params, x, path="loss_grad.py")
    # later, anywhere with NumPy:
    from loss_grad import loss_grad
    g = loss_grad(params, x)

The module contains the optimised generated code of ``jit(f)`` for the
signature of the example arguments, the constants it closes over (embedded as
hex bytes), and a wrapper that takes the same arguments as ``f`` (pytrees of
tuples, lists and dicts are flattened in fungrad's order) and returns the same
output structure.  Arguments must have the example's shapes and dtypes.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import os
import sys

import numpy as np

from fungrad._dtype_classes import is_small
from fungrad.jitting import jit as _jit
from fungrad.interpreters import codegen
from fungrad.interpreters.lowering import module_alias as _alias
from fungrad.interpreters.passes import optimize
from fungrad.tree_util import _sorted_keys, tree_flatten, tree_unflatten

__all__ = ["export"]


def _const_source(name: str, value) -> str:
    arr = np.ascontiguousarray(np.asarray(value))
    if arr.dtype == object:     # e.g. the call of a shard_map: not NumPy data
        raise TypeError(f"export: the generated code calls {type(value).__name__}, which is "
                        "not NumPy data; this function cannot be exported as NumPy-only code")
    # dtype.kind: ml_dtypes' types (kind 'V', float8_e5m2 'f') are not NumPy's own
    if arr.dtype.kind not in "biufcmMSU" or arr.dtype.fields is not None or is_small(arr.dtype):
        raise TypeError(f"export: a constant of dtype {arr.dtype} (structured, void or one of "
                        "ml_dtypes' types) cannot be written to a NumPy-only module; use "
                        "NumPy's numeric dtypes")
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False)   # the module's bytes are native
    return (f"{name} = np.frombuffer(bytes.fromhex({arr.tobytes().hex()!r}), "
            f"dtype={arr.dtype.str!r}).reshape({arr.shape!r})")


# dict keys the module can write as literals that read back as the same key
_LITERAL_KEY_TYPES = (str, bytes, int, bool, float, type(None))


def _key_source(key, where: str) -> str:
    """``repr(key)`` if it is a literal that ``ast.literal_eval`` reads back as an
    equal key of the same type (exact types only: a ``str`` subclass's
    ``__repr__`` is user code), else TypeError naming the key."""
    def faithful(k):
        if type(k) is tuple:
            return all(faithful(x) for x in k)
        return type(k) in _LITERAL_KEY_TYPES and not (type(k) is float and not np.isfinite(k))
    if faithful(key):
        text = repr(key)
        back = ast.literal_eval(text)
        if back == key and type(back) is type(key):
            return text
    raise TypeError(f"export: the {where} has the dict key {type(key).__name__} {key!r:.60}, "
                    "which a NumPy-only module cannot write back faithfully; use str, int, "
                    "bool, bytes, finite float or None keys (or tuples of them)")


def _structure_source(tree, names) -> str:
    """Python source building ``tree``'s containers around the given leaf names."""
    leaves = iter(names)

    def build(node):
        if isinstance(node, _Leaf):
            return next(leaves)
        if node is None:
            return "None"
        if type(node) is tuple:
            inner = ", ".join(build(x) for x in node)
            return f"({inner}{',' if len(node) == 1 else ''})"
        if type(node) is list:
            return "[" + ", ".join(build(x) for x in node) + "]"
        if type(node) is dict:
            return "{" + ", ".join(f"{_key_source(k, 'output')}: {build(v)}"
                                   for k, v in node.items()) + "}"
        raise TypeError(f"export: output container {type(node).__name__} cannot be written "
                        "to a NumPy-only module; return tuples, lists or dicts")
    return build(tree_unflatten(tree, [_Leaf()] * tree.num_leaves))


class _Leaf:
    pass


def _flatten_source(in_tree) -> str:
    """Source flattening the wrapper's arguments into the leaves, in order."""
    paths = []

    def walk(node, expr):
        if isinstance(node, _Leaf):
            paths.append(expr)
        elif type(node) in (tuple, list):
            for i, child in enumerate(node):
                walk(child, f"{expr}[{i}]")
        elif type(node) is dict:
            for k in _sorted_keys(node):       # fungrad's flattening order
                walk(node[k], f"{expr}[{_key_source(k, 'argument')}]")
        elif node is not None:
            raise TypeError(f"export: argument container {type(node).__name__} is not "
                            "supported; use tuples, lists or dicts")
    args, _ = tree_unflatten(in_tree, [_Leaf()] * in_tree.num_leaves)
    for i, a in enumerate(args):
        walk(a, f"args[{i}]")
    return ", ".join(paths)


def _module_name(fun, name, reserved) -> str:
    """The wrapper's name: ``name`` (checked), else ``fun.__name__`` made an
    identifier (``fn`` if that is impossible)."""
    if name is not None:
        if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name) \
                or name in reserved or name in dir(builtins):
            raise ValueError(f"export: name={name!r} must be a Python identifier that is not a "
                             "keyword, a builtin or a name the module uses (np, _compiled, "
                             "_k0, ..., the kernel aliases)")
        return name
    raw = getattr(fun, "__name__", "fn")
    raw = raw if type(raw) is str else "fn"
    derived = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in raw)
    if not derived.isidentifier() or keyword.iskeyword(derived) or derived in reserved \
            or derived in dir(builtins):
        return "fn"
    return derived


def _docstring(fun, leaves) -> str:
    """The module docstring; user text in it (the qualname) keeps only printable
    characters other than quotes and backslashes, so it cannot end the string."""
    qualname = getattr(fun, "__qualname__", None)
    qualname = qualname if type(qualname) is str else type(fun).__name__
    safe = lambda text: "".join(c if c.isprintable() and c not in "\"'\\" else "_"
                                for c in text)
    shapes = ", ".join(f"{np.shape(x)}:{np.asarray(x).dtype}" for x in leaves)
    return f'"""Generated by fungrad.export from {safe(qualname)}.\n\n' \
           f'Argument shapes/dtypes: {safe(shapes)}"""'


def export(fun, *example_args, path: str | None = None, name: str | None = None,
           overwrite: bool = False) -> str:
    """Write (to ``path``, if given) and return the source of a NumPy-only module
    computing ``fun`` for arguments shaped like ``example_args``.

    ``fun`` is traced abstractly (never run on the example values).  ``name`` is
    the wrapper's name (default: ``fun.__name__`` made an identifier).  An
    existing ``path`` is replaced only with ``overwrite=True``, and never
    through a symbolic link."""
    jitted = _jit(fun)
    leaves, in_tree = tree_flatten((example_args, {}))
    entry, _ = jitted._entry(example_args, {})
    opt = optimize(entry.closed)
    body, block_consts, modules = codegen.lower_jaxpr_and_consts(opt.jaxpr, "_compiled")
    if any(callable(c) for c in block_consts.values()):
        raise TypeError("export: the function calls a Python callback (debug.print, "
                        "debug.callback, breakpoint, pure_callback or checkify.check) or a "
                        "shard_map, which a NumPy-only module cannot contain, so it cannot be "
                        "exported as NumPy-only code; remove it before exporting")
    helpers, embedded = _embed_kernel_modules(modules)
    helpers += [_const_source(n, c) for n, c in block_consts.items()]
    const_names = [f"_k{i}" for i in range(len(opt.consts))]
    reserved = {"np", "_compiled", "args", "_r", *embedded, *block_consts, *const_names}
    name = _module_name(fun, name, reserved)
    _check_free_names(body, len(opt.consts), set(embedded) | set(block_consts))
    outs = [f"_r[{i}]" for i in range(entry.out_tree.num_leaves)]
    lines = [
        _docstring(fun, leaves),
        "import numpy as np", "",
        *helpers,
        *[_const_source(n, c) for n, c in zip(const_names, opt.consts)], "",
        body,
        f"def {name}(*args):",
        f"    _r = _compiled({', '.join(const_names + [_flatten_source(in_tree)])})",
        f"    return {_structure_source(entry.out_tree, outs)}", "",
    ]
    source = "\n".join(lines)
    if path is not None:
        _write_new_file(os.fspath(path), source, overwrite)
    return source


def _write_new_file(path: str, source: str, overwrite: bool):
    """Create ``path`` with the user's umask (mode 0o666 & ~umask); an existing
    file only with ``overwrite``; never through a symlink (O_NOFOLLOW)."""
    if os.path.islink(path):
        raise FileExistsError(f"export: {path!r} is a symbolic link; export does not write "
                              "through links; pass the link's target or another path")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_TRUNC if overwrite else os.O_EXCL
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        raise FileExistsError(f"export: {path!r} exists; pass overwrite=True to replace it"
                              ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(source)


# kernels: NumPy-only modules the generated code may call (fungrad/lax/kernels/)
_KERNELS = "fungrad.lax.kernels"


def _kernel_imports(module):
    """``(source without its imports of sibling kernels, [(name, kernel module
    name, attribute or None)])`` for a kernel module: what ``name`` must be bound
    to in the embedded copy.  TypeError if it imports anything but NumPy, the
    standard library and sibling kernels, or imports a kernel below top level."""
    source = inspect.getsource(module)
    tree = ast.parse(source)
    top_level = set(map(id, tree.body))
    lines = source.splitlines(keepends=True)
    bindings, drop = [], set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        found = _sibling_bindings(module.__name__, node)
        if not found:
            continue
        if id(node) not in top_level:
            raise TypeError(f"export: {module.__name__} imports a kernel inside a function; "
                            "kernels import their siblings at top level")
        bindings += found
        drop.update(range(node.lineno - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop), bindings


def _sibling_bindings(module_name, node):
    """The kernel bindings an import statement makes ([] for NumPy or the
    standard library); TypeError for anything else."""
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level == 0 and base.split(".")[0] in ("numpy",) + tuple(sys.stdlib_module_names):
            return []
        if base == _KERNELS:
            return [(a.asname or a.name, f"{_KERNELS}.{a.name}", None) for a in node.names]
        if base.startswith(_KERNELS + "."):
            return [(a.asname or a.name, base, a.name) for a in node.names]
    else:
        names = [a for a in node.names
                 if a.name.split(".")[0] not in ("numpy",) + tuple(sys.stdlib_module_names)]
        if not names:
            return []
        if all(a.name.startswith(_KERNELS + ".") and a.asname for a in names):
            return [(a.asname, a.name, None) for a in names]
    raise TypeError(f"export: {module_name} imports {ast.unparse(node)!r}, which is neither "
                    "NumPy, the standard library nor a kernel module; this function cannot "
                    "be exported as NumPy-only code")


def _embed_kernel_modules(modules: dict):
    """Source lines that create each kernel module the generated code calls (by
    its alias, ``_special``) from a copy of its source, after the kernel modules
    it imports; and the aliases defined."""
    import importlib
    lines, done = [], []

    def embed(module_name, chain=()):
        if module_name in done:
            return
        if not module_name.startswith(_KERNELS + ".") or module_name in chain:
            raise TypeError(f"export: the generated code needs {module_name}, which is not a "
                            "NumPy-only kernel module (fungrad.lax.kernels); this function "
                            "cannot be exported as NumPy-only code")
        source, bindings = _kernel_imports(importlib.import_module(module_name))
        for _, dep, _ in bindings:
            embed(dep, chain + (module_name,))
        alias = _alias(module_name)
        lines.append(f"{alias} = type(np)({module_name!r})")
        lines.extend(f"{alias}.{name} = {_alias(dep)}{'.' + attr if attr else ''}"
                     for name, dep, attr in bindings)
        lines.extend([f"exec({source!r}, {alias}.__dict__)", ""])
        done.append(module_name)
    for module in modules.values():
        embed(module.__name__)
    return lines, [_alias(m) for m in done]


def _check_free_names(source: str, n_consts: int, embedded=frozenset()):
    code = compile(source, "<export>", "exec")
    # (a long program is several functions: the parts and the one calling them)
    fn_codes = [c for c in code.co_consts if hasattr(c, "co_names")]
    allowed = {"np"} | set(embedded) | {f"_k{i}" for i in range(n_consts)} | set(dir(builtins))
    allowed |= {c.co_name for c in fn_codes}
    missing = sorted(set().union(*(set(c.co_names) - _attribute_names(c) for c in fn_codes))
                     - allowed)
    if missing:
        raise TypeError(f"export: the generated code needs {missing}, which are not NumPy; "
                        "some primitive in this function has no NumPy lowering")


def _attribute_names(code) -> set:
    # co_names also lists attribute names (np.sin -> 'sin'); those are fine
    import dis
    attrs = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            attrs.add(ins.argval)
    return attrs
