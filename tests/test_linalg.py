"""Focused tests for products and linear algebra (fungrad/lax/linalg.py,
fungrad/numpy/_products.py, fungrad/numpy/linalg.py): closed-form
derivatives, einsum against NumPy over a table of subscripts, error messages,
JAX's conventions, second-order derivatives of decompositions, lowering."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from fungrad.interpreters import codegen
from fungrad.test_util import check_grads

LA = fnp.linalg


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def well_conditioned(n, *batch, seed=0):
    return rand(*batch, n, n, seed=seed) + (n + 1) * np.eye(n)


def spd(n, *batch, seed=0):
    x = rand(*batch, n, n, seed=seed)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def spread_symmetric(n, seed=0):
    q, _ = np.linalg.qr(rand(n, n, seed=seed))
    return (q * (np.arange(n) - n / 2.0)) @ q.T


# ----------------------------------------------------------------------------
# Closed-form derivatives
# ----------------------------------------------------------------------------

def test_grad_det_is_det_times_inverse_transpose():
    a = well_conditioned(4, seed=1)
    want = np.linalg.det(a) * np.linalg.inv(a).T
    np.testing.assert_allclose(fungrad.grad(LA.det)(a), want, rtol=1e-10)


def test_grad_logabsdet_is_inverse_transpose():
    a = well_conditioned(4, seed=2)
    a[0] *= -1                                       # a negative determinant
    assert np.linalg.det(a) < 0
    g = fungrad.grad(lambda x: LA.slogdet(x).logabsdet)(a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-10, atol=1e-12)
    sign, _ = LA.slogdet(a)
    assert sign == np.sign(np.linalg.det(a))


def test_grad_trace_of_inverse():
    # d tr(A⁻¹) = -tr(A⁻¹ dA A⁻¹)  =>  ∇ = -(A⁻²)ᵀ
    a = well_conditioned(3, seed=3)
    inv = np.linalg.inv(a)
    g = fungrad.grad(lambda x: fnp.trace(LA.inv(x)))(a)
    np.testing.assert_allclose(g, -(inv @ inv).T, rtol=1e-10)


def test_grad_of_solve_matches_closed_form():
    a, b = well_conditioned(3, seed=4), rand(3, seed=5)
    x = np.linalg.solve(a, b)
    ga, gb = fungrad.grad(lambda a, b: fnp.sum(LA.solve(a, b)), argnums=(0, 1))(a, b)
    lam = np.linalg.solve(a.T, np.ones(3))
    np.testing.assert_allclose(gb, lam, rtol=1e-10)
    np.testing.assert_allclose(ga, -np.outer(lam, x), rtol=1e-10)


def test_det_of_singular_matrix_has_finite_value_and_gradient():
    rank_n_minus_1 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    assert abs(float(LA.det(rank_n_minus_1))) < 1e-12
    g = fungrad.grad(LA.det)(rank_n_minus_1)
    assert np.all(np.isfinite(g))
    # the gradient is the transposed adjugate (cofactor matrix)
    cof = np.array([[np.linalg.det(np.delete(np.delete(rank_n_minus_1, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(g, cof, atol=1e-10)
    rank_1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    np.testing.assert_allclose(fungrad.grad(LA.det)(rank_1), np.zeros((3, 3)), atol=1e-10)


def test_det_hessian_matches_finite_differences():
    a = well_conditioned(3, seed=6)
    check_grads(LA.det, (a,), order=2)
    h = fungrad.hessian(LA.det)(a)
    assert h.shape == (3, 3, 3, 3)
    # d²det/dA_ij dA_kl is the signed (n-2)-minor: zero when i == k or j == l
    np.testing.assert_allclose(h[0, 1, 0, 2], 0.0, atol=1e-10)


# ----------------------------------------------------------------------------
# einsum against NumPy
# ----------------------------------------------------------------------------

EINSUM_TABLE = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i,i", [(3,), (3,)]),
    ("i,j", [(2,), (3,)]), ("i,j->", [(2,), (3,)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("...ij,...jk", [(1, 2, 3), (5, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("iij->ij", [(2, 2, 3)]), ("i...i", [(2, 3, 2)]), ("...", [(2, 3)]),
    ("ij,ij->", [(2, 1), (1, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ijk,ikl,ilm->ijm", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("ab,bc,cd,de,ef->af", [(2, 3), (3, 9), (9, 2), (2, 7), (7, 2)]),
    ("i,i,i->", [(4,), (4,), (4,)]), ("ijk,jkl", [(2, 3, 4), (3, 4, 5)]), ("aA", [(2, 3)]),
    ("Aa", [(2, 3)]), ("ii,jj->ij", [(3, 3), (2, 2)]), ("iji->j", [(2, 3, 2)]),
    ("i,->i", [(3,), ()]), (",", [(), ()]), ("ij,kl->ijkl", [(2, 3), (1, 2)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]), ("i...,i...->...", [(3, 2), (3, 2)]),
    ("ab,ab,ab->b", [(0, 2), (0, 2), (0, 2)]), ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("ijkl->lkji", [(1, 2, 3, 4)]), ("ii...->...", [(3, 3, 2)]), ("ba,ac,cb->", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("optimize", ["auto", False, True, "optimal"])
@pytest.mark.parametrize("spec,shapes", EINSUM_TABLE, ids=[s for s, _ in EINSUM_TABLE])
def test_einsum_matches_numpy(spec, shapes, optimize):
    ops = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    got = fnp.einsum(spec, *ops, optimize=optimize)
    want = np.einsum(spec, *ops)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("spec,shapes", EINSUM_TABLE[:24], ids=[s for s, _ in EINSUM_TABLE[:24]])
def test_einsum_grads(spec, shapes):
    ops = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    check_grads(lambda *o: fnp.einsum(spec, *o), tuple(ops), order=1)


def test_einsum_interleaved_and_explicit_path():
    a, b, c = rand(2, 3), rand(3, 4, seed=1), rand(4, 5, seed=2)
    np.testing.assert_allclose(fnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    np.testing.assert_allclose(fnp.einsum(a, [Ellipsis, 1], np.ones(3), [1]), a.sum(1))
    path = ["einsum_path", (1, 2), (0, 1)]
    np.testing.assert_allclose(fnp.einsum("ij,jk,kl", a, b, c, optimize=path), a @ b @ c)


def test_einsum_greedy_order_contracts_the_cheap_pair_first():
    a, b, c = rand(2, 30), rand(30, 40), rand(40, 2)
    path, _ = fnp.einsum_path("ab,bc,cd->ad", a, b, c)
    assert path == ["einsum_path", (1, 2), (0, 1)]
    jaxpr = fungrad.make_jaxpr(lambda *o: fnp.einsum("ab,bc,cd->ad", *o))(a, b, c)
    prims = [e.primitive.name for e in jaxpr.eqns]
    assert prims == ["dot_general", "dot_general"]
    assert jaxpr.eqns[0].outvars[0].aval.shape == (30, 2)


def test_einsum_trace_uses_no_dense_mask():
    jaxpr = fungrad.make_jaxpr(lambda x: fnp.einsum("ii", x))(rand(3, 3))
    assert "dot_general" not in {e.primitive.name for e in jaxpr.eqns}


@pytest.mark.parametrize("spec,shapes,match", [
    ("ij,jk", [(2, 3), (4, 5)], "inconsistent sizes"),
    ("ij", [(2,)], "rank 1"),
    ("ij->k", [(2, 3)], "does not appear"),
    ("i$", [(2, 2)], "invalid subscript"),
    ("ij,j", [(2, 3)], "operands were given"),
    ("ij->ii", [(2, 3)], "repeated"),
    ("...i->i", [(2, 3)], r"add '\.\.\.'"),
])
def test_einsum_errors(spec, shapes, match):
    with pytest.raises(ValueError, match=match):
        fnp.einsum(spec, *[rand(*s) for s in shapes])


# ----------------------------------------------------------------------------
# matmul and friends: NumPy semantics and errors
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (4,)),
                                   ((5, 2, 3), (4, 3, 2))])
def test_matmul_shape_errors_name_both_shapes(sa, sb):
    with pytest.raises(ValueError) as err:
        fnp.matmul(rand(*sa), rand(*sb))
    assert str(sa) in str(err.value) and str(sb) in str(err.value)


def test_matmul_scalar_operand_error():
    with pytest.raises(ValueError, match="scalar"):
        fnp.matmul(2.0, rand(3))


def test_matmul_operator_on_tracers_and_promotion():
    a, b = rand(2, 3), np.arange(3)
    out = fungrad.jit(lambda x, y: x @ y)(a, b)
    np.testing.assert_allclose(out, a @ b)
    assert fnp.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.int8)).dtype == np.float32
    assert fnp.matmul(np.ones((2, 2), np.int32), np.ones((2,), np.int32)).dtype == np.int32


def test_matmul_with_shared_matrix_is_one_dot_general():
    jaxpr = fungrad.make_jaxpr(fnp.matmul)(rand(5, 2, 3), rand(3, 4))
    assert [e.primitive.name for e in jaxpr.eqns] == ["dot_general"]


def test_dot_inner_tensordot_errors():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4,\) not aligned"):
        fnp.dot(rand(2, 3), rand(4))
    with pytest.raises(ValueError, match="not aligned"):
        fnp.inner(rand(2, 3), rand(2, 4))
    with pytest.raises(ValueError, match="shape mismatch"):
        fnp.tensordot(rand(2, 3), rand(2, 3), 1)
    with pytest.raises(ValueError, match="different sizes"):
        fnp.vdot(rand(2, 3), rand(5))
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        fnp.cross(rand(4), rand(4))


def test_dot_general_errors():
    with pytest.raises(TypeError, match="same dtype"):
        lax.dot_general(np.ones((2, 3), np.float32), np.ones((3, 2)), (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="contracting dims must have equal sizes"):
        lax.dot_general(rand(2, 3), rand(4, 2), (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="dimension_numbers"):
        lax.dot_general(rand(2, 3), rand(3, 2), ((1,), (0,)))
    with pytest.raises(TypeError, match="distinct axes"):
        lax.dot_general(rand(2, 3), rand(3, 2), (((5,), (0,)), ((), ())))


def test_dot_general_preferred_element_type_and_ints():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    out = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float64)
    assert out.dtype == np.float64
    g = fungrad.grad(lambda x: fnp.sum(lax.dot(x, b, preferred_element_type=np.float64)))(a)
    assert g.dtype == np.float32
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(lax.dot(i, i.T), i @ i.T)


def test_dot_general_accepts_out_sharding():
    """JAX's keyword (flax.nnx's Linear passes it): one device, no effect."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(
        lax.dot_general(a, b, (((1,), (0,)), ((), ())), out_sharding=None), a @ b)


def test_vmap_of_dot_general_folds_the_batch_into_one_matmul():
    a, b = rand(4, 2, 3), rand(3, 5)
    f = fungrad.vmap(lambda x: lax.dot(x, b))
    jaxpr = fungrad.make_jaxpr(f)(a)
    assert [e.primitive.name for e in jaxpr.eqns] == ["dot_general"]
    np.testing.assert_allclose(f(a), a @ b)
    x, ys = rand(2, 3), rand(3, 4, 5)
    g = fungrad.vmap(lambda y: lax.dot(x, y), in_axes=1)
    np.testing.assert_allclose(g(ys), np.stack([x @ ys[:, i] for i in range(4)]))


def test_dot_general_lowering_matches_impl_for_many_layouts():
    layouts = [
        ((3, 4), (4, 2), (((1,), (0,)), ((), ()))),
        ((4, 3), (2, 4), (((0,), (1,)), ((), ()))),
        ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),
        ((2, 3, 4, 5), (5, 2, 4), (((3,), (0,)), ((0, 2), (1, 2)))),
        ((3, 4, 2), (2, 5, 4), (((1, 2), (2, 0)), ((), ()))),
        ((3,), (2,), (((), ()), ((), ()))),
        ((4,), (4,), (((0,), (0,)), ((), ()))),
    ]
    for sa, sb, dn in layouts:
        a, b = rand(*sa), rand(*sb, seed=1)
        closed = fungrad.make_jaxpr(lambda x, y: lax.dot_general(x, y, dn))(a, b)
        compiled = codegen.compile_jaxpr(closed.jaxpr)
        assert "einsum" not in compiled.source and "np.matmul" in compiled.source
        np.testing.assert_allclose(compiled.fn(a, b)[0], lax.dot_general(a, b, dn), rtol=1e-12)


@st.composite
def _dot_problems(draw):
    """Random dot_general: batch, contracting and free dims at random positions."""
    nb, nc, nfl, nfr = (draw(st.integers(0, 2)) for _ in range(4))
    sizes = lambda n: [draw(st.integers(1, 3)) for _ in range(n)]
    b, c, fl, fr = sizes(nb), sizes(nc), sizes(nfl), sizes(nfr)
    lhs_axes = draw(st.permutations([("b", i) for i in range(nb)] + [("c", i) for i in range(nc)]
                                    + [("f", i) for i in range(nfl)]))
    rhs_axes = draw(st.permutations([("b", i) for i in range(nb)] + [("c", i) for i in range(nc)]
                                    + [("g", i) for i in range(nfr)]))
    size = {"b": b, "c": c, "f": fl, "g": fr}
    shape = lambda axes: tuple(size[k][i] for k, i in axes)
    where = lambda axes, kind, n: tuple(axes.index((kind, i)) for i in range(n))
    dn = ((where(lhs_axes, "c", nc), where(rhs_axes, "c", nc)),
          (where(lhs_axes, "b", nb), where(rhs_axes, "b", nb)))
    letters = {("b", i): "bc"[i] for i in range(nb)} | {("c", i): "de"[i] for i in range(nc)} \
        | {("f", i): "fg"[i] for i in range(nfl)} | {("g", i): "hi"[i] for i in range(nfr)}
    free = lambda axes, kind: "".join(letters[a] for a in axes if a[0] == kind)
    spec = ("".join(letters[a] for a in lhs_axes) + "," + "".join(letters[a] for a in rhs_axes)
            + "->" + "bc"[:nb] + free(lhs_axes, "f") + free(rhs_axes, "g"))
    return shape(lhs_axes), shape(rhs_axes), dn, spec


@settings(max_examples=60, deadline=None)
@given(_dot_problems(), st.booleans())
def test_dot_general_plans_against_einsum(problem, transposed_memory):
    # merges-before-transposes and matmul broadcasting over batch dims must give
    # einsum's values for any placement of the dims and any memory order
    sa, sb, dn, spec = problem
    a, b = rand(*sa), rand(*sb, seed=1)
    if transposed_memory:      # same values, reversed memory order
        a, b = a.T.copy().T, b.T.copy().T
    want = np.einsum(spec, a, b)
    f = lambda x, y: lax.dot_general(x, y, dn)
    for got in (f(a, b), fungrad.jit(f)(a, b)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_attention_contractions_lower_to_matmul_on_views():
    # (B, T, H, D) x (B, S, H, D) -> (B, H, T, S) and the projections' weight
    # gradient (B, T, D) x (B, T, E) -> (D, E): no reshape of a transposed view
    q, k = rand(2, 5, 3, 4), rand(2, 6, 3, 4, seed=1)
    x, y = rand(2, 5, 4), rand(2, 5, 3, seed=2)
    for (u, v), dn in (((q, k), (((3,), (3,)), ((0, 2), (0, 2)))),
                       ((x, y), (((0, 1), (0, 1)), ((), ())))):
        closed = fungrad.make_jaxpr(lambda a, b: lax.dot_general(a, b, dn))(u, v)
        src = codegen.compile_jaxpr(closed.jaxpr).source
        assert "np.reshape(np.transpose" not in src, src
        np.testing.assert_allclose(fungrad.jit(lambda a, b: lax.dot_general(a, b, dn))(u, v),
                                   lax.dot_general(u, v, dn), rtol=1e-12)


def test_multi_dot_picks_the_cheap_order():
    a, b, c = rand(10, 100), rand(100, 5, seed=1), rand(5, 50, seed=2)
    jaxpr = fungrad.make_jaxpr(lambda *m: LA.multi_dot(m))(a, b, c)
    first = jaxpr.eqns[0]
    assert first.primitive.name == "dot_general" and first.outvars[0].aval.shape == (10, 5)
    np.testing.assert_allclose(LA.multi_dot([a, b, c]), a @ b @ c, rtol=1e-10)


# ----------------------------------------------------------------------------
# Decompositions: JAX conventions, errors, second-order derivatives
# ----------------------------------------------------------------------------

def test_output_conventions_follow_jax():
    a = rand(4, 3)
    lu_, pivots, perm = lax.linalg.lu(a)
    assert pivots.dtype == np.int32 and perm.dtype == np.int32
    assert pivots.shape == (3,) and perm.shape == (4,)
    v, w = lax.linalg.eigh(spd(3))
    assert v.shape == (3, 3) and w.shape == (3,)
    u, s, vh = lax.linalg.svd(a)
    assert (u.shape, s.shape, vh.shape) == ((4, 4), (3,), (3, 3))
    q, r = lax.linalg.qr(a)                         # full_matrices=True by default, as JAX
    assert q.shape == (4, 4) and r.shape == (4, 3)
    res = LA.eigh(spd(3))
    assert res.eigenvalues.shape == (3,) and res.eigenvectors.shape == (3, 3)


def test_failures_give_nan_or_inf_like_jax_not_exceptions():
    bad = np.stack([spd(3), -np.eye(3)])
    chol = LA.cholesky(bad)
    # (JAX's NaN fill: the lower triangle, zeros above it)
    assert np.all(np.isfinite(chol[0])) and np.all(np.isnan(np.asarray(chol[1])[np.tril_indices(3)]))
    assert np.all(np.asarray(chol[1])[np.triu_indices(3, 1)] == 0)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not np.all(np.isfinite(LA.solve(singular, np.ones(2))))
    assert not np.all(np.isfinite(LA.inv(singular)))
    tri = np.array([[1.0, 0.0], [2.0, 0.0]])
    out = lax.linalg.triangular_solve(tri, np.ones((2, 1)), left_side=True, lower=True)
    assert out[0, 0] == 1.0 and not np.isfinite(out[1, 0])


def test_decomposition_input_errors():
    with pytest.raises(ValueError, match="square"):
        LA.cholesky(rand(2, 3))
    with pytest.raises(ValueError, match="square"):
        LA.det(rand(3))
    with pytest.raises(TypeError, match="cholesky supports float32/float64/complex64/"
                                        "complex128 matrices, got int64"):
        lax.linalg.cholesky(np.eye(2, dtype=np.int64))
    with pytest.raises(TypeError, match="qr supports .* got float16"):
        lax.linalg.qr(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match="incompatible"):
        lax.linalg.triangular_solve(np.eye(3), rand(2, 2), left_side=True)
    with pytest.raises(ValueError, match="mode"):
        LA.qr(rand(3, 3), mode="raw")
    with pytest.raises(ValueError, match="incompatible"):
        LA.solve(np.eye(3), rand(4))
    with pytest.raises(TypeError, match="integer"):
        LA.matrix_power(np.eye(2), 1.5)


def test_unimplemented_derivatives_say_so():
    with pytest.raises(NotImplementedError, match="m >= n"):
        fungrad.jvp(lambda x: lax.linalg.qr(x, full_matrices=False)[1], (rand(2, 3),),
                    (rand(2, 3),))
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        fungrad.jvp(lambda x: lax.linalg.svd(x)[1], (rand(3, 2),), (rand(3, 2),))


def _weighted(x, seed):
    return fnp.sum(np.random.default_rng(seed).uniform(0.5, 1.5, x.shape) * x * x)


SECOND_ORDER = {
    "cholesky_logdet": (lambda a: fnp.sum(fnp.log(fnp.diagonal(LA.cholesky(a)))), spd(3, seed=7)),
    "cholesky_entries": (lambda a: _weighted(LA.cholesky(a), 1), spd(3, 2, seed=8)),
    "eigh_vectors": (lambda a: (lambda w, v: _weighted(v, 2) + fnp.sum(w ** 3))(*LA.eigh(a)),
                     spread_symmetric(4, seed=9)),
    "svd_tall": (lambda a: (lambda u, s, vh: _weighted(u, 3) + _weighted(vh, 4) + fnp.sum(s ** 2))(
        *LA.svd(a, full_matrices=False)), rand(4, 3, seed=10)),
    "svd_wide": (lambda a: (lambda u, s, vh: _weighted(u, 5) + _weighted(vh, 6))(
        *LA.svd(a, full_matrices=False)), rand(2, 4, seed=11)),
    "svdvals": (lambda a: fnp.sum(fnp.sin(LA.svdvals(a))), rand(3, 3, seed=12)),
    "qr": (lambda a: (lambda q, r: _weighted(q, 7) + _weighted(r, 8))(*LA.qr(a)), rand(4, 3, seed=13)),
    "lu": (lambda a: _weighted(lax.linalg.lu(a)[0], 9), well_conditioned(3, seed=14)[::-1]),
    "lu_wide": (lambda a: _weighted(lax.linalg.lu(a)[0], 10), rand(2, 3, seed=15) + np.eye(2, 3) * 4),
    "triangular_solve": (lambda a: _weighted(lax.linalg.triangular_solve(
        a, np.ones((3, 2)), left_side=True, lower=False, transpose_a=True), 11),
        well_conditioned(3, seed=16)),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, well_conditioned(3, seed=17)),
    "pinv": (lambda a: _weighted(LA.pinv(a), 12), rand(3, 2, seed=18)),
    "solve_and_inv": (lambda a: fnp.sum(LA.solve(a, np.arange(3.0)) ** 2) + fnp.trace(LA.inv(a)),
                      well_conditioned(3, seed=19)),
    "norm_nuc": (lambda a: LA.norm(a, "nuc"), rand(3, 4, seed=20)),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_derivatives_against_finite_differences(name):
    f, a = SECOND_ORDER[name]
    check_grads(f, (a,), order=2, rtol=1e-4, atol=1e-5)


def test_hessian_of_eigenvalue_sum_of_squares():
    # sum(w²) = ||A_sym||_F², whose Hessian is known exactly
    a = spread_symmetric(3, seed=21)
    h = fungrad.hessian(lambda x: fnp.sum(LA.eigvalsh(x) ** 2))(a)
    sym = lambda t: (t + t.T) / 2
    e = np.zeros((3, 3))
    e[0, 1] = 1.0
    np.testing.assert_allclose(np.tensordot(h, e, 2), 2 * sym(sym(e)), atol=1e-8)


def test_lu_blocked_path_and_batches():
    a = rand(2, 130, 110, seed=22)
    lu_, piv, perm = lax.linalg.lu(a)
    k = 110
    low = np.tril(lu_, -1)[..., :, :k] + np.eye(130, k)
    up = np.triu(lu_)[..., :k, :]
    np.testing.assert_allclose(low @ up, np.take_along_axis(a, perm[..., :, None], -2), atol=1e-10)
    np.testing.assert_array_equal(lax.linalg.lu_pivots_to_permutation(piv, 130), perm)


def test_vmap_of_triangular_solve_with_shared_matrix_needs_no_broadcast():
    a = well_conditioned(3, seed=23)
    bs = rand(5, 3, 2, seed=24)
    f = fungrad.vmap(lambda b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
    jaxpr = fungrad.make_jaxpr(f)(bs)
    assert "broadcast_in_dim" not in {e.primitive.name for e in jaxpr.eqns}
    want = np.stack([np.linalg.solve(np.tril(a), b) for b in bs])
    np.testing.assert_allclose(f(bs), want, rtol=1e-10)


def test_lstsq_conventions():
    a, b = rand(5, 3, seed=25), rand(5, seed=26)
    x, resid, rank, s = LA.lstsq(a, b)
    xn, rn, rankn, sn = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x, xn, rtol=1e-10)
    assert resid.shape == () and rank == rankn
    np.testing.assert_allclose(resid, rn[0], rtol=1e-10)
    _, resid_np, _, _ = LA.lstsq(a, b, numpy_resid=True)
    assert resid_np.shape == (1,)
    low_rank = np.outer(rand(5), rand(3, seed=1))
    _, resid_np, rank, _ = LA.lstsq(low_rank, b, numpy_resid=True)
    assert rank == 1 and resid_np.shape == (0,)


def test_norm_errors_and_defaults():
    with pytest.raises(ValueError, match="invalid norm order"):
        LA.norm(rand(3, 3), 3)
    with pytest.raises(ValueError, match="improper number of dimensions"):
        LA.norm(rand(2, 2, 2), 1)
    np.testing.assert_allclose(LA.norm(rand(2, 2, 2)), np.linalg.norm(rand(2, 2, 2)))


def test_subset_by_index_slices_eigh_and_svd_as_jax():
    from fungrad import lax
    rng = np.random.default_rng(11)
    a = rng.normal(size=(5, 5))
    a = a + a.T
    v, w = lax.linalg.eigh(a, subset_by_index=(3, 5))          # the two largest
    w_all, v_all = np.linalg.eigh(a)
    np.testing.assert_allclose(w, w_all[3:], rtol=1e-12)
    np.testing.assert_allclose(np.abs(v), np.abs(v_all[:, 3:]), rtol=1e-10)
    g = fungrad.grad(lambda a: lax.linalg.eigh(a, subset_by_index=(4, 5))[1].sum())(a)
    np.testing.assert_allclose(g, np.outer(v_all[:, 4], v_all[:, 4]), rtol=1e-8, atol=1e-12)
    m = rng.normal(size=(5, 3))
    u, s, vh = fnp.linalg.svd(m, full_matrices=False, subset_by_index=(1, 3))
    u_all, s_all, vh_all = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(s, s_all[1:], rtol=1e-12)
    np.testing.assert_allclose(np.abs(u), np.abs(u_all[:, 1:]), rtol=1e-10)
    np.testing.assert_allclose(np.abs(vh), np.abs(vh_all[1:]), rtol=1e-10)
    np.testing.assert_allclose(lax.linalg.svd(m, full_matrices=False, compute_uv=False,
                                              subset_by_index=(0, 1)), s_all[:1], rtol=1e-12)
    with pytest.raises(ValueError, match="full_matrices=False"):
        lax.linalg.svd(m, subset_by_index=(0, 1))
    with pytest.raises(ValueError, match="0 <= start <= end <= 5"):
        lax.linalg.eigh(a, subset_by_index=(2, 7))
    with pytest.raises(TypeError, match="pair of ints"):
        lax.linalg.eigh(a, subset_by_index=2)


# ----------------------------------------------------------------------------
# Complex matrices: JAX's conventions
# ----------------------------------------------------------------------------

def crand(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def hpd(n, seed=0):
    x = crand(n, n, seed=seed)
    return x @ x.conj().T + n * np.eye(n)


def _not_hermitian(n, seed=0):
    """Hermitian positive definite plus garbage above the diagonal and an
    imaginary part on it: what only one triangle's reading ignores."""
    rng = np.random.default_rng(seed + 100)
    garbage = np.triu(crand(n, n, seed=seed + 1), 1) + 0.5j * np.diag(rng.uniform(size=n))
    return hpd(n, seed) + garbage


def test_complex_non_hermitian_input_to_eigh_and_cholesky_reads_one_triangle():
    a = _not_hermitian(4)
    hermitian = (a + a.conj().T) / 2                      # symmetrize_input=True (default)
    np.testing.assert_allclose(lax.linalg.eigh(a)[1], np.linalg.eigvalsh(hermitian), rtol=1e-12)
    np.testing.assert_allclose(lax.linalg.cholesky(a), np.linalg.cholesky(hermitian), rtol=1e-12)
    # symmetrize_input=False: the lower (or upper) triangle, the real part of its diagonal
    lower = np.tril(a, -1) + np.diag(np.diag(a).real)
    lower = lower + np.tril(a, -1).conj().T
    upper = np.triu(a, 1) + np.diag(np.diag(a).real)
    upper = upper + np.triu(a, 1).conj().T
    w_lower = lax.linalg.eigh(a, symmetrize_input=False)[1]
    w_upper = lax.linalg.eigh(a, lower=False, symmetrize_input=False)[1]
    np.testing.assert_allclose(w_lower, np.linalg.eigvalsh(lower), rtol=1e-12)
    np.testing.assert_allclose(w_upper, np.linalg.eigvalsh(upper), rtol=1e-12)
    np.testing.assert_allclose(lax.linalg.cholesky(a, symmetrize_input=False),
                               np.linalg.cholesky(lower), rtol=1e-12)
    # ... and the derivative is that of the function computed: the other
    # triangle and the imaginary diagonal get zero gradient
    g = fungrad.grad(lambda a: fnp.sum(lax.linalg.eigh(a, symmetrize_input=False)[1] ** 3))(a)
    assert np.all(np.triu(g, 1) == 0) and np.all(np.diag(g).imag == 0)
    check_grads(lambda a: lax.linalg.cholesky(a, symmetrize_input=False), (a,), order=1)


def test_complex_output_dtypes_follow_numpy_and_jax():
    a = crand(3, 3).astype(np.complex64)
    v, w = lax.linalg.eigh(a)
    assert v.dtype == np.complex64 and w.dtype == np.float32
    u, s, vh = LA.svd(a)
    assert u.dtype == vh.dtype == np.complex64 and s.dtype == np.float32
    sign, logdet = LA.slogdet(crand(3, 3))
    assert sign.dtype == np.complex128 and logdet.dtype == np.float64
    np.testing.assert_allclose(abs(sign), 1.0, rtol=1e-14)
    np.testing.assert_allclose(sign * np.exp(logdet), np.linalg.det(crand(3, 3)), rtol=1e-12)
    assert LA.norm(crand(4), 0).dtype == np.float64 and LA.norm(crand(3, 3)).dtype == np.float64
    assert LA.eigvalsh(hpd(3)).dtype == np.float64


def test_slogdet_tangent_rotates_the_sign():
    # d log det = tr(A⁻¹ dA): real part to log|det|, imaginary part to sign's phase
    a, da = crand(3, 3, seed=1), crand(3, 3, seed=2)
    (sign, logdet), (dsign, dlogdet) = fungrad.jvp(LA.slogdet, (a,), (da,))
    d = np.trace(np.linalg.solve(a, da))
    np.testing.assert_allclose(dlogdet, d.real, rtol=1e-12)
    np.testing.assert_allclose(dsign, 1j * d.imag * sign, rtol=1e-12)


def test_eigh_eigenvector_tangents_have_jax_phase_gauge():
    a, da = hpd(4, seed=3), crand(4, 4, seed=4)
    da = da + da.conj().T
    (v, w), (dv, dw) = fungrad.jvp(lax.linalg.eigh, (a,), (da,))
    np.testing.assert_allclose(np.diag(v.conj().T @ dv), 0, atol=1e-12)   # v_iᴴ dv_i = 0
    np.testing.assert_allclose(dw, np.diag(v.conj().T @ da @ v).real, rtol=1e-12)
    # the tangent of A = V diag(w) Vᴴ is reproduced whatever the gauge
    recon = dv @ np.diag(w) @ v.conj().T + v @ np.diag(dw) @ v.conj().T
    recon = recon + v @ np.diag(w) @ dv.conj().T
    np.testing.assert_allclose(recon, da, atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 4)])
def test_svd_tangents_reconstruct_and_put_the_phase_on_u(shape):
    a, da = crand(*shape, seed=5), crand(*shape, seed=6)
    (u, s, vh), (du, ds, dvh) = fungrad.jvp(lambda a: LA.svd(a, full_matrices=False), (a,), (da,))
    assert ds.dtype == np.float64
    np.testing.assert_allclose(np.diag(vh @ dvh.conj().T), 0, atol=1e-12)   # V keeps its phase
    recon = du @ np.diag(s) @ vh + u @ np.diag(ds) @ vh + u @ np.diag(s) @ dvh
    np.testing.assert_allclose(recon, da, atol=1e-10)


def test_qr_tangent_keeps_r_diagonal_real():
    a, da = crand(4, 3, seed=7), crand(4, 3, seed=8)
    (q, r), (dq, dr) = fungrad.jvp(lambda a: lax.linalg.qr(a, full_matrices=False), (a,), (da,))
    np.testing.assert_allclose(np.diag(r).imag, 0, atol=1e-14)
    np.testing.assert_allclose(np.diag(dr).imag, 0, atol=1e-12)
    np.testing.assert_allclose(dq @ r + q @ dr, da, atol=1e-12)
    np.testing.assert_allclose(np.tril(dr, -1), 0, atol=1e-12)


def test_complex_lu_pivots_as_lapack():
    # LAPACK picks pivots by |Re| + |Im|: here it prefers row 1 (0.6 + 0.6j,
    # modulus 0.85) to row 0 (1.0), which the modulus would pick
    import scipy.linalg
    a = np.array([[1.0, 1.0], [0.6 + 0.6j, 2.0]])
    packed, pivots, perm = lax.linalg.lu(a)
    assert list(pivots) == [1, 1] and list(perm) == [1, 0]
    lu_ref, piv_ref = scipy.linalg.lu_factor(a)
    np.testing.assert_array_equal(pivots, piv_ref)
    np.testing.assert_allclose(packed, lu_ref, rtol=1e-14)


def test_jax_documentation_example_grad_through_complex_cholesky():
    # "Complex numbers and differentiation": grad(f, holomorphic=True) of a
    # function of a complex Hermitian matrix through cholesky.  holomorphic=True
    # pulls back the cotangent 1, so it equals grad of the real part, which
    # finite differences check entry by entry (∂/∂x - i ∂/∂y).
    A = np.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

    def f(X):
        L = LA.cholesky(X)
        return fnp.sum((L - fnp.sin(L)) ** 2)
    g = fungrad.grad(f, holomorphic=True)(A)
    np.testing.assert_allclose(g, fungrad.grad(lambda X: fnp.real(f(X)))(A), rtol=1e-14)
    h, fd = 1e-6, np.zeros_like(A)
    re_f = lambda X: float(np.real(f(X)))
    for idx in np.ndindex(A.shape):
        e = np.zeros_like(A)
        e[idx] = 1
        fd[idx] = ((re_f(A + h * e) - re_f(A - h * e)) - 1j * (re_f(A + 1j * h * e)
                                                                - re_f(A - 1j * h * e))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_complex_linalg_under_vmap_jit_and_second_order():
    a = np.stack([hpd(3, seed=s) for s in range(3)])
    f = lambda a: fnp.sum(fnp.abs(LA.inv(a) @ LA.cholesky(a)) ** 2) + LA.slogdet(a)[1]
    g = fungrad.grad(f)
    loop = np.stack([g(x) for x in a])
    np.testing.assert_allclose(fungrad.vmap(g)(a), loop, rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(g))(a), loop, rtol=1e-12)
    check_grads(lambda a: LA.svd(a, compute_uv=False) ** 2 + LA.eigvalsh(a @ a.conj().T), (a[0],),
                order=2)


def test_products_and_convolutions_accept_out_sharding():
    """flax.nnx's Conv, Einsum and Embed.attend pass JAX's out_sharding."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(fnp.dot(a, b, out_sharding=None), a @ b)
    np.testing.assert_array_equal(fnp.matmul(a, b, out_sharding=None), a @ b)
    np.testing.assert_array_equal(fnp.tensordot(a, b, 1, out_sharding=None), a @ b)
    np.testing.assert_array_equal(fnp.einsum("ij,jk->ik", a, b, out_sharding=None), a @ b)
    x, w = np.ones((1, 1, 4)), np.ones((1, 1, 2))
    np.testing.assert_array_equal(
        lax.conv_general_dilated(x, w, (1,), "VALID", out_sharding=None),
        lax.conv_general_dilated(x, w, (1,), "VALID"))
