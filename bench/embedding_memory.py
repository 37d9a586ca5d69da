"""Peak memory of training the docs' embedding program with SGD, fluidcompat against the same math in
hand-written torch (bench/training.py), each in its own process (peak RSS is per process): a
1,000,000 x 150 float32 table (600 MB), batch 32, ``is_sparse`` True or False, 5 steps. Prints each
one's peak RSS growth over its baseline after imports, and the ratio.
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


def child(who: str, sparse: bool) -> None:
    import numpy as np
    import torch

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import training

    import fluidcompat as fluid

    rng = np.random.RandomState(0)
    batches = [rng.randint(0, training.ROWS, (training.BATCH, 1)).astype("int64") for _ in range(STEPS)]
    base = peak_rss_kb()
    if who == "fluidcompat":
        main, startup, loss = training.embedding_program(sparse)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        for ids in batches:
            exe.run(main, feed={"ids": ids}, fetch_list=[loss])
    else:
        table = torch.empty(training.ROWS, training.DIM).uniform_(-0.05, 0.05).requires_grad_()
        step = training.embedding_torch(table, sparse)
        for ids in batches:
            step(torch.from_numpy(ids))
    peak = peak_rss_kb()
    print(f"{(peak - base) / 1024:.0f}")


def measure(who: str, sparse: bool) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "child", who, "sparse" if sparse else "dense"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    for sparse in (True, False):
        ours, theirs = measure("fluidcompat", sparse), measure("torch", sparse)
        name = f"embedding peak RSS, {'is_sparse' if sparse else 'dense'}"
        print(f"{name:<34} fluidcompat {ours:7.0f} MB   torch {theirs:7.0f} MB   ratio {ours / theirs:6.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3] == "sparse")
    else:
        main()
