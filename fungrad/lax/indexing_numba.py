"""The compiled backend's forms of indexing (numba_backend): the numba_block
rules lax/indexing.py and lax/scatters.py attach to gather, the scatters and
the dynamic slices, for an index described by an indexer (lax/indexing.py's
module docstring), with the NumPy backend's results.

Gathers and scatters are loops over the elements of ``x[index]``, one per
dimension, in C order, the order in which NumPy's ``ufunc.at`` and fancy
assignment visit the updates: repeated indices accumulate in NumPy's order,
and of repeated ``set`` updates the last one lands, as on the NumPy backend.
An index array's entry is read, and wrapped once if negative, as soon as the
loops it depends on are open (a scalar index before any loop); then it is
clamped (gather's mode "clip", scatters' "clip") or, out of bounds, skipped
(scatters' "drop"; gather's "fill", whose result is filled first).  A
scatter copies its operand first.  A dynamic slice is a view of its operand
at the clamped starts; a dynamic update slice writes a copy there.

(This module reads lax/indexing.py's index arithmetic inside its functions:
indexing.py imports it to attach the rules.)
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import iinfo as dtype_iinfo, kind as dtype_kind
from fungrad.core import ShapedArray, Var

__all__ = ["gather_numba", "scatter_numba", "dynamic_slice_numba",
           "dynamic_update_slice_numba", "emit_index_loops"]


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
    from fungrad.lax.indexing import output_layout
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


# ----------------------------------------------------------------------------
# Scatters: a copy, then loops over the updates
# ----------------------------------------------------------------------------

# one element's update, ``{o}`` the operand element and ``{u}`` the update
# (the ufuncs wrap integers as NumPy does: numba's + and * on int64 do not
# promise to; np.minimum/np.maximum propagate NaN as NumPy's)
_NUMBA_UPDATE = {
    "scatter": "{o} = {u}",
    "scatter_add": "{o} = np.add({o}, {u})",
    "scatter_mul": "{o} = np.multiply({o}, {u})",
    "scatter_min": "{o} = np.minimum({o}, {u})",
    "scatter_max": "{o} = np.maximum({o}, {u})",
}


def scatter_numba(block, eqn, args, out_names):
    """``out = x.copy()``, then each in-bounds update applied in NumPy's order
    (every scatter primitive's rule)."""
    x_aval, *index_avals, u_aval = [a.aval for a in eqn.inputs]
    x, index_names, u = args[0], args[1:-1], args[-1]
    (out,), name, params = out_names, eqn.primitive.name, eqn.params
    if x_aval.shape == () or u_aval.dtype != x_aval.dtype:
        raise _not_compilable(f"{name} of a scalar, or of updates of another dtype")
    if x_aval.dtype == np.bool_ and name != "scatter":
        raise _not_compilable(f"{name} of booleans")   # (NumPy's or/and; numba's integers)
    block.line(f"{out} = {x}.copy()")
    if x_aval.size == 0:
        return                                       # (nothing to update)

    def element(coords, out_coords, indent):
        update = u if u_aval.shape == () else f"{u}[{', '.join(out_coords)}]"
        block.line(_NUMBA_UPDATE[name].format(o=f"{out}[{', '.join(coords)}]", u=update),
                   indent)
    emit_index_loops(block, params["indexer"], x_aval.shape, index_names, index_avals,
                     params["mode"], element)


# ----------------------------------------------------------------------------
# Gather: loops over the result
# ----------------------------------------------------------------------------

def _numba_scalar_source(value, dtype) -> str:
    """A scalar of ``dtype`` in code numba compiles (no float('nan'), and no
    integer literal beyond int64's range, which numba would type as uint64)."""
    value = np.asarray(value).astype(dtype)[()]
    if dtype_kind(value.dtype) == "b":
        return "True" if value else "False"
    if dtype_kind(value.dtype) == "f":
        text = ("np.nan" if np.isnan(value) else "np.inf" if value == np.inf
                else "-np.inf" if value == -np.inf else repr(float(value)))
    elif dtype_kind(value.dtype) == "i" and value == dtype_iinfo(np.int64).min:
        text = f"{int(value) + 1} - 1"
    else:
        text = str(int(value))
    return f"np.{value.dtype.name}({text})"


def gather_numba(block, eqn, args, out_names):
    """``x[index]`` element by element; mode "fill" fills the result first
    and skips the out-of-bounds entries."""
    from fungrad.lax.indexing import _array_dims, default_fill_value
    (x, *index_names), (out,) = args, out_names
    x_aval, *index_avals = [a.aval for a in eqn.inputs]
    out_aval, p = eqn.outvars[0].aval, eqn.params
    fill = p["fill_value"] if p["fill_value"] is not None else default_fill_value(x_aval.dtype)
    with np.errstate(invalid="ignore"):       # (a NaN fill of integers: as the impl's astype)
        fill = _numba_scalar_source(fill if p["mode"] == "fill" else 0, x_aval.dtype)
    shape = tuple(int(d) for d in out_aval.shape)
    start = f"np.full({shape!r}, {fill})" if shape else fill
    block.line(f"{out} = {start}")
    if any(x_aval.shape[d] == 0 for d in _array_dims(p["indexer"])):
        return                                   # (nothing to gather from: the impl's fill)

    def element(coords, out_coords, indent):
        target = f"{out}[{', '.join(out_coords)}]" if shape else out
        block.line(f"{target} = {x}[{', '.join(coords)}]", indent)
    emit_index_loops(block, p["indexer"], x_aval.shape, index_names, index_avals,
                     "drop" if p["mode"] == "fill" else "clip", element)


# ----------------------------------------------------------------------------
# Dynamic slices: windows at clamped starts
# ----------------------------------------------------------------------------

def _numba_window(block, eqn, operand_aval, starts, start_avals, sizes):
    """Source of the slices of a dynamic window in code numba compiles: each
    start read as int64, wrapped if negative (where allowed), clamped so that
    the window fits, as ``_clamped_starts``."""
    check_index_dtypes(start_avals)
    parts = []
    for s, n, k, neg in zip(starts, operand_aval.shape, sizes, eqn.params["allow_negative"]):
        v = block.names.new(Var(ShapedArray((), np.int64)))
        block.line(f"{v} = np.int64({s})")
        if neg:
            block.line(f"if {v} < 0:")
            block.line(f"{v} += {int(n)}", "    ")
        block.line(f"{v} = min(max({v}, 0), {int(n) - int(k)})")
        parts.append(f"{v}:{v} + {int(k)}")
    return ", ".join(parts)


def dynamic_slice_numba(block, eqn, args, out_names):
    """The window, a view of the operand (numba_block)."""
    (x, *starts), (out,), aval = args, out_names, eqn.inputs[0].aval
    if aval.shape == ():
        block.line(f"{out} = {x}")
        return
    window = _numba_window(block, eqn, aval, starts, [a.aval for a in eqn.inputs[1:]],
                           eqn.params["slice_sizes"])
    block.line(f"{out} = {x}[{window}]")


def dynamic_update_slice_numba(block, eqn, args, out_names):
    """A copy of the operand with the update written in the window (numba_block)."""
    (x, u, *starts), (out,), aval = args, out_names, eqn.inputs[0].aval
    if aval.shape == () or eqn.inputs[1].aval.dtype != aval.dtype:
        raise _not_compilable("dynamic_update_slice of a scalar or of another dtype")
    window = _numba_window(block, eqn, aval, starts, [a.aval for a in eqn.inputs[2:]],
                           eqn.inputs[1].aval.shape)
    block.line(f"{out} = {x}.copy()")
    block.line(f"{out}[{window}] = {u}")
