"""Mutable array refs (``fungrad.ref``: ``jax.new_ref``, ``jax.Ref``,
``jax.freeze``, ``jax.ref.get/set/swap/addupdate``): eagerly against NumPy
arrays mutated in place; under jit (Ref arguments, closed-over and internal
Refs) against the same calls eagerly; grad of functions with internal Refs
against finite differences and the same function without Refs; vmap over Ref
arguments against a loop; Refs in scan/fori_loop/while_loop bodies against
Python loops; and JAX's restrictions (the errors of JAX's array_refs page)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad import ref as fref

finite = st.floats(-100, 100, allow_nan=False)


def test_read_write_and_freeze():
    r = fungrad.new_ref(fnp.arange(5.0))
    assert isinstance(r, fungrad.Ref) and not isinstance(r, fungrad.Array)
    assert r.shape == (5,) and r.dtype == np.float64 and r.ndim == 1 and len(r) == 5
    r[1:3] = fnp.array([7.0, 8.0])
    r[0] = 5.0                                  # a Python scalar takes the ref's dtype
    np.testing.assert_array_equal(r[...], [5.0, 7.0, 8.0, 3.0, 4.0])
    assert float(r[2]) == 8.0
    np.testing.assert_array_equal(fungrad.freeze(r), [5.0, 7.0, 8.0, 3.0, 4.0])
    assert repr(r) == "Ref([5., 7., 8., 3., 4.])"


def test_a_ref_does_not_share_a_numpy_array_the_caller_may_change():
    a = np.zeros(3)
    r = fungrad.new_ref(a)
    r[1] = np.array(2.0)
    b = np.ones(3)
    r[...] = b
    a[0], b[0] = 5.0, 7.0
    np.testing.assert_array_equal(r[...], [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="arrays of numbers"):
        fungrad.new_ref("text")


def test_typeof_is_an_abstract_ref():
    r = fungrad.new_ref(fnp.zeros((2, 3), np.float32))
    ty = fungrad.typeof(r)
    assert isinstance(ty, fref.AbstractRef) and ty.inner_aval == fungrad.core.ShapedArray((2, 3), np.float32)
    assert ty.shape == (2, 3) and ty == fref.AbstractRef(ty.inner_aval)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6), finite), max_size=8))
def test_index_writes_match_numpy(writes):
    expected = np.linspace(-1.0, 1.0, 6)
    r = fungrad.new_ref(expected.copy())
    for start, stop, value in writes:
        expected[start:stop] = value
        r[start:stop] = np.full(len(expected[start:stop]), value)
    np.testing.assert_array_equal(r[...], expected)


def test_array_indices():
    r = fungrad.new_ref(fnp.arange(4.0))
    r[np.array([0, 2])] = fnp.array([9.0, 8.0])
    np.testing.assert_array_equal(r[np.array([2, 0])], [8.0, 9.0])
    np.testing.assert_array_equal(r[...], [9.0, 1.0, 8.0, 3.0])


def test_swap_addupdate_get_set():
    r = fungrad.new_ref(fnp.ones(3))
    old = fref.swap(r, (), fnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(old, np.ones(3))
    fref.addupdate(r, slice(0, 2), fnp.array([10.0, 20.0]))
    r.addupdate(fnp.ones(3))
    fref.set(r, 2, 0.5)
    np.testing.assert_array_equal(fref.get(r), [12.0, 23.0, 0.5])


def test_writes_keep_shape_and_dtype_as_jax():
    r = fungrad.new_ref(fnp.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        r[...] = 1.0                            # no broadcasting, as in JAX
    with pytest.raises(ValueError, match="dtype"):
        r[...] = fnp.zeros(3, np.int32)
    with pytest.raises(TypeError, match="not an array"):
        np.asarray(r)


def test_free_ref_and_empty_ref():
    r = fref.empty_ref(fungrad.ShapeDtypeStruct((2,), np.float32))
    assert r.shape == (2,) and r.dtype == np.float32
    fref.free_ref(r)
    with pytest.raises(ValueError, match="freed"):
        r[...]


def test_refs_of_typed_keys():
    keys = fungrad.random.split(fungrad.random.key(0), 3)
    r = fungrad.new_ref(keys)
    assert fungrad.typeof(r).inner_aval.dtype == keys.dtype and r.shape == (3,)
    r[...] = fungrad.random.split(fungrad.random.key(1), 3)
    np.testing.assert_array_equal(fungrad.random.key_data(r[...]),
                                  fungrad.random.key_data(fungrad.random.split(fungrad.random.key(1), 3)))


def test_ref_is_not_an_operand():
    r = fungrad.new_ref(1.0)
    with pytest.raises(NotImplementedError, match=r"read a Ref's value with ref\[...\]"):
        fnp.sin(r)


# ----------------------------------------------------------------------------
# jit
# ----------------------------------------------------------------------------

updates = st.lists(st.tuples(st.integers(0, 3), finite), min_size=1, max_size=6)


@given(updates)
def test_jit_closed_over_ref_matches_eager_calls(calls):
    """Each call reads the Ref's current value (nothing baked in) and writes it back."""
    eager_ref, jit_ref = fungrad.new_ref(fnp.zeros(4)), fungrad.new_ref(fnp.zeros(4))

    def step(ref, i, x):
        ref[i] += x
        ref[...] = ref[...] * 0.5 + fnp.sin(ref[...])
        return ref[...].sum()

    jitted = fungrad.jit(lambda i, x: step(jit_ref, i, x))
    for i, x in calls:
        expected = step(eager_ref, i, x)
        np.testing.assert_allclose(jitted(i, x), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jit_ref[...], eager_ref[...], rtol=1e-12, atol=1e-12)
    assert jitted._cache_size() == 1           # one trace: the Ref's value is an input


@given(updates)
def test_jit_ref_arguments_match_eager_calls(calls):
    def accumulate(x, total_ref, count_ref):
        total_ref[...] += fnp.full(3, x)
        count_ref[...] += 1
        return total_ref[...].mean()

    jitted = fungrad.jit(accumulate)
    eager = (fungrad.new_ref(fnp.zeros(3)), fungrad.new_ref(0))
    traced = (fungrad.new_ref(fnp.zeros(3)), fungrad.new_ref(0))
    for _, x in calls:
        np.testing.assert_allclose(jitted(x, *traced), accumulate(x, *eager), rtol=1e-12)
    np.testing.assert_allclose(traced[0][...], eager[0][...], rtol=1e-12)
    assert int(traced[1][...]) == int(eager[1][...]) == len(calls)
    assert jitted._cache_size() == 1


def test_jit_ref_argument_signature_includes_its_shape_and_dtype():
    @fungrad.jit
    def double(ref):
        ref[...] = ref[...] * 2

    a, b = fungrad.new_ref(fnp.ones(2)), fungrad.new_ref(fnp.ones(3, np.float32))
    double(a), double(b), double(a)
    np.testing.assert_array_equal(a[...], [4.0, 4.0])
    np.testing.assert_array_equal(b[...], [2.0, 2.0, 2.0])
    assert b.dtype == np.float32 and double._cache_size() == 2


def test_a_refs_weak_type_is_fixed_when_made_as_jaxs():
    """JAX: reads of new_ref(0.) are weakly typed whatever is written; so a
    jitted function traced for a Ref stays right after writes."""
    weak, strong = fungrad.new_ref(0.0), fungrad.new_ref(fnp.zeros((), np.float64))
    assert weak[...].weak_type and not strong[...].weak_type
    weak[...] = fnp.zeros((), np.float64)
    strong[...] = 1.0
    assert weak[...].weak_type and not strong[...].weak_type

    @fungrad.jit
    def add_to(ref, x):
        ref[...] += x
        return ref[...] * fnp.float32(2)
    for _ in range(2):
        assert add_to(weak, 1.0).dtype == np.float32        # weak * float32 -> float32
        assert add_to(strong, 1.0).dtype == np.float64
    assert weak[...].weak_type and float(weak[...]) == 2.0 and add_to._cache_size() == 2


def test_jit_refs_in_pytrees_and_read_only_refs():
    @fungrad.jit
    def apply(state, x):
        state["w"][...] = state["w"][...] + x * state["lr"][...]
        return state["w"][...] @ x

    state = {"w": fungrad.new_ref(fnp.zeros(2)), "lr": fungrad.new_ref(0.5)}
    x = fnp.array([1.0, 2.0])
    assert float(apply(state, x)) == 2.5 and float(apply(state, x)) == 5.0
    np.testing.assert_array_equal(state["w"][...], [1.0, 2.0])
    assert float(state["lr"][...]) == 0.5


def test_jit_internal_refs_are_pure():
    def pure(x):
        ref = fungrad.new_ref(x)
        ref[...] = ref[...] + ref[...]
        ref[0] = ref[1] * 3.0
        return ref[...]

    x = fnp.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fungrad.jit(pure)(x), pure(x))
    np.testing.assert_array_equal(fungrad.jit(pure)(x), [12.0, 4.0, 6.0])


def test_nested_jit_closing_over_a_ref():
    counter = fungrad.new_ref(0.0)

    @fungrad.jit
    def bump(x):
        counter[...] += x

    @fungrad.jit
    def twice(x):
        bump(x)
        bump(2 * x)
        return counter[...]

    bump(1.0)                                  # the inner one traced eagerly first
    assert float(twice(1.0)) == 4.0 and float(twice(1.0)) == 7.0
    assert float(counter[...]) == 7.0


def test_jit_without_refs_keeps_its_generated_runner():
    jitted = fungrad.jit(lambda x: x * 2)
    jitted(1.0)
    entry = next(iter(jitted._cache.entries.values()))
    assert entry.refs is None and entry.run.__code__.co_filename == "<fungrad.jit runner>"


def test_a_written_ref_keeps_its_value_when_tracing_fails():
    r = fungrad.new_ref(fnp.ones(2))

    @fungrad.jit
    def broken(x):
        r[...] = x
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        broken(fnp.zeros(2))
    np.testing.assert_array_equal(r[...], [1.0, 1.0])


# ----------------------------------------------------------------------------
# grad, vmap
# ----------------------------------------------------------------------------

def _with_refs(x):
    ref = fungrad.new_ref(fnp.zeros(3))
    ref[0] = fnp.sin(x[0]) * x[1]
    ref[1:] = fnp.exp(x[1:] * 0.3)
    ref[...] += ref[...] ** 2
    fref.addupdate(ref, 2, x[0] * x[2])
    return fref.freeze(ref).sum()


def _without_refs(x):
    v = fnp.stack([fnp.sin(x[0]) * x[1], fnp.exp(x[1] * 0.3), fnp.exp(x[2] * 0.3)])
    v = v + v ** 2
    return (v + fnp.array([0.0, 0.0, 1.0]) * x[0] * x[2]).sum()


@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_grad_of_internal_refs(values):
    x = fnp.array(values)
    for transform in (fungrad.grad, lambda f: fungrad.jit(fungrad.grad(f)),
                      lambda f: fungrad.grad(fungrad.jit(f))):
        g = transform(_with_refs)(x)
        np.testing.assert_allclose(g, fungrad.grad(_without_refs)(x), rtol=1e-10, atol=1e-12)
        eps = 1e-6
        fd = [(_without_refs(x + eps * e) - _without_refs(x - eps * e)) / (2 * eps)
              for e in np.eye(3)]
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_grad_with_a_plumbing_ref_and_stop_gradient():
    """Eagerly, under jit, and through a jitted function (whose output written
    into the Ref is known to carry no gradient)."""
    def f(x, plumbing):
        y = x * x
        plumbing[...] += fungrad.lax.stop_gradient(y)
        return y

    plumbing = fungrad.new_ref(0.0)
    for n, transform in enumerate((fungrad.grad, lambda f: fungrad.jit(fungrad.grad(f)),
                                   lambda f: fungrad.grad(fungrad.jit(f))), start=1):
        assert float(transform(f)(3.0, plumbing)) == 6.0
        assert float(plumbing[...]) == 9.0 * n


@fungrad.custom_vjp
def _stash_grads(grads_ref, x):
    return x


def _stash_fwd(grads_ref, x):
    return x, grads_ref          # (a Ref as a residual: shared with bwd, as in JAX)


def _stash_bwd(grads_ref, g):
    grads_ref[...] = g
    return None, g


_stash_grads.defvjp(_stash_fwd, _stash_bwd)


@given(st.floats(-3, 3))
def test_custom_vjp_rules_write_a_plumbing_ref(x):
    """JAX's array_refs recipe: the cotangent at the stash point, 2 cos(2x)."""
    def f(x, grads_ref):
        return fnp.sin(_stash_grads(grads_ref, x) * 2.0)

    for transform in (fungrad.grad, lambda f: fungrad.jit(fungrad.grad(f))):
        grads_ref = fungrad.new_ref(0.0)
        g = transform(f)(x, grads_ref)
        np.testing.assert_allclose(g, 2 * np.cos(2 * x), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(grads_ref[...], 2 * np.cos(2 * x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(f(x, grads_ref), np.sin(2 * x), rtol=1e-12)


def _dist(x, y, out_ref):
    assert out_ref.ndim == 0
    out_ref[...] = fnp.sum((x - y) ** 2)


@pytest.mark.parametrize("jitted", [False, True])
def test_vmap_over_ref_arguments_matches_a_loop(jitted):
    vecs = fnp.asarray(np.random.default_rng(0).normal(size=(3, 4)))
    out = fungrad.new_ref(fnp.zeros((3, 3)))
    f = fungrad.vmap(fungrad.vmap(_dist, (0, None, 0)), (None, 0, 0))
    (fungrad.jit(f) if jitted else f)(vecs, vecs, out)
    expected = [[np.sum((vecs[i] - vecs[j]) ** 2) for i in range(3)] for j in range(3)]
    np.testing.assert_allclose(out[...], expected, rtol=1e-12)


def test_vmap_over_a_ref_argument_on_axis_one_and_an_unmapped_ref():
    ref = fungrad.new_ref(fnp.ones((2, 3)))
    scale = fungrad.new_ref(10.0)

    def f(x, r, s):
        r[...] = r[...] * x + s[...]

    fungrad.vmap(f, (0, 1, None))(fnp.arange(3.0), ref, scale)
    np.testing.assert_array_equal(ref[...], np.ones((2, 3)) * np.arange(3.0) + 10.0)


# ----------------------------------------------------------------------------
# loops
# ----------------------------------------------------------------------------

@given(st.lists(finite, min_size=1, max_size=6))
def test_scan_body_closing_over_a_ref_matches_a_loop(xs):
    total = fungrad.new_ref(0.0)

    def body(carry, x):
        total[...] += x * carry
        return carry + 1.0, total[...]

    carry, ys = fungrad.lax.scan(body, 1.0, fnp.array(xs))
    expected_total, expected_ys, c = 0.0, [], 1.0
    for x in xs:
        expected_total += x * c
        expected_ys.append(expected_total)
        c += 1.0
    np.testing.assert_allclose(ys, expected_ys, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(total[...], expected_total, rtol=1e-12, atol=1e-9)
    assert float(carry) == 1.0 + len(xs)


def test_loops_with_refs_under_jit_repeatedly():
    acc = fungrad.new_ref(fnp.zeros(2))
    hits = fungrad.new_ref(0)

    def add_row(carry, x):
        acc[...] += x
        return carry, None

    def count(i, carry):
        hits[...] += i
        return carry

    def halve(i):
        acc[...] = acc[...] * 0.5
        return i + 1

    @fungrad.jit
    def run(n, xs):
        fungrad.lax.scan(add_row, None, xs)
        fungrad.lax.fori_loop(0, 3, count, 0)
        return fungrad.lax.while_loop(lambda i: i < n, halve, 0)

    xs = fnp.ones((4, 2))
    expected = np.zeros(2)
    for n in (1, 2, 2):
        assert int(run(n, xs)) == n
        expected = (expected + 4.0) * 0.5 ** n
        np.testing.assert_allclose(acc[...], expected, rtol=1e-12)
    assert int(hits[...]) == 9


def test_grad_through_a_scan_writing_an_internal_ref():
    def f(x):
        ref = fungrad.new_ref(x)

        def body(carry, _):
            ref[...] = fnp.sin(ref[...])
            return carry, None
        fungrad.lax.scan(body, None, None, length=3)
        return ref[...]

    x = 0.7
    expected = np.cos(x) * np.cos(np.sin(x)) * np.cos(np.sin(np.sin(x)))
    np.testing.assert_allclose(fungrad.grad(f)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(f))(x), expected, rtol=1e-12)


# ----------------------------------------------------------------------------
# JAX's restrictions (the errors of its array_refs page)
# ----------------------------------------------------------------------------

def test_a_ref_cannot_be_returned_from_jit_or_a_loop_body():
    r = fungrad.new_ref(0.0)
    with pytest.raises(TypeError, match="Refs can't be returned"):
        fungrad.jit(lambda ref: ref)(r)
    with pytest.raises(TypeError, match="Refs can't be returned"):
        fungrad.lax.scan(lambda c, x: (c, r), 0.0, fnp.ones(2))


def test_a_ref_passed_twice_or_passed_and_closed_over():
    r = fungrad.new_ref(0.0)
    with pytest.raises(ValueError, match="passed more than once"):
        fungrad.jit(lambda a, b: None)(r, r)

    def closes_over(ref):
        ref[...] = r[...]
    with pytest.raises(ValueError, match="also closed over"):
        fungrad.jit(closes_over)(r)
    other = fungrad.new_ref(1.0)
    jitted = fungrad.jit(closes_over)
    jitted(other)                              # traced with a different Ref...
    with pytest.raises(ValueError, match="passed more than once"):
        jitted(r)                              # ...then called with the closed-over one


def test_freeze_only_where_the_ref_was_made():
    r = fungrad.new_ref(0.0)
    with pytest.raises(ValueError, match="only be frozen where it was made"):
        fungrad.jit(lambda ref: fungrad.freeze(ref))(r)
    assert float(fungrad.jit(lambda x: fungrad.freeze(fungrad.new_ref(x)))(2.0)) == 2.0


def test_vmap_writing_a_closed_over_ref_raises():
    r = fungrad.new_ref(0.0)

    def f(x):
        r[...] = x
    with pytest.raises(ValueError, match="vmap of a function that writes a batched value"):
        fungrad.vmap(f)(fnp.arange(3.0))
    assert float(r[...]) == 0.0


def test_grad_writing_a_differentiated_value_into_a_plumbing_ref_raises():
    def f(x, plumbing):
        plumbing[...] += x * 2
        return x * 2
    with pytest.raises(ValueError, match="stop_gradient"):
        fungrad.grad(f)(1.0, fungrad.new_ref(0.0))


def test_grad_with_respect_to_a_ref_raises():
    with pytest.raises(TypeError, match="can't be differentiated with respect to"):
        fungrad.grad(lambda r: r[...] ** 2)(fungrad.new_ref(2.0))


def test_a_ref_made_inside_jit_does_not_outlive_it():
    leaked = []

    @fungrad.jit
    def f(x):
        leaked.append(fungrad.new_ref(x))
        return x
    f(1.0)
    with pytest.raises(fungrad.UnexpectedTracerError, match="transformation that has finished"):
        leaked[0][...]


def test_cond_branch_writing_a_closed_over_ref_says_what_is_supported():
    r = fungrad.new_ref(0.0)

    def branch(x):
        r[...] = x
        return x
    with pytest.raises(NotImplementedError, match="scan/fori_loop/while_loop"):
        fungrad.lax.cond(True, branch, lambda x: x, 1.0)


# ----------------------------------------------------------------------------
# jax.vjp's with_refs (jax.ad.GradValue / DontWant / GradRef / DidntWant)
# ----------------------------------------------------------------------------

@given(st.lists(st.integers(0, 9), min_size=1, max_size=5))
def test_with_refs_accumulates_gradients_into_a_ref(indices):
    """A gradient Ref collects the gradients of several backward passes (added,
    not set); GradValue returns an argument's gradient; DontWant skips it."""
    x = fnp.arange(10.0)
    take = fungrad.jit(lambda x, i: x[i] * x[i])
    grad_ref = fungrad.new_ref(fnp.full(10, 100.0))
    expected = np.full(10, 100.0)
    for i in indices:
        _, take_vjp = fungrad.vjp(take, x, i)
        got_ref, got_i = take_vjp.with_refs(grad_ref, fungrad.ad.GradValue())(1.0)
        assert isinstance(got_ref, fungrad.ad.GradRef) and got_i.dtype == fungrad.float0
        expected[i] += 2 * i
    np.testing.assert_array_equal(grad_ref[...], expected)
    _, take_vjp = fungrad.vjp(take, x, indices[0])
    got_x, got_i = take_vjp.with_refs(fungrad.ad.GradValue(), fungrad.ad.DontWant())(1.0)
    assert isinstance(got_i, fungrad.ad.DidntWant)
    np.testing.assert_array_equal(got_x, take_vjp(1.0)[0])


def test_with_refs_in_a_scan_over_microbatches_matches_grad_of_the_sum():
    """JAX's microbatch recipe: each scan step's vjp accumulates into one Ref."""
    ws = fnp.asarray(np.random.default_rng(2).normal(size=(3, 4, 4)))
    xs = fnp.asarray(np.random.default_rng(3).normal(size=(5, 7, 4)))

    def loss(ws, x):
        act, _ = fungrad.lax.scan(lambda h, w: (fnp.tanh(h @ w), None), x, ws)
        return fnp.mean(act)

    def process_batch(ws, xs):
        acc = fungrad.new_ref(fnp.zeros_like(ws))

        def step(_, x):
            value, f_vjp = fungrad.vjp(lambda ws: loss(ws, x), ws)
            f_vjp.with_refs(acc)(fnp.ones_like(value))
            return (), value
        _, losses = fungrad.lax.scan(step, (), xs)
        return fungrad.freeze(acc), losses

    expected = fungrad.grad(lambda ws: sum(loss(ws, x) for x in xs))(ws)
    for run in (process_batch, fungrad.jit(process_batch)):
        grads, losses = run(ws, xs)
        np.testing.assert_allclose(grads, expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(losses, [loss(ws, x) for x in xs], rtol=1e-12)


def test_with_refs_checks_its_arguments():
    _, sin_vjp = fungrad.vjp(fnp.sin, 1.0)
    with pytest.raises(ValueError, match="structure"):
        sin_vjp.with_refs(fungrad.new_ref(0.0), fungrad.new_ref(0.0))
    with pytest.raises(ValueError, match="dtype"):
        sin_vjp.with_refs(fungrad.new_ref(np.float32(0.0)))(1.0)


def test_an_indexed_write_into_a_ref_of_typed_keys_is_refused_with_the_fix():
    r = fungrad.new_ref(fungrad.random.split(fungrad.random.key(0), 3))
    with pytest.raises(NotImplementedError, match=r"write the whole Ref \(ref\[...\] = keys\)"):
        r[0] = fungrad.random.key(1)


def test_a_while_loop_whose_cond_writes_a_ref_is_refused_with_the_fix():
    counter = fungrad.new_ref(0.0)

    def cond(i):
        counter[...] = counter[...] + 1.0
        return i < 3

    with pytest.raises(NotImplementedError, match="cond_fun writes a Ref; write it in body_fun"):
        fungrad.lax.while_loop(cond, lambda i: i + 1, 0)
    assert counter[...] == 0.0                   # (the Ref keeps its value)
