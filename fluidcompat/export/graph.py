"""A fluid Program's forward part (feeds -> fetches) as a ``torch.fx.GraphModule``.

Each fluid op becomes one ``call_module`` node: a ``FluidOp`` submodule holding the op's attributes
that calls the op's torch kernel (``fluidcompat_ops.registry``), so ``module.code`` reads as the
program did, one line per op::

    def forward(self, img):
        conv2d_0_tmp_0 = self.conv2d_0(img, self.conv2d_0_w_0)
        ...

Parameters and other persistables from the scope are registered on the module under fluid's names
made into attribute names (``fc_0.w_0`` -> ``fc_0_w_0``); ``module.fluid_names`` maps them back.

# NOTE: [What exports]
# The module runs whatever the executor runs on dense tensors. torch.export (and ONNX, which starts
# from it) also needs each kernel to trace: a kernel that reads a tensor's value on the host (a shape
# from a ShapeTensor input, a LoD) makes a data-dependent shape that the trace cannot follow. Such an op
# fails the export with an ``ExportError`` naming it (``formats.py``). Ops that can never export are
# refused here, before anything is built: LoD inputs, Python callbacks, readers, control flow.
"""

from __future__ import annotations

import keyword
import operator
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Parameter, Program
from fluidcompat_ops import registry

# the feed and fetch ops of a saved inference model: the module's inputs and outputs replace them
_IO_OPS = ("feed", "fetch")
# attributes every fluid op carries that mean nothing to its kernel's result
_BOOKKEEPING = ("op_role", "op_role_var", "op_namescope", "op_callstack", "op_device", "with_quant_attr")
# variable types a dense tensor kernel cannot take
_NOT_DENSE = {
    VarType.READER: "reads from a reader (feed the model's inputs instead)",
    VarType.LOD_TENSOR_ARRAY: "uses a LoDTensorArray",
    VarType.SELECTED_ROWS: "uses SelectedRows",
    VarType.STEP_SCOPES: "uses step scopes (control flow)",
    VarType.LOD_RANK_TABLE: "uses a LoD rank table",
    VarType.RAW: "uses a raw variable",
}


class ExportError(ValueError):
    """A program (or one of its ops) that cannot be exported; the message is one line naming the op."""


@dataclass(frozen=True)
class TensorSpec:
    """A module input or output: fluid's variable name, the module's name for it, shape (-1 where the
    program left a dimension free) and torch dtype."""

    fluid_name: str
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype


class FluidOp(torch.nn.Module):
    """One fluid op: calls its kernel on its input tensors (in slot order) with its attributes.

    Returns the op's output tensors: one tensor when it has one output, else a tuple in slot order.
    """

    def __init__(self, op, in_layout: Sequence[Tuple[str, int]], out_layout: Sequence[Tuple[str, int]]):
        super().__init__()
        self.type = op.type
        self.in_layout = tuple(in_layout)
        self.out_layout = tuple(out_layout)
        self.attrs = {k: v for k, v in op.attrs.items() if k not in _BOOKKEEPING}
        self._op = op  # read by a few kernels (elementwise_mul with a SelectedRows input, ...)
        self._kernel = op._def.kernel
        if not in_layout:  # an op with no tensor input makes its outputs on the module's device
            self.register_buffer("_where", torch.empty(0), persistent=False)

    def extra_repr(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(self.attrs.items()))
        return f"type={self.type!r}" + (f", {attrs}" if attrs else "")

    def forward(self, *tensors):
        ins: Dict[str, list] = {}
        at = 0
        for slot, n in self.in_layout:
            ins[slot] = list(tensors[at : at + n])
            at += n
        attrs = dict(self.attrs)
        attrs["_device"] = tensors[0].device if tensors else self._where.device
        attrs["_op"] = self._op
        try:
            result = self._kernel(ins, attrs)
        except ExportError:
            raise
        except Exception as e:
            raise ExportError(_op_failure(self._op, e)) from e
        outs = []
        for slot, n in self.out_layout:
            got = result.get(slot) or []
            if len(got) < n:
                raise ExportError(f"op {self.type}: its kernel gave no value for output {slot}")
            outs.extend(got[:n])
        return outs[0] if len(outs) == 1 else tuple(outs)


def _op_failure(op, e: Exception) -> str:
    """The one line saying why an op's kernel failed while tracing or running."""
    where = f"op {op.type} (#{op.idx}, output {_first_output(op)!r})"
    name = type(e).__name__
    text = str(e).strip().splitlines()[0] if str(e).strip() else name
    if "DataDependent" in name or "data-dependent" in str(e) or "data dependent" in str(e):
        return f"{where} cannot export: its kernel reads a tensor's value on the host, which torch.export cannot trace"
    return f"{where} failed: {name}: {text}"


def _first_output(op) -> str:
    for names in op.outputs.values():
        if names:
            return names[0]
    return ""


def attr_name(fluid_name: str, taken: set) -> str:
    """A valid, unused Python attribute name for a fluid variable name (``fc_0.w_0`` -> ``fc_0_w_0``)."""
    name = re.sub(r"\W", "_", fluid_name) or "_"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    base, k = name, 1
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def forward_program(program: Program, feed_names: Sequence[str], fetch_names: Sequence[str]) -> Program:
    """The ops computing ``fetch_names`` from ``feed_names`` (test mode, no feed and fetch ops)."""
    pruned = program.clone(for_test=True)._prune_with_input(list(feed_names), list(fetch_names))
    block = pruned.global_block()
    for k in reversed([k for k, op in enumerate(block.ops) if op.type in _IO_OPS]):
        block._remove_op(k)
    return pruned


def check_exportable(program: Program, feed_names: Sequence[str]) -> List[str]:
    """One line per op (or feed) of a forward program that cannot export; empty when all can."""
    block = program.global_block()
    problems = []
    for n in feed_names:
        v = block.var(n)
        if v.lod_level:
            problems.append(
                f"feed {n!r} is a LoDTensor (lod_level {v.lod_level}): LoD does not export; "
                "feed padded dense tensors instead"
            )
    for op in block.ops:
        why = _why_not(op, block)
        if why:
            problems.append(f"op {op.type} (#{op.idx}, output {_first_output(op)!r}) cannot export: {why}")
    return problems


def _why_not(op, block) -> Optional[str]:
    d = op._def
    if d.control or any(isinstance(v, type(block)) for v in op.attrs.values()):
        return "it runs a sub-block (control flow); torch.cond / while_loop do not take fluid's blocks here"
    if op.type == "py_func":
        return "it runs Python code of the script, which an exported model cannot hold"
    if d.kernel is None:
        return "it has no kernel"
    if d.reads_outputs:
        return "it updates its output in place"
    for slot, names in op.inputs.items():  # (an output nothing reads may be anything)
        if slot in d.optional_inputs:
            continue  # (build_module passes only its dense values: cudnn_lstm's Cache is none)
        for n in names:
            v = block._find_var_recursive(n)
            if v is None:
                continue
            why = _NOT_DENSE.get(v.type)
            if why:
                return f"it {why} ({n!r})"
            if v.lod_level and op.type.startswith(("sequence_", "lod_")):
                return f"it reads the LoD of {n!r}, which does not export"
    return None


def _not_dense(block, scope, name: str) -> bool:
    """An optional input's variable that holds no dense tensor for the module to take."""
    v = block._find_var_recursive(name)
    if v is None or v.type in _NOT_DENSE:
        return True
    if not v.persistable:
        return False
    sv = scope.find_var(name)
    return sv is None or not sv.is_initialized() or not torch.is_tensor(sv.get_tensor()._t)


def _learned(block) -> set:
    """Variables some op takes in a slot its grad op differentiates: the learned ones of a loaded model,
    whose variables are not Parameters (batch_norm's Mean and Variance are not learned: buffers)."""
    found = set()
    for op in block.ops:
        if op._def.grad is None or op._def.grad.maker is not None:
            continue
        _, _, in_grads = registry.grad_slots(op._def)
        for slot in in_grads:
            found.update(op.inputs.get(slot, ()))
    return found


def build_module(
    program: Program,
    feed_names: Sequence[str],
    fetch_names: Sequence[str],
    scope=None,
) -> torch.fx.GraphModule:
    """The forward part of ``program`` from ``feed_names`` to ``fetch_names`` as a GraphModule whose
    ``forward`` takes the feeds (in order) and returns a tuple of the fetches, with the parameters
    and other persistables it reads taken from ``scope`` (the global scope for None).

    Raises ``ExportError`` (one line naming the op) when an op cannot export.
    Compat: runs in test mode (``Program.clone(for_test=True)``: dropout and batch_norm as inference).
    """
    from fluidcompat.executor.scope import global_scope

    registry.bind_torch()
    scope = scope if scope is not None else global_scope()
    feed_names = list(feed_names)
    fetch_names = [f if isinstance(f, str) else f.name for f in fetch_names]
    fwd = forward_program(program, feed_names, fetch_names)
    problems = check_exportable(fwd, feed_names)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ExportError(problems[0] + more)
    block = fwd.global_block()

    root = torch.nn.Module()
    graph = torch.fx.Graph()
    taken: set = {"forward", "training", "fluid_names", "inputs", "outputs"}
    env: Dict[str, torch.fx.Node] = {}
    fluid_names: Dict[str, str] = {}
    inputs = []
    for n in feed_names:
        v = block.var(n)
        name = attr_name(n, taken)
        env[n] = graph.placeholder(name)
        inputs.append(TensorSpec(n, name, tuple(v.shape), registry.TORCH_DTYPES[v.dtype]))

    learned = _learned(block)

    def value_of(n: str) -> torch.fx.Node:
        if n in env:
            return env[n]
        v = block._find_var_recursive(n)
        if v is None or not v.persistable:
            raise ExportError(f"variable {n!r} is read before any op writes it and is not a feed or a parameter")
        sv = scope.find_var(n)
        if sv is None or not sv.is_initialized():
            raise ExportError(f"parameter {n!r} holds no value in the scope (run the startup program or load it)")
        t = sv.get_tensor()._t
        if not torch.is_tensor(t):
            raise ExportError(f"persistable {n!r} is not a dense tensor")
        name = attr_name(n, taken)
        t = t.detach().clone()
        if t.is_floating_point() and (v.trainable if isinstance(v, Parameter) else n in learned):
            root.register_parameter(name, torch.nn.Parameter(t))
        else:
            root.register_buffer(name, t)
        fluid_names[name] = n
        env[n] = graph.get_attr(name)
        return env[n]

    # the outputs something reads (a later op or the fetch list): the others may not be made at all
    # in test mode (dropout's Mask), so the module neither asks for nor returns them
    wanted = set(fetch_names)
    for op in block.ops:
        wanted.update(n for ns in op.inputs.values() for n in ns)
    for op in block.ops:
        in_layout, args = [], []
        for slot in op._def.inputs + tuple(s for s in op.inputs if s not in op._def.inputs):
            names = op.inputs.get(slot) or []
            if slot in op._def.optional_inputs and any(_not_dense(block, scope, n) for n in names):
                continue
            if names:
                in_layout.append((slot, len(names)))
                args.extend(value_of(n) for n in names)
        # outputs up to the last one wanted, per slot (a slot's values come as a list)
        out_layout, outs = [], []
        for slot, names in op.outputs.items():
            last = max((k + 1 for k, n in enumerate(names) if n in wanted), default=0)
            if last:
                out_layout.append((slot, last))
                outs.extend(names[:last])
        if not outs:
            continue
        mod_name = attr_name(f"{op.type}_{op.idx}", taken)
        root.add_module(mod_name, FluidOp(op, in_layout, out_layout))
        one = len(outs) == 1
        node = graph.create_node(
            "call_module", mod_name, tuple(args), name=attr_name(outs[0] if one else f"{op.type}_{op.idx}_out", taken)
        )
        if one:
            env[outs[0]] = node
        for k, n in enumerate(outs if not one else ()):
            env[n] = graph.create_node("call_function", operator.getitem, (node, k), name=attr_name(n, taken))
    missing = [n for n in fetch_names if n not in env]
    if missing:
        raise ExportError(f"fetch target {missing[0]!r} is not computed from the feeds {feed_names}")
    graph.output(tuple(env[n] for n in fetch_names))
    module = torch.fx.GraphModule(root, graph, class_name="FluidProgram")
    module.graph.eliminate_dead_code()  # outputs nothing reads (dropout's Mask, batch_norm's SavedMean)
    module.graph.lint()
    module.recompile()
    module.delete_all_unused_submodules()
    module.fluid_names = fluid_names
    module.inputs = tuple(inputs)
    module.outputs = tuple(
        TensorSpec(n, attr_name(n, set()), tuple(block.var(n).shape), registry.TORCH_DTYPES[block.var(n).dtype])
        for n in fetch_names
    )
    module.eval()
    return module
