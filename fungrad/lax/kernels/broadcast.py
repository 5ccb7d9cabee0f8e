"""``broadcast_in_dim`` of a small result (NumPy only).

``np.broadcast_to`` is written in Python (an ``nditer`` and a view built by
``as_strided``): about 3 us a call, where filling a fresh array of a few
thousand elements from the operand costs a third of that.  A backward pass
broadcasts every reduction's cotangent back to its operand's shape, so small
programs (a sampler's step, a tiny model's eager gradient) pay it at every
reduction.  Large results stay zero-stride views (no memory traffic).
"""
from __future__ import annotations

import numpy as np

__all__ = ["broadcast_small"]

# results up to this many elements are filled, not viewed: about the size
# whose fill costs what np.broadcast_to's call does
SMALL = 2048


def broadcast_small(x, *, shape, expanded, dtype):
    """``x`` (of ``dtype``) reshaped to ``expanded`` (its shape with unit axes
    where the new ones go) and broadcast into a fresh array of ``shape``."""
    out = np.empty(shape, dtype)
    out[...] = np.reshape(x, expanded)
    return out
