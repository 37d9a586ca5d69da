"""The parameter-server runtime behind ``DistributeTranspiler``'s programs, on gRPC (as fluid 1.8's
was): a client in each trainer (used by the ``send``, ``recv`` and barrier ops, the communicator and
a distributed ``save_persistables``) and the server that ``Executor.run`` starts for a program
holding ``listen_and_serv``.

- ``wire.py``: messages ``(kind, name, trainer_id, value)`` as bytes (JSON structure + raw arrays).
- ``transport.py``: the gRPC service, the job token, the limits.
- ``client.py``: a trainer's channels and sessions.
- ``server.py``: the server's synchronous and asynchronous loops.
- ``programs.py``: the programs the server runs.

A trainer waits at most ``FLAGS_rpc_deadline`` ms (fluid's flag, 180000 by default) for a server to
start and for each answer, then fails naming the server. A trainer process that ends without
``exe.close()`` tells its servers it is done as it exits, unless an exception ended it.
"""

from __future__ import annotations

import atexit
import sys
from typing import Optional

from fluidcompat.transpiler.rpc.client import Client
from fluidcompat.transpiler.rpc.server import FAILED_GRACE_S, ParameterServer, serve
from fluidcompat.transpiler.rpc.wire import _decode, _encode, _unwire, _wire

__all__ = ["Client", "ParameterServer", "serve", "client", "close_client", "script_failed", "FAILED_GRACE_S"]
__all__ += ["_encode", "_decode", "_wire", "_unwire"]

_CLIENT: Optional[Client] = None
_failed = False  # an exception ended the main script (sys.excepthook saw it)


def client() -> Client:
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = Client()
        _watch_exit()
    return _CLIENT


def close_client() -> None:
    if _CLIENT is not None:
        _CLIENT.complete()


_watching = False


def _watch_exit() -> None:
    """At the process's exit, a trainer that did not call ``exe.close()`` tells its servers it is done,
    as fluid's launcher's end of the job did (unless an exception ended the script: then its servers
    see it gone)."""
    global _watching
    if _watching:
        return
    _watching = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        global _failed
        _failed = True
        previous(kind, value, tb)

    sys.excepthook = hook
    atexit.register(_at_exit)


def script_failed() -> None:
    """An exception ended the script (``fluidcompat run`` tells it): at exit the client says nothing,
    and the servers of a synchronous job see the trainer gone."""
    global _failed
    _failed = True


def _at_exit() -> None:
    if not _failed:
        close_client()
