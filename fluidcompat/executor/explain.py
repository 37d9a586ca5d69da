"""``placement_report``: where each op runs and which copies a run makes, before anything runs, and
which single ``device_guard`` would remove synchronous copies. Pure (no torch)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from fluidcompat import places
from fluidcompat.executor.placement import BlockPlan, plan_block
from fluidcompat.framework import Program

__all__ = ["placement_report", "suggestions"]


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
    base = len(_plan(program, device).copies)
    if base == 0:
        return []
    found = []
    block = program.global_block()
    for i, op in enumerate(block.ops[:limit]):
        if (op._def.kernel is None and not op._def.control) or op.attrs.get("op_device"):
            continue
        current = _plan_op_device(program, device, i)
        target = "cpu" if current.startswith("cuda") else "gpu"
        if target == "gpu" and not device.startswith("cuda"):
            continue
        trial = program.clone()
        trial.global_block().ops[i].attrs["op_device"] = target
        saved = base - len(_plan(trial, device).copies)
        if saved > 0:
            found.append((i, op.type, target, saved))
    return sorted(found, key=lambda s: -s[3])


def _plan_op_device(program: Program, device: str, index: int) -> str:
    return _plan(program, device).ops[index].device


def placement_report(program: Optional[Program] = None, place=None) -> str:
    """The plan of ``program`` for an executor at ``place``: each op's device, each copy (with
    fluid's event name), and suggestions that remove synchronous copies.

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
    copies = plan.copies
    lines.append(f"synchronous copies per run: {len(copies)}")
    for i, op_type, target, saved in suggestions(program, place):
        lines.append(
            f"suggestion: put op {i} ({op_type}) on the {target.upper()} with "
            f"fluid.device_guard('{target}') to remove {saved} of {len(copies)} copies"
        )
    return "\n".join(line.rstrip() for line in lines) + "\n"
