"""Event collection: one list of finished spans per thread, kept for the whole process as fluid did.

The interpreter asks ``RECORDER.enabled`` once per run; with the profiler off nothing here runs.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional

from fluidcompat.profiler.report import INNER_OP, ORDINARY, UNIQUE_OP, Event, ThreadEvents

__all__ = ["RECORDER", "Recorder", "ORDINARY", "INNER_OP", "UNIQUE_OP", "now_ns"]

now_ns = time.perf_counter_ns
_WORKER = "parallel executor worker"  # the key of the worker list (thread lists are keyed by thread id)


class Recorder:
    """The process-wide profiler state: on/off, the state and tracer option, and the event lists."""

    def __init__(self) -> None:
        self.enabled = False
        self.state = "CPU"
        self.tracer = "Default"
        self.lists: List[ThreadEvents] = []  # newest thread first, as fluid lists them
        self._by_thread: Dict[int, ThreadEvents] = {}
        self._lock = threading.Lock()
        self.wall_offset_ns = 0
        self.session_start_ns = 0
        # (event list, index, start CUDA event, end CUDA event): GPU times read when profiling stops
        self.pending_gpu: List[tuple] = []
        # threads whose events go to the worker list for now (see to_worker)
        self._on_worker: Dict[int, ThreadEvents] = {}

    def thread_events(self) -> ThreadEvents:
        ident = threading.get_ident()
        t = self._on_worker.get(ident) if self._on_worker else None
        if t is not None:
            return t
        return self._list_for(ident)

    def _list_for(self, key) -> ThreadEvents:
        t = self._by_thread.get(key)
        if t is None:
            with self._lock:
                t = ThreadEvents(len(self._by_thread))
                self._by_thread[key] = t
                self.lists.insert(0, t)
        return t

    def to_worker(self, on: bool, place: int = 0) -> Optional[List[Event]]:
        """From ``to_worker(True)`` to ``to_worker(False)``, record what this thread does in the worker
        list, as fluid's parallel executor recorded a CompiledProgram's ops, eager deletions and
        fetches on its worker threads (the calling thread keeps the executor's own events). The list,
        once made, stays for the process, as fluid's thread lists did: later sessions print the merged
        and the per-thread reports. ``place``: a data-parallel run's place, each with its worker list.
        Returns the worker's event list when switching to it."""
        ident = threading.get_ident()
        if not on:
            self._on_worker.pop(ident, None)
            return None
        self.thread_events()  # the calling thread's list comes first, as fluid's main thread's did
        worker = self._on_worker[ident] = self._list_for(_WORKER if place == 0 else (_WORKER, place))
        return worker.events

    def start(self, state: str, tracer: str) -> None:
        self.state, self.tracer = state, tracer
        self.wall_offset_ns = time.time_ns() - now_ns()
        self.session_start_ns = now_ns()
        self.thread_events()  # the starting thread's table is there even if it runs nothing (dygraph)
        self.enabled = True

    @property
    def wants_gpu_time(self) -> bool:
        return self.state in ("GPU", "All")

    def resolve_gpu_times(self) -> None:
        """Fill in the GPU time of every event timed with CUDA events (waits for the device)."""
        if not self.pending_gpu:
            return
        import torch

        torch.cuda.synchronize()
        for events, index, start, end in self.pending_gpu:
            e = events[index]
            gpu_ns = int(start.elapsed_time(end) * 1e6)
            events[index] = Event(e.name, e.role, e.start_ns, e.end_ns, gpu_ns)
        self.pending_gpu.clear()

    def reset(self) -> None:
        for t in self.lists:
            t.events.clear()
        self.pending_gpu.clear()

    def stop(self) -> None:
        self.reset()
        self.enabled = False


RECORDER = Recorder()
