"""``fluid.profiler``: the fluid 1.8 profiler report, profile files, timers and CUDA profiler ranges."""

from fluidcompat.profiler.api import (
    cuda_profiler,
    profiler,
    profiler_range,
    reset_profiler,
    start_profiler,
    stop_profiler,
)
from fluidcompat.profiler.timers import print_all_status, reset_timers, timer

__all__ = [
    "cuda_profiler",
    "print_all_status",
    "profiler",
    "profiler_range",
    "reset_profiler",
    "reset_timers",
    "start_profiler",
    "stop_profiler",
    "timer",
]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.profiler")(name)
