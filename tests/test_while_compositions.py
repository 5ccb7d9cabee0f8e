"""Transform stacks over a while_loop with a data-dependent trip count (issue 26
item 1): every stack of depth <= 4 of jit, vmap and the derivative transforms
gives the value of the same stack over the same function written as a
fixed-trip ``fori_loop`` of ``cond`` steps (which fungrad differentiates as a
scan, with nothing at run time), or raises the documented TypeError.

The loop carries an int64 counter, a float64 vector, a float32 scalar and a
bool; its trip count depends on the input (3 to 7 here, per vmap lane).
Inside jit, reverse mode through the loop replays it from a run-time tape
(``lax/control_flow/while_tape.py``); forward mode over that (``hessian``,
``jvp``/``linearize``/``jacfwd`` of ``grad``/``vjp``) works, while reverse
over reverse, and reverse over ``linearize`` (a tape's forward derivative),
raise a TypeError saying so.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import grad, hessian, jacfwd, jit, jvp, lax, linearize, vjp, vmap

MAX_TRIPS = 9                      # more than any input below needs
W = np.array([0.3, -1.2, 0.7])     # output weights (scalar losses for reverse mode)
V = np.array([1.0, 0.5, -0.3])     # a tangent
U = np.array([0.5, -1.0, 2.0])     # weights of the vmap lanes
SCALE, SHIFT = np.array([[1.0], [0.6], [1.3]]), np.array([[0.0], [0.25], [0.12]])
X = np.array([0.1, -0.4, 0.2])     # 7 trips; the vmap lanes take 7, 3 and 5


def _init(x):
    return np.int64(0), x, x[0].astype(np.float32), np.bool_(True)


def _pred(s):
    n, c, _, _ = s
    return (n < MAX_TRIPS) & (fnp.mean(c) < 0.6)


def _body(s, x):
    n, c, a, flag = s
    c = 0.9 * c + 0.3 * fnp.tanh(fnp.sum(fnp.cos(c))) * x + 0.1 * c * c + 0.1
    c = fnp.where(flag, c, c * 1.01)
    a = a * np.float32(0.9) + (fnp.sum(c) * 0.1).astype(np.float32)
    return n + 1, c, a, c[0] > c[1]


def _out(s):
    _, c, a, _ = s
    return c + a.astype(np.float64) * W


def f_while(x):
    return _out(lax.while_loop(_pred, lambda s: _body(s, x), _init(x)))


def f_fixed_trips(x):
    step = lambda i, s: lax.cond(_pred(s), lambda s: _body(s, x), lambda s: s, s)
    return _out(lax.fori_loop(0, MAX_TRIPS, step, _init(x)))


# Each transform maps a function f64[3] -> f64[3] to another, so they stack.
# The forward ones return primal + tangent, so their primal outputs are checked too.
TRANSFORMS = {
    "jit": jit,
    "vmap": lambda f: lambda x: U @ vmap(f)(x[None, :] * SCALE + SHIFT),
    "grad": lambda f: lambda x: grad(lambda y: fnp.dot(f(y), W))(x),
    "vjp": lambda f: lambda x: (lambda out, pullback: out + pullback(W)[0])(*vjp(f, x)),
    "jvp": lambda f: lambda x: (lambda out, t: out + t)(*jvp(f, (x,), (V,))),
    "linearize": lambda f: lambda x: (lambda out, f_jvp: out + f_jvp(V))(*linearize(f, x)),
    "jacfwd": lambda f: lambda x: jacfwd(f)(x) @ V,
    "hessian": lambda f: lambda x: hessian(lambda y: fnp.dot(f(y), W))(x) @ V,
}
REVERSE = {"grad": 1, "vjp": 1, "hessian": 1}
ORDER = {"grad": 1, "vjp": 1, "jvp": 1, "linearize": 1, "jacfwd": 1, "hessian": 2}


def _stacks():
    """Every stack (outermost first) of depth <= 4 of jit, vmap (at most once) and
    derivatives of total order <= 2, over the letters jit, vmap, R (reverse),
    F (forward), H (hessian); the k-th stack's R and F letters are spelled by
    turns as grad/vjp and jvp/linearize/jacfwd, so each is used in each role."""
    spell = {"R": ("grad", "vjp"), "F": ("jvp", "linearize", "jacfwd"), "H": ("hessian",),
             "jit": ("jit",), "vmap": ("vmap",)}
    out = []
    for depth in range(1, 5):
        for letters in itertools.product(spell, repeat=depth):
            order = sum({"R": 1, "F": 1, "H": 2}.get(t, 0) for t in letters)
            if order == 0 or order > 2 or letters.count("vmap") > 1:
                continue
            k = len(out)
            out.append(tuple(spell[t][(k + i) % len(spell[t])] for i, t in enumerate(letters)))
    return out


def _apply(stack, f):
    for name in reversed(stack):
        f = TRANSFORMS[name](f)
    return f


def _expected_error(stack):
    """The documented limits inside jit (None: the stack works)."""
    if "jit" not in stack:
        return None
    if sum(REVERSE.get(t, 0) for t in stack) >= 2:
        return "Reverse mode over the reverse-mode"
    if "linearize" in stack and any(t in REVERSE for t in stack[:stack.index("linearize")]):
        return "Reverse mode over linearize"
    return None


_REFERENCE: dict = {}


def _reference(stack):
    # jit changes no values: the reference is the stack without it, eagerly
    key = tuple(t for t in stack if t != "jit")
    if key not in _REFERENCE:
        _REFERENCE[key] = np.asarray(_apply(key, f_fixed_trips)(X))
    return _REFERENCE[key]


@pytest.mark.parametrize("stack", _stacks(), ids="/".join)
def test_every_stack_over_a_while_loop_matches_fixed_trips(stack):
    error = _expected_error(stack)
    if error is not None:
        with pytest.raises(TypeError, match=error):
            _apply(stack, f_while)(X)
        return
    got = _apply(stack, f_while)(X)
    np.testing.assert_allclose(got, _reference(stack), rtol=1e-6, atol=1e-9,
                               err_msg="/".join(stack))


def test_trip_counts_are_data_dependent():
    trips = lambda x: int(lax.while_loop(_pred, lambda s: _body(s, x), _init(x))[0])
    lanes = X[None, :] * SCALE + SHIFT
    assert [trips(X)] + [trips(x) for x in lanes] == [7, 7, 3, 5]


# ----------------------------------------------------------------------------
# The issue's program, and the family over fori_loop with traced bounds
# ----------------------------------------------------------------------------

def _issue_f(x):
    def cond_fn(s):
        n, c = s
        return fnp.logical_and(n < 4, fnp.mean(c) < 0.3)

    def body_fn(s):
        n, c = s
        v = fungrad.nn.relu(fnp.sum(fnp.cos(c), axis=-1, keepdims=True))
        return n + 1, 0.5 * c + 0.5 * fnp.tanh(v)
    _, c = lax.while_loop(cond_fn, body_fn, (0, x))
    y = x + c
    return fnp.where(y <= x, y, 1.0)


def test_the_issues_program_linearized_under_jit():
    def g(x, t):
        y, f_jvp = linearize(fungrad.value_and_grad(lambda x: fnp.sum(_issue_f(x))), x)
        return y, f_jvp(t)
    x, t = np.array([0.1, -0.4, 0.2]), np.array([1.0, 0.5, -0.3])
    want = g(x, t)
    for how in (jit(g), jit(jit(g))):
        got = how(x, t)
        for a, b in zip(fungrad.tree_util.tree_leaves(got), fungrad.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def _fori_traced(x):
    n = (x[0] > 0).astype(np.int64) + 3 + (x[1] > 0)       # a traced trip count, 3 to 5
    body = lambda i, s: (s[0] * 0.9 + fnp.sin(s[0]) * x * 0.3, s[1] + lax.convert_element_type(i, np.float32))
    c, k = lax.fori_loop(0, n, body, (x, np.float32(0.0)))
    return c + k.astype(np.float64) * W


def _fori_fixed(x):
    n = (x[0] > 0).astype(np.int64) + 3 + (x[1] > 0)
    body = lambda i, s: (s[0] * 0.9 + fnp.sin(s[0]) * x * 0.3, s[1] + lax.convert_element_type(i, np.float32))
    step = lambda i, s: lax.cond(i < n, lambda s: body(i, s), lambda s: s, s)
    c, k = lax.fori_loop(0, 5, step, (x, np.float32(0.0)))
    return c + k.astype(np.float64) * W


_OUTER = {"jit": ("jit",), "nested jit": ("jit", "jit"), "vmap": ("vmap",),
          "jit(vmap)": ("jit", "vmap")}
_FAMILY = [("jvp", "grad"), ("linearize", "grad"), ("hessian",), ("jacfwd", "grad"),
           ("jvp", "vjp"), ("linearize", "vjp"), ("jacfwd", "vjp")]


@pytest.mark.parametrize("outer", _OUTER)
@pytest.mark.parametrize("inner", _FAMILY, ids="/".join)
def test_forward_over_reverse_of_fori_loop_with_traced_bounds(outer, inner):
    stack = _OUTER[outer] + inner
    want = _apply(tuple(t for t in stack if t != "jit"), _fori_fixed)(X)
    np.testing.assert_allclose(_apply(stack, _fori_traced)(X), want, rtol=1e-6, atol=1e-9)
