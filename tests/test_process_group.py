"""fluidcompat/process_group.py: a launched job's rank, size and group, below the executor;
paddle.distributed hands out the same functions, and paddle.device takes the GPU a worker joined its
group on, whichever of the two came first (docs/architecture.md, the hooks)."""

from __future__ import annotations

import os
import subprocess
import sys

from fluidcompat import process_group
from fluidcompat.compat import distributed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_paddle_distributed_hands_out_the_process_group():
    for name in ("get_rank", "get_world_size", "init_parallel_env", "is_initialized", "uses_cuda"):
        assert getattr(distributed, name) is getattr(process_group, name), name


def test_rank_and_size_outside_a_job_and_from_the_launcher_env(monkeypatch):
    for name in ("PADDLE_TRAINER_ID", "RANK", "PADDLE_TRAINERS_NUM", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert (process_group.get_rank(), process_group.get_world_size()) == (0, 1)
    assert process_group.init_parallel_env() is None  # one worker: nothing to join
    assert not process_group.is_initialized()
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    assert (process_group.get_rank(), process_group.get_world_size()) == (3, 4)


def _device_after(script: str) -> str:
    """paddle.device.get_device() after ``script`` (GPUs emulated on the CPU, as --device cpu)."""
    env = dict(os.environ, FLUIDCOMPAT_DEVICE="cpu")
    out = subprocess.run(
        [sys.executable, "-c", script + "\nfrom fluidcompat.compat import device\nprint(device.get_device())"],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip()


def test_a_worker_that_joins_over_nccl_runs_on_its_gpu_whichever_imports_first():
    # what init_parallel_env does after joining over NCCL, on GPU 1: before paddle.device is imported ...
    before = "from fluidcompat import process_group\nprocess_group.joined_gpu = 1"
    assert _device_after(before) == "gpu:1"
    # ... and after, when the hooks it registered make it set_device("gpu:1")
    after = (
        "from fluidcompat import process_group\nfrom fluidcompat.compat import device\n"
        "assert device.get_device() == 'gpu:0'\n"
        "process_group.joined_gpu = 1\n"
        "for hook in process_group.on_gpu_join: hook(1)"
    )
    assert _device_after(after) == "gpu:1"
