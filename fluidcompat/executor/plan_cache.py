"""The executor's prepared blocks, kept per program content.

A program is planned once per (content, feed names, fetch names, LoD): the plan of a program is
found again by the program object while its version stands, and by its content when a new program
object (a ``clone`` made every step, a ``Program()`` rebuilt every step) holds the same variables
and ops as one planned before. The cache holds programs weakly: a program the script dropped goes
with its last reference, young, instead of waiting in the cache (and then in the collector's oldest
generation) for programs run later to push it out.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, Tuple

import numpy as np

from fluidcompat.framework import Block, Program, Variable

# variable fields a plan may read; the rest (its block, the op that made it, clip and regularizer
# objects) are either links or build-time settings
_VAR_FIELDS = (
    "name", "type", "_shape", "_dtype", "_lod_level", "persistable", "stop_gradient", "is_data",
    "need_check_feed", "belong_to_optimizer", "trainable", "is_distributed",
)  # fmt: skip


def _value_key(value: Any) -> Hashable:
    """An attribute value as a hashable key: equal keys for equal values (objects by identity)."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind in (list, tuple):
        return (kind.__name__,) + tuple(_value_key(v) for v in value)
    if isinstance(value, Block):
        return ("block", value.idx)
    if isinstance(value, Variable):
        return ("var", value.name)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict",) + tuple((_value_key(k), _value_key(v)) for k, v in value.items())
    if isinstance(value, (np.generic, int, float, str)):  # numpy scalars, enums
        return (kind.__name__, value)
    return ("id", id(value))  # a callable, a reader: the plan keeps it alive, so its id is not reused


class _Content:
    """A content key with its hash made once (a tuple hashes its items again at every look-up)."""

    __slots__ = ("key", "hash", "__weakref__")

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.hash = hash(key)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        return self is other or (type(other) is _Content and self.hash == other.hash and self.key == other.key)


def content_key(program: Program) -> _Content:
    """What a plan of ``program`` depends on: its blocks' variables and ops, field by field."""
    blocks = []
    for b in program.blocks:
        variables = tuple(tuple(getattr(v, f, None) for f in _VAR_FIELDS) for v in b.vars.values())
        ops = tuple(
            (
                op.type,
                id(op._def),  # its definition (a registry entry the plan's op keeps alive)
                tuple((s, tuple(n)) for s, n in op.inputs.items()),
                tuple((s, tuple(n)) for s, n in op.outputs.items()),
                tuple((k, _value_key(v)) for k, v in op.attrs.items()),
                op._callsite,
            )
            for op in b.ops
        )
        blocks.append((b.idx, b.parent_idx, b.forward_block_idx, variables, ops))
    return _Content((program.random_seed, program._is_test, tuple(blocks)))


def _forget(cache_ref: weakref.ref, pid: int, ref: weakref.ref) -> None:
    """A program went: its entry goes (unless its id was taken by a program seen since)."""
    cache = cache_ref()
    entry = cache._seen.get(pid) if cache is not None else None
    if entry is not None and entry[0] is ref:
        del cache._seen[pid]


class ProgramCache:
    """Prepared blocks by program content, the ``LIMIT`` used last kept (a plan keeps the program it
    was made from alive, one program per content); programs seen, weakly, by identity and version."""

    LIMIT = 16

    def __init__(self) -> None:
        self._plans: "OrderedDict[Tuple[Hashable, Hashable], Any]" = OrderedDict()
        # each content planned, once (a program seen holds that one, not a copy of its own)
        self._contents: Dict[_Content, _Content] = {}
        # id(program) -> (weak reference, version, content key)
        self._seen: Dict[int, Tuple[weakref.ref, int, Hashable]] = {}

    def get(self, program: Program, key: Hashable, build: Callable[[], Any]) -> Tuple[Any, bool]:
        """The plan of ``program`` for ``key`` (made by ``build`` when none fits), and whether this
        program object at this version was run before."""
        pid = id(program)
        seen = self._seen.get(pid)
        again = seen is not None and seen[0]() is program and seen[1] == program._version
        if again:
            content = seen[2]
        else:
            content = content_key(program)
            content = self._contents.get(content, content)
            ref = weakref.ref(program, functools.partial(_forget, weakref.ref(self), pid))
            self._seen[pid] = (ref, program._version, content)
        plan = self._plans.get((content, key))
        if plan is None:
            plan = build()
            self._contents.setdefault(content, content)  # (once planned: a plan that failed keeps none)
            self._plans[(content, key)] = plan
            while len(self._plans) > self.LIMIT:
                (gone, _), _ = self._plans.popitem(last=False)
                if all(c is not gone for c, _ in self._plans):
                    self._contents.pop(gone, None)
        else:
            self._plans.move_to_end((content, key))
        return plan, again
