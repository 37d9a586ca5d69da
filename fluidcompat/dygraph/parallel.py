"""Dygraph data parallelism: ``prepare_context``, ``ParallelEnv``, ``DataParallel``.

Each worker process (``fluidcompat launch --nproc_per_node N script.py``) runs the model on its own
batch; ``apply_collective_grads`` sums the parameters' gradients over the workers (torch.distributed,
NCCL on GPUs, Gloo on the CPU) and ``scale_loss`` divides the loss by their number. With one worker
both do nothing, as in fluid 1.8.
"""

from __future__ import annotations

import os

from fluidcompat.dygraph.layers import Layer

__all__ = ["prepare_context", "ParallelEnv", "DataParallel", "ParallelStrategy"]


class ParallelEnv:
    """The worker's place in the job, from the launcher's environment variables."""

    def __init__(self) -> None:
        self._nranks = int(os.getenv("PADDLE_TRAINERS_NUM", "1"))
        self._local_rank = int(os.getenv("PADDLE_TRAINER_ID", "0"))
        self._dev_id = int(os.getenv("FLAGS_selected_gpus", "0"))
        self._trainer_endpoints = os.getenv("PADDLE_TRAINER_ENDPOINTS", "").split(",")
        self._current_endpoint = os.getenv("PADDLE_CURRENT_ENDPOINT", "")

    @property
    def nranks(self) -> int:
        return self._nranks

    @property
    def local_rank(self) -> int:
        return self._local_rank

    @property
    def dev_id(self) -> int:
        return self._dev_id

    @property
    def current_endpoint(self) -> str:
        return self._current_endpoint

    @property
    def trainer_endpoints(self):
        return self._trainer_endpoints


Env = ParallelEnv


class ParallelStrategy:
    """What ``prepare_context`` found: ``nranks``, ``local_rank``, ``trainer_endpoints``, ``current_endpoint``."""

    def __init__(self) -> None:
        env = ParallelEnv()
        self.nranks = env.nranks
        self.local_rank = env.local_rank
        self.trainer_endpoints = env.trainer_endpoints
        self.current_endpoint = env.current_endpoint


def prepare_context(strategy=None):
    """Join the workers' process group; returns the strategy (None with a single worker, as fluid 1.8)."""
    if strategy is None:
        strategy = ParallelStrategy()
    if strategy.nranks < 2:
        return None
    from fluidcompat.compat.distributed import init_parallel_env
    from fluidcompat.framework import in_dygraph_mode

    if not in_dygraph_mode():
        raise RuntimeError("dygraph.prepare_context should be used with dygraph mode (inside fluid.dygraph.guard())")
    init_parallel_env()
    return strategy


class DataParallel(Layer):
    """``layers`` run on each worker's batch; gradients summed over the workers by
    ``apply_collective_grads`` after ``scale_loss(loss).backward()``."""

    def __init__(self, layers, strategy=None):
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel wraps a Layer; received {type(layers).__name__}")
        super().__init__(layers.full_name() + "_data_parallel")
        self._layers = layers
        self._strategy = strategy if strategy is not None else ParallelStrategy()

    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    def _is_data_parallel_mode(self) -> bool:
        return self._strategy.nranks > 1

    def scale_loss(self, loss):
        """``loss / nranks`` with several workers, else ``loss``."""
        if not self._is_data_parallel_mode():
            return loss
        return loss * (1.0 / self._strategy.nranks)

    def apply_collective_grads(self) -> None:
        """Sum every trainable parameter's gradient over the workers (in one flat buffer per dtype)."""
        if not self._is_data_parallel_mode():
            return
        import torch
        import torch.distributed as dist

        grads = []
        for p in self._layers.parameters():
            g = p._grad_tensor() if p.trainable else None
            if g is not None and g.is_sparse:  # summed dense (the rows differ between workers)
                g = p._value.grad = g.to_dense()
            grads.append(g)
        by_dtype = {}
        for g in grads:
            if g is not None:
                by_dtype.setdefault(g.dtype, []).append(g)
        for group in by_dtype.values():
            flat = torch.cat([g.reshape(-1) for g in group])
            dist.all_reduce(flat)
            offset = 0
            for g in group:
                n = g.numel()
                g.copy_(flat[offset : offset + n].view_as(g))
                offset += n

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix=""):
        return self._layers.state_dict(destination, include_sublayers, structured_name_prefix)

    def set_dict(self, stat_dict, include_sublayers=True, use_structured_name=True):
        self._layers.set_dict(stat_dict, include_sublayers, use_structured_name)

    load_dict = set_dict
