"""fungrad.numpy as an array API namespace (2024.12), checked against
``array_api_strict``, the consortium's reference implementation, as the oracle:
the same calls on the same values give the same values and dtypes (special
values included), the type promotion table, signatures (positional-only and
keyword-only parameters), the inspection namespace; and ``__array_namespace__``
on arrays and tracers.  The official suite (data-apis/array-api-tests) is run
by hand (see docs/array_api.md).
"""
from __future__ import annotations

import inspect

import array_api_strict as xs
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, 1e300]


def _np(a):
    return np.asarray(a) if not isinstance(a, (tuple, list)) else [np.asarray(v) for v in a]


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(got.dtype).eps, atol=0,
                                   equal_nan=True)
        # signed zeros too
        both_zero = (got.real == 0) & (want.real == 0)
        assert np.array_equal(np.signbit(got.real[both_zero]), np.signbit(want.real[both_zero]))
    else:
        np.testing.assert_array_equal(got, want)


def _np_dtype(strict_dtype) -> np.dtype:
    return np.asarray(xs.zeros(1, dtype=strict_dtype)).dtype


def _on_both(name, *values, module="", **kwargs):
    """``name(*values, **kwargs)`` in fungrad.numpy and array_api_strict."""
    f = getattr(getattr(fnp, module) if module else fnp, name)
    g = getattr(getattr(xs, module) if module else xs, name)
    strict_args = [xs.asarray(v) if isinstance(v, np.ndarray) else v for v in values]
    return f(*values, **kwargs), g(*strict_args, **kwargs)


def _floats(shape=st.integers(0, 5).map(lambda n: (n,))):
    return st.tuples(shape, st.sampled_from(["float32", "float64"])).flatmap(
        lambda sd: st.lists(st.sampled_from(SPECIALS) | st.floats(-5, 5),
                            min_size=int(np.prod(sd[0])), max_size=int(np.prod(sd[0]))).map(
            lambda v: np.asarray(v, sd[1]).reshape(sd[0])))


UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp",
         "expm1", "floor", "isfinite", "isinf", "isnan", "log", "log10", "log1p", "log2",
         "negative", "positive", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square",
         "tan", "tanh", "trunc", "reciprocal"]
BINARY = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater",
          "greater_equal", "hypot", "less", "less_equal", "logaddexp", "maximum", "minimum",
          "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_elementwise_with_special_values(name):
    @settings(max_examples=8)
    @given(_floats())
    def run(x):
        with np.errstate(all="ignore"):
            got, want = _on_both(name, x)
        _same(got, _np(want))
    run()


@pytest.mark.parametrize("name", BINARY)
def test_binary_elementwise_with_special_values(name):
    @settings(max_examples=8)
    @given(_floats(st.just((12,))), st.permutations(range(12)))
    def run(x, order):
        y = x[list(order)]      # every special value meets others of the same dtype
        with np.errstate(all="ignore"):
            got, want = _on_both(name, x, y)
        _same(got, _np(want))
    run()


def _dtype_pairs():
    return [(a, b) for a in DTYPES for b in DTYPES]


@pytest.mark.parametrize("a, b", _dtype_pairs())
def test_type_promotion_where_the_standard_speaks(a, b):
    """The standard's table (strict raises for the pairs it leaves undefined;
    fungrad gives NumPy's answer there)."""
    try:
        want = xs.result_type(getattr(xs, a), getattr(xs, b))
    except TypeError:
        return
    x, y = np.ones(2, a), np.ones(2, b)
    want = _np_dtype(want)
    assert fnp.result_type(x, y) == want
    assert fnp.add(x, y).dtype == want
    assert fnp.where(True, x, y).dtype == want


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float32", "float64",
                                   "complex64"])
@pytest.mark.parametrize("scalar", [True, 2, 2.5, 1j])
def test_python_scalars_are_weak(dtype, scalar):
    x = np.ones(2, dtype)
    try:
        want = (xs.asarray(x) * scalar).dtype
    except TypeError:     # e.g. int array * float: left undefined by the standard
        return
    assert fnp.multiply(x, scalar).dtype == _np_dtype(want)


MATRICES = st.integers(0, 2**31 - 1).map(lambda s: np.random.default_rng(s).normal(size=(2, 3, 3)))


@pytest.mark.parametrize("name, kwargs", [
    ("sum", {"axis": 1}), ("prod", {"axis": (0, 2), "keepdims": True}), ("max", {}),
    ("min", {"axis": -1}), ("mean", {"axis": 0}), ("std", {"correction": 1}),
    ("var", {"axis": (1, 2)}), ("argmax", {"axis": 1}), ("argmin", {}),
    ("cumulative_sum", {"axis": 2, "include_initial": True}), ("cumulative_prod", {"axis": 0}),
    ("count_nonzero", {"axis": 1}), ("all", {"axis": 0}), ("any", {}),
    ("sort", {"axis": 1, "descending": True}), ("argsort", {"axis": 0}),
    ("flip", {"axis": 1}), ("roll", {"shift": 2, "axis": 2}), ("permute_dims", {"axes": (2, 0, 1)}),
    ("moveaxis", {"source": 0, "destination": 2}), ("squeeze", {"axis": ()}),
    ("expand_dims", {"axis": -1}), ("reshape", {"shape": (9, -1)}),
    ("tile", {"repetitions": (2, 1, 1)}),
    ("repeat", {"repeats": 2, "axis": 1}), ("unstack", {"axis": 1}), ("diff", {"axis": 1, "n": 2}),
    ("matrix_transpose", {}), ("tril", {"k": -1}), ("triu", {"k": 1}),
    ("clip", {"min": -0.5, "max": 0.5}), ("round", {}), ("nonzero", {}),
    ("unique_values", {}), ("unique_counts", {}),
])
def test_array_functions_against_the_reference(name, kwargs):
    @settings(max_examples=3)
    @given(MATRICES)
    def run(x):
        x = np.round(x, 1)        # ties for sort/unique
        if name in ("all", "any", "count_nonzero", "nonzero"):
            x = x > 0
        positional = ("repetitions", "repeats", "source", "destination")   # the standard's
        args = [x] + [kwargs[k] for k in positional if k in kwargs]
        kw = {k: v for k, v in kwargs.items() if k not in positional}
        got, want = _on_both(name, *args, **kw)
        for g, w in zip(*[v if isinstance(v, (tuple, list)) else [v] for v in (got, want)]):
            _same(g, _np(w))
    run()


@pytest.mark.parametrize("name", ["cholesky", "det", "eigvalsh", "inv", "matrix_norm",
                                  "matrix_power", "matrix_rank", "pinv", "slogdet", "svdvals",
                                  "trace", "vector_norm", "diagonal", "solve", "vecdot",
                                  "cross", "outer", "tensordot", "matmul", "qr"])
def test_linalg_extension_against_the_reference(name):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 3))
    spd = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    args = {"cholesky": (spd,), "eigvalsh": (spd,), "matrix_power": (a, 3),
            "solve": (spd, a), "vecdot": (a, a), "cross": (a, a), "outer": (a[0, 0], a[1, 1]),
            "tensordot": (a, a[0]), "matmul": (a, a)}.get(name, (a,))
    got, want = _on_both(name, *args, module="linalg")
    if name == "qr":    # signs of the columns are not unique
        got, want = [np.abs(v) for v in got], [np.abs(np.asarray(v)) for v in want]
    for g, w in zip(*[v if isinstance(v, tuple) else (v,) for v in (got, want)]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, kwargs", [
    ("fft", {"n": 5}), ("ifft", {"axis": 0}), ("fftn", {"axes": (1, 2)}), ("ifftn", {}),
    ("rfft", {}), ("irfft", {"n": 4}), ("rfftn", {"s": (3, 4)}), ("irfftn", {"axes": (0, 1)}),
    ("hfft", {}), ("ihfft", {"norm": "ortho"}), ("fftshift", {"axes": 1}), ("ifftshift", {})])
def test_fft_extension_against_the_reference(name, kwargs):
    x = np.random.default_rng(1).normal(size=(2, 3, 4))
    if name in ("ifft", "ifftn", "irfft", "irfftn", "hfft", "fft", "fftn"):
        x = x + 1j * x[::-1]
    got, want = _on_both(name, x, module="fft", **kwargs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def test_fftfreq_and_creation_functions():
    for name, args, kwargs in [("fftfreq", (5,), {"d": 0.5}), ("rfftfreq", (6,), {})]:
        got, want = _on_both(name, *args, module="fft", **kwargs)
        _same(got, _np(want))
    for name, args, kwargs in [("arange", (1, 7, 2), {}),
                               ("linspace", (0, 1, 5), {"endpoint": False}),
                               ("eye", (3, 4), {"k": 1}), ("full", ((2,), 3), {}),
                               ("zeros", ((2, 3),), {"dtype": fnp.int32}), ("ones", (4,), {}),
                               ("tril", (np.ones((3, 3)),), {})]:
        kw = {k: (getattr(xs, np.dtype(v).name) if k == "dtype" else v) for k, v in kwargs.items()}
        got = getattr(fnp, name)(*args, **kwargs)
        want = getattr(xs, name)(*[xs.asarray(a) if isinstance(a, np.ndarray) else a
                                   for a in args], **kw)
        _same(got, _np(want))


def _strict_functions():
    names = []
    for prefix, module in (("", xs), ("linalg.", xs.linalg), ("fft.", xs.fft)):
        for name in sorted(getattr(module, "__all__", dir(module))):
            f = getattr(module, name)
            if (inspect.isfunction(f) and not name.startswith("_") and "flags" not in name
                    and name != "isin"):   # isin: the 2025.12 revision
                names.append(prefix + name)
    return names


def _resolve(qualname):
    *mod, name = qualname.split(".")
    return (getattr(getattr(fnp, mod[0]) if mod else fnp, name),
            getattr(getattr(xs, mod[0]) if mod else xs, name))


# where fungrad keeps JAX's and NumPy's positional-or-keyword parameter (users
# write repeat(x, repeats=2)), which the standard's own suite allows
KEYWORD_TOO = {"eye": {"M"}, "can_cast": {"to"}, "moveaxis": {"source", "destination"},
               "repeat": {"repeats"}, "tile": {"reps"}, "fft.fftfreq": {"n"},
               "fft.rfftfreq": {"n"}}


@pytest.mark.parametrize("qualname", _strict_functions())
def test_signatures_follow_the_standard(qualname):
    ours, theirs = _resolve(qualname)
    params = list(inspect.signature(ours).parameters.values())
    by_name = inspect.signature(ours).parameters
    P = inspect.Parameter
    for i, p in enumerate(inspect.signature(theirs).parameters.values()):
        if p.kind is P.KEYWORD_ONLY:
            q = by_name.get(p.name)
            assert q is not None and q.kind in (P.KEYWORD_ONLY, P.POSITIONAL_OR_KEYWORD), p.name
            continue
        q = params[i]
        if q.kind is P.VAR_POSITIONAL:           # e.g. meshgrid(*arrays)
            continue
        if p.kind is P.POSITIONAL_ONLY:
            assert q.kind is P.POSITIONAL_ONLY or q.name in KEYWORD_TOO.get(qualname, ()), (
                f"{qualname}: parameter {i} ({q.name}) must be positional-only")
        elif p.kind is P.POSITIONAL_OR_KEYWORD:
            assert (q.name, q.kind) == (p.name, p.kind), f"{qualname}: {q} should be {p}"


def test_a_positional_only_array_by_keyword_is_a_type_error():
    x = np.ones(3)
    for call in (lambda: fnp.sum(x=x), lambda: fnp.sum(a=x), lambda: fnp.sin(x=x),
                 lambda: fnp.linalg.solve(a=np.eye(3), b=x), lambda: fnp.take(x, indices=[0]),
                 lambda: fnp.asarray(obj=x), lambda: fnp.fft.fft(a=x)):
        with pytest.raises(TypeError):
            call()


def test_inspection_namespace():
    ours, theirs = fnp.__array_namespace_info__(), xs.__array_namespace_info__()
    assert fnp.__array_api_version__ == "2024.12"
    assert ours.capabilities().keys() == theirs.capabilities().keys()
    assert ours.devices() == [ours.default_device()] == ["cpu"]
    assert ours.default_dtypes() == {
        k: _np_dtype(v) for k, v in theirs.default_dtypes(device=theirs.default_device()).items()}
    for kind in (None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric", ("bool", "real floating")):
        assert set(ours.dtypes(kind=kind)) == set(theirs.dtypes(kind=kind)), kind
        for dtype in ours.dtypes(kind=kind).values():
            assert kind is None or fnp.isdtype(dtype, kind)
    with pytest.raises(ValueError, match="kind"):
        ours.dtypes(kind="floating")
    with pytest.raises(ValueError, match="one device"):
        ours.dtypes(device="gpu")


def test_finfo_iinfo_give_python_numbers_for_dtypes_and_arrays():
    for arg in (fnp.float32, np.ones(2, np.float32), np.dtype(np.float32)):
        info = fnp.finfo(arg)
        assert isinstance(info.eps, float) and info.eps == float(xs.finfo(xs.float32).eps)
        assert info.dtype == np.float32 and isinstance(info.bits, int)
    info = fnp.iinfo(np.ones(2, np.int16))
    assert (info.min, info.max, info.bits) == (-32768, 32767, 16) and info.dtype == np.int16


def test_array_namespace_on_arrays_and_tracers():
    x = fnp.asarray([1.0, 2.0])
    assert x.__array_namespace__() is fnp
    assert x.__array_namespace__(api_version="2023.12") is fnp
    with pytest.raises(ValueError, match="2024.12"):
        x.__array_namespace__(api_version="2030.12")

    def f(t):
        xp = t.__array_namespace__()
        assert xp is fnp and t.device == "cpu" and t.to_device("cpu") is t
        return xp.sum(xp.sin(t))
    np.testing.assert_allclose(fungrad.grad(f)(x), np.cos([1.0, 2.0]))
    np.testing.assert_allclose(fungrad.jit(fungrad.vmap(fungrad.grad(f)))(np.ones((2, 2))),
                               np.cos(np.ones((2, 2))))


def test_from_dlpack_and_export_of_read_only_arrays():
    x = fnp.asarray([1.0, 2.0])
    y = fnp.from_dlpack(x)
    np.testing.assert_array_equal(y, x)
    assert isinstance(y, fungrad.Array) and not y.flags.writeable
    np.testing.assert_array_equal(np.from_dlpack(x), x)
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
