"""``fluid.core``: the names scripts reach for in fluid's C++ module."""

from fluidcompat.dtypes import VarType
from fluidcompat.executor.interpreter import EnforceNotMet
from fluidcompat.executor.scope import LoDTensor, Scope, ScopeVariable, Tensor
from fluidcompat.inference import (
    AnalysisConfig,
    AnalysisPredictor,
    NativeConfig,
    NativePaddlePredictor,
    PaddleBuf,
    PaddleDType,
    PaddlePredictor,
    PaddleTensor,
    ZeroCopyTensor,
    create_paddle_predictor,
)
from fluidcompat.places import (
    CPUPlace,
    CUDAPinnedPlace,
    CUDAPlace,
    Place,
    cuda_device_count,
    is_compiled_with_cuda,
)
from fluidcompat_ops.python import EOFException


class VarDesc:
    """Holds ``VarDesc.VarType`` as ``core.VarDesc.VarType.FP32`` spells it."""

    VarType = VarType


def get_cuda_device_count() -> int:
    return cuda_device_count()


def is_compiled_with_mkldnn() -> bool:
    return False


def kGradVarSuffix() -> str:
    return "@GRAD"


_Scope = Scope
Variable = ScopeVariable

__all__ = [
    "AnalysisConfig",
    "AnalysisPredictor",
    "NativeConfig",
    "NativePaddlePredictor",
    "PaddleBuf",
    "PaddleDType",
    "PaddlePredictor",
    "PaddleTensor",
    "ZeroCopyTensor",
    "create_paddle_predictor",
    "CPUPlace",
    "CUDAPinnedPlace",
    "CUDAPlace",
    "EnforceNotMet",
    "EOFException",
    "LoDTensor",
    "Place",
    "Scope",
    "Tensor",
    "VarDesc",
    "get_cuda_device_count",
    "is_compiled_with_cuda",
    "is_compiled_with_mkldnn",
]
