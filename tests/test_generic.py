"""Generic property tests over every Case in tests/cases/*.py and over the registry.

One test per property, parametrised by case (see tests/harness.py):
values vs NumPy, staged vs eager (+ declared avals vs computed), jit vs eager
(generated NumPy code), check_grads (orders 1..grad_order, fwd and rev,
transpose identity), vmap vs a loop.  The registry tests check every
primitive's rules and that some case binds it (measured by tests/prim_coverage.py).
"""
from __future__ import annotations

import importlib
import json
import os
import pathlib
import pkgutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
from fungrad import core
from fungrad.test_util import check_grads
from fungrad.tree_util import tree_flatten
import tests.cases
from tests.harness import Arg, Case
from tests.numpy_twins import numpy_twin


def _load_cases() -> list[Case]:
    cases = []
    for info in pkgutil.iter_modules(tests.cases.__path__):
        module = importlib.import_module(f"tests.cases.{info.name}")
        cases.extend(getattr(module, "CASES", []))
    return cases


CASES = _load_cases()

# Examples per case and property. The suite has thousands of (case, property)
# pairs, so each draws few examples; the derivative checks are the costliest
# (each example runs jvp, vjp and finite differences at orders 1 and 2).
# HYPOTHESIS_PROFILE=dev multiplies them for local bug hunting.
_SCALE = 4 if settings().max_examples >= 40 else 1
_EXAMPLES = {"values": 10 * _SCALE, "staged": 5 * _SCALE, "grads": 4 * _SCALE,
             "vmap": 6 * _SCALE}
IDS = [c.name for c in CASES]

# Every case again, spelled with NumPy's own functions (np.sum for fnp.sum...),
# which run on tracers through NEP 13/18 (tests/numpy_twins.py). Eagerly a twin
# is NumPy itself, so the staged, jit, derivative and vmap properties compare
# the traced NumPy calls with NumPy; it draws fewer examples than its case.
TWINS = [t for t in map(numpy_twin, CASES) if t is not None]
_TWIN_EXAMPLES = {"staged": 2 * _SCALE, "grads": 2 * _SCALE, "vmap": 3 * _SCALE}
_TWIN_NAMES = {t.name for t in TWINS}


def _examples(case: Case, prop: str) -> int:
    return (_TWIN_EXAMPLES if case.name in _TWIN_NAMES else _EXAMPLES)[prop]


def test_case_names_are_unique():
    dupes = {n for n in IDS if IDS.count(n) > 1}
    assert not dupes, f"duplicate case names: {sorted(dupes)}"


# ----------------------------------------------------------------------------
# Drawing inputs
# ----------------------------------------------------------------------------

_FIXED = {"vec": 1, "mat": 2, "sqmat": 2}


def _draw_shape(draw, family, base):
    if isinstance(family, tuple):
        return family
    if family in ("any", "nonempty"):
        lo = 0 if family == "any" else 1
        rank = draw(st.integers(0, 3))
        return tuple(draw(st.integers(lo, 4)) for _ in range(rank))
    if family == "same":
        return base
    if family == "bcast":
        keep = draw(st.integers(0, len(base)))
        tail = tuple(d if draw(st.booleans()) else 1 for d in base[len(base) - keep:])
        return tail
    if family == "vec":
        return (draw(st.integers(1, 4)),)
    if family == "mat":
        return (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    if family == "sqmat":
        n = draw(st.integers(1, 4))
        return (n, n)
    raise ValueError(f"unknown shape family {family!r}")


def _draw_shapes(draw, args):
    base = None
    shapes = []
    for a in args:
        s = _draw_shape(draw, a.shape, base if base is not None else ())
        if base is None and a.shape in ("any", "nonempty", "vec", "mat", "sqmat"):
            base = s
        shapes.append(s)
    # "same"/"bcast" before the base argument: redraw against the base
    return [(_draw_shape(draw, a.shape, base or ()) if a.shape in ("same", "bcast") else s)
            for a, s in zip(args, shapes)]


def _values(rng, arg: Arg, shape, dtype):
    dtype = np.dtype(dtype)
    if arg.make is not None:
        return np.asarray(arg.make(rng, shape, dtype))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(arg.low), int(arg.high) + 1, size=shape).astype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if arg.unique and n > 1:
        slots = (rng.permutation(n) + 0.5 + rng.uniform(-0.2, 0.2, n)) / n
        x = (arg.low + (arg.high - arg.low) * slots).reshape(shape)
    else:
        x = rng.uniform(arg.low, arg.high, size=shape)
    for a in arg.avoid:
        near = np.abs(x - a) < arg.margin
        x = np.where(near, a + np.where(x >= a, 1, -1) * (arg.margin + rng.uniform(0, 0.2, shape)), x)
    if np.issubdtype(dtype, np.complexfloating):
        low, high = arg.imag if arg.imag is not None else (arg.low, arg.high)
        x = x + 1j * rng.uniform(low, high, size=shape)
    return np.asarray(x).astype(dtype)


@st.composite
def case_inputs(draw, case: Case):
    shapes = _draw_shapes(draw, case.args)
    dtypes = []
    for a in case.args:
        if a.dtype == "same":
            dtypes.append(dtypes[0])
        else:
            dtypes.append(draw(st.sampled_from(a.dtype)) if isinstance(a.dtype, tuple) else a.dtype)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    return [_values(rng, a, s, d) for a, s, d in zip(case.args, shapes, dtypes)], shapes, dtypes, seed


def _leaves(x):
    return [np.asarray(l) for l in tree_flatten(x)[0]]


def _assert_same(got, want, case, what):
    g_leaves, w_leaves = _leaves(got), _leaves(want)
    assert len(g_leaves) == len(w_leaves), f"{what}: {len(g_leaves)} outputs, expected {len(w_leaves)}"
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        assert g.shape == w.shape, f"{what}: output {i} shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"{what}: output {i} dtype {g.dtype}, expected {w.dtype}"
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {i}")
        else:
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{what}: output {i}", equal_nan=True)


# ----------------------------------------------------------------------------
# The properties
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_against_numpy(case: Case):
    @settings(max_examples=_EXAMPLES["values"])
    @given(case_inputs(case))
    def run(inputs):
        args = inputs[0]
        copies = [a.copy() for a in args]
        out = case.fun(*args)
        for a, c in zip(args, copies):
            np.testing.assert_array_equal(a, c, err_msg="input was mutated")
        if case.ref is not None:
            with np.errstate(all="ignore"):
                want = case.ref(*args)
            _assert_same(out, want, case, f"{case.name} vs NumPy")
        if case.check is not None:
            case.check(out, args)
    run()


@pytest.mark.parametrize("case", CASES + TWINS, ids=IDS + [t.name for t in TWINS])
def test_staged_equals_eager(case: Case):
    @settings(max_examples=_examples(case, "staged"))
    @given(case_inputs(case))
    def run(inputs):
        args = inputs[0]
        closed = fungrad.make_jaxpr(case.fun)(*args)
        core.typecheck_jaxpr(closed.jaxpr)
        eager = _leaves(case.fun(*args))
        staged = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        for i, (aval, e) in enumerate(zip(closed.out_avals, eager)):
            assert aval.shape == e.shape and aval.dtype == e.dtype, (
                f"{case.name}: declared output {i} {aval.str_short()} but computed "
                f"{e.dtype}{list(e.shape)}")
        _assert_same(staged, eager, case, f"{case.name} staged vs eager")
    run()


@pytest.mark.parametrize("case", CASES + TWINS, ids=IDS + [t.name for t in TWINS])
def test_jit_equals_eager(case: Case):
    @settings(max_examples=_examples(case, "staged"))
    @given(case_inputs(case))
    def run(inputs):
        args = inputs[0]
        _assert_same(fungrad.jit(case.fun)(*args), case.fun(*args), case,
                     f"{case.name} jit vs eager")
    run()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_as_threaded_code_equals_eager(case: Case, monkeypatch):
    # every primitive's kernel in the threaded code that runs long programs
    # (fungrad/interpreters/threaded.py), here for programs of any length
    from fungrad.interpreters import threaded
    monkeypatch.setattr(threaded, "MIN_EQNS", -1)

    @settings(max_examples=max(1, _examples(case, "staged") // 2))
    @given(case_inputs(case))
    def run(inputs):
        args = inputs[0]
        _assert_same(fungrad.jit(case.fun)(*args), case.fun(*args), case,
                     f"{case.name} threaded jit vs eager")
    run()


def _diff_argnums(case: Case, args):
    return [i for i, (a, x) in enumerate(zip(case.args, args))
            if a.diff and np.issubdtype(x.dtype, np.inexact)]


GRAD_CASES = [c for c in CASES + TWINS if c.grad_order > 0]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_grads_against_finite_differences(case: Case):
    @settings(max_examples=_examples(case, "grads"))
    @given(case_inputs(case))
    def run(inputs):
        args = inputs[0]
        nums = _diff_argnums(case, args)
        if not nums:
            return

        def f(*diff_args):
            full = list(args)
            for i, a in zip(nums, diff_args):
                full[i] = a
            return case.fun(*full)
        check_grads(f, tuple(args[i] for i in nums), order=case.grad_order, modes=case.modes,
                    rtol=case.grad_rtol, atol=case.grad_atol, eps=case.eps)
    run()


VMAP_CASES = [c for c in CASES + TWINS if c.vmap]


@pytest.mark.parametrize("case", VMAP_CASES, ids=[c.name for c in VMAP_CASES])
def test_vmap_against_loop(case: Case):
    @settings(max_examples=_examples(case, "vmap"))
    @given(case_inputs(case), st.data())
    def run(inputs, data):
        _, shapes, dtypes, seed = inputs
        size = data.draw(st.integers(1, 3), label="batch size")
        n = len(case.args)
        mapped = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="mapped")
        if not any(mapped):
            mapped[0] = True
        axes = [data.draw(st.integers(0, len(s)), label=f"axis{i}") if m else None
                for i, (m, s) in enumerate(zip(mapped, shapes))]
        rng = np.random.default_rng(seed)
        examples = [[_values(rng, a, s, d) for a, s, d in zip(case.args, shapes, dtypes)]
                    for _ in range(size)]
        batched = [np.stack([ex[i] for ex in examples], axis=ax) if ax is not None
                   else examples[0][i] for i, ax in enumerate(axes)]
        got = fungrad.vmap(case.fun, in_axes=tuple(axes))(*batched)
        per_example = [case.fun(*[ex[i] if ax is not None else examples[0][i]
                                  for i, ax in enumerate(axes)]) for ex in examples]
        want = [np.stack(leaves) for leaves in zip(*[_leaves(o) for o in per_example])]
        _assert_same(got, want, case, f"{case.name} vmap in_axes={tuple(axes)}")
    run()


# ----------------------------------------------------------------------------
# The registry: every primitive has every rule and is bound by a case
# ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bound_primitives():
    """What each case binds, measured in a fresh interpreter (tests/prim_coverage.py)."""
    root = pathlib.Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    run = subprocess.run([sys.executable, "-m", "tests.prim_coverage"], cwd=root, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, f"the coverage measurement failed:\n{run.stderr[-3000:]}"
    return json.loads(run.stdout)


def test_every_primitive_is_bound_by_a_case(bound_primitives):
    errors = {name: r["errors"] for name, r in bound_primitives.items() if r["errors"]}
    assert not errors, f"cases that could not be staged for the measurement: {errors}"
    covered = {p for r in bound_primitives.values() for p in r["prims"]}
    missing = sorted(set(core.primitives) - covered)
    assert not missing, f"primitives no test case binds: {missing}"


def test_declared_prims_are_bound(bound_primitives):
    # a case's prims= documents what it is for; it must stay true
    wrong = {c.name: sorted(set(c.prims) - set(bound_primitives[c.name]["prims"]))
             for c in CASES if set(c.prims) - set(bound_primitives[c.name]["prims"])}
    assert not wrong, f"cases declaring primitives they do not bind: {wrong}"


@pytest.mark.parametrize("name", sorted(core.primitives))
def test_every_primitive_has_its_rules(name):
    p = core.primitives[name]
    for rule in ("impl", "abstract_eval", "jvp", "batch"):
        assert getattr(p, rule) is not None, f"{name} has no {rule} rule"
    # code generation: an expression (lower), a Python block (emit_block), or
    # spliced into the caller's code (inline call primitives)
    assert p.lowering is not None or p.emit_block is not None or p.inline, f"{name} has no lowering"
    if p.linear:
        assert p.transpose is not None, f"{name} is linear but has no transpose rule"
