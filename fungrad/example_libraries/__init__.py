"""``fungrad.example_libraries`` (``jax.example_libraries``): the small
libraries JAX ships beside its API, reimplemented on fungrad.

* ``optimizers``: first-order optimizers as ``(init, update, get_params)``
  triples over pytrees (what every ``numpyro.optim`` optimizer wraps);
* ``stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs (numpyro's
  autoregressive networks are built from them).
"""
from fungrad.example_libraries import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]
