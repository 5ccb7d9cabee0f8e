"""Loops over the elements of ``x[index]`` in code numba compiles: the
compiled backend's form of the scatters (lax/scatters.py) and of gather
(lax/indexing.py), for an index described by an indexer (lax/indexing.py's
module docstring).

One loop per dimension of ``x[index]`` (the shape of a scatter's updates), in
C order, the order in which NumPy's ``ufunc.at`` and fancy assignment visit
the updates: repeated indices accumulate in NumPy's order, and of repeated
``set`` updates the last one lands, as on the NumPy backend.  An index
array's entry is read, and wrapped once if negative, as soon as the loops it
depends on are open (a scalar index before any loop); ``mode="drop"`` skips
the out-of-bounds ones there, ``mode="clip"`` clamps them.
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad.core import ShapedArray, Var
from fungrad.lax.indexing import output_layout


def _not_compilable(why: str):
    from fungrad.interpreters.numba_backend import NotCompilable
    return NotCompilable(why)


def _index_entry_source(name, aval, adv_vars):
    """Source of one entry of an index array (of ``aval``) at the advanced-index
    loop variables ``adv_vars`` (broadcast NumPy's way), and the positions in
    ``adv_vars`` it reads."""
    if aval.shape == ():
        return name, set()            # (a numba scalar inside a segment)
    lead = len(adv_vars) - aval.ndim
    parts, reads = [], set()
    for m, n in enumerate(aval.shape):
        if n == 1:
            parts.append("0")
        else:
            parts.append(adv_vars[lead + m])
            reads.add(lead + m)
    return f"{name}[{', '.join(parts)}]", reads


def check_index_dtypes(index_avals):
    for a in index_avals:
        dtype = np.dtype(a.dtype)
        # (an int64 loop variable holds every value of these; uint64 it does not)
        if dtype_kind(dtype) not in "iu" or (dtype_kind(dtype) == "u" and dtype.itemsize == 8):
            raise _not_compilable(f"an index of dtype {dtype}")


def emit_index_loops(block, indexer, operand_shape, index_names, index_avals, mode, element):
    """Emit the loops over ``x[indexer]`` into ``block`` (a ``NumbaBlock``);
    ``element(operand_coords, out_coords, indent)`` emits the statement(s) for
    one element: the operand's coordinates and those of ``x[index]`` as
    source, at ``indent`` (beyond the block's).  ``mode``: "drop" or "clip"."""
    if mode not in ("drop", "clip"):
        raise _not_compilable(f"index loops in mode {mode!r}")
    check_index_dtypes(index_avals)
    layout, out_shape = output_layout(indexer, [a.shape for a in index_avals], operand_shape)
    new_var = lambda: block.names.new(Var(ShapedArray((), np.int64)))
    loop_vars = [new_var() for _ in out_shape]
    adv_dims = sorted((o[1], k) for k, o in enumerate(layout) if o[0] == "adv")
    adv_vars = [loop_vars[k] for _, k in adv_dims]
    out_dim_of_basic = {o[1]: k for k, o in enumerate(layout) if o[0] == "basic"}
    coords, pending, dim = [], [], 0     # pending: (loop depth needed, coordinate lines)
    for p, e in enumerate(indexer):
        if e[0] == "none":
            continue
        size = int(operand_shape[dim])
        if e[0] == "int":
            coords.append(str(int(e[1])))
        elif e[0] == "slice":
            _, start, _, step = e
            var = loop_vars[out_dim_of_basic[p]]
            coords.append(var if (start, step) == (0, 1) else f"{int(start)} + {int(step)} * {var}")
        else:
            entry, reads = _index_entry_source(index_names[e[1]], index_avals[e[1]], adv_vars)
            depth = 1 + max((adv_dims[j][1] for j in reads), default=-1)
            c = new_var()
            coords.append(c)
            pending.append((depth, _coordinate_lines(c, entry, size, mode)))
        dim += 1
    _emit_nest(block, loop_vars, out_shape, pending, coords, element)


def _coordinate_lines(c, entry, size, mode):
    """Lines that set ``c`` to the wrapped (and clamped) coordinate, and whether
    the last opens a block (mode "drop": entered only when it is in bounds)."""
    lines = [f"{c} = np.int64({entry})", f"if {c} < 0:", f"    {c} += {size}"]
    if mode == "clip":
        return lines + [f"{c} = min(max({c}, 0), {size - 1})"], False
    return lines + [f"if 0 <= {c} < {size}:"], True


def _emit_nest(block, loop_vars, out_shape, pending, coords, element):
    """The loops, each coordinate computed (and checked) in the outermost loop
    where its index entry is known, and the element's statement innermost."""
    indent = ""
    for depth in range(len(out_shape) + 1):
        for need, (lines, opens_block) in pending:
            if need == depth:
                for text in lines:
                    block.line(text, indent)
                if opens_block:
                    indent += "    "
        if depth < len(out_shape):
            block.line(f"for {loop_vars[depth]} in range({int(out_shape[depth])}):", indent)
            indent += "    "
    element(coords, loop_vars, indent)
