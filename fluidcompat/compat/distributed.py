"""``paddle.distributed``: data parallelism on torch.distributed (Gloo on the CPU, NCCL on GPUs).

Workers are started by ``fluidcompat launch`` (torch.distributed.run underneath), which sets torch's
``RANK`` / ``WORLD_SIZE`` / ``MASTER_ADDR`` / ``MASTER_PORT`` and Paddle's ``PADDLE_TRAINER_ID`` /
``PADDLE_TRAINERS_NUM`` / ``PADDLE_CURRENT_ENDPOINT`` / ``PADDLE_TRAINER_ENDPOINTS``.
``paddle.DataParallel`` averages the gradients of all workers after each ``backward()``.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import List

from fluidcompat.compat import device as _device
from fluidcompat.compat.nn import Layer
from fluidcompat.process_group import (  # noqa: F401  (the process group, below the executor)
    _dist,
    _local_rank,
    get_rank,
    get_world_size,
    init_parallel_env,
    is_initialized,
    uses_cuda,
)

__path__: list = []  # a package: `import paddle.distributed.launch` goes through the alias finder

__all__ = [
    "DataParallel",
    "ParallelEnv",
    "ReduceOp",
    "all_reduce",
    "barrier",
    "broadcast",
    "get_rank",
    "get_world_size",
    "init_parallel_env",
    "is_initialized",
]


class ParallelEnv:
    """The worker's place in the job, as Paddle's ``ParallelEnv`` reports it."""

    @property
    def rank(self) -> int:
        return get_rank()

    local_rank = rank

    @property
    def world_size(self) -> int:
        return get_world_size()

    nranks = world_size

    @property
    def device_id(self) -> int:
        return int(os.environ.get("FLAGS_selected_gpus", _local_rank()))

    dev_id = device_id

    @property
    def current_endpoint(self) -> str:
        return os.environ.get("PADDLE_CURRENT_ENDPOINT", "")

    @property
    def trainer_endpoints(self) -> List[str]:
        v = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        return v.split(",") if v else []


class ReduceOp:
    SUM, MAX, MIN, PROD = 0, 1, 2, 3


def _torch_op(op):
    dist = _dist()
    return {ReduceOp.SUM: dist.ReduceOp.SUM, ReduceOp.MAX: dist.ReduceOp.MAX, ReduceOp.MIN: dist.ReduceOp.MIN,
            ReduceOp.PROD: dist.ReduceOp.PRODUCT}[op]  # fmt: skip


def _require_group(what: str) -> None:
    if not is_initialized():
        raise RuntimeError(f"{what}: call paddle.distributed.init_parallel_env() first (in a launched worker)")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, use_calc_stream=True):
    """Reduce ``tensor`` over all workers, in place."""
    if get_world_size() < 2:
        return None
    _require_group("all_reduce")
    _dist().all_reduce(tensor._t.data, op=_torch_op(op))
    return None


def broadcast(tensor, src, group=None, use_calc_stream=True):
    if get_world_size() < 2:
        return None
    _require_group("broadcast")
    _dist().broadcast(tensor._t.data, src=src)
    return None


def barrier(group=None) -> None:
    if is_initialized():
        _dist().barrier()


def average_gradients(tensors) -> None:
    """Replace each tensor by its mean over the workers: one all-reduce over a flat buffer."""
    import torch

    if not tensors:
        return
    flat = torch.cat([t.reshape(-1) for t in tensors])
    _dist().all_reduce(flat)
    flat /= get_world_size()
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(flat[offset : offset + n].view_as(t))
        offset += n


def broadcast_from_rank0(tensors) -> None:
    for t in tensors:
        _dist().broadcast(t, src=0)


class DataParallel(Layer):
    """Runs ``layers`` on this worker's share of the batch; after each ``backward()`` the gradients of
    its parameters are averaged over the workers (torch.distributed all-reduce). Parameters start from
    rank 0's values."""

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False) -> None:  # fmt: skip
        super().__init__("data_parallel")
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel wraps a paddle.nn.Layer. Received: {type(layers).__name__}")
        self._layers = layers
        self._sync = True
        if get_world_size() > 1:
            _require_group("DataParallel")
            import torch

            with torch.no_grad():
                broadcast_from_rank0([p._t.data for p in layers.parameters()])
            ref = weakref.ref(self)

            def hook():
                model = ref()
                if model is None:
                    _device.AFTER_BACKWARD.remove(hook)
                elif model._sync:
                    model._average_gradients()

            _device.AFTER_BACKWARD.append(hook)

    def _average_gradients(self) -> None:
        import torch

        params = [p for p in self._layers.parameters() if not p.stop_gradient]
        if not any(p._t.grad is not None for p in params):
            return
        with torch.no_grad():
            for p in params:
                if p._t.grad is None:
                    p._t.grad = torch.zeros_like(p._t)
            average_gradients([p._t.grad for p in params])

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside keep their gradients local (accumulate, then sync on a later one)."""
        self._sync = False
        try:
            yield
        finally:
            self._sync = True

    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix=""):
        return self._layers.state_dict(destination, include_sublayers, structured_name_prefix)

    def set_state_dict(self, state_dict, use_structured_name=True):
        return self._layers.set_state_dict(state_dict, use_structured_name)

    set_dict = set_state_dict
    load_dict = set_state_dict

    def scale_loss(self, loss):
        return loss  # gradients are averaged, as in Paddle 2

    def apply_collective_grads(self) -> None:
        pass  # done after backward()


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    raise NotImplementedError(
        "paddle.distributed.spawn is not supported by fluidcompat: start the workers with "
        "`fluidcompat launch --nproc_per_node N script.py`"
    )
