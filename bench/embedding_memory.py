"""Peak memory of training the docs' embedding program with SGD, against the size of its table.

Each case runs in its own process (peak RSS is per process): a 1,000,000 x 150 float32 table
(600 MB), batch 32, ``is_sparse`` True or False. Prints peak RSS growth over the process's
baseline after imports, as a multiple of the table's size.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

ROWS, DIM, BATCH, STEPS = 1_000_000, 150, 32, 5


def child(sparse: bool) -> None:
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import fluidcompat as fluid

    ids = fluid.data("ids", [BATCH, 1], "int64")
    label = fluid.layers.fill_constant(shape=[BATCH, 1, DIM], value=0.5, dtype="float32")
    emb = fluid.embedding(input=ids, size=(ROWS, DIM), is_sparse=sparse)
    out = fluid.layers.l2_normalize(x=emb, axis=-1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=out, label=label))
    fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    exe.run(fluid.default_startup_program())
    rng = np.random.RandomState(0)
    for _ in range(STEPS):
        exe.run(feed={"ids": rng.randint(0, ROWS, (BATCH, 1)).astype("int64")}, fetch_list=[loss])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    table = ROWS * DIM * 4 / 1024
    print(f"{(peak - base) / table:.3f} {(peak - base) / 1024:.0f}")


def measure(sparse: bool):
    out = subprocess.run(
        [sys.executable, __file__, "child", "sparse" if sparse else "dense"], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    for sparse in (True, False):
        ratio, mb = measure(sparse)
        name = f"embedding {ROWS}x{DIM} SGD {'is_sparse=True' if sparse else 'dense'}"
        print(f"{name:<40} peak growth {mb:7.0f} MB = {ratio:.2f} x the table (600 MB)")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2] == "sparse")
    else:
        main()
