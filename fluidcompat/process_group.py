"""The process group of a job ``fluidcompat launch`` started (torch.distributed underneath): this
worker's rank, the number of workers, joining the group. ``paddle.distributed`` (compat/distributed.py)
hands these out; the executor and the collective ops (``c_gen_nccl_id``, ``c_allreduce_*``) use them
directly, below it.
"""

from __future__ import annotations

import atexit
import os
from typing import Callable, List, Optional

from fluidcompat import places as _places

# The GPU this worker joined its group on (NCCL), and what is called with it then: paddle.device
# (compat/device.py) makes it the global device, as set_device("gpu:<i>") would.
joined_gpu: Optional[int] = None
on_gpu_join: List[Callable[[int], None]] = []


def _dist():
    import torch.distributed as dist

    return dist


def is_initialized() -> bool:
    dist = _dist()
    return dist.is_available() and dist.is_initialized()


def _env_int(*names: str, default: int) -> int:
    for n in names:
        if os.environ.get(n):
            return int(os.environ[n])
    return default


def get_rank() -> int:
    """This worker's rank (0 outside a launched job)."""
    if is_initialized():
        return _dist().get_rank()
    return _env_int("PADDLE_TRAINER_ID", "RANK", default=0)


def get_world_size() -> int:
    """The number of workers (1 outside a launched job)."""
    if is_initialized():
        return _dist().get_world_size()
    return _env_int("PADDLE_TRAINERS_NUM", "WORLD_SIZE", default=1)


def _local_rank() -> int:
    return _env_int("PADDLE_RANK_IN_NODE", "LOCAL_RANK", default=0)


def uses_cuda() -> bool:
    """Whether workers talk over NCCL on real GPUs (else Gloo on the CPU, ``--device cpu`` included)."""
    return _places.cuda_available() and not _places.cpu_mode()


def init_parallel_env():
    """Join the job's process group (once); a no-op for a single worker. On GPUs, worker i runs on
    ``gpu:i`` of the visible devices."""
    if get_world_size() < 2 or is_initialized():
        return None
    if "MASTER_ADDR" not in os.environ:
        endpoints = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        if not endpoints:
            raise RuntimeError(
                "init_parallel_env: this process is one of several workers but was not started by a launcher: "
                "run it with `fluidcompat launch --nproc_per_node N script.py`"
            )
        addr, port = endpoints.split(",")[0].rsplit(":", 1)
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = addr, port
    backend = "nccl" if uses_cuda() else "gloo"
    if backend == "nccl":
        import torch

        global joined_gpu
        torch.cuda.set_device(_local_rank())
        joined_gpu = _local_rank()
        for hook in on_gpu_join:
            hook(joined_gpu)
    timeout = os.environ.get("FLUIDCOMPAT_COLLECTIVE_TIMEOUT")  # `fluidcompat launch --timeout`'s
    kwargs = {"timeout": __import__("datetime").timedelta(seconds=float(timeout))} if timeout else {}
    _dist().init_process_group(backend, rank=get_rank(), world_size=get_world_size(), **kwargs)
    atexit.register(_leave_group)
    return None


def _leave_group() -> None:
    # Without this, a Gloo thread still running at interpreter exit can abort the worker (SIGABRT).
    if is_initialized():
        _dist().destroy_process_group()
