"""cond / switch: semantics, closures, composition with every transform, errors."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import lax, grad, jit, vmap, jvp, hessian
from fungrad.test_util import check_grads


def test_only_the_chosen_branch_runs_in_generated_code():
    calls = []

    def true_branch(x):
        calls.append("true")
        return x * 2.0
    f = jit(lambda p, x: lax.cond(p, true_branch, lambda x: x - 1.0, x))
    assert f(True, 3.0) == 6.0 and f(False, 3.0) == 2.0
    src = f.lower(True, 3.0).source()
    assert "if " in src and "else:" in src
    assert calls == ["true"]       # traced once, run as Python code afterwards


def test_switch_clamps_index_like_jax():
    branches = [lambda x: x, lambda x: x * 10.0, lambda x: x * 100.0]
    assert lax.switch(-5, branches, 1.0) == 1.0
    assert lax.switch(7, branches, 1.0) == 100.0
    assert jit(lambda i: lax.switch(i, branches, 1.0))(1) == 10.0


def test_gradient_through_closed_over_values():
    w = np.array([1.0, 2.0])

    def loss(w, x):
        return lax.cond(x > 0, lambda v: fnp.sum(w * v), lambda v: fnp.sum(w ** 2) * v, x)
    np.testing.assert_allclose(grad(loss)(w, 0.5), [0.5, 0.5])
    np.testing.assert_allclose(grad(loss)(w, -0.5), 2 * w * -0.5)
    np.testing.assert_allclose(grad(loss, argnums=1)(w, -0.5), np.sum(w ** 2))


def test_second_order_and_hessian():
    f = lambda x: lax.cond(x[0] > 0, lambda v: fnp.sum(fnp.sin(v) * v ** 2),
                           lambda v: fnp.prod(v), x)
    for x in (np.array([0.3, -1.2]), np.array([-0.4, 0.9])):
        check_grads(f, (x,), order=2)
        np.testing.assert_allclose(jit(hessian(f))(x), hessian(f)(x), rtol=1e-12)


def test_batched_predicate_selects_per_lane():
    f = lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v * 10.0, x)
    ps, xs = np.array([True, False, True]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(vmap(f)(ps, xs), [2.0, 20.0, 4.0])
    np.testing.assert_allclose(jit(vmap(grad(f, argnums=1)))(ps, xs), [1.0, 10.0, 1.0])


def test_nested_cond_and_jvp():
    def f(x):
        return lax.cond(x > 0, lambda v: lax.cond(v > 1, fnp.exp, fnp.sin, v),
                        lambda v: -v, x)
    for x in (2.0, 0.5, -1.0):
        want = np.exp(x) if x > 1 else np.sin(x) if x > 0 else -x
        dwant = np.exp(x) if x > 1 else np.cos(x) if x > 0 else -1.0
        out, t = jvp(f, (x,), (1.0,))
        np.testing.assert_allclose([out, t, grad(f)(x), jit(grad(f))(x)],
                                   [want, dwant, dwant, dwant], rtol=1e-14)


def test_branch_output_mismatch_shows_both():
    with pytest.raises(TypeError, match=r"false_fun returns.*f64\[3\].*true_fun returns.*f64\[2\]"):
        lax.cond(True, lambda x: x[:2], lambda x: x, np.ones(3))


def test_non_scalar_predicate_suggests_where():
    with pytest.raises(TypeError, match="where"):
        lax.cond(np.array([True, False]), lambda x: x, lambda x: x, 1.0)


def test_export_of_a_program_with_cond(tmp_path):
    from tests.export_check import check_exported
    f = lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)
    check_exported(grad(f), 0.5, tmp_path=tmp_path, name="g", calls=[(0.5,), (-0.5,)])
    assert grad(f)(0.5) == 2.0 and grad(f)(-0.5) == -1.0


# ----------------------------------------------------------------------------
# scan, fori_loop, map
# ----------------------------------------------------------------------------

def _seed5_python(theta):
    x = 1.0
    for _ in range(50):
        x = x + theta * fnp.sin(x)
    return (x - 2.0) ** 2


def _seed5_scan(theta):
    x, _ = lax.scan(lambda x, _: (x + theta * fnp.sin(x), None), 1.0, None, length=50)
    return (x - 2.0) ** 2


def _seed5_fori(theta):
    return (lax.fori_loop(0, 50, lambda i, x: x + theta * fnp.sin(x), 1.0) - 2.0) ** 2


def test_seed5_python_loop_fori_loop_and_scan_agree():
    for f in (_seed5_scan, _seed5_fori):
        np.testing.assert_allclose(f(0.1), _seed5_python(0.1), rtol=1e-14)
        np.testing.assert_allclose(grad(f)(0.1), grad(_seed5_python)(0.1), rtol=1e-13)
        np.testing.assert_allclose(jit(grad(f))(0.1), grad(_seed5_python)(0.1), rtol=1e-13)
        check_grads(f, (0.1,), order=2)


def test_scan_is_a_real_loop_in_generated_code():
    src = jit(grad(_seed5_scan)).lower(0.1).source()
    assert src.count("for ") == 2          # forward loop and the reversed backward loop
    assert len(src.splitlines()) < 60      # not unrolled: 50 steps would be hundreds of lines


def test_scan_pytree_carry_reverse_and_vmap():
    def f(w, xs):
        (h, n), ys = lax.scan(lambda c, x: ((fnp.tanh(c[0] * w + x), c[1] + 1), c[0] * 2.0),
                              (0.0, 0), xs, reverse=True)
        return h + fnp.sum(ys), n
    xs = np.array([0.1, -0.3, 0.5])
    h, n = f(0.7, xs)
    c, ys = 0.0, []
    for x in xs[::-1]:
        ys.append(c * 2.0)
        c = np.tanh(c * 0.7 + x)
    np.testing.assert_allclose(h, c + sum(ys), rtol=1e-14)
    assert n == 3
    ws = np.array([0.2, 0.7])
    np.testing.assert_allclose(vmap(lambda w: grad(lambda v: f(v, xs)[0])(w))(ws),
                               [grad(lambda v: f(v, xs)[0])(w) for w in ws], rtol=1e-13)


def test_scan_carry_change_and_length_errors():
    with pytest.raises(TypeError, match=r"carry leaf 0 from f64\[\] to f64\[2\]"):
        lax.scan(lambda c, x: (c * np.ones(2), x), 0.0, np.ones(3))
    with pytest.raises(ValueError, match="scan length"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4)))
    # traced bounds: a while_loop, differentiable in reverse mode inside jit too
    assert jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0.0))(4) == 6.0
    power = jit(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * x, 1.0))
    assert grad(lambda x: power(3, x))(2.0) == 12.0


def test_fori_loop_with_traced_bounds_reverse_mode_beyond_jax():
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * fnp.cos(c) + 0.1 * i, x)

    def f_py(x, n):
        for i in range(n):
            x = x * np.cos(x) + 0.1 * i
        return x
    for n in (0, 1, 5):
        h = 1e-6
        fd = (f_py(0.3 + h, n) - f_py(0.3 - h, n)) / (2 * h)
        np.testing.assert_allclose(grad(f)(0.3, n), fd, rtol=1e-7, atol=1e-9)
        # the bound is traced under vmap: every lane its own trip count
    ns = np.array([0, 2, 5])
    np.testing.assert_allclose(vmap(grad(f))(np.full(3, 0.3), ns),
                               [grad(f)(0.3, int(n)) for n in ns], rtol=1e-13)


# ----------------------------------------------------------------------------
# while_loop
# ----------------------------------------------------------------------------

def _count_halvings(x):
    return lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2, c[1] + 1), (x, 0))


def test_while_loop_eager_jit_and_vmap_with_per_lane_trip_counts():
    assert _count_halvings(10.0)[1] == 4
    assert jit(_count_halvings)(10.0)[1] == 4
    xs = np.array([0.5, 3.0, 100.0])
    vals, counts = vmap(_count_halvings)(xs)
    np.testing.assert_array_equal(counts, [0, 2, 7])
    np.testing.assert_allclose(vals, xs / 2.0 ** np.array([0, 2, 7]))
    src = jit(_count_halvings).lower(10.0).source()
    assert "while True:" in src and "break" in src


def test_while_loop_forward_and_reverse_mode():
    f = lambda x: lax.while_loop(lambda c: c[1] < 5, lambda c: (c[0] * x, c[1] + 1), (1.0, 0))[0]
    np.testing.assert_allclose(jvp(f, (1.1,), (1.0,))[1], 5 * 1.1 ** 4, rtol=1e-14)
    np.testing.assert_allclose(fungrad.jacfwd(f)(1.1), 5 * 1.1 ** 4, rtol=1e-14)
    np.testing.assert_allclose(grad(f)(1.1), 5 * 1.1 ** 4, rtol=1e-14)
    np.testing.assert_allclose(grad(grad(f))(1.1), 20 * 1.1 ** 3, rtol=1e-13)
    np.testing.assert_allclose(fungrad.hessian(f)(1.1), 20 * 1.1 ** 3, rtol=1e-13)


def _grow_until(x, th):
    # a data-dependent trip count: iterate x <- x + th sin x + 0.3 until x >= 3
    return lax.while_loop(lambda c: (c[1] < 3.0) & (c[0] < 50),
                          lambda c: (c[0] + 1, c[1] + th * fnp.sin(c[1]) + 0.3), (0, x))[1]


def _grow_until_py(x, th):
    i = 0
    while x < 3.0 and i < 50:
        i, x = i + 1, x + th * np.sin(x) + 0.3
    return x


def test_while_loop_reverse_mode_with_data_dependent_trip_count_beyond_jax():
    from fungrad.test_util import check_grads
    x, th, h = 0.5, 0.7, 1e-6
    fd = [(_grow_until_py(x + h, th) - _grow_until_py(x - h, th)) / (2 * h),
          (_grow_until_py(x, th + h) - _grow_until_py(x, th - h)) / (2 * h)]
    np.testing.assert_allclose(grad(_grow_until, argnums=(0, 1))(x, th), fd, rtol=1e-7)
    check_grads(_grow_until, (x, th), order=2, modes=("fwd", "rev"))
    # vmap of grad: lanes need 0..n iterations; each matches its own gradient
    xs = np.array([0.5, 1.0, 2.9, 3.5])
    per_lane = [grad(_grow_until)(float(v), th) for v in xs]
    np.testing.assert_allclose(vmap(grad(_grow_until), (0, None))(xs, th), per_lane, rtol=1e-13)
    np.testing.assert_allclose(grad(lambda v: vmap(_grow_until, (0, None))(v, th).sum())(xs),
                               per_lane, rtol=1e-13)
    # inside jit the count exists at run time only: a run-time tape (first order)
    for how, g in [("jit(grad)", jit(grad(_grow_until, argnums=(0, 1)))(x, th)),
                   ("grad(jit)", grad(jit(_grow_until), argnums=(0, 1))(x, th)),
                   ("jit(vjp)", jit(lambda x, th: fungrad.vjp(_grow_until, x, th)[1](1.0))(x, th))]:
        np.testing.assert_allclose(g, fd, rtol=1e-7, err_msg=how)
    src = jit(grad(_grow_until)).lower(x, th).source()
    assert ".append(" in src and "reversed(" in src         # the tape, replayed backwards
    # vmapped: lanes with their own trip counts (masked tape)
    for how, per_lane in [("vmap(jit(grad))", vmap(jit(grad(_grow_until)), (0, None))(xs, th)),
                          ("jit(vmap(grad))", jit(vmap(grad(_grow_until), (0, None)))(xs, th))]:
        np.testing.assert_allclose(per_lane, [grad(_grow_until)(float(v), th) for v in xs],
                                   rtol=1e-13, err_msg=how)
    # forward over reverse inside jit: the tape also records residual tangents
    np.testing.assert_allclose(jit(fungrad.hessian(_grow_until, (0, 1)))(x, th),
                               fungrad.hessian(_grow_until, (0, 1))(x, th), rtol=1e-12)
    hvp = lambda x: jvp(grad(_grow_until), (x, th), (1.0, 0.0))[1]
    np.testing.assert_allclose(jit(hvp)(x), grad(grad(_grow_until))(x, th), rtol=1e-12)
    with pytest.raises(TypeError, match="Reverse mode over the reverse-mode.*inside jit"):
        jit(grad(grad(_grow_until)))(x, th)


def test_while_loop_errors():
    with pytest.raises(TypeError, match="boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c + 1.0, 0.0)
    with pytest.raises(TypeError, match=r"carry leaf 0 from f64\[\] to f64\[2\]"):
        lax.while_loop(lambda c: False, lambda c: c * np.ones(2), 0.0)


def test_associative_scan_every_length_and_errors():
    for n in range(0, 12):
        x = np.arange(1.0, n + 1)
        np.testing.assert_allclose(lax.associative_scan(fnp.add, x), np.cumsum(x))
        np.testing.assert_allclose(lax.associative_scan(fnp.add, x, reverse=True),
                                   np.cumsum(x[::-1])[::-1])
    x = np.random.default_rng(0).normal(size=(3, 6))
    np.testing.assert_allclose(jit(lambda x: lax.associative_scan(fnp.maximum, x, axis=1))(x),
                               np.maximum.accumulate(x, 1))
    with pytest.raises(ValueError, match="same length"):
        lax.associative_scan(lambda a, b: a, (np.ones(3), np.ones(4)))
    with pytest.raises(ValueError, match="out of range"):
        lax.associative_scan(fnp.add, np.ones(3), axis=1)
    with pytest.raises(TypeError, match="structure of elems"):
        lax.associative_scan(lambda a, b: (a, b), np.ones(3))


def test_while_loop_vmap_over_a_non_leading_axis():
    # found by the dev hypothesis profile: the carry's batch axis was moved twice
    def newton(a):
        return lax.while_loop(lambda s: fnp.any(fnp.abs(s * s - a) > 1e-10),
                              lambda s: (s + a / s) / 2, a)
    for a in (np.array([[2.7, 1.4]]), np.array([[2.7, 1.4, 9.0], [3.0, 5.0, 0.5]])):
        np.testing.assert_allclose(vmap(newton, in_axes=1)(a), np.sqrt(a).T, rtol=1e-10)


def test_while_loop_vmap_keeps_unbatched_carries_unbatched_as_jax():
    # JAX batches only the carries that depend on batched values (a fixpoint over
    # the body) when the predicate is not batched: a counter stays one number,
    # which a rule of one's own (a primitive refusing a batched operand) can see
    seen = []
    refuse_p = fungrad.extend.core.Primitive("refuse_batched")
    refuse_p.def_impl(lambda x: x)
    refuse_p.def_abstract_eval(lambda x: x)

    def refuse_batch(args, dims):
        seen.append(dims[0])
        raise ValueError("the loop counter was batched")
    fungrad.interpreters.batching.primitive_batchers[refuse_p] = refuse_batch

    def loop(x):
        def body(carry):
            i, y, z = carry
            return refuse_p.bind(i + 1), y * 0.5 + z, z
        return lax.while_loop(lambda c: c[0] < 4, body, (0, x, 1.0))
    xs = np.array([1.0, 8.0])
    counts, ys, zs = vmap(loop)(xs)
    np.testing.assert_array_equal(counts, [4, 4])
    np.testing.assert_allclose(ys, xs / 16 + 1.875, rtol=1e-15)
    np.testing.assert_array_equal(zs, [1.0, 1.0])
    assert seen == []
    # a carry that the body makes depend on a batched one becomes batched
    mixed = vmap(lambda x: lax.while_loop(lambda c: c[0] < 3,
                                          lambda c: (c[0] + 1, c[1] + c[2], c[2]),
                                          (0, 0.0, x)))(xs)
    np.testing.assert_allclose(mixed[1], 3 * xs)
    np.testing.assert_allclose(jit(vmap(loop))(xs)[1], xs / 16 + 1.875, rtol=1e-15)
    # cond with an unbatched predicate: the same for its outputs
    branches = (lambda i, x: (refuse_p.bind(i + 1), x * 2.0), lambda i, x: (i, x - 1.0))
    out_i, out_x = vmap(lambda x: lax.cond(True, *branches, 3, x))(xs)
    np.testing.assert_array_equal(out_i, [4, 4])
    assert seen == []
    np.testing.assert_allclose(out_x, 2.0 * xs)


def test_map_batch_size_vmaps_chunks():
    xs = np.arange(10.0).reshape(5, 2)
    for batch_size in (None, 1, 2, 5, 7):
        np.testing.assert_allclose(
            lax.map(lambda x: fnp.sum(x ** 2), xs, batch_size=batch_size), np.sum(xs ** 2, 1))
        np.testing.assert_allclose(
            grad(lambda v: fnp.sum(lax.map(fnp.sin, v, batch_size=batch_size)))(xs), np.cos(xs))
    pair = jit(lambda v: lax.map(lambda x: (x, 2 * x), v, batch_size=2))(xs)
    np.testing.assert_allclose(pair[1], 2 * xs)
    with pytest.raises(ValueError, match="batch_size"):
        lax.map(fnp.sin, xs, batch_size=0)
    assert lax.fori_loop(0, 3, lambda i, c: c + i, 0, unroll=2) == 3


def test_python_scalar_carry_takes_the_body_dtype_as_jax():
    # JAX promotes weakly typed (Python scalar) loop carries to what the body
    # returns (optax's Hungarian algorithm starts a float carry at 0)
    count, total = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + 0.5), (0, 0))
    assert total.dtype == np.float64 and float(total) == 1.5 and count.dtype == np.int64
    assert float(jit(lambda: lax.fori_loop(0, 4, lambda i, c: c + 0.25, 0))()) == 1.0
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0, np.arange(3.0))
    assert carry.dtype == np.float64 and float(carry) == 3.0
    np.testing.assert_array_equal(ys, [0.0, 0.0, 1.0])
    assert float(grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1))(2.0)) == 12.0
    # an array carry keeps its dtype: the body may not change it
    with pytest.raises(TypeError, match="carry leaf 0 from i64"):
        lax.while_loop(lambda c: c < 3, lambda c: (c + 1).astype(np.float32), np.int64(0))


def test_cond_widens_branches_that_differ_only_in_width():
    # (1 - flag) * int32 is int32 by JAX's weak types (1 - flag is a weak int;
    # optax's MultiSteps does this), so the branches agree; branches that differ
    # only in width are widened, other mismatches raise
    step = fnp.asarray(3, np.int32)
    out = lax.cond(True, lambda s: s, lambda s: (1 - fnp.asarray(True)) * s, step)
    assert out.dtype == np.int32 and int(out) == 3
    out = jit(lambda p, s: lax.switch(p, [lambda v: v.astype(np.float32), lambda v: v * 2.0],
                                      s))(1, np.float64(1.5))
    assert out.dtype == np.float64 and float(out) == 3.0
    with pytest.raises(TypeError, match="same types"):
        lax.cond(True, lambda s: s, lambda s: s.astype(np.float64), step)
    assert float(lax.cond(False, lambda v: v + 1, lambda v: v - 1, operand=2.0)) == 1.0


def test_python_round_of_arrays_and_tracers():
    assert float(round(fnp.asarray(2.567), 2)) == 2.57
    np.testing.assert_array_equal(round(fnp.asarray([1.4, 2.6])), [1.0, 3.0])
    assert float(jit(lambda x: round(x))(1.7)) == 2.0


def test_cond_with_per_branch_operands_jax_older_form():
    # cond(pred, true_operand, true_fun, false_operand, false_fun): each branch
    # sees only its own operand (numpyro's HMC and NUTS call it this way)
    f = lambda p, a, b: lax.cond(p, a, lambda x: x * 2.0, b, lambda y: y["v"] - 1.0)
    assert float(f(True, 3.0, {"v": 10.0})) == 6.0
    assert float(jit(f)(False, 3.0, {"v": 10.0})) == 9.0
    np.testing.assert_allclose(grad(f, argnums=(1, 2))(True, 3.0, {"v": 10.0})[0], 2.0)
    np.testing.assert_array_equal(vmap(f, (0, None, None))(np.array([True, False]), 3.0,
                                                          {"v": 10.0}), [6.0, 9.0])
    with pytest.raises(TypeError, match="must be callables"):
        lax.cond(True, 1.0, 2.0, 3.0, lambda x: x)


def test_python_int_through_cond_stays_weak_for_a_later_loop():
    # blackjax's NUTS: a Python int returned by cond becomes a while_loop carry
    # whose body casts it to int32; JAX's weak types let the carry take int32
    from fungrad.core import get_aval

    def f(p):
        start = lax.cond(p, lambda: 1, lambda: 2)
        assert get_aval(start).weak_type
        mixed = lax.cond(p, lambda: 1, lambda: fnp.int64(2))
        assert not get_aval(mixed).weak_type       # weak only if weak in every branch
        return lax.while_loop(lambda c: c < 5, lambda c: (c + 1).astype(np.int32), start)
    out = jit(f)(True)
    assert out.dtype == np.int32 and int(out) == 5
    assert int(jit(f)(False)) == 5


# ----------------------------------------------------------------------------
# jit's scan writes per-step outputs into arrays it allocates: results and
# residuals the caller holds are never written by later calls
# ----------------------------------------------------------------------------

def _cumulative(x, xs):
    return lax.scan(lambda c, v: (c + v, c * v), x, xs)


def test_scan_outputs_held_by_the_caller_are_never_overwritten():
    f = jit(_cumulative)
    xs = np.arange(12.0).reshape(6, 2)
    c1, ys1 = f(np.ones(2), xs)
    keep = np.array(ys1)
    c2, ys2 = f(np.full(2, 5.0), xs + 1)         # ys1 is alive: a new array for ys2
    np.testing.assert_array_equal(ys1, keep)
    assert not np.shares_memory(ys1, ys2)
    want = _cumulative(np.full(2, 5.0), xs + 1)
    np.testing.assert_array_equal(ys2, want[1])


def test_scan_residuals_held_by_a_pullback_survive_later_calls():
    loss = lambda w, xs: fnp.sum(lax.scan(lambda h, x: (fnp.tanh(h * w + x), h), 0.5, xs)[1] ** 2)
    step = jit(lambda w, xs: fungrad.vjp(lambda v: loss(v, xs), w))
    xs = np.linspace(-1, 1, 7)
    y1, pull1 = step(0.3, xs)
    y2, pull2 = step(-0.8, xs[::-1].copy())        # must not clobber pull1's residuals
    np.testing.assert_allclose(pull1(1.0)[0], grad(loss)(0.3, xs), rtol=1e-13)
    np.testing.assert_allclose(pull2(1.0)[0], grad(loss)(-0.8, xs[::-1].copy()), rtol=1e-13)


def test_scan_in_threads_each_call_writes_its_own_outputs():
    import threading
    f = jit(_cumulative)
    xs = np.arange(2000.0).reshape(1000, 2)
    f(np.ones(2), xs)
    results, errors = {}, []

    def run(k):
        try:
            for _ in range(20):
                c, ys = f(np.full(2, float(k)), xs)
                np.testing.assert_array_equal(ys, _cumulative(np.full(2, float(k)), xs)[1])
            results[k] = True
        except Exception as e:      # (reported below)
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4


def test_exported_scan_allocates_per_call():
    from fungrad.export import export
    source = export(_cumulative, np.ones(2), np.ones((3, 2)))
    assert ".take(" not in source and "np.empty((3, 2)" in source


# ----------------------------------------------------------------------------
# jit's scan computes a per-step output a ufunc makes in place (``out=ys[i]``)
# ----------------------------------------------------------------------------

def _scan_with_ys_in_place(c0, xs, reverse):
    """ys that a ufunc computes (one also read later in the step, one also the
    new carry, one returned twice), the incoming carry, a 0-d y, integers."""
    def step(c, x):
        a = c * x + 1.0             # a y, also read below: in place
        b = a - x                   # the new carry and a y: copied
        z = a * 2.0                 # twice a y: copied
        n = fnp.sum(b)              # a 0-d y (an element of ys, no view): copied
        k = (x > 0).astype(np.int32) + 2
        return b, (a, b, c, z, z, n, k * k)
    return lax.scan(step, c0, xs, reverse=reverse)


def _numpy_scan_with_ys(c0, xs, reverse):
    c, rows = c0, []
    for x in (xs[::-1] if reverse else xs):
        a = c * x + 1.0
        b = a - x
        k = (x > 0).astype(np.int32) + 2
        rows.append((a, b, c, a * 2.0, a * 2.0, np.sum(b), k * k))
        c = b
    rows = rows[::-1] if reverse else rows
    return c, tuple(np.stack(col) for col in zip(*rows))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3), (3, 1)])
def test_scan_ys_computed_in_place_equal_a_numpy_loop(shape, reverse):
    rng = np.random.default_rng(len(shape) + 7 * reverse)
    xs = rng.normal(size=shape)
    c0 = rng.normal(size=shape[1:])
    f = jit(lambda c0, xs: _scan_with_ys_in_place(c0, xs, reverse))
    source = f.lower(c0, xs).source()
    assert source.count("out=") == 2 and source.count("] = ") == 5   # (in place, copied)
    got, want = f(c0, xs), _numpy_scan_with_ys(c0, xs, reverse)
    for g, w in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-15, atol=0)
    held = [np.array(y) for y in got[1]]         # a second call writes new arrays
    f(c0 + 1.0, xs)
    for g, h in zip(got[1], held):
        np.testing.assert_array_equal(g, h)


def _scan_carry_history(c0, W, xs, reverse, by_ufunc):
    """Per-step outputs that are the incoming carry (twice), as a gradient's
    residuals are; the new carry made by a ufunc (computed into the history's
    next slot) or by a dot (copied there)."""
    def step(c, x):
        new = fnp.tanh(c * x + 0.5) if by_ufunc else fnp.dot(c, W) + x
        return new, (c, c, new * 2.0)
    return lax.scan(step, c0, xs, reverse=reverse)


def _numpy_carry_history(c0, W, xs, reverse, by_ufunc):
    c, rows = c0, []
    for x in (xs[::-1] if reverse else xs):
        new = np.tanh(c * x + 0.5) if by_ufunc else np.dot(c, W) + x
        rows.append((c, c, new * 2.0))
        c = new
    rows = rows[::-1] if reverse else rows
    cols = tuple(np.stack(col) if rows else np.empty((0,) + c0.shape) for col in zip(*rows))
    return c, cols or (np.empty((0,) + c0.shape),) * 3


@pytest.mark.parametrize("by_ufunc", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [0, 1, 4])
def test_scan_carry_history_equals_a_numpy_loop(length, reverse, by_ufunc):
    rng = np.random.default_rng(length + 5 * reverse + 11 * by_ufunc)
    c0, W, xs = rng.normal(size=3), rng.normal(size=(3, 3)) / 2, rng.normal(size=(length, 3))
    f = jit(lambda c0, W, xs: _scan_carry_history(c0, W, xs, reverse, by_ufunc))
    source = f.lower(c0, W, xs).source()
    assert f"np.empty(({length + 1}, 3)" in source          # (the history's extra slot)
    got, want = f(c0, W, xs), _numpy_carry_history(c0, W, xs, reverse, by_ufunc)
    for g, w in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-15, atol=1e-15)
    held = [np.array(y) for y in got[1]]         # a second call writes new arrays
    f(c0 + 1.0, W, xs)
    for g, h in zip(got[1], held):
        np.testing.assert_array_equal(g, h)
