"""``fungrad.experimental.ode`` (as ``jax.experimental.ode``): ``fungrad.ode``."""
from fungrad.ode import *  # noqa: F401,F403
from fungrad.ode import __all__  # noqa: F401
