"""``fungrad.errors`` (as ``jax.errors``): the exceptions transformations raise.

fungrad raises these classes (defined in ``fungrad.core``), so code written
with ``except jax.errors.ConcretizationTypeError`` works unchanged.  The three
conversion errors are ConcretizationTypeErrors too.
"""
from fungrad.core import (ConcretizationTypeError, JaxRuntimeError, KeyReuseError,
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError)

__all__ = ["ConcretizationTypeError", "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "UnexpectedTracerError", "KeyReuseError",
           "JaxRuntimeError"]
