"""``fungrad.ref``: mutable array references (``jax.ref``; also ``jax.new_ref``,
``jax.Ref``, ``jax.freeze``).

A ``Ref`` holds an array that can be replaced in place::

    r = fungrad.new_ref(jnp.arange(5.0))
    r[1:3] = jnp.array([7.0, 8.0])      # ref[idx] = value
    r[...]                               # read: Array([0., 7., 8., 3., 4.])
    fungrad.freeze(r)                    # its final value

As in JAX, a write must give the value the exact shape and dtype of what it
replaces (a Python scalar takes the ref's dtype); no broadcasting.

Under transformations, without effects in jaxprs: a Ref always holds its
current value, which while something is traced may be a tracer; a read indexes
it, a write replaces it (``.at[idx].set``).  So a function whose Refs are its
own (made inside it) is ordinary traced code: ``grad``, ``vmap``, ``jit`` and
the loops need nothing more.  A Ref from outside is taken over by the
innermost ``jit`` or loop body being traced, on its first use there
(``RefScope``):

* ``jit``: Ref arguments (pytree leaves, part of the signature by shape and
  dtype) and Refs it closes over become inputs of the compiled program (their
  values at each call) and, when written, outputs written back into them after
  each call (``JitRefs``); a jitted function without Refs runs as before.
* ``scan``/``fori_loop``/``while_loop`` bodies: the Refs they use are threaded
  through the carry (read before the loop, written after it; the body is
  traced again with them).
* ``vmap``: a Ref argument mapped by ``in_axes`` is mapped over its value and
  its new value written back; ``make_jaxpr``/``eval_shape`` leave Refs as they
  were.
* ``custom_vjp``: Ref arguments and residuals reach the rules as themselves
  (JAX's plumbing Refs written by a bwd rule).

JAX's restrictions raise as JAX's do: returning a Ref from ``jit`` or a loop
body, passing one Ref twice (or passing and closing over it), ``freeze``
outside the Ref's creation scope, ``vmap`` writing a batched value into a Ref
it closes over, writing a differentiated value into a Ref made outside the
differentiated function (use ``stop_gradient``), ``grad`` with respect to a
Ref.  Not supported: writing a Ref from outside in a ``cond`` branch,
``checkpoint`` or a ``custom_jvp`` rule (``NotImplementedError`` saying so);
``jax.vjp`` with respect to a Ref (its pullback's ``with_refs``, adding value
arguments' gradients into Refs, works: ``fungrad.api.VJPFunction``).
"""
from fungrad.lax.state import (AbstractRef, Ref, addupdate, empty_ref, free_ref, freeze,
                               get, new_ref, set, swap)

__all__ = ["AbstractRef", "Ref", "new_ref", "empty_ref", "free_ref", "freeze", "get", "set",
           "swap", "addupdate"]
