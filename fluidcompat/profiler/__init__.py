"""``fluid.profiler``: the fluid 1.8 profiler report, timelines, timers and CUDA profiler ranges."""
