"""``fungrad.flatten_util.ravel_pytree`` (``jax.flatten_util``)."""
from __future__ import annotations

import numpy as np

from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """``(flat, unravel)``: the leaves raveled and concatenated into one 1-d array
    (promoted to a common dtype), and the function mapping such an array back
    to the pytree (each leaf with its shape and dtype).  Differentiable."""
    from fungrad import numpy as fnp
    leaves, tree = tree_flatten(pytree)
    shapes = [np.shape(x) for x in leaves]
    dtypes = [fnp.result_type(x) for x in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = (fnp.concatenate([fnp.ravel(x) for x in leaves]) if leaves
            else fnp.zeros(0, fnp.float64))
    offsets = np.cumsum([0] + sizes)

    def unravel(arr):
        if np.shape(arr) != (offsets[-1],):
            raise ValueError(f"unravel: expected a 1-d array of length {offsets[-1]}, "
                             f"got shape {np.shape(arr)}")
        parts = [fnp.reshape(arr[int(a):int(b)], s).astype(d)
                 for a, b, s, d in zip(offsets[:-1], offsets[1:], shapes, dtypes)]
        return tree_unflatten(tree, parts)
    return flat, unravel
