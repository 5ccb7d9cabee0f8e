"""``fungrad.scipy``: the ``jax.scipy`` subset fungrad provides (``special``)."""
from fungrad.scipy import special  # noqa: F401
