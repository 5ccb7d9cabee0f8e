"""The JVP rules emit the minimal tangent program: the linear jaxprs of a few
representative functions have exactly the equations they need (one ``mul`` by
a primal coefficient per unary op; negations and constants folded into the
coefficient, never applied to the tangent), so a regression in a rule shows
up here as an extra equation (and as extra work in every eager gradient)."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp


def _seed(x):
    u = x * x + fnp.exp(x * x)
    return fnp.sqrt(u) + fnp.cos(u)


CASES = [
    # name, function, point, the linear program's primitives
    ("sin", fnp.sin, 0.3, ["mul"]),
    ("cos", fnp.cos, 0.3, ["mul"]),                 # not neg(mul(t, sin x))
    ("square", lambda x: x ** 2, 0.3, ["mul"]),     # not via integer_pow[y=1] x
    ("cube", lambda x: x ** 3, 0.3, ["mul"]),
    ("reciprocal", lambda x: 1 / x, 0.3, ["mul"]),  # not neg(div(mul(t, ans), x))
    ("arccos", fnp.arccos, 0.3, ["mul"]),
    ("exp2", fnp.exp2, 0.3, ["mul"]),
    ("tanh", fnp.tanh, 0.3, ["mul"]),
    ("log", fnp.log, 0.3, ["div"]),
    ("chain step", lambda x: fnp.sin(x) * 0.9 + x * 0.1, np.ones(3),
     ["mul", "mul", "mul", "add"]),
    # x * x is the product rule twice (mul, mul, add), exp one mul, sqrt and cos
    # one each, the two sums one add each
    ("seed function", _seed, 0.7, ["mul", "mul", "add", "mul", "mul", "add", "mul", "add",
                                   "mul", "mul", "add"]),
]


@pytest.mark.parametrize("name,fun,x,want", CASES, ids=[c[0] for c in CASES])
def test_linear_program_is_minimal(name, fun, x, want):
    _, f_jvp = fungrad.linearize(fun, x)
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == want


def test_no_negation_in_the_backward_pass_of_cos():
    jaxpr = fungrad.make_jaxpr(fungrad.grad(fnp.cos))(0.3).jaxpr
    # the sign belongs to the primal coefficient -sin(x): one neg, of sin x
    negs = [e for e in jaxpr.eqns if e.primitive.name == "neg"]
    producers = {v: e for e in jaxpr.eqns for v in e.outvars}
    assert len(negs) == 1 and producers[negs[0].inputs[0]].primitive.name == "sin"
