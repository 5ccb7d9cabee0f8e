"""What runs on the Dask workers: compiled stages and the collectives' pieces.

Tasks name these module-level functions (pickled by reference), so nothing
but data travels: a ``Program`` is the generated NumPy source of each stage
of a shard_map body with its constants, compiled once per worker and kept
under the hash of its source.  Task arguments that refer to other tasks'
results are ``(value, index)`` pairs: ``value[index]``, or ``value`` itself
when ``index`` is None (Dask replaces the futures inside by their values).
"""
from __future__ import annotations

import hashlib

import numpy as np

from fungrad.interpreters.codegen import compile_source

__all__ = ["Program", "StageCode", "hold", "run_stage", "pack", "combine", "gather",
           "scatter_chunks", "all_to_all_chunk"]


class StageCode:
    """One stage: generated source, its nested blocks' constants, its constants."""
    __slots__ = ("source", "block_consts", "consts", "modules", "digest")

    def __init__(self, source: str, block_consts: dict, consts: list, modules: dict):
        self.source, self.block_consts, self.consts = source, dict(block_consts), list(consts)
        self.modules = dict(modules)     # kernel-module alias -> import name
        self.digest = hashlib.sha256(source.encode()).hexdigest()

    def __getstate__(self):
        return (self.source, self.block_consts, self.consts, self.modules, self.digest)

    def __setstate__(self, state):
        self.source, self.block_consts, self.consts, self.modules, self.digest = state


class Program:
    """The stages of one shard_map body, shipped to the workers as data."""
    __slots__ = ("stages", "digest")

    def __init__(self, stages: list):
        self.stages = list(stages)
        self.digest = hashlib.sha256("".join(s.digest for s in stages).encode()).hexdigest()

    def __getstate__(self):
        return (self.stages, self.digest)

    def __setstate__(self, state):
        self.stages, self.digest = state


_compiled: dict = {}     # source digest -> compiled function (per worker process)
_COMPILED_LIMIT = 1024


def _function(code: StageCode):
    fn = _compiled.get(code.digest)
    if fn is None:     # (importing this module imported fungrad: every primitive is known)
        fn = compile_source(code.source, "stage", code.block_consts, code.modules)
        if len(_compiled) >= _COMPILED_LIMIT:     # bounded: a long-lived worker
            _compiled.pop(next(iter(_compiled)), None)
        _compiled[code.digest] = fn
    return fn


def _value(arg):
    value, index = arg
    return value if index is None else value[index]


def hold(value):
    """A task whose result is ``value`` (data in the task spec: recomputable if lost)."""
    return value


def run_stage(program: Program, index: int, *args):
    code = program.stages[index]
    return tuple(_function(code)(*code.consts, *[_value(a) for a in args]))


def pack(*args):
    """The values a collective needs from this worker, without the rest of a tuple."""
    return tuple(_value(a) for a in args)


_OPS = {"add": np.add, "max": np.maximum, "min": np.minimum}


def combine(ops, left, right):
    """One node of a tree reduction: elementwise ``ops`` of two tuples of values."""
    return tuple(_OPS[op](a, b) for op, a, b in zip(ops, left, right))


def gather(specs, *members):
    """all_gather: each member's values stacked (``tiled``: concatenated) on ``axis``."""
    out = []
    for i, (axis, tiled) in enumerate(specs):
        values = [m[i] for m in members]
        out.append(np.concatenate(values, axis) if tiled else np.stack(values, axis))
    return tuple(out)


def scatter_chunks(total, lane, n, posts):
    """After a reduction: member ``lane``'s results (its chunk of scattered sums)."""
    out = []
    for value, post in zip(total, posts):
        if post is None:
            out.append(value)
            continue
        dim, tiled = post
        chunk = value.shape[dim] // n if tiled else 1
        piece = np.take(value, range(lane * chunk, (lane + 1) * chunk), axis=dim)
        out.append(piece if tiled else np.squeeze(piece, dim))
    return tuple(out)


def all_to_all_chunk(lane, n, split_axis, concat_axis, *members):
    """all_to_all (tiled): chunk ``lane`` of every member's value, concatenated."""
    pieces = []
    for m in members:
        x = m[0]
        chunk = x.shape[split_axis] // n
        pieces.append(np.take(x, range(lane * chunk, (lane + 1) * chunk), axis=split_axis))
    return (np.concatenate(pieces, concat_axis),)
