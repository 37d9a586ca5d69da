"""``fluid.incubate.fleet.collective``: data-parallel training over the workers ``fluidcompat
launch`` starts, as fluid 1.8's collective fleet: ``fleet.init(role)``, ``fleet.distributed_optimizer
(opt, strategy).minimize(loss)``, then ``exe.run(fleet.startup_program)`` and
``exe.run(fleet.main_program, feed=this worker's share)``; gradients are averaged over the workers
and every worker starts from worker 0's parameters."""

from __future__ import annotations

import logging

from fluidcompat import io
from fluidcompat.executor.executor import BuildStrategy, CompiledProgram, ExecutionStrategy
from fluidcompat.framework import default_startup_program
from fluidcompat.incubate.fleet.base.fleet_base import DistributedOptimizer, Fleet, Mode

__all__ = ["fleet", "Collective", "DistributedStrategy", "CollectiveOptimizer"]

_log = logging.getLogger("fluidcompat.fleet")


class DistributedStrategy(BuildStrategy):
    """BuildStrategy plus the collective options fluid 1.8 read: ``forward_recompute`` with
    ``recompute_checkpoints`` (RecomputeOptimizer), ``use_amp`` / ``amp_loss_scaling`` (mixed
    precision), ``exec_strategy``; ``use_local_sgd`` / ``use_dist_fc`` are refused."""

    def __init__(self) -> None:
        super().__init__()
        self.use_local_sgd = False
        self.use_dist_fc = False
        self.dist_fc_config = None
        self.mode = "nccl2"
        self.collective_mode = None
        self.nccl_comm_num = 1
        self.forward_recompute = False
        self.recompute_checkpoints = []
        self.use_amp = False
        self.amp_loss_scaling = 2**15
        self.exec_strategy = ExecutionStrategy()


class Collective(Fleet):
    def __init__(self) -> None:
        super().__init__(Mode.COLLECTIVE)
        self.startup_program = None
        self.main_program = None

    def _not_for_collective(self, name: str) -> None:
        _log.warning("You should not call '%s' method for collective mode.", name)

    def init_worker(self) -> None:
        self._not_for_collective("init_worker")

    def run_worker(self, main_programs=None, scopes=None) -> None:
        self._not_for_collective("run_worker")

    def init_server(self, model_dir=None) -> None:
        self._not_for_collective("init_server")

    def run_server(self) -> None:
        self._not_for_collective("run_server")

    def stop_worker(self) -> None:
        self._not_for_collective("stop_worker")

    def distributed_optimizer(self, optimizer, strategy=None) -> "CollectiveOptimizer":
        self._optimizer = CollectiveOptimizer(optimizer, strategy)
        return self._optimizer

    def save_persistables(self, executor, dirname, main_program=None, filename=None):
        program = self._checked(executor, main_program, self._origin_program, "save_persistables")
        return io.save_persistables(executor, dirname, program, filename=filename)


class CollectiveOptimizer(DistributedOptimizer):
    """minimize: the optimizer's (wrapped for recompute / mixed precision when the strategy asks),
    then ``fleet.main_program``: the program compiled for data parallelism over the workers."""

    def __init__(self, optimizer, strategy=None) -> None:
        strategy = DistributedStrategy() if strategy is None else strategy
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"strategy must be a DistributedStrategy. Received: {type(strategy).__name__}")
        super().__init__(optimizer, strategy)
        for option in ("use_local_sgd", "use_dist_fc"):
            if getattr(strategy, option):
                raise NotImplementedError(
                    f"DistributedStrategy.{option} is not supported by fluidcompat's collective fleet; "
                    "leave it False (gradients are averaged over the workers every step)"
                )

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        from fluidcompat import optimizer as optim
        from fluidcompat.contrib import mixed_precision

        strategy, opt = self._strategy, self._optimizer
        wrapped = type(opt).__name__ in ("RecomputeOptimizer", "OptimizerWithMixedPrecision")
        if strategy.forward_recompute:
            if not strategy.recompute_checkpoints:
                raise ValueError(
                    "please set strategy.recompute_checkpoints when set strategy.forward_recompute as True"
                )
            if wrapped:
                raise ValueError(f"forward_recompute can not be used with {type(opt).__name__}")
            opt = optim.RecomputeOptimizer(opt)
            opt._set_checkpoints(strategy.recompute_checkpoints)
        if strategy.use_amp:
            if type(opt).__name__ == "OptimizerWithMixedPrecision":
                raise ValueError(f"mixed_precision can not be used with {type(opt).__name__}")
            opt = mixed_precision.decorate(
                opt, init_loss_scaling=strategy.amp_loss_scaling, use_dynamic_loss_scaling=True
            )
        self._optimizer = opt
        main_program = loss.block.program
        startup_program = default_startup_program() if startup_program is None else startup_program
        result = opt.minimize(
            loss, startup_program=startup_program, parameter_list=parameter_list, no_grad_set=no_grad_set
        )
        fleet.startup_program = startup_program
        fleet._origin_program = main_program.clone(for_test=False)
        fleet.main_program = CompiledProgram(main_program).with_data_parallel(
            loss_name=loss.name, build_strategy=strategy, exec_strategy=strategy.exec_strategy
        )
        return result


fleet = Collective()
