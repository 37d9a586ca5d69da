"""Benchmarks: each case as a fluid program run by fluidcompat and as hand-written eager torch, timed
alternately in one process; prints the median per-step time of both and their ratio.

Run with `make bench` (CPU; on a machine with CUDA the same table follows on cuda:0, with the CUDA
graph lines). Speed goals are checked here, never with timed asserts in tests.
usage: run_all.py [--quick] [--no-compile] [--cuda-only]

--cuda-only: only the cuda:0 table and GPU peak memory (bench/gpu_check.sh runs it on a lent GPU).
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

QUICK = "--quick" in sys.argv


def median_step(fn, steps: int, sync) -> float:
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _no_sync() -> None:
    pass


def compare(name: str, ours, theirs, steps: int = 2000, rounds: int = 5, label=("fluidcompat", "torch"), cuda=False):
    sync = torch.cuda.synchronize if cuda else _no_sync
    if QUICK:
        steps = max(steps // 10, rounds)
    for _ in range(min(50, max(steps // 10, 2))):  # warm up both
        ours()
        theirs()
    a, b = [], []
    for _ in range(rounds):  # alternate so that drift hits both
        a.append(median_step(ours, max(steps // rounds, 1), sync))
        b.append(median_step(theirs, max(steps // rounds, 1), sync))
    ta, tb = statistics.median(a) * 1e6, statistics.median(b) * 1e6
    print(f"{name:<34} {label[0]} {ta:10.1f} us   {label[1]} {tb:10.1f} us   ratio {ta / tb:6.2f}", flush=True)
    return ta, tb


def crop_program(guarded: bool = False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
        shape = fluid.layers.shape(data2)
        with fluid.device_guard("cpu" if guarded else None):
            shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
        out = fluid.layers.crop_tensor(data1, shape=shape)
    return main, out


def crop_case(place=None, device="cpu", compiled=None, guarded=False, same_copies=False):
    """The crop program run by fluidcompat, and the hand-written torch computing the crop shape on the
    host; ``same_copies``: the torch places the shape as the program without a guard does (made on the
    host, copied to the GPU for slice, read back for the crop)."""
    main, out = crop_program(guarded)
    exe = fluid.Executor(place or fluid.CPUPlace())
    prog = compiled(main) if compiled else main

    def ours():
        exe.run(prog, fetch_list=[out])

    def theirs():
        with torch.no_grad():
            d1 = torch.full([1, 3, 8, 8], 0.5, device=device)
            d2 = torch.full([1, 3, 5, 5], 0.5, device=device)
            s = torch.tensor(list(d2.shape), dtype=torch.int32)
            if same_copies:
                s = s.to(device)[0:4].to("cpu").tolist()
            else:
                s = s[0:4].tolist()
            d1[: s[0], : s[1], : s[2], : s[3]].cpu().numpy().copy()

    return ours, theirs


def _torch_graph(body):
    """``body`` (torch ops on cuda:0, returning a tensor) captured into a CUDA graph after a warm-up
    on a side stream; returns the graph and its output buffer."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = body()
    return graph, out


def crop_torch_graph():
    """The crop program's torch written for a CUDA graph by hand (the crop shape fixed when it is
    captured, as in fluidcompat's graph), replayed and fetched each step: what a graph can reach."""
    shape = torch.tensor([1, 3, 5, 5], dtype=torch.int32)[0:4].tolist()

    def body():
        d1 = torch.full([1, 3, 8, 8], 0.5, device="cuda")
        torch.full([1, 3, 5, 5], 0.5, device="cuda")
        return d1[: shape[0], : shape[1], : shape[2], : shape[3]].contiguous()

    graph, out = _torch_graph(body)

    def step():
        graph.replay()
        out.cpu().numpy().copy()

    return step


def chain_torch_graph(n: int = 200):
    """The 200-op chain's torch captured into a CUDA graph by hand: the feed copied into its input
    buffer, a replay and the fetch each step."""
    x = np.ones(4, "float32")
    static = torch.from_numpy(x).cuda()

    def body():
        acc = static
        for _ in range(n):
            acc = torch.add(acc, static)
        return acc

    graph, out = _torch_graph(body)

    def step():
        static.copy_(torch.from_numpy(x))
        graph.replay()
        out.cpu().numpy().copy()

    return step


def profiler_case(tracer: str, compiled=None, **kw):
    """The crop program with the profiler on, against the same program with it off."""
    from fluidcompat.profiler.events import RECORDER

    ours, _ = crop_case(compiled=compiled, **kw)

    def on():
        RECORDER.enabled = True
        RECORDER.state = "All"  # as the docs profile: profiler.profiler('All', 'total')
        RECORDER.tracer = tracer
        ours()
        RECORDER.enabled = False
        RECORDER.reset()

    return on, ours


def chain_case(n: int = 200, place=None, device="cpu", compiled=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4], "float32")
        y = x
        for _ in range(n):
            y = fluid.layers.elementwise_add(y, x)
    exe = fluid.Executor(place or fluid.CPUPlace())
    feed = {"x": np.ones(4, "float32")}
    prog = compiled(main) if compiled else main

    def ours():
        exe.run(prog, feed=feed, fetch_list=[y])

    def theirs():
        with torch.no_grad():
            t = torch.from_numpy(feed["x"]).to(device)
            acc = t
            for _ in range(n):
                acc = torch.add(acc, t)
            acc.cpu().numpy().copy()

    return ours, theirs


def strategy(**options):
    def compiled(main):
        bs = fluid.BuildStrategy()
        for k, v in options.items():
            setattr(bs, k, v)
        return fluid.CompiledProgram(main, build_strategy=bs)

    return compiled


def table(place, device: str, compile_cases: bool) -> None:
    import training

    cuda = device != "cpu"
    kw = dict(place=place, device=device)
    compare("crop program (5 ops)", *crop_case(**kw), cuda=cuda)
    if cuda:  # the torch computes the crop shape on the host: as the program with slice guarded does
        compare("crop program, slice on the CPU", *crop_case(guarded=True, **kw), cuda=True)
        # ... and the program's own two synchronous copies, made by the torch too
        compare("crop program, torch copies as it", *crop_case(same_copies=True, **kw), cuda=True)
    ta, tb = compare("200-op elementwise chain", *chain_case(**kw), steps=500, cuda=cuda)
    print(f"{'':<34} overhead over torch: {(ta - tb) / 200:.2f} us per op")
    compare("MLP 784-128-10 SGD, batch 64", *training.mlp_case(**kw), steps=300, cuda=cuda)
    compare("LeNet CNN Adam, batch 32", *training.cnn_case(**kw), steps=60 if not cuda else 300, cuda=cuda)
    compare("embedding 1Mx150 SGD is_sparse", *training.embedding_case(True, **kw), steps=300, cuda=cuda)
    compare("embedding 1Mx150 SGD dense", *training.embedding_case(False, **kw), steps=15, rounds=3, cuda=cuda)
    if compile_cases:
        print("# BuildStrategy.use_torch_compile = True (inductor); the first run compiles:")
        for name, make, steps in (
            ("MLP, torch.compile", training.mlp_case, 300),
            ("LeNet CNN, torch.compile", training.cnn_case, 60),
        ):
            t0 = time.perf_counter()
            ours, theirs = make(compiled=strategy(use_torch_compile=True), **kw)
            ours()
            print(f"{'':<34} (compiling took {time.perf_counter() - t0:.0f} s)")
            compare(name, ours, theirs, steps=steps, cuda=cuda)
    if cuda:
        print("# BuildStrategy.use_cuda_graph = True, against eager torch:")
        graph = strategy(use_cuda_graph=True)
        crop_graph = crop_case(compiled=graph, guarded=True, **kw)[0]
        chain_graph = chain_case(compiled=graph, **kw)[0]
        compare("crop program, slice on the CPU", crop_graph, crop_case(**kw)[1], cuda=True)
        compare("200-op chain, CUDA graph", chain_graph, chain_case(**kw)[1], steps=500, cuda=True)
        compare("MLP, CUDA graph", *training.mlp_case(compiled=graph, **kw), steps=300, cuda=True)
        print("# profiler on / off (crop program on cuda:0: CUDA events time each kernel), the ratio is on / off")
        compare("profiler Default, cuda:0", *profiler_case("Default", **kw), label=("on", "off"), cuda=True)
        print("# ... against torch's own CUDA graph of the same ops (written for it by hand):")
        try:
            compare("crop program, both graphs", crop_graph, crop_torch_graph(), cuda=True)
            compare("200-op chain, both graphs", chain_graph, chain_torch_graph(), steps=500, cuda=True)
        except RuntimeError as e:  # a torch whose capture refuses these ops: the rest of the table still runs
            print(f"{'':<34} (torch's graph failed: {e})")


def main() -> None:
    torch.set_num_threads(1)
    compile_cases = "--no-compile" not in sys.argv
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()} torch {torch.__version__}, one torch thread")
    if "--cuda-only" in sys.argv:
        return cuda_table(compile_cases)
    table(fluid.CPUPlace(), "cpu", compile_cases)
    print("# profiler on / off (crop program), the ratio column is on / off")
    compare("profiler Default", *profiler_case("Default"), label=("on", "off"))
    compare("profiler AllOpDetail", *profiler_case("AllOpDetail"), label=("on", "off"))
    # the docs' way: a CompiledProgram, recorded as fluid's parallel executor recorded it
    compare("profiler Default, CompiledProgram", *profiler_case("Default", fluid.CompiledProgram), label=("on", "off"))
    import dygraph

    dygraph.main(compare)
    import embedding_memory

    embedding_memory.main()
    import recompute_memory

    recompute_memory.main()
    cuda_table(compile_cases)


def cuda_table(compile_cases: bool) -> None:
    if not torch.cuda.is_available():
        print("# no CUDA device: no cuda:0 table")
        return
    print(f"# cuda:0 ({torch.cuda.get_device_name(0)})")
    table(fluid.CUDAPlace(0), "cuda:0", compile_cases)
    import embedding_memory

    embedding_memory.main("cuda:0")


if __name__ == "__main__":
    main()
