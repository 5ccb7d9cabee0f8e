"""Cases for products: lax.dot_general / dot / batch_matmul and the
fungrad.numpy products (matmul, dot, vdot, inner, outer, tensordot, einsum,
kron, cross, vecdot).  See tests/harness.py for the Case/Arg description."""
import numpy as np

import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case

RC = ("float64", "complex128")    # products are complex-linear: real and complex draws


def _dg(dn):
    """A dot_general case body and its np.einsum reference for ``dn``."""
    def fun(x, y):
        return lax.dot_general(x, y, dn)

    def ref(x, y):
        (lc, rc), (lb, rb) = dn
        letters = iter("abcdefghijklmnop")
        lx, ly = [None] * x.ndim, [None] * y.ndim
        for i, j in zip(lb + lc, rb + rc):
            lx[i] = ly[j] = next(letters)
        for labels in (lx, ly):
            for i, lab in enumerate(labels):
                if lab is None:
                    labels[i] = next(letters)
        free = lambda labels, c, b: [labels[i] for i in range(len(labels))
                                     if i not in c and i not in b]
        out = [lx[i] for i in lb] + free(lx, lc, lb) + free(ly, rc, rb)
        return np.einsum(f"{''.join(lx)},{''.join(ly)}->{''.join(out)}", x, y)
    return fun, ref


def _dot_general_case(name, shapes, dn, dtype=RC, **kw):
    fun, ref = _dg(dn)
    return Case(f"lax.dot_general_{name}", fun, ref,
                [Arg(shapes[0], dtype=dtype), Arg(shapes[1], dtype="same")],
                prims=("dot_general",), **kw)


NO_BATCH = ((), ())

DOT_GENERAL_CASES = [
    _dot_general_case("matmul", ((3, 4), (4, 2)), (((1,), (0,)), NO_BATCH)),
    _dot_general_case("matmul_f32", ((3, 4), (4, 2)), (((1,), (0,)), NO_BATCH),
                      dtype="float32", rtol=1e-5, atol=1e-5),
    _dot_general_case("matvec", ((3, 4), (4,)), (((1,), (0,)), NO_BATCH)),
    _dot_general_case("inner", ((4,), (4,)), (((0,), (0,)), NO_BATCH)),
    _dot_general_case("outer", ((3,), (2,)), (((), ()), NO_BATCH)),
    _dot_general_case("scalar_outer", ((), (2, 3)), (((), ()), NO_BATCH)),
    _dot_general_case("transposed_contract", ((4, 3), (2, 4)), (((0,), (1,)), NO_BATCH)),
    _dot_general_case("two_contract", ((3, 4, 2), (2, 5, 4)), (((1, 2), (2, 0)), NO_BATCH)),
    _dot_general_case("batched", ((2, 3, 4), (2, 4, 5)), (((2,), (1,)), ((0,), (0,)))),
    _dot_general_case("batch_middle", ((3, 2, 4), (4, 5, 2)), (((2,), (0,)), ((1,), (2,)))),
    _dot_general_case("two_batch", ((2, 3, 4, 5), (5, 2, 4)), (((3,), (0,)), ((0, 2), (1, 2)))),
    _dot_general_case("batched_dot", ((3, 4), (3, 4)), (((1,), (1,)), ((0,), (0,)))),
    _dot_general_case("empty_contract", ((3, 0), (0, 2)), (((1,), (0,)), NO_BATCH)),
    _dot_general_case("empty_free", ((0, 4), (4, 2)), (((1,), (0,)), NO_BATCH)),
    _dot_general_case("empty_batch", ((0, 2, 3), (0, 3, 1)), (((2,), (1,)), ((0,), (0,)))),
    _dot_general_case("int32", ((3, 4), (4, 2)), (((1,), (0,)), NO_BATCH), dtype="int32",
                      grad_order=0),
]

LAX_CASES = [
    Case("lax.dot_matmat", lax.dot, np.dot, [Arg((2, 3), RC), Arg((3, 4), "same")],
         prims=("dot_general",)),
    Case("lax.dot_vecvec", lax.dot, np.dot, [Arg((3,), RC), Arg((3,), "same")],
         prims=("dot_general",)),
    Case("lax.dot_preferred", lambda x, y: lax.dot(x, y, preferred_element_type=np.float64),
         lambda x, y: np.dot(x.astype(np.float64), y.astype(np.float64)),
         [Arg((2, 3), dtype="float32"), Arg((3,), dtype="float32")],
         prims=("dot_general",), rtol=1e-5, atol=1e-5, grad_order=0),
    Case("lax.batch_matmul", lax.batch_matmul, np.matmul,
         [Arg((2, 3, 4), RC), Arg((2, 4, 2), "same")], prims=("dot_general",)),
]

MATMUL_SHAPES = {
    "vec_vec": ((3,), (3,)),
    "mat_vec": ((2, 3), (3,)),
    "vec_mat": ((3,), (3, 2)),
    "mat_mat": ((2, 3), (3, 4)),
    "stack_mat": ((4, 2, 3), (3, 2)),
    "mat_stack": ((2, 3), (4, 3, 2)),
    "stack_stack": ((2, 2, 3), (2, 3, 4)),
    "broadcast_stacks": ((4, 1, 2, 3), (1, 2, 3, 2)),
    "one_stack": ((1, 2, 3), (3, 3, 2)),
    "stack_vec": ((2, 3, 4), (4,)),
    "empty_batch": ((0, 2, 3), (3, 2)),
    "empty_k": ((2, 0), (0, 3)),
}

MATMUL_CASES = [
    Case(f"numpy.matmul_{name}", fnp.matmul, np.matmul, [Arg(sa, RC), Arg(sb, RC)],
         prims=("dot_general",))
    for name, (sa, sb) in MATMUL_SHAPES.items()
] + [
    Case("numpy.matmul_promote", fnp.matmul, np.matmul,
         [Arg((2, 3), dtype="int32"), Arg((3, 2), RC)], prims=("dot_general",)),
    Case("numpy.matmul_int", fnp.matmul, np.matmul,
         [Arg((2, 3), dtype=("int32", "int64")), Arg((3, 2), dtype="int32")],
         prims=("dot_general",), grad_order=0),
    Case("numpy.matmul_operator", lambda x, y: x @ y if not isinstance(x, np.ndarray)
         else fnp.matmul(x, y), np.matmul, [Arg((2, 3), RC), Arg((3,), RC)],
         prims=("dot_general",)),
]

_EPS3 = np.array([[[0, 0, 0], [0, 0, 1], [0, -1, 0]],
                  [[0, 0, -1], [0, 0, 0], [1, 0, 0]],
                  [[0, 1, 0], [-1, 0, 0], [0, 0, 0]]], float)

NUMPY_CASES = [
    Case("numpy.dot_scalar", fnp.dot, np.dot, [Arg((), RC), Arg("any", RC)], prims=("mul",)),
    Case("numpy.dot_nd_1d", fnp.dot, np.dot, [Arg((2, 3, 4), RC), Arg((4,), RC)],
         prims=("dot_general",)),
    Case("numpy.dot_nd_md", fnp.dot, np.dot, [Arg((2, 3), RC), Arg((2, 3, 4), RC)],
         prims=("dot_general",)),
    Case("numpy.vdot", fnp.vdot, np.vdot, [Arg((2, 3), RC), Arg((3, 2), RC)],
         prims=("dot_general",)),
    Case("numpy.inner", fnp.inner, np.inner, [Arg((2, 3), RC), Arg((4, 3), RC)],
         prims=("dot_general",)),
    Case("numpy.inner_scalar", fnp.inner, np.inner, [Arg("any", RC), Arg((), RC)]),
    Case("numpy.outer", fnp.outer, np.outer, [Arg("any", RC), Arg("any", RC)]),
    Case("numpy.tensordot_int", lambda a, b: fnp.tensordot(a, b, 2),
         lambda a, b: np.tensordot(a, b, 2), [Arg((2, 3, 4), RC), Arg((3, 4, 2), RC)],
         prims=("dot_general",)),
    Case("numpy.tensordot_zero", lambda a, b: fnp.tensordot(a, b, 0),
         lambda a, b: np.tensordot(a, b, 0), [Arg((2, 3), RC), Arg((2,), RC)],
         prims=("dot_general",)),
    Case("numpy.tensordot_pairs", lambda a, b: fnp.tensordot(a, b, ([2, 0], [0, 1])),
         lambda a, b: np.tensordot(a, b, ([2, 0], [0, 1])),
         [Arg((2, 3, 4), RC), Arg((4, 2, 3), RC)],
         prims=("dot_general",)),
    Case("numpy.kron", fnp.kron, np.kron, [Arg("any", RC), Arg("any", RC)]),
    Case("numpy.kron_mixed_rank", fnp.kron, np.kron, [Arg((2, 3), RC), Arg((2, 2, 1), RC)]),
    Case("numpy.cross3", fnp.cross, np.cross, [Arg((4, 3), RC), Arg((3,), RC)],
         prims=("dot_general",)),
    Case("numpy.cross_axis", lambda a, b: fnp.cross(a, b, axisa=0, axisb=0, axisc=0),
         lambda a, b: np.cross(a, b, axisa=0, axisb=0, axisc=0),
         [Arg((3, 2), RC), Arg((3, 2), RC)]),
    Case("numpy.cross_3_with_2", fnp.cross,
         lambda a, b: np.einsum("ijk,...j,...k->...i", _EPS3, a, np.pad(b, [(0, 0)] * (b.ndim - 1) + [(0, 1)])),
         [Arg((2, 3), RC), Arg((2, 2), RC)]),
    Case("numpy.vecdot", fnp.vecdot, lambda a, b: np.sum(np.conj(a) * b, axis=-1),
         [Arg((3, 4), RC), Arg((2, 1, 4), RC)], prims=("dot_general",)),
    Case("numpy.vecdot_axis", lambda a, b: fnp.vecdot(a, b, axis=0),
         lambda a, b: np.sum(np.conj(a) * b, axis=0), [Arg((4, 3), RC), Arg((4, 1), RC)]),
]

EINSUM_SPECS = {
    "matmul": ("ij,jk->ik", [(2, 3), (3, 4)]),
    "implicit": ("ij,jk", [(2, 3), (3, 4)]),
    "trace": ("ii", [(3, 3)]),
    "diag": ("ii->i", [(3, 3)]),
    "transpose_sum": ("ijk->kj", [(2, 3, 4)]),
    "batched": ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    "chain3": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "mixed": ("abc,cd,bd->a", [(2, 3, 4), (4, 2), (3, 2)]),
    "partial_diag": ("iij->ij", [(2, 2, 3)]),
    "broadcast_size1": ("ij,ij->", [(2, 1), (1, 3)]),
    "outer_sum": ("i,j->", [(2,), (3,)]),
    "scalar": (",ij->ij", [(), (2, 3)]),
    "empty": ("ij,jk->ik", [(0, 3), (3, 2)]),
}

EINSUM_CASES = [
    Case(f"numpy.einsum_{name}", (lambda spec: lambda *ops: fnp.einsum(spec, *ops))(spec),
         (lambda spec: lambda *ops: np.einsum(spec, *ops))(spec),
         [Arg(s, RC) for s in shapes], prims=("dot_general",) if len(shapes) > 1 else ())
    for name, (spec, shapes) in EINSUM_SPECS.items()
] + [
    Case("numpy.einsum_no_optimize", lambda a, b, c: fnp.einsum("ij,jk,kl", a, b, c,
                                                                optimize=False),
         lambda a, b, c: np.einsum("ij,jk,kl", a, b, c),
         [Arg((2, 3), RC), Arg((3, 4), RC), Arg((4, 1), RC)]),
    Case("numpy.einsum_interleaved", lambda a, b: fnp.einsum(a, [0, 1], b, [1, 2], [2, 0]),
         lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [2, 0]), [Arg((2, 3), RC), Arg((3, 4), RC)]),
    Case("numpy.einsum_int", lambda a, b: fnp.einsum("ij,j->i", a, b),
         lambda a, b: np.einsum("ij,j->i", a, b), [Arg((2, 3), dtype="int32"),
                                                   Arg((3,), dtype="int32")], grad_order=0),
]

CASES = DOT_GENERAL_CASES + LAX_CASES + MATMUL_CASES + NUMPY_CASES + EINSUM_CASES
