"""What the launchers (``launch``, ``launch_ps``) need to end a job well: the order in which its
processes exit, as it happens, and stopping their process groups.

A launcher names the process that failed first. A second's timestamp cannot tell which of two
workers failed first (the other one fails on its broken connection a few milliseconds later), nor can
the order in which a parent polling every 0.1 s sees them gone. ``ExitOrder`` is a thread that waits
on a pidfd of each process (Linux 5.3+: readable once the process has ended, reaped or not) and
records each exit when it happens. Stdlib only.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import threading
import time
from typing import Callable, Dict, Hashable, List, Optional, Tuple

__all__ = ["ExitOrder", "stop_groups", "die_by", "signal_name"]

POLL_MS = 50


class ExitOrder:
    """Watch processes (``watch(key, pid)``) and keep ``exits``: ``(wake, time_ns, key)`` in the order
    they ended; processes seen ended in the same wake of the thread share ``wake``. ``discover``, if
    given, is called by the thread every ``POLL_MS`` and returns (key, pid) pairs to watch from then
    on (``launch``: workers announce their pids in a file). Without pidfds (not Linux), ``available``
    is False and ``exits`` stays empty."""

    def __init__(self, discover: Optional[Callable[[], List[Tuple[Hashable, int]]]] = None) -> None:
        self.available = hasattr(os, "pidfd_open")
        self.exits: List[Tuple[int, int, Hashable]] = []
        self._discover = discover
        self._pending: List[Tuple[Hashable, int]] = []
        self._fds: Dict[int, Hashable] = {}
        self._keys: Dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._wake = 0
        self._thread = threading.Thread(target=self._run, name="fluidcompat-exit-order", daemon=True)

    def start(self) -> "ExitOrder":
        if self.available:
            self._thread.start()
        return self

    def watch(self, key: Hashable, pid: int) -> None:
        with self._lock:
            self._pending.append((key, pid))

    def ended(self, key: Hashable) -> bool:
        with self._lock:
            return any(k == key for _, _, k in self.exits)

    def running(self) -> List[Hashable]:
        """The keys watched whose process has not ended."""
        with self._lock:
            gone = {k for _, _, k in self.exits}
            return [k for k in self._keys if k not in gone]

    def pidfd(self, key: Hashable) -> Optional[int]:
        """The pidfd of a process still running (None once it ended or when not watched)."""
        with self._lock:
            fd = self._keys.get(key)
            return fd if fd in self._fds else None

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(1.0)
        with self._lock:
            for fd in list(self._keys.values()):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._fds.clear()
            self._keys.clear()

    def _add(self, poller, key: Hashable, pid: int) -> None:
        if key in self._keys:
            return
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:  # already reaped: it ended before we looked
            self._wake += 1
            self.exits.append((self._wake, time.monotonic_ns(), key))
            self._keys[key] = -1
            return
        except OSError:
            return
        self._keys[key] = fd
        self._fds[fd] = key
        poller.register(fd, select.POLLIN)

    def _run(self) -> None:
        poller = select.poll()
        while not self._done.is_set():
            found = self._discover() if self._discover is not None else []
            with self._lock:
                for key, pid in self._pending + found:
                    self._add(poller, key, pid)
                self._pending.clear()
            ready = poller.poll(POLL_MS)
            if not ready:
                continue
            now = time.monotonic_ns()
            with self._lock:
                self._wake += 1
                for fd, _ in ready:
                    key = self._fds.pop(fd, None)
                    poller.unregister(fd)
                    if key is not None:
                        self.exits.append((self._wake, now, key))


def stop_groups(pids: List[int], grace_s: float = 5.0, is_done: Optional[Callable[[int], bool]] = None) -> None:
    """SIGTERM each process group (a process started with ``start_new_session``: its group's id is
    its pid, and the processes it started are in it), then SIGKILL those left after ``grace_s``.
    ``is_done(pid)``: whether that process has ended (and been reaped by its Popen)."""
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and not all(_group_gone(pid, is_done) for pid in pids):
        time.sleep(0.02)
    for pid in pids:
        if not _group_gone(pid, is_done):
            _signal_group(pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_gone(pgid: int, is_done: Optional[Callable[[int], bool]]) -> bool:
    if is_done is not None:
        is_done(pgid)  # (reaps the leader, so that it does not stay in the group as a zombie)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return not _live_members(pgid)


def _live_members(pgid: int) -> bool:
    """Whether a process of the group is still running, zombies aside (a zombie whose parent ended
    waits for init to reap it, which can take a second). True where /proc cannot tell."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def die_by(sig: int) -> int:
    """End this process by ``sig`` as an uncaught SIGTERM / SIGINT would (a shell sees 128 + sig);
    returns that status where the signal cannot be sent (another thread)."""
    try:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1.0)
    except (OSError, ValueError):
        pass
    return 128 + sig


def seconds_arg(text: str) -> float:
    """An argparse type: a number of seconds above 0 (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of seconds, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds. Received: {text}")
    return value
