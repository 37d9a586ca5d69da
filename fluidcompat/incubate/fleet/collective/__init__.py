"""``fluid.incubate.fleet.collective``: data-parallel training over the workers ``fluidcompat
launch`` starts, as fluid 1.8's collective fleet: ``fleet.init(role)``, ``fleet.distributed_optimizer
(opt, strategy).minimize(loss)``, then ``exe.run(fleet.startup_program)`` and
``exe.run(fleet.main_program, feed=this worker's share)``; gradients are averaged over the workers
and every worker starts from worker 0's parameters. ``fleet.save_check_point`` / ``load_check_point``
keep the trained program's persistables and a ``TrainStatus`` (the last epoch done) in numbered
``__paddle_fleet_checkpoint__.N`` directories of a file system (paddle.distributed.fs_wrapper)."""

from __future__ import annotations

import json
import logging
import os

from fluidcompat import io
from fluidcompat.compat.fs_wrapper import LocalFS
from fluidcompat.executor.executor import BuildStrategy, CompiledProgram, ExecutionStrategy
from fluidcompat.framework import default_startup_program
from fluidcompat.incubate.fleet.base.fleet_base import DistributedOptimizer, Fleet, Mode

__all__ = ["fleet", "Collective", "DistributedStrategy", "CollectiveOptimizer", "TrainStatus"]

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


class TrainStatus:
    """Where training is: the number of the last epoch done (-1: none)."""

    def __init__(self, epoch_no=-1) -> None:
        self._epoch_no = epoch_no

    def next(self) -> int:
        """The epoch to run next."""
        return self._epoch_no + 1

    def __eq__(self, other) -> bool:
        return isinstance(other, TrainStatus) and self._epoch_no == other._epoch_no

    def __ne__(self, other) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"TrainStatus(epoch_no={self._epoch_no})"


_CHECKPOINT = "__paddle_fleet_checkpoint__"
_PARAMS_FILE = "_paddle_fleet_param__"
_STATUS_FILE = "fleet_train_status"


class Collective(Fleet):
    def __init__(self) -> None:
        super().__init__(Mode.COLLECTIVE)
        self.startup_program = None
        self.main_program = None
        self._transpiled_program = None  # the program trained (checkpoints save its persistables)
        self._checkoint_prefix = _CHECKPOINT
        self._param_file_name = _PARAMS_FILE

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

    # -- checkpoints --------------------------------------------------------------------------------
    def _checkpoint_numbers(self, root_path, fs) -> list:
        numbers = []
        for name in fs.list_dirs(root_path):
            prefix, dot, number = name.partition(".")
            if dot and prefix == self._checkoint_prefix and number.isdigit():
                numbers.append(int(number))
        return numbers

    def _get_last_checkpoint_no(self, root_path, fs=None) -> int:
        """The number of the last checkpoint in ``root_path`` (-1: none)."""
        return max(self._checkpoint_numbers(root_path, fs or LocalFS()), default=-1)

    def _save_train_status(self, path, train_status) -> None:
        with open(os.path.join(path, _STATUS_FILE), "w") as f:
            json.dump({"epoch_no": train_status._epoch_no}, f)

    def _load_train_status(self, path) -> TrainStatus:
        name = os.path.join(path, _STATUS_FILE)
        status = TrainStatus()
        if not os.path.isfile(name):
            return status
        with open(name) as f:
            d = json.load(f)
        if not isinstance(d, dict) or not isinstance(d.get("epoch_no"), int) or d["epoch_no"] < 0:
            raise ValueError(f"{name} is not a valid train status: expected {{'epoch_no': int >= 0}}. Received: {d}")
        status._epoch_no = d["epoch_no"]
        return status

    def clean_redundant_check_points(self, root_path, fs=None, checkpoint_num=1) -> None:
        """Remove all but the last ``checkpoint_num`` (at least 1) checkpoints of ``root_path``."""
        fs = fs or LocalFS()
        last = self._get_last_checkpoint_no(root_path, fs)
        keep = max(1, checkpoint_num)
        for n in self._checkpoint_numbers(root_path, fs):
            if n <= last - keep:
                fs.rmr(f"{root_path}/{self._checkoint_prefix}.{n}")

    def save_check_point(self, executor, path, train_status, main_program=None, fs=None, local_cache_path=".cache",
                         remain_all_checkpoint=True):  # fmt: skip
        """The program's persistables (one file) and ``train_status`` as the next checkpoint of
        ``path`` (written under a temporary name, then renamed; through ``local_cache_path`` for a
        remote file system)."""
        if not isinstance(train_status, TrainStatus):
            raise TypeError(f"train_status must be a TrainStatus. Received: {type(train_status).__name__}")
        fs = fs or LocalFS()
        main_program = self._transpiled_program if main_program is None else main_program
        if not fs.stat(path):
            fs.mkdir(path)
        number = self._get_last_checkpoint_no(path, fs) + 1
        real_path = f"{path}/{self._checkoint_prefix}.{number}"
        tmp_path = f"{real_path}.tmp"
        saved_path = tmp_path
        if fs.need_upload_download():
            saved_path = f"{local_cache_path}/{self._checkoint_prefix}.{number}.saved_cache"
            LocalFS().mkdir(saved_path)
        self.save_persistables(executor, saved_path, main_program, filename=self._param_file_name)
        self._save_train_status(saved_path, train_status)
        if fs.need_upload_download():
            fs.delete(tmp_path)
            fs.upload(saved_path, tmp_path)
        fs.mv(tmp_path, real_path)
        if not remain_all_checkpoint:
            self.clean_redundant_check_points(path, fs)

    def load_check_point(self, executor, path, trainer_id, main_program=None, fs=None, local_cache_path=".cache",
                         ignore_empty=True):  # fmt: skip
        """Load the last checkpoint of ``path`` into the program's persistables; its TrainStatus
        (None when there is none and ``ignore_empty``)."""
        fs = fs or LocalFS()
        last = self._get_last_checkpoint_no(path, fs)
        if last < 0:
            if not ignore_empty:
                raise ValueError(f"Can't find checkpoint: {path} holds no {self._checkoint_prefix}.N directory")
            return None
        real_path = f"{path}/{self._checkoint_prefix}.{last}"
        load_path = real_path
        if fs.need_upload_download():
            load_path = f"{local_cache_path}/{self._checkoint_prefix}.{last}.load_cache.{trainer_id}"
            LocalFS().delete(load_path)
            fs.download(real_path, load_path)
        main_program = self._transpiled_program if main_program is None else main_program
        if main_program is None:
            raise ValueError("load_check_point: no program to load into (call minimize first, or pass main_program)")
        io.load_persistables(executor, load_path, main_program, filename=self._param_file_name)
        return self._load_train_status(load_path)


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
        fleet._transpiled_program = main_program
        fleet.main_program = CompiledProgram(main_program).with_data_parallel(
            loss_name=loss.name, build_strategy=strategy, exec_strategy=strategy.exec_strategy
        )
        return result


fleet = Collective()
