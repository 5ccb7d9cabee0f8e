"""The cases of the derivative weak-type table: the dtype and weak type of what
``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, ``jacfwd`` and
``jacrev`` return for every unary/binary primitive family of the generic
suite, on weakly typed, strongly typed and Python-scalar arguments.

tools/gen_weak_derivative_table.py records them from real JAX;
tests/test_weak_derivatives.py checks fungrad against the record.  Both run
``derivative_types`` below with ``jax``/``jnp``/``lax``/``np`` bound to the
library under test, so the two sides run the same code.  The argument names
are those of tests/weak_type_cases.py (``pf`` a Python float, ``wf``/``wf0``
weak arrays, ``f32``/``f32s`` strong ones, ...) plus a weak and a strong
3x3 matrix (``wm``, ``m32``).
"""
from tests.weak_type_cases import make_arg as make_base_arg

# lax's elementwise unary families (each called as ``lax.NAME(a)``)
UNARY_LAX = [
    "neg", "sign", "floor", "ceil", "round", "is_finite", "abs", "square", "sqrt", "rsqrt",
    "cbrt", "exp", "exp2", "log", "log1p", "expm1", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv",
    "lgamma", "digamma", "bessel_i0e", "bessel_i1e", "reciprocal", "real", "imag", "conj",
    "stop_gradient",
]
# ... that take complex operands too (checked on a weak complex as well)
COMPLEX_LAX = {"neg", "abs", "square", "sqrt", "rsqrt", "exp", "log", "log1p", "expm1", "sin",
               "cos", "tan", "tanh", "sinh", "cosh", "real", "imag", "conj", "reciprocal"}

# other unary families: integer literals in rules, reductions, scans, structural
# ops, indexing, control flow, custom rules, jnp and nn compositions
UNARY_OTHER = [
    "lambda a: a * 2", "lambda a: a * 2.0", "lambda a: 2 * a + 1", "lambda a: a / 2",
    "lambda a: a ** 3", "lambda a: a ** 0.5", "lambda a: a ** -2", "lambda a: 1.0 / a",
    "lambda a: lax.integer_pow(a, 3)", "lambda a: lax.integer_pow(a, -1)",
    "lambda a: lax.integer_pow(a, 0)", "lambda a: lax.integer_pow(a, 1)",
    "lambda a: lax.pow(a, 2.5)", "lambda a: lax.pow(2.5, a)",
    "lambda a: lax.polygamma(1.0, a)", "lambda a: lax.zeta(a, 2.0)",
    "lambda a: lax.clamp(0.5, a, 2.0)", "lambda a: lax.reduce_precision(a, 5, 10)",
    "lambda a: lax.convert_element_type(a, jnp.float32)", "lambda a: a.astype(jnp.float32)",
    "lambda a: jnp.float32(a)",
    # reductions and scans
    "lambda a: lax.reduce_sum(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.reduce_max(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.reduce_min(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.reduce_prod(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.cumsum(jnp.atleast_1d(a))", "lambda a: lax.cumprod(jnp.atleast_1d(a))",
    "lambda a: lax.cummax(jnp.atleast_1d(a))", "lambda a: lax.cummin(jnp.atleast_1d(a))",
    "lambda a: lax.cumlogsumexp(jnp.atleast_1d(a))",
    "lambda a: jnp.sum(a)", "lambda a: jnp.mean(a)", "lambda a: jnp.var(a)",
    "lambda a: jnp.std(a)", "lambda a: jnp.prod(a)", "lambda a: jnp.max(a)",
    "lambda a: jnp.linalg.norm(a)", "lambda a: jax.nn.logsumexp(a)",
    "lambda a: jnp.cumsum(a)", "lambda a: jnp.cumprod(a)",
    # structural and indexing
    "lambda a: jnp.reshape(a, (-1, 1))", "lambda a: jnp.transpose(jnp.atleast_2d(a))",
    "lambda a: jnp.broadcast_to(a, (2,) + jnp.shape(a))", "lambda a: jnp.atleast_1d(a)[::-1]",
    "lambda a: lax.rev(jnp.atleast_1d(a), (0,))", "lambda a: jnp.atleast_1d(a)[:1]",
    "lambda a: jnp.atleast_1d(a)[0]", "lambda a: jnp.atleast_1d(a)[jnp.array([0, 0])]",
    "lambda a: jnp.atleast_1d(a).at[0].set(7.0)", "lambda a: jnp.atleast_1d(a).at[0].add(a)",
    "lambda a: jnp.atleast_1d(a).at[0].mul(3.0)",
    "lambda a: lax.dynamic_slice(jnp.atleast_1d(a), (0,), (1,))",
    "lambda a: lax.dynamic_update_slice(jnp.atleast_1d(a), jnp.atleast_1d(a)[:1], (0,))",
    "lambda a: jnp.pad(jnp.atleast_1d(a), 1)", "lambda a: jnp.concatenate([jnp.atleast_1d(a)] * 2)",
    "lambda a: jnp.stack([a, a])", "lambda a: jnp.squeeze(jnp.atleast_1d(a)[None])",
    "lambda a: jnp.sort(jnp.atleast_1d(a))", "lambda a: lax.top_k(jnp.atleast_1d(a), 1)[0]",
    "lambda a: jnp.where(a > 0, a, 0.0)", "lambda a: jnp.where(a > 0, a, a * 3)",
    "lambda a: lax.select(jnp.ones(jnp.shape(a), bool), a, a)",
    "lambda a: jnp.dot(a, a)", "lambda a: jnp.outer(a, a)",
    "lambda a: jnp.maximum(a, 0.0)", "lambda a: jnp.minimum(a, a * 2)",
    "lambda a: jnp.clip(a, 0, 1)", "lambda a: jnp.hypot(a, a)", "lambda a: jnp.sinc(a)",
    "lambda a: jnp.log10(a)", "lambda a: jnp.arctan2(a, 2.0)",
    # nn
    "lambda a: jax.nn.relu(a)", "lambda a: jax.nn.softplus(a)", "lambda a: jax.nn.sigmoid(a)",
    "lambda a: jax.nn.gelu(a)", "lambda a: jax.nn.silu(a)", "lambda a: jax.nn.softmax(a)",
    "lambda a: jax.nn.log_softmax(a)", "lambda a: jax.nn.elu(a)",
    # control flow, custom rules, checkpoint, jit
    "lambda a: lax.cond(True, lambda x: x * 2, lambda x: x + 1, a)",
    "lambda a: lax.cond(a.sum() > 0, jnp.sin, jnp.cos, a)",
    "lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2.0, a)",
    "lambda a: lax.scan(lambda c, x: (c * 2, c), a, None, length=2)[0]",
    "lambda a: lax.scan(lambda c, x: (jnp.sin(c), c), a, None, length=2)[1]",
    "lambda a: jax.checkpoint(jnp.sin)(a)", "lambda a: jax.jit(jnp.sin)(a)",
    "lambda a: jax.jit(lambda y: y * 2)(a)",
    "lambda a: (lambda f: (f.defjvp(lambda p, t: (f(*p), t[0] * 2)), f)[1])("
    "jax.custom_jvp(lambda x: x * 2))(a)",
    "lambda a: (lambda g: (g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct * 2,)), g)[1])("
    "jax.custom_vjp(lambda x: x * 2))(a)",
    "lambda a: jax.nn.relu(a) + lax.stop_gradient(a)",
    # implicit solves and shard_map (their jaxprs are traced at the operands'
    # types; their transposes follow the cotangents')
    "lambda a: lax.custom_linear_solve(lambda x: x * 2.0, a, lambda mv, r: r / 2.0, "
    "lambda vm, r: r / 2.0)",
    "lambda a: lax.custom_linear_solve(lambda x: x * 2.0, a, lambda mv, r: r / 2.0, "
    "symmetric=True)",
    "lambda a: lax.custom_root(lambda x: x - 2.0 * a, a, lambda f, x0: 2.0 * a, "
    "lambda g, y: y)",
    "lambda a: jax.shard_map(jnp.sin, mesh=jax.make_mesh((1,), ('i',)), in_specs=jax.P(), "
    "out_specs=jax.P())(a)",
    "lambda a: jnp.float32(3.0) + 0 * a",
]
UNARY_ARGS = [("pf",), ("wf0",), ("wf",), ("f32",), ("f32s",)]
COMPLEX_ARGS = [("wc",), ("pc",)]

# lax's binary families (``lax.NAME(a, b)``)
BINARY_LAX = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
              "complex"]
BINARY_OTHER = [
    "lambda a, b: a + b", "lambda a, b: a * b", "lambda a, b: a / b", "lambda a, b: a - 2 * b",
    "lambda a, b: a ** b", "lambda a, b: jnp.maximum(a, b)", "lambda a, b: jnp.where(a > b, a, b)",
    "lambda a, b: jnp.dot(a, b)", "lambda a, b: a * (b * 2.0)",
    "lambda a, b: jnp.concatenate([jnp.atleast_1d(a), jnp.atleast_1d(b)])",
    "lambda a, b: lax.cond(True, lambda x, y: x * y, lambda x, y: x + y, a, b)",
    "lambda a, b: jnp.arctan2(a, b)", "lambda a, b: jnp.hypot(a, b)",
    "lambda a, b: lax.clamp(b, a, b + 1.0)",
]
BINARY_ARGS = [("wf", "wf"), ("wf0", "wf"), ("wf", "wf0"), ("wf", "f32"), ("f32", "wf"),
               ("pf", "pf"), ("wf", "pf"), ("pf", "wf0"), ("f32s", "pf"), ("f32", "f32")]

# matrix families (a weak and a strong symmetric positive definite 3x3)
MATRIX = [
    "lambda a: jnp.linalg.inv(a)", "lambda a: jnp.linalg.det(a)",
    "lambda a: jnp.linalg.slogdet(a)[1]", "lambda a: jnp.linalg.cholesky(a)",
    "lambda a: jnp.linalg.solve(a, jnp.ones(3, a.dtype))", "lambda a: jnp.linalg.eigh(a)[0]",
    "lambda a: a @ a", "lambda a: jnp.trace(a)", "lambda a: jnp.linalg.norm(a)",
    "lambda a: lax.linalg.triangular_solve(a, a, left_side=True, lower=True)",
]
MATRIX_ARGS = [("wm",), ("m32",)]


def _cases():
    unary = [(f"lambda a: lax.{n}(a)", UNARY_ARGS + (COMPLEX_ARGS if n in COMPLEX_LAX else []))
             for n in UNARY_LAX]
    binary = [(f"lambda a, b: lax.{n}(a, b)", BINARY_ARGS) for n in BINARY_LAX]
    return (unary + [(src, UNARY_ARGS) for src in UNARY_OTHER] + binary
            + [(src, BINARY_ARGS) for src in BINARY_OTHER]
            + [(src, MATRIX_ARGS) for src in MATRIX])


CASES = _cases()
WAYS = ("grad", "value_and_grad", "jvp", "vjp", "vjp_strong_ct", "linearize", "jacfwd",
        "jacrev")


def make_arg(ns, name):
    """The argument ``name`` made with the modules in ``ns``."""
    jnp = ns["jnp"]
    if name == "wm":        # weak: jnp.where of Python scalars
        return jnp.where(jnp.eye(3, dtype=bool), 2.5, 0.5)
    if name == "m32":
        return jnp.where(jnp.eye(3, dtype=bool), jnp.float32(2.5), jnp.float32(0.5))
    return make_base_arg(ns, name)


def is_float_arg(x) -> bool:
    return isinstance(x, (float, complex)) or getattr(x, "dtype", None) is not None and (
        x.dtype.kind in "fc")


def derivative_types(ns, fn, args, way, describe):
    """``describe`` of every leaf ``way`` returns for ``fn`` on ``args``,
    differentiating with respect to the float arguments (the others are held
    fixed, as they are by grad's argnums)."""
    jax, jnp = ns["jax"], ns["jnp"]
    diff = [i for i, a in enumerate(args) if is_float_arg(a)]

    def of_diff(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        return fn(*full)

    def scalar(*d):
        return jnp.sum(of_diff(*d)).real
    primals = [args[i] for i in diff]
    ones = [1.0 if isinstance(p, float) else 1 + 0j if isinstance(p, complex)
            else jnp.ones_like(p) for p in primals]
    argnums = tuple(range(len(diff)))
    if way == "grad":
        out = jax.grad(scalar, argnums)(*primals)
    elif way == "value_and_grad":
        out = jax.value_and_grad(scalar, argnums)(*primals)
    elif way == "jvp":
        out = jax.jvp(of_diff, tuple(primals), tuple(ones))
    elif way in ("vjp", "vjp_strong_ct"):
        y, pullback = jax.vjp(of_diff, *primals)
        strong = way == "vjp_strong_ct"
        ct = jnp.ones(jnp.shape(y), jnp.result_type(y)) if strong else jnp.ones_like(y)
        out = (y, pullback(ct))
    elif way == "linearize":
        y, lin = jax.linearize(of_diff, *primals)
        out = (y, lin(*ones))
    else:
        out = getattr(jax, way)(of_diff, argnums)(*primals)
    return [describe(leaf) for leaf in jax.tree_util.tree_leaves(out)]
