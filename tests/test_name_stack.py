"""Name stacks (fungrad/name_stack.py): the scope names staged equations
record, ``eqn.source_info.name_stack`` as JAX's, from ``named_scope`` and
``named_call``; relative inside ``jit``; inherited by derived equations."""
import threading

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import name_stack


def names(closed):
    return [(e.primitive.name, str(e.source_info.name_stack)) for e in closed.jaxpr.eqns]


def scoped(x):
    with fungrad.named_scope("outer"):
        y = fnp.sin(x)
        with fungrad.named_scope("inner"):
            z = y * 2.0
    return z + 1.0


def test_equations_record_the_scopes_open_when_they_were_staged():
    assert names(fungrad.make_jaxpr(scoped)(1.0)) == [
        ("sin", "outer"), ("mul", "outer/inner"), ("add", "")]
    stack = fungrad.make_jaxpr(scoped)(1.0).jaxpr.eqns[1].source_info.name_stack
    assert list(stack) == ["outer", "inner"] and len(stack) == 2
    assert stack.extend("more") == name_stack.NameStack(("outer", "inner", "more"))


def test_names_change_nothing_that_is_computed():
    x = np.linspace(-2, 2, 7)
    plain = lambda v: fnp.sin(v) * 2.0 + 1.0
    np.testing.assert_array_equal(fungrad.vmap(scoped)(x), fungrad.vmap(plain)(x))
    np.testing.assert_array_equal(fungrad.jit(fungrad.grad(scoped))(0.3),
                                  fungrad.jit(fungrad.grad(plain))(0.3))


def test_derived_equations_keep_the_names_of_the_equation_they_come_from():
    recorded = names(fungrad.make_jaxpr(fungrad.grad(scoped))(1.0))
    # the backward pass runs outside every scope: its equations (the
    # transposes of the two multiplications) keep their primal's names
    assert recorded[-2:] == [("mul", "outer/inner"), ("mul", "outer")]
    assert ("cos", "outer") in recorded


def test_a_jit_body_has_names_relative_to_the_jit_equation():
    inner = fungrad.jit(scoped)

    def outer(x):
        with fungrad.named_scope("model"):
            return inner(x) * 3.0
    (call, mul) = fungrad.make_jaxpr(outer)(1.0).jaxpr.eqns
    assert str(call.source_info.name_stack) == "model" and str(mul.source_info.name_stack) == "model"
    body = call.params["jaxpr"]
    assert names(body) == [("sin", "outer"), ("mul", "outer/inner"), ("add", "")]


def test_a_jit_traced_in_one_scope_is_reused_in_another():
    traces = []

    def f(x):
        traces.append(1)
        with fungrad.named_scope("f"):
            return x * 2.0
    jf = fungrad.jit(f)
    with fungrad.named_scope("a"):
        jf(1.0)
    with fungrad.named_scope("b"):
        jf(2.0)
    assert len(traces) == 1


def test_named_call_names_each_call():
    double = fungrad.named_call(lambda x: x * 2.0, name="double")
    assert names(fungrad.make_jaxpr(lambda x: double(x) + 1.0)(1.0)) == [
        ("mul", "double"), ("add", "")]


def test_the_stack_is_restored_after_an_error_and_is_per_thread():
    with pytest.raises(ZeroDivisionError):
        with fungrad.named_scope("failing"):
            raise ZeroDivisionError
    assert name_stack.current() == ()
    seen = []
    with fungrad.named_scope("main thread"):
        worker = threading.Thread(target=lambda: seen.append(name_stack.current()))
        worker.start()
        worker.join()
    assert seen == [()]


def test_a_name_that_is_not_a_str_is_refused():
    with pytest.raises(TypeError, match="must be a str"):
        fungrad.named_scope(3)
