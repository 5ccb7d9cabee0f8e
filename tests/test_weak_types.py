"""Weak types (JAX's ``weak_type``) against real JAX, case by case.

tests/data/jax_weak_type_table.json was recorded once with real JAX 0.10.2 by
tools/gen_weak_type_table.py (see its docstring) from the cases in
tests/weak_type_cases.py: the dtype and weak flag of values made without
arguments, of about a hundred expressions on strong, weak and Python-scalar
arguments eagerly, under ``jit``, under ``vmap`` and under ``grad``, and of
``+``/``*``/``>`` on every pair of operand kinds, with jax_enable_x64 on and
off.  Each test evaluates the same expression text with ``jax``/``jnp``/``lax``
bound to fungrad's modules and lists every entry that differs.  (Where JAX
rejects an expression's arguments the table has no entry, and nothing is
compared.)

Under ``grad`` the value's type inside the traced function and the
gradient's dtype and weak type are compared (tests/test_weak_derivatives.py
checks the weak types of derivatives in depth).  ``KNOWN_DIFFERENCES`` lists
what differs, with the reason; the tests check that exactly those entries
differ, so a fix or a new difference both show up.
"""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.lax as flax_
import fungrad.numpy as fnp
from fungrad.numpy._lattice import lattice_result_type
from tests.weak_type_cases import CASES, CREATION, PAIR_OPERANDS, make_arg

TABLE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_weak_type_table.json")
                   .read_text())
MODES = {"x64": True, "x32": False}
NAMESPACE = {"jax": fungrad, "jnp": fnp, "lax": flax_, "np": np}


@pytest.fixture(params=list(MODES))
def mode(request):
    with fungrad.enable_x64(MODES[request.param]):
        yield request.param


def describe(x):
    if not hasattr(x, "weak_type"):
        return f"a {type(x).__name__}, not an array"
    return [str(x.dtype), bool(x.weak_type)]


def run_modes(fn, argnames, wanted):
    """{mode: [dtype, weak]} of fungrad's ``fn`` for the modes JAX ran."""
    args = [make_arg(NAMESPACE, n) for n in argnames]
    batched = [make_arg(NAMESPACE, n, batch=2) for n in argnames]
    axes = [None if isinstance(a, (int, float, complex)) else 0 for a in args]
    runs = {"eager": lambda: fn(*args), "jit": lambda: fungrad.jit(fn)(*args),
            "vmap": lambda: fungrad.vmap(fn, in_axes=axes)(*batched), "grad": None}
    got = {}
    for name, want in wanted.items():
        if want is None:
            continue
        try:
            got[name] = describe(runs[name]()) if name != "grad" else _grad(fn, args)
        except Exception as err:            # reported as a mismatch, with the reason
            got[name] = f"{type(err).__name__}: {str(err)[:120]}"
    return got


def _grad(fn, args):
    inside = []

    def loss(a, *rest):
        y = fn(a, *rest)
        inside.append(describe(fungrad.typeof(y)))
        return fnp.sum(y).real
    result = describe(fungrad.grad(loss)(*args))
    return [inside[0], result]


# (expression, arguments, way) -> why fungrad differs from JAX there; the
# tests check that these still differ (so a fix shows up) and nothing else does
KNOWN_DIFFERENCES = {
    ("lambda a: jnp.atleast_1d(a)[0]", args, "eager"): "an element of a strongly typed eager "
    "Array is NumPy's scalar (hashable, as NumPy code expects), not a 0-d Array"
    for args in ("f32", "i32", "f32s")}
X32_KNOWN_DIFFERENCES = {}


def _known(mode, src, argnames, way):
    key = (src, ",".join(argnames), way)
    return key in KNOWN_DIFFERENCES or mode == "x32" and key in X32_KNOWN_DIFFERENCES


def _mismatches(mode, src, arg_lists):
    fn = eval(src, NAMESPACE)
    bad = []
    for argnames in arg_lists:
        key = f"{src} @ {','.join(argnames)}"
        wanted = TABLE[mode]["cases"][key]
        got = run_modes(fn, argnames, wanted)
        for name, value in got.items():
            if (value == wanted[name]) == _known(mode, src, argnames, name):
                bad.append(f"{key} [{name}]: fungrad {value}, JAX {wanted[name]}"
                           + (" (a known difference that is gone: remove it from "
                              "KNOWN_DIFFERENCES)" if _known(mode, src, argnames, name) else ""))
    return bad


def test_values_made_without_arguments_match_jax(mode):
    bad = []
    for src, want in TABLE[mode]["creation"].items():
        try:
            got = describe(eval(src, NAMESPACE))
        except Exception as err:
            got = f"{type(err).__name__}: {err}"
        if got != want:
            bad.append(f"{src}: fungrad {got}, JAX {want}")
    assert bad == []


@pytest.mark.parametrize("src,arg_lists", CASES, ids=[src for src, _ in CASES])
def test_expression_eager_jit_vmap_grad_match_jax(mode, src, arg_lists):
    assert _mismatches(mode, src, arg_lists) == []


@pytest.mark.parametrize("op", ["lambda a, b: a + b", "lambda a, b: a * b",
                                "lambda a, b: a > b"])
def test_every_pair_of_operand_kinds_matches_jax(mode, op):
    fn = eval(op, NAMESPACE)
    bad = []
    for key, want in TABLE[mode]["pairs"].items():
        if not key.startswith(op + " @ "):
            continue
        a, b = key.split(" @ ")[1].split(",")
        x, y = make_arg(NAMESPACE, a), make_arg(NAMESPACE, b)
        got = {"eager": describe(fn(x, y)), "jit": describe(fungrad.jit(fn)(x, y))}
        if got != want:
            bad.append(f"{key}: fungrad {got}, JAX {want}")
    assert bad == []


_OPERANDS = st.sampled_from(PAIR_OPERANDS)


@given(_OPERANDS, _OPERANDS, st.sampled_from([True, False]))
def test_a_result_is_weak_exactly_when_the_lattice_says_so(a, b, x64):
    # the lattice's (dtype, weak) of the operands is the dtype and weak type of
    # their sum, eagerly, under jit and under vmap (the batched operands' types
    # are the unbatched ones')
    if a.startswith("p") and b.startswith("p"):
        return                      # two Python scalars: Python's own addition
    with fungrad.enable_x64(x64):
        x, y = make_arg(NAMESPACE, a), make_arg(NAMESPACE, b)
        typed = [(fnp.asarray(v).dtype, fungrad.typeof(v).weak_type) for v in (x, y)]
        want_dtype, want_weak = lattice_result_type(typed)
        outs = [x + y, fungrad.jit(lambda u, v: u + v)(x, y)]
        axes = [None if isinstance(v, (int, float, complex)) else 0 for v in (x, y)]
        xb, yb = make_arg(NAMESPACE, a, batch=2), make_arg(NAMESPACE, b, batch=2)
        outs.append(fungrad.vmap(lambda u, v: u + v, in_axes=axes)(xb, yb))
        for out in outs:
            assert out.weak_type == want_weak
            if want_weak:         # a weak result takes its kind's default dtype
                assert out.dtype.kind == np.dtype(want_dtype).kind
            else:
                assert out.dtype == want_dtype
        assert TABLE["x64" if x64 else "x32"]["pairs"][f"lambda a, b: a + b @ {a},{b}"][
            "eager"] == describe(outs[0])


@given(_OPERANDS, st.sampled_from(["sin", "negative", "square", "abs"]),
       st.sampled_from([True, False]))
def test_a_unary_function_keeps_its_operand_s_weak_type(a, name, x64):
    with fungrad.enable_x64(x64):
        x = make_arg(NAMESPACE, a)
        if isinstance(x, (int, float, complex)):
            x = fnp.asarray(x)
        f = getattr(fnp, name)
        for out in (f(x), fungrad.jit(f)(x), fungrad.vmap(f)(fnp.stack([x, x]))):
            assert out.weak_type == fungrad.typeof(x).weak_type


def test_eager_integer_sum_accumulates_in_the_canonical_integer_type():
    # JAX's x.sum() of int32 with x64 off is int32 and wraps as int32 arithmetic
    # does; NumPy's would be int64 (the recorded table has the dtypes only)
    with fungrad.enable_x64(False):
        x = fnp.array([2**30] * 3, fnp.int32)
        assert x.sum().dtype == np.int32 and int(x.sum()) == 3 * 2**30 - 2**32
        assert fnp.array([True, True]).sum().dtype == np.int32
        assert fnp.array([3], fnp.uint8).prod().dtype == np.uint32
    with fungrad.enable_x64(True):
        assert fnp.array([1, 2], fnp.int8).sum().dtype == np.int64
        assert fnp.array([1, 2], fnp.int8).sum(dtype=np.int8).dtype == np.int8
