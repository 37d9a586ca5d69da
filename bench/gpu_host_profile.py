"""Where the host's time goes in fluidcompat's small-program runs on cuda:0: the crop program eager (slice
on the GPU and guarded to the CPU), replayed from a CUDA graph, and profiled (state 'All': CUDA events
time each kernel). Each case is timed against run_all.py's torch, then run under cProfile, which prints
the functions with the most own time, in microseconds per step. On a machine without CUDA the eager
cases run on the CPU (to try the script). gpu_check.sh runs it."""

from __future__ import annotations

import cProfile
import os
import pstats
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run_all  # noqa: E402

import fluidcompat as fluid  # noqa: E402

STEPS = 2000
TOP = 14


def host_profile(name: str, fn, steps: int = STEPS) -> None:
    for _ in range(50):
        fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:TOP]  # by own time
    total = sum(v[2] for v in stats.stats.values())
    print(f"## {name}: {total / steps * 1e6:.1f} us of Python-visible time a step under cProfile")
    for (file, line, func), (_, calls, own, cum, _) in rows:
        where = f"{os.path.basename(file)}:{line}({func})" if line else func
        print(f"   {own / steps * 1e6:7.2f} own {cum / steps * 1e6:7.2f} cum {calls / steps:5.1f}x  {where[:90]}")


def main() -> None:
    cuda = torch.cuda.is_available()
    kw = dict(place=fluid.CUDAPlace(0), device="cuda:0") if cuda else dict(place=fluid.CPUPlace(), device="cpu")
    torch.set_num_threads(1)
    cases = [
        ("crop program", run_all.crop_case(**kw)),
        ("crop program, slice on the CPU", run_all.crop_case(guarded=True, **kw)),
    ]
    if cuda:
        graph = run_all.strategy(use_cuda_graph=True)
        cases.append(("crop program, CUDA graph", (run_all.crop_case(compiled=graph, guarded=True, **kw)[0],
                                                    run_all.crop_torch_graph())))  # fmt: skip
    cases.append(("profiler on, state All", run_all.profiler_case("Default", **kw)))
    for name, (ours, theirs) in cases:
        run_all.compare(name, ours, theirs, cuda=cuda)
    for name, (ours, _) in cases:
        host_profile(name, ours)


if __name__ == "__main__":
    main()
