"""The compiled backend (``jit(f, backend="numba")``): a slice of the generic
suite under it, special values, transformations around and inside it, the
fallback to NumPy, and the disk cache (reuse across processes, corruption,
permissions).  Skipped only when numba is not installed (``pip install
"fungrad[numba]"``).

Cost: numba compiles each new program in about 0.3 s (the HMC benchmark's
loop, 75 lines, in about 8 s), so the generic slice is capped at
``SLICE_SIZE`` cases, one fixed input each, compiled in memory; the cache
tests compile small programs in subprocesses.
"""
from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

numba = pytest.importorskip("numba")

import fungrad  # noqa: E402
import fungrad.numpy as fnp  # noqa: E402
from fungrad import core, lax  # noqa: E402
from fungrad.interpreters import numba_backend  # noqa: E402
from tests.test_generic import CASES, _values  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _compile_everything(monkeypatch):
    """Every compilable run becomes a segment (so that single-primitive cases
    are compiled), in memory (the cache tests set their own directories)."""
    monkeypatch.setattr(numba_backend, "MIN_SEGMENT", 1)
    monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", "")


def numba_jit(f):
    return fungrad.jit(f, backend="numba")


def _close(got, want, what):
    """Equal dtypes and shapes; integers and booleans exactly, floats within a
    few ulps (relative to the largest magnitude: sums may add in another order),
    NaN where NaN, infinities where infinities."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    eps = np.finfo(got.dtype).eps
    finite = np.isfinite(want)
    scale = np.max(np.abs(want[finite]), initial=1.0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)],
                                  want[~finite & ~np.isnan(want)], err_msg=what)
    np.testing.assert_allclose(got[finite], want[finite], rtol=8 * eps, atol=8 * eps * scale,
                               err_msg=what)


# ----------------------------------------------------------------------------
# A slice of the generic suite
# ----------------------------------------------------------------------------

def _compiled_primitive(prim) -> bool:
    if prim.numba_lowering is not None or prim.numba_block is not None:
        return True
    if prim.lowering is None or prim.multiple_results:
        return False
    try:
        expr = prim.lowering(["a", "b", "c"], [None] * 3)
    except Exception:
        return False
    return getattr(expr, "fn", None) in numba_backend.UFUNC_KINDS


COMPILED = {name for name, p in core.primitives.items() if _compiled_primitive(p)}
# the cases written for primitives the backend compiles: those of tests/cases
# (control flow, structure, products), then every fourth of the rest (the lax
# and fnp elementwise catalog); 50 cases compile in about 15 s of CPU time
SLICE_SIZE = 50
_CANDIDATES = [c for c in CASES if c.prims and set(c.prims) <= COMPILED]
_FIRST = [c for c in _CANDIDATES if c.fun.__module__.startswith("tests.cases")]
_REST = [c for c in _CANDIDATES if not c.fun.__module__.startswith("tests.cases")]
SLICE = (_FIRST + _REST[::4])[:SLICE_SIZE]
_FIXED_SHAPES = {"any": (2, 3), "nonempty": (2, 3), "vec": (3,), "mat": (2, 3),
                 "sqmat": (3, 3)}


def _inputs(case):
    """One input per case: fixed shapes, each argument's first dtype, seed 0."""
    rng = np.random.default_rng(0)
    base, args = None, []
    for arg in case.args:
        if isinstance(arg.shape, tuple):
            shape = arg.shape
        elif arg.shape in ("same", "bcast"):
            shape = base if base is not None else (2, 3)
        else:
            shape = _FIXED_SHAPES[arg.shape]
        if base is None and not isinstance(arg.shape, tuple):
            base = shape
        dtype = args[0].dtype if arg.dtype == "same" else (
            arg.dtype[0] if isinstance(arg.dtype, tuple) else arg.dtype)
        args.append(_values(rng, arg, shape, dtype))
    return args


def _leaves(x):
    return [np.asarray(leaf) for leaf in fungrad.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("case", SLICE, ids=[c.name for c in SLICE])
def test_generic_slice_equals_eager(case):
    args = _inputs(case)
    with np.errstate(all="ignore"):
        want = case.fun(*args)
        got = numba_jit(case.fun)(*args)
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w)
    for i, (a, b) in enumerate(zip(g, w)):
        _close(a, b, f"{case.name}: output {i}")


def test_most_of_the_slice_compiles():
    """Most cases have a compiled segment; the rest (float -> int casts, batched
    or empty contractions, partial max/min reductions) run on NumPy, which the
    slice checks too.  (Lowering only: numba compiles on the first call.)"""
    compiled = [c.name for c in SLICE
                if "@numba.njit" in numba_jit(c.fun).lower(*_inputs(c)).source()]
    assert len(compiled) >= 0.6 * len(SLICE), sorted(set(c.name for c in SLICE) - set(compiled))


# ----------------------------------------------------------------------------
# Special values, overflow, indexing
# ----------------------------------------------------------------------------

def _special_chain(x, y):
    a = fnp.log(x) + fnp.exp(y) / x
    b = fnp.maximum(a, y) - fnp.minimum(x, a)
    return fnp.sqrt(b) * fnp.sign(a), fnp.sum(b), fnp.max(a)


def test_nan_and_inf_as_numpy():
    x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-310, 2.0, 800.0])
    y = np.array([1.0, np.nan, 0.0, -np.inf, np.inf, 3.0, -1e308, 710.0, -2.0])
    f = numba_jit(_special_chain)
    assert "@numba.njit" in f.lower(x, y).source()
    with np.errstate(all="ignore"):
        for got, want in zip(f(x, y), fungrad.jit(_special_chain)(x, y)):
            _close(got, want, "special values")


def test_integer_overflow_wraps_as_numpy():
    def f(a, b):
        return a * b + a - b, (a + b) * 3
    for dtype in (np.int32, np.int64, np.uint8):
        info = np.iinfo(dtype)
        a = np.array([info.max, info.min, 7, info.max // 2], dtype)
        b = np.array([2, info.max, info.max, 3], dtype)
        for got, want in zip(numba_jit(f)(a, b), fungrad.jit(f)(a, b)):
            _close(got, want, f"overflow {dtype.__name__}")


def test_out_of_bounds_indices_clamp_as_numpy():
    """Dynamic slices and gathers (compiled: tests/test_numba_scatter.py has
    their properties) clamp their indices as NumPy's."""
    def f(x, i):
        y = fnp.sin(x) * 2.0 + 1.0
        z = lax.dynamic_slice(y, (i,), (3,))
        w = y[fnp.stack([i, i + 10, -i])] * 2.0
        return fnp.exp(z) - z, y[i + 10], w + 1.0
    x = np.linspace(0, 1, 6)
    src = numba_jit(f).lower(x, 9).source()
    assert "@numba.njit" in src and "# NumPy" not in src and "min(max(" in src
    for i in (-20, -1, 0, 4, 9):
        for got, want in zip(numba_jit(f)(x, i), fungrad.jit(f)(x, i)):
            _close(got, want, f"index {i}")


# ----------------------------------------------------------------------------
# Loops, transformations around and inside
# ----------------------------------------------------------------------------

def _loss(w, xs):
    def step(h, x):
        h = fnp.tanh(h * w + x)
        return h, h * h
    h, ys = lax.scan(step, fnp.zeros_like(w), xs)
    return fnp.sum(h) + fnp.sum(ys)


def test_scan_fori_while_cond_compile_natively():
    def f(x):
        y = lax.fori_loop(0, 5, lambda i, c: c * 0.5 + fnp.sin(c), x)
        z = lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 1.5), (0, y))[1]
        return lax.cond(fnp.sum(z) > 0, lambda v: v + 1.0, lambda v: v - 1.0, z)
    x = np.linspace(-1, 1, 4)
    src = numba_jit(f).lower(x).source()
    assert src.count("@numba.njit") == 1 and "for " in src and "while True" in src
    _close(numba_jit(f)(x), fungrad.jit(f)(x), "loops")


def test_cumsum_pad_and_concatenate_compile():
    def f(x):
        y = lax.cumsum(x * 2.0, axis=1) + lax.cumsum(x, axis=0, reverse=True)
        z = lax.pad(fnp.sin(x), 0.5, ((1, 2, 0), (0, 1, 0)))
        return fnp.concatenate([y, fnp.cos(x)], axis=0), z * 3.0
    for dtype in (np.float64, np.float32):
        x = np.random.default_rng(2).normal(size=(3, 4)).astype(dtype)
        src = numba_jit(f).lower(x).source()
        assert "# NumPy" not in src and "@numba.njit" in src
        for got, want in zip(numba_jit(f)(x), fungrad.jit(f)(x)):
            _close(got, want, f"cumsum/pad/concatenate {dtype.__name__}")


def test_gradient_of_a_split_compiles_as_one_concatenation():
    # passes.concatenate_pads: the slices' cotangents joined, with a gap of
    # zeros where a slice is unused, under vmap too
    def loss(x):
        a, c = x[:, 0:2], x[:, 3]
        return fnp.sum(fnp.sin(a) * c[:, None]) + fnp.sum(c ** 3)
    x = np.random.default_rng(4).normal(size=(5, 4))
    src = numba_jit(fungrad.grad(loss)).lower(x).source()
    assert "np.concatenate(" in src and "# NumPy" not in src
    _close(numba_jit(fungrad.grad(loss))(x), fungrad.grad(loss)(x), "grad of a split")
    xs = np.stack([x, 2 * x])
    _close(numba_jit(fungrad.vmap(fungrad.grad(loss)))(xs), fungrad.vmap(fungrad.grad(loss))(xs),
           "vmap(grad) of a split")


def test_long_programs_are_cut_into_segments(monkeypatch):
    monkeypatch.setattr(numba_backend, "MAX_SEGMENT", 3)
    f = lambda x: fnp.sum(fnp.sin(fnp.reshape(fnp.exp(x) * x, (2, 3))) @ x.reshape(3, 2))
    x = np.linspace(0, 1, 6)
    assert numba_jit(f).lower(x).source().count("@numba.njit") >= 2
    _close(numba_jit(f)(x), fungrad.jit(f)(x), "cut into segments")


def test_grad_vmap_jvp_and_nested_jit():
    w, xs = np.linspace(-0.5, 0.5, 3), np.random.default_rng(1).normal(size=(6, 3))
    g = fungrad.grad(_loss)
    for got, want, what in [
            (numba_jit(g)(w, xs), g(w, xs), "jit(grad)"),
            (numba_jit(fungrad.vmap(_loss, (None, 0)))(w, xs[None].repeat(2, 0)),
             fungrad.vmap(_loss, (None, 0))(w, xs[None].repeat(2, 0)), "jit(vmap)"),
            (numba_jit(lambda w, t: fungrad.jvp(lambda v: _loss(v, xs), (w,), (t,)))(w, w)[1],
             fungrad.jvp(lambda v: _loss(v, xs), (w,), (w,))[1], "jit(jvp)"),
            (numba_jit(lambda w: fungrad.jit(g)(w, xs) * 2)(w), g(w, xs) * 2, "nested jit"),
            (fungrad.grad(numba_jit(_loss))(w, xs), g(w, xs), "grad(jit)")]:
        _close(got, want, what)


def test_debug_nans_runs_the_checking_numpy_code():
    f = numba_jit(lambda x: fnp.log(x) * 2 + 1)
    with fungrad.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f(np.array([-1.0, 2.0]))
    _close(f(np.array([1.0, 2.0])), np.log([1.0, 2.0]) * 2 + 1, "after debug_nans")


def test_what_numba_cannot_compile_falls_back_with_one_log_line(monkeypatch, caplog):
    # a rule that writes code numba rejects (typing fails on the first call)
    monkeypatch.setattr(lax.sin_p if hasattr(lax, "sin_p") else core.primitives["sin"],
                        "numba_lowering",
                        lambda a, in_avals, out_avals: f"np.sin({a[0]}).no_such_method()")
    f = numba_jit(lambda x: fnp.sin(x) * 2 + 1)
    x = np.linspace(0, 1, 4)
    with fungrad.log_compiles(True), caplog.at_level(logging.WARNING, "fungrad.jit"):
        got = f(x)
        again = f(x)
    _close(got, np.sin(x) * 2 + 1, "fallback")
    _close(again, got, "fallback again")
    lines = [r.getMessage() for r in caplog.records if "numba could not compile" in r.getMessage()]
    assert len(lines) == 1, lines


@pytest.mark.parametrize("on_disk", [False, True])
def test_segment_text_that_is_not_python_falls_back_with_a_log_line(on_disk, monkeypatch,
                                                                    caplog, tmp_path):
    """A rule writing invalid Python (a fungrad bug) must not surface as a
    SyntaxError from the cache (in memory or on disk): the program runs on
    the NumPy backend, with a log line saying so."""
    if on_disk:
        monkeypatch.setenv("FUNGRAD_NUMBA_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(core.primitives["sin"], "numba_lowering",
                        lambda a, in_avals, out_avals: f"np.sin({a[0]}) +* 1.0")
    f = lambda x: fnp.sin(x) * 2 + 1
    x = np.linspace(0, 1, 4)
    with caplog.at_level(logging.WARNING, "fungrad.jit"):
        got = numba_jit(f)(x)
    np.testing.assert_array_equal(got, fungrad.jit(f)(x))
    lines = [r.getMessage() for r in caplog.records if "not valid Python" in r.getMessage()]
    assert len(lines) == 1 and "bug in fungrad" in lines[0], lines
    assert numba_backend.compiled(numba_jit(f).lower(x).jaxpr).backend == "NumPy"


def test_no_user_text_in_compiled_source():
    def payload_name_is_ignored(x):
        return fnp.sin(x) * 2 + 1
    payload_name_is_ignored.__name__ = "__import__('os').system('echo owned')"
    src = numba_jit(payload_name_is_ignored).lower(np.ones(3)).source()
    assert "os" not in src.replace("pos", "") and "system" not in src


# ----------------------------------------------------------------------------
# The disk cache
# ----------------------------------------------------------------------------

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np, fungrad, fungrad.numpy as fnp
    f = fungrad.jit(lambda x: fnp.sum(fnp.sin(x) * 2.0 + x * x), backend="numba")
    x = np.linspace(0, 1, 7)
    out = float(f(x))
    comp = fungrad.jit  # (the compiled code is reached through the lowered program)
    from fungrad.interpreters import numba_backend
    entry = f.lower(x)
    segs = numba_backend.compiled(entry.jaxpr).segments
    stats = segs[0].numba_fn.stats
    print(json.dumps({"out": out, "hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values()),
                      "numba": segs[0].call != segs[0].twin}))
""")


def _run(cache_dir):
    import json
    env = dict(os.environ, FUNGRAD_NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _want():
    x = np.linspace(0, 1, 7)
    return float(np.sum(np.sin(x) * 2.0 + x * x))


def _entry_files(cache_dir):
    py = [os.path.join(cache_dir, n) for n in os.listdir(cache_dir) if n.endswith(".py")]
    pycache = os.path.join(cache_dir, "__pycache__")
    nb = [os.path.join(pycache, n) for n in os.listdir(pycache)]
    return py, nb


def _damage(files):
    for f in files:
        with open(f, "r+b") as fh:
            fh.seek(os.path.getsize(f) // 2)
            fh.write(b"\x00garbage\xff" * 8)


def test_cache_reuse_privacy_and_corruption(tmp_path):
    """One entry through its life (each step a new process): written private,
    reused, its module edited (rewritten, recompiled, never run), numba's files
    damaged (sums differ: dropped, recompiled), damaged with matching sums
    (numba cannot load them: dropped, compiled in memory)."""
    cache = tmp_path / "cache"
    first, _ = _run(cache)
    assert first["numba"] and first["hits"] == 0 and abs(first["out"] - _want()) < 1e-12
    (py,), nb = _entry_files(cache)
    for d in (cache, cache / "__pycache__"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for f in [py] + nb + [py[:-3] + ".sums"]:
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f

    second, _ = _run(cache)
    assert second["numba"] and second["hits"] >= 1 and second["misses"] == 0
    assert second["out"] == first["out"]

    with open(py, "a") as fh:
        fh.write("\nimport os\nos.system('echo owned')\n")
    third, err = _run(cache)
    assert "owned" not in err and third["numba"] and third["hits"] == 0
    assert third["out"] == first["out"]
    with open(py) as fh:
        assert "os.system" not in fh.read()

    _damage(_entry_files(cache)[1])
    fourth, _ = _run(cache)
    assert fourth["numba"] and fourth["hits"] == 0 and fourth["out"] == first["out"]

    from fungrad.interpreters import numba_cache
    nb = _entry_files(cache)[1]
    _damage(nb)
    with open(py[:-3] + ".sums", "w") as fh:
        fh.write(numba_cache._sums(sorted(nb)))
    fifth, _ = _run(cache)
    assert fifth["numba"] and fifth["out"] == first["out"]
    assert not _entry_files(cache)[1]       # the files numba could not load are gone


def test_a_cache_directory_others_can_reach_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    os.chmod(cache, 0o755)
    result, err = _run(cache)
    assert "not private" in err
    assert result["numba"] and abs(result["out"] - _want()) < 1e-12
    assert not [n for n in os.listdir(cache) if n.endswith(".py")]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dot_general_of_a_scalar_and_an_array_compiles(dtype):
    """No contracting or batch axes with a 0-d operand (blackjax's NUTS scales
    its momentum so): the product, as NumPy's, inside the compiled segment."""
    a, v = np.asarray(1.7, dtype), np.linspace(-2, 3, 7).astype(dtype)
    m = np.arange(6.0).reshape(2, 3).astype(dtype)
    none = (((), ()), ((), ()))

    def f(a, v, m):
        return (lax.dot_general(a, v, none), lax.dot_general(v, a, none),
                lax.dot_general(m, a * 2, none))
    for k, (got, want) in enumerate(zip(numba_jit(f)(a, v, m), f(a, v, m))):
        _close(got, want, f"output {k}")
    assert "# NumPy" not in numba_jit(f).lower(a, v, m).source()


@settings(max_examples=12)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data())
def test_any_and_all_over_some_axes_compile(shape, data):
    """A boolean test over some axes (a loop's test under vmap over keys)
    compiles, with NumPy's answers, empty axes included."""
    axes = tuple(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    x = np.random.default_rng(len(shape)).random(shape) > 0.6

    def f(v):
        return fnp.any(v, axis=axes), fnp.all(v, axis=axes)
    got = numba_jit(f)(x)
    np.testing.assert_array_equal(got[0], np.any(x, axis=axes))
    np.testing.assert_array_equal(got[1], np.all(x, axis=axes))
    assert "# NumPy" not in numba_jit(f).lower(x).source()


@settings(max_examples=10)
@given(dtype=st.sampled_from(["int8", "uint8", "int16", "uint32", "int64", "uint64"]),
       shape=st.lists(st.integers(0, 4), max_size=3), seed=st.integers(0, 2**32 - 1))
def test_population_count_of_arrays_compiles(dtype, shape, seed):
    """Set bits of every element (numpyro's tree building, vmapped over
    chains), as the NumPy backend counts them, in a compiled loop."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, info.max, size=shape, dtype=dtype,
                                             endpoint=True)
    compiled = numba_jit(lax.population_count)
    got, want = compiled(x), fungrad.jit(lax.population_count)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert "# NumPy" not in compiled.lower(x).source()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_wise_dot_products_compile(dtype):
    """vmap of a vector dot (numpyro's vectorized chains): a batch axis and one
    contracted axis, compiled as row-wise sums of products, NumPy's values
    within the sums' rounding; the same inside a loop's body."""
    rng = np.random.default_rng(5)
    a, b = (rng.normal(size=(3, 10)).astype(dtype) for _ in range(2))
    rows = fungrad.vmap(fnp.dot)

    def f(a, b):
        return rows(a, b), lax.fori_loop(0, 3, lambda i, c: c + rows(a, b), rows(a, b))
    for k, (got, want) in enumerate(zip(numba_jit(f)(a, b), fungrad.jit(f)(a, b))):
        _close(got, want, f"output {k}")
    assert "# NumPy" not in numba_jit(f).lower(a, b).source()


def test_large_loop_bodies_compile_as_functions_of_their_own(monkeypatch):
    """A body of OUTLINE_MIN equations or more (a vmapped sampler's loop) is a
    numba function of its own, called from the loop: nested loops, branches
    and constants inside it, the NumPy backend's values."""
    monkeypatch.setattr(numba_backend, "OUTLINE_MIN", 3)
    table = np.linspace(0.5, 1.5, 4)

    def f(x):
        def body(carry):
            i, v = carry
            v = lax.fori_loop(0, 3, lambda k, w: fnp.sin(w) * table + k, v)
            v = lax.cond(i % 2 == 0, lambda w: w * 2.0, lambda w: fnp.cos(w) - table, v)
            return i + 1, fnp.tanh(v) + fnp.exp(-v * v) * table
        return lax.while_loop(lambda c: c[0] < 5, body, (0, x))
    x = np.linspace(-1.0, 1.0, 4)
    compiled = numba_jit(f)
    for k, (got, want) in enumerate(zip(compiled(x), fungrad.jit(f)(x))):
        _close(got, want, f"output {k}")
    source = compiled.lower(x).source()
    assert source.count("def _body_") >= 2 and "# NumPy" not in source, source
