"""``fungrad.scipy``: the ``jax.scipy`` subset fungrad provides (``special``,
``stats``, ``linalg``, ``optimize``, ``sparse.linalg``, ``signal``, ``fft``,
``ndimage``, ``integrate``)."""
from fungrad.scipy import special  # noqa: F401
from fungrad.scipy import stats, linalg, optimize, sparse  # noqa: F401
from fungrad.scipy import signal, fft, ndimage, integrate  # noqa: F401
