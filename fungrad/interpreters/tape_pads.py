"""Cotangents of slices on the eager tape, kept as boxes until something reads
them whole.

The transpose of ``x[a:b]`` is a zero array of ``x``'s shape with the
cotangent in the box ``a:b``; a program that slices one array several times
(a fused projection split into q, k and v, an LSTM's four gates, ``x[:, 0]``
and ``x[:, 1]``) gets one such array per slice, each a pass of zeros over the
whole input, summed into the input's cotangent one full-size addition at a
time.  The eager tape (``tape._backward``) instead records a slice's
cotangent as a ``Pad`` (the box and the values), sums pads whose boxes are
disjoint by listing them, and writes the array once, when a backward rule,
a non-pad cotangent or the caller needs it (``dense``).

The values are exactly the dense sum's, signed zeros included: one box is
the cotangent as the transpose writes it; two or more disjoint boxes are
each ``piece + 0.0`` (the other pads' zeros added to it, which turn -0.0
into +0.0), zeros elsewhere.  Anything else (overlapping boxes, a pad meeting
a dense array, other dtypes) is the dense sum itself.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Pad", "accumulate", "dense"]


class Pad:
    """Zeros of ``shape`` and ``dtype`` with ``pieces`` ``[(box, values)]``
    (boxes: tuples of slices, pairwise disjoint) added in."""
    __slots__ = ("shape", "dtype", "pieces")

    def __init__(self, shape, dtype, pieces):
        self.shape, self.dtype, self.pieces = shape, dtype, pieces

    @classmethod
    def of(cls, ct, box, shape) -> "Pad":
        """The transpose of a slice taking ``box`` of an array of ``shape``."""
        ct = dense(ct)
        return cls(shape, ct.dtype, [(box, ct)])

    def disjoint_from(self, other: "Pad") -> bool:
        return all(_apart(a, b) for a, _ in self.pieces for b, _ in other.pieces)

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape, self.dtype)
        if len(self.pieces) == 1:
            box, values = self.pieces[0]
            out[box] = values
        else:
            for box, values in self.pieces:
                np.add(values, 0.0, out=out[box])
        return out


def _apart(a, b) -> bool:
    """Boxes ``a`` and ``b`` (tuples of slices) share no element: on some axis
    their spans do not overlap (conservative for strided boxes)."""
    return any(x.stop <= y.start or y.stop <= x.start for x, y in zip(a, b))


def dense(ct):
    """``ct`` as an array (a ``Pad`` written out)."""
    return ct.dense() if type(ct) is Pad else ct


def accumulate(a, b):
    """``a + b`` for the eager tape's concrete cotangents (``Pad`` or arrays)."""
    if type(a) is not Pad and type(b) is not Pad:
        return np.add(a, b)
    if (type(a) is Pad and type(b) is Pad and a.dtype == b.dtype and a.shape == b.shape
            and a.disjoint_from(b)):
        return Pad(a.shape, a.dtype, a.pieces + b.pieces)
    return np.add(dense(a), dense(b))
