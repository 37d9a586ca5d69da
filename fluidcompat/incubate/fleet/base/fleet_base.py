"""The ``fleet`` object's common part: the role queries, and the optimizer wrapper."""

from __future__ import annotations

from typing import List

from fluidcompat.incubate.fleet.base.role_maker import PaddleCloudRoleMaker, RoleMakerBase

__all__ = ["Mode", "Fleet", "DistributedOptimizer"]


class Mode:
    TRANSPILER = 1
    PSLIB = 2
    COLLECTIVE = 3


class Fleet:
    """What every fleet answers once ``init(role_maker)`` has run."""

    def __init__(self, mode: int) -> None:
        self._mode = mode
        self._role_maker = None
        self._optimizer = None

    def _role(self) -> RoleMakerBase:
        if self._role_maker is None:
            raise RuntimeError("fleet.init(role_maker) must be called before asking fleet about the job")
        return self._role_maker

    def init(self, role_maker=None) -> None:
        if role_maker is None:
            role_maker = PaddleCloudRoleMaker(is_collective=self._mode == Mode.COLLECTIVE)
        if not isinstance(role_maker, RoleMakerBase):
            raise TypeError(f"role_maker must be a RoleMakerBase. Received: {type(role_maker).__name__}")
        role_maker.generate_role()
        self._role_maker = role_maker

    def is_first_worker(self) -> bool:
        return self._role().is_first_worker()

    def worker_index(self) -> int:
        return self._role().worker_index()

    def worker_num(self) -> int:
        return self._role().worker_num()

    def is_worker(self) -> bool:
        return self._role().is_worker()

    def worker_endpoints(self, to_string: bool = False):
        eps = self._role().get_trainer_endpoints()
        return ",".join(eps) if to_string else eps

    def server_num(self) -> int:
        return len(self._role().get_pserver_endpoints())

    def server_index(self) -> int:
        return self._role().server_index()

    def server_endpoints(self, to_string: bool = False):
        eps = self._role().get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def is_server(self) -> bool:
        return self._role().is_server()

    def split_files(self, files: List[str]) -> List[str]:
        """This worker's share of ``files``: a contiguous block, the first workers taking one more."""
        if not isinstance(files, list):
            raise TypeError("files should be a list of file need to be read.")
        n, i = self.worker_num(), self.worker_index()
        per, extra = divmod(len(files), n)
        start = i * per + min(i, extra)
        return files[start : start + per + (1 if i < extra else 0)]

    def barrier_worker(self) -> None:
        self._role().barrier_worker()


class DistributedOptimizer:
    """Wraps an optimizer; ``minimize`` adds what the fleet's mode needs."""

    def __init__(self, optimizer, strategy=None) -> None:
        from fluidcompat.optimizer import Optimizer

        if not isinstance(optimizer, Optimizer) and type(optimizer).__name__ != "OptimizerWithMixedPrecision":
            raise TypeError(f"optimizer must be an instance of Optimizer. Received: {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._strategy = strategy

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        return self._optimizer.backward(loss, startup_program, parameter_list, no_grad_set, callbacks)

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads)
