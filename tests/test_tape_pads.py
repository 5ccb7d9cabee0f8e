"""The eager tape's slice cotangents kept as boxes (``interpreters/tape_pads.py``):
gradients through any set of slices (disjoint, overlapping, strided, empty,
of other slices, meeting dense cotangents) are bit for bit, signed zeros
included, those of the tape that writes every slice's transpose out."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fungrad
import fungrad.numpy as fnp
from fungrad.interpreters import tape, tape_pads
from fungrad.lax.structural import slice_p


def _dense_tape_grad(f, *args):
    """``grad(f)`` by a tape without boxes (a fresh linearization cache)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(slice_p, "transpose_box", None)
        m.setattr(tape, "_CACHE", {})
        return fungrad.grad(f)(*args)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    for part in (np.real, np.imag) if got.dtype.kind == "c" else (np.asarray,):
        np.testing.assert_array_equal(np.signbit(part(got)), np.signbit(part(want)))


@st.composite
def _slices(draw):
    n = draw(st.integers(1, 8))
    spans = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, n))
        stop = draw(st.integers(start, n))
        spans.append((start, stop, draw(st.sampled_from([1, 1, 2]))))
    return n, spans


@settings(max_examples=40)
@given(_slices(), st.sampled_from([1.0, -0.0, -2.5]), st.booleans(), st.booleans())
def test_slice_cotangents_equal_the_dense_tape(sliced, weight, dense_too, nested):
    n, spans = sliced

    def f(x):
        total = fnp.sum(x * weight) if dense_too else 0.0
        for k, (a, b, s) in enumerate(spans):
            part = x[:, a:b:s]
            if nested and part.shape[1] > 1:
                part = part[:, 1:]
            total = total + fnp.sum(fnp.sin(part) * (weight + k))
        return total

    x = np.linspace(-1.0, 1.0, 2 * n).reshape(2, n)
    _same_bits(fungrad.grad(f)(x), _dense_tape_grad(f, x))


def test_gate_split_gradient_and_one_write(monkeypatch):
    """An LSTM's gates, four disjoint slices: the pads sum by listing (no
    array until the caller's), and the gradient is the dense tape's."""
    h = 3
    x = np.random.default_rng(0).normal(size=(2, 4 * h))

    def f(x):
        i, g, o, c = (x[:, k * h:(k + 1) * h] for k in range(4))
        return fnp.sum(fnp.tanh(i) * fnp.tanh(g) + fnp.sin(o) * c)

    made = []
    real = tape_pads.Pad.dense
    monkeypatch.setattr(tape_pads.Pad, "dense", lambda self: made.append(1) or real(self))
    got = fungrad.grad(f)(x)
    assert made == [1]
    _same_bits(got, _dense_tape_grad(f, x))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes_and_value_and_grad(dtype):
    x = (np.arange(6.0) - 2.5).astype(dtype).reshape(2, 3)
    f = lambda x: fnp.real(fnp.sum(x[:, :1] * -0.0 + x[:, 1:] ** 2))
    want = _dense_tape_grad(f, x)
    _same_bits(fungrad.grad(f)(x), want)
    value, grad = fungrad.value_and_grad(f)(x)
    _same_bits(grad, want)
