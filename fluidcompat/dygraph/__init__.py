"""``fluid.dygraph``: imperative mode, each op run as it is called, on torch eager."""

from fluidcompat import optimizer as _optimizer
from fluidcompat.dygraph import base, checkpoint, container, jit, layers, learning_rate_scheduler, nn, parallel
from fluidcompat.dygraph.backward_strategy import BackwardStrategy
from fluidcompat.dygraph.base import (
    disable_dygraph,
    disable_imperative,
    enable_dygraph,
    enable_imperative,
    enabled,
    grad,
    guard,
    no_grad,
    to_variable,
)
from fluidcompat.dygraph.checkpoint import load_dygraph, save_dygraph
from fluidcompat.dygraph.container import LayerList, ParameterList, Sequential
from fluidcompat.dygraph.jit import ProgramTranslator, TracedLayer, declarative, dygraph_to_static_func
from fluidcompat.dygraph.layers import Layer
from fluidcompat.dygraph.learning_rate_scheduler import (
    CosineDecay,
    ExponentialDecay,
    InverseTimeDecay,
    LambdaDecay,
    LinearLrWarmup,
    MultiStepDecay,
    NaturalExpDecay,
    NoamDecay,
    PiecewiseDecay,
    PolynomialDecay,
    ReduceLROnPlateau,
    StepDecay,
)
from fluidcompat.dygraph.nn import (
    NCE,
    BatchNorm,
    BCELoss,
    BilinearTensorProduct,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Dropout,
    Embedding,
    GroupNorm,
    GRUUnit,
    InstanceNorm,
    L1Loss,
    LayerNorm,
    Linear,
    MSELoss,
    NLLLoss,
    Pool2D,
    PRelu,
    SpectralNorm,
    TreeConv,
)
from fluidcompat.dygraph.parallel import DataParallel, ParallelEnv, prepare_context
from fluidcompat.dygraph.varbase import ParamBase, VarBase

__all__ = [
    "base",
    "checkpoint",
    "container",
    "layers",
    "nn",
    "learning_rate_scheduler",
    "parallel",
    "jit",
    "TracedLayer",
    "ProgramTranslator",
    "declarative",
    "dygraph_to_static_func",
    "BackwardStrategy",
    "BCELoss",
    "BilinearTensorProduct",
    "Conv3D",
    "Conv3DTranspose",
    "DataParallel",
    "GRUUnit",
    "NLLLoss",
    "NCE",
    "TreeConv",
    "ParallelEnv",
    "SpectralNorm",
    "prepare_context",
    "CosineDecay",
    "ExponentialDecay",
    "InverseTimeDecay",
    "LambdaDecay",
    "LinearLrWarmup",
    "MultiStepDecay",
    "NaturalExpDecay",
    "NoamDecay",
    "PiecewiseDecay",
    "PolynomialDecay",
    "ReduceLROnPlateau",
    "StepDecay",
    "BatchNorm",
    "Conv2D",
    "Conv2DTranspose",
    "Dropout",
    "Embedding",
    "GroupNorm",
    "InstanceNorm",
    "L1Loss",
    "Layer",
    "LayerList",
    "LayerNorm",
    "Linear",
    "MSELoss",
    "ParamBase",
    "ParameterList",
    "Pool2D",
    "PRelu",
    "Sequential",
    "VarBase",
    "load_dygraph",
    "save_dygraph",
    "disable_dygraph",
    "disable_imperative",
    "enable_dygraph",
    "enable_imperative",
    "enabled",
    "grad",
    "guard",
    "no_grad",
    "to_variable",
]


# the optimizers' dygraph mode and learning-rate schedules (they sit below: docs/architecture.md, the hooks)
_optimizer.dygraph_base, _optimizer.dygraph_schedules = base, learning_rate_scheduler


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.dygraph")(name)
