"""fungrad.debug (print, callback, breakpoint, visualize_array_sharding) and
pure_callback, under every transformation."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import debug, lax


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


# ----------------------------------------------------------------------------
# debug.print
# ----------------------------------------------------------------------------

def test_print_eager_and_formatting(capsys):
    debug.print("x = {x}, y = {}", 2.5, x=np.arange(3))
    debug.print("no fields", 1, np.float32(2), skip_format_check=True)   # joined, as JAX
    debug.print(ordered=True)("{:.2f}", 3.14159)
    assert _lines(capsys) == ["x = [0 1 2], y = 2.5", "no fields 1 2.0", "3.14"]


def test_print_inside_jit_runs_at_run_time_in_program_order(capsys):
    @fungrad.jit
    def f(x):
        debug.print("first {}", x)
        y = fnp.sin(x)
        debug.print("second {}", y)
        return y * 2
    f(0.0)
    f(1.0)
    assert _lines(capsys) == ["first 0.0", "second 0.0", "first 1.0",
                              f"second {np.sin(1.0)}"]
    source = f.lower(1.0).source()
    assert "# debug_callback" in source and "<function" not in source and "0x" not in source


def test_print_is_not_removed_or_merged_by_the_optimizer(capsys):
    @fungrad.jit
    def f(x):
        debug.print("seen {}", x)          # result unused: dce must keep it
        debug.print("seen {}", x)          # identical: cse must not merge it
        unused = fnp.cos(x)                # noqa: F841 (removed)
        return x + 1
    f(2.0)
    assert _lines(capsys) == ["seen 2.0", "seen 2.0"]
    assert "cos" not in f.lower(2.0).source()


def test_print_under_grad_shows_primals(capsys):
    def f(x):
        debug.print("x={}", x)
        return x ** 3
    assert float(fungrad.grad(f)(2.0)) == 12.0
    assert float(fungrad.grad(fungrad.grad(f))(2.0)) == 12.0
    assert float(fungrad.jit(fungrad.grad(f))(3.0)) == 27.0
    assert _lines(capsys) == ["x=2.0", "x=2.0", "x=3.0"]


def test_print_under_vmap_one_line_per_lane(capsys):
    def f(x, y):
        debug.print("{} {}", x, y)
        return x * y
    fungrad.vmap(f, in_axes=(0, None))(np.arange(3.0), 10.0)
    fungrad.jit(fungrad.vmap(f))(np.arange(2.0), np.ones(2))
    assert _lines(capsys) == ["0.0 10.0", "1.0 10.0", "2.0 10.0", "0.0 1.0", "1.0 1.0"]


def test_print_in_loop_bodies(capsys):
    def body(c, x):
        debug.print("c={} x={}", c, x)
        return c + x, c
    fungrad.jit(lambda xs: lax.scan(body, 0.0, xs))(np.array([1.0, 2.0]))
    fungrad.jit(lambda x: lax.while_loop(lambda v: v < 5,
                                         lambda v: (debug.print("v={}", v), v * 2)[1], x))(1.5)
    fungrad.jit(lambda x: lax.fori_loop(0, 2, lambda i, v: (debug.print("i={}", i), v)[1], x))(0.)
    fungrad.jit(lambda p, x: lax.cond(p, lambda v: (debug.print("true {}", v), v)[1],
                                      lambda v: v, x))(True, 4.0)
    assert _lines(capsys) == ["c=0.0 x=1.0", "c=1.0 x=2.0", "v=1.5", "v=3.0",
                              "i=0", "i=1", "true 4.0"]


def test_print_format_errors_at_trace_time():
    f = fungrad.jit(lambda x: debug.print("{} and {}", x))
    with pytest.raises(IndexError):
        f(1.0)
    with pytest.raises(KeyError, match="y"):
        debug.print("{y}", x=1.0)
    with pytest.raises(ValueError, match="f-string"):
        debug.print("value", x=1.0)
    with pytest.raises(ValueError, match="Unused positional"):
        debug.print("{}", 1.0, 2.0)
    with pytest.raises(TypeError, match="format must be a str"):
        debug.print(3)


# ----------------------------------------------------------------------------
# debug.callback, breakpoint, visualize_array_sharding
# ----------------------------------------------------------------------------

def test_callback_gets_concrete_arrays_in_jit_and_pytrees():
    seen = []

    @fungrad.jit
    def f(x):
        y = x * 2
        debug.callback(lambda tree, tag: seen.append((tree, tag)), {"a": x, "b": [y]}, "t")
        return y
    f(np.arange(3.0))
    (tree, tag), = seen
    assert tag == "t" and isinstance(tree["a"], fungrad.Array)
    np.testing.assert_array_equal(tree["b"][0], [0.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="immutable"):     # as a jax.Array
        tree["a"][0] = 1.0
    with pytest.raises(TypeError, match="callable"):
        debug.callback(3, 1.0)


def test_callback_values_are_not_reused_buffers():
    seen = []

    @fungrad.jit
    def f(x):
        y = fnp.exp(x)
        debug.callback(seen.append, y)
        return fnp.sin(y) + 1       # the generated code may reuse y's buffer here
    x = np.linspace(0, 1, 4096)
    f(x)
    np.testing.assert_allclose(seen[0], np.exp(x))


class _FakePdb:
    """Stands for pdb.Pdb: records where it would have stopped."""
    stops = []

    def run(self, cmd, globals=None, locals=None):
        _FakePdb.stops.append(dict(locals))


def test_breakpoint_enters_pdb_with_concrete_values(monkeypatch, capsys):
    import pdb
    monkeypatch.setattr(pdb, "Pdb", _FakePdb)
    _FakePdb.stops.clear()

    def f(x, scale):
        y = fnp.sin(x) * scale
        debug.breakpoint()
        return y
    fungrad.jit(f, static_argnums=1)(np.arange(2.0), 3)
    fungrad.vmap(f, in_axes=(0, None))(np.array([0.5, 1.5]), 2)
    fungrad.grad(lambda x: f(x, 1.0))(0.25)
    first, lane0, lane1, primal = _FakePdb.stops
    np.testing.assert_allclose(first["y"], np.sin([0.0, 1.0]) * 3)
    assert first["scale"] == 3 and isinstance(first["x"], fungrad.Array)
    assert float(lane0["x"]) == 0.5 and float(lane1["x"]) == 1.5
    assert float(primal["x"]) == 0.25
    assert "fungrad.debug.breakpoint at" in capsys.readouterr().out


def test_visualize_array_sharding(capsys):
    debug.visualize_array_sharding(np.ones((2, 3)))
    fungrad.jit(lambda x: debug.visualize_array_sharding(x) or x)(np.ones(4, np.float32))
    assert _lines(capsys) == ["f64[2,3]: single CPU device (not sharded)",
                              "f32[4]: single CPU device (not sharded)"]


def test_export_refuses_callbacks():
    def f(x):
        debug.print("{}", x)
        return x + 1
    with pytest.raises(TypeError, match="Python callback"):
        fungrad.export(f, 1.0)


# ----------------------------------------------------------------------------
# pure_callback
# ----------------------------------------------------------------------------

def _host_sin(x):
    assert isinstance(x, np.ndarray)           # concrete, also under jit
    return np.sin(x)


def _sin_callback(x, vmap_method="sequential"):
    return fungrad.pure_callback(_host_sin, fungrad.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method=vmap_method)


def test_pure_callback_eager_jit_and_pytrees():
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(_sin_callback(x), np.sin(x))
    np.testing.assert_allclose(fungrad.jit(_sin_callback)(x), np.sin(x))
    out = fungrad.pure_callback(lambda a, b: {"s": a + b, "d": (a - b,)},
                                {"s": fungrad.ShapeDtypeStruct((2,), np.float64),
                                 "d": (fungrad.ShapeDtypeStruct((2,), np.float64),)},
                                np.ones(2), b=np.arange(2.0))
    np.testing.assert_array_equal(out["d"][0], [1.0, 0.0])


def test_pure_callback_vmap_methods():
    shapes = []

    def record(x, y):
        shapes.append((np.shape(x), np.shape(y)))
        return x + y

    def f(x, y, method):
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        return fungrad.pure_callback(record, fungrad.ShapeDtypeStruct(shape, np.float64), x, y,
                                     vmap_method=method)
    x, y = np.arange(4.0), 1.0
    for method, expected in [("sequential", [((), ())] * 4), ("expand_dims", [((4,), (1,))]),
                             ("broadcast_all", [((4,), (4,))]),
                             ("legacy_vectorized", [((4,), ())])]:
        shapes.clear()
        out = fungrad.vmap(lambda a: f(a, y, method))(x)
        np.testing.assert_array_equal(out, x + 1)
        assert shapes == expected, method
    with pytest.raises(NotImplementedError, match="vmap_method"):
        fungrad.vmap(lambda a: f(a, y, None))(x)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        f(x, y, "parallel")


def test_pure_callback_derivatives_as_jax():
    with pytest.raises(ValueError, match="custom_jvp"):
        fungrad.grad(lambda x: _sin_callback(x))(1.0)

    @fungrad.custom_jvp
    def host_sin(x):
        return _sin_callback(x)
    host_sin.defjvp(lambda p, t: (host_sin(p[0]), fnp.cos(p[0]) * t[0]))
    np.testing.assert_allclose(fungrad.grad(host_sin)(0.5), np.cos(0.5))
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(fungrad.grad(host_sin)))(np.ones(3)),
                               np.cos(np.ones(3)))


def test_pure_callback_checks_results_and_may_be_dropped():
    with pytest.raises(ValueError, match=r"shape \(3,\).*declares \(2,\)"):
        fungrad.pure_callback(lambda: np.ones(3), fungrad.ShapeDtypeStruct((2,), np.float64))
    with pytest.raises(TypeError, match="2 arrays"):
        fungrad.pure_callback(lambda: (np.ones(2), np.ones(2)),
                              fungrad.ShapeDtypeStruct((2,), np.float64))
    calls = []

    @fungrad.jit
    def f(x):
        fungrad.pure_callback(lambda v: calls.append(1) or v,
                              fungrad.ShapeDtypeStruct((), np.float64), x)
        return x * 2
    assert float(f(1.0)) == 2.0 and calls == []     # pure and unused: removed


# ----------------------------------------------------------------------------
# io_callback (jax.experimental.io_callback): effectful, never dropped
# ----------------------------------------------------------------------------

def test_io_callback_runs_in_order_under_jit_and_scan_even_when_unused():
    from fungrad.experimental import io_callback
    log = []

    def record(tag, x):
        log.append((tag, float(x)))
        return np.asarray(x) * 2

    @fungrad.jit
    def f(x):
        io_callback(record, fungrad.ShapeDtypeStruct((), np.float64), "a", x,
                    ordered=True)       # result unused: still runs
        doubled = io_callback(record, fungrad.ShapeDtypeStruct((), np.float64), "b", x + 1)
        return doubled + 1
    assert float(f(1.0)) == 5.0 and log == [("a", 1.0), ("b", 2.0)]

    log.clear()
    def body(carry, x):
        io_callback(lambda v: log.append(float(v)), None, x)
        return carry + x, None
    total, _ = fungrad.jit(lambda xs: lax.scan(body, 0.0, xs))(np.arange(3.0))
    assert float(total) == 3.0 and log == [0.0, 1.0, 2.0]


def test_io_callback_vmap_and_derivatives_as_jax():
    from fungrad.experimental import io_callback
    seen = []

    def f(x):
        return io_callback(lambda v: seen.append(float(v)) or v * 3,
                           fungrad.ShapeDtypeStruct((), np.float64), x)
    np.testing.assert_array_equal(fungrad.vmap(f)(np.arange(3.0)), [0.0, 3.0, 6.0])
    assert seen == [0.0, 1.0, 2.0]             # one call per lane, in lane order
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        fungrad.vmap(lambda x: io_callback(lambda v: v, fungrad.ShapeDtypeStruct((), np.float64),
                                           x, ordered=True))(np.arange(2.0))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        fungrad.grad(f)(1.0)
    with pytest.raises(TypeError, match="ordered must be True or False"):
        io_callback(lambda: None, None, ordered="yes")
