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
class GradDef:
    """How backward differentiates an op: the ``<type>_grad`` op it appends and its kernel.

    The grad op reads the forward slots in ``inputs`` plus ``<slot>@GRAD`` for each slot in
    ``out_grads``, and writes ``<slot>@GRAD`` for each slot in ``in_grads``. With no ``kernel``
    the grad is a per-op VJP: the forward kernel re-run under torch autograd, so ``inputs`` must
    hold every forward input. ``maker`` replaces all of this for ops whose gradient fluid builds
    from other op types (``sum`` -> ``scale``, ``cast`` -> ``cast``).
    """

    inputs: Optional[Tuple[str, ...]] = None
    out_grads: Tuple[str, ...] = ("Out",)
    in_grads: Optional[Tuple[str, ...]] = None
    kernel: Optional[Kernel] = None
    type: str = ""
    maker: Optional[Callable] = None
    # forward slots the grad kernel reads the shape of only: their values may go before it runs
    shape_only: Tuple[str, ...] = ()
    # an output whose gradient nothing made gets a fill_zeros_like before the grad op(s), as fluid's
    # backward inserted one for the grad ops that read every output's gradient (split, unstack,
    # lstm_unit)
    fill_missing: bool = False
    # whether the grad op is differentiable again (NOTE: [Grad of grad] in grad.py): None, as the
    # generic VJP is; True for a hand-written kernel made of differentiable torch ops
    double: Optional[bool] = None
    # the double grad op's slot names where fluid's differ from the D / DD rule (generic -> fluid's)
    grad_grad_slots: Mapping[str, str] = field(default_factory=dict)
    # for a grad op's own GradDef: generic slot name -> the double grad op's (set by the registry)
    slot_names: Mapping[str, str] = field(default_factory=dict)


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
    # With no op_device, the op runs where this input slot's tensor lives (fluid 1.8's cast,
    # compare and logical ops).
    place_from_input: str = ""
    # Input slots whose variables may hold no value (read as None), e.g. select_input's branches.
    optional_inputs: FrozenSet[str] = frozenset()
    # Output slots the kernel also reads, under the same slot name (None when unset): write_to_array
    # writes one element of the array already there.
    reads_outputs: FrozenSet[str] = frozenset()
    # The kernel's work is one copy of a tensor on its own device: on a GPU the profiler records it
    # inside ``compute`` as fluid's memcpy did (``GpuMemcpyAsync(same_gpu):GPU->GPU``).
    copies_on_device: bool = False
    # Run by the interpreter itself (sub-blocks), not by a kernel.
    control: bool = False
    grad: Optional[GradDef] = None
    # For a grad op: the forward op type it differentiates.
    forward: str = ""
    # specialize(attrs, slots) -> a kernel for one op whose attributes are ``attrs`` and whose input
    # slots holding variables are ``slots`` (a frozenset), or None for the general ``kernel``. Called
    # once when a program is prepared: the fast kernel does no per-run attribute decoding.
    specialize: Optional[Callable] = None
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
    if opdef.grad is not None and opdef.grad.maker is None:
        _register_grad(opdef)
    return opdef


def grad_slots(fwd: OpDef) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """(forward slots read, output slots whose grads are read, input slots that get grads)."""
    gd = fwd.grad
    inputs = gd.inputs if gd.inputs is not None else fwd.inputs
    skip = fwd.host_inputs | fwd.no_buffer_inputs
    in_grads = gd.in_grads if gd.in_grads is not None else tuple(s for s in fwd.inputs if s not in skip)
    return inputs, gd.out_grads, in_grads


# NOTE: [Generic grads]
# The generic grad kernels (the per-op VJP, the grad of a grad op) live in grad.py, beside the families
# (they read a value's LoD). The registry does not import it: grad.py hands them over on its import
# (``install_generic_grads``), which fluidcompat_ops/__init__ does before any family registers an op.
# Nor does it import the families: Python runs fluidcompat_ops/__init__, which imports them all, before
# this module is imported from outside the package, so a look-up finds every op registered.
_GENERIC_GRADS: Optional[Any] = None


def install_generic_grads(kernels) -> None:
    """Take ``kernels`` (grad.py: ``vjp_kernel``, ``grad_grad_slot``, ``grad_of_grad_kernel``) as the
    generic grads of the ops registered from now on (see NOTE: [Generic grads])."""
    global _GENERIC_GRADS
    _GENERIC_GRADS = kernels


def _generic_grads():
    if _GENERIC_GRADS is None:
        raise RuntimeError(
            "fluidcompat_ops.grad is not imported: the op families register their generic grads through it "
            "(import fluidcompat_ops, which imports it first)"
        )
    return _GENERIC_GRADS


def _register_grad(fwd: OpDef) -> None:
    grad_kernels = _generic_grads()
    gd = fwd.grad
    inputs, out_grads, in_grads = grad_slots(fwd)
    if gd.kernel is None and not set(fwd.inputs) <= set(inputs):
        raise ValueError(f"{fwd.type}: a generic grad needs every forward input among the grad op's inputs")
    kernel = gd.kernel or grad_kernels.vjp_kernel(fwd, out_grads)
    names = dict(gd.slot_names)
    rename = names.get if names else (lambda s, default: default)  # noqa: E731
    gop = OpDef(
        gd.type or fwd.type + "_grad",
        tuple(rename(s, s) for s in tuple(inputs) + tuple(s + "@GRAD" for s in out_grads)),
        tuple(rename(s + "@GRAD", s + "@GRAD") for s in in_grads),
        dict(fwd.attrs),
        None,
        kernel,
        host_inputs=frozenset(rename(s, s) for s in fwd.host_inputs & frozenset(inputs)),
        no_buffer_inputs=frozenset(
            rename(s, s) for s in (fwd.no_buffer_inputs & frozenset(inputs)) | frozenset(gd.shape_only)
        ),
        cpu_attr=fwd.cpu_attr,
        optional_inputs=frozenset(rename(s, s) for s in fwd.optional_inputs & frozenset(inputs)),
        forward=fwd.type,
    )
    if not fwd.forward and (gd.kernel is None if gd.double is None else gd.double):
        gop = _with_grad_of_grad(gop, gd.grad_grad_slots)
    register(gop)


def _with_grad_of_grad(gop: OpDef, overrides) -> OpDef:
    """``gop`` (a grad op) made differentiable by a VJP of its kernel (NOTE: [Grad of grad])."""
    from dataclasses import replace

    grad_kernels = _generic_grads()
    differentiable = tuple(s for s in gop.inputs if s not in gop.host_inputs | gop.no_buffer_inputs)
    generic = list(gop.inputs) + [s + "@GRAD" for s in gop.outputs] + [s + "@GRAD" for s in differentiable]
    names = {s: grad_kernels.grad_grad_slot(s, overrides) for s in generic}
    ins = [names[s] for s in list(gop.inputs) + [s + "@GRAD" for s in gop.outputs]]
    outs = [names[s + "@GRAD"] for s in differentiable]
    if len(set(ins)) != len(ins) or len(set(outs)) != len(outs):
        raise ValueError(f"{gop.type}: its double grad op's slot names collide: {ins} -> {outs}")
    kernel = grad_kernels.grad_of_grad_kernel(gop, names)
    return replace(gop, grad=GradDef(gop.inputs, gop.outputs, differentiable, kernel, slot_names=names))


def lookup(op_type: str) -> OpDef:
    opdef = _REGISTRY.get(op_type)
    if opdef is None:
        raise ValueError(f"Operator '{op_type}' is not registered in fluidcompat. Received: type={op_type!r}")
    return opdef


def has(op_type: str) -> bool:
    return op_type in _REGISTRY


def all_defs() -> Dict[str, OpDef]:
    return dict(_REGISTRY)


TORCH_DTYPES: Dict[int, Any] = {}


def bind_torch() -> None:
    """Import torch and give it to every family module (see NOTE: [Lazy torch])."""
    global _bound
    if _bound:
        return
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
    from fluidcompat import flags

    flags.apply_num_threads()
    _bound = True


def _op(name, inputs, outputs, attrs, infer, kernel, grad=True, **kw):
    """Register an op whose grad is a per-op VJP over every output (``grad=True``), none (False) or ``grad``."""
    grad_def = grad if isinstance(grad, GradDef) else GradDef(out_grads=tuple(outputs)) if grad else None
    register(OpDef(name, inputs, outputs, attrs, infer, kernel, grad=grad_def, **kw))
