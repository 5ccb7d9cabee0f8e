"""``fungrad.experimental.layout`` (``jax.experimental.layout``): descriptions of
how an array is laid out in memory (``Layout``) together with where it lives
(``Format``: a layout and a sharding).

fungrad's arrays are NumPy arrays on one CPU device, row-major; these are the
value types JAX code builds and inspects (flax's sharding helpers map over
``Format`` objects).  fungrad's ``jit`` does not take layouts: it computes
the same values whatever memory order is asked for.
"""
from __future__ import annotations

from fungrad.sharding import Sharding

__all__ = ["Layout", "Format"]


class _AutoLayout:
    """``Layout.AUTO``: let the compiler choose."""

    def __repr__(self):
        return "AUTO"


class Layout:
    """Memory order of an array's dimensions, most major first, and tiling."""
    AUTO = _AutoLayout()

    def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(int(d) for d in major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = int(sub_byte_element_size_in_bits)

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")


class Format:
    """A ``Layout`` (or ``Layout.AUTO``, or None) and a ``Sharding`` (or None)."""
    __slots__ = ("layout", "sharding")

    def __init__(self, layout=None, sharding=None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError("Format: a concrete Layout needs a concrete sharding "
                             "(a NamedSharding or SingleDeviceSharding)")
        if not (layout is None or layout is Layout.AUTO or isinstance(layout, Layout)):
            raise TypeError(f"Format: layout must be None, Layout.AUTO or a Layout, got "
                            f"{type(layout).__name__}")
        if not (sharding is None or isinstance(sharding, Sharding)):
            raise TypeError(f"Format: sharding must be None or a Sharding, got "
                            f"{type(sharding).__name__}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"
