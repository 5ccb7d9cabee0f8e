"""The cases of the weak-type table (tools/gen_weak_type_table.py records
them from real JAX; tests/test_weak_types.py checks fungrad against it).

Expressions are source text evaluated with ``jax``, ``jnp``, ``lax`` and ``np``
bound to the library under test, so the same text runs on both.  Arguments
are named: Python scalars (``pf`` 2.5, ``pi`` 3, ``pc`` 1+2j), strongly typed
arrays of shape (3,) (``f32``, ``i32``, ...), a strong 0-d float32 (``f32s``)
and weakly typed arrays (``wf``, ``wi``, ``wc`` of shape (3,), ``wf0``/``wi0``
0-d), which are made with ``jnp.full``/``jnp.asarray`` of a Python scalar (the
creation table checks that those are weak).
"""

PYTHON = {"pf": 2.5, "pi": 3, "pc": 1 + 2j}
STRONG = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "i64": "int64", "u8": "uint8", "b": "bool", "c64": "complex64"}
WEAK = {"wf": (1.5, (3,)), "wi": (2, (3,)), "wc": (1 + 1j, (3,)), "wf0": (1.5, ()),
        "wi0": (2, ())}
ARGS = [*PYTHON, *STRONG, "f32s", *WEAK]


def make_arg(ns, name, batch=None):
    """The argument ``name`` made with the modules in ``ns``; with ``batch``,
    ``batch`` copies along a new leading axis (Python scalars stay scalars)."""
    jnp, np = ns["jnp"], ns["np"]
    lead = () if batch is None else (batch,)
    if name in PYTHON:
        return PYTHON[name]
    if name in STRONG:
        values = np.arange(1, 4).reshape(3) % 2 if name == "b" else np.arange(1.0, 4.0)
        return jnp.asarray(np.broadcast_to(values, lead + (3,)).astype(STRONG[name]))
    if name == "f32s":
        return jnp.asarray(np.full(lead, 1.5, np.float32))
    value, shape = WEAK[name]
    return jnp.full(lead + shape, value) if lead + shape else jnp.asarray(value)


CREATION = [
    "jnp.asarray(3.0)", "jnp.array(3.0)", "jnp.array(3)", "jnp.array(True)", "jnp.array(1+2j)",
    "jnp.array([1.0])", "jnp.asarray(np.float32(3))", "jnp.float32(3)", "jnp.zeros(())",
    "jnp.zeros(3)", "jnp.ones(3)", "jnp.full(3, 2.0)", "jnp.full(3, 2)", "jnp.full((), 2.0)",
    "jnp.full(3, 2.0, dtype=jnp.float32)", "jnp.full(3, np.float32(2))", "jnp.arange(3.)",
    "jnp.arange(3)", "jnp.linspace(0, 1, 3)", "jnp.eye(2)", "jax.device_put(3.0)",
    "jax.device_put(3)", "jax.jit(lambda: 2.0)()", "jax.jit(lambda: 2)()",
    "jax.jit(lambda s: s)(2.0)", "jax.jit(lambda s: s * 2)(2.0)",
    "jax.jit(lambda s: s + jnp.float32(1))(2.0)", "jax.jit(lambda s: jnp.sin(s))(2)",
    "lax.add(2.0, 3.0)", "lax.mul(2, 3)", "lax.convert_element_type(2.0, jnp.float32)",
    "jnp.float32(2.0) + 1.0", "jnp.add(2.0, 3.0)", "jnp.multiply(2, 3)", "jnp.sin(2.0)",
    "jnp.exp(1)", "jnp.sum(2.0)", "jnp.sqrt(4.0)", "jnp.asarray(jnp.asarray(3.0))",
    "jnp.zeros_like(3.0)", "jnp.ones_like(2)", "jnp.full_like(jnp.zeros(3, jnp.float32), 2.0)",
    "jnp.zeros(3, jnp.float32) + jax.jit(lambda: 2.0)()",
    "jax.jit(lambda x, s: x * (s * 2.0))(jnp.zeros(3, jnp.float32), 3.0)",
    "jax.jit(lambda x, s: x * s)(jnp.zeros(3, jnp.float32), 3.0)",
    "jnp.asarray(3.0) * jnp.asarray(2)", "jnp.asarray(3) * 0.5",
    "jnp.asarray(3.0) + jnp.zeros(3, jnp.float16)",
    "jax.grad(lambda s: s * 2.0)(3.0)", "jax.grad(lambda s: jnp.sin(s))(3.0)",
    "jax.grad(lambda s: s * jnp.float32(2))(3.0)",
    "jax.grad(lambda s: jnp.sum(s * jnp.ones(3, jnp.float32)))(3.0)",
    "jax.jvp(lambda s: s * 2.0, (3.0,), (1.0,))[0]",
    "jax.jvp(lambda s: s * 2.0, (3.0,), (1.0,))[1]",
    "jax.value_and_grad(lambda s: s * 2.0)(3.0)[0]",
    "jax.vmap(lambda s: s * 2.0)(jnp.arange(3.))", "jax.vmap(lambda s: s * 2.0)(jnp.full(3, 1.0))",
    "jax.random.uniform(jax.random.key(0))", "jax.random.normal(jax.random.key(0), (2,))",
    "jax.eval_shape(lambda s: s * 2.0, 3.0)", "jax.make_jaxpr(lambda s: s * 2.0)(3.0).out_avals[0]",
    "jax.make_jaxpr(lambda s: s * 2)(jnp.zeros(3, jnp.int8)).out_avals[0]",
    "jax.jit(lambda: lax.cond(True, lambda: 1.0, lambda: 2.0))()",
    "jax.jit(lambda s: lax.fori_loop(0, 3, lambda i, c: c * 2, s))(1.0)",
    "jax.jit(lambda s: lax.scan(lambda c, x: (c * 2, c), s, None, length=2)[1])(1.0)",
    "jax.typeof(3.0)", "jax.typeof(jnp.asarray(3.0))",
]

UNARY = [
    "lambda a: -a", "lambda a: jnp.sin(a)", "lambda a: jnp.exp(a)", "lambda a: jnp.abs(a)",
    "lambda a: jnp.sqrt(a)", "lambda a: jnp.square(a)", "lambda a: a ** 2",
    "lambda a: jnp.floor(a)", "lambda a: jnp.round(a)", "lambda a: jnp.sign(a)",
    "lambda a: jnp.isnan(a)", "lambda a: jnp.real(a)", "lambda a: a > 1", "lambda a: a == a",
    "lambda a: a * 2", "lambda a: a * 2.0", "lambda a: 2 * a + 1", "lambda a: a / 2",
    "lambda a: a // 2", "lambda a: jnp.maximum(a, 0.0)", "lambda a: jnp.clip(a, 0, 1)",
    "lambda a: jax.nn.relu(a)",
    "lambda a: jnp.sum(a)", "lambda a: a.sum()", "lambda a: jnp.mean(a)", "lambda a: jnp.max(a)",
    "lambda a: jnp.min(a)", "lambda a: jnp.prod(a)", "lambda a: jnp.argmax(a)",
    "lambda a: jnp.any(a > 0)", "lambda a: jnp.cumsum(a)", "lambda a: jnp.linalg.norm(a)",
    "lambda a: lax.reduce(a, 0.0, lax.add, (0,))",
    "lambda a: lax.reduce_sum(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.reduce_max(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.reduce_prod(jnp.atleast_1d(a), (0,))",
    "lambda a: lax.cumsum(jnp.atleast_1d(a))", "lambda a: lax.cummax(jnp.atleast_1d(a))",
    "lambda a: lax.argmax(jnp.atleast_1d(a), 0, jnp.int32)",
    # a custom_jvp / custom_vjp function of a (its value is traced with a's type)
    "lambda a: (lambda f: (f.defjvp(lambda p, t: (f(*p), t[0] * 2)), f)[1])("
    "jax.custom_jvp(lambda x: x * 2))(a)",
    "lambda a: (lambda g: (g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct * 2,)), g)[1])("
    "jax.custom_vjp(lambda x: x * 2))(a)",
    "lambda a: jnp.reshape(a, (-1,))", "lambda a: a[None]", "lambda a: jnp.expand_dims(a, 0)",
    "lambda a: jnp.broadcast_to(a, (2,) + jnp.shape(a))", "lambda a: jnp.transpose(jnp.atleast_2d(a))",
    "lambda a: jnp.stack([a, a])", "lambda a: jnp.concatenate([jnp.atleast_1d(a)] * 2)",
    "lambda a: jnp.atleast_1d(a)[0]", "lambda a: jnp.atleast_1d(a)[jnp.array([0, 0])]",
    "lambda a: jnp.atleast_1d(a).at[0].set(7)", "lambda a: jnp.atleast_1d(a)[::-1]",
    "lambda a: lax.dynamic_slice(jnp.atleast_1d(a), (0,), (1,))",
    "lambda a: jnp.pad(jnp.atleast_1d(a), 1)", "lambda a: jnp.sort(jnp.atleast_1d(a))",
    "lambda a: jnp.where(a > 0, a, a)", "lambda a: lax.select(jnp.ones(jnp.shape(a), bool), a, a)",
    "lambda a: jnp.dot(a, a)", "lambda a: jnp.outer(a, a)",
    "lambda a: jnp.asarray(a)", "lambda a: jnp.array(a)", "lambda a: a.astype(jnp.float32)",
    "lambda a: jnp.float32(a)", "lambda a: lax.convert_element_type(a, jnp.float32)",
    "lambda a: jnp.zeros_like(a)", "lambda a: jnp.ones_like(a)", "lambda a: jnp.full_like(a, 2)",
    "lambda a: lax.stop_gradient(a)",
    "lambda a: lax.cond(True, lambda x: x * 2, lambda x: x + 1, a)",
    # outputs of Python constants: weak whatever the operand (eagerly too)
    "lambda a: lax.cond(True, lambda x: 1.0, lambda x: 2.0, a)",
    "lambda a: lax.scan(lambda c, x: (c, 1.0), a, None, length=2)[1]",
    "lambda a: jax.checkpoint(lambda x: 1.0)(a)",
    "lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2, a)",
    "lambda a: lax.while_loop(lambda c: jnp.all(c < 10), lambda c: c * 2, a)",
    "lambda a: lax.scan(lambda c, x: (c * 2, c), a, None, length=2)[0]",
    "lambda a: lax.scan(lambda c, x: (c * 2, c), a, None, length=2)[1]",
    "lambda a: jax.checkpoint(lambda y: y * 2)(a)", "lambda a: jax.jit(lambda y: y * 2)(a)",
]
UNARY_ARGS = [("wf",), ("wf0",), ("wi",), ("wc",), ("f32",), ("i32",), ("f32s",)]

BINARY = [
    "lambda a, b: a + b", "lambda a, b: a * b", "lambda a, b: a - b", "lambda a, b: a / b",
    "lambda a, b: jnp.maximum(a, b)", "lambda a, b: a ** b", "lambda a, b: a > b",
    "lambda a, b: jnp.where(True, a, b)", "lambda a, b: a * (b * 2.0)",
    "lambda a, b: jnp.concatenate([jnp.atleast_1d(a), jnp.atleast_1d(b)])",
    "lambda a, b: jnp.dot(a, b)", "lambda a, b: lax.add(a, b)", "lambda a, b: lax.mul(a, b)",
]
BINARY_ARGS = [("wf", "f32"), ("f32", "wf"), ("wf", "wf"), ("wf", "pf"), ("pf", "wf"),
               ("wi", "pf"), ("i32", "pf"), ("wf0", "f32"), ("f32", "pf"), ("i32", "wf"),
               ("wi", "wf"), ("wi", "u8"), ("wc", "f32"), ("f16", "wf"), ("f32", "f32s"),
               ("wf0", "pi"), ("wf", "wf0")]

TERNARY = ["lambda a, b, c: jnp.where(a > 2, b, c)", "lambda a, b, c: jnp.clip(a, b, c)",
           "lambda a, b, c: a * b + c"]
TERNARY_ARGS = [("wf", "wf", "wf"), ("wf", "f32", "wf"), ("f32", "pf", "wf0"),
                ("wf", "pf", "pi"), ("wi", "wf", "wf0")]

CASES = ([(src, UNARY_ARGS) for src in UNARY] + [(src, BINARY_ARGS) for src in BINARY]
         + [(src, TERNARY_ARGS) for src in TERNARY])

# operand kinds of the pair table: every strong array kind, the weak arrays
# and the Python scalars
PAIR_OPERANDS = ["f16", "f32", "f64", "i8", "i32", "i64", "u8", "b", "c64",
                 "wf", "wi", "wc", "pf", "pi", "pc"]
