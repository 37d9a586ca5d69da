"""The parameter-server fleet's strategies, as fluid 1.8's: each sets the DistributeTranspilerConfig
the job is built with (``get_program_config``), the trainer's communicator flags
(``TrainerRuntimeConfig``), the servers' RPC settings (``ServerRuntimeConfig``) and the
Build/ExecutionStrategy of a compiled trainer program. Every strategy trains through the
communicator (fluidcompat/communicator.py): SyncStrategy (the servers average the trainers'
gradients each step), HalfAsyncStrategy (a trainer sends each step, the servers apply each gradient
as it arrives), AsyncStrategy (a trainer's gradients are sent and its parameters received on the
communicator's threads) and GeoStrategy (GEO-SGD: the trainers run their optimizers and exchange
their parameters' changes every ``update_frequency`` steps)."""

from __future__ import annotations

import os

from fluidcompat.executor.executor import BuildStrategy, ExecutionStrategy
from fluidcompat.transpiler.distribute_transpiler import (
    DistributedMode,
    DistributeTranspilerConfig,
    ServerRuntimeConfig,
)

__all__ = [
    "TrainerRuntimeConfig", "DistributedStrategy", "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy",
    "GeoStrategy", "StrategyFactory",
]  # fmt: skip

# flag -> its default (None: CPU_NUM), each overridden by the environment's FLAGS_<flag>
_RUNTIME_FLAGS = {
    "communicator_max_merge_var_num": None,
    "communicator_send_queue_size": None,
    "communicator_independent_recv_thread": "1",
    "communicator_min_send_grad_num_before_recv": None,
    "communicator_thread_pool_size": "5",
    "communicator_send_wait_times": "5",
    "communicator_is_sgd_optimizer": "1",
    "rpc_deadline": "180000",  # (kept, as fluid did; the RPC client reads FLAGS_rpc_deadline)
    "rpc_retry_times": "3",
}
# the flags each mode's communicator reads (None: every flag)
_MODE_FLAGS = {
    None: None,
    DistributedMode.ASYNC: None,
    DistributedMode.SYNC: ("communicator_max_merge_var_num", "communicator_send_wait_times",
                           "communicator_thread_pool_size", "communicator_send_queue_size"),
    DistributedMode.HALF_ASYNC: ("communicator_max_merge_var_num", "communicator_send_wait_times",
                                 "communicator_thread_pool_size", "communicator_send_queue_size"),
    DistributedMode.GEO: ("communicator_thread_pool_size", "communicator_send_wait_times"),
}  # fmt: skip


class TrainerRuntimeConfig:
    """The trainer's communicator flags (``runtime_configs``, strings); ``mode`` the strategy's."""

    def __init__(self) -> None:
        self.mode = None
        threads = os.getenv("CPU_NUM", "1")
        self.runtime_configs = {
            key: os.getenv("FLAGS_" + key, threads if default is None else default)
            for key, default in _RUNTIME_FLAGS.items()
        }

    def get_communicator_flags(self) -> dict:
        """The flags this mode's communicator reads. In SYNC and HALF_ASYNC modes the merge count
        and the send queue are one step's gradients: both are CPU_NUM (a different value is
        replaced, with a warning, as fluid did)."""
        if self.mode not in _MODE_FLAGS:
            raise ValueError(f"Unsupported Mode: {self.mode!r} (one of DistributedMode's)")
        keys = _MODE_FLAGS[self.mode] or list(self.runtime_configs)
        if self.mode in (DistributedMode.SYNC, DistributedMode.HALF_ASYNC):
            threads = os.getenv("CPU_NUM", "1")
            what = "sync or half_async"
            for key in ("communicator_max_merge_var_num", "communicator_send_queue_size"):
                if self.runtime_configs[key] != threads:
                    print(
                        f"WARNING: In {what} mode, {key} must be equal to CPU_NUM. But received, {key} = "
                        f"{self.runtime_configs[key]}, CPU_NUM = {threads}. {key} will be fored to {threads}."
                    )
                    self.runtime_configs[key] = threads
        return {key: str(self.runtime_configs[key]) for key in keys}

    def display(self, configs) -> str:
        rule = "=" * 50
        lines = [rule, "{:^45s}{:<5s}".format("TrainerRuntimeConfig Overview", "Value"), "-" * 50]
        lines += ["{:<45s}{:<5s}".format(k, v) for k, v in configs.items()]
        return "\n" + "\n".join(lines + [rule]) + "\n"

    def __repr__(self) -> str:
        return self.display(self.get_communicator_flags())


def _update(target, config, cls, what: str):
    """``target`` replaced by ``config`` (a ``cls``), or updated from a dict of its attributes."""
    if isinstance(config, cls):
        return config
    if isinstance(config, dict):
        for key, value in config.items():
            if not hasattr(target, key):
                raise ValueError(f"{cls.__name__} doesn't have key: {key}")
            setattr(target, key, value)
        return target
    raise TypeError(f"{what} only accept input type: dict or {cls.__name__}. Received: {type(config).__name__}")


class DistributedStrategy:
    """What a strategy holds; made by StrategyFactory (the subclasses fix what their mode needs
    whenever a part is set)."""

    def __init__(self) -> None:
        self._program_config = DistributeTranspilerConfig()
        self._trainer_runtime_config = TrainerRuntimeConfig()
        self._server_runtime_config = ServerRuntimeConfig()
        threads = int(os.getenv("CPU_NUM", "1"))
        self._execute_strategy = ExecutionStrategy()
        self._build_strategy = BuildStrategy()
        self._execute_strategy.num_threads = threads
        if threads > 1:
            self._build_strategy.reduce_strategy = BuildStrategy.ReduceStrategy.Reduce
        self.debug_opt = None

    def _check_all(self) -> None:
        self.check_program_config()
        self.check_trainer_runtime_config()
        self.check_server_runtime_config()
        self.check_build_strategy()
        self.check_execute_strategy()

    def set_debug_opt(self, opt_info) -> None:
        self.debug_opt = opt_info

    def get_debug_opt(self) -> dict:
        """The dump settings (``dump_slot``, ``dump_converter``, ``dump_fields``, ``dump_file_num``,
        ``dump_fields_path``, ``dump_param``) the trainer program carries, with their defaults."""
        opt = self.debug_opt
        if not isinstance(opt, dict):
            return {}
        return {
            "dump_slot": bool(opt.get("dump_slot", 0)),
            "dump_converter": str(opt.get("dump_converter", "")),
            "dump_fields": opt.get("dump_fields", []),
            "dump_file_num": opt.get("dump_file_num", 16),
            "dump_fields_path": opt.get("dump_fields_path", ""),
            "dump_param": opt.get("dump_param", []),
        }

    def _must_derive(self, what: str):
        raise NotImplementedError(
            f"{what} must be implemented by derived class. You should use StrategyFactory to create "
            "DistributedStrategy."
        )

    def get_program_config(self) -> DistributeTranspilerConfig:
        return self._program_config

    def set_program_config(self, config) -> None:
        self._program_config = _update(self._program_config, config, DistributeTranspilerConfig, "program_config")
        self.check_program_config()

    def check_program_config(self) -> None:
        self._must_derive("check_program_config")

    def get_trainer_runtime_config(self) -> TrainerRuntimeConfig:
        return self._trainer_runtime_config

    def set_trainer_runtime_config(self, config) -> None:
        if isinstance(config, TrainerRuntimeConfig):
            self._trainer_runtime_config = config
        elif isinstance(config, dict):
            configs = self._trainer_runtime_config.runtime_configs
            for key, value in config.items():
                if key not in configs:
                    raise ValueError(f"TrainerRuntimeConfig doesn't have key: {key}")
                configs[key] = value
        else:
            raise TypeError(
                "trainer_runtime_config only accept input type: dict or TrainerRuntimeConfig. Received: "
                f"{type(config).__name__}"
            )
        self.check_trainer_runtime_config()

    def check_trainer_runtime_config(self) -> None:
        self._must_derive("check_trainer_runtime_config")

    def get_server_runtime_config(self) -> ServerRuntimeConfig:
        return self._server_runtime_config

    def set_server_runtime_config(self, config) -> None:
        self._server_runtime_config = _update(
            self._server_runtime_config, config, ServerRuntimeConfig, "server_runtime_config"
        )
        self.check_server_runtime_config()

    def check_server_runtime_config(self) -> None:
        self._must_derive("check_server_runtime_config")

    def get_execute_strategy(self) -> ExecutionStrategy:
        return self._execute_strategy

    def set_execute_strategy(self, config) -> None:
        self._execute_strategy = _update(self._execute_strategy, config, ExecutionStrategy, "execute_strategy")
        self.check_execute_strategy()

    def check_execute_strategy(self) -> None:
        self._must_derive("check_execute_strategy")

    def get_build_strategy(self) -> BuildStrategy:
        return self._build_strategy

    def set_build_strategy(self, config) -> None:
        self._build_strategy = _update(self._build_strategy, config, BuildStrategy, "build_strategy")
        self.check_build_strategy()

    def check_build_strategy(self) -> None:
        self._must_derive("check_build_strategy")


class _CommunicatorStrategy(DistributedStrategy):
    """A strategy of one communicator mode: the program config runs it (``sync_mode`` off, the
    communicator cutting the variables) and the build strategy is asynchronous."""

    _mode = DistributedMode.ASYNC
    _half_async = False
    _completely_not_async = False
    _thread_barrier = False

    def __init__(self) -> None:
        super().__init__()
        self._check_all()

    def check_program_config(self) -> None:
        config = self._program_config
        config.sync_mode = False
        config.runtime_split_send_recv = True
        if self._half_async:
            config.half_async = True
        if self._completely_not_async:
            config.completely_not_async = True

    def check_trainer_runtime_config(self) -> None:
        self._trainer_runtime_config.mode = self._mode

    def check_server_runtime_config(self) -> None:
        pass

    def check_execute_strategy(self) -> None:
        if self._thread_barrier:
            self._execute_strategy.use_thread_barrier = True

    def check_build_strategy(self) -> None:
        self._build_strategy.async_mode = True


class SyncStrategy(_CommunicatorStrategy):
    _mode = DistributedMode.SYNC
    _half_async = True
    _completely_not_async = True
    _thread_barrier = True


class AsyncStrategy(_CommunicatorStrategy):
    _mode = DistributedMode.ASYNC


class HalfAsyncStrategy(_CommunicatorStrategy):
    _mode = DistributedMode.HALF_ASYNC
    _half_async = True
    _thread_barrier = True


class GeoStrategy(_CommunicatorStrategy):
    """GEO-SGD: the parameters' changes are exchanged every ``update_frequency`` steps."""

    _mode = DistributedMode.GEO

    def __init__(self, update_frequency=100) -> None:
        self._update_frequency = update_frequency
        super().__init__()

    def check_program_config(self) -> None:
        super().check_program_config()
        self._program_config.geo_sgd_mode = True
        if getattr(self, "_update_frequency", None) is not None:
            self._program_config.geo_sgd_need_push_nums = self._update_frequency
            self._update_frequency = None  # set once: a program config set later keeps its own


class StrategyFactory:
    @staticmethod
    def create_sync_strategy() -> SyncStrategy:
        return SyncStrategy()

    @staticmethod
    def create_half_async_strategy() -> HalfAsyncStrategy:
        return HalfAsyncStrategy()

    @staticmethod
    def create_async_strategy() -> AsyncStrategy:
        return AsyncStrategy()

    @staticmethod
    def create_geo_strategy(update_frequency=100) -> GeoStrategy:
        return GeoStrategy(update_frequency)
