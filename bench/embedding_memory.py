"""Peak memory of training the docs' embedding program with SGD, fluidcompat against the same math in
hand-written torch (bench/training.py), each in its own process (peak RSS is per process): a
1,000,000 x 150 float32 table (600 MB), batch 32, ``is_sparse`` True or False, 5 steps. Prints each
one's peak RSS growth over its baseline after imports, and the ratio.

``embedding_memory.py cuda`` (run_all.py calls it where torch sees a GPU): the same two trainings on
cuda:0, peak ``torch.cuda.max_memory_allocated()``; and the docs' 10,000,000 x 150 table (one SGD
step, as in the device_guard tutorial) with the embedding guarded to the CPU and not.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

STEPS = 5


def peak_rss_kb() -> int:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, it does not start from the peak
    of a parent that spawned it)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _train(who: str, sparse: bool, device: str) -> None:
    import numpy as np
    import torch
    import training

    import fluidcompat as fluid

    rng = np.random.RandomState(0)
    batches = [rng.randint(0, training.ROWS, (training.BATCH, 1)).astype("int64") for _ in range(STEPS)]
    if who == "fluidcompat":
        main, startup, loss = training.embedding_program(sparse)
        exe = fluid.Executor(fluid.CPUPlace() if device == "cpu" else fluid.CUDAPlace(0))
        exe.run(startup)
        for ids in batches:
            exe.run(main, feed={"ids": ids}, fetch_list=[loss])
    else:
        table = torch.empty(training.ROWS, training.DIM, device=device).uniform_(-0.05, 0.05).requires_grad_()
        step = training.embedding_torch(table, sparse)
        for ids in batches:
            step(torch.from_numpy(ids).to(device))


def _docs_step(guard: bool) -> None:
    """The device_guard tutorial's embedding program as the user's documents give it (one SGD step on
    CUDAPlace(0)): samples/docs_embedding_guarded.py or samples/docs_embedding.py."""
    import runpy

    from fluidcompat.compat import install

    install()  # the samples import paddle.fluid
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = "docs_embedding_guarded.py" if guard else "docs_embedding.py"
    runpy.run_path(os.path.join(root, "samples", name), run_name="__main__")


def child(what: str, arg: str, device: str) -> None:
    """Prints the peak memory (MB) of one measurement: RSS growth on the CPU, allocated on cuda:0."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import training  # noqa: F401  (imported before the baseline: only the training counts)

    if device == "cpu":
        base = peak_rss_kb()
        _train(what, arg == "sparse", device)
        print(f"{(peak_rss_kb() - base) / 1024:.0f}")
        return
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    if what == "docs":
        _docs_step(arg == "guarded")
    else:
        _train(what, arg == "sparse", device)
    print(f"{torch.cuda.max_memory_allocated() / 2**20:.0f}")


def measure(who: str, arg, device: str = "cpu") -> float:
    if isinstance(arg, bool):
        arg = "sparse" if arg else "dense"
    out = subprocess.run(
        [sys.executable, __file__, "child", who, arg, device],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def main(device: str = "cpu") -> None:
    what = "peak RSS" if device == "cpu" else "GPU peak"
    for sparse in (True, False):
        ours, theirs = measure("fluidcompat", sparse, device), measure("torch", sparse, device)
        name = f"embedding {what}, {'is_sparse' if sparse else 'dense'}"
        print(f"{name:<34} fluidcompat {ours:7.0f} MB   torch {theirs:7.0f} MB   ratio {ours / theirs:6.2f}")
    if device != "cpu":
        guarded, unguarded = measure("docs", "guarded", device), measure("docs", "unguarded", device)
        name = "docs 10Mx150 embedding, one step"
        print(f"{name:<34} GPU peak: guarded to the CPU {guarded:.0f} MB, unguarded {unguarded:.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main("cuda:0" if "cuda" in sys.argv[1:] else "cpu")
