"""Python names of fluid's time that later Pythons removed, for the scripts ``fluidcompat run`` runs.

fluid 1.8 ran on Python 3.5-3.7; its scripts and readers wrote ``collections.Iterable``,
``collections.Mapping`` (the aliases of ``collections.abc`` that Python 3.10 removed) and timed with
``time.clock()`` (removed in 3.8; on Linux it was the process's CPU time). ``restore()`` puts back
those that are missing, as they were in Python 3.7.
"""

from __future__ import annotations

import collections
import collections.abc
import time

# the collections.abc classes collections also exported until Python 3.10
_ABC_NAMES = (
    "Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator", "Hashable", "Iterable",
    "Iterator", "Generator", "Reversible", "Sized", "Container", "Callable", "Collection", "Set", "MutableSet",
    "Mapping", "MutableMapping", "MappingView", "KeysView", "ItemsView", "ValuesView", "Sequence",
    "MutableSequence", "ByteString",
)  # fmt: skip


def restore() -> list:
    """Put the missing names back; returns those it added (as "module.name")."""
    added = []
    for name in _ABC_NAMES:
        if name not in collections.__dict__ and hasattr(collections.abc, name):
            setattr(collections, name, getattr(collections.abc, name))
            added.append(f"collections.{name}")
    if "clock" not in time.__dict__:
        time.clock = time.process_time
        added.append("time.clock")
    return added
