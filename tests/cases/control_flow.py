"""Cases for cond/switch: the generic tests check eager vs NumPy, staged, jit,
derivatives (orders 1-2, fwd and rev) and vmap (batched predicates too)."""
import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad import lax
from tests.harness import Arg, Case

# complex draws keep a small imaginary part: the bodies iterate sin/cos/tanh,
# which grow like cosh(Im) and have poles off the real axis
C = dict(dtype=("float64", "complex128"), imag=(-0.5, 0.5))


def _cond_scalar(p, x):
    return lax.cond(p > 0, lambda v: fnp.sin(v) * v, lambda v: v ** 3, x)


def _switch3(i, x, y):
    return lax.switch(i, [lambda a, b: a * b, lambda a, b: fnp.exp(a) - b,
                          lambda a, b: fnp.tanh(a + b)], x, y)


def _switch3_ref(i, x, y):
    k = int(np.clip(i, 0, 2))
    return [x * y, np.exp(x) - y, np.tanh(x + y)][k]


def _cond_pytree(p, x, y):
    out = lax.cond(p > 0, lambda d: {"s": d["x"] * 2.0, "t": (d["y"], d["x"] + d["y"])},
                   lambda d: {"s": -d["x"], "t": (d["y"] * d["y"], d["x"])},
                   {"x": x, "y": y})
    return out["s"] + out["t"][0] + out["t"][1]


def _cond_pytree_ref(p, x, y):
    return (x * 2.0 + y + (x + y)) if p > 0 else (-x + y * y + x)


CASES = [
    Case("cond_scalar_pred", _cond_scalar,
         lambda p, x: np.sin(x) * x if p > 0 else x ** 3,
         [Arg((), low=-1, high=1, avoid=(0.0,), diff=False), Arg("any", **C)], prims=("cond",)),
    Case("switch_three_branches", _switch3, _switch3_ref,
         [Arg((), dtype="int64", low=-1, high=3, diff=False), Arg("any", **C), Arg("same", **C)],
         prims=("cond",)),
    Case("cond_pytree_operands", _cond_pytree, _cond_pytree_ref,
         [Arg((), low=-1, high=1, avoid=(0.0,), diff=False), Arg("vec"), Arg("same")],
         prims=("cond",)),
]


def _cumulative(xs):
    return lax.scan(lambda c, x: (c * 0.5 + fnp.sin(x), c * x), fnp.zeros(xs.shape[1:]), xs)


def _cumulative_ref(xs):
    c, ys = np.zeros(xs.shape[1:]), []
    for x in xs:
        ys.append(c * x)
        c = c * 0.5 + np.sin(x)
    return c, (np.stack(ys) if ys else np.zeros((0,) + xs.shape[1:]))


def _rnn(w, xs):
    h, hs = lax.scan(lambda h, x: (fnp.tanh(h @ w + x), h), fnp.zeros(w.shape[0]), xs, reverse=True)
    return fnp.sum(h ** 2) + fnp.sum(hs)


def _rnn_ref(w, xs):
    h, hs = np.zeros(w.shape[0]), []
    for x in xs[::-1]:
        hs.append(h)
        h = np.tanh(h @ w + x)
    return np.sum(h ** 2) + (np.sum(hs) if hs else 0.0)


def _fori(x):
    return lax.fori_loop(0, 5, lambda i, v: v * 0.9 + fnp.cos(v) * i, x)


def _fori_ref(x):
    for i in range(5):
        x = x * 0.9 + np.cos(x) * i
    return x


CASES += [
    Case("scan_cumulative", _cumulative, _cumulative_ref, [Arg((4, 3))], prims=("scan",)),
    Case("scan_rnn_reverse", _rnn, _rnn_ref, [Arg((3, 3), low=-0.5, high=0.5), Arg((4, 3))],
         prims=("scan",)),
    # v -> 0.9 v + i cos(v) amplifies imaginary parts: keep them tiny
    Case("fori_loop", _fori, _fori_ref, [Arg("any", ("float64", "complex128"), imag=(-0.05, 0.05))],
         prims=("scan",)),
    Case("lax_map", lambda xs: lax.map(lambda x: fnp.sum(fnp.sin(x) * x), xs),
         lambda xs: np.sum(np.sin(xs) * xs, axis=1), [Arg((3, 4), **C)], prims=("scan",)),
]


def _while_power(x, n):
    # x ** n by repeated multiplication; n (a traced int) sets the trip count
    out, _ = lax.while_loop(lambda c: c[1] < n, lambda c: (c[0] * x, c[1] + 1),
                            (fnp.ones_like(x), np.int64(0)))
    return out


def _while_newton(a):
    return lax.while_loop(lambda s: fnp.any(fnp.abs(s * s - a) > 1e-10),
                          lambda s: (s + a / s) / 2, a)


CASES += [
    Case("while_power", _while_power, lambda x, n: x ** max(int(n), 0),
         [Arg("any", low=0.5, high=1.5, **C), Arg((), dtype="int64", low=0, high=4, diff=False)],
         prims=("while",)),
    Case("while_newton_sqrt", _while_newton, np.sqrt, [Arg("nonempty", low=0.5, high=4.0)],
         prims=("while",), rtol=1e-9, atol=1e-9),
]


def _linear_recurrence(a, b):
    # h_t = a_t h_{t-1} + b_t, as JAX's docs do it with associative_scan
    return lax.associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]), (a, b))[1]


def _linear_recurrence_ref(a, b):
    h, out = 0.0, []
    for t in range(len(a)):
        h = a[t] * h + b[t]
        out.append(h)
    return np.array(out)


CASES += [
    Case("associative_scan_cumprod", lambda x: lax.associative_scan(fnp.multiply, x, axis=-1),
         lambda x: np.cumprod(x, axis=-1), [Arg((3, 5), low=0.5, high=1.5, **C)], prims=()),
    Case("associative_scan_reverse_cumsum",
         lambda x: lax.associative_scan(fnp.add, x, reverse=True),
         lambda x: np.cumsum(x[::-1], axis=0)[::-1], [Arg((7, 2), **C)], prims=()),
    Case("associative_scan_linear_recurrence", _linear_recurrence, _linear_recurrence_ref,
         [Arg((9,), low=0.5, high=1.0), Arg((9,))], prims=()),
]


def _jit_grad_while(x):
    # reverse mode of a while_loop staged by jit (the run-time tape primitives);
    # the generic tests also take its forward-mode derivative (forward over reverse)
    grow = lambda x: lax.while_loop(lambda c: c[1] < 2.0,
                                    lambda c: (c[0] + 1, c[1] * 1.5 + fnp.sin(c[1])), (0, x))[1]
    return fungrad.jit(fungrad.grad(lambda x: fnp.sum(fungrad.vmap(grow)(x))))(x)


def _jit_grad_while_ref(x):
    out = []
    for v in np.ravel(x):
        d = 1.0
        while v < 2.0:
            v, d = v * 1.5 + np.sin(v), d * (1.5 + np.cos(v))
        out.append(d)
    return np.reshape(out, np.shape(x))


CASES += [
    Case("while_reverse_inside_jit", _jit_grad_while, _jit_grad_while_ref,
         [Arg((4,), low=0.2, high=3.0)], prims=("while_lin", "while_lin_t"),
         grad_order=1, modes=("fwd",), rtol=1e-10),
]


# implicit differentiation: the solvers' primitives (custom_linear_solve, custom_root)
def _spd_solve(a, b):
    A = a @ a.T + 3.0 * fnp.eye(3)
    return lax.custom_linear_solve(lambda v: A @ v, b,
                                   solve=lambda mv, r: fnp.linalg.solve(A, r), symmetric=True)


def _general_solve(a, b):
    A = a + 4.0 * fnp.eye(3)
    return lax.custom_linear_solve(lambda v: A @ v, b,
                                   solve=lambda mv, r: fnp.linalg.solve(A, r),
                                   transpose_solve=lambda vm, r: fnp.linalg.solve(A.T, r))


def _cube_root(a):
    newton = lambda F, x0: lax.fori_loop(0, 40, lambda i, x: x - F(x) / (3 * x * x), x0)
    return lax.custom_root(lambda x: x ** 3 - a, fnp.ones_like(a), newton,
                           lambda g, y: y / g(fnp.ones_like(y)))


CASES += [
    Case("custom_linear_solve_symmetric", _spd_solve,
         lambda a, b: np.linalg.solve(a @ a.T + 3.0 * np.eye(3), b),
         [Arg((3, 3), low=-1, high=1), Arg((3,))], prims=("custom_linear_solve",), rtol=1e-10),
    Case("custom_linear_solve_transpose_solve", _general_solve,
         lambda a, b: np.linalg.solve(a + 4.0 * np.eye(3), b),
         [Arg((3, 3), low=-1, high=1), Arg((3,))], prims=("custom_linear_solve",), rtol=1e-10),
    Case("custom_root_cube_root", _cube_root, np.cbrt, [Arg("any", low=0.5, high=3.0)],
         prims=("custom_root",), rtol=1e-12),
]
