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
        self._origin_program = None

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

    def all_reduce_worker(self, input, output) -> None:
        """The workers' element-wise sum of ``input`` into ``output`` (the role maker's collective)."""
        self._role().all_reduce_worker(input, output)

    def _checked(self, executor, main_program, default, what: str):
        """The program a save works on (``main_program``, else ``default``), after fluid's checks."""
        from fluidcompat.executor.executor import CompiledProgram, Executor
        from fluidcompat.framework import Program

        if not isinstance(executor, Executor):
            raise TypeError(f"In fleet.{what}() function, executor must be as Executor type.")
        program = default if main_program is None else main_program
        if isinstance(program, CompiledProgram):
            raise TypeError(
                f"In fleet.{what}() function, main_program must be as Program type, CompiledProgram is not allowed"
            )
        if not isinstance(program, Program):
            raise TypeError(
                f"In fleet.{what}() function, main_program must be as Program type (call minimize first, or pass "
                f"one). Received: {type(program).__name__}"
            )
        return program

    def save_inference_model(
        self, executor, dirname, feeded_var_names=None, target_vars=None, main_program=None, export_for_deployment=True
    ):
        """The inference part of the program minimize was given (``_origin_program``)."""
        from fluidcompat import io

        program = self._checked(executor, main_program, self._origin_program, "save_inference_model")
        return io.save_inference_model(
            dirname, feeded_var_names, target_vars, executor, program, None, None, export_for_deployment
        )


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
