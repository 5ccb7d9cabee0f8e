"""The environment switch: with ``PYTHONPATH=$(python -m fungrad
jax-path)``, this directory's ``jax`` is found before any installed JAX.
Importing it installs fungrad's hook and replaces itself with the hook's
``jax`` (a view of fungrad), so the program sees exactly what
``fungrad.jax_compat.install()`` gives."""
import sys

import fungrad.jax_compat as _compat

del sys.modules["jax"]          # this module; the hook's view takes its place
_compat.install()
sys.modules["jax"] = _compat._hook.view_for("jax")
