"""Typed PRNG keys (``random.key``): a key dtype ``key<fry>``, the shape of the
keys, every sampler, every transform, and clear errors where JAX refuses."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fungrad
import fungrad.numpy as fnp
import fungrad.random as random
from fungrad import dtypes, lax, tree_util


def words(keys):
    return np.asarray(random.key_data(keys))


@given(st.integers(-2**63, 2**63 - 1))
def test_a_typed_key_holds_the_raw_key_of_its_seed(seed):
    k = random.key(seed)
    assert str(k.dtype) == "key<fry>" and k.shape == () and k.ndim == 0
    assert dtypes.issubdtype(k.dtype, dtypes.prng_key)
    assert dtypes.issubdtype(k.dtype, dtypes.extended)
    assert not dtypes.issubdtype(k.dtype, np.integer)
    assert not dtypes.issubdtype(random.PRNGKey(seed).dtype, dtypes.prng_key)
    np.testing.assert_array_equal(words(k), random.PRNGKey(seed))
    np.testing.assert_array_equal(words(random.wrap_key_data(random.PRNGKey(seed))), words(k))
    assert random.key_impl(k) == "threefry2x32" == random.key_impl(random.PRNGKey(seed))
    assert random.clone(k).dtype == k.dtype and dtypes.dtype(k) == k.dtype


@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_split_and_fold_in_keep_typed_keys_typed_with_the_raw_words(seed, n, data):
    typed, raw = random.key(seed), random.PRNGKey(seed)
    keys = random.split(typed, n)
    assert keys.shape == (n,) and keys.dtype == typed.dtype
    np.testing.assert_array_equal(words(keys), random.split(raw, n))
    assert random.split(typed, (2, 3)).shape == (2, 3)
    folded = random.fold_in(typed, data)
    assert folded.shape == () and str(folded.dtype) == "key<fry>"
    np.testing.assert_array_equal(words(folded), random.fold_in(raw, data))


SAMPLERS = {
    "uniform": lambda k: random.uniform(k, (3,)),
    "normal": lambda k: random.normal(k, (3,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.0, (3,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (4,)),
    "categorical": lambda k: random.categorical(k, fnp.zeros(5), shape=(3,)),
    "randint": lambda k: random.randint(k, (3,), 0, 9),
    "permutation": lambda k: random.permutation(k, 6),
    "choice": lambda k: random.choice(k, 6, (2,), replace=False),
    "bits": lambda k: random.bits(k, (3,)),
    "gamma": lambda k: random.gamma(k, 2.0, (3,)),
    "beta": lambda k: random.beta(k, 2.0, 3.0, (2,)),
    "dirichlet": lambda k: random.dirichlet(k, fnp.ones(3)),
    "poisson": lambda k: random.poisson(k, 3.0, (3,)),
    "multivariate_normal": lambda k: random.multivariate_normal(k, fnp.zeros(2), fnp.eye(2)),
    "orthogonal": lambda k: random.orthogonal(k, 2),
    "t": lambda k: random.t(k, 3.0, (2,)),
    "gumbel": lambda k: random.gumbel(k, (2,)),
    "laplace": lambda k: random.laplace(k, (2,)),
    "binomial": lambda k: random.binomial(k, 10.0, 0.3, (2,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_takes_typed_keys_and_draws_the_raw_keys_numbers(name):
    draw = SAMPLERS[name]
    np.testing.assert_array_equal(draw(random.key(11)), draw(random.PRNGKey(11)))


def test_typed_keys_through_jit_vmap_and_loops():
    k = random.key(3)
    keys = random.split(k, 4)
    draw = lambda key: random.normal(key, (2,))                       # noqa: E731
    looped = np.stack([np.asarray(draw(key)) for key in keys])
    np.testing.assert_array_equal(fungrad.vmap(draw)(keys), looped)
    np.testing.assert_array_equal(fungrad.jit(fungrad.vmap(draw))(keys), looped)
    # keys as results: jit, vmap
    split_jit = fungrad.jit(lambda key: random.split(key, 3))(k)
    assert split_jit.shape == (3,) and str(split_jit.dtype) == "key<fry>"
    np.testing.assert_array_equal(words(split_jit), words(random.split(k, 3)))
    per_key = fungrad.vmap(lambda key: random.split(key))(keys)
    assert per_key.shape == (4, 2)
    np.testing.assert_array_equal(words(per_key[1]), words(random.split(keys[1])))
    # loop carries
    by_fori = lax.fori_loop(0, 3, lambda i, key: random.split(key)[0], k)
    by_hand = k
    for _ in range(3):
        by_hand = random.split(by_hand)[0]
    np.testing.assert_array_equal(words(by_fori), words(by_hand))
    last, draws = lax.scan(lambda key, x: (random.fold_in(key, x), random.uniform(key)),
                           k, fnp.arange(3))
    assert last.shape == () and draws.shape == (3,)
    np.testing.assert_array_equal(words(last), words(
        random.fold_in(random.fold_in(random.fold_in(k, 0), 1), 2)))
    chosen = lax.cond(True, lambda key: random.split(key)[1], lambda key: key, k)
    np.testing.assert_array_equal(words(chosen), words(random.split(k)[1]))
    # a differentiated function with a key argument
    grad = fungrad.grad(lambda x, key: (x * random.normal(key, (3,))).sum())(2.0, k)
    np.testing.assert_allclose(grad, np.sum(random.normal(k, (3,))))


def test_typed_keys_index_stack_and_live_in_pytrees():
    keys = random.split(random.key(5), 6)
    assert keys[0].shape == () and keys[1:].shape == (5,) and keys[...].shape == (6,)
    assert keys[np.array([0, 2])].shape == (2,) and len(keys) == 6
    np.testing.assert_array_equal(words(keys[2]), words(keys)[2])
    grid = keys.reshape(2, 3)
    assert grid.shape == (2, 3) and grid[1, 2].shape == () and grid.T.shape == (3, 2)
    np.testing.assert_array_equal(words(grid[1, 2]), words(keys[5]))
    stacked = fnp.stack([keys[0], keys[1]])
    assert stacked.shape == (2,)
    np.testing.assert_array_equal(words(stacked), words(keys[:2]))
    assert fnp.concatenate([keys, keys[:2]]).shape == (8,)
    assert fnp.stack([grid, grid], axis=-1).shape == (2, 3, 2)
    np.testing.assert_array_equal(keys == keys, np.ones(6, bool))
    # pytrees: the key array flattens to its words and comes back typed
    state = {"key": keys[0], "count": np.uint32(0)}
    leaves, tree = tree_util.tree_flatten(state)
    back = tree_util.tree_unflatten(tree, leaves)
    assert str(back["key"].dtype) == "key<fry>"
    np.testing.assert_array_equal(words(back["key"]), words(keys[0]))


def test_an_nnx_style_rng_stream():
    # what flax.nnx.Rngs does with its keys: check the dtype, fold in a count,
    # keep key and count in a state pytree that a jitted step updates
    key = random.key(0)
    assert dtypes.issubdtype(key.dtype, dtypes.prng_key)
    state = {"key": key, "count": fnp.array(0, dtype=fnp.uint32)}

    @fungrad.jit
    def draw(state):
        subkey = random.fold_in(state["key"], state["count"])
        return random.normal(subkey, (2,)), {"key": state["key"], "count": state["count"] + 1}

    first, state = draw(state)
    second, state = draw(state)
    np.testing.assert_array_equal(first, random.normal(random.fold_in(key, 0), (2,)))
    np.testing.assert_array_equal(second, random.normal(random.fold_in(key, 1), (2,)))
    assert int(state["count"]) == 2 and str(state["key"].dtype) == "key<fry>"
    assert random.key_data(random.split(state["key"], 2)).shape == (2, 2)


REFUSED = {
    "k + 1": lambda k: k + 1, "1 + k": lambda k: 1 + k, "-k": lambda k: -k,
    "k * k": lambda k: k * k, "k < k": lambda k: k < k,
    "fnp.add": lambda k: fnp.add(k, 1), "lax.add": lambda k: lax.add(k, k),
    "np.asarray": lambda k: np.asarray(k), "fnp.asarray": lambda k: fnp.asarray(k),
    "astype": lambda k: k.astype(np.uint32), "float": lambda k: float(k),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_arithmetic_on_typed_keys_is_refused_naming_the_conversions(name):
    with pytest.raises(TypeError, match="key_data.*wrap_key_data"):
        REFUSED[name](random.key(1))


def test_mixing_the_two_forms_and_unknown_implementations_are_errors():
    with pytest.raises(TypeError, match="typed key.*raw uint32"):
        random.wrap_key_data(random.key(1))
    with pytest.raises(TypeError, match="uint32"):
        random.wrap_key_data(np.zeros(2))
    with pytest.raises(TypeError, match="key_data.*wrap_key_data"):
        fnp.stack([random.key(1), random.PRNGKey(1)])
    with pytest.raises(TypeError, match="batch of keys"):
        random.normal(random.split(random.key(1), 3))
    for make in (random.key, random.PRNGKey):
        with pytest.raises(ValueError, match="'threefry2x32'"):
            make(0, impl="rbg")
    with pytest.raises(ValueError, match="'threefry2x32'"):
        random.key_dtype("unsafe_rbg")


def test_typed_keys_are_jax_arrays():
    # as in JAX, isinstance(key, jax.Array) holds for typed keys (flax accepts a
    # key only if isinstance(key, jnp.ndarray)); other objects still are not
    key = fungrad.random.key(0)
    assert isinstance(key, fungrad.Array) and isinstance(key, fungrad.numpy.ndarray)
    assert isinstance(fungrad.random.split(key, 3), fungrad.Array)
    assert not isinstance([1, 2], fungrad.Array) and not isinstance(object(), fungrad.Array)


def test_jnp_issubdtype_and_typeof_know_key_dtypes():
    """flax.nnx's Rngs asks ``jnp.issubdtype(key.dtype, jax.dtypes.prng_key)``
    and ``jax.typeof(key)`` (regressions: NumPy's issubdtype raised TypeError,
    typeof refused key arrays)."""
    keys = random.split(random.key(0), 3)
    assert fnp.issubdtype(keys.dtype, dtypes.prng_key) and fnp.issubdtype(keys.dtype, dtypes.extended)
    assert not fnp.issubdtype(keys.dtype, np.integer) and not fnp.issubdtype(np.uint32, dtypes.prng_key)
    assert fnp.issubdtype(np.float32, fnp.floating) and not fnp.issubdtype(dtypes.float0, fnp.floating)
    ty = fungrad.typeof(keys)
    assert ty.shape == (3,) and ty.dtype == keys.dtype
    assert fungrad.typeof(keys[0]).shape == ()


def test_bernoulli_accepts_out_sharding():
    key = random.key(3)
    np.testing.assert_array_equal(random.bernoulli(key, 0.3, (5,), out_sharding=None),
                                  random.bernoulli(key, 0.3, (5,)))
