"""Cases for ``fungrad.nn``'s identity, tanh, log1mexp, logmeanexp,
scaled_matmul and scaled_dot_general (compositions: no primitives of their
own). References are NumPy."""
import numpy as np

import fungrad.nn as nn
from tests.harness import Arg, Case


def np_logmeanexp(x, axis=None, where=None, keepdims=False):
    if where is None:
        return np.log(np.mean(np.exp(x), axis=axis, keepdims=keepdims))
    where = np.broadcast_to(where, x.shape)
    return np.log(np.sum(np.exp(x) * where, axis=axis, keepdims=keepdims)
                  / np.sum(where, axis=axis, keepdims=keepdims))


def np_scaled_matmul(a, b, a_scales, b_scales):
    a = a * np.repeat(a_scales, a.shape[-1] // a_scales.shape[-1], axis=-1)
    b = b * np.repeat(b_scales, b.shape[-1] // b_scales.shape[-1], axis=-1)
    return np.einsum("bmk,bnk->bmn", a, b)


MASK = np.array([True, False, True, True])
DOT_NUMBERS = (((2,), (1,)), ((0,), (0,)))

CASES = [
    Case("nn.identity", nn.identity, lambda x: x, [Arg()]),
    Case("nn.tanh", nn.tanh, np.tanh, [Arg()]),
    Case("nn.log1mexp", nn.log1mexp, lambda x: np.log(-np.expm1(-x)),
         [Arg(low=0.05, high=6.0)], rtol=1e-13),
    Case("nn.logmeanexp", nn.logmeanexp, np_logmeanexp, [Arg("nonempty", low=-30, high=30)],
         rtol=1e-12),
    Case("nn.logmeanexp_axis", lambda x: nn.logmeanexp(x, axis=1, keepdims=True),
         lambda x: np_logmeanexp(x, axis=1, keepdims=True), [Arg((3, 4))], rtol=1e-12),
    Case("nn.logmeanexp_where", lambda x: nn.logmeanexp(x, axis=-1, where=MASK),
         lambda x: np_logmeanexp(x, axis=-1, where=MASK), [Arg((2, 4))], rtol=1e-12),
    Case("nn.scaled_matmul",
         lambda a, b, sa, sb: nn.scaled_matmul(a, b, sa, sb, preferred_element_type=np.float64),
         np_scaled_matmul, [Arg((2, 3, 4)), Arg((2, 2, 4)), Arg((2, 3, 2)), Arg((2, 2, 2))],
         rtol=1e-12),
    Case("nn.scaled_dot_general",
         lambda a, b: nn.scaled_dot_general(a, b, DOT_NUMBERS, preferred_element_type=np.float64),
         lambda a, b: np.einsum("bij,bjk->bik", a, b), [Arg((2, 3, 4)), Arg((2, 4, 2))],
         rtol=1e-12, np_fun=False),   # a lax function: NumPy has no twin
]
