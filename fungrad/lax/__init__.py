"""``fungrad.lax``: the primitive operations, with JAX's names and signatures.

Each submodule defines primitives together with all of their rules (impl,
shape rule, jvp, transpose, batching, lowering); this package only
re-exports their public functions (each submodule's ``__all__``).
"""
from fungrad.lax.elementwise import *  # noqa: F401,F403
from fungrad.lax.structural import *  # noqa: F401,F403
from fungrad.lax.reductions import *  # noqa: F401,F403
from fungrad.lax.indexing import *  # noqa: F401,F403
from fungrad.lax.sorting import *  # noqa: F401,F403
from fungrad.lax.linalg import *  # noqa: F401,F403
from fungrad.lax import linalg  # noqa: F401  (also as fungrad.lax.linalg, as JAX)
# jax.lax.linalg.eig lives in its own module (it builds on linalg's helpers,
# so linalg cannot import it without a cycle); expose it where JAX has it
from fungrad.lax import eig as _eig_module  # noqa: E402
linalg.eig = _eig_module.eig
linalg.__all__ = list(linalg.__all__) + ["eig"]
from fungrad.lax.parallel import *  # noqa: F401,F403
from fungrad.lax.control_flow import *  # noqa: F401,F403
from fungrad.lax.solvers import *  # noqa: F401,F403
from fungrad.lax.fft import *  # noqa: F401,F403
from fungrad.lax.convolution import *  # noqa: F401,F403
from fungrad.lax.windowed import *  # noqa: F401,F403
from fungrad.lax.special import *  # noqa: F401,F403
from fungrad.lax.prng import *  # noqa: F401,F403
