"""``fluid.transpiler``: DistributeTranspiler (parameter-server mode) and its dispatchers."""

from fluidcompat.flags import memory_optimize, release_memory
from fluidcompat.transpiler.distribute_transpiler import DistributeTranspiler, DistributeTranspilerConfig
from fluidcompat.transpiler.ps_dispatcher import HashName, RoundRobin

__all__ = [
    "DistributeTranspiler",
    "memory_optimize",
    "release_memory",
    "HashName",
    "RoundRobin",
    "DistributeTranspilerConfig",
]
