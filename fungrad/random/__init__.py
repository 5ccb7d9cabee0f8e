"""``fungrad.random``: stateless, counter-based pseudo-random numbers (``jax.random``).

A *key* is a ``uint32`` array of shape ``(2,)``: JAX's legacy ``PRNGKey``
representation. ``key(seed)`` returns that same representation (JAX's new-style
typed keys are not modelled). Keys are plain arrays, so they pass through
``jit``, ``vmap`` (a batch of keys is a ``(n, 2)`` array) and pytrees unchanged.

Every sampler is a pure function of its key: the same key gives the same
numbers, and a key must be ``split`` (or ``fold_in``-ed) to get fresh ones.
Bits come from the Threefry-2x32 block cipher (20 rounds, Salmon et al. 2011):
the primitives of ``fungrad.lax.prng`` run it on whole uint32 arrays, chunk by
chunk, and turn its words into bits, uniform or normal floats in the same pass
(``benchmarks/`` compares ``normal`` with NumPy's ``standard_normal``); they
have batching rules and NumPy lowerings, so every function here is jittable
and vmappable. ``PRNGKey``, ``split``, ``fold_in`` and ``bits`` follow JAX's
legacy (non-"partitionable") Threefry scheme and reproduce its bits; the float
samplers use their own bits-to-float conversion (53 random bits per float64),
so ``uniform`` and friends do not reproduce JAX's exact streams.
"""
from fungrad.random._keys import *  # noqa: F401,F403
from fungrad.random._samplers import *  # noqa: F401,F403
from fungrad.random._gamma import *  # noqa: F401,F403
from fungrad.random._derived import *  # noqa: F401,F403
from fungrad.random import _keys, _samplers, _gamma, _derived

__all__ = [*_keys.__all__, *_samplers.__all__, *_gamma.__all__, *_derived.__all__]
