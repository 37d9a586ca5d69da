"""``paddle.fluid.proto.profiler.profiler_pb2``: fluid 1.8's ``profiler.proto`` messages (``Profile``,
``Event``, ``MemEvent``, ``MemCopy``; package ``paddle.platform.proto``), the file
``stop_profiler(profile_path=...)`` writes and fluid's ``tools/timeline.py`` reads.

Built when first imported, as :mod:`fluidcompat.proto.framework_pb2` is.
"""

from __future__ import annotations

from fluidcompat.proto._build import build_module, enum, message

_TABLE = [
    message("MemCopy", [("bytes", 1, "optional", "uint64")]),
    message(
        "Event",
        [
            ("type", 8, "optional", "EventType"),
            ("name", 1, "optional", "string"),
            ("start_ns", 2, "optional", "uint64"),
            ("end_ns", 3, "optional", "uint64"),
            ("device_id", 5, "optional", "int64"),
            ("sub_device_id", 6, "optional", "int64"),
            ("memcopy", 7, "optional", "MemCopy"),
            ("detail_info", 9, "optional", "string"),
        ],
        enums=[enum("EventType", [("CPU", 0), ("GPUKernel", 1)])],
    ),
    message(
        "MemEvent",
        [
            ("start_ns", 1, "optional", "uint64"),
            ("end_ns", 2, "optional", "uint64"),
            ("bytes", 3, "optional", "uint64"),
            ("place", 4, "optional", "Place"),
            ("thread_id", 5, "optional", "uint64"),
            ("device_id", 6, "optional", "uint32"),
            ("alloc_in", 7, "optional", "string"),
            ("free_in", 8, "optional", "string"),
        ],
        enums=[enum("Place", [("CUDAPlace", 0), ("CPUPlace", 1), ("CUDAPinnedPlace", 2)])],
    ),
    message(
        "Profile",
        [
            ("events", 1, "repeated", "Event"),
            ("start_ns", 2, "optional", "uint64"),
            ("end_ns", 3, "optional", "uint64"),
            ("mem_events", 4, "repeated", "MemEvent"),
        ],
    ),
]

__all__ = build_module(globals(), "profiler.proto", "paddle.platform.proto", _TABLE)
