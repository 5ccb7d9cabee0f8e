"""Cases for custom_jvp: the generic tests differentiate through the user's rule."""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from tests.harness import Arg, Case


@fungrad.custom_jvp
def softplus(x):
    return fnp.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + fnp.exp(-x))


@fungrad.custom_jvp
def scaled_norm(x, y):
    return fnp.sqrt(fnp.sum(x * x)) * y


scaled_norm.defjvps(lambda g, ans, x, y: fnp.sum(x * g) / fnp.sqrt(fnp.sum(x * x)) * y,
                    lambda g, ans, x, y: fnp.sqrt(fnp.sum(x * x)) * g)


CASES = [
    Case("custom_jvp_softplus", softplus, lambda x: np.logaddexp(x, 0.0), [Arg("any")],
         prims=("custom_jvp_call",)),
    Case("custom_jvp_defjvps", scaled_norm, lambda x, y: np.sqrt(np.sum(x * x)) * y,
         [Arg("vec", low=0.5, high=2.0), Arg(())], prims=("custom_jvp_call",)),
]


@fungrad.custom_vjp
def clipped_sin(x):
    return fnp.sin(x)


def _clipped_sin_fwd(x):
    return clipped_sin(x), fnp.cos(x)


def _clipped_sin_bwd(cos_x, g):
    # the true derivative, written by hand (so finite differences agree)
    return (g * cos_x,)


clipped_sin.defvjp(_clipped_sin_fwd, _clipped_sin_bwd)

CASES += [
    # complex too: bwd's g * cos(x) is JAX's convention (the plain transpose)
    Case("custom_vjp_sin", clipped_sin, np.sin, [Arg("any", ("float64", "complex128"))],
         prims=("custom_vjp_call", "custom_lin")),
]


from fungrad.custom_batching import custom_vmap


@custom_vmap
def vmapped_tanh_scale(x, y):
    return fnp.tanh(x) * y


@vmapped_tanh_scale.def_vmap
def _vmapped_tanh_scale_rule(axis_size, in_batched, xs, ys):
    # the same function on the stacked lanes (x a vector, y a scalar per lane)
    ys = fnp.expand_dims(ys, 1) if in_batched[1] else ys
    return fnp.tanh(xs) * ys, any(in_batched)


CASES += [
    # forward mode only: custom_vmap has no reverse-mode derivative (as in JAX)
    Case("custom_vmap_tanh", vmapped_tanh_scale, lambda x, y: np.tanh(x) * y,
         [Arg("vec"), Arg(())], prims=("custom_vmap_call",), modes=("fwd",), np_fun=False),
]
