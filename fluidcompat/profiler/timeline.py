"""Turn a profile file into a trace to open in Perfetto (https://ui.perfetto.dev) or chrome://tracing.

    python -m fluidcompat.timeline --input /tmp/profile --output timeline.json

The profile is the file ``profiler.stop_profiler(profile_path=...)`` or ``fluid.profiler.profiler(...,
profile_path=...)`` wrote (by fluidcompat or by fluid 1.8). fluid's tool took ``--profile_path`` and
``--timeline_path``, and they still work; as in fluid, without arguments it reads ``/tmp/profile`` and
writes ``/tmp/timeline``. Several profiles go into one trace as ``--input trainer0=p0,trainer1=p1``.

Each profile becomes named tracks: ``trainer: CPU ops`` (fluid named it ``trainer:cpu:block:2``),
``trainer: CPU op phases`` (prepare_data / infer_shape / compute), ``trainer: CPU copies`` (the
copies inside an op's phases), ``trainer: GPU 0 kernels``; the rows inside a track are threads.

Compat: timestamps are microseconds, as the trace format defines them (fluid 1.8's tool wrote
nanoseconds into the microsecond field).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

from fluidcompat import proto

PROG = "python -m fluidcompat.timeline"
DEFAULT_PROFILE = "/tmp/profile"
DEFAULT_TIMELINE = "/tmp/timeline"

# a CPU event's device_id is how deep it nests (fluid's "block"): 2 an op (or an executor step),
# 3 a phase of the op, 4 a copy made inside a phase
_CPU_LEVELS = {1: "runs", 2: "ops", 3: "op phases", 4: "copies"}
_GPU_KERNEL = 1  # the profile's event type of a GPU kernel (0: a CPU event)


def _inputs(profile_path: str) -> Dict[str, str]:
    if "," not in profile_path and "=" not in profile_path:
        return {"trainer": profile_path}
    result = {}
    for part in profile_path.split(","):
        key, _, path = part.partition("=")
        result[key] = path
    return result


class TimelineError(ValueError):
    """A profile that cannot be read or a trace that cannot be written (the message says which)."""


def track_name(key: str, device_id: int, event_type: int) -> str:
    """A readable name for the events of one profile on one device (or at one CPU nesting level)."""
    if event_type == _GPU_KERNEL:
        return f"{key}: GPU {device_id} kernels"
    return f"{key}: CPU {_CPU_LEVELS.get(device_id, f'level {device_id}')}"


def chrome_trace(profile_paths: Dict[str, str]) -> dict:
    """The trace of one or more profile files (key -> path); TimelineError names a file that is not a
    profile."""
    meta: List[dict] = []
    events: List[dict] = []
    pids: Dict[Tuple[str, int, int], int] = {}
    threads = set()
    for key, path in profile_paths.items():
        with open(path, "rb") as f:
            data = f.read()
        try:
            _, _, records = proto.parse_profile(data)
        except proto.FormatError as e:
            raise TimelineError(f"{path} is not a profile file written by fluid's profiler ({e})") from None
        for name, start, end, device_id, sub_device_id, event_type in records:
            kind = _GPU_KERNEL if event_type == _GPU_KERNEL else 0
            pid_key = (key, kind, device_id)
            if pid_key not in pids:
                pids[pid_key] = len(pids)
                pid = pids[pid_key]
                meta.append(
                    {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": track_name(key, device_id, kind)}}
                )
                meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
            pid = pids[pid_key]
            if (pid, sub_device_id) not in threads:
                threads.add((pid, sub_device_id))
                meta.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": pid,
                        "tid": sub_device_id,
                        "args": {"name": f"thread {sub_device_id}"},
                    }
                )
            events.append(
                {
                    "name": name,
                    "ph": "X",
                    "cat": "Op",
                    "pid": pid,
                    "tid": sub_device_id,
                    "ts": start / 1000.0,
                    "dur": (end - start) / 1000.0,
                    "args": {"name": name},
                }
            )
    return {"traceEvents": meta + events}


def convert(profile_path: str, timeline_path: str) -> Tuple[int, int]:
    """Write the trace of ``profile_path`` (one path, or ``key=path,...``) to ``timeline_path``:
    (events, tracks). Raises TimelineError naming the file for a missing or unreadable profile and
    an output that cannot be written; nothing is written then."""
    inputs = _inputs(profile_path)
    for key, path in inputs.items():
        if not path:
            raise TimelineError(f"--input {profile_path!r}: no file named for {key!r} (the form is key=path,key=path)")
        if not os.path.isfile(path):
            raise TimelineError(
                f"no profile file at {path}: write one with profiler.stop_profiler(profile_path={path!r}) or "
                f"fluid.profiler.profiler(..., profile_path={path!r}), or name another with --input"
            )
    try:
        trace = chrome_trace(inputs)
    except OSError as e:
        raise TimelineError(f"cannot read {e.filename}: {e.strerror}") from None
    directory = os.path.dirname(os.path.abspath(timeline_path))
    if not os.path.isdir(directory):
        raise TimelineError(f"cannot write {timeline_path}: the directory {directory} does not exist")
    try:
        with open(timeline_path, "w") as f:
            json.dump(trace, f, separators=(",", ":"))
    except OSError as e:
        raise TimelineError(f"cannot write {timeline_path}: {e.strerror}") from None
    spans = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    tracks = sum(1 for e in trace["traceEvents"] if e["name"] == "process_name")
    return spans, tracks


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument(
        "-i",
        "--input",
        "--profile_path",
        dest="profile_path",
        default="",
        metavar="PROFILE",
        help=f"the profile file (default {DEFAULT_PROFILE}); several: trainer1=file1,trainer2=file2,ps=file3",
    )
    parser.add_argument(
        "-o",
        "--output",
        "--timeline_path",
        dest="timeline_path",
        default="",
        metavar="TRACE",
        help=f"the trace file to write (default {DEFAULT_TIMELINE})",
    )
    args = parser.parse_args(argv)
    profile_path = args.profile_path or DEFAULT_PROFILE
    timeline_path = args.timeline_path or DEFAULT_TIMELINE
    try:
        spans, tracks = convert(profile_path, timeline_path)
    except TimelineError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return 1
    print(
        f"wrote {timeline_path}: {spans} events on {tracks} tracks from {profile_path}. Open it in Perfetto "
        "(https://ui.perfetto.dev, 'Open trace file') or in Chrome at chrome://tracing ('Load')."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
