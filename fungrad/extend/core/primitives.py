"""``fungrad.extend.core.primitives``: every primitive as ``<name>_p``
(``jax.extend.core.primitives``), e.g. ``from fungrad.extend.core.primitives
import add_p, exp_p``.  Looked up in fungrad's registry, so this module also
has the primitives that layers above it define (``custom_jvp_call_p``, ...)."""
from fungrad import core as _core


def __getattr__(name):
    if name.endswith("_p") and name[:-2] in _core.primitives:
        return _core.primitives[name[:-2]]
    raise AttributeError(f"module 'fungrad.extend.core.primitives' has no attribute {name!r}")


def __dir__():
    return sorted(f"{name}_p" for name in _core.primitives)
