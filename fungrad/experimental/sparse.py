"""``fungrad.experimental.sparse`` (``jax.experimental.sparse``): ``BCOO``,
a sparse array in coordinate format.

    M = BCOO.fromdense(dense)                       # or BCOO((data, indices), shape=...)
    M = BCOO.from_scipy_sparse(scipy_matrix)        # numpyro's CAR distribution does this
    M @ v, v @ M, M.T, M.sum(axis), M.todense()

``data[k]`` is the value at ``indices[k]`` (one row of ``n_sparse`` integer
coordinates); repeated coordinates add up.  A BCOO is a pytree whose
children are ``data`` and ``indices`` and whose shape is static, so it passes
through ``jit``, ``vmap`` and ``grad`` (derivatives flow to ``data`` and the
dense operand).  Products are gathers and scatter-adds over the stored
entries, never a dense copy of the matrix.

Only JAX's default layout is provided: no batch or dense dimensions
(``n_batch = n_dense = 0``); ``sparsify`` and the ``bcoo_*`` primitives are not.
"""
from __future__ import annotations

import numpy as np

import fungrad.numpy as jnp
from fungrad import core
from fungrad.tree_util import register_pytree_node_class

__all__ = ["BCOO", "todense", "bcoo_fromdense", "bcoo_todense"]


@register_pytree_node_class
class BCOO:
    """A sparse array: ``BCOO((data, indices), shape=shape)`` with ``data`` of
    shape ``(nse,)`` and integer ``indices`` of shape ``(nse, len(shape))``."""

    # NumPy arrays defer to BCOO's reflected operators (ndarray @ BCOO)
    __array_ufunc__ = None

    def __init__(self, args, *, shape, indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(int(d) for d in shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
        if self.indices.ndim != 2 or self.indices.shape[1] != len(self.shape):
            raise ValueError(f"BCOO: indices must have shape (nse, {len(self.shape)}) for an "
                             f"array of shape {self.shape}, got {self.indices.shape}")
        if self.data.shape != self.indices.shape[:1]:
            raise ValueError(f"BCOO: data must have shape (nse,) = {self.indices.shape[:1]}, "
                             f"got {self.data.shape} (batch and dense dimensions are not "
                             f"supported)")

    # -- pytree ---------------------------------------------------------------
    def tree_flatten(self):
        return (self.data, self.indices), (self.shape, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux, children):
        # no checks or conversions: transformations rebuild pytrees with
        # placeholders (tracers, None, object()) as leaves
        out = object.__new__(cls)
        out.data, out.indices = children
        out.shape, out.indices_sorted, out.unique_indices = aux
        return out

    # -- construction ---------------------------------------------------------
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense: int = 0,
                  n_batch: int = 0):
        """The nonzero entries of ``mat``.  Under ``jit`` pass ``nse`` (the
        number of entries to store; missing ones are zeros at index 0)."""
        if n_dense or n_batch:
            raise NotImplementedError("BCOO.fromdense: n_batch and n_dense other than 0 are "
                                      "not supported by fungrad's BCOO")
        mat = jnp.asarray(mat)
        if nse is None:
            if isinstance(mat, core.Tracer):
                raise core.ConcretizationTypeError(
                    "BCOO.fromdense of a traced array needs nse= (the number of stored "
                    "entries), since the count of nonzeros is not known while tracing")
            nse = int(np.count_nonzero(np.asarray(mat)))
        coords = jnp.nonzero(mat, size=nse, fill_value=0)
        indices = jnp.stack(coords, axis=1).astype(index_dtype) if mat.ndim else \
            jnp.zeros((nse, 0), index_dtype)
        data = mat[coords] if mat.ndim else jnp.broadcast_to(mat, (nse,))
        return cls((data, indices), shape=mat.shape)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense: int = 0, n_batch: int = 0):
        """From a SciPy sparse matrix or array (any format)."""
        if n_dense or n_batch:
            raise NotImplementedError("BCOO.from_scipy_sparse: n_batch and n_dense other "
                                      "than 0 are not supported by fungrad's BCOO")
        coo = mat.tocoo()
        index_dtype = index_dtype or np.int32
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype)
        return cls((np.asarray(coo.data), indices), shape=coo.shape)

    # -- properties -----------------------------------------------------------
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))
    nse = property(lambda self: self.indices.shape[0])
    n_batch = property(lambda self: 0)
    n_dense = property(lambda self: 0)
    n_sparse = property(lambda self: len(self.shape))

    def __repr__(self):
        return f"BCOO({self.dtype}{list(self.shape)}, nse={self.nse})"

    def __len__(self):
        return self.shape[0]

    # -- operations -----------------------------------------------------------
    def _coords(self):
        return tuple(self.indices[:, k] for k in range(self.ndim))

    def todense(self):
        """The dense array (repeated coordinates add up)."""
        return jnp.zeros(self.shape, self.dtype).at[self._coords()].add(self.data)

    def transpose(self, axes=None):
        axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"BCOO.transpose: axes {axes} is not a permutation of "
                             f"{tuple(range(self.ndim))}")
        return BCOO((self.data, self.indices[:, list(axes)]),
                    shape=tuple(self.shape[a] for a in axes))

    T = property(transpose)

    def sum(self, axis=None):
        """Sum over ``axis`` (an int or tuple; None: all), a dense array."""
        axes = range(self.ndim) if axis is None else \
            {a % self.ndim for a in ((axis,) if np.ndim(axis) == 0 else axis)}
        kept = [k for k in range(self.ndim) if k not in axes]
        if not kept:
            return self.data.sum()
        out = jnp.zeros(tuple(self.shape[k] for k in kept), self.dtype)
        return out.at[tuple(self.indices[:, k] for k in kept)].add(self.data)

    def __matmul__(self, other):
        """sparse @ dense: each stored entry (i..., k) adds data * other[k] to row i...."""
        if isinstance(other, BCOO):
            other = other.todense()
        other = jnp.asarray(other)
        if self.shape[-1] != other.shape[0]:
            raise ValueError(f"BCOO matmul: shapes {self.shape} and {other.shape} do not "
                             f"contract ({self.shape[-1]} != {other.shape[0]})")
        picked = other[self.indices[:, -1]]
        contrib = self.data.reshape((-1,) + (1,) * (other.ndim - 1)) * picked
        out = jnp.zeros(self.shape[:-1] + other.shape[1:], contrib.dtype)
        if self.ndim == 1:
            return contrib.sum(0)
        return out.at[tuple(self.indices[:, k] for k in range(self.ndim - 1))].add(contrib)

    def __rmatmul__(self, other):
        """dense @ sparse (a 2-D sparse matrix): entry (k, j) adds other[..., k] * data
        to column j."""
        other = jnp.asarray(other)
        if self.ndim != 2 or other.shape[-1] != self.shape[0]:
            raise ValueError(f"BCOO matmul: shapes {other.shape} and {self.shape} do not "
                             f"contract (dense @ sparse takes a 2-D sparse matrix)")
        contrib = other[..., self.indices[:, 0]] * self.data
        out = jnp.zeros(other.shape[:-1] + (self.shape[1],), contrib.dtype)
        return out.at[..., self.indices[:, 1]].add(contrib)

    def __neg__(self):
        return BCOO((-self.data, self.indices), shape=self.shape)

    def __mul__(self, scalar):
        if jnp.ndim(scalar) != 0:
            raise TypeError("BCOO * x: fungrad's BCOO multiplies by scalars only; use "
                            "M.todense() * x for a dense product")
        return BCOO((self.data * scalar, self.indices), shape=self.shape)

    __rmul__ = __mul__


def todense(arr):
    """The dense form of a BCOO (other arrays are returned as they are)."""
    return arr.todense() if isinstance(arr, BCOO) else arr


def bcoo_fromdense(mat, *, nse=None, index_dtype=np.int32):
    return BCOO.fromdense(mat, nse=nse, index_dtype=index_dtype)


def bcoo_todense(mat: BCOO):
    return mat.todense()
