"""``fungrad.experimental.checkify`` (as ``jax.experimental.checkify``): ``fungrad.checkify``."""
from fungrad.checkify import *  # noqa: F401,F403
from fungrad.checkify import __all__  # noqa: F401
