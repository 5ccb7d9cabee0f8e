"""fungrad: JAX's function transformations in pure Python on NumPy."""
from fungrad import core, tree_util, lax
from fungrad.api import (make_jaxpr, eval_shape, ShapeDtypeStruct, jvp, vjp, linearize,
                         linear_transpose, grad, value_and_grad, jacfwd, jacrev, jacobian, hessian,
                         vmap, stop_gradient)
from fungrad.jitting import jit
from fungrad.export import export
from fungrad.custom_derivatives import custom_jvp, custom_vjp
from fungrad import ad_checkpoint
from fungrad.ad_checkpoint import checkpoint, remat, checkpoint_policies
from fungrad.core import float0, Array, UnexpectedTracerError, ConcretizationTypeError
from fungrad import numpy
from fungrad import random, optim, nn, scipy, implicit, ode, tree, flatten_util, extend

__version__ = "0.1.0"
