"""``placement_report``: where each op runs and which copies a run makes, before anything runs, and
which single ``device_guard`` would remove synchronous copies. Pure (no torch)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from fluidcompat import places
from fluidcompat.executor.placement import BlockPlan, plan_block
from fluidcompat.framework import Program

__all__ = ["placement_report", "suggestions", "gpu_memory_estimate"]


def _target(place) -> str:
    """The device the script asked for (``--device cpu`` aside)."""
    with places.as_asked():
        return places.torch_device(place)


def _plan(program: Program, device: str) -> BlockPlan:
    with places.as_asked():
        return plan_block(program.global_block(), device)


def suggestions(program: Program, place, limit: int = 500) -> List[Tuple[int, str, str, int]]:
    """Ops whose move to the other device removes copies: ``(op index, op type, 'cpu'|'gpu', copies saved)``,
    most copies saved first. Each op is tried alone, by planning the program with that op guarded.
    Ops the script placed itself (``device_guard``) stay where they are: a table guarded to the CPU to
    fit in memory is not worth a copy less."""
    device = _target(place)
    return _suggestions(program, device, _plan(program, device), limit)


def _suggestions(program: Program, device: str, plan: BlockPlan, limit: int = 500):
    base = len(plan.copies)
    if base == 0:
        return []
    found = []
    block = program.global_block()
    planned = {p.index: p for p in plan.ops}
    for i, op in enumerate(block.ops[:limit]):
        if i not in planned or (op._def.kernel is None and not op._def.control) or op.attrs.get("op_device"):
            continue
        target = "cpu" if planned[i].device.startswith("cuda") else "gpu"
        if target == "gpu" and not device.startswith("cuda"):
            continue
        trial = program.clone()
        trial.global_block().ops[i].attrs["op_device"] = target
        saved = base - len(_plan(trial, device).copies)
        if saved > 0:
            found.append((i, op.type, target, saved))
    return sorted(found, key=lambda s: -s[3])


def _var_bytes(block, name: str, batch: int) -> int:
    """The bytes of ``name`` from its declared shape (-1 read as ``batch``); a sparse gradient
    (SelectedRows) holds one row per looked-up id."""
    import numpy as np

    from fluidcompat.dtypes import VarType, np_name

    var = block._find_var_recursive(name)
    if var is None or var.type not in (VarType.LOD_TENSOR, VarType.SELECTED_ROWS) or var.dtype is None:
        return 0
    shape = [batch if d is None or d < 0 else d for d in var.shape]
    if var.type == VarType.SELECTED_ROWS:
        ids = next((op.input("Ids") for op in block.ops if name in op.output_arg_names and op.input("Ids")), [])
        rows = int(np.prod([batch if d < 0 else d for d in block._find_var_recursive(ids[0]).shape])) if ids else 1
        shape = [rows] + shape[1:]
    return int(np.prod(shape)) * np.dtype(np_name(var.dtype)).itemsize


def gpu_memory_estimate(program: Program, place, batch: int = 1) -> Tuple[int, int, List[Tuple[str, int]]]:
    """What the plan keeps in GPU memory, from the variables' declared shapes (a batch dimension of
    -1 taken as ``batch``): ``(persistable bytes, peak bytes, the largest variables on the GPU)``.
    The peak walks the ops in order: persistables on the GPU throughout, each temporary from its
    writer to its last reader, each copy to the GPU for its op. Sub-blocks are not counted. Pure."""
    device = _target(place)
    return _memory(program.global_block(), device, _plan(program, device), batch)


def _memory(block, device: str, plan: BlockPlan, batch: int) -> Tuple[int, int, List[Tuple[str, int]]]:
    if not device.startswith("cuda"):
        return 0, 0, []
    where = dict(plan.externals)
    where.update(plan.locations)
    size = {}

    def gpu(d) -> bool:  # a planned device (None: the executor's)
        return str(d or device).startswith("cuda")

    def on_gpu(name: str) -> bool:
        return gpu(where.get(name))

    def nbytes(name: str) -> int:
        if name not in size:
            size[name] = _var_bytes(block, name, batch)
        return size[name]

    names = {n for p in plan.ops for n in p.op.input_arg_names + p.op.output_arg_names}
    persist = {n for n in names if (v := block._find_var_recursive(n)) is not None and v.persistable and on_gpu(n)}
    last = {}
    for p in plan.ops:
        for n in p.op.input_arg_names + p.op.output_arg_names:
            last[n] = p.index
    # fed and other non-persistable inputs on the GPU are there from the start to their last reader
    live = {n: nbytes(n) for n, d in plan.externals.items() if n not in persist and gpu(d)}
    peak = 0
    for p in plan.ops:
        for n in p.op.output_arg_names:
            if n not in persist and gpu(p.device) and n not in live:
                live[n] = nbytes(n)
        copies = sum(nbytes(c.var) for c in p.copies if gpu(c.dst))
        peak = max(peak, sum(live.values()) + copies)
        for n in [n for n in live if last.get(n, -1) <= p.index]:
            del live[n]
    kept = sum(nbytes(n) for n in persist)
    gpu_vars = sorted(((n, nbytes(n)) for n in names if on_gpu(n)), key=lambda x: (-x[1], x[0]))
    return kept, kept + peak, gpu_vars[:3]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def placement_report(program: Optional[Program] = None, place=None, batch: int = 1) -> str:
    """The plan of ``program`` for an executor at ``place``: each op's device, each copy (with
    fluid's event name), the GPU memory it needs (a -1 dimension read as ``batch``), and
    suggestions that remove synchronous copies.

    Compat: a fluidcompat extension; fluid 1.8 showed copies only in the profiler report.
    """
    from fluidcompat.framework import default_main_program

    program = program or default_main_program()
    place = place if place is not None else places.CPUPlace()
    device = _target(place)
    plan = _plan(program, device)
    lines = [f"placement of {len(plan.ops)} ops for {place} ({device}):"]
    for p in plan.ops:
        guard = p.op.attrs.get("op_device") or ""
        lines.append(
            f"  op {p.index:<3d} {p.op.type:<24s} {p.device:<8s}" + (f" (device_guard '{guard}')" if guard else "")
        )
        for c in p.copies:
            lines.append(f"         {c.kind:<26s} {c.var} (slot {c.slot})")
        sub = plan.subplans.get(p.index)
        if sub is not None:
            for c in sub.copies:
                lines.append(f"         {c.kind:<26s} {c.var} (in its sub-block)")
            cond = p.op.inputs.get("Condition", [""])[0] if p.op.type == "while" else ""
            if cond and sub.locations.get(cond, "cpu") != "cpu":
                kind = "GpuMemcpyAsync:GPU->CPU"
                lines.append(f"         {kind:<26s} {cond} (after every pass: the body writes it on the GPU)")
    copies = plan.copies
    lines.append(f"synchronous copies per run: {len(copies)}")
    kept, peak, largest = _memory(program.global_block(), device, plan, batch)
    if peak:
        biggest = ", ".join(f"{n} {_size(b)}" for n, b in largest)
        lines.append(
            f"GPU memory (declared shapes, batch {batch}): {_size(kept)} kept, {_size(peak)} at the peak; "
            f"largest: {biggest}"
        )
    for i, op_type, target, saved in _suggestions(program, device, plan):
        lines.append(
            f"suggestion: put op {i} ({op_type}) on the {target.upper()} with "
            f"fluid.device_guard('{target}') to remove {saved} of {len(copies)} copies"
        )
    return "\n".join(line.rstrip() for line in lines) + "\n"
