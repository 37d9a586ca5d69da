"""What one training step asks of the GPU, fluidcompat against the hand-written torch of run_all.py
and training.py: CUDA kernel launches, copies and synchronizations per step (torch.profiler), and for
the LeNet CNN the torch operations that make most of them; then what the machine charges for the
pieces (a launch, a small fetch two ways, a pair of timing events). Needs CUDA; gpu_check.sh runs it."""

from __future__ import annotations

import collections
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run_all  # noqa: E402
import training  # noqa: E402

import fluidcompat as fluid  # noqa: E402

STEPS = 10
LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch"}
COPY = {"cudaMemcpyAsync", "cudaMemcpy"}
SYNC = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}


def profiled(fn):
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            fn()
        torch.cuda.synchronize()
    return prof


def per_step(prof, names) -> float:
    return sum(1 for e in prof.events() if e.name in names) / STEPS


def main() -> None:
    if not torch.cuda.is_available():
        print("gpu_launches: needs a CUDA device (torch finds none here)")
        return
    kw = dict(place=fluid.CUDAPlace(0), device="cuda:0")
    cases = [
        ("crop program", run_all.crop_case(**kw)),
        ("crop program, slice on the CPU", run_all.crop_case(guarded=True, **kw)),
        ("MLP 784-128-10 SGD", training.mlp_case(**kw)),
        ("LeNet CNN Adam", training.cnn_case(**kw)),
    ]
    print("# per step, fluidcompat / torch: kernel launches, copies, synchronizations")
    profs = {}
    for name, (ours, theirs) in cases:
        a, b = profiled(ours), profiled(theirs)
        profs[name] = (a, b)
        print(
            f"{name:<34} launches {per_step(a, LAUNCH):6.1f} / {per_step(b, LAUNCH):6.1f}"
            f"   copies {per_step(a, COPY):4.1f} / {per_step(b, COPY):4.1f}"
            f"   syncs {per_step(a, SYNC):4.1f} / {per_step(b, SYNC):4.1f}"
        )
    for who, prof in zip(("fluidcompat", "torch"), profs["LeNet CNN Adam"]):
        counts = collections.Counter(e.name for e in prof.events() if e.name.startswith("aten::"))
        top = ", ".join(f"{n[6:]} {c / STEPS:g}" for n, c in counts.most_common(18))
        print(f"# LeNet CNN Adam, {who}: aten ops per step: {top}")


def median_us(fn, n: int = 2000) -> float:
    for _ in range(50):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def costs() -> None:
    from fluidcompat.executor.executor import _to_device, _to_numpy

    x = torch.ones(1, device="cuda")
    small = torch.ones(1, 3, 5, 5, device="cuda")

    def events():
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        b.record()

    print("# what the machine charges, median of 2000")
    print(f"{'one kernel launch (x.add_(1))':<44} {median_us(lambda: x.add_(1)):7.1f} us")
    print(f"{'fetch 75 floats: .cpu().numpy()':<44} {median_us(lambda: small.cpu().numpy().copy()):7.1f} us")
    print(f"{'fetch 75 floats: pinned staging (_to_numpy)':<44} {median_us(lambda: _to_numpy(small)):7.1f} us")
    print(f"{'two timing CUDA events, made and recorded':<44} {median_us(events):7.1f} us")
    print(f"{'torch.cuda.synchronize() with nothing to wait':<44} {median_us(torch.cuda.synchronize):7.1f} us")
    stream = torch.cuda.current_stream()
    made = torch.cuda.Event(enable_timing=True)
    made.record()
    shape = torch.tensor([1, 3, 5, 5], dtype=torch.int32, device="cuda")
    host4, cuda0 = shape.cpu(), torch.device("cuda:0")
    big = torch.ones(64, 784)  # the MLP's feed
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x.add_(1)
    prices = [
        ("torch.cuda.current_stream()", torch.cuda.current_stream),
        ("a timing event made (not recorded)", lambda: torch.cuda.Event(enable_timing=True)),
        ("an existing event recorded again", made.record),
        ("... given the stream", lambda: made.record(stream)),
        ("... as torch._C._CudaEventBase.record", lambda: torch._C._CudaEventBase.record(made, stream)),
        ("4 ints to the GPU (torch.tensor(device=))", lambda: torch.tensor([1, 3, 5, 5], device="cuda")),
        ("4 ints from the GPU (.tolist())", shape.tolist),
        ("replay of a one-kernel CUDA graph", graph.replay),
        ("4 ints to the GPU, pageable (.to(device))", lambda: host4.to("cuda:0")),
        ("... pageable, non_blocking", lambda: host4.to(cuda0, non_blocking=True)),
        ("200 KB to the GPU, pageable (.to(device))", lambda: big.to(cuda0)),
        ("... pageable, non_blocking", lambda: big.to(cuda0, non_blocking=True)),
        ("... through page-locked staging (_to_device)", lambda: _to_device(big, cuda0)),
        ("4 ints from the GPU (.to('cpu'))", lambda: shape.to("cpu")),
        ("wait for a known stream (nothing to wait)", stream.synchronize),
        ("time.perf_counter_ns()", time.perf_counter_ns),
    ]
    for name, fn in prices:
        print(f"{name:<44} {median_us(fn):7.1f} us")


if __name__ == "__main__":
    main()
    if torch.cuda.is_available():
        costs()
