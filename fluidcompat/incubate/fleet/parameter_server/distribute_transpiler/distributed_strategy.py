"""The parameter-server fleet's strategies: which DistributeTranspilerConfig the job is built with.
Synchronous (the trainers' gradients averaged on the servers each step) and asynchronous (each
gradient applied as it arrives) run; fluid 1.8's half-asynchronous and GEO-SGD communicators are
refused with a message."""

from __future__ import annotations

from fluidcompat.transpiler.distribute_transpiler import DistributeTranspilerConfig

__all__ = [
    "DistributedStrategy", "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy", "StrategyFactory",
]  # fmt: skip


class DistributedStrategy:
    """A DistributeTranspilerConfig (``get_program_config``) and the runtime settings fluid's
    communicator read (kept, not used: fluidcompat's trainers send and receive in their program)."""

    _sync = True

    def __init__(self) -> None:
        self._program_config = DistributeTranspilerConfig()
        self._program_config.sync_mode = self._sync
        self._trainer_runtime_config = {}
        self._server_runtime_config = {}
        self._execute_strategy = None
        self._build_strategy = None
        self._debug_opt = None

    def get_program_config(self) -> DistributeTranspilerConfig:
        return self._program_config

    def set_program_config(self, config) -> None:
        if isinstance(config, DistributeTranspilerConfig):
            self._program_config = config
        elif isinstance(config, dict):
            for key, value in config.items():
                if not hasattr(self._program_config, key):
                    raise ValueError(f"DistributeTranspilerConfig doesn't have key: {key}")
                setattr(self._program_config, key, value)
        else:
            raise TypeError(
                f"program_config only accept input type: dict or DistributeTranspilerConfig. Received: "
                f"{type(config).__name__}"
            )

    def get_trainer_runtime_config(self):
        return self._trainer_runtime_config

    def set_trainer_runtime_config(self, config) -> None:
        self._trainer_runtime_config = config

    def get_server_runtime_config(self):
        return self._server_runtime_config

    def set_server_runtime_config(self, config) -> None:
        self._server_runtime_config = config

    def get_debug_opt(self):
        return self._debug_opt or {}

    def set_debug_opt(self, opt_info) -> None:
        self._debug_opt = opt_info


class SyncStrategy(DistributedStrategy):
    _sync = True


class AsyncStrategy(DistributedStrategy):
    _sync = False


class _Refused(DistributedStrategy):
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            f"{type(self).__name__}: fluid 1.8's {self._what} communicator is not supported by fluidcompat; use "
            "StrategyFactory.create_sync_strategy() or create_async_strategy()"
        )


class HalfAsyncStrategy(_Refused):
    _what = "half-asynchronous"


class GeoStrategy(_Refused):
    _what = "GEO-SGD"


class StrategyFactory:
    @staticmethod
    def create_sync_strategy() -> SyncStrategy:
        return SyncStrategy()

    @staticmethod
    def create_async_strategy() -> AsyncStrategy:
        return AsyncStrategy()

    @staticmethod
    def create_half_async_strategy():
        return HalfAsyncStrategy()

    @staticmethod
    def create_geo_strategy(update_frequency=100):
        return GeoStrategy(update_frequency)
