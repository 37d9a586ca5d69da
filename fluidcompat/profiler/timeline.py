"""Turn a profile file (written at ``profile_path``) into a Chrome trace for chrome://tracing or Perfetto.

    python -m fluidcompat.timeline --profile_path /tmp/profile --timeline_path /tmp/timeline

Compat: timestamps are microseconds, as the trace format defines them (fluid 1.8's tool wrote
nanoseconds into the microsecond field).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, List, Optional

from fluidcompat import proto


def _inputs(profile_path: str) -> Dict[str, str]:
    if "," not in profile_path and "=" not in profile_path:
        return {"trainer": profile_path}
    result = {}
    for part in profile_path.split(","):
        key, _, path = part.partition("=")
        result[key] = path
    return result


def chrome_trace(profile_paths: Dict[str, str]) -> dict:
    """The trace of one or more profile files (key -> path)."""
    meta: List[dict] = []
    events: List[dict] = []
    pids: Dict[tuple, int] = {}
    for key, path in profile_paths.items():
        with open(path, "rb") as f:
            _, _, records = proto.parse_profile(f.read())
        for name, start, end, device_id, sub_device_id, _ in records:
            pid_key = (key, device_id)
            if pid_key not in pids:
                pids[pid_key] = len(pids)
                meta.append(
                    {
                        "name": "process_name",
                        "ph": "M",
                        "pid": pids[pid_key],
                        "args": {"name": f"{key}:cpu:block:{device_id}"},
                    }
                )
            events.append(
                {
                    "name": name,
                    "ph": "X",
                    "cat": "Op",
                    "pid": pids[pid_key],
                    "tid": sub_device_id,
                    "ts": start / 1000.0,
                    "dur": (end - start) / 1000.0,
                    "args": {"name": name},
                }
            )
    return {"traceEvents": meta + events}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fluidcompat.timeline", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profile_path",
        type=str,
        default="",
        help="Input profile file name. If there are multiple file, the format should be "
        "trainer1=file1,trainer2=file2,ps=file3",
    )
    parser.add_argument("--timeline_path", type=str, default="", help="Output timeline file name.")
    args = parser.parse_args(argv)
    trace = chrome_trace(_inputs(args.profile_path or "/tmp/profile"))
    with open(args.timeline_path or "/tmp/timeline", "w") as f:
        json.dump(trace, f, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
