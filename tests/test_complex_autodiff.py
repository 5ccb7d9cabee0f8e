"""Complex numbers under the transformations, with JAX's conventions.

* ``jvp`` of f: C -> C is the real-linear map of the 2x2 real Jacobian
  (holomorphic or not); ``vjp`` pulls a cotangent back with the plain
  (unconjugated) transpose, so ``grad`` of a real-valued f of z = x + iy is
  ``∂f/∂x - i ∂f/∂y`` (for |z|²: 2·conj(z)), of z's dtype;
* a complex-valued output needs ``holomorphic=True`` (grad, jacrev), which
  gives f'(z) and needs complex inputs; jacfwd takes complex inputs only with
  ``holomorphic=True``;
* ``check_grads`` perturbs complex inputs along complex directions.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, jvp, vjp, jacfwd, jacrev, hessian, linearize, value_and_grad
from fungrad.test_util import check_grads

finite = st.floats(-2.0, 2.0, allow_nan=False)
complexes = st.builds(complex, finite, finite)


def _real_fd_gradient(f, z, h=1e-6):
    """∂f/∂x - i ∂f/∂y by central differences (JAX's grad of real f)."""
    dx = (f(z + h) - f(z - h)) / (2 * h)
    dy = (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    return dx - 1j * dy


def _loss(z):
    """A real-valued, non-holomorphic function of a complex scalar."""
    return fnp.abs(fnp.sin(z)) ** 2 + fnp.real(z ** 3) - fnp.imag(fnp.exp(z) * fnp.conj(z))


# ----------------------------------------------------------------------------
# grad of real-valued functions of complex inputs
# ----------------------------------------------------------------------------

def test_grad_of_squared_modulus_is_twice_the_conjugate():
    # the example of JAX's "Complex numbers and differentiation" page
    f = lambda z: fnp.real(z) ** 2 + fnp.imag(z) ** 2
    assert grad(f)(3.0 + 4j) == 6 - 8j
    for dtype in (np.complex64, np.complex128):
        z = np.asarray(0.5 - 1.5j, dtype)
        g = grad(lambda z: fnp.abs(z) ** 2)(z)
        assert g.dtype == dtype
        np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-6)


@settings(max_examples=20)
@given(complexes)
def test_grad_is_d_dx_minus_i_d_dy(z):
    z = np.complex128(z)
    want = _real_fd_gradient(lambda w: float(_loss(w)), z)
    np.testing.assert_allclose(grad(_loss)(z), want, rtol=1e-6, atol=1e-6)


def test_real_function_with_complex_intermediates_has_real_gradient():
    f = lambda x: fnp.real(fnp.exp(1j * x) * (2 - 1j))
    g = grad(f)(0.7)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, -2 * np.sin(0.7) + np.cos(0.7), rtol=1e-14)
    g32 = grad(f)(np.float32(0.7))
    assert g32.dtype == np.float32


def test_value_and_grad_pytree_of_complex_and_real():
    def f(p):
        return fnp.sum(fnp.abs(p["z"] * p["w"]) ** 2) + p["s"] ** 2
    p = {"z": np.array([1 + 1j, 2 - 1j]), "w": np.array([0.5j, 1.0 + 0j]), "s": 3.0}
    val, g = value_and_grad(f)(p)
    np.testing.assert_allclose(val, np.sum(np.abs(p["z"] * p["w"]) ** 2) + 9)
    np.testing.assert_allclose(g["z"], 2 * np.conj(p["z"]) * np.abs(p["w"]) ** 2)
    np.testing.assert_allclose(g["w"], 2 * np.conj(p["w"]) * np.abs(p["z"]) ** 2)
    assert g["s"] == 6.0 and g["z"].dtype == np.complex128


# ----------------------------------------------------------------------------
# holomorphic=True
# ----------------------------------------------------------------------------

@settings(max_examples=20)
@given(complexes)
def test_holomorphic_grad_is_the_complex_derivative(z):
    z = np.complex128(z)
    f = lambda z: fnp.sin(z) * fnp.exp(z) + z ** 3
    want = np.cos(z) * np.exp(z) + np.sin(z) * np.exp(z) + 3 * z ** 2
    np.testing.assert_allclose(grad(f, holomorphic=True)(z), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jvp(f, (z,), (1.0 + 0j,))[1], want, rtol=1e-12, atol=1e-12)


def test_holomorphic_grad_of_non_holomorphic_function_discards_the_imaginary_part():
    # JAX's documented example: conj is not holomorphic; the result is the
    # derivative of Re f, pulled back with the cotangent 1
    assert grad(fnp.conj, holomorphic=True)(3.0 + 4j) == 1.0


def test_holomorphic_jacobians_and_hessian():
    z = np.array([0.3 + 0.2j, -1.0 + 0.5j, 0.1 - 2j])
    f = lambda z: fnp.sin(z) * z[0]
    want = np.diag(np.cos(z) * z[0])
    want[:, 0] += np.sin(z)
    for jac in (jacfwd, jacrev):
        j = jac(f, holomorphic=True)(z)
        assert j.dtype == np.complex128
        np.testing.assert_allclose(j, want, rtol=1e-13, atol=1e-14)
    h = hessian(lambda z: fnp.sum(z ** 3), holomorphic=True)(z)
    np.testing.assert_allclose(h, np.diag(6 * z), rtol=1e-13)


def test_jacfwd_of_real_input_complex_output():
    j = jacfwd(lambda x: fnp.exp(1j * x))(np.array([0.1, 0.2]))
    assert j.dtype == np.complex128
    np.testing.assert_allclose(j, np.diag(1j * np.exp(1j * np.array([0.1, 0.2]))))


# ----------------------------------------------------------------------------
# jvp, vjp, linearize: the real-linear maps of the 2x2 Jacobians
# ----------------------------------------------------------------------------

def _cookbook_function(a, b, c, d):
    """f(x + iy) = (a x + b y) + i (c x + d y), JAX's cookbook check."""
    return lambda z: (a * fnp.real(z) + b * fnp.imag(z)) + 1j * (c * fnp.real(z) + d * fnp.imag(z))


@settings(max_examples=15)
@given(st.lists(finite, min_size=6, max_size=6))
def test_jvp_and_vjp_follow_the_real_jacobian(coeffs):
    a, b, c, d, p, q = coeffs
    f = _cookbook_function(a, b, c, d)
    z = np.complex128(0.3 - 0.8j)
    _, t_out = jvp(f, (z,), (np.complex128(p + 1j * q),))
    np.testing.assert_allclose(t_out, (a * p + b * q) + 1j * (c * p + d * q), atol=1e-12)
    _, pullback = vjp(f, z)
    (ct,) = pullback(np.complex128(p + 1j * q))
    # cotangent p + iq: [p, -q] J [1, -i]^T
    want = (a * p - c * q) - 1j * (b * p - d * q)
    np.testing.assert_allclose(ct, want, atol=1e-12)


def test_linearize_equals_jvp_for_complex_function():
    f = lambda z: fnp.exp(z) * fnp.conj(z) + fnp.abs(z)
    z, t = np.array([1 + 2j, -0.5 + 0.1j]), np.array([0.3 - 1j, 2 + 0.5j])
    out, f_jvp = linearize(f, z)
    np.testing.assert_allclose(out, f(z))
    np.testing.assert_allclose(f_jvp(t), jvp(f, (z,), (t,))[1], rtol=1e-14)


def test_linear_transpose_of_complex_maps_is_the_plain_transpose():
    # JAX's convention: the transpose of z -> A z is u -> Aᵀ u (not Aᴴ u), and
    # that of conj is conj: <u, L z> = <Lᵀ u, z> for the bilinear Re Σ u·v
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    u = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    z = np.zeros(2, complex)
    (t,) = fungrad.linear_transpose(lambda z: a @ z, z)(u)
    np.testing.assert_allclose(t, a.T @ u, rtol=1e-14)
    (t,) = fungrad.linear_transpose(lambda z: a @ fnp.conj(z), z)(u)
    np.testing.assert_allclose(t, np.conj(a.T @ u), rtol=1e-14)
    (t,) = fungrad.linear_transpose(lambda x: a @ x, np.zeros(2))(u)   # real input
    assert t.dtype == np.float64
    np.testing.assert_allclose(t, np.real(a.T @ u), rtol=1e-14)


def test_check_grads_on_complex_functions():
    z = np.array([0.5 + 1j, -1.0 + 0.3j, 2 - 0.5j])
    for f in (fnp.sin, fnp.conj, fnp.abs, lambda z: fnp.exp(z) * fnp.conj(z),
              lambda z: fnp.cumprod(z) / (1 + fnp.abs(z) ** 2), lambda z: fnp.real(z) * z):
        check_grads(f, (z,), order=2)
    check_grads(lambda x: fnp.exp(1j * x), (np.array([0.2, 1.0]),), order=2)  # R -> C
    check_grads(lambda z: fnp.real(z * z), (z.astype(np.complex64),), order=1)


def test_check_grads_catches_a_rule_wrong_in_the_imaginary_direction():
    # conj with the JVP of the identity: right along real directions only, so
    # a check that perturbed only real parts would pass it
    wrong = fungrad.custom_jvp(lambda z: fnp.conj(z))
    wrong.defjvp(lambda primals, tangents: (fnp.conj(primals[0]), tangents[0]))
    with pytest.raises(AssertionError):
        check_grads(wrong, (np.array([1 + 1j, 2 - 1j]),), order=1, modes=("fwd",))


# ----------------------------------------------------------------------------
# vmap and jit of all of them
# ----------------------------------------------------------------------------

def test_vmap_and_jit_of_complex_gradients():
    zs = np.array([0.5 + 1j, -1.0 + 0.3j, 2 - 0.5j, 0.1 + 0.1j])
    g = grad(_loss)
    loop = np.stack([g(z) for z in zs])
    np.testing.assert_allclose(fungrad.vmap(g)(zs), loop, rtol=1e-13)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(g))(zs), loop, rtol=1e-13)
    np.testing.assert_allclose(fungrad.vmap(fungrad.jit(g))(zs), loop, rtol=1e-13)
    h = grad(lambda z: fnp.sin(z) * z, holomorphic=True)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(h))(zs),
                               np.sin(zs) + zs * np.cos(zs), rtol=1e-13)
    jac = fungrad.jit(jacrev(lambda z: fnp.exp(z) * z[0], holomorphic=True))
    np.testing.assert_allclose(jac(zs), jacfwd(lambda z: fnp.exp(z) * z[0], holomorphic=True)(zs),
                               rtol=1e-13)
    _, pullback = vjp(fungrad.jit(lambda z: fnp.exp(z) * fnp.conj(z)), zs)
    _, pullback_eager = vjp(lambda z: fnp.exp(z) * fnp.conj(z), zs)
    ct = np.array([1 - 1j, 2j, 0.5, -1 + 0j])
    np.testing.assert_allclose(pullback(ct)[0], pullback_eager(ct)[0], rtol=1e-13)
    # jvp and linearize under jit and vmap
    f = lambda z: fnp.exp(z) * fnp.conj(z) + fnp.abs(z)
    ts = np.array([0.3 - 1j, 2 + 0.5j, 1j, -1 + 0j])
    want = np.stack([jvp(f, (z,), (t,))[1] for z, t in zip(zs, ts)])
    jvp_fn = lambda z, t: jvp(f, (z,), (t,))[1]
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(jvp_fn))(zs, ts), want, rtol=1e-13)
    np.testing.assert_allclose(fungrad.vmap(lambda z, t: linearize(f, z)[1](t))(zs, ts), want,
                               rtol=1e-13)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------

def test_grad_of_complex_output_needs_holomorphic_or_the_real_part():
    for transform in (grad, jacrev):
        with pytest.raises(TypeError, match=r"complex128.*holomorphic=True.*real part"):
            transform(lambda z: z ** 2)(np.complex128(1 + 1j))


def test_holomorphic_needs_complex_inputs_and_outputs():
    for transform in (grad, jacfwd, jacrev):
        with pytest.raises(TypeError, match=r"holomorphic=True requires inputs with complex "
                                            r"dtype.*float64"):
            transform(lambda x: x ** 2, holomorphic=True)(1.0)
    for transform in (grad, jacfwd, jacrev):
        with pytest.raises(TypeError, match=r"holomorphic=True requires outputs with complex "
                                            r"dtype, but got float64"):
            transform(fnp.abs, holomorphic=True)(np.complex128(1 + 1j))


def test_jacfwd_of_complex_input_needs_holomorphic():
    with pytest.raises(TypeError, match=r"jacfwd requires real-valued inputs.*complex128.*"
                                        r"holomorphic=True.*jvp"):
        jacfwd(fnp.abs)(np.ones(2, complex))


def test_grad_of_integer_output_points_to_vjp():
    with pytest.raises(TypeError, match=r"real-valued outputs.*int64.*vjp"):
        grad(lambda x: fnp.round(x).astype(int))(1.0)


# ----------------------------------------------------------------------------
# Functions JAX defines only for real numbers
# ----------------------------------------------------------------------------

import fungrad.scipy.special as fsp  # noqa: E402
from fungrad import lax  # noqa: E402

_Z = np.array([1.0 + 1.0j, 0.5 - 2.0j])

_REAL_ONLY_SPECIAL = [
    ("erf", (_Z,)), ("erfc", (_Z,)), ("erfinv", (_Z,)), ("gammaln", (_Z,)), ("digamma", (_Z,)),
    ("ndtr", (_Z,)), ("log_ndtr", (_Z,)), ("entr", (_Z,)), ("gamma", (_Z,)),
    ("gammasgn", (_Z,)), ("gammainc", (2.0, _Z)), ("gammaincc", (_Z, 1.0)),
    ("betainc", (1.0, 2.0, _Z)), ("betaln", (_Z, 1.0)), ("beta", (1.0, _Z)),
    ("multigammaln", (_Z, 2)), ("polygamma", (1, _Z)), ("zeta", (_Z, 1.0)), ("i0", (_Z,)),
    ("i0e", (_Z,)), ("i1", (_Z,)), ("i1e", (_Z,)), ("ndtri", (_Z,)), ("rel_entr", (_Z, 1.0)),
    ("kl_div", (1.0, _Z)), ("poch", (_Z, 2.0)), ("factorial", (_Z,)),
]


@pytest.mark.parametrize("name, args", _REAL_ONLY_SPECIAL, ids=[n for n, _ in _REAL_ONLY_SPECIAL])
def test_real_only_special_functions_reject_complex_input_by_name(name, args):
    with pytest.raises(TypeError, match=rf"scipy\.special\.{name} is defined for real inputs "
                                        r"only.*complex128.*real part"):
        getattr(fsp, name)(*args)
    with pytest.raises(TypeError, match=rf"scipy\.special\.{name} .*complex128"):
        fungrad.jit(lambda *a: getattr(fsp, name)(*a))(*args)   # under tracing too


@pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma,
                                lax.cbrt, lax.floor, lax.ceil, lax.round, lax.is_finite,
                                lambda z: lax.atan2(z, z), lambda z: lax.rem(z, z),
                                lambda z: lax.nextafter(z, z), lambda z: lax.polygamma(z, z),
                                lambda z: lax.lt(z, z), lambda z: lax.ge(z, z)])
def test_real_only_lax_primitives_reject_complex_input(fn):
    with pytest.raises(TypeError, match=r"lax\.\w+ requires (integer or )?real "
                                        r"(floating-point|\(ordered\)) arguments, got complex128"):
        fn(_Z)
    with pytest.raises(TypeError, match=r"lax\.\w+ requires .*real .*complex128"):
        fungrad.make_jaxpr(fn)(_Z)


@pytest.mark.parametrize("name", ["cbrt", "floor", "ceil", "trunc", "fabs", "deg2rad",
                                  "logaddexp", "arctan2", "hypot", "fmod", "heaviside"])
def test_real_only_numpy_functions_reject_complex_input_as_numpy(name):
    fn = getattr(fnp, name)
    nargs = getattr(np, name).nin
    with pytest.raises(TypeError, match=rf"{name} .*complex128"):
        fn(*([_Z] * nargs))
