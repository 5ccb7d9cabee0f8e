"""``fungrad.experimental``: the APIs that JAX keeps under ``jax.experimental``.

* ``checkify`` -> ``fungrad.checkify`` (``from fungrad.experimental import checkify``);
* ``ode`` -> ``fungrad.ode`` (``from fungrad.experimental.ode import odeint``);
* ``layout`` (``from fungrad.experimental.layout import Layout, Format``):
  JAX's layout and format values, which flax's sharding helpers inspect;
* ``enable_x64`` / ``disable_x64``: JAX's older context managers for
  ``jax_enable_x64`` (also ``fungrad.enable_x64``);
* ``hijax`` (JAX's hijax extension API: primitives defined by subclassing,
  value types of one's own; see its docstring for what runs under
  transformations) and ``cur_qdd``;
* ``shard_map``: the older spelling of ``fungrad.shard_map``
  (``from fungrad.experimental.shard_map import shard_map``).
"""
from fungrad import _config
from fungrad.callback import io_callback
from fungrad.experimental import checkify, hijax, jet, ode, shard_map, sparse
from fungrad.experimental.hijax import cur_qdd

__all__ = ["checkify", "hijax", "jet", "ode", "shard_map", "sparse", "io_callback", "enable_x64",
           "disable_x64", "cur_qdd"]


def enable_x64(new_val: bool = True):
    """``with enable_x64(): ...``: 64-bit defaults while the block runs."""
    return _config.enable_x64(new_val)


def disable_x64():
    """``with disable_x64(): ...``: JAX's 32-bit defaults while the block runs."""
    return _config.enable_x64(False)
