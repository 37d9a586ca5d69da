"""fluidcompat.heap: glibc's mapping threshold fixed on import, so a step's freed tensors are reused
from the heap instead of unmapped and faulted in again each step (NOTE in fluidcompat/heap.py)."""

import ctypes
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc's mallopt and mallinfo2 (2.33+)",
)

# after `import fluidcompat`: how many blocks of their own mapping two allocations got (1 MiB, 64 MiB)
PROBE = """
import ctypes, fluidcompat
libc = ctypes.CDLL(None)
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
for size in (1 << 20, 64 << 20):
    before = libc.mallinfo2().hblks
    p = libc.malloc(size)
    print(libc.mallinfo2().hblks - before, end=" ")
    libc.free(p)
"""


def mapped(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "FLUIDCOMPAT_MALLOC"}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=dict(base, **env))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_mebibyte_comes_from_the_heap_after_import():
    assert mapped() == "0 1"  # 1 MiB from the heap; 64 MiB (over 32 MiB) still mapped


def test_the_system_thresholds_on_request_or_when_the_user_set_them():
    assert mapped(FLUIDCOMPAT_MALLOC="system") == "1 1"  # glibc's 128 KiB threshold as it starts
    assert mapped(MALLOC_MMAP_THRESHOLD_="131072") == "1 1"  # the user's own setting stands
