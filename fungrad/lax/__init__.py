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
from fungrad.lax.dot import *  # noqa: F401,F403
from fungrad.lax.linalg import *  # noqa: F401,F403
from fungrad.lax import linalg  # noqa: F401  (also as fungrad.lax.linalg, as JAX)
from fungrad.lax.parallel import *  # noqa: F401,F403
from fungrad.lax.control_flow import *  # noqa: F401,F403
from fungrad.lax.fft import *  # noqa: F401,F403
from fungrad.lax.convolution import *  # noqa: F401,F403
from fungrad.lax.windowed import *  # noqa: F401,F403
from fungrad.lax.special import *  # noqa: F401,F403
from fungrad.lax.prng import *  # noqa: F401,F403
from fungrad.lax.compilation import *  # noqa: F401,F403
from fungrad.lax.compat import *  # noqa: F401,F403
from fungrad.lax import callbacks  # noqa: F401,E402  (debug/pure callbacks, checks)

# the array operations the interpreters need (tangent sums, zeros, batch axes),
# and the structural primitives the optimisation passes rewrite
from fungrad.interpreters import array_ops as _array_ops  # noqa: E402
from fungrad.lax.dot import dot_general_p as _dot_general_p  # noqa: E402
from fungrad.lax.structural import (broadcast_in_dim_p as _broadcast_in_dim_p,  # noqa: E402
                                    concatenate_p as _concatenate_p, pad_p as _pad_p,
                                    transpose_p as _transpose_p)
_array_ops.register(add=add, full=full, reduce_sum=reduce_sum, reshape=reshape,  # noqa: F405
                    transpose=transpose, broadcast_in_dim=broadcast_in_dim,  # noqa: F405
                    transpose_p=_transpose_p, dot_general_p=_dot_general_p,
                    broadcast_in_dim_p=_broadcast_in_dim_p, pad_p=_pad_p,
                    concatenate_p=_concatenate_p)

# Every primitive as ``<name>_p``, JAX's spelling (``lax.exp_p``, ``lax.add_p``,
# ``lax.while_p``): those defined in lax now; those the transforms layer defines
# (``custom_jvp_call_p``, ``checkpoint_p``, ...) through the registry, which is
# a lookup in core, not an import of a higher layer.
from fungrad import core as _core  # noqa: E402
from fungrad.lax.utils import (computes_small_dtypes_wide as _computes_small_dtypes_wide,  # noqa
                               small_dtypes_run_the_impl as _small_dtypes_run_the_impl)
from fungrad.lax.elementwise import WIDE_FOR_SMALL_DTYPES as _WIDE  # noqa: E402
# bfloat16, float8, int4 ...: computed in float32 (int8) and rounded back, as XLA's
# CPU backend does (after every rule is registered: some ops replace their lowering)
for _prim in _WIDE + [_core.primitives[_name] for _name in (
        "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin", "cumsum",
        "cumprod", "cummax", "cummin", "cumlogsumexp", "reduce_window_sum", "reduce_window_max",
        "reduce_window_min", "conv_general_dilated", "pow", "integer_pow")]:
    _computes_small_dtypes_wide(_prim, bit_pattern={"shift_right_logical": "value",
                                                    "clz": "leading zeros"}.get(_prim.name))
for _name in ("gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
    _small_dtypes_run_the_impl(_core.primitives[_name])
globals().update({f"{_name}_p": _prim for _name, _prim in _core.primitives.items()})


def __getattr__(name):
    if name.endswith("_p") and name[:-2] in _core.primitives:
        return _core.primitives[name[:-2]]
    raise AttributeError(f"module 'fungrad.lax' has no attribute {name!r}")
