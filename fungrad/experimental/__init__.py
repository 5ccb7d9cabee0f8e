"""``fungrad.experimental``: the APIs that JAX keeps under ``jax.experimental``.

* ``checkify`` -> ``fungrad.checkify`` (``from fungrad.experimental import checkify``);
* ``ode`` -> ``fungrad.ode`` (``from fungrad.experimental.ode import odeint``);
from fungrad.callback import io_callback
from fungrad.experimental import checkify, jet, ode, shard_map, sparse

__all__ = ["checkify", "jet", "ode", "shard_map", "sparse", "io_callback", "enable_x64",
           "disable_x64"]
* ``layout`` (``from fungrad.experimental.layout import Layout, Format``):
  JAX's layout and format values, which flax's sharding helpers inspect;
* ``enable_x64`` / ``disable_x64``: JAX's older context managers for
  ``jax_enable_x64`` (also ``fungrad.enable_x64``);
* ``shard_map``: the older spelling of ``fungrad.shard_map``
  (``from fungrad.experimental.shard_map import shard_map``).
"""
from fungrad import _config
from fungrad.callback import io_callback
from fungrad.experimental import checkify, jet, ode, shard_map, sparse

__all__ = ["checkify", "jet", "ode", "shard_map", "sparse", "io_callback", "enable_x64",
           "disable_x64"]


def enable_x64(new_val: bool = True):
    """``with enable_x64(): ...``: 64-bit defaults while the block runs."""
    return _config.enable_x64(new_val)


def disable_x64():
    """``with disable_x64(): ...``: JAX's 32-bit defaults while the block runs."""
    return _config.enable_x64(False)
