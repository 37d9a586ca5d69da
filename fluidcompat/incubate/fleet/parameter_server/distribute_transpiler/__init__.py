"""``fluid.incubate.fleet.parameter_server.distribute_transpiler``: the parameter-server fleet. After
``fleet.init(role_maker)`` and ``fleet.distributed_optimizer(opt, strategy).minimize(loss)`` a server
runs ``fleet.init_server()`` and ``fleet.run_server()``; a trainer runs ``fleet.init_worker()``,
``exe.run(fleet.startup_program)``, ``exe.run(fleet.main_program, feed=...)`` and
``fleet.stop_worker()``. The programs are DistributeTranspiler's (GeoSgdTranspiler's for GEO-SGD;
fluidcompat/transpiler), built as the strategy says (distributed_strategy.py: synchronous by default);
the trainer's communicator (fluid.communicator) sends and receives for them. A
DistributeTranspilerConfig is taken as fluid 1.8 took it: ``sync_mode`` gives SyncStrategy, else
``geo_sgd_mode`` GeoStrategy, ``half_async`` (or no ``runtime_split_send_recv``) HalfAsyncStrategy,
and AsyncStrategy otherwise."""

from __future__ import annotations

import os
import warnings

from fluidcompat import io
from fluidcompat.communicator import Communicator
from fluidcompat.executor.executor import Executor
from fluidcompat.framework import default_main_program, default_startup_program
from fluidcompat.incubate.fleet.base.fleet_base import DistributedOptimizer, Fleet, Mode
from fluidcompat.incubate.fleet.base.role_maker import MPISymetricRoleMaker
from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import (
    AsyncStrategy,
    DistributedStrategy,
    GeoStrategy,
    HalfAsyncStrategy,
    StrategyFactory,
    SyncStrategy,
    TrainerRuntimeConfig,
)
from fluidcompat.places import CPUPlace
from fluidcompat.transpiler.distribute_transpiler import (
    DistributedMode,
    DistributeTranspiler,
    DistributeTranspilerConfig,
)

__all__ = [
    "fleet", "DistributedTranspiler", "TranspilerOptimizer", "StrategyFactory", "SyncStrategy", "AsyncStrategy",
    "HalfAsyncStrategy", "GeoStrategy", "TrainerRuntimeConfig",
]  # fmt: skip


class DistributedTranspiler(Fleet):
    def __init__(self) -> None:
        super().__init__(Mode.TRANSPILER)
        self._transpile_config = None
        self._transpiler = None
        self.startup_program = None
        self.main_program = None
        self._executor = None
        self._communicator = None
        self._opt_info = None
        self.vars_info = None

    def init(self, role_maker=None) -> None:
        super().init(role_maker)
        self._executor = Executor(CPUPlace())

    def init_worker(self) -> None:
        """Start this trainer's communicator for ``fleet.main_program`` (the mode its strategy says);
        with an MPISymetricRoleMaker, first wait for the servers."""
        if self._transpile_config is None or self.main_program is None:
            raise ValueError("main_program is None, need invoke DistributedOptimizer.minimize first")
        if isinstance(self._role_maker, MPISymetricRoleMaker):
            from fluidcompat.transpiler.distribute_transpiler import wait_server_ready

            wait_server_ready(self.server_endpoints(to_string=False))
        strategy = self._transpile_config
        flags = strategy.get_trainer_runtime_config().get_communicator_flags()
        if isinstance(strategy, GeoStrategy):
            kwargs = {"push_vars": self.vars_info, "trainers": self.worker_num(),
                      "push_nums": strategy.get_program_config().geo_sgd_need_push_nums}  # fmt: skip
            mode = DistributedMode.GEO
        elif isinstance(strategy, SyncStrategy):
            kwargs = {"pserver_endpoints": self._role().get_pserver_endpoints(), "trainer_id": self.worker_index()}
            mode = DistributedMode.SYNC
        elif isinstance(strategy, HalfAsyncStrategy):
            kwargs, mode = None, DistributedMode.HALF_ASYNC
        elif isinstance(strategy, AsyncStrategy):
            kwargs, mode = None, DistributedMode.ASYNC
        else:
            raise TypeError(f"Training MODE do not supported: {type(strategy).__name__}")
        if self._communicator is not None and self._communicator.is_running():
            warnings.warn("communicator has been initialized, skip", stacklevel=2)
            return
        self._communicator = Communicator(self.main_program, mode, kwargs, flags)
        self._communicator.start()

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
        """Stop the communicator, then tell the servers this trainer is done (they stop once every
        trainer is)."""
        self._role()
        if self._communicator is not None:
            self._communicator.stop()
        if isinstance(self._role_maker, MPISymetricRoleMaker):
            self._role_maker._finalize()
        self._executor.close()

    def distributed_optimizer(self, optimizer, strategy=None) -> "TranspilerOptimizer":
        from fluidcompat.optimizer import Optimizer

        if not isinstance(optimizer, Optimizer):
            raise ValueError(f"optimizer must be an instance of Optimizer. Received: {type(optimizer).__name__}")
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

    def _set_opt_info(self, opt_info) -> None:
        self._opt_info = opt_info

    def _strategy_of(self, config) -> DistributedStrategy:
        """The strategy a DistributeTranspilerConfig stands for (fluid 1.8's reading of it)."""
        if isinstance(config, DistributedStrategy):
            return config
        if not isinstance(config, DistributeTranspilerConfig):
            raise TypeError(
                "config must be an instance of DistributeTranspilerConfig, SyncStrategy, HalfAsyncStrategy, "
                f"AsyncStrategy or GeoStratey. Received: {type(config).__name__}"
            )
        if config.sync_mode:
            strategy = SyncStrategy()
        elif not config.runtime_split_send_recv:
            strategy = HalfAsyncStrategy()
            config.half_async = True  # the config given is changed, as fluid 1.8 changed it
            config.runtime_split_send_recv = True
        elif config.geo_sgd_mode:
            strategy = GeoStrategy(config.geo_sgd_need_push_nums)
        elif config.half_async:
            strategy = HalfAsyncStrategy()
        else:
            strategy = AsyncStrategy()
        strategy.set_program_config(config)
        return strategy

    def _transpile(self, config) -> None:
        from fluidcompat.transpiler.geo_sgd_transpiler import GeoSgdTranspiler

        strategy = self._strategy_of(config)
        self._transpile_config = strategy
        program_config = strategy.get_program_config()
        self._origin_program = default_main_program().clone(for_test=False)
        make = GeoSgdTranspiler if program_config.geo_sgd_mode else DistributeTranspiler
        self._transpiler = make(program_config)
        self._transpiler._set_server_config(strategy.get_server_runtime_config())
        servers = self.server_endpoints(to_string=True)
        if self.is_worker():
            self._transpiler.transpile(
                self.worker_index(), pservers=servers, trainers=self.worker_num(), sync_mode=program_config.sync_mode
            )
            if isinstance(self._role_maker, MPISymetricRoleMaker):
                program_config.wait_port = False
            self.main_program = self._transpiler.get_trainer_program(wait_port=program_config.wait_port)
            self.startup_program = default_startup_program()
            if program_config.geo_sgd_mode:
                self.vars_info = self._transpiler._get_vars_info()
                self.startup_program = self._transpiler.trainer_startup_program
        else:
            endpoint = self.server_endpoints()[self.server_index()]
            # a server's programs are its own: the script's programs are left as they are (fluid rewrote
            # them into a trainer's, which a second minimize then transpiled again), and they do not
            # depend on a trainer id
            self._transpiler.transpile(
                0, program=default_main_program().clone(), pservers=servers, trainers=self.worker_num(),
                sync_mode=program_config.sync_mode, startup_program=default_startup_program().clone(),
                current_endpoint=endpoint,
            )  # fmt: skip
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
        self.opt_info = {}
        if isinstance(strategy, DistributedStrategy):
            self.opt_info = strategy.get_debug_opt()
            if fleet._role_maker is not None:
                self.opt_info["mpi_rank"] = fleet.worker_index()
                self.opt_info["mpi_size"] = fleet.worker_num()
            self.opt_info["trainer"] = "MultiTrainer"
            self.opt_info["device_worker"] = "Hogwild"
            fleet._set_opt_info(self.opt_info)

    def minimize(self, loss, scopes=None, startup_program=None, parameter_list=None, no_grad_set=None):
        if isinstance(loss, list):
            raise TypeError("DistributedTranspiler's minimize can not accept loss with list")
        if isinstance(startup_program, list):
            raise TypeError("DistributedTranspiler's minimize can not accept program with list")
        result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        fleet._transpile(self._strategy)
        loss.block.program._fleet_opt = self.opt_info
        return result
