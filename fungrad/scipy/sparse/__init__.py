"""``fungrad.scipy.sparse`` (``jax.scipy.sparse``): ``linalg`` holds the Krylov
solvers ``cg``, ``bicgstab`` and ``gmres``."""
from fungrad.scipy.sparse import linalg  # noqa: F401
