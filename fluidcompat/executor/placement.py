"""The placement planner: per op its device, per input the device the kernel needs, and the copies.

Pure: no torch, no tensors. Devices are torch device strings ('cpu', 'cuda:0') from
``places.torch_device``, so GPU plans can be built and tested on a machine without CUDA.
See NOTE: [Host slots] in fluidcompat_ops/registry.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, Optional, Set, Tuple

from fluidcompat import places
from fluidcompat.framework import EMPTY_VAR_NAME, Block, Operator


@dataclass(frozen=True)
class Copy:
    """A copy the plan implies before an op runs: ``var`` moves from ``src`` to ``dst``."""

    var: str
    slot: str
    src: str
    dst: str
    # a control op's read of its condition: fluid copied it on the device's stream and waited
    # (TensorCopy + Wait, named Async), where a kernel's data transform used TensorCopySync
    on_stream: bool = False

    @property
    def kind(self) -> str:
        """'GpuMemcpySync:CPU->GPU' style name, as fluid's profiler records the copy."""

        def side(d: str) -> str:
            return "CPU" if d == "cpu" else "GPU"

        mode = "Async" if self.on_stream else "Sync"
        if self.src.startswith("cuda") and self.dst.startswith("cuda"):
            return f"GpuMemcpyPeer{mode}:GPU->GPU"
        return f"GpuMemcpy{mode}:{side(self.src)}->{side(self.dst)}"


@dataclass(frozen=True)
class OpPlan:
    index: int
    op: Operator
    device: str
    # per input slot, the device the kernel reads it on (None: never read, shape only)
    input_devices: Tuple[Tuple[str, Optional[str]], ...]
    copies: Tuple[Copy, ...]


@dataclass(frozen=True)
class BlockPlan:
    ops: Tuple[OpPlan, ...]
    # variables read before any op of the block writes them: where the first reader needs them
    externals: Dict[str, Optional[str]]
    # where each variable lives after the block ran
    locations: Dict[str, str]
    # the plans of control ops' sub-blocks, by op index
    subplans: Dict[int, "BlockPlan"]
    # externals that a control op before their reader may have written: read when the scope has them
    optional_externals: FrozenSet[str] = frozenset()

    @property
    def copies(self) -> Tuple[Copy, ...]:
        """Every copy of a run that takes every branch, sub-blocks included, in op order."""
        result = []
        for p in self.ops:
            result.extend(p.copies)
            if p.index in self.subplans:
                result.extend(self.subplans[p.index].copies)
        return tuple(result)


def op_device(op: Operator, place, loc: Optional[Dict[str, str]] = None) -> str:
    """The device an op's kernel runs on: its ``op_device`` (device_guard wins, as in fluid), else
    the CPU under ``force_cpu``, else where its deciding input lives, else the executor's place."""
    d = op._def
    if op.attrs.get("op_device"):
        return places.torch_device(op.attrs["op_device"], place)
    if d.cpu_attr and op.attrs.get(d.cpu_attr):
        return "cpu"
    if d.place_from_input and loc is not None:
        names = op.inputs.get(d.place_from_input) or []
        if names and names[0] in loc:
            return loc[names[0]]
    return places.torch_device(None, place)


# The feed and fetch ops a program saved by save_inference_model holds (fluid's executor checked them
# against the feed dict and fetch list, then ran them); the plan leaves them out.
IO_OPS = frozenset({"feed", "fetch"})


def plan_block(block: Block, place, fed: Iterable[str] = (), known: Optional[Dict[str, str]] = None) -> BlockPlan:
    """Plan every op of ``block`` for an executor at ``place``; ``fed`` vars start on its device,
    ``known`` vars (of an enclosing block) where it says."""
    exe_dev = places.torch_device(place)
    loc: Dict[str, str] = dict(known or {})
    loc.update({n: exe_dev for n in fed})
    externals: Dict[str, Optional[str]] = {}
    maybe: Set[str] = set()  # written so far only by control ops, whose sub-block may not run
    optional: Set[str] = set()
    plans = []
    subplans: Dict[int, BlockPlan] = {}
    for i, op in enumerate(block.ops):
        if op.type in IO_OPS:  # a saved model's feed / fetch ops: the run's feed dict and fetch list do their work
            continue
        d = op._def
        if d.kernel is None and not d.control:
            why = f" ({d.doc})" if d.doc else ""
            raise ValueError(f"op {i} ({op.type}) has no kernel and cannot be planned in block {block.idx}{why}")
        dev = op_device(op, place, loc)
        in_devs = []
        copies = []
        for slot, names in op.inputs.items():
            if slot in d.no_buffer_inputs or (d.control and slot not in d.host_inputs):
                need = None
            elif slot in d.host_inputs:
                need = "cpu"
            else:
                need = dev
            in_devs.append((slot, need))
            for n in names:
                if n == EMPTY_VAR_NAME:
                    continue
                if n not in loc:
                    if n not in externals:
                        externals[n] = need
                        loc[n] = need or exe_dev
                    elif externals[n] is None and need is not None:
                        externals[n] = need
                        loc[n] = need
                elif n in maybe and n not in externals:
                    # the value before the run, should the control op that may write it not
                    externals[n] = need
                    optional.add(n)
                if need is not None and loc[n] != need:
                    copies.append(Copy(n, slot, loc[n], need, on_stream=d.control))
        for slot in d.reads_outputs:  # what the kernel updates: the scope's value, when it holds one
            for n in op.outputs.get(slot, ()):
                if n not in loc and n not in externals:
                    externals[n] = dev
                    loc[n] = dev
                    optional.add(n)
        before = set(loc) if d.control else None
        if d.control:
            sub = block.program.block(op.attrs["sub_block"])
            subplans[i] = plan_block(sub, place, known=loc)
            loc.update(subplans[i].locations)
        for slot, names in op.outputs.items():
            out_dev = "cpu" if slot in d.host_outputs else dev
            for n in names:
                if d.control:
                    if n not in loc:  # a sub-block's writes keep their own place
                        loc[n] = out_dev
                    if n not in before:
                        maybe.add(n)
                else:
                    loc[n] = out_dev
                    maybe.discard(n)
        plans.append(OpPlan(i, op, dev, tuple(in_devs), tuple(copies)))
    return BlockPlan(tuple(plans), externals, loc, subplans, frozenset(optional))
