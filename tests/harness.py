"""The shared description of test cases that the generic tests walk.

Every primitive and every ``fungrad.numpy`` function is described by one or
more ``Case``s in ``tests/cases/*.py`` (a module-level list ``CASES``).
``tests/test_generic.py`` runs every case through the same property tests:

* values: eager ``fun`` equals NumPy's ``ref`` on hypothesis-drawn inputs;
* staging: ``eval_jaxpr(make_jaxpr(fun))`` equals eager, and the jaxpr's
  declared output avals equal the shapes/dtypes actually computed;
* derivatives: ``check_grads`` (central differences against jvp and vjp,
  orders 1 and 2, and the transpose identity) when ``grad_order > 0``;
* vmap: ``vmap(fun, in_axes)`` equals a stacked Python loop, for every
  choice of mapped arguments and axis positions.

Write a case as::

    Case("sin", lambda x: lax.sin(x), np.sin, [Arg()], prims=("sin",))
    Case("div", lax.div, np.true_divide, [Arg(), Arg("bcast", avoid=(0.0,))],
         prims=("div",))

``fun`` is called with the drawn arrays only; close over static parameters
(``lambda x: lax.reduce_sum(x, (0,))``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np



@dataclasses.dataclass(frozen=True)
class Arg:
    """How to draw one array argument.

    shape: a fixed tuple, or a family drawn by hypothesis:
        "any"   - rank 0..3, sizes 0..4 (size-0 included)   [first "any" is the base]
        "nonempty" - rank 0..3, sizes 1..4
        "same"  - the base argument's shape
        "bcast" - a shape that broadcasts with the base shape (NumPy rules)
        "vec", "mat", "sqmat" - rank 1 / rank 2 / square rank 2 with sizes 1..4
    dtype: a dtype name, or a tuple of names drawn from; "same": the dtype
        drawn for the first argument (operands that must share a dtype, such
        as a lax binary op's or a solve's, drawn real or complex together).
    low, high: value range (integers: inclusive range); for complex dtypes the
        range of the real part, and of the imaginary part unless ``imag`` is given.
    imag: (low, high) of the imaginary part of complex draws (keeps them off
        branch cuts and poles on the imaginary axis, e.g. atan's, tanh's).
    avoid: points the values keep at least ``margin`` away from (singular points,
        kinks such as 0 for abs, ties).
    diff: False for arguments never differentiated (indices, predicates).
    unique: draw distinct values (sort, max: avoids ties in derivatives).
    make: optional ``make(rng, shape, dtype) -> ndarray`` for structured inputs
        (SPD matrices, permutations, valid index arrays); ``rng`` is a
        np.random.Generator seeded by hypothesis.
    """
    shape: tuple | str = "any"
    dtype: str | tuple = "float64"
    low: float = -3.0
    high: float = 3.0
    imag: tuple | None = None
    avoid: tuple = ()
    margin: float = 0.1
    diff: bool = True
    unique: bool = False
    make: Callable | None = None


@dataclasses.dataclass(frozen=True)
class Case:
    """One function under test and its NumPy reference.

    name: unique id (shown in test ids).
    fun: the fungrad function of the drawn arrays.
    ref: the NumPy function of the same arrays (None: values not compared, e.g.
        decompositions with sign ambiguity; then give ``check`` instead).
    args: one ``Arg`` per positional argument.
    prims: names of the primitives this case is written for (documentation;
        coverage is measured by tests/prim_coverage.py, and the registry test checks
        that each declared primitive is really bound).
    grad_order: derivative order checked (0: not differentiable).
    modes: autodiff modes checked, subset of ("fwd", "rev").
    vmap: whether to test vmap against a loop.
    rtol, atol: value tolerances (derivative tolerances are check_grads').
    grad_rtol, grad_atol, eps: check_grads tolerances and finite-difference step.
    check: optional ``check(out, args)`` asserting properties of the output
        when there is no ``ref`` (e.g. Q @ R == A).
    np_fun: the function spelled with NumPy's own functions, run on tracers by
        the generic suite (NEP 13/18 dispatch, see tests/numpy_twins.py); None:
        derived from ``fun``; False: no NumPy twin (say why next to the case).
    """
    name: str
    fun: Callable
    ref: Callable | None
    args: Sequence[Arg] = (Arg(),)
    prims: tuple = ()
    grad_order: int = 2
    modes: tuple = ("fwd", "rev")
    vmap: bool = True
    rtol: float = 1e-7
    atol: float = 1e-10
    grad_rtol: float | None = None
    grad_atol: float | None = None
    eps: float | None = None
    check: Callable | None = None
    np_fun: Callable | bool | None = None


# ----------------------------------------------------------------------------
# References in jax.numpy's dtypes
# ----------------------------------------------------------------------------
# JAX 0.10.2's inexact counterparts of bool and the integers
# (jax._src.dtypes._dtype_to_inexact): what sin, true_divide, mean... make of them
JAX_INEXACT = {np.dtype(k): np.dtype(v) for k, v in [
    ("bool", "float32"), ("uint8", "float32"), ("int8", "float32"), ("uint16", "float32"),
    ("int16", "float32"), ("uint32", "float32"), ("int32", "float32"),
    ("uint64", "float64"), ("int64", "float64")]}


def jax_promoted(ref: Callable) -> Callable:
    """``ref`` (NumPy's function of arrays) computed in jax.numpy's dtypes: the
    array operands first converted to their common dtype by JAX's lattice
    (``fnp.result_type``, checked against JAX's own table cell by cell in
    tests/test_promotion.py); then a result NumPy gives another dtype of the
    same family takes JAX's: bool/integer operands made inexact give
    ``JAX_INEXACT`` (NumPy: float16/float64), bools made integer give int32
    (NumPy: int8), inexact operands keep their dtype (NumPy's float_power: float64)."""
    import fungrad.numpy as fnp
    from fungrad.tree_util import tree_map

    def run(*args):
        common = fnp.result_type(*args)
        out = ref(*[a.astype(common) if isinstance(a, (np.ndarray, np.generic)) else a
                     for a in args])
        if common.kind in "biu" and any(o.dtype.kind in "fc" for o in _arrays(out)):
            # computed again from JAX's inexact operands (NumPy's float16 loses digits)
            inexact = JAX_INEXACT[common]
            out = ref(*[a.astype(inexact) if isinstance(a, (np.ndarray, np.generic)) else a
                         for a in args])
            common = inexact

        def jax_dtype(o):
            o = np.asarray(o)
            if o.dtype == common or o.dtype == np.bool_:
                return o
            if common.kind in "biu" and o.dtype.kind in "fc":
                return o.astype(JAX_INEXACT[common] if o.dtype.kind == "f"
                                else np.result_type(JAX_INEXACT[common], np.complex64))
            if common == np.bool_ and o.dtype.kind in "iu":
                return o.astype(np.int32)
            if common.kind in "fc" and o.dtype.kind == common.kind:
                return o.astype(common)
            return o
        return tree_map(jax_dtype, out)
    run.__name__ = getattr(ref, "__name__", "ref")
    return run


def _arrays(out):
    from fungrad.tree_util import tree_flatten
    return [np.asarray(o) for o in tree_flatten(out)[0]]
