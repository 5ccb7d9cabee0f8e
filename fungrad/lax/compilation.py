"""``jax.lax``'s directives to the compiler, with their meaning on NumPy:
``optimization_barrier`` (a primitive: values pass through unchanged, and
no optimisation pass looks through it), ``with_sharding_constraint`` (one
device: the values unchanged), ``platform_dependent`` (the ``cpu`` branch) and
``composite`` (the decomposition is the function)."""
from __future__ import annotations

import functools

from fungrad.core import Primitive, ShapedArray
from fungrad.interpreters.ad import Zero, deflinear
from fungrad.interpreters.lowering import Source
from fungrad.lax.utils import as_operand, def_lowering
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["optimization_barrier", "with_sharding_constraint", "platform_dependent",
           "composite", "optimization_barrier_p"]


# --- optimization_barrier -------------------------------------------------------
# The identity on any number of operands.  The passes (CSE, constant folding,
# forwarding) know no rule for it, so a computation is not merged with, folded
# into or moved across its copy on the other side of the barrier.  Linear: its
# JVP and its transpose are barriers on the tangents and on the cotangents, as
# in JAX.

def _barrier_transpose(cts, *operands):
    live = [ct for ct in cts if type(ct) is not Zero]
    through = iter(optimization_barrier_p.bind(*live) if live else ())
    return [ct if type(ct) is Zero else next(through) for ct in cts]


def _barrier_lowering(args):
    return Source("(" + "".join(f"{a}, " for a in args) + ")")


optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_impl(lambda *xs: list(xs))
optimization_barrier_p.def_abstract_eval(
    lambda *avals: [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals])
deflinear(optimization_barrier_p, _barrier_transpose)
optimization_barrier_p.batch = lambda axis_size, vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))
def_lowering(optimization_barrier_p, _barrier_lowering)


def optimization_barrier(operand, /):
    """``operand`` (a pytree of arrays) unchanged, behind a barrier that no
    optimisation of ``jit`` crosses (``jax.lax.optimization_barrier``)."""
    leaves, tree = tree_flatten(operand)
    outs = optimization_barrier_p.bind(*[as_operand(x) for x in leaves])
    return tree_unflatten(tree, list(outs))


# --- the sharding and platform directives ----------------------------------------

def with_sharding_constraint(x, shardings):
    """``x`` unchanged (``jax.lax.with_sharding_constraint``): fungrad runs on one
    device per process and does not propagate shardings, so there is nothing
    to constrain; the values and their transformations are those of ``x``."""
    return x


def platform_dependent(*args, default=None, **per_platform):
    """The branch for this platform applied to ``args``
    (``jax.lax.platform_dependent``): ``cpu=`` if given, else ``default``.
    Branches for other platforms (``cuda``, ``rocm``, ``tpu``) are never
    traced."""
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise NotImplementedError(
            f"platform_dependent: no branch for the platform 'cpu' (given: "
            f"{', '.join(sorted(per_platform)) or 'none'}) and no default; pass cpu=... "
            "or default=...")
    return branch(*args)


def composite(decomposition, name, version=0):
    """``decomposition`` as a named composite (``jax.lax.composite``, used as
    ``@partial(composite, name="my.op")``).  XLA can replace a composite by a
    kernel of that name; NumPy has none, so the function is its decomposition,
    transformed like any other code.  Keyword arguments are static attributes
    in JAX; here they are passed to the decomposition unchanged."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"composite: name must be a non-empty string, got {name!r}")

    @functools.wraps(decomposition)
    def composite_fn(*args, **kwargs):
        return decomposition(*args, **kwargs)
    composite_fn.composite_name, composite_fn.composite_version = name, int(version)
    return composite_fn
