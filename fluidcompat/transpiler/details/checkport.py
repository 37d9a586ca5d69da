"""``wait_server_ready``: block until every parameter server accepts connections."""

from __future__ import annotations

from fluidcompat.transpiler.distribute_transpiler import wait_server_ready as _wait

__all__ = ["wait_server_ready"]


def wait_server_ready(endpoints) -> None:
    """Wait until each ``"ip:port"`` of ``endpoints`` (a list) accepts a TCP connection, telling
    stderr which are not ready every 3 seconds, as fluid did."""
    if isinstance(endpoints, (str, bytes)):
        raise TypeError(f"wait_server_ready takes a list of 'ip:port' endpoints, not a string. Received: {endpoints!r}")
    _wait(list(endpoints))
