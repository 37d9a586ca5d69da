"""fluidcompat: legacy PaddlePaddle fluid 1.x static-graph scripts on PyTorch.

This package is ``paddle.fluid`` for scripts run with ``fluidcompat run``. Building programs
imports no torch; the executor and ``core`` are imported on first use.
"""

import importlib

from fluidcompat import (
    backward,
    clip,
    dtypes,
    framework,
    initializer,
    layers,
    optimizer,
    param_attr,
    places,
    regularizer,
    unique_name,
)
from fluidcompat.backward import append_backward, gradients
from fluidcompat.executor.explain import placement_report
from fluidcompat.flags import get_flags, memory_optimize, release_memory, require_version, set_flags
from fluidcompat.framework import (
    Block,
    Operator,
    Parameter,
    Program,
    Variable,
    default_main_program,
    default_startup_program,
    in_dygraph_mode,
    name_scope,
    program_guard,
)
from fluidcompat.heap import keep_freed_memory as _keep_freed_memory
from fluidcompat.layers.io import fluid_data as data
from fluidcompat.layers.nn import embedding_v2 as embedding
from fluidcompat.layers.nn import one_hot_v2 as one_hot
from fluidcompat.param_attr import ParamAttr, WeightNormParamAttr
from fluidcompat.places import (
    CPUPlace,
    CUDAPinnedPlace,
    CUDAPlace,
    cpu_places,
    cuda_pinned_places,
    cuda_places,
    device_guard,
    is_compiled_with_cuda,
)

__version__ = "0.1.0"


_LAZY_ATTRS = {
    "Executor": "fluidcompat.executor.executor",
    "CompiledProgram": "fluidcompat.compiler",
    "BuildStrategy": "fluidcompat.compiler",
    "ExecutionStrategy": "fluidcompat.compiler",
    "Scope": "fluidcompat.executor.scope",
    "DataFeedDesc": "fluidcompat.data_feed_desc",
    "DatasetFactory": "fluidcompat.fluid_dataset",
    "InMemoryDataset": "fluidcompat.fluid_dataset",
    "QueueDataset": "fluidcompat.fluid_dataset",
    "LoDTensor": "fluidcompat.executor.scope",
    "Tensor": "fluidcompat.executor.scope",
    "global_scope": "fluidcompat.executor.scope",
    "scope_guard": "fluidcompat.executor.scope",
    "save": "fluidcompat.io",
    "load": "fluidcompat.io",
    "DataFeeder": "fluidcompat.data_feeder",
    "create_lod_tensor": "fluidcompat.lod_tensor",
    "create_random_int_lodtensor": "fluidcompat.lod_tensor",
    "LoDTensorArray": "fluidcompat.lod_tensor",
    "ComplexVariable": "fluidcompat.complex_variable",
    "ParallelExecutor": "fluidcompat.parallel_executor",
    "enable_dygraph": "fluidcompat.dygraph.base",
    "save_dygraph": "fluidcompat.dygraph.checkpoint",
    "load_dygraph": "fluidcompat.dygraph.checkpoint",
    "disable_dygraph": "fluidcompat.dygraph.base",
    "enable_imperative": "fluidcompat.dygraph.base",
    "disable_imperative": "fluidcompat.dygraph.base",
    "DistributeTranspiler": "fluidcompat.transpiler",
    "DistributeTranspilerConfig": "fluidcompat.transpiler",
    "load_program_state": "fluidcompat.io",
    "set_program_state": "fluidcompat.io",
}
# fluid 1.8 also published its dygraph layers at the top (``fluid.Linear``, ``fluid.Layer``, ...).
_LAZY_ATTRS.update(
    (name, "fluidcompat.dygraph")
    for name in (
        "BCELoss BatchNorm BilinearTensorProduct Conv2D Conv2DTranspose Conv3D Conv3DTranspose Dropout Embedding "
        "GRUUnit GroupNorm InstanceNorm L1Loss Layer LayerNorm Linear MSELoss NCE NLLLoss PRelu Pool2D SpectralNorm "
        "TreeConv"
    ).split()
)
_LAZY_MODULES = {
    "average",
    "input",
    "contrib",
    "core",
    "dygraph",
    "compiler",
    "executor",
    "io",
    "metrics",
    "nets",
    "data_feeder",
    "install_check",
    "reader",
    "transpiler",
}

__all__ = [
    "append_backward",
    "disable_dygraph",
    "disable_imperative",
    "get_flags",
    "memory_optimize",
    "release_memory",
    "require_version",
    "set_flags",
    "placement_report",
    "backward",
    "clip",
    "gradients",
    "optimizer",
    "regularizer",
    "Block",
    "BuildStrategy",
    "CPUPlace",
    "CUDAPinnedPlace",
    "CUDAPlace",
    "CompiledProgram",
    "ExecutionStrategy",
    "Executor",
    "LoDTensor",
    "Operator",
    "ParamAttr",
    "Parameter",
    "Program",
    "Scope",
    "Tensor",
    "Variable",
    "WeightNormParamAttr",
    "core",
    "compiler",
    "cpu_places",
    "cuda_pinned_places",
    "cuda_places",
    "data",
    "default_main_program",
    "default_startup_program",
    "device_guard",
    "dtypes",
    "embedding",
    "executor",
    "framework",
    "global_scope",
    "in_dygraph_mode",
    "initializer",
    "is_compiled_with_cuda",
    "layers",
    "name_scope",
    "one_hot",
    "param_attr",
    "places",
    "program_guard",
    "scope_guard",
    "unique_name",
]


def __dir__():
    """The module's names with those loaded on first use (``dir(fluid)``, tab completion)."""
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_ATTRS) | {"dataset"})


def __getattr__(name):
    if name in _LAZY_MODULES:
        return importlib.import_module(f"fluidcompat.{name}")
    if name == "dataset":  # fluid.dataset is the slot-file datasets; paddle.dataset the downloads
        return importlib.import_module("fluidcompat.fluid_dataset")
    if name in ("data_generator", "fleet"):  # fluid 1.8 imported incubate's packages at top level too
        return importlib.import_module(f"fluidcompat.incubate.{name}")
    module = _LAZY_ATTRS.get(name)
    if module is None:  # a submodule not imported yet (fluid.profiler), or a name fluidcompat lacks
        from fluidcompat.fluid18_names import unsupported

        return unsupported("paddle.fluid")(name)
    return getattr(importlib.import_module(module), name)


_keep_freed_memory()  # (before torch allocates) a step's temporaries reused, as fluid's allocator did
