"""``fluid.compiler``: CompiledProgram, BuildStrategy, ExecutionStrategy."""

from fluidcompat.executor.executor import BuildStrategy, CompiledProgram, ExecutionStrategy

__all__ = ["BuildStrategy", "CompiledProgram", "ExecutionStrategy"]
