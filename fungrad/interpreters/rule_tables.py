"""JAX's rule registries (``ad.primitive_jvps[p] = rule``, ...) as views of the
rules each ``Primitive`` carries as attributes.

fungrad keeps every rule on its primitive (``p.jvp``, ``p.transpose``,
``p.batch``); JAX keeps one dictionary per interpreter.  Code written for JAX
registers rules through those dictionaries, so ``fungrad.interpreters.ad``
and ``batching`` expose them as ``RuleTable``s: setting an entry sets the
attribute (adapting JAX's signature where it differs), reading one gives the
registered rule back.  A rule that is missing (``None``, or the placeholder
that raises ``NotImplementedError`` on an extension primitive) is not in the
table.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Callable

from fungrad import core

__all__ = ["RuleTable"]


def is_missing(rule) -> bool:
    """No rule, or an extension primitive's placeholder that reports the gap."""
    return rule is None or getattr(rule, "missing_rule", False)


class RuleTable(MutableMapping):
    """``table[prim] = rule`` stores ``adapt(prim, rule)`` as ``prim.<attr>``."""

    def __init__(self, attr: str, adapt: Callable | None = None,
                 on_set: Callable | None = None):
        self.attr = attr
        self.adapt = adapt or (lambda prim, rule: rule)
        self.on_set = on_set
        self._given = {}          # prim -> the rule as registered (before adapting)

    def __setitem__(self, prim, rule):
        if not isinstance(prim, core.Primitive):
            raise TypeError(f"rule tables are keyed by primitives, got {type(prim).__name__}")
        setattr(prim, self.attr, self.adapt(prim, rule))
        self._given[prim] = rule
        if self.on_set is not None:
            self.on_set(prim)

    def __getitem__(self, prim):
        rule = getattr(prim, self.attr, None) if isinstance(prim, core.Primitive) else None
        if is_missing(rule):
            raise KeyError(prim)
        return self._given.get(prim, rule)

    def __delitem__(self, prim):
        self[prim]                  # KeyError if absent
        placeholder = getattr(prim, "missing_rule", None)   # extension primitives report gaps
        setattr(prim, self.attr, placeholder(self.attr) if placeholder else None)
        self._given.pop(prim, None)

    def __iter__(self):
        candidates = dict.fromkeys(list(core.primitives.values()) + list(self._given))
        return (p for p in candidates if p in self)

    def __len__(self):
        return sum(1 for _ in self)

    def __contains__(self, prim):
        return isinstance(prim, core.Primitive) and not is_missing(getattr(prim, self.attr, None))

    def __repr__(self):
        return f"RuleTable({self.attr!r}, {len(self)} primitives)"
