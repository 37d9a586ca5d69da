"""``fluid.incubate.fleet.parameter_server.distribute_transpiler``: the parameter-server fleet. After
``fleet.init(role_maker)`` and ``fleet.distributed_optimizer(opt, strategy).minimize(loss)`` a server
runs ``fleet.init_server()`` and ``fleet.run_server()``; a trainer runs ``fleet.init_worker()``,
``exe.run(fleet.startup_program)``, ``exe.run(fleet.main_program, feed=...)`` and
``fleet.stop_worker()``. The programs are DistributeTranspiler's (fluidcompat/transpiler); the
strategy: synchronous (the default) or asynchronous training, or a DistributeTranspilerConfig."""

from __future__ import annotations

import os

from fluidcompat import io
from fluidcompat.executor.executor import Executor
from fluidcompat.framework import default_main_program, default_startup_program
from fluidcompat.incubate.fleet.base.fleet_base import DistributedOptimizer, Fleet, Mode
from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import (
    AsyncStrategy,
    DistributedStrategy,
    StrategyFactory,
    SyncStrategy,
)
from fluidcompat.places import CPUPlace
from fluidcompat.transpiler.distribute_transpiler import DistributeTranspiler, DistributeTranspilerConfig

__all__ = ["fleet", "DistributedTranspiler", "TranspilerOptimizer", "StrategyFactory", "SyncStrategy", "AsyncStrategy"]


class DistributedTranspiler(Fleet):
    def __init__(self) -> None:
        super().__init__(Mode.TRANSPILER)
        self._transpiler = None
        self.startup_program = None
        self.main_program = None
        self._executor = None

    def init(self, role_maker=None) -> None:
        super().init(role_maker)
        self._executor = Executor(CPUPlace())

    def init_worker(self) -> None:
        """Nothing to start: the trainer program sends and receives itself (its first send waits
        for the servers)."""
        self._role()

    def init_server(self, model_dir=None) -> None:
        if not self.startup_program:
            raise ValueError("startup_program is None, need invoke DistributedOptimizer.minimize first")
        self._executor.run(self.startup_program)
        if model_dir:
            if not os.path.isdir(model_dir):
                raise ValueError(f"There is no directory named '{model_dir}'")
            io.load_persistables(self._executor, model_dir, self.main_program)

    def run_server(self) -> None:
        if not self.main_program:
            raise ValueError("main_program is None, need invoke DistributedOptimizer.minimize first")
        self._executor.run(self.main_program)

    def stop_worker(self) -> None:
        """Tell the servers this trainer is done (they stop once every trainer is)."""
        self._role()
        self._executor.close()

    def distributed_optimizer(self, optimizer, strategy=None) -> "TranspilerOptimizer":
        if self._role_maker is None:
            raise ValueError(
                "use fleet.init(role) to initialize the role of current node before optimizer.minimize(loss)"
            )
        self._optimizer = TranspilerOptimizer(optimizer, strategy)
        return self._optimizer

    def save_persistables(self, executor, dirname, main_program=None) -> None:
        """The job's persistables, those only the servers hold included (a trainer's program)."""
        program = self._checked(executor, main_program, self.main_program, "save_persistables")
        if not getattr(program, "_is_distributed", False):
            raise ValueError("main_program is for local, may not use fleet.save_persistables")
        io.save_persistables(executor, dirname, program, None)

    def _transpile(self, strategy) -> None:
        if isinstance(strategy, DistributedStrategy):
            config = strategy.get_program_config()
        elif isinstance(strategy, DistributeTranspilerConfig):
            config = strategy
        else:
            raise TypeError(
                "config must be an instance of DistributeTranspilerConfig, SyncStrategy or AsyncStrategy. "
                f"Received: {type(strategy).__name__}"
            )
        self._origin_program = default_main_program().clone(for_test=False)
        self._transpiler = DistributeTranspiler(config=config)
        servers = self.server_endpoints(to_string=True)
        if self.is_worker():
            self._transpiler.transpile(
                self.worker_index(), pservers=servers, trainers=self.worker_num(), sync_mode=config.sync_mode
            )
            self.main_program = self._transpiler.get_trainer_program()
            self.startup_program = default_startup_program()
        else:
            endpoint = self.server_endpoints()[self.server_index()]
            self._transpiler.transpile(
                0, pservers=servers, trainers=self.worker_num(), sync_mode=config.sync_mode, current_endpoint=endpoint
            )  # a server's program does not depend on a trainer id
            self.main_program, self.startup_program = self._transpiler.get_pserver_programs(endpoint)


fleet = DistributedTranspiler()


class TranspilerOptimizer(DistributedOptimizer):
    """minimize: the optimizer's, then the job's programs (``fleet.main_program`` /
    ``startup_program``: this process's, a trainer's or a server's)."""

    def __init__(self, optimizer, strategy=None) -> None:
        if strategy is None:
            strategy = StrategyFactory.create_sync_strategy()
        if not isinstance(strategy, (DistributeTranspilerConfig, DistributedStrategy)):
            raise TypeError(
                "In 1 mode, strategy must be an instance of DistributeTranspilerConfig, SyncStrategy, "
                f"HalfAsyncStrategy, AsyncStrategy, or GeoStrategy. Received: {type(strategy).__name__}"
            )
        super().__init__(optimizer, strategy)

    def minimize(self, loss, scopes=None, startup_program=None, parameter_list=None, no_grad_set=None):
        if isinstance(loss, list):
            raise TypeError("DistributedTranspiler's minimize can not accept loss with list")
        if isinstance(startup_program, list):
            raise TypeError("DistributedTranspiler's minimize can not accept program with list")
        result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        fleet._transpile(self._strategy)
        return result
