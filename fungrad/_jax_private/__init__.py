"""JAX's private modules (``jax._src.*``) that ecosystem libraries import anyway.

The import hook (fungrad.jax_compat) maps ``jax._src.x`` to
``fungrad._jax_private.x``.  This is the only place such compatibility code
lives: the public modules of fungrad stay JAX's public API.  Each module here
says which libraries import it and why, and builds on fungrad's own
machinery (no placeholders).
"""
