"""``fluid.compiler``: CompiledProgram (a Program prepared for running, with data parallelism or
not), BuildStrategy and ExecutionStrategy. The Executor runs them (executor/executor.py)."""

from __future__ import annotations

from typing import Dict, Optional

from fluidcompat.executor.scope import Scope
from fluidcompat.framework import Program

__all__ = ["BuildStrategy", "CompiledProgram", "ExecutionStrategy"]


class BuildStrategy:
    """fluid's options are recorded (fluidcompat's executor has no graph passes to switch). Its own:
    ``use_torch_compile`` (+ ``torch_compile_backend``) and ``use_cuda_graph``, both off by default
    (fluidcompat/executor/accelerate.py)."""

    class ReduceStrategy:
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy:
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self) -> None:
        self.__dict__.update(
            reduce_strategy=0,
            gradient_scale_strategy=0,
            fuse_all_reduce_ops=False,
            fuse_elewise_add_act_ops=False,
            fuse_bn_act_ops=False,
            enable_inplace=False,
            memory_optimize=None,
            enable_sequential_execution=False,
            fuse_all_optimizer_ops=False,
            sync_batch_norm=False,
            debug_graphviz_path="",
            num_trainers=1,
            use_torch_compile=False,
            torch_compile_backend="inductor",
            use_cuda_graph=False,
        )


class ExecutionStrategy:
    """Accepted for compatibility: thread counts and iteration settings are recorded only."""

    def __init__(self) -> None:
        self.num_threads = 0
        self.num_iteration_per_drop_scope = 100
        self.num_iteration_per_run = 1
        self.use_thread_barrier = False


class CompiledProgram:
    """A Program prepared for running. ``with_data_parallel``: in workers started by ``fluidcompat
    launch`` each process runs on its own batch and the gradients are summed over the processes
    (collective mode, fluidcompat/executor/collective.py); in a single process on several places
    (``CPU_NUM``, ``places=``) the batch is split across them (data_parallel.py).
    """

    def __init__(self, program_or_graph: Program, build_strategy: Optional[BuildStrategy] = None) -> None:
        if not isinstance(program_or_graph, Program):
            raise TypeError(
                f"The type of program_to_graph parameter is wrong, expected Graph or Program, but received "
                f"{type(program_or_graph)}"
            )
        self._program = program_or_graph
        self._build_strategy = build_strategy
        self._is_data_parallel = False
        self._loss_name = None
        self._places = None
        self._collective = None  # (program with all-reduce ops, scopes whose parameters were synced)
        self._ran_in: set = set()  # ids of the scopes it has run in
        self._devices: Optional[int] = None  # the places of a data-parallel run, counted on its first run
        self._split = None  # data_parallel.Split
        self._device_scopes: Dict[int, tuple] = {}  # id(scope) -> (scope, [its scope for each device])

    def _device_scopes_in(self, scope, devices: int) -> list:
        """``scope`` for device 0, and a scope of its own below ``scope`` for every other device (kept)."""
        entry = self._device_scopes.get(id(scope))
        if entry is None or entry[0] is not scope or len(entry[1]) != devices:
            entry = self._device_scopes[id(scope)] = (scope, [scope] + [Scope(scope) for _ in range(devices - 1)])
        return entry[1]

    def _first_run_in(self, scope) -> bool:
        """True the first time this is asked for ``scope`` (fluid's parallel executor initialised its
        local variables then: the profiler's ``InitLocalVars``)."""
        if id(scope) in self._ran_in:
            return False
        self._ran_in.add(id(scope))
        return True

    def with_data_parallel(
        self, loss_name=None, build_strategy=None, exec_strategy=None, share_vars_from=None, places=None
    ) -> "CompiledProgram":
        if self._is_data_parallel:
            raise AssertionError("Already compiled with parallel, cannot be recompiled.")
        self._is_data_parallel = True
        if loss_name is None and any(op.type.endswith("_grad") for op in self._program.global_block().ops):
            raise AssertionError(
                "The loss name of CompiledProgram is None. The loss name should be set if CompiledProgram contains "
                "backward part."
            )
        self._loss_name = loss_name
        self._build_strategy = build_strategy or self._build_strategy
        self._exec_strategy = exec_strategy
        self._places = places
        return self

    def _program_for(self, scope) -> Program:
        """The program to run: in a multi-worker job with data parallelism, the collective one (its
        parameters broadcast from rank 0 the first time it runs in ``scope``)."""
        if not self._is_data_parallel or getattr(self._program, "_is_distributed", False):
            return self._program  # a parameter-server trainer program: the servers average its gradients
        from fluidcompat import process_group

        nranks = process_group.get_world_size()
        if nranks < 2:
            return self._program
        from fluidcompat.executor import collective

        if self._collective is None:
            process_group.init_parallel_env()
            strategy = self._build_strategy or BuildStrategy()
            scale = strategy.gradient_scale_strategy == BuildStrategy.GradientScaleStrategy.CoeffNumDevice
            self._collective = (collective.collective_program(self._program, self._loss_name, nranks, scale), set())
        program, synced = self._collective
        if id(scope) not in synced:
            collective.broadcast_parameters(program, scope)
            synced.add(id(scope))
        return program


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.compiler")(name)
