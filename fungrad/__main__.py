"""``python -m fungrad``: a one-minute tour of the transformations.

Uses the seed function of the lecture notes,
    f(x) = sqrt(x² + exp(x²)) + cos(x² + exp(x²)).
"""
from __future__ import annotations

import time

import numpy as np

import fungrad
import fungrad.numpy as fnp
from fungrad.examples import seed_f, seed_f_prime


def section(title):
    print(f"\n== {title} " + "=" * max(0, 66 - len(title)))


def per_example_demo():
    rng = np.random.default_rng(0)
    w, xs, ys = rng.normal(size=5), rng.normal(size=(256, 5)), rng.normal(size=256)
    loss = lambda w, x, y: (fnp.tanh(x @ w) - y) ** 2
    per_example = fungrad.vmap(fungrad.grad(loss), in_axes=(None, 0, 0))
    g = per_example(w, xs, ys)
    t0 = time.perf_counter()
    g = per_example(w, xs, ys)
    t_vmap = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = np.stack([fungrad.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    t_loop = time.perf_counter() - t0
    print(f"vmap(grad(loss)) over 256 examples -> gradients of shape {g.shape}")
    print(f"equal to a Python loop of grad: {np.allclose(g, loop)}; "
          f"time {t_vmap * 1e3:.2f} ms vs loop {t_loop * 1e3:.1f} ms "
          f"({t_loop / t_vmap:.0f}x faster)")


def jit_speed_demo():
    rng = np.random.default_rng(0)
    params = [rng.normal(size=(64, 64)) / 8, rng.normal(size=(64, 10)) / 8]
    xs, ys = rng.normal(size=(32, 64)), np.eye(10)[rng.integers(0, 10, 32)]

    def loss(p):
        logits = fnp.tanh(xs @ p[0]) @ p[1]
        return fnp.mean(fnp.sum((logits - ys) ** 2, axis=1))

    def train_step(p):
        g = fungrad.grad(loss)(p)
        return [w - 0.1 * gw for w, gw in zip(p, g)]
    fast = fungrad.jit(train_step)
    fast(params)
    times = {}
    for label, step in (("eager", train_step), ("jit", fast)):
        t0 = time.perf_counter()
        for _ in range(50):
            step(params)
        times[label] = (time.perf_counter() - t0) / 50
    print(f"MLP train step: eager {times['eager'] * 1e3:.2f} ms, jit {times['jit'] * 1e3:.3f} ms "
          f"({times['eager'] / times['jit']:.0f}x faster)")


def main():
    x = 0.7
    section("make_jaxpr: the function as fungrad sees it")
    print(fungrad.make_jaxpr(seed_f)(x))
    print(f"f({x}) = {float(seed_f(x)):.12f}")

    section("grad: reverse mode (linearize + transpose)")
    g = fungrad.grad(seed_f)(x)
    print(f"grad(f)({x})  = {float(g):.15f}")
    print(f"closed form    = {seed_f_prime(x):.15f}   (difference {abs(g - seed_f_prime(x)):.1e})")

    section("jvp: forward mode")
    y, t = fungrad.jvp(seed_f, (x,), (1.0,))
    print(f"jvp(f, ({x},), (1.0,)) = ({float(y):.12f}, {float(t):.12f})")

    section("Hessian-vector product: forward-over-reverse")
    h = lambda v: fnp.sum(fnp.sin(v) * v ** 2)
    v0, dv = np.array([0.1, 0.5, 1.0]), np.array([1.0, 0.0, -1.0])
    hvp = fungrad.jvp(fungrad.grad(h), (v0,), (dv,))[1]
    print(f"H·v = {np.asarray(hvp)}  (hessian(h) @ v = {np.asarray(fungrad.hessian(h)(v0) @ dv)})")

    section("linearize: the linear jaxpr of the tangent map")
    y, f_jvp = fungrad.linearize(seed_f, x)
    print(f_jvp.jaxpr)
    print(f"f_jvp(1.0) = {float(f_jvp(1.0)):.12f}")

    section("vmap: per-example gradients")
    per_example_demo()

    section("jit: the generated NumPy code of jit(grad(f))")
    print(fungrad.jit(fungrad.grad(seed_f)).lower(x).source())
    jit_speed_demo()


if __name__ == "__main__":
    main()
