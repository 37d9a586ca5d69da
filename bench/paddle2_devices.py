"""Seed 003's device chapter on a GPU: the MNIST model's training step on the CPU and on gpu:0 (the
chapter's "CPU takes about 10x the GPU's time"), and a pinned-memory ``cuda(blocking=False)`` copy
overlapping compute. Needs CUDA; prints why not otherwise."""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fluidcompat.compat import device, nn, optimizer  # noqa: E402
from fluidcompat.compat import functional as F  # noqa: E402
from fluidcompat.compat import tensor as T  # noqa: E402


class MNIST(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 20, 5, stride=1, padding=2)
        self.pool1 = nn.MaxPool2D(2, 2)
        self.conv2 = nn.Conv2D(20, 20, 5, stride=1, padding=2)
        self.pool2 = nn.MaxPool2D(2, 2)
        self.fc = nn.Linear(980, 10)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        return self.fc(T.reshape(x, [x.shape[0], 980]))


def step_time(where: str, batch: int = 100, steps: int = 30) -> float:
    device.set_device(where)
    model = MNIST()
    opt = optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    imgs = np.random.rand(batch, 1, 28, 28).astype("float32")
    labels = np.random.randint(0, 10, (batch, 1)).astype("int64")
    times = []
    for i in range(steps + 5):
        t0 = time.perf_counter()
        loss = T.mean(F.cross_entropy(model(device.to_tensor(imgs)), device.to_tensor(labels)))
        loss.backward()
        opt.step()
        opt.clear_grad()
        float(loss)  # wait for the step
        if i >= 5:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def overlap() -> None:
    n = 64 * 1024 * 1024 // 4  # 64 MiB
    pinned = device.to_tensor(np.ones(n, "float32"), place=device.CUDAPinnedPlace())
    a = torch.randn(4096, 4096, device="cuda")

    def compute():
        for _ in range(10):
            a @ a

    def timed(fn) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    copy_stream = torch.cuda.Stream()

    def both():
        with torch.cuda.stream(copy_stream):
            pinned.cuda(blocking=False)
        compute()

    for fn in (compute, lambda: pinned.cuda(blocking=True), both):
        timed(fn)
    tc, tx, tb = timed(compute), timed(lambda: pinned.cuda(blocking=True)), timed(both)
    print(f"compute alone {tc * 1e3:8.2f} ms   64 MiB copy alone {tx * 1e3:8.2f} ms   "
          f"both, copy async from pinned {tb * 1e3:8.2f} ms   (serial would be {(tc + tx) * 1e3:.2f} ms)")  # fmt: skip


def main() -> int:
    if not torch.cuda.is_available():
        print("paddle2_devices: needs a CUDA device (torch finds none here)")
        return 0
    torch.set_num_threads(os.cpu_count() or 1)
    cpu, gpu = step_time("cpu"), step_time("gpu:0")
    print("MNIST chapter model, batch 100, one SGD step (median):")
    print(f"  cpu    {cpu * 1e3:8.2f} ms")
    print(f"  gpu:0  {gpu * 1e3:8.2f} ms   cpu / gpu = {cpu / gpu:.1f}x")
    overlap()
    return 0


if __name__ == "__main__":
    sys.exit(main())
