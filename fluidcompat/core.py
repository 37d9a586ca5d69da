"""``fluid.core``: the names scripts reach for in fluid's C++ module."""

from fluidcompat import flags
from fluidcompat.descs import BlockDesc, OpDesc, ProgramDesc, VarDesc
from fluidcompat.dygraph.op_functions import OpFunctions
from fluidcompat.executor.errors import EnforceNotMet
from fluidcompat.executor.scope import LoDTensor, Scope, ScopeVariable, Tensor
from fluidcompat.framework import EMPTY_VAR_NAME, GRAD_VAR_SUFFIX, TEMP_VAR_NAME, OpRole
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
from fluidcompat.lod_tensor import LoDTensorArray
from fluidcompat.places import (
    CPUPlace,
    CUDAPinnedPlace,
    CUDAPlace,
    cuda_device_count,
    is_compiled_with_cuda,
)
from fluidcompat.places import GenericPlace as Place
from fluidcompat.proto import AttrType
from fluidcompat_ops import registry
from fluidcompat_ops.python import EOFException


def get_cuda_device_count() -> int:
    return cuda_device_count()


def is_compiled_with_mkldnn() -> bool:
    return False


def kGradVarSuffix() -> str:
    return GRAD_VAR_SUFFIX


grad_var_suffix = kGradVarSuffix


def kEmptyVarName() -> str:
    return EMPTY_VAR_NAME


def kTempVarName() -> str:
    return TEMP_VAR_NAME


def kZeroVarSuffix() -> str:
    return "@ZERO"


def kNewGradSuffix() -> str:
    return "@NEWGRAD@"


def kControlDepVarName() -> str:
    return "@CONTROL_DEP_VAR@"


class op_proto_and_checker_maker:  # noqa: N801  (fluid's name)
    """The attribute names fluid's op maker adds to every op, and ``OpRole``."""

    OpRole = OpRole

    @staticmethod
    def kOpRoleAttrName() -> str:
        return "op_role"

    @staticmethod
    def kOpRoleVarAttrName() -> str:
        return "op_role_var"

    @staticmethod
    def kOpNameScopeAttrName() -> str:
        return "op_namescope"

    @staticmethod
    def kOpCreationCallstackAttrName() -> str:
        return "op_callstack"

    @staticmethod
    def kOpDeviceAttrName() -> str:
        return "op_device"


class GlobalVarGetterSetterRegistry:
    """``core.globals()``: fluid's global flags by name (read and set)."""

    def keys(self):
        return flags.global_names()

    def __contains__(self, name) -> bool:
        return name in flags.global_names()

    def __getitem__(self, name):
        return flags.get_global(name)

    def __setitem__(self, name, value) -> None:
        flags.set_global(name, value)

    def get(self, name, default=None):
        return self[name] if name in self else default

    def is_public(self, name) -> bool:
        return name in self


_GLOBALS = GlobalVarGetterSetterRegistry()
ops = OpFunctions()  # core.ops.<type>(*inputs, *attrs) in dygraph mode


def globals() -> GlobalVarGetterSetterRegistry:  # noqa: A001  (fluid's name)
    return _GLOBALS


def _set_eager_deletion_mode(threshold: float, fraction: float, fast_mode: bool) -> None:
    """fluid's switch for freeing variables as soon as no op needs them: fluidcompat always does
    (torch frees a tensor with its last reference), so there is nothing to switch."""


def _set_fuse_parameter_group_size(size: int) -> None:
    """fluid fused parameters into groups for all-reduce; fluidcompat's data parallel does not."""


def _set_fuse_parameter_memory_size(size: float) -> None:
    """See ``_set_fuse_parameter_group_size``."""


def set_feed_variable(scope, tensor, var_name: str, index: int) -> None:
    """Put ``tensor`` at ``index`` of the feed list ``var_name`` of ``scope``."""
    array = scope.var(var_name).get_lod_tensor_array()
    while len(array) <= index:
        array.append(LoDTensor())
    array[index] = tensor


def get_fetch_variable(scope, var_name: str, index: int):
    """The tensor at ``index`` of the fetch list ``var_name`` of ``scope``."""
    var = scope.find_var(var_name)
    if var is None:
        raise ValueError(f"Cannot find fetch variable in scope, fetch_var_name is {var_name}")
    array = var.get_lod_tensor_array()
    if index >= len(array):
        raise IndexError(f"index {index} is out of the fetch list of {len(array)} variables")
    return array[index]


def get_op_attrs_default_value(op_type) -> dict:
    """An op type's attributes and their default values."""
    op_type = op_type.decode() if isinstance(op_type, bytes) else op_type
    return dict(registry.lookup(op_type).attrs)


def infer_no_need_buffer_slots(op_type: str, inputs, outputs, attrs) -> set:
    """The input slots whose values the op reads only the shape of."""
    return set(registry.lookup(op_type).no_buffer_inputs)


# -- fluid's watch over a multi-process DataLoader's workers ---------------------------------------------
_WATCHED: dict = {}  # key -> pids


def _set_process_pids(key, pids) -> None:
    """Watch these worker processes (``_throw_error_if_process_failed`` reports their failure)."""
    _WATCHED[key] = tuple(int(p) for p in pids)


def _erase_process_pids(key) -> None:
    _WATCHED.pop(key, None)


def _throw_error_if_process_failed() -> None:
    """EnforceNotMet (fluid's FatalError text) for a watched process that ended with an error or was
    killed by a signal; a process that is still running or ended well is left alone."""
    import os
    import signal

    for key, pids in list(_WATCHED.items()):
        for pid in pids:
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                continue
            if info is None:
                continue
            if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
                _erase_process_pids(key)
                raise EnforceNotMet(
                    f"FatalError: DataLoader process (pid {pid}) exited is killed by signal: "
                    f"{signal.strsignal(info.si_status)}."
                )
            if info.si_code == os.CLD_EXITED and info.si_status != 0:
                _erase_process_pids(key)
                raise EnforceNotMet(
                    f"FatalError: DataLoader process (pid {pid}) exited unexpectedly with code {info.si_status}. "
                    "Error detailed are lost due to multiprocessing. Rerunning with "
                    "DataLoader.from_generator(..., use_multiprocess=False) may give better error trace."
                )


def _set_process_signal_handler() -> None:
    """In a worker process: end it by SIGSEGV, SIGBUS or SIGFPE as the signal's default does (so its
    parent sees the signal), whatever handler was set."""
    import signal

    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE):
        signal.signal(sig, signal.SIG_DFL)


def has_grad_op_maker(op_type: str) -> bool:
    return registry.has(op_type) and registry.lookup(op_type).grad is not None


has_non_empty_grad_op_maker = has_grad_op_maker


def has_infer_inplace(op_type: str) -> bool:
    """Whether the op may reuse an input's memory for an output: fluidcompat never rewrites ops to
    work in place, so no op has one."""
    return False


def get_grad_op_desc(op_desc, no_grad_set, grad_sub_block_list=()):
    """The grad op descs of one forward op and a map grad variable -> forward variable."""
    from fluidcompat.backward import grad_op_descs

    return grad_op_descs(op_desc._op, no_grad_set)


def op_support_gpu(op_type: str) -> bool:
    """Whether the op runs on a GPU: every fluidcompat kernel is a torch kernel that does."""
    return registry.has(op_type) and registry.lookup(op_type).kernel is not None


def is_float16_supported(place) -> bool:
    return isinstance(place, CUDAPlace) or (isinstance(place, Place) and place.is_gpu_place())


def _get_all_register_op_kernels():
    """op type -> its kernels, in fluid's text (torch kernels take float and double on the CPU)."""
    keys = [f"data_type[{t}]:data_layout[ANY_LAYOUT]:place[CPUPlace]:library_type[PLAIN]" for t in ("double", "float")]
    return {t: list(keys) for t, d in registry.all_defs().items() if d.kernel is not None}


_Scope = Scope
Variable = ScopeVariable

__all__ = [
    "LoDTensorArray",
    "AttrType",
    "BlockDesc",
    "OpDesc",
    "ProgramDesc",
    "GlobalVarGetterSetterRegistry",
    "globals",
    "has_grad_op_maker",
    "has_infer_inplace",
    "get_grad_op_desc",
    "op_proto_and_checker_maker",
    "op_support_gpu",
    "is_float16_supported",
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


def __getattr__(name):
    # fluid 1.8's core.VarBase (the dygraph tensor, ``isinstance(out, fluid.core.VarBase)``); imported
    # when asked for, as the dygraph package imports this module
    if name == "VarBase":
        from fluidcompat.dygraph.varbase import VarBase

        return VarBase
    if name in ("Dataset", "Fleet"):  # fluid's core.Dataset / core.Fleet (fluid.DatasetFactory's C++ side)
        from fluidcompat import fluid_dataset

        return {"Dataset": fluid_dataset.CoreDataset, "Fleet": fluid_dataset.CoreFleet}[name]
    raise AttributeError(f"module 'paddle.fluid.core' (fluidcompat) has no attribute '{name}'")
