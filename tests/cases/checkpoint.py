"""Cases for checkpoint (remat) and checkpoint_name: the generic tests check
values, jit, vmap and derivatives (orders 1-2, forward and reverse) through them."""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad.ad_checkpoint import checkpoint_name
from tests.harness import Arg, Case

P = fungrad.checkpoint_policies
# complex draws with |Im| small: tanh has poles at ±iπ/2
C = dict(dtype=("float64", "complex128"), imag=(-0.2, 0.2))


def _two_layers(policy):
    @fungrad.checkpoint
    def inner(w, h):
        return fnp.tanh(checkpoint_name(h * w, "pre"))

    @fungrad.checkpoint(policy=policy)
    def outer(w, h):
        return fnp.sin(inner(w, h)) * h
    return lambda w, h: fnp.sum(outer(w, h) ** 2)


def _two_layers_ref(w, h):
    return np.sum((np.sin(np.tanh(h * w)) * h) ** 2)


def _matmul_layer(W, x):
    return fungrad.checkpoint(lambda W, x: fnp.tanh(x @ W), policy=P.dots_saveable)(W, x)


CASES = [
    Case("checkpoint_nothing_saveable", _two_layers(None), _two_layers_ref,
         [Arg((), **C), Arg("any", **C)], prims=("checkpoint", "name")),
    Case("checkpoint_save_names", _two_layers(P.save_only_these_names("pre")), _two_layers_ref,
         [Arg(()), Arg("any")], prims=("checkpoint", "name")),
    Case("checkpoint_everything_saveable", _two_layers(P.everything_saveable), _two_layers_ref,
         [Arg(()), Arg("any")], prims=("checkpoint",)),
    Case("checkpoint_dots_saveable", _matmul_layer, lambda W, x: np.tanh(x @ W),
         [Arg((3, 3), low=-0.5, high=0.5, **C), Arg((2, 3), **C)], prims=("checkpoint",)),
]
