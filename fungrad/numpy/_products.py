"""Products with NumPy's names and semantics: dot, vdot, inner, outer, matmul,
tensordot, einsum, kron, cross, vecdot.

Everything lowers to ``lax.dot_general`` (one BLAS matmul per contraction) plus
structural ops; dtypes are promoted as NumPy does first.  ``einsum`` parses
NumPy's subscript language and contracts pairwise in an order chosen by its
own greedy path optimiser.  ``out_sharding`` (``dot``, ``matmul``,
``tensordot``, ``einsum``) is accepted for JAX compatibility: one device.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from fungrad._dtype_classes import issubdtype as dtype_issubdtype
from fungrad import lax
from fungrad.core import get_aval
from fungrad.numpy._dtypes import asarray_operand, promote
from fungrad.lax.utils import check_precision

__all__ = ["dot", "vdot", "inner", "outer", "matmul", "tensordot", "einsum", "einsum_path",
           "kron", "cross", "vecdot", "matvec", "vecmat"]


def _shape(x):
    return x.shape if hasattr(x, "shape") else get_aval(x).shape


def _ndim(x):
    return len(get_aval(x).shape)


def _with_dtype(x, preferred_element_type):
    if preferred_element_type is None:
        return x
    return lax.convert_element_type(x, preferred_element_type)


def _conj_if_complex(x):
    if dtype_issubdtype(get_aval(x).dtype, np.complexfloating):
        import fungrad.numpy as fnp
        return fnp.conj(x)
    return x


# --- matmul ---------------------------------------------------------------------

def matmul(a, b, /, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted to a row
    (first) or column (second) and the added axis removed again; leading axes
    are batch axes that broadcast."""
    check_precision(precision, "fungrad.numpy.matmul")
    a, b = promote("matmul", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) == len(sb) >= 2 and sa[:-2] == sb[:-2] and sa[-1] == sb[-2]:
        # the common case, exactly one np.matmul: no promotion of 1-D operands,
        # no broadcasting of batch dims
        batch = tuple(range(len(sa) - 2))
        out = lax.dot_general(a, b, (((len(sa) - 1,), (len(sa) - 2,)), (batch, batch)))
        return _with_dtype(out, preferred_element_type)
    for i, s in enumerate((sa, sb)):
        if len(s) == 0:
            raise ValueError(f"matmul: operand {i} is a scalar (shapes {sa} and {sb}); "
                             "matmul needs arrays of rank >= 1. Use multiply (*) for scalars.")
    a2 = lax.reshape(a, (1,) + sa) if len(sa) == 1 else a
    b2 = lax.reshape(b, sb + (1,)) if len(sb) == 1 else b
    (ka, kb) = _shape(a2)[-1], _shape(b2)[-2]
    if ka != kb:
        raise ValueError(f"matmul: shapes {sa} and {sb} are not aligned: the last axis of "
                         f"the first operand has size {ka} but the "
                         f"{'only' if len(sb) == 1 else 'second-to-last'} axis of the "
                         f"second has size {kb}.")
    try:
        batch = tuple(np.broadcast_shapes(_shape(a2)[:-2], _shape(b2)[:-2]))
    except ValueError:
        raise ValueError(f"matmul: the batch (leading) dimensions of shapes {sa} and {sb} "
                         "do not broadcast together.") from None
    out = _batched_matmul(a2, b2, batch)
    out_shape = batch + ((_shape(a2)[-2],) if len(sa) > 1 else ()) + (
        (_shape(b2)[-1],) if len(sb) > 1 else ())
    return _with_dtype(lax.reshape(out, out_shape), preferred_element_type)


def _batched_matmul(a, b, batch):
    """(..., n, k) @ (..., k, m) -> batch + (n, m), avoiding broadcasts where a
    side has no batch elements: its matrix is then shared by the whole stack and
    the stack becomes free dims of one dot_general (a single big matmul)."""
    sa, sb = _shape(a), _shape(b)
    a_batch, b_batch = sa[:-2], sb[:-2]
    n, m = sa[-2], sb[-1]
    if math.prod(b_batch) == 1:
        b = lax.reshape(b, sb[-2:])
        out = lax.dot_general(a, b, (((len(sa) - 1,), (0,)), ((), ())))
        return lax.reshape(out, batch + (n, m))
    if math.prod(a_batch) == 1:
        a = lax.reshape(a, sa[-2:])
        nb = len(sb) - 2
        out = lax.dot_general(a, b, (((1,), (nb,)), ((), ())))     # (n, b_batch..., m)
        out = lax.transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
        return lax.reshape(out, batch + (n, m))
    nb = len(batch)
    a = lax.broadcast_in_dim(a, batch + sa[-2:], tuple(range(nb - len(sa) + 2, nb + 2)))
    b = lax.broadcast_in_dim(b, batch + sb[-2:], tuple(range(nb - len(sb) + 2, nb + 2)))
    dims = tuple(range(nb))
    return lax.dot_general(a, b, (((nb + 1,), (nb,)), (dims, dims)))


# --- dot, vdot, inner, outer ------------------------------------------------------------

def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's ``dot``: scalars multiply; otherwise the last axis of ``a`` is
    contracted with the only axis (1-D) or second-to-last axis of ``b``."""
    check_precision(precision, "fungrad.numpy.dot")
    a, b = promote("dot", a, b, weak_operands=True)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _with_dtype(lax.mul(a, b), preferred_element_type)
    b_axis = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[b_axis]:
        raise ValueError(f"dot: shapes {sa} and {sb} not aligned: {sa[-1]} (dim "
                         f"{len(sa) - 1}) != {sb[b_axis]} (dim {b_axis})")
    out = lax.dot_general(a, b, (((len(sa) - 1,), (b_axis,)), ((), ())))
    return _with_dtype(out, preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a`` (complex)."""
    check_precision(precision, "fungrad.numpy.vdot")
    a, b = promote("vdot", a, b)
    if get_aval(a).size != get_aval(b).size:
        raise ValueError(f"vdot: arrays of shapes {_shape(a)} and {_shape(b)} have "
                         "different sizes; vdot needs the same number of elements.")
    a = lax.reshape(_conj_if_complex(a), (get_aval(a).size,))
    b = lax.reshape(b, (get_aval(b).size,))
    return _with_dtype(lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
                       preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes of ``a`` and ``b``."""
    check_precision(precision, "fungrad.numpy.inner")
    a, b = promote("inner", a, b)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _with_dtype(lax.mul(a, b), preferred_element_type)
    if sa[-1] != sb[-1]:
        raise ValueError(f"inner: shapes {sa} and {sb} not aligned: their last axes have "
                         f"sizes {sa[-1]} and {sb[-1]}")
    out = lax.dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())))
    return _with_dtype(out, preferred_element_type)


def outer(a, b, out=None):
    """``ravel(a)[:, None] * ravel(b)[None, :]``."""
    if out is not None:
        raise TypeError("outer: out= is not supported (fungrad arrays are immutable)")
    a, b = promote("outer", a, b)
    a = lax.reshape(a, (get_aval(a).size, 1))
    b = lax.reshape(b, (1, get_aval(b).size))
    return lax.mul(a, b)


# --- tensordot ---------------------------------------------------------------------------

def _axes_list(axes, ndim, who):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"tensordot: axis {ax} is out of bounds for {who} of rank {ndim}")
        out.append(ax % ndim)
    return tuple(out)


def tensordot(a, b, /, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
    """Sum products over ``axes``: an int N (last N axes of ``a`` with the first N
    of ``b``) or a pair of axis sequences."""
    check_precision(precision, "fungrad.numpy.tensordot")
    a, b = promote("tensordot", a, b)
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > len(sa) or n > len(sb):
            raise ValueError(f"tensordot: axes={n} is invalid for shapes {sa} and {sb}; it "
                             "must be between 0 and the rank of both arrays.")
        a_axes, b_axes = tuple(range(len(sa) - n, len(sa))), tuple(range(n))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise TypeError(f"tensordot: axes must be an int or a pair of axis sequences, "
                            f"got {axes!r}") from None
        a_axes, b_axes = _axes_list(ax_a, len(sa), "a"), _axes_list(ax_b, len(sb), "b")
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: axes {axes!r} pair {len(a_axes)} axes of a with "
                             f"{len(b_axes)} axes of b; the counts must match.")
    for i, j in zip(a_axes, b_axes):
        if sa[i] != sb[j]:
            raise ValueError(f"tensordot: shape mismatch for sum: a {sa} axis {i} has size "
                             f"{sa[i]} but b {sb} axis {j} has size {sb[j]}")
    out = lax.dot_general(a, b, ((a_axes, b_axes), ((), ())))
    return _with_dtype(out, preferred_element_type)


# --- kron, cross, vecdot ------------------------------------------------------------------

def kron(a, b):
    """Kronecker product: blocks ``a[i, j, ...] * b``."""
    a, b = promote("kron", a, b)
    nd = max(_ndim(a), _ndim(b))
    sa = (1,) * (nd - _ndim(a)) + _shape(a)
    sb = (1,) * (nd - _ndim(b)) + _shape(b)
    a = lax.reshape(a, tuple(x for d in sa for x in (d, 1)))
    b = lax.reshape(b, tuple(x for d in sb for x in (1, d)))
    return lax.reshape(lax.mul(a, b), tuple(i * j for i, j in zip(sa, sb)))


_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or 2-vectors, whose z-component is returned)
    along ``axisa``/``axisb``; c_i = ε_ijk a_j b_k as one einsum."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote("cross", a, b)
    import fungrad.numpy as fnp
    a, b = fnp.moveaxis(a, axisa, -1), fnp.moveaxis(b, axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got vectors of sizes {na} and {nb}")
    dtype = get_aval(a).dtype
    if na == nb == 2:
        eps2 = np.array([[0, 1], [-1, 0]], dtype)
        return einsum("...j,...k,jk->...", a, b, eps2)
    a, b = (_to_3d(x) for x in (a, b))
    c = einsum("ijk,...j,...k->...i", _LEVI_CIVITA.astype(dtype), a, b)
    return fnp.moveaxis(c, -1, axisc)


def _to_3d(v):
    if _shape(v)[-1] == 3:
        return v
    return matmul(v, np.eye(2, 3, dtype=get_aval(v).dtype))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``sum(conj(x1) * x2, axis)`` with broadcasting, as one batched matmul."""
    check_precision(precision, "fungrad.numpy.vecdot")
    x1, x2 = promote("vecdot", x1, x2)
    import fungrad.numpy as fnp
    x1, x2 = fnp.moveaxis(x1, axis, -1), fnp.moveaxis(x2, axis, -1)
    if _shape(x1)[-1] != _shape(x2)[-1]:
        raise ValueError(f"vecdot: the vector axes have different sizes, {_shape(x1)[-1]} "
                         f"and {_shape(x2)[-1]} (shapes {_shape(x1)} and {_shape(x2)})")
    x1 = _conj_if_complex(x1)
    row = lax.reshape(x1, _shape(x1)[:-1] + (1, _shape(x1)[-1]))
    col = lax.reshape(x2, _shape(x2) + (1,))
    out = matmul(row, col)
    return _with_dtype(lax.reshape(out, _shape(out)[:-2]), preferred_element_type)


# ============================================================================
# einsum
# ============================================================================
# Labels are strings: letters from the subscripts, and "...0", "...1", ... for
# the axes an ellipsis stands for (right-aligned across operands).

def _parse_interleaved(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) -> subscripts string."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out, ops = ops[-1], ops[:-1]
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def spell(sub):
        return "".join("..." if s is Ellipsis else letters[operator.index(s)] for s in sub)
    spec = ",".join(spell(s) for s in subs)
    return (spec + ("->" + spell(out) if out is not None else "")), ops


def _split_labels(term, who):
    labels, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            labels.append("...")
            i += 3
        elif term[i].isalpha():
            labels.append(term[i])
            i += 1
        else:
            raise ValueError(f"einsum: invalid subscript {term[i]!r} in {who}; use letters "
                             "a-z, A-Z and '...'.")
    if labels.count("...") > 1:
        raise ValueError(f"einsum: more than one ellipsis in {who}")
    return labels


def _expand_ellipsis(labels, ndim, n_ell, who):
    if "..." not in labels:
        if len(labels) != ndim:
            raise ValueError(f"einsum: {who} has {len(labels)} subscripts but the operand "
                             f"has rank {ndim}")
        return labels
    k = ndim - (len(labels) - 1)
    if k < 0:
        raise ValueError(f"einsum: {who} has more subscripts than the operand's rank {ndim}")
    i = labels.index("...")
    return labels[:i] + [f"...{j}" for j in range(n_ell - k, n_ell)] + labels[i + 1:]


def _parse_einsum(subscripts, operands):
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} operand subscripts in {subscripts!r} but "
                         f"{len(operands)} operands were given")
    raw = [_split_labels(t, f"operand {i}") for i, t in enumerate(terms)]
    ndims = [_ndim(x) for x in operands]
    n_ell = max([n - (len(r) - 1) for r, n in zip(raw, ndims) if "..." in r], default=0)
    in_labels = [_expand_ellipsis(r, n, n_ell, f"operand {i}")
                 for i, (r, n) in enumerate(zip(raw, ndims))]
    ell = [f"...{j}" for j in range(n_ell)]
    if arrow:
        out_raw = _split_labels(output, "the output")
        if "..." not in out_raw and n_ell and any(
                _shape(x)[i] != 1 for x, ls in zip(operands, in_labels)
                for i, lab in enumerate(ls) if lab.startswith("...")):
            raise ValueError("einsum: the output has no '...' but the operands' ellipsis "
                             "axes are not all of size 1; add '...' to the output.")
        out_labels = [lab for x in out_raw for lab in (ell if x == "..." else [x])]
    else:
        letters = [lab for ls in in_labels for lab in ls if not lab.startswith("...")]
        out_labels = ell + sorted(lab for lab in set(letters) if letters.count(lab) == 1)
    known = {lab for ls in in_labels for lab in ls}
    for lab in out_labels:
        if lab not in known:
            raise ValueError(f"einsum: output subscript {lab!r} does not appear in the inputs")
    if len(set(out_labels)) != len(out_labels):
        raise ValueError(f"einsum: output subscripts {output!r} contain a repeated label")
    return in_labels, out_labels


def _label_sizes(operands, in_labels):
    sizes = {}
    for x, labels in zip(operands, in_labels):
        for lab, n in zip(labels, _shape(x)):
            old = sizes.get(lab, 1)
            if old != 1 and n != 1 and old != n:
                raise ValueError(f"einsum: label {lab!r} has inconsistent sizes {old} and {n} "
                                 f"(operand shapes {[_shape(o) for o in operands]})")
            sizes[lab] = old if n == 1 else n     # 1 broadcasts (to 0 as well)
    return sizes


def _take_diagonals(x, labels):
    """Repeated labels within one operand: keep the diagonal (e.g. 'ii' -> 'i')."""
    import fungrad.numpy as fnp
    labels = list(labels)
    while len(set(labels)) != len(labels):
        lab = next(lab for lab in labels if labels.count(lab) > 1)
        i = labels.index(lab)
        j = labels.index(lab, i + 1)
        if _shape(x)[i] != _shape(x)[j]:
            raise ValueError(f"einsum: repeated label {lab!r} on axes of sizes "
                             f"{_shape(x)[i]} and {_shape(x)[j]}; they must be equal")
        x = fnp.diagonal(x, 0, i, j)           # the diagonal becomes the last axis
        labels = [la for k, la in enumerate(labels) if k not in (i, j)] + [lab]
    return x, labels


def _drop_broadcast_axes(x, labels, sizes):
    """Size-1 axes whose label is longer elsewhere broadcast: squeeze them out."""
    shape = _shape(x)
    keep = [k for k, lab in enumerate(labels) if not (shape[k] == 1 and sizes[lab] != 1)]
    if len(keep) == len(labels):
        return x, labels
    return lax.reshape(x, tuple(shape[k] for k in keep)), [labels[k] for k in keep]


def _sum_unneeded(x, labels, needed):
    axes = tuple(k for k, lab in enumerate(labels) if lab not in needed)
    if not axes:
        return x, labels
    return lax.reduce_sum(x, axes), [lab for lab in labels if lab in needed]


def _contract_pair(x, lx, y, ly, keep, dot_general=None, precision=None):
    """dot_general of two labelled operands; shared labels still needed later are
    batch dims, the other shared ones are contracted.  ``dot_general`` is the
    caller's replacement for ``lax.dot_general`` (einsum's ``_dot_general``)."""
    shared = [lab for lab in lx if lab in ly]
    batch = [lab for lab in shared if lab in keep]
    contract = [lab for lab in shared if lab not in keep]
    dn = ((tuple(lx.index(c) for c in contract), tuple(ly.index(c) for c in contract)),
          (tuple(lx.index(b) for b in batch), tuple(ly.index(b) for b in batch)))
    if dot_general is None:
        out = lax.dot_general(x, y, dn)
    else:
        out = dot_general(x, y, dn, precision, preferred_element_type=None)
    labels = batch + [lab for lab in lx if lab not in shared] + [
        lab for lab in ly if lab not in shared]
    return out, labels


def _pair_cost(lx, ly, sizes, keep):
    """Greedy score: (elements removed, flops) of contracting the pair."""
    size = lambda labels: math.prod([sizes[lab] for lab in labels])
    union = list(dict.fromkeys(lx + ly))
    out = [lab for lab in union if lab in keep]
    return size(out) - size(lx) - size(ly), size(union)


def _greedy_path(label_lists, sizes, out_labels):
    """Contraction order: repeatedly the pair whose result removes the most
    elements (ties: fewest flops), pairs sharing labels preferred over outer
    products.  Returns a list of index pairs, as np.einsum_path does."""
    labels = [list(ls) for ls in label_lists]
    path = []
    while len(labels) > 1:
        best = None
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                others = [la for k, ls in enumerate(labels) if k not in (i, j) for la in ls]
                keep = set(out_labels) | set(others)
                shares = bool(set(labels[i]) & set(labels[j]))
                score = (not shares,) + _pair_cost(labels[i], labels[j], sizes, keep)
                if best is None or score < best[0]:
                    best = (score, i, j, keep)
        _, i, j, keep = best
        path.append((i, j))
        merged = [la for la in dict.fromkeys(labels[i] + labels[j]) if la in keep]
        labels = [ls for k, ls in enumerate(labels) if k not in (i, j)] + [merged]
    return path


def _einsum_path(optimize, label_lists, sizes, out_labels):
    n = len(label_lists)
    if n < 2:
        return []
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return [tuple(p) for p in optimize[1:]]
    if optimize is False or optimize is None or optimize == "none":
        # left to right: each result is appended last, so pair the next
        # operand (now first) with it
        return [(0, 1)] + [(0, n - 2 - k) for k in range(n - 2)]
    if optimize not in (True, "auto", "greedy", "optimal", "dp", "eager"):
        raise ValueError(f"einsum: optimize={optimize!r} is not understood; use False, "
                         "True/'greedy'/'optimal'/'auto', or an explicit ['einsum_path', ...]")
    return _greedy_path(label_lists, sizes, out_labels)


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, dtype=None, out_sharding=None, _dot_general=None):
    """Einstein summation with NumPy's subscript language (``'ij,jk->ik'``,
    ``'...ij,...jk'``, implicit output, repeated labels for traces/diagonals,
    the interleaved ``einsum(a, [0, 1], b, [1, 2])`` form).

    Operands are contracted pairwise with ``dot_general`` in the order of a
    greedy path (``optimize``), after taking diagonals and summing labels that
    only one operand has.  ``_dot_general`` (JAX's private hook, which flax's
    attention uses) replaces ``lax.dot_general`` in those contractions; it is
    called as ``_dot_general(lhs, rhs, dimension_numbers, precision,
    preferred_element_type=None)``.
    """
    check_precision(precision, "fungrad.numpy.einsum")
    if _dot_general is not None and not callable(_dot_general):
        raise TypeError(f"einsum: _dot_general must be a callable like lax.dot_general, got "
                        f"{type(_dot_general).__name__}")
    if out is not None:
        raise TypeError("einsum: out= is not supported (fungrad arrays are immutable)")
    if not isinstance(subscripts, str):
        subscripts, operands = _parse_interleaved((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum needs at least one operand")
    operands = promote("einsum", *operands)
    if dtype is not None:
        operands = [lax.convert_element_type(x, dtype) for x in operands]
    in_labels, out_labels = _parse_einsum(subscripts, operands)
    sizes = _label_sizes(operands, in_labels)
    terms = []
    for i, (x, labels) in enumerate(zip(operands, in_labels)):
        x, labels = _take_diagonals(x, labels)
        x, labels = _drop_broadcast_axes(x, labels, sizes)
        others = {la for k, ls in enumerate(in_labels) if k != i for la in ls}
        terms.append(_sum_unneeded(x, labels, others | set(out_labels)))
    path = _einsum_path(optimize, [t[1] for t in terms], sizes, out_labels)
    for i, j in path:
        (x, lx), (y, ly) = terms[i], terms[j]
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        keep = set(out_labels) | {la for _, ls in rest for la in ls}
        x, lx = _sum_unneeded(x, lx, keep | set(ly))
        y, ly = _sum_unneeded(y, ly, keep | set(lx))
        terms = rest + [_contract_pair(x, lx, y, ly, keep, _dot_general, precision)]
    x, labels = terms[0]
    x, labels = _sum_unneeded(x, labels, set(out_labels))
    x = lax.transpose(x, tuple(labels.index(lab) for lab in out_labels if lab in labels))
    out_shape = tuple(sizes[lab] if lab in labels else 1 for lab in out_labels)
    return _with_dtype(lax.reshape(x, out_shape), preferred_element_type)


def einsum_path(subscripts, /, *operands, optimize="greedy"):
    """The contraction order ``einsum`` would use: ``(['einsum_path', (i, j), ...],
    description)`` like ``np.einsum_path``."""
    if not isinstance(subscripts, str):
        subscripts, operands = _parse_interleaved((subscripts,) + operands)
    operands = [np.asarray(x) if not hasattr(x, "shape") else x for x in operands]
    in_labels, out_labels = _parse_einsum(subscripts, operands)
    sizes = _label_sizes(operands, in_labels)
    path = _einsum_path(optimize or "greedy", in_labels, sizes, out_labels)
    return ["einsum_path"] + path, f"Greedy pairwise contraction order for {subscripts!r}: {path}"


def matvec(x1, x2, /):
    """Batched matrix-vector product: ``x1 (..., m, n) @ x2 (..., n) -> (..., m)``."""
    import fungrad.numpy as fnp
    x1, x2 = asarray_operand(x1), asarray_operand(x2)
    return fnp.squeeze(fnp.matmul(x1, fnp.expand_dims(x2, -1)), -1)


def vecmat(x1, x2, /):
    """Batched vector-matrix product: ``conj(x1) (..., m) @ x2 (..., m, n) -> (..., n)``."""
    import fungrad.numpy as fnp
    x1, x2 = asarray_operand(x1), asarray_operand(x2)
    return fnp.squeeze(fnp.matmul(fnp.expand_dims(fnp.conj(x1), -2), x2), -2)
