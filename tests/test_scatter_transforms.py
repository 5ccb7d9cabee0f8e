"""The scatter family (``x.at[idx].set/add/subtract/multiply/divide/min/max/
power/apply/get``) under stacks of up to three transformations.

Each case is a function of a length-3 vector ``v`` whose operand and updates
are either computed from ``v`` (traced) or constants.  Its reference computes
the same values without any gather or scatter: one-hot dot products pick
elements, and the result is assembled as a sum of scaled basis vectors.  A
stack of transformations is applied to both and the results compared, so the
scatter rules (JVP, transpose, batching, lowering) are checked against the
rules of unrelated primitives, at every order the stack reaches.

The full product (819 stacks x 36 update kinds x 3 index kinds) is far too
slow for CI; the matrix is sampled deterministically: every depth-1 stack with
every update kind, every depth-2 stack with four update kinds, and a fixed
sample of depth-3 stacks with one each.  Across the sample every update kind
and index kind appears at every depth.
"""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp

N_OPERAND = 4
OPS = ("set", "add", "subtract", "multiply", "divide", "min", "max", "power", "apply", "get")
INDEX = {"repeated": np.array([0, 2, 0]), "unique": np.array([3, 0, 1]), "slice": slice(1, 4)}
OPERAND = np.array([2.1, 1.7, 2.4, 1.9])
UPDATES = np.array([0.6, 0.9, 1.05])
DV = np.array([0.3, -0.5, 0.7])
V = np.array([0.4, -0.9, 0.65])
SCALES = np.array([0.9, 1.2])


def _operand(v, traced):
    # positive (power), and away from the updates' values (no min/max ties)
    return 0.5 * fnp.concatenate([v, v[:1] * v[1:2]]) + 2.0 if traced else fnp.asarray(OPERAND)


def _updates(v, traced):
    return 0.3 * v + 0.8 if traced else fnp.asarray(UPDATES)


def scatter_fn(op, index, traced_operand, traced_updates):
    def f(v):
        x, u = _operand(v, traced_operand), _updates(v, traced_updates)
        ref = x.at[index]
        out = ref.apply(fnp.sin) if op == "apply" else ref.get() if op == "get" else \
            getattr(ref, op)(u)
        return out + 0.1 * fnp.sum(v)      # depends on v even if the scatter does not
    return f


def _combine(op, x_p, us):
    """The value at one operand position given the updates that land there."""
    if not us:
        return x_p
    if op == "set":
        return us[-1]                   # NumPy: the last of repeated indices wins
    if op in ("add", "subtract"):
        total = sum(us[1:], us[0])
        return x_p + total if op == "add" else x_p - total
    product = us[0]
    for u in us[1:]:
        product = product * u
    if op in ("min", "max"):
        best = fnp.minimum if op == "min" else fnp.maximum
        out = x_p
        for u in us:
            out = best(out, u)
        return out
    return {"multiply": lambda: x_p * product, "divide": lambda: x_p / product,
            "power": lambda: x_p ** product}[op]()


def dense_fn(op, index, traced_operand, traced_updates):
    """``scatter_fn`` written with dot products, sums and elementwise ops only."""
    positions = list(np.arange(N_OPERAND)[index])
    eye4, eye3 = np.eye(N_OPERAND), np.eye(len(positions))

    def f(v):
        x, u = _operand(v, traced_operand), _updates(v, traced_updates)
        pick = lambda vec, k, eye: fnp.dot(vec, eye[k])
        if op == "get":
            out = sum(pick(x, p, eye4) * eye3[k] for k, p in enumerate(positions))
        else:
            parts = []
            for p in range(N_OPERAND):
                x_p = pick(x, p, eye4)
                landing = [k for k, q in enumerate(positions) if q == p]
                if op == "apply":      # once per index that lands here, as JAX
                    value = x_p
                    for _ in landing:
                        value = fnp.sin(value)
                else:
                    value = _combine(op, x_p, [pick(u, k, eye3) for k in landing])
                parts.append(value * eye4[p])
            out = sum(parts[1:], parts[0])
        return out + 0.1 * fnp.sum(v)
    return f


def _scalar(f):
    return lambda v: fnp.sum(fnp.sin(f(v)))


def _vjp(f):
    def pulled(v):
        out, pull = fungrad.vjp(f, v)
        return pull(fnp.cos(out))[0]
    return pulled


# each transformation maps a function of v to another function of v
TRANSFORMS = {
    "grad": lambda f: fungrad.grad(_scalar(f)),
    "jvp": lambda f: lambda v: fungrad.jvp(f, (v,), (fnp.asarray(DV),))[1],
    "vjp": _vjp,
    "linearize": lambda f: lambda v: fungrad.linearize(f, v)[1](fnp.asarray(DV)),
    "jacfwd": fungrad.jacfwd,
    "jacrev": fungrad.jacrev,
    "hessian": lambda f: fungrad.hessian(_scalar(f)),
    "vmap": lambda f: lambda v: fungrad.vmap(lambda s: f(v * s))(fnp.asarray(SCALES)),
    "jit": fungrad.jit,
}

# (op, traced operand, traced updates): apply and get have no updates
KINDS = [(op, to, tu) for op in OPS for to in (False, True)
         for tu in ((False,) if op in ("apply", "get") else (False, True))]
INDEX_NAMES = tuple(INDEX)


def _sample():
    """The deterministic sample of the matrix described in the module docstring."""
    cases = [(stack, kind, INDEX_NAMES[i % 3])
             for i, (stack, kind) in enumerate(itertools.product(
                 [(t,) for t in TRANSFORMS], KINDS))]
    combos = list(itertools.product(KINDS, INDEX_NAMES))
    depth2 = list(itertools.product(TRANSFORMS, repeat=2))
    for i, stack in enumerate(depth2):
        for k in range(4):
            kind, index = combos[(4 * i + k) % len(combos)]
            cases.append((stack, kind, index))
    depth3 = random.Random(12).sample(list(itertools.product(TRANSFORMS, repeat=3)), 120)
    for i, stack in enumerate(depth3):
        kind, index = combos[(7 * i) % len(combos)]
        cases.append((stack, kind, index))
    return cases


CASES = _sample()


def _case_id(case):
    stack, (op, to, tu), index = case
    return (f"{'-'.join(stack)}:{op}:{index}:op_{'traced' if to else 'const'}"
            + ("" if op in ("apply", "get") else f":upd_{'traced' if tu else 'const'}"))


def _apply_stack(stack, f):
    for name in reversed(stack):        # stack[0] is the outermost transformation
        f = TRANSFORMS[name](f)
    return f


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_scatter_under_transform_stack(case):
    stack, (op, traced_operand, traced_updates), index = case
    args = (op, INDEX[index], traced_operand, traced_updates)
    got = _apply_stack(stack, scatter_fn(*args))(fnp.asarray(V))
    want = _apply_stack(stack, dense_fn(*args))(fnp.asarray(V))
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-11)


def test_the_sample_covers_every_kind_at_every_depth():
    for depth in (1, 2, 3):
        seen = {(kind, index) for stack, kind, index in CASES if len(stack) == depth}
        assert {kind for kind, _ in seen} == set(KINDS), depth
        assert {index for _, index in seen} == set(INDEX_NAMES), depth
        stacks = [stack for stack, _, _ in CASES if len(stack) == depth]
        assert {t for s in stacks for t in s} == set(TRANSFORMS), depth


@pytest.mark.parametrize("op", OPS)
def test_scatter_values_match_the_dense_reference(op):
    # the reference itself: its values equal NumPy's in-place updates
    for index, (to, tu) in itertools.product(INDEX, [(False, False), (True, True)]):
        f = scatter_fn(op, INDEX[index], to, tu)
        np.testing.assert_allclose(f(V), dense_fn(op, INDEX[index], to, tu)(V), rtol=1e-12)
    x, u = OPERAND.copy(), UPDATES
    numpy_update = {"set": lambda: x.__setitem__(INDEX["repeated"], u),
                    "add": lambda: np.add.at(x, INDEX["repeated"], u),
                    "multiply": lambda: np.multiply.at(x, INDEX["repeated"], u),
                    "min": lambda: np.minimum.at(x, INDEX["repeated"], u),
                    "max": lambda: np.maximum.at(x, INDEX["repeated"], u)}
    if op in numpy_update:
        numpy_update[op]()
        got = scatter_fn(op, INDEX["repeated"], False, False)(V) - 0.1 * V.sum()
        np.testing.assert_allclose(got, x, rtol=1e-12)
