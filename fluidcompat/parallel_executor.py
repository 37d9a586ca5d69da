"""``fluid.ParallelExecutor``: fluid 1.8's older data-parallel runner, as an Executor over a
CompiledProgram ``with_data_parallel`` (the places of one process one after the other, see
executor/data_parallel.py; ``num_trainers`` > 1: the workers
of `fluidcompat launch`, gradients all-reduced between them)."""

from __future__ import annotations

__all__ = ["ParallelExecutor"]


class ParallelExecutor:
    """Runs ``main_program`` (default: the default main program) with ``run(fetch_list, feed)``; on
    ``CUDAPlace(0)`` when ``use_cuda``, else the CPU; ``scope`` defaults to the global scope."""

    def __init__(
        self,
        use_cuda,
        loss_name=None,
        main_program=None,
        share_vars_from=None,
        exec_strategy=None,
        build_strategy=None,
        num_trainers=1,
        trainer_id=0,
        scope=None,
    ):
        from fluidcompat import framework, places, process_group
        from fluidcompat.executor.executor import CompiledProgram, Executor
        from fluidcompat.executor.scope import global_scope

        if num_trainers != 1:
            world, rank = process_group.get_world_size(), process_group.get_rank()
            if (num_trainers, trainer_id) != (world, rank):
                raise RuntimeError(
                    f"ParallelExecutor(num_trainers={num_trainers}, trainer_id={trainer_id}) in a process that is "
                    f"worker {rank} of {world}: start the trainers with "
                    f"`fluidcompat launch --nproc_per_node {num_trainers}` (each is then its own trainer_id)"
                )
        self._place = places.CUDAPlace(0) if use_cuda else places.CPUPlace()
        self._scope = scope if scope is not None else global_scope()
        program = main_program if main_program is not None else framework.default_main_program()
        self._compiled = CompiledProgram(program).with_data_parallel(
            loss_name=loss_name,
            build_strategy=build_strategy,
            exec_strategy=exec_strategy,
            share_vars_from=share_vars_from._compiled if share_vars_from is not None else None,
        )
        self._exe = Executor(self._place)

    @property
    def device_count(self) -> int:
        """The places the batch is split across (CPU_NUM on the CPU; see data_parallel.py)."""
        from fluidcompat.executor import data_parallel

        return data_parallel.device_count(self._compiled, self._place)

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """``exe.run`` of the compiled program: ``feed`` (or the older ``feed_dict``), ``fetch_list``."""
        if feed is None and feed_dict is not None:
            feed = feed_dict
        return self._exe.run(
            program=self._compiled, feed=feed, fetch_list=fetch_list, scope=self._scope, return_numpy=return_numpy
        )

    def drop_local_exe_scopes(self) -> None:
        """Nothing to drop: one scope, freed temporaries after each run."""
