"""Hypothesis profiles (CI is derandomized, deterministic, with a modest budget) and
the `without_numba` fixture."""
import os

import pytest

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=15, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.register_profile(
    "dev", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def without_numba():
    """fungrad.random as where numba is not installed: large draws (beyond
    kernels/prng.py's EXACT_SAMPLES) take NumPy's functions (restored after)."""
    from fungrad.lax.kernels import xla_cpu_math
    saved = xla_cpu_math.COMPILED_LOADER[0], xla_cpu_math.COMPILED[0]
    xla_cpu_math.COMPILED_LOADER[0] = xla_cpu_math.COMPILED[0] = None
    yield
    xla_cpu_math.COMPILED_LOADER[0], xla_cpu_math.COMPILED[0] = saved
