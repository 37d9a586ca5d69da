"""How the parameter blocks of a distributed job are spread over its parameter servers."""

from __future__ import annotations

import zlib


class PSDispatcher:
    """Base class: ``dispatch(varlist)`` gives the endpoint of each variable, in order."""

    def __init__(self, pserver_endpoints):
        self._eps = list(pserver_endpoints)
        self._step = 0

    @property
    def eps(self):
        return self._eps

    def reset(self) -> None:
        """Start again from the first endpoint."""
        self._step = 0

    def dispatch(self, varlist):
        raise NotImplementedError(f"{type(self).__name__} must implement dispatch(varlist)")


class HashName(PSDispatcher):
    """Each variable to the endpoint its name hashes to.

    Compat: the hash is CRC-32 of the name, the same in every process (fluid 1.8.5 hashed with
    Python's ``hash()``, which differs between processes, and called ``var.name()``, which failed)."""

    def dispatch(self, varlist):
        return [self._eps[zlib.crc32(v.name.encode()) % len(self._eps)] for v in varlist]


class RoundRobin(PSDispatcher):
    """The variables to the endpoints in turn, carrying on from where the last call stopped."""

    def dispatch(self, varlist):
        eplist = []
        for _ in varlist:
            eplist.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return eplist
