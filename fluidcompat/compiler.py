"""``fluid.compiler``: CompiledProgram, BuildStrategy, ExecutionStrategy."""

from fluidcompat.executor.executor import BuildStrategy, CompiledProgram, ExecutionStrategy

__all__ = ["BuildStrategy", "CompiledProgram", "ExecutionStrategy"]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.compiler")(name)
