"""``python -m fungrad``: a one-minute tour of the transformations.

``python -m fungrad run script.py [args]`` (or ``run -m module [args]``) runs a
JAX program on fungrad through the import hook (fungrad.jax_compat);
``python -m fungrad jax-path`` prints the directory whose presence on
PYTHONPATH switches the hook on from the environment.

Uses the seed function of the lecture notes,
    f(x) = sqrt(x² + exp(x²)) + cos(x² + exp(x²)).
"""
from __future__ import annotations

import functools
import os
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


def jacobian_demo():
    from fungrad.examples import robot_arm
    theta = np.array([0.3, -0.2, 0.5])
    t0 = time.perf_counter()
    j_fwd = fungrad.jacfwd(robot_arm)(theta)
    t1 = time.perf_counter()
    j_rev = fungrad.jacrev(robot_arm)(theta)
    t2 = time.perf_counter()
    print(f"3-joint arm, 3 inputs -> 150 outputs: Jacobian {j_fwd.shape}; forward mode needs "
          f"3 passes ({(t1 - t0) * 1e3:.1f} ms), reverse mode 150 ({(t2 - t1) * 1e3:.1f} ms); "
          f"equal: {np.allclose(j_fwd, j_rev)}")


def control_flow_demo():
    from fungrad import lax
    theta, x0 = 0.02, 1.0

    def seed5(theta):          # x <- x + θ·sin x, 50 steps (one scan), loss (x_50 - 2)²
        x50 = lax.scan(lambda x, _: (x + theta * fnp.sin(x), None), x0, None, length=50)[0]
        return (x50 - 2.0) ** 2
    print(f"scan: 50 steps of x <- x + θ·sin x from 1: loss (x_50 - 2)² = "
          f"{float(seed5(theta)):.10f}, d loss/dθ = {float(fungrad.grad(seed5)(theta)):.10f}")

    def halvings(x):           # a data-dependent trip count
        return lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] * 0.5 + 0.1, c[1] + 1),
                              (x, 0))
    x_end, n = halvings(37.0)
    print(f"while_loop ran {int(n)} times; reverse mode through it (beyond JAX): "
          f"grad = {float(fungrad.grad(lambda x: halvings(x)[0])(37.0)):.6f} = 0.5**{int(n)}")


def implicit_and_checkpoint_demo():
    from fungrad.implicit import fixed_point
    rng = np.random.default_rng(0)
    W, x = rng.normal(size=(4, 4)) * 0.2, rng.normal(size=4)
    layer = lambda z, p: fnp.tanh(p[0] @ z + p[1])

    def unrolled(x, steps=200):
        z = fnp.zeros(4)
        for _ in range(steps):
            z = layer(z, (W, x))
        return fnp.sum(z)
    implicit = lambda x: fnp.sum(fixed_point(layer, fnp.zeros(4), (W, x)))
    g_imp, g_unr = fungrad.grad(implicit)(x), fungrad.grad(unrolled)(x)
    print(f"fixed point z = tanh(Wz + x): implicit gradient (one linear solve) vs 200 unrolled "
          f"steps: max difference {np.max(np.abs(g_imp - g_unr)):.1e}")
    deep = lambda x, layer_fn: fnp.sum(functools.reduce(lambda h, _: layer_fn(h), range(20), x))
    step = fungrad.checkpoint(lambda h: fnp.tanh(W @ h))
    same = np.allclose(fungrad.grad(deep)(x, step), fungrad.grad(deep)(x, lambda h: fnp.tanh(W @ h)))
    print(f"checkpoint: 20 layers recomputed in the backward pass, same gradient: {same}")


def export_demo():
    import importlib.util
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "seed_grad.py")
    fungrad.export(fungrad.grad(seed_f), 0.7, path=path, name="seed_grad")
    spec = importlib.util.spec_from_file_location("seed_grad", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(f"export(grad(f)) wrote a NumPy-only module ({os.path.getsize(path)} bytes); "
          f"it gives {float(module.seed_grad(0.7)):.12f}")


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

    section("vjp: a reusable pullback")
    y, pullback = fungrad.vjp(seed_f, x)
    print(f"vjp(f, {x}) -> pullback(1.0) = {float(pullback(1.0)[0]):.12f} (= grad)")

    section("jacfwd / jacrev: forward vs reverse mode on the robot arm")
    jacobian_demo()

    section("linearize: the linear jaxpr of the tangent map")
    y, f_jvp = fungrad.linearize(seed_f, x)
    print(f_jvp.jaxpr)
    print(f"f_jvp(1.0) = {float(f_jvp(1.0)):.12f}")

    section("vmap: per-example gradients")
    per_example_demo()

    section("control flow: scan and while_loop, differentiated")
    control_flow_demo()

    section("implicit differentiation and checkpointing")
    implicit_and_checkpoint_demo()

    section("jit: the generated NumPy code of jit(grad(f))")
    print(fungrad.jit(fungrad.grad(seed_f)).lower(x).source())
    jit_speed_demo()
    export_demo()


def run_jax_program(argv: list[str]) -> None:
    """``run script.py args...`` or ``run -m module args...`` with the hook on."""
    import runpy
    import sys
    from fungrad import jax_compat
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        raise SystemExit("usage: python -m fungrad run script.py [args...]\n"
                         "       python -m fungrad run -m module [args...]\n"
                         "runs a JAX program with `import jax` answered by fungrad")
    jax_compat.install()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        if not os.path.isfile(argv[0]):
            raise SystemExit(f"python -m fungrad run: no such script: {argv[0]!r}")
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["run"]:
        run_jax_program(sys.argv[2:])
    elif sys.argv[1:2] == ["jax-path"]:
        from fungrad.jax_compat import shim_path
        print(shim_path())
    elif len(sys.argv) > 1:
        raise SystemExit(f"python -m fungrad: unknown command {sys.argv[1]!r} (commands: "
                         "none for the tour, `run script.py`, `run -m module`, `jax-path`)")
    else:
        main()
