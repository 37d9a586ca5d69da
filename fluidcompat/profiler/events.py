"""Event collection: one list of finished spans per thread, kept for the whole process as fluid did.

The interpreter asks ``RECORDER.enabled`` once per run; with the profiler off nothing here runs.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional

from fluidcompat.profiler.report import INNER_OP, ORDINARY, UNIQUE_OP, Event, ThreadEvents

__all__ = ["RECORDER", "Recorder", "ORDINARY", "INNER_OP", "UNIQUE_OP", "now_ns", "span_start", "span_end"]

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
        # (event list, indices of the timed event and of the events enclosing it, start CUDA event, end
        # CUDA event, device index): GPU times read when profiling stops (NOTE: [Timing GPU ops]); one
        # CUDA event may end a span and start the next
        self.pending_gpu: List[tuple] = []
        self._free_gpu_events: Dict[int, list] = {}  # device index -> CUDA events whose times were read
        self._streams: Dict[int, object] = {}  # device index -> its current stream when last asked
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

    def gpu_timing(self, events: List[Event]) -> tuple:
        """What a profiled run needs to time its GPU ops (NOTE: [Timing GPU ops]): a function giving a
        timing CUDA event for a device index, the current stream of each device (a dict filled on
        first use), the pending list's append and ``events``, the list the run records into."""
        return self._gpu_mark, _Streams(self._streams), self.pending_gpu.append, events

    def _gpu_mark(self, device: int):
        free = self._free_gpu_events.get(device)
        if free:
            return free.pop()
        import torch

        return torch.cuda.Event(enable_timing=True)

    def resolve_gpu_times(self) -> None:
        """Fill in the GPU time of every event timed with CUDA events (waits for the devices)."""
        if not self.pending_gpu:
            return
        for events, indices, start, end, _ in self.pending_gpu:
            end.synchronize()  # (returns at once for the events of earlier runs)
            gpu_ns = int(start.elapsed_time(end) * 1e6)
            for i in indices:  # the timed event and the events enclosing it, as fluid rolled GPU time up
                e = events[i]
                events[i] = Event(e.name, e.role, e.start_ns, e.end_ns, e.gpu_ns + gpu_ns)
        self._recycle_gpu_events()

    def _recycle_gpu_events(self) -> None:
        used = {}  # (an event shared by two spans goes back once)
        for _, _, start, end, device in self.pending_gpu:
            used[id(start)] = (device, start)
            used[id(end)] = (device, end)
        for device, event in used.values():
            self._free_gpu_events.setdefault(device, []).append(event)
        self.pending_gpu.clear()

    def reset(self) -> None:
        for t in self.lists:
            t.events.clear()
        self._recycle_gpu_events()

    def stop(self) -> None:
        self.reset()
        self.enabled = False


def span_start(gpu: tuple, device: int, chain: Optional[tuple] = None):
    """The CUDA event a GPU span on ``device`` starts at (``gpu``: Recorder.gpu_timing's tuple):
    ``chain``'s event when ``chain`` (the event that ended the span before, its device) ended on
    ``device`` with nothing but bookkeeping since, else one recorded now (NOTE: [Timing GPU ops])."""
    if chain is not None and chain[1] == device:
        return chain[0]
    return span_end(gpu, device)


def span_end(gpu: tuple, device: int):
    """A CUDA event recorded now on ``device``'s current stream: the end of a span (and perhaps the
    start of the next)."""
    event = gpu[0](device)
    event.record(gpu[1][device])
    return event


class _Streams(dict):
    """Device index -> its current CUDA stream, looked up on first use in a run (places.current_stream)."""

    def __init__(self, known: Dict[int, object]) -> None:
        super().__init__()
        self.known = known

    def __missing__(self, device: int):
        from fluidcompat.places import current_stream

        s = self[device] = current_stream(device, self.known)
        return s


# NOTE: [Timing GPU ops]
# With the profiler's state 'GPU' or 'All', an op whose kernel runs on a GPU gets the kernel's GPU time
# (the report's GPU columns) from two timing CUDA events recorded on the device's current stream around
# the kernel call; so do the copies planned between host and GPU and a fetch's copy to the host. The
# times are read when the profiler stops, and each is added to the timed event (the op's compute
# phase, the copy's event) and to the events enclosing it (the op's phase, its AllOpDetail instance,
# the op, a control op running it in its sub-block; the fetch), as fluid's report shows an op's GPU
# time on the op's own row (fluid 1.8.5 on a GPU, the docs' crop program: `Fetch`'s GPU time equals
# that of its `GpuMemcpyAsync:GPU->CPU`, `slice`'s includes its copy's).
# What the CUDA events cost the host decides the profiler's overhead on a small program (the goal: at
# most 1.5 times the step time on cuda:0). On an H200 machine (bench/gpu_launches.py): making an event
# 0.8-1.5 us, recording it 7-9 us when torch looks up the current stream (Event.record()) and 2.5-2.7
# us given the stream. So the events come from a pool per device (an event goes back once its times
# are read, or dropped by reset_profiler), the stream is looked up once a run per device (_Streams),
# and spans that follow one another on a device share their boundary: the event that ends one span
# starts the next when nothing but the profiler's own bookkeeping runs between them (a GPU op or copy
# after another, a fetch after the last op), so a run of n timed spans records n + 1 events, not 2n
# (the crop program: 8 instead of 14, and the fetch 1 instead of 2). A span that follows host work
# (an op on the CPU, a copy the GPU takes no part in, a control op) starts with an event of its own.
# A span's time is the GPU's from the end of the one before to the end of its own work: on a GPU
# with work queued, the kernel's time; on an idle one it also counts the host's time to launch it,
# as a pair around the call did.


RECORDER = Recorder()
