"""The C heap (glibc's malloc) kept from handing a training step's freed memory back to the system.

glibc serves a large allocation (at first one of 128 KiB or more) with a mapping of its own and
unmaps it when it is freed; each such free raises that threshold (up to 32 MiB), and the top of the
heap is handed back past 128 KiB (twice the threshold once it moved). Which of a step's tensors are
mapped, faulted in page by page and unmapped again every step thus depends on the order of the
process's first frees: the same program, fed the same batches, ran at 2.7 ms a step in some
processes and at 3.2-3.9 ms in others (`bench/models.py`'s tagspace on the project's machine; with
the thresholds fixed, 2.6-2.8 ms in every process). fluid 1.8's allocator kept what it freed for the
next allocation. ``keep_freed_memory`` sets both thresholds from the start to where glibc's own
adjustment ends (32 MiB mapped, 64 MiB handed back), so a step's temporaries are reused from the
heap in every process. It changes nothing where the user set ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_``, where ``FLUIDCOMPAT_MALLOC=system``, or under a C library other than
glibc.
"""

from __future__ import annotations

import os

__all__ = ["keep_freed_memory", "ENV_MALLOC"]

ENV_MALLOC = "FLUIDCOMPAT_MALLOC"  # "system": glibc's thresholds as the process started with them
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
_MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems
_TRIM_THRESHOLD = 2 * _MMAP_THRESHOLD  # what glibc sets when it raises the mapping threshold
_done = False


def keep_freed_memory() -> bool:
    """Fix glibc's mapping and trimming thresholds (once per process); whether they were set."""
    global _done
    if _done:
        return False
    _done = True
    if os.environ.get(ENV_MALLOC, "").lower() == "system":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:  # (platform.libc_ver would read the interpreter's binary: over a millisecond at every import)
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (ValueError, OSError, AttributeError):  # not glibc (the name unknown to this C library)
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
