"""``fungrad.experimental.hijax`` (``jax.experimental.hijax``): primitives
defined by subclassing ``HiPrimitive`` run their methods as rules under every
transformation (checked against closed forms), a declared Effect keeps an
equation alive through jit's dead-code elimination, and value types of one's
own (``register_hitype``) work eagerly and raise clearly under
transformations."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad.experimental import hijax as hjx
from fungrad.extend.core import Effect

finite = st.floats(-10, 10, allow_nan=False)


class Cube(hjx.HiPrimitive):
    """x -> x**3, with JAX's hijax rule signatures."""

    def impl(self, x):
        return x ** 3

    def abstract_eval(self, x_aval):
        return x_aval, set()

    def jvp(self, primals, tangents):
        (x,), (t,) = primals, tangents
        return cube_p.bind(x), 3 * x ** 2 * hjx.instantiate_zeros(t)


cube_p = Cube("hijax_test_cube")


class Scale(hjx.HiPrimitive):
    """x -> c * x, linear: its jvp applies it to the tangent, so reverse mode
    needs its transpose."""

    def to_lojax(self, x, *, c):            # the expansion into ordinary operations
        return fnp.multiply(x, c)

    def abstract_eval(self, x_aval, *, c):
        return x_aval, set()

    def jvp(self, primals, tangents, *, c):
        return scale_p.bind(primals[0], c=c), scale_p.bind(tangents[0], c=c)

    def transpose(self, ct, x, *, c):
        assert hjx.is_undefined_primal(x)
        return [scale_p.bind(ct, c=c)]


scale_p = Scale("hijax_test_scale")


@given(finite)
def test_rules_run_under_eager_jit_grad_and_jvp(x):
    f = lambda x: scale_p.bind(cube_p.bind(x), c=2.0)
    assert isinstance(cube_p.bind(x), fungrad.Array)       # eager results are Arrays
    assert float(f(x)) == pytest.approx(2 * x ** 3, rel=1e-12, abs=1e-12)
    assert float(fungrad.jit(f)(x)) == pytest.approx(2 * x ** 3, rel=1e-12, abs=1e-12)
    assert float(fungrad.grad(f)(x)) == pytest.approx(6 * x ** 2, rel=1e-12, abs=1e-12)
    assert float(fungrad.jit(fungrad.grad(f))(x)) == pytest.approx(6 * x ** 2, rel=1e-12,
                                                                  abs=1e-12)
    _, t = fungrad.jvp(f, (x,), (1.0,))
    assert float(t) == pytest.approx(6 * x ** 2, rel=1e-12, abs=1e-12)


def test_a_missing_rule_names_the_primitive():
    with pytest.raises(NotImplementedError, match="hijax_test_cube.*batch"):
        fungrad.vmap(cube_p.bind)(fnp.ones(3))


class Logged(Effect):
    pass


CALLS = []


class Log(hjx.HiPrimitive):
    """Records its operand (a side effect), declared with an Effect."""

    def impl(self, x):
        CALLS.append(np.asarray(x).copy())
        return x

    def abstract_eval(self, x_aval):
        return x_aval, {Logged()}


log_p = Log("hijax_test_log")


def test_an_effect_survives_dead_code_elimination():
    hjx.control_flow_allowed_effects.add_type(Logged)
    assert hjx.control_flow_allowed_effects.contains(Logged())

    @fungrad.jit
    def f(x):
        log_p.bind(x * 2)             # result unused: kept only because of its effect
        return x + 1

    CALLS.clear()
    np.testing.assert_array_equal(f(fnp.arange(3.0)), [1.0, 2.0, 3.0])
    assert len(CALLS) == 1 and np.array_equal(CALLS[0], [0.0, 2.0, 4.0])


class Box:
    """A mutable value of a type of one's own."""

    def __init__(self, value):
        self.value = value

    def cur_qdd(self):
        return fungrad.typeof(self.value)


class BoxTy(hjx.MutableHiType):
    def __init__(self, inner):
        self.inner = inner

    def __eq__(self, other):
        return isinstance(other, BoxTy) and other.inner == self.inner

    def __hash__(self):
        return hash(self.inner)


hjx.register_hitype(Box, lambda box: BoxTy(fungrad.typeof(box.value)))


class BoxGet(hjx.HiPrimitive):
    def impl(self, box):
        return box.value

    def abstract_eval(self, box_ty):
        return box_ty.inner, set()


box_get_p = BoxGet("hijax_test_box_get")


def test_hi_types_work_eagerly():
    box = Box(fnp.arange(3.0))
    assert fungrad.typeof(box) == BoxTy(fungrad.core.ShapedArray((3,), np.float64))
    np.testing.assert_array_equal(box_get_p.bind(box), [0.0, 1.0, 2.0])
    assert hjx.cur_qdd(box) == fungrad.core.ShapedArray((3,), np.float64)


def test_hi_types_under_transformations_raise_clearly():
    box = Box(fnp.arange(3.0))
    with pytest.raises(NotImplementedError, match="hijax_test_box_get.*jit.*eagerly only"):
        fungrad.jit(lambda x: box_get_p.bind(box) + x)(1.0)
    with pytest.raises(NotImplementedError, match="eagerly only"):
        fungrad.jit(lambda b: b)(box)
    with pytest.raises(NotImplementedError, match="cur_qdd"):
        fungrad.jit(lambda x: hjx.cur_qdd(box) and x)(1.0)


def test_hitype_methods_a_subclass_must_define_say_so():
    class Incomplete(hjx.HiType):
        pass
    with pytest.raises(NotImplementedError, match="to_tangent_aval"):
        Incomplete().to_tangent_aval()
