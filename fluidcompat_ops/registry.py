"""The op registry: one frozen ``OpDef`` per fluid op type.

# NOTE: [Lazy torch]
# Op family modules hold both the pure shape functions (run at build time) and the torch kernels
# (run by the interpreter). Building a program must not import torch, so each family module starts
# with ``torch = None`` and ``bind_torch()`` fills that global in every family module before the
# first kernel runs. Kernels read the module global at call time, which costs the same as a normal
# import.

# NOTE: [Host slots]
# ``host_inputs`` are input slots whose tensors the kernel reads on the CPU whatever the op's
# device (crop_tensor's Shape, slice's StartsTensor): the planner never moves them to the op's
# device. ``host_outputs`` are outputs that live on the CPU whatever the op's device (shape's Out).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Tuple

# Kernel: (ins: slot -> [tensor], attrs) -> slot -> [tensor]. The interpreter adds the private
# attribute ``_device`` (the op's torch device) for kernels that create tensors.
Kernel = Callable[[Dict[str, list], Dict[str, Any]], Dict[str, list]]
# Shape function: (ins: slot -> [Variable], attrs) -> slot -> [(shape, dtype)].
InferShape = Callable[[Dict[str, list], Dict[str, Any]], Dict[str, list]]


@dataclass(frozen=True)
class OpDef:
    """Everything known about one op type."""

    type: str
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    infer_shape: Optional[InferShape] = None
    kernel: Optional[Kernel] = None
    host_inputs: FrozenSet[str] = frozenset()
    host_outputs: FrozenSet[str] = frozenset()
    # Inputs the kernel reads only for their shape (never copied between devices).
    no_buffer_inputs: FrozenSet[str] = frozenset()
    # When this boolean attribute is set the op runs on the CPU (fluid's ``force_cpu``).
    cpu_attr: str = ""
    grad: Optional[Callable] = None
    doc: str = ""


_REGISTRY: Dict[str, OpDef] = {}
_MODULES: set = set()
_bound = False


def register(opdef: OpDef) -> OpDef:
    if opdef.type in _REGISTRY:
        raise ValueError(f"Op type '{opdef.type}' is registered twice")
    _REGISTRY[opdef.type] = opdef
    if opdef.kernel is not None:
        _MODULES.add(opdef.kernel.__module__)
    return opdef


def _ensure_loaded() -> None:
    import fluidcompat_ops  # noqa: F401  (imports every family module)


def lookup(op_type: str) -> OpDef:
    _ensure_loaded()
    opdef = _REGISTRY.get(op_type)
    if opdef is None:
        raise ValueError(f"Operator '{op_type}' is not registered in fluidcompat. Received: type={op_type!r}")
    return opdef


def has(op_type: str) -> bool:
    _ensure_loaded()
    return op_type in _REGISTRY


def all_defs() -> Dict[str, OpDef]:
    _ensure_loaded()
    return dict(_REGISTRY)


TORCH_DTYPES: Dict[int, Any] = {}


def bind_torch() -> None:
    """Import torch and give it to every family module (see NOTE: [Lazy torch])."""
    global _bound
    if _bound:
        return
    _ensure_loaded()
    import torch
    import torch.nn.functional as F

    from fluidcompat.dtypes import VarType

    TORCH_DTYPES.update(
        {
            VarType.BOOL: torch.bool,
            VarType.INT16: torch.int16,
            VarType.INT32: torch.int32,
            VarType.INT64: torch.int64,
            VarType.FP16: torch.float16,
            VarType.FP32: torch.float32,
            VarType.FP64: torch.float64,
            VarType.UINT8: torch.uint8,
            VarType.INT8: torch.int8,
        }
    )
    for name in _MODULES:
        mod = sys.modules[name]
        mod.torch = torch
        mod.F = F
        mod.TORCH_DTYPES = TORCH_DTYPES
    _bound = True
