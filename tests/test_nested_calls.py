"""Every higher-order primitive called twice inside one outer jit, with different
operands and different Python-scalar arguments, equals eager evaluation; and
stacks of nested calls under transformations.

A jaxpr called twice is spliced (or emitted) twice by the code generator: the
two calls must stay two computations (a nested jit once returned the second
call's result for both).
"""
from __future__ import annotations

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax


# one jitted function, one checkpointed function, called twice: the same
# staged jaxpr object appears in two equations
_jitted = fungrad.jit(lambda v, k: v * k + fnp.sin(v))
_checkpointed = fungrad.checkpoint(lambda v, k: fnp.tanh(v) * k)


def _jit_call(x, s):
    return _jitted(x, s)


def _cond_call(x, s):
    return lax.cond(s > 2.5, lambda v: v * s, lambda v: v - s, x)


def _scan_call(x, s):
    return lax.scan(lambda c, _: (c * 0.5 + s, c), x, None, length=3)[0]


def _while_call(x, s):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * s), (0, x))[1]


@fungrad.custom_jvp
def _cj(v, k):
    return v * k


@_cj.defjvp
def _cj_jvp(primals, tangents):
    (v, k), (tv, tk) = primals, tangents
    return _cj(v, k), tv * k + v * tk


def _custom_jvp_call(x, s):
    return _cj(x, s * fnp.ones_like(x))


@fungrad.custom_vjp
def _cv(v, k):
    return v * k


_cv.defvjp(lambda v, k: (v * k, (v, k)), lambda res, g: (g * res[1], g * res[0]))


def _custom_vjp_call(x, s):
    return _cv(x, s * fnp.ones_like(x))


def _checkpoint_call(x, s):
    return _checkpointed(x, s)


CALLS = {"jit": _jit_call, "cond": _cond_call, "scan": _scan_call, "while": _while_call,
         "custom_jvp": _custom_jvp_call, "custom_vjp": _custom_vjp_call,
         "checkpoint": _checkpoint_call}
X = np.array([0.3, -1.2, 2.0])


def _twice(call):
    return lambda x: (call(x, 2.0), call(x * 10.0, 3.0), call(x, 3.0))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_called_twice_inside_jit_equals_eager(name):
    f = _twice(CALLS[name])
    eager = f(X)
    jitted = fungrad.jit(f)(X)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j, e, rtol=1e-14)
    assert not np.allclose(eager[0], eager[2]), "the test must tell the calls apart"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_called_twice_under_transformations(name):
    call = CALLS[name]
    loss = lambda x: fnp.sum(call(x, 2.0) * call(x, 3.0))
    eager = fungrad.grad(loss)(X)
    for how, got in [("jit(grad)", fungrad.jit(fungrad.grad(loss))(X)),
                     ("grad(jit)", fungrad.grad(fungrad.jit(loss))(X)),
                     ("jit(vmap(grad))", fungrad.jit(fungrad.vmap(fungrad.grad(loss)))(
                         np.stack([X, 2 * X]))[0])]:
        np.testing.assert_allclose(got, eager, rtol=1e-12, err_msg=how)


def test_nested_call_stacks():
    inner = fungrad.jit(lambda v, k: fnp.sin(v) * k)
    middle = fungrad.jit(lambda v: inner(v, 2.0) + inner(v * 2, 3.0))
    outer = fungrad.jit(lambda v: middle(v) * middle(v + 1.0))
    eager = lambda v: ((np.sin(v) * 2 + np.sin(2 * v) * 3)
                       * (np.sin(v + 1) * 2 + np.sin(2 * v + 2) * 3))
    np.testing.assert_allclose(outer(X), eager(X), rtol=1e-14)
    g = fungrad.jit(fungrad.grad(lambda v: fnp.sum(outer(v))))(X)
    np.testing.assert_allclose(g, fungrad.grad(lambda v: fnp.sum(eager_f(v)))(X), rtol=1e-12)
    h = fungrad.jit(fungrad.vmap(fungrad.grad(lambda v: fnp.sum(outer(v)))))(np.stack([X, -X]))
    np.testing.assert_allclose(h[1], fungrad.grad(lambda v: fnp.sum(eager_f(v)))(-X), rtol=1e-12)


def eager_f(v):
    return ((fnp.sin(v) * 2 + fnp.sin(2 * v) * 3)
            * (fnp.sin(v + 1) * 2 + fnp.sin(2 * v + 2) * 3))
