"""``fungrad.scipy``: the ``jax.scipy`` subset fungrad provides (``special``,
``stats``, ``linalg``)."""
from fungrad.scipy import special  # noqa: F401
from fungrad.scipy import stats, linalg  # noqa: F401
