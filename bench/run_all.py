"""Benchmarks: each case as a fluid program run by fluidcompat and as hand-written eager torch, timed
alternately in one process; prints the median per-step time of both and their ratio.

Run with `make bench`. Speed goals are checked here, never with timed asserts in tests.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidcompat as fluid  # noqa: E402


def median_step(fn, steps: int) -> float:
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compare(name: str, ours, theirs, steps: int = 2000, rounds: int = 5, label=("fluidcompat", "torch")) -> None:
    for _ in range(50):  # warm up both
        ours()
        theirs()
    a, b = [], []
    for _ in range(rounds):  # alternate so that drift hits both
        a.append(median_step(ours, steps // rounds))
        b.append(median_step(theirs, steps // rounds))
    ta, tb = statistics.median(a) * 1e6, statistics.median(b) * 1e6
    print(f"{name:<28} {label[0]} {ta:9.1f} us   {label[1]} {tb:9.1f} us   ratio {ta / tb:6.2f}")


def crop_case():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
        shape = fluid.layers.shape(data2)
        shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
        out = fluid.layers.crop_tensor(data1, shape=shape)
    exe = fluid.Executor(fluid.CPUPlace())
    if startup.global_block().ops:
        exe.run(startup)

    def ours():
        exe.run(main, fetch_list=[out])

    def theirs():
        with torch.no_grad():
            d1 = torch.full([1, 3, 8, 8], 0.5)
            d2 = torch.full([1, 3, 5, 5], 0.5)
            s = torch.tensor(list(d2.shape), dtype=torch.int32)[0:4].tolist()
            d1[: s[0], : s[1], : s[2], : s[3]].numpy().copy()

    return ours, theirs


def profiler_case(tracer: str):
    """The crop program with the profiler on, against the same program with it off."""
    from fluidcompat.profiler.events import RECORDER

    ours, _ = crop_case()

    def on():
        RECORDER.enabled = True
        RECORDER.tracer = tracer
        ours()
        RECORDER.enabled = False
        RECORDER.reset()

    return on, ours


def chain_case(n: int = 200):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4], "float32")
        y = x
        for _ in range(n):
            y = fluid.layers.elementwise_add(y, x)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones(4, "float32")}

    def ours():
        exe.run(main, feed=feed, fetch_list=[y])

    def theirs():
        with torch.no_grad():
            t = torch.from_numpy(feed["x"]).clone()
            acc = t
            for _ in range(n):
                acc = torch.add(acc, t)
            acc.numpy().copy()

    return ours, theirs


def main() -> None:
    torch.set_num_threads(1)
    print(f"# {time.strftime('%Y-%m-%d')} {platform.processor() or platform.machine()} torch {torch.__version__}")
    compare("crop program (5 ops)", *crop_case())
    compare("200-op elementwise chain", *chain_case(), steps=500)
    print("# profiler on / off (crop program), the ratio column is on / off")
    compare("profiler Default", *profiler_case("Default"), label=("on", "off"))
    compare("profiler AllOpDetail", *profiler_case("AllOpDetail"), label=("on", "off"))
    import embedding_memory

    embedding_memory.main()


if __name__ == "__main__":
    main()
