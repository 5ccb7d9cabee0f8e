"""``fungrad.random``: stateless, counter-based pseudo-random numbers (``jax.random``),
JAX's streams bit for bit.

Keys come in JAX's two forms: typed keys (``key(seed)``: a ``KeyArray`` of
dtype ``key<fry>``, shape ``()``; ``_key_array.py`` says how they are
represented) and raw keys (``PRNGKey(seed)``: a ``uint32`` array of shape
``(2,)``); ``key_data`` and ``wrap_key_data`` convert. Every function takes
either, and typed keys stay typed through ``split`` and ``fold_in``.

Every sampler is a pure function of its key: the same key gives the same
numbers, and a key must be ``split`` (or ``fold_in``-ed) to get fresh ones.
Bits come from the Threefry-2x32 block cipher (20 rounds, Salmon et al. 2011)
in either of JAX's stream layouts (``jax_threefry_partitionable``, default
True as in JAX; False gives JAX's streams from before 0.5). The primitives of
``fungrad.lax.prng`` run it on whole uint32 arrays, chunk by chunk, and turn
its words into bits, uniform or normal floats in the same pass, by JAX's
bits-to-float conversion; every sampler is JAX's algorithm with JAX's key
splitting, so ``split``, ``fold_in``, ``bits`` and every sampler give JAX
0.10.2's numbers (``tests/test_random_jax_reference.py``: integers exactly,
floats through erf_inv/log/... within a few ulps). Everything is jittable and
vmappable over keys.

Modules: ``_keys`` (seeding, split, fold_in, bits), ``_key_array`` (typed
keys), ``_samplers`` (uniform, normal, discrete samplers), ``_gamma`` (the
gamma family, poisson, binomial), ``_derived`` (distributions built on them).
"""
from fungrad.random._keys import *  # noqa: F401,F403
from fungrad.random._samplers import *  # noqa: F401,F403
from fungrad.random._gamma import *  # noqa: F401,F403
from fungrad.random._derived import *  # noqa: F401,F403
from fungrad.random import _keys, _samplers, _gamma, _derived

__all__ = [*_keys.__all__, *_samplers.__all__, *_gamma.__all__, *_derived.__all__]
