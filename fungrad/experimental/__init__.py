"""``fungrad.experimental``: the APIs that JAX keeps under ``jax.experimental``.

* ``checkify`` -> ``fungrad.checkify`` (``from fungrad.experimental import checkify``);
* ``ode`` -> ``fungrad.ode`` (``from fungrad.experimental.ode import odeint``);
* ``io_callback``: a host callback with side effects inside transformations
  (``fungrad.callback.io_callback``);
* ``sparse``: ``BCOO`` sparse arrays (``fungrad.experimental.sparse``);
* ``layout`` (``from fungrad.experimental.layout import Layout, Format``):
  JAX's layout and format values, which flax's sharding helpers inspect;
* ``enable_x64`` / ``disable_x64``: JAX's older context managers for
  ``jax_enable_x64`` (also ``fungrad.enable_x64``);
* ``shard_map``: being built with ``fungrad.distributed``; until it lands,
  ``fungrad.experimental.shard_map`` raises an AttributeError that says so.
"""
from fungrad import _config
from fungrad.callback import io_callback
from fungrad.experimental import checkify, ode, sparse

__all__ = ["checkify", "ode", "sparse", "io_callback", "enable_x64", "disable_x64"]


def enable_x64(new_val: bool = True):
    """``with enable_x64(): ...``: 64-bit defaults while the block runs."""
    return _config.enable_x64(new_val)


def disable_x64():
    """``with disable_x64(): ...``: JAX's 32-bit defaults while the block runs."""
    return _config.enable_x64(False)


def __getattr__(name):
    if name == "shard_map":
        raise AttributeError("fungrad.experimental.shard_map is not available yet: it is "
                             "being built with fungrad.distributed (a named vmap gives "
                             "the same per-shard semantics on one machine meanwhile)")
    raise AttributeError(f"module 'fungrad.experimental' has no attribute {name!r}")
