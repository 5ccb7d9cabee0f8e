"""``jax._src.api``: JAX's private module behind the transformations of ``jax``.

Who needs it: JAX's "Primitives in JAX" tutorial (``from jax._src import api``,
then ``api.jit``, ``api.grad``, ``api.jvp``, ``api.vmap``). The names are
fungrad's own transformations, the same objects as ``fungrad.jit`` and so on.
"""
from fungrad.ad_checkpoint import checkpoint
from fungrad.api import (eval_shape, grad, hessian, jacfwd, jacobian, jacrev, jvp, linearize,
                         make_jaxpr, value_and_grad, vjp, vmap)
from fungrad.jitting import jit
from fungrad.pmapping import pmap
from fungrad.sharding import block_until_ready, device_get, device_put

__all__ = ["block_until_ready", "checkpoint", "device_get", "device_put", "eval_shape", "grad",
           "hessian", "jacfwd", "jacobian", "jacrev", "jit", "jvp", "linearize", "make_jaxpr",
           "pmap", "value_and_grad", "vjp", "vmap"]
