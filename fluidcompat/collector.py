"""The cyclic garbage collector, held off while a large program is made in one call.

CPython runs a full collection each time the objects that survived young collections grow by a
quarter of those it kept before; each one visits every tracked object. ``append_backward`` over a
program of 20,000 ops, ``minimize``, ``clone`` and the executor's first plan of it make hundreds of
thousands of objects, nearly all kept: the collections run during the call found nothing to free
and cost more than the call (six full collections, 1.2 s of a 3 s build). ``paused()`` defers them
to the end of the call, where the collector runs once if it is due. A collector the script turned
off stays off.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from typing import Callable, Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Hold off automatic collections for the duration of the block (nested and threaded uses are
    safe: only the outermost of those that found the collector on turns it back on)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def pausing(fn: Callable) -> Callable:
    """``fn`` run under ``paused()``."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with paused():
            return fn(*args, **kwargs)

    return wrapper
